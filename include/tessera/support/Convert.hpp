/// \file
/// Conversions between element types, for constants, initial values, host
/// buffers and printing.
#pragma once

#include "tessera/support/Type.hpp"

#include <cstddef>
#include <string>

namespace tessera {

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
