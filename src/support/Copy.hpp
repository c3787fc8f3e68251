// Private to the library: the short copy that the engine's exchanges and
// the ops' host kernels share. Both move many pieces of a few to a few
// hundred bytes (a tile's row of a block), where a memcpy call costs more
// than the move itself.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tessera::support {

/// Copies \p n bytes from \p src to \p dst, which do not overlap: whole
/// 32-byte vectors and one overlapping last vector, or two overlapping
/// smaller moves for a piece under 32 bytes; pieces over 512 bytes go to
/// memcpy. Always inlined: called once per piece, a call would cost as
/// much as the move, and the callers' loops would lose their registers.
[[gnu::always_inline]] inline void copyBytes(void *dst, const void *src,
                                             std::size_t n) {
  auto *d = static_cast<unsigned char *>(dst);
  const auto *s = static_cast<const unsigned char *>(src);
  // Both ends are read before either is written, so the two moves of a
  // short piece may overlap each other.
  const auto ends = [&](auto word) {
    decltype(word) first, last;
    std::memcpy(&first, s, sizeof first);
    std::memcpy(&last, s + n - sizeof last, sizeof last);
    std::memcpy(d, &first, sizeof first);
    std::memcpy(d + n - sizeof last, &last, sizeof last);
  };
  if (n >= 32) {
    if (n > 512) {
      std::memcpy(d, s, n);
      return;
    }
    const __m256i last =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s + n - 32));
    for (std::size_t i = 0; i + 32 < n; i += 32)
      _mm256_storeu_si256(
          reinterpret_cast<__m256i *>(d + i),
          _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(d + n - 32), last);
  } else if (n >= 16) {
    ends(__m128i{});
  } else if (n >= 8) {
    ends(std::uint64_t{});
  } else if (n >= 4) {
    ends(std::uint32_t{});
  } else {
    for (std::size_t i = 0; i < n; ++i)
      d[i] = s[i];
  }
}

} // namespace tessera::support
