#include "tessera/support/OptionParser.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/Logging.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <mutex>
#include <set>

namespace tessera {

namespace {

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// Optimal string alignment distance: Levenshtein plus adjacent
// transpositions, the commonest typo ("autoRpeort").
std::size_t editDistance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::size_t> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (std::size_t j = 0; j <= m; ++j)
    prev[j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1]))
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[m];
}

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(),
                    [](char x, char y) { return lower(x) == lower(y); });
}

std::string_view lastDottedPart(std::string_view s) {
  auto dot = s.rfind('.');
  return dot == std::string_view::npos ? s : s.substr(dot + 1);
}

template <typename T> bool parseUnsigned(std::string_view text, T &out) {
  if (text.empty() || text.front() < '0' || text.front() > '9')
    return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

template <typename T> bool parseFloating(std::string_view text, T &out) {
  if (text.empty() || text.front() == '+' || text.front() == ' ')
    return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() &&
         std::isfinite(out);
}

template <typename T> OptionParser::Handler unsignedHandler(T &target) {
  return [&target](std::string_view text, bool commit) {
    T value{};
    if (!parseUnsigned(text, value))
      return false;
    if (commit)
      target = value;
    return true;
  };
}

template <typename T> OptionParser::Handler floatingHandler(T &target) {
  return [&target](std::string_view text, bool commit) {
    T value{};
    if (!parseFloating(text, value))
      return false;
    if (commit)
      target = value;
    return true;
  };
}

template <typename T> std::string unsignedExpectation() {
  return "an unsigned integer from 0 to " +
         std::to_string(std::numeric_limits<T>::max());
}

} // namespace

std::string didYouMean(std::string_view key,
                       const std::vector<std::string> &candidates) {
  // Allow about one typo per three characters, so short keys do not match
  // everything and long dotted keys still forgive a slip or two.
  const std::size_t limit = key.size() <= 3 ? 1 : key.size() <= 8 ? 2 : 3;
  const std::string *best = nullptr;
  std::size_t bestDistance = limit + 1;
  for (const auto &candidate : candidates) {
    std::size_t d = editDistance(key, candidate);
    if (d < bestDistance || (d == bestDistance && best && candidate < *best)) {
      best = &candidate;
      bestDistance = d;
    }
  }
  if (best != nullptr)
    return *best;
  const std::string *suffixMatch = nullptr;
  for (const auto &candidate : candidates) {
    if (equalsIgnoringCase(lastDottedPart(candidate), key)) {
      if (suffixMatch != nullptr)
        return {}; // ambiguous: "all" could be several components' "all"
      suffixMatch = &candidate;
    }
  }
  return suffixMatch ? *suffixMatch : std::string();
}

OptionParser::OptionParser(std::string component)
    : component_(std::move(component)) {}

void OptionParser::addHandler(std::string key, std::string expected,
                              Handler handler) {
  TESSERA_INTERNAL_ASSERT(find(key) == nullptr,
                          "option \"" + key + "\" declared twice");
  entries_.push_back({std::move(key), std::move(expected), std::move(handler)});
}

void OptionParser::add(std::string key, bool &target) {
  addHandler(std::move(key), "\"true\" or \"false\"",
             [&target](std::string_view text, bool commit) {
               if (text != "true" && text != "false")
                 return false;
               if (commit)
                 target = text == "true";
               return true;
             });
}

void OptionParser::add(std::string key, unsigned &target) {
  addHandler(std::move(key), unsignedExpectation<unsigned>(),
             unsignedHandler(target));
}

void OptionParser::add(std::string key, unsigned long &target) {
  addHandler(std::move(key), unsignedExpectation<unsigned long>(),
             unsignedHandler(target));
}

void OptionParser::add(std::string key, unsigned long long &target) {
  addHandler(std::move(key), unsignedExpectation<unsigned long long>(),
             unsignedHandler(target));
}

void OptionParser::add(std::string key, unsigned &target, unsigned minimum,
                       unsigned maximum) {
  addHandler(std::move(key),
             "an unsigned integer from " + std::to_string(minimum) + " to " +
                 std::to_string(maximum),
             [&target, minimum, maximum](std::string_view text, bool commit) {
               unsigned value = 0;
               if (!parseUnsigned(text, value) || value < minimum ||
                   value > maximum)
                 return false;
               if (commit)
                 target = value;
               return true;
             });
}

