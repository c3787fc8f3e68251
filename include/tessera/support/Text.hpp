/// \file
/// Numbers as people read them, for tables and summaries: digits grouped
/// in thousands, byte counts with a binary unit.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera {

/// 1234567 -> "1,234,567".
std::string groupedNumber(std::uint64_t value);

/// 1536 -> "1,536 B (1.5 KB)"; under 1024 bytes only "N B".
std::string bytesText(std::uint64_t bytes);

/// \p text (from another process, a file) made safe to print on a
/// terminal: control characters, which could move the cursor or recolour
/// the screen, become escapes ("\x1b", "\u009b"), and so do bytes that
/// are not UTF-8 ("\xff"); printable UTF-8 is kept.
std::string printableText(std::string_view text);

} // namespace tessera
