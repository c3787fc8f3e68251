/// \file
/// String options, as Poplar's poplar::OptionFlags: an ordered map from
/// option name to value, filled in code, from JSON or from an environment
/// variable (TESSERA_ENGINE_OPTIONS, as Poplar's POPLAR_ENGINE_OPTIONS).
/// Components read them through an OptionParser (OptionParser.hpp), which
/// checks names and values.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <iosfwd>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "tessera/support/Error.hpp"
#include "tessera/support/Language.hpp"

namespace tessera {

/// An ordered string-to-string map of options. Iteration is in key order, so
/// two equal sets of options iterate, print and hash the same way whatever
/// order they were set in.
class OptionFlags {
#if __cplusplus >= 201402L
  using Map = std::map<std::string, std::string, std::less<>>;
#else
  // The same tree (an empty comparator ordering keys the same way); C++11
  // has no transparent std::less<>.
  using Map = std::map<std::string, std::string>;
#endif

public:
  using value_type = Map::value_type;
  using const_iterator = Map::const_iterator;
  using iterator = const_iterator;

  OptionFlags() = default;
  /// `OptionFlags opts{{"autoReport.all", "true"}, {"debug.x", "1"}};`
  /// A key given twice keeps its last value.
  OptionFlags(std::initializer_list<std::pair<std::string, std::string>> init);

#if TESSERA_CXX17
  /// Sets \p key to \p value, replacing any earlier value.
  void set(std::string_view key, std::string_view value);
  /// Sets every pair in \p values, as set(key, value) one by one.
  void set(std::initializer_list<std::pair<std::string, std::string>> values);
  /// The value of \p key; throws OptionError naming the key when it is not
  /// set.
  const std::string &at(std::string_view key) const;
  /// The value of \p key, or \p defaultValue when it is not set.
  std::string get(std::string_view key, std::string_view defaultValue) const;
  bool contains(std::string_view key) const;
  /// Removes \p key; returns whether it was set.
  bool erase(std::string_view key);
#else
  // The same operations for programs built as C++11 or C++14.
  void set(const std::string &key, const std::string &value) {
    map_[key] = value;
  }
  void set(std::initializer_list<std::pair<std::string, std::string>> values) {
    for (const auto &kv : values)
      map_[kv.first] = kv.second;
  }
  const std::string &at(const std::string &key) const {
    auto it = map_.find(key);
    if (it == map_.end())
      throw OptionError("option '" + key + "' is not set");
    return it->second;
  }
  std::string get(const std::string &key,
                  const std::string &defaultValue) const {
    auto it = map_.find(key);
    return it == map_.end() ? defaultValue : it->second;
  }
  bool contains(const std::string &key) const {
    return map_.find(key) != map_.end();
  }
  bool erase(const std::string &key) { return map_.erase(key) != 0; }
#endif
  void clear() { map_.clear(); }

  std::size_t size() const { return map_.size(); }
  bool empty() const { return map_.empty(); }
  const_iterator begin() const { return map_.begin(); }
  const_iterator end() const { return map_.end(); }

  /// The options as a JSON object of strings, keys in order.
  std::string toJson() const;

  /// Parses a JSON object whose values are strings, numbers or booleans
  /// (numbers and booleans become their JSON spelling: 3, 0.5, "true").
  /// Throws OptionError saying \p where the text came from (an environment
  /// variable, a file name) and what is wrong with it.
#if TESSERA_CXX17
  static OptionFlags fromJson(std::string_view text, std::string_view where);
#endif

  friend bool operator==(const OptionFlags &a, const OptionFlags &b) {
    return a.map_ == b.map_;
  }

private:
  Map map_;
};

/// Reads a JSON object of options from \p in into \p flags, replacing the
/// values of keys already set. Errors as OptionFlags::fromJson.
void readJSON(OptionFlags &flags, std::istream &in);
/// Poplar's argument order for readJSON.
void readJSON(std::istream &in, OptionFlags &flags);

/// Options from the JSON object in environment variable \p varName; empty
/// when the variable is unset or empty. Errors name the variable.
OptionFlags optionsFromEnvironment(const char *varName);

/// \p base with every option of \p overrides set on top of it.
OptionFlags merged(const OptionFlags &base, const OptionFlags &overrides);

/// Prints the options as their JSON object.
std::ostream &operator<<(std::ostream &os, const OptionFlags &flags);

} // namespace tessera
