// The text form's tokens, with the line and column each starts at so that
// parse errors can point at them.
#pragma once

#include <string>
#include <string_view>

namespace tessera::ir::detail {

enum class TokenKind {
  End,
  Ident,  ///< a word: module, input, float, glorotUniform, ...
  Value,  ///< %name, %"text" or %12 (text holds the name or digits)
  String, ///< "text", unescaped
  Number, ///< -12, 0.5, 1e-05, inf, -inf, nan
  Punct,  ///< one of = ( ) { } [ ] , : @
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;
  unsigned line = 1, column = 1;
  /// For Value tokens: whether the name was numeric (an unnamed value).
  bool numeric = false;
  /// "'%x'", "end of text", ... for messages.
  std::string describe() const;
};

/// Splits the text into tokens one at a time; throws ParseError for
/// characters that start no token and unterminated strings.
class Lexer {
public:
  explicit Lexer(std::string_view text) : text_(text) {}
  Token next();

private:
  void skipSpace();
  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  char advance();
  std::string readString(const Token &start);
  Token number(Token t);

  std::string_view text_;
  std::size_t pos_ = 0;
  unsigned line_ = 1, column_ = 1;
};

/// True for a name the printer can write without quotes.
bool isIdentifier(std::string_view s);
/// \p s in double quotes with " and \ escaped.
std::string quote(std::string_view s);

} // namespace tessera::ir::detail