void OptionParser::add(std::string key, int &target) {
  addHandler(
      std::move(key),
      "an integer from " + std::to_string(std::numeric_limits<int>::min()) +
          " to " + std::to_string(std::numeric_limits<int>::max()),
      [&target](std::string_view text, bool commit) {
        int value = 0;
        auto [ptr, ec] =
            std::from_chars(text.data(), text.data() + text.size(), value);
        if (text.empty() || ec != std::errc() ||
            ptr != text.data() + text.size())
          return false;
        if (commit)
          target = value;
        return true;
      });
}

void OptionParser::add(std::string key, double &target) {
  addHandler(std::move(key), "a finite number such as 0.5 or 1e9",
             floatingHandler(target));
}

void OptionParser::add(std::string key, float &target) {
  addHandler(std::move(key), "a finite number such as 0.5 or 1e9",
             floatingHandler(target));
}

void OptionParser::add(std::string key, std::string &target) {
  addHandler(std::move(key), "a string",
             [&target](std::string_view text, bool commit) {
               if (commit)
                 target = std::string(text);
               return true;
             });
}

void OptionParser::addIgnored(std::string key, std::string reason,
                              std::vector<std::string> values) {
  ignoredKeys_.push_back(key);
  std::string expected =
      values.empty() ? std::string("any value") : enumExpectation(values);
  addHandler(key, expected + " (the option is accepted and ignored)",
             [component = component_, key, reason = std::move(reason),
              values = std::move(values)](std::string_view text, bool commit) {
               if (!values.empty() && std::find(values.begin(), values.end(),
                                                text) == values.end())
                 return false;
               if (commit)
                 logIgnoredOnce(component, key, text, reason);
               return true;
             });
}

// A program that sets such an option sets it on every call of the op or
// engine: one line per process says it does nothing, not one per call.
void OptionParser::logIgnoredOnce(const std::string &component,
                                  const std::string &key,
                                  std::string_view value,
                                  const std::string &reason) {
  static std::mutex mutex;
  static std::set<std::string> logged;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!logged.insert(component + "\n" + key).second)
      return;
  }
  logging::info("{} option {}={} has no effect on the IPU Model: {}", component,
                key, value, reason);
}

std::vector<std::string> OptionParser::ignoredKeys() const {
  return ignoredKeys_;
}

void OptionParser::ignorePrefix(std::string prefix) {
  ignoredPrefixes_.push_back(std::move(prefix));
}

std::string
OptionParser::enumExpectation(const std::vector<std::string> &names) {
  std::string s = "one of ";
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0)
      s += i + 1 == names.size() ? " or " : ", ";
    s += "\"" + names[i] + "\"";
  }
  return s;
}

const OptionParser::Entry *OptionParser::find(std::string_view key) const {
  for (const auto &e : entries_)
    if (e.key == key)
      return &e;
  return nullptr;
}

void OptionParser::throwUnknown(std::string_view key) const {
  std::vector<std::string> known = keys();
  std::string msg =
      "unknown " + component_ + " option \"" + std::string(key) + "\"";
  std::string hint = didYouMean(key, known);
  if (!hint.empty())
    msg += "; did you mean \"" + hint + "\"?";
  std::sort(known.begin(), known.end());
  msg += " Known options:";
  for (std::size_t i = 0; i < known.size(); ++i)
    msg += (i == 0 ? " " : ", ") + known[i];
  if (known.empty())
    msg += " none";
  throw OptionError(msg);
}

void OptionParser::parse(const OptionFlags &flags) const {
  std::vector<std::pair<const Entry *, const std::string *>> accepted;
  for (const auto &[key, value] : flags) {
    bool ignored = std::any_of(
        ignoredPrefixes_.begin(), ignoredPrefixes_.end(),
        [&key = key](const std::string &p) { return key.starts_with(p); });
    if (ignored)
      continue;
    const Entry *entry = find(key);
    if (entry == nullptr)
      throwUnknown(key);
    if (!entry->handler(value, false))
      throw OptionError("invalid value \"" + value + "\" for " + component_ +
                        " option \"" + key + "\": expected " + entry->expected);
    accepted.emplace_back(entry, &value);
  }
  for (const auto &[entry, value] : accepted)
    entry->handler(*value, true);
}

std::vector<std::string> OptionParser::keys() const {
  std::vector<std::string> result;
  result.reserve(entries_.size());
  for (const auto &e : entries_)
    result.push_back(e.key);
  return result;
}

} // namespace tessera
