/// \file
/// Typed option structs (DESIGN.md section 10, item 9): a component declares
/// the options it understands, bound to the fields of its own option struct,
/// and parses an OptionFlags into them. Unknown keys are errors with a
/// "did you mean" hint; bad values are errors saying what was expected.
///
/// \code
///   struct EngineOptions { bool autoReportAll = false; std::string dir; };
///   EngineOptions o;
///   OptionParser p("engine");
///   p.add("autoReport.all", o.autoReportAll);
///   p.add("autoReport.directory", o.dir);
///   p.parse(flags); // throws OptionError; o is unchanged on error
/// \endcode
#pragma once

#include "tessera/support/OptionFlags.hpp"

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera {

/// The candidate closest to \p key by edit distance (case-insensitive), or an
/// empty string when none is close enough to be a plausible typo. A key equal
/// to the last dotted part of exactly one candidate ("all" for
/// "autoReport.all") also matches.
std::string didYouMean(std::string_view key,
                       const std::vector<std::string> &candidates);

/// Reads one component's options from an OptionFlags into typed fields.
class OptionParser {
public:
  /// \p component names the options in messages: "engine" gives
  /// `unknown engine option "x"`.
  explicit OptionParser(std::string component);

  /// Binds \p key to \p target. Accepted values: "true" or "false".
  void add(std::string key, bool &target);
  /// Decimal unsigned integers that fit the target's type.
  void add(std::string key, unsigned &target);
  void add(std::string key, unsigned long &target);
  void add(std::string key, unsigned long long &target);
  /// Decimal unsigned integers from \p minimum to \p maximum: a ceiling
  /// for options that size work or resources (threads, buffers).
  void add(std::string key, unsigned &target, unsigned minimum,
           unsigned maximum);
  /// Decimal integers, optionally negative, that fit an int.
  void add(std::string key, int &target);
  /// Finite decimal numbers ("0.5", "1e9").
  void add(std::string key, double &target);
  void add(std::string key, float &target);
  /// Any string.
  void add(std::string key, std::string &target);

  /// Binds \p key to an enum, accepting exactly the given names:
  /// `p.addEnum("mode", o.mode, {{"fast", Mode::Fast}, {"exact",
  /// Mode::Exact}})`.
  template <typename E>
  void addEnum(const std::string &key, E &target,
               std::initializer_list<std::pair<std::string_view, E>> values) {
    std::vector<std::pair<std::string, E>> table;
    std::vector<std::string> names;
    for (const auto &[name, value] : values) {
      table.emplace_back(std::string(name), value);
      names.emplace_back(name);
    }
    addHandler(key, enumExpectation(names),
               [&target, table = std::move(table)](std::string_view text,
                                                   bool commit) {
                 for (const auto &[name, value] : table) {
                   if (name == text) {
                     if (commit)
                       target = value;
                     return true;
                   }
                 }
                 return false;
               });
  }

  /// Accepts \p key and uses its value for nothing: a Poplar or PopLibs
  /// option that tunes what the IPU Model does not model; \p reason says
  /// why it has no effect. \p values: the values Poplar or PopLibs accept
  /// (empty: any). The first time a process parses one (per component and
  /// key) it logs at info level "<component> option <key>=<value> has no
  /// effect on the IPU Model: <reason>".
  void addIgnored(std::string key, std::string reason,
                  std::vector<std::string> values = {});
  /// The keys added with addIgnored, in declaration order.
  std::vector<std::string> ignoredKeys() const;

  /// Keys starting with \p prefix are skipped silently: they belong to
  /// another component reading the same OptionFlags.
  void ignorePrefix(std::string prefix);

  /// Checks every option in \p flags, then stores them all. Throws
  /// OptionError for an unknown key (with a did-you-mean hint and the list of
  /// known keys) or a bad value (naming key, value and what is expected);
  /// on error no target is changed.
  void parse(const OptionFlags &flags) const;

  /// The keys declared so far, in declaration order.
  std::vector<std::string> keys() const;

  /// A value parser: returns whether \p text is valid, storing it when
  /// \p commit is true.
  using Handler = std::function<bool(std::string_view text, bool commit)>;

  /// Binds \p key to a custom value parser; \p expected says what values it
  /// accepts, for error messages ("a power of two").
  void addHandler(std::string key, std::string expected, Handler handler);

private:
  struct Entry {
    std::string key;
    std::string expected;
    Handler handler;
  };
  static std::string enumExpectation(const std::vector<std::string> &names);
  const Entry *find(std::string_view key) const;
  [[noreturn]] void throwUnknown(std::string_view key) const;
  static void logIgnoredOnce(const std::string &component,
                             const std::string &key, std::string_view value,
                             const std::string &reason);

  std::string component_;
  std::vector<Entry> entries_;
  std::vector<std::string> ignoredPrefixes_;
  std::vector<std::string> ignoredKeys_;
};

} // namespace tessera
