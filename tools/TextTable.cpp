#include "TextTable.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <ostream>
#include <string_view>

namespace tessera::tools {

TextTable::TextTable(std::vector<std::string> headers,
                     std::vector<bool> rightAligned)
    : headers_(std::move(headers)), right_(std::move(rightAligned)) {
  right_.resize(headers_.size(), false);
}

void TextTable::addRow(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

void TextTable::print(std::ostream &os, unsigned indent) const {
  std::vector<std::size_t> width(headers_.size());
  for (std::size_t c = 0; c < headers_.size(); ++c) {
    width[c] = headers_[c].size();
    for (const auto &row : rows_)
      width[c] = std::max(width[c], row[c].size());
  }
  const std::string pad(indent, ' ');
  auto line = [&](const std::vector<std::string> &cells) {
    std::string text = pad;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      if (c)
        text += "  ";
      if (right_[c])
        text += fmt::format("{:>{}}", cells[c], width[c]);
      else
        text += fmt::format("{:<{}}", cells[c], width[c]);
    }
    // Empty right-aligned cells at the end would leave trailing blanks.
    text.erase(text.find_last_not_of(' ') + 1);
    os << text << '\n';
  };
  line(headers_);
  std::vector<std::string> rule;
  for (std::size_t w : width)
    rule.push_back(std::string(w, '-'));
  line(rule);
  for (const auto &row : rows_)
    line(row);
}

std::string ipuRange(const std::vector<unsigned> &ipus) {
  if (ipus.empty())
    return "-";
  // Devices are contiguous IPU ranges; anything else is listed in full.
  bool contiguous = true;
  for (std::size_t i = 1; i < ipus.size(); ++i)
    contiguous = contiguous && ipus[i] == ipus[i - 1] + 1;
  if (ipus.size() == 1)
    return std::to_string(ipus[0]);
  if (contiguous)
    return fmt::format("{}-{}", ipus.front(), ipus.back());
  std::string out;
  for (std::size_t i = 0; i < ipus.size(); ++i)
    out += (i ? "," : "") + std::to_string(ipus[i]);
  return out;
}

std::string durationText(std::int64_t seconds) {
  if (seconds < 0)
    seconds = 0;
  const std::int64_t days = seconds / 86400;
  const std::int64_t h = seconds / 3600 % 24, m = seconds / 60 % 60,
                     s = seconds % 60;
  if (days)
    return fmt::format("{}d {:02}:{:02}:{:02}", days, h, m, s);
  if (h)
    return fmt::format("{:02}:{:02}:{:02}", h, m, s);
  return fmt::format("{:02}:{:02}", m, s);
}

} // namespace tessera::tools
