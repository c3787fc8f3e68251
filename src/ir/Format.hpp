// Number formatting shared by the printer and the initialisers' text form:
// floats are written so that they read back as the same double and can
// never be mistaken for integers.
#pragma once

#include <charconv>
#include <cmath>
#include <string>

namespace tessera::ir::detail {

inline std::string formatFloat(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

} // namespace tessera::ir::detail
