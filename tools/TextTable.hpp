/// \file
/// Plain-text tables and number formats for the command line's output.
#pragma once

#include "tessera/support/Text.hpp"

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace tessera::tools {

/// Columns padded to their widest cell; numeric columns right-aligned.
class TextTable {
public:
  /// \p rightAligned has one entry per column (missing ones: left).
  explicit TextTable(std::vector<std::string> headers,
                     std::vector<bool> rightAligned = {});
  void addRow(std::vector<std::string> cells);
  std::size_t numRows() const { return rows_.size(); }
  /// Writes the header, a rule and the rows, each line indented by
  /// \p indent spaces.
  void print(std::ostream &os, unsigned indent = 0) const;

private:
  std::vector<std::string> headers_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

/// IPU numbers as ranges: {0, 1, 2, 3} as "0-3", {5} as "5".
std::string ipuRange(const std::vector<unsigned> &ipus);
/// A duration in seconds as "3d 04:05:06", "04:05:06" or "05:06".
std::string durationText(std::int64_t seconds);

} // namespace tessera::tools
