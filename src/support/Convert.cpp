#include "tessera/support/Convert.hpp"

#include "tessera/support/Error.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace tessera {
namespace {

// Converting through the widest common type keeps every integer exact and
// lets float -> half round once.
template <typename D, typename S> D convertOne(S s) {
  if constexpr (std::is_same_v<S, Half>)
    return convertOne<D>(static_cast<float>(s));
  else if constexpr (std::is_same_v<D, Half>)
    return Half(static_cast<float>(s));
  else if constexpr (std::is_same_v<D, bool>)
    return s != S{};
  else
    return static_cast<D>(s);
}

} // namespace

void convertElements(Type srcType, const void *src, Type dstType, void *dst,
                     std::size_t n) {
  if (n == 0)
    return; // src and dst may be null
  if (srcType == dstType) {
    std::memcpy(dst, src, n * typeSize(srcType));
    return;
  }
  visitType(srcType, [&](auto s) {
    using S = decltype(s);
    visitType(dstType, [&](auto d) {
      using D = decltype(d);
      const S *in = static_cast<const S *>(src);
      D *out = static_cast<D *>(dst);
      for (std::size_t i = 0; i < n; ++i)
        out[i] = convertOne<D>(in[i]);
    });
  });
}

double elementAsDouble(Type type, const void *element) {
  return visitType(type, [&](auto s) {
    using S = decltype(s);
    S v;
    std::memcpy(&v, element, sizeof(S));
    if constexpr (std::is_same_v<S, Half>)
      return static_cast<double>(static_cast<float>(v));
    else
      return static_cast<double>(v);
  });
}

std::string formatElement(Type type, const void *element) {
  char buf[64];
  if (isFloatingPoint(type)) {
    std::snprintf(buf, sizeof buf, "%.7f", elementAsDouble(type, element));
  } else if (type == Type::UNSIGNED_INT || type == Type::UNSIGNED_SHORT ||
             type == Type::UNSIGNED_CHAR || type == Type::BOOL) {
    std::snprintf(
        buf, sizeof buf, "%llu",
        static_cast<unsigned long long>(elementAsDouble(type, element)));
  } else {
    std::snprintf(buf, sizeof buf, "%lld",
                  static_cast<long long>(elementAsDouble(type, element)));
  }
  return buf;
}

} // namespace tessera
