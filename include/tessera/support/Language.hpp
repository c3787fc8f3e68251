/// \file
/// Language-level helpers that keep Tessera's public headers valid C++11
/// where the Poplar compatibility headers (compat/include) reach them: the
/// library itself is C++20, Poplar programs are often built with -std=c++11.
#pragma once

#include <cstddef>

#if __cplusplus >= 201703L
#define TESSERA_CXX17 1
#else
#define TESSERA_CXX17 0
#endif

// Constants in headers: one object program-wide from C++17, one per
// translation unit before (a const at namespace scope), alike in use.
#if TESSERA_CXX17
#define TESSERA_INLINE_VAR inline
#else
#define TESSERA_INLINE_VAR
#endif

namespace tessera {

/// A byte of raw memory: std::byte where the language has it, an enum of
/// the same representation otherwise.
#if TESSERA_CXX17
using Byte = std::byte;
#else
enum class Byte : unsigned char {};
#endif

} // namespace tessera
