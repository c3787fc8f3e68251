/// \file
/// Numbers as people read them, for tables and summaries: digits grouped
/// in thousands, byte counts with a binary unit.
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

/// 1234567 -> "1,234,567".
std::string groupedNumber(std::uint64_t value);

/// 1536 -> "1,536 B (1.5 KB)"; under 1024 bytes only "N B".
std::string bytesText(std::uint64_t bytes);

} // namespace tessera
