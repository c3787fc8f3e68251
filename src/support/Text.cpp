#include "tessera/support/Text.hpp"

#include <fmt/format.h>

#include <array>
#include <string_view>

namespace tessera {

std::string groupedNumber(std::uint64_t value) {
  const std::string digits = std::to_string(value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

std::string bytesText(std::uint64_t bytes) {
  std::string out = groupedNumber(bytes) + " B";
  if (bytes < 1024)
    return out;
  static constexpr std::array<std::string_view, 4> units = {"KB", "MB", "GB",
                                                            "TB"};
  double v = static_cast<double>(bytes) / 1024;
  std::size_t u = 0;
  while (v >= 1024 && u + 1 < units.size()) {
    v /= 1024;
    ++u;
  }
  return out + fmt::format(" ({:.1f} {})", v, units[u]);
}

} // namespace tessera
