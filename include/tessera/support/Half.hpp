/// \file
/// IEEE binary16 storage type. Arithmetic happens in float; conversions use
/// the F16C instructions where the compiler may use them.
#pragma once

#include <cstdint>
#include <cstring>
#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace tessera {

/// Converts a binary16 bit pattern to float.
inline float halfBitsToFloat(std::uint16_t h) {
#if defined(__F16C__)
  return _cvtsh_ss(h);
#else
  std::uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f,
                man = h & 0x3ffu, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {
    exp = 113;
    while (!(man & 0x400u)) {
      man <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((man & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
#endif
}

/// Converts float to binary16 bits, rounding to nearest even.
inline std::uint16_t floatToHalfBits(float f) {
#if defined(__F16C__)
  return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
#else
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  std::uint32_t sign = (x >> 16) & 0x8000u;
  std::uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) // inf or nan
    return static_cast<std::uint16_t>(sign | 0x7c00u |
                                      (absx > 0x7f800000u ? 0x200u : 0));
  if (absx >= 0x477ff000u) // overflow to inf
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (absx < 0x38800000u) { // subnormal or zero
    float af;
    std::memcpy(&af, &absx, 4);
    af += 0.5f;
    std::uint32_t r;
    std::memcpy(&r, &af, 4);
    return static_cast<std::uint16_t>(sign | (r - 0x3f000000u));
  }
  std::uint32_t mant_odd = (absx >> 13) & 1u;
  absx += 0xc8000fffu + mant_odd;
  return static_cast<std::uint16_t>(sign | (absx >> 13));
#endif
}

/// A half-precision value: 16 bits of storage, converts to and from float.
struct Half {
  std::uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(floatToHalfBits(f)) {} // NOLINT: implicit like half
  operator float() const { return halfBitsToFloat(bits); } // NOLINT
  static Half fromBits(std::uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
};

} // namespace tessera
