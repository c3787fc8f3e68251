/// \file
/// Prints float arrays the way NumPy prints them, so the TensorFlow
/// examples' output reads like the tutorials' Python output:
///
///     numpyStr({3, 8}, {2})   -> "[3. 8.]"             (print(array))
///     numpyRepr({4, 14}, {2}) -> "array([ 4., 14.], dtype=float32)"
///
/// Covered: NumPy's default "maxprec" mode (the fewest digits after the
/// point that give each float32 back, at most 8, the same for every
/// element), right-aligned integer parts, nested brackets for higher ranks,
/// and summarising with "..." (three items at each edge) when an array has
/// more than 1000 elements. Not covered: scientific notation for very large
/// or small values, and wrapping lines longer than 75 characters.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

namespace tessera::examples {

namespace detail {

// The fewest digits after the point (0..8) that print \p x so that it reads
// back as the same float.
inline int digitsFor(float x) {
  char buf[64];
  for (int d = 0; d < 8; ++d) {
    std::snprintf(buf, sizeof buf, "%.*f", d, double(x));
    if (std::strtof(buf, nullptr) == x)
      return d;
  }
  return 8;
}

// One element, its integer part right-aligned to \p intWidth and its
// fraction padded with spaces to \p digits, as NumPy does.
inline std::string element(float x, int digits, std::size_t intWidth) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digitsFor(x), double(x));
  std::string s = buf;
  if (s.find('.') == std::string::npos)
    s += '.';
  const std::size_t point = s.find('.');
  const std::size_t frac = s.size() - point - 1;
  s.append(std::size_t(digits) - std::min(std::size_t(digits), frac), ' ');
  return std::string(intWidth - std::min(intWidth, point), ' ') + s;
}

struct Layout {
  int digits = 0;
  std::size_t intWidth = 1;
  bool summarise = false;
  bool repr = false;
};

// Indices of dimension size \p n that are shown: all, or three at each edge
// with npos standing for the "..." between them.
inline std::vector<std::size_t> shownIndices(std::size_t n, bool summarise) {
  std::vector<std::size_t> idx;
  if (!summarise || n <= 6) {
    for (std::size_t i = 0; i < n; ++i)
      idx.push_back(i);
    return idx;
  }
  idx = {0, 1, 2, std::string::npos, n - 3, n - 2, n - 1};
  return idx;
}

inline void format(std::string &out, std::span<const float> values,
                   const std::vector<std::size_t> &shape, std::size_t dim,
                   std::size_t offset, std::size_t indent, const Layout &l) {
  const std::string sep = l.repr ? "," : "";
  std::size_t stride = 1;
  for (std::size_t d = dim + 1; d < shape.size(); ++d)
    stride *= shape[d];
  out += '[';
  const std::vector<std::size_t> idx = shownIndices(shape[dim], l.summarise);
  const bool last = dim + 1 == shape.size();
  // Between rows: a newline per dimension below this one, then the indent.
  const std::string rowBreak = sep + std::string(shape.size() - dim - 1, '\n') +
                               std::string(indent + dim + 1, ' ');
  for (std::size_t k = 0; k < idx.size(); ++k) {
    if (k > 0)
      out += last ? sep + " " : rowBreak;
    if (idx[k] == std::string::npos)
      out += "...";
    else if (last)
      out += element(values[offset + idx[k]], l.digits, l.intWidth);
    else
      format(out, values, shape, dim + 1, offset + idx[k] * stride, indent, l);
  }
  out += ']';
}

inline std::string formatArray(std::span<const float> values,
                               const std::vector<std::size_t> &shape,
                               std::size_t indent, bool repr) {
  Layout l;
  l.repr = repr;
  l.summarise = values.size() > 1000;
  for (float x : values) {
    l.digits = std::max(l.digits, digitsFor(x));
    // The integer part's width, sign included, is where the point falls.
    l.intWidth = std::max(l.intWidth, element(x, 0, 0).find('.'));
  }
  if (shape.empty()) {
    return element(values[0], l.digits, 0);
  }
  std::string out;
  format(out, values, shape, 0, 0, indent, l);
  return out;
}

} // namespace detail

/// print(array): "[3. 8.]", rows on their own lines.
inline std::string numpyStr(std::span<const float> values,
                            const std::vector<std::size_t> &shape) {
  return detail::formatArray(values, shape, 0, false);
}

/// repr(array) of a float32 array: "array([3., 8.], dtype=float32)".
inline std::string numpyRepr(std::span<const float> values,
                             const std::vector<std::size_t> &shape) {
  return "array(" + detail::formatArray(values, shape, 6, true) +
         ", dtype=float32)";
}

} // namespace tessera::examples
