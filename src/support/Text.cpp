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

namespace {

// The length of the UTF-8 sequence at text[i] and its code point, or 0
// when the bytes there are not one (overlong, surrogate, cut short).
std::size_t utf8Sequence(std::string_view text, std::size_t i,
                         char32_t &point) {
  const auto byte = [&](std::size_t k) {
    return static_cast<unsigned char>(text[k]);
  };
  const unsigned char lead = byte(i);
  std::size_t n = 0;
  char32_t low = 0; // the smallest code point of that length
  if (lead >= 0xc2 && lead <= 0xdf) {
    n = 2, low = 0x80, point = lead & 0x1f;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    n = 3, low = 0x800, point = lead & 0x0f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    n = 4, low = 0x10000, point = lead & 0x07;
  } else {
    return 0;
  }
  if (i + n > text.size())
    return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80)
      return 0;
    point = (point << 6) | (byte(i + k) & 0x3f);
  }
  if (point < low || point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff))
    return 0;
  return n;
}

} // namespace

std::string printableText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f)
        out += fmt::format("\\x{:02x}", c);
      else
        out += static_cast<char>(c);
      ++i;
      continue;
    }
    char32_t point = 0;
    const std::size_t n = utf8Sequence(text, i, point);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    } else if (point <= 0x9f) { // C1 controls: CSI (U+009B) and others
      out += fmt::format("\\u{:04x}", static_cast<std::uint32_t>(point));
      i += n;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

} // namespace tessera
