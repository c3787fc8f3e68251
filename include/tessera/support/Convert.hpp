/// \file
/// Conversions between element types, for constants, initial values, host
/// buffers and printing.
#pragma once

#include "tessera/support/Error.hpp"
#include "tessera/support/Type.hpp"

#include <cstddef>
#include <string>

namespace tessera {

/// Calls \p f with a value of the C++ type of \p t (float, Half, int,
/// unsigned, short, ..., bool), for code written once for every type.
template <typename F> auto visitType(Type t, F &&f) -> decltype(f(float{})) {
  switch (t) {
  case Type::FLOAT:
    return f(float{});
  case Type::HALF:
    return f(Half{});
  case Type::INT:
    return f(int{});
  case Type::UNSIGNED_INT:
    return f(unsigned{});
  case Type::SHORT:
    return f(short{});
  case Type::UNSIGNED_SHORT:
    return f(static_cast<unsigned short>(0));
  case Type::CHAR:
    return f(char{});
  case Type::SIGNED_CHAR:
    return f(static_cast<signed char>(0));
  case Type::UNSIGNED_CHAR:
    return f(static_cast<unsigned char>(0));
  case Type::BOOL:
    return f(bool{});
  }
  TESSERA_INTERNAL_ASSERT(false, "unknown element type");
}

/// Converts \p n elements of \p srcType at \p src to \p dstType at \p dst
/// (C++ conversion rules; float to half rounds to nearest even).
void convertElements(Type srcType, const void *src, Type dstType, void *dst,
                     std::size_t n);

/// The value of one element as a double.
double elementAsDouble(Type type, const void *element);

/// One element as Poplar's PrintTensor writes it: floating point with 7
/// decimals, integers as integers, bools as 0 or 1.
std::string formatElement(Type type, const void *element);

} // namespace tessera
