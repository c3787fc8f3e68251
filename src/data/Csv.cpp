// Dataset::csv: a whole file of numeric columns parsed up front, so a bad
// field is reported when the dataset is made, with its line and column,
// rather than part-way through training.
#include "Files.hpp"
#include "tessera/data/Dataset.hpp"
#include "tessera/support/Convert.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>

namespace tessera::data {
namespace {


std::string quoteList(const std::vector<std::string> &names) {
  std::string s;
  for (const std::string &n : names)
    s += (s.empty() ? "\"" : ", \"") + n + "\"";
  return s;
}

class CsvReader {
public:
  CsvReader(const std::string &path, const CsvOptions &options)
      : path_(path), options_(options),
        text_(detail::readMaybeGzip(path, "CSV file")) {}

  Dataset read();

private:
  bool nextRecord();
  void splitFields(std::string_view line);
  void resolveColumns();
  std::size_t columnIndex(const std::string &name) const;
  void parseRecord();
  void parseField(std::size_t column, Type type, std::vector<std::byte> &out);
  [[noreturn]] void fail(const std::string &what) const;
  [[noreturn]] void failField(std::size_t column,
                              const std::string &what) const;

  const std::string &path_;
  const CsvOptions &options_;
  const std::string text_;
  std::size_t pos_ = 0;
  std::size_t lineNumber_ = 0;
  std::vector<std::string> fields_;
  std::vector<std::string> names_;
  std::vector<std::size_t> featureColumns_;
  std::optional<std::size_t> labelColumn_;
  std::vector<std::byte> features_, labels_;
  std::size_t rows_ = 0;
};

Dataset CsvReader::read() {
  if (text_.compare(0, 3, "\xEF\xBB\xBF") == 0) // a UTF-8 byte order mark
    pos_ = 3;
  const bool haveRecord = nextRecord();
  if (!haveRecord && !options_.header)
    throw SerializationError("CSV file \"" + path_ +
                             "\" has no rows, so its columns are unknown; "
                             "give it a header line or some rows");
  if (!haveRecord)
    throw SerializationError("CSV file \"" + path_ +
                             "\" is empty; its first line must name the "
                             "columns (or set header = false)");
  if (options_.header) {
    names_ = fields_;
  } else {
    for (std::size_t c = 0; c < fields_.size(); ++c)
      names_.push_back(std::to_string(c));
  }
  resolveColumns();
  if (!options_.header)
    parseRecord();
  while (nextRecord())
    parseRecord();

  std::vector<HostTensor> tensors;
  auto tensor = [&](Type type, Shape shape, const std::vector<std::byte> &b) {
    HostTensor t(type, std::move(shape));
    if (!b.empty())
      std::memcpy(t.data(), b.data(), b.size());
    tensors.push_back(std::move(t));
  };
  tensor(options_.featureType, {rows_, featureColumns_.size()}, features_);
  std::vector<std::string> componentNames{"features"};
  if (labelColumn_) {
    tensor(options_.labelType, {rows_}, labels_);
    componentNames.push_back("label");
  }
  return Dataset::fromTensors(std::move(tensors), componentNames);
}

// The next line that is not blank, split into fields_.
bool CsvReader::nextRecord() {
  while (pos_ < text_.size()) {
    std::size_t end = text_.find('\n', pos_);
    if (end == std::string::npos)
      end = text_.size();
    std::string_view line(text_.data() + pos_, end - pos_);
    pos_ = end + 1;
    ++lineNumber_;
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos)
      continue;
    splitFields(line);
    return true;
  }
  return false;
}

void CsvReader::splitFields(std::string_view line) {
  const char delim = options_.delimiter;
  auto isSpace = [&](char c) { return (c == ' ' || c == '\t') && c != delim; };
  fields_.clear();
  std::size_t i = 0;
  for (;;) {
    while (i < line.size() && isSpace(line[i]))
      ++i;
    std::string field;
    if (i < line.size() && line[i] == '"') {
      // A quoted field may hold the delimiter; "" stands for one quote.
      for (++i;; ++i) {
        if (i >= line.size())
          fail("column " + std::to_string(fields_.size() + 1) +
               " opens a quote that the line never closes");
        if (line[i] == '"' && i + 1 < line.size() && line[i + 1] == '"')
          field += line[i++];
        else if (line[i] == '"')
          break;
        else
          field += line[i];
      }
      ++i;
      while (i < line.size() && isSpace(line[i]))
        ++i;
      if (i < line.size() && line[i] != delim)
        fail("column " + std::to_string(fields_.size() + 1) +
             " has text after its closing quote");
    } else {
      const std::size_t start = i;
      while (i < line.size() && line[i] != delim)
        ++i;
      std::size_t end = i;
      while (end > start && isSpace(line[end - 1]))
        --end;
      field.assign(line.substr(start, end - start));
    }
    fields_.push_back(std::move(field));
    if (i >= line.size())
      return;
    ++i; // the delimiter
  }
}

std::size_t CsvReader::columnIndex(const std::string &name) const {
  for (std::size_t c = 0; c < names_.size(); ++c)
    if (names_[c] == name)
      return c;
  throw OptionError("csv: \"" + name + "\" is not a column of \"" + path_ +
                    "\"; its columns are " + quoteList(names_) +
                    (options_.header ? ""
                                     : " (by position, as it has no "
                                       "header)"));
}

void CsvReader::resolveColumns() {
  if (!options_.labelColumn.empty())
    labelColumn_ = columnIndex(options_.labelColumn);
  for (const std::string &name : options_.featureColumns)
    featureColumns_.push_back(columnIndex(name));
  if (options_.featureColumns.empty())
    for (std::size_t c = 0; c < names_.size(); ++c)
      if (c != labelColumn_)
        featureColumns_.push_back(c);
  if (featureColumns_.empty())
    throw OptionError("csv: \"" + path_ +
                      "\" has no feature columns besides the label column \"" +
                      options_.labelColumn +
                      "\"; a dataset needs at least one feature");
}

void CsvReader::parseRecord() {
  if (fields_.size() != names_.size())
    fail("has " + std::to_string(fields_.size()) + " fields but " +
         (options_.header ? "the header names " : "the first row has ") +
         std::to_string(names_.size()) +
         " columns; every row needs one field per column");
  for (std::size_t c : featureColumns_)
    parseField(c, options_.featureType, features_);
  if (labelColumn_)
    parseField(*labelColumn_, options_.labelType, labels_);
  ++rows_;
}

void CsvReader::parseField(std::size_t column, Type type,
                           std::vector<std::byte> &out) {
  const std::string &field = fields_[column];
  if (field.empty())
    failField(column, "is empty; every field must hold a number");
  const char *first = field.data(), *last = field.data() + field.size();
  if (*first == '+')
    ++first;
  double value = 0;
  const auto [end, ec] = std::from_chars(first, last, value);
  if (ec == std::errc::result_out_of_range)
    failField(column, "\"" + field + "\" is out of the range of a double");
  if (ec != std::errc() || end != last)
    failField(column, "\"" + field + "\" is not a number");
  visitType(type, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_integral_v<T>) {
      const auto lo = static_cast<double>(std::numeric_limits<T>::lowest());
      const auto hi = static_cast<double>(std::numeric_limits<T>::max());
      if (value != std::floor(value) || !std::isfinite(value))
        failField(column, "\"" + field +
                              "\" is not an integer, but the "
                              "column is read as " +
                              std::string(typeName(type)));
      if (value < lo || value > hi)
        failField(column, "\"" + field + "\" does not fit in " +
                              std::string(typeName(type)) + " (" +
                              std::to_string(static_cast<long long>(lo)) +
                              " to " +
                              std::to_string(static_cast<long long>(hi)) + ")");
    }
    T element;
    if constexpr (std::is_integral_v<T>)
      element = static_cast<T>(value);
    else // through float, as for every other float input (half included)
      element = static_cast<T>(static_cast<float>(value));
    const auto *bytes = reinterpret_cast<const std::byte *>(&element);
    out.insert(out.end(), bytes, bytes + sizeof(T));
  });
}

void CsvReader::fail(const std::string &what) const {
  throw SerializationError("CSV file \"" + path_ + "\" line " +
                           std::to_string(lineNumber_) + " " + what);
}

void CsvReader::failField(std::size_t column, const std::string &what) const {
  std::string where = "column " + std::to_string(column + 1);
  if (options_.header)
    where += " (\"" + names_[column] + "\")";
  throw SerializationError("CSV file \"" + path_ + "\" line " +
                           std::to_string(lineNumber_) + ", " + where + ": " +
                           what);
}

} // namespace

Dataset Dataset::csv(const std::string &path, const CsvOptions &options) {
  return CsvReader(path, options).read();
}

} // namespace tessera::data
