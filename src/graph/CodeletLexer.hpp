/// \file
/// A C++ tokenizer just good enough to find vertex classes in user codelet
/// source: identifiers, numbers and punctuators with their line numbers.
/// Comments, string and character literals (raw strings too) and
/// preprocessor directives are dropped; so are the branches of `#if 0` and of
/// `#ifdef __IPU__`-style conditionals, which the IPU Model's host compile
/// never sees. Macros are not expanded.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace tessera::detail {

enum class CodeletTokenKind : std::uint8_t { Identifier, Number, Punct };

/// One token; `text` points into the source given to lexCodeletSource.
struct CodeletToken {
  CodeletTokenKind kind = CodeletTokenKind::Punct;
  std::string_view text;
  unsigned line = 0;

  bool is(std::string_view s) const { return text == s; }
  bool isIdentifier() const { return kind == CodeletTokenKind::Identifier; }
};

/// Splits \p source into tokens. "::" is one token; every other punctuator
/// is one character (so `>>` closing two template argument lists is two
/// tokens). Never throws on malformed input: the C++ compiler reports that.
std::vector<CodeletToken> lexCodeletSource(std::string_view source);

} // namespace tessera::detail
