#include "TextLexer.hpp"

#include "tessera/ir/Text.hpp"

#include <cctype>

namespace tessera::ir {

ParseError::ParseError(unsigned line, unsigned column,
                       const std::string &message)
    : Error("line " + std::to_string(line) + ", column " +
            std::to_string(column) + ": " + message),
      line_(line), column_(column) {}

namespace detail {

bool isIdentifier(std::string_view s) {
  if (s.empty() ||
      !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_'))
    return false;
  for (char ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' ||
          ch == '.' || ch == '/'))
      return false;
  return true;
}

std::string quote(std::string_view s) {
  std::string q = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\')
      q += '\\';
    if (ch == '\n') {
      q += "\\n";
      continue;
    }
    q += ch;
  }
  return q + "\"";
}

std::string Token::describe() const {
  switch (kind) {
  case TokenKind::End:
    return "end of text";
  case TokenKind::Value:
    return "'%" + (numeric || isIdentifier(text) ? text : quote(text)) + "'";
  case TokenKind::String:
    return quote(text);
  default:
    return "'" + text + "'";
  }
}

char Lexer::advance() {
  const char ch = text_[pos_++];
  if (ch == '\n') {
    ++line_;
    column_ = 1;
  } else {
    ++column_;
  }
  return ch;
}

void Lexer::skipSpace() {
  while (pos_ < text_.size()) {
    if (std::isspace(static_cast<unsigned char>(peek()))) {
      advance();
    } else if (peek() == '#') {
      while (pos_ < text_.size() && peek() != '\n')
        advance();
    } else {
      break;
    }
  }
}

std::string Lexer::readString(const Token &start) {
  advance(); // the opening quote
  std::string s;
  while (true) {
    if (pos_ >= text_.size() || peek() == '\n')
      throw ParseError(start.line, start.column,
                       "the string has no closing '\"' on its line");
    const char ch = advance();
    if (ch == '"')
      return s;
    if (ch == '\\' && pos_ < text_.size()) {
      const char e = advance();
      s += e == 'n' ? '\n' : e;
      continue;
    }
    s += ch;
  }
}

Token Lexer::number(Token t) {
  t.kind = TokenKind::Number;
  if (peek() == '-' || peek() == '+')
    t.text += advance();
  if (std::isalpha(static_cast<unsigned char>(peek()))) {
    while (std::isalpha(static_cast<unsigned char>(peek())))
      t.text += advance();
    const std::string word =
        t.text.substr(t.text[0] == '-' || t.text[0] == '+');
    if (word != "inf" && word != "nan")
      throw ParseError(t.line, t.column,
                       "expected a number, found '" + t.text + "'");
    return t;
  }
  while (std::isdigit(static_cast<unsigned char>(peek())) || peek() == '.' ||
         peek() == 'e' || peek() == 'E' ||
         ((peek() == '-' || peek() == '+') &&
          (t.text.back() == 'e' || t.text.back() == 'E')))
    t.text += advance();
  if (t.text.empty() || t.text == "-" || t.text == "+")
    throw ParseError(t.line, t.column, "expected a number after the sign");
  return t;
}

Token Lexer::next() {
  skipSpace();
  Token t;
  t.line = line_;
  t.column = column_;
  if (pos_ >= text_.size())
    return t;
  const char ch = peek();
  if (ch == '%') {
    advance();
    t.kind = TokenKind::Value;
    if (peek() == '"') {
      t.text = readString(t);
    } else {
      while (std::isalnum(static_cast<unsigned char>(peek())) ||
             peek() == '_' || peek() == '.' || peek() == '/')
        t.text += advance();
      if (t.text.empty())
        throw ParseError(t.line, t.column,
                         "expected a value name or number after '%'");
      t.numeric = std::isdigit(static_cast<unsigned char>(t.text[0]));
    }
    return t;
  }
  if (ch == '"') {
    t.kind = TokenKind::String;
    t.text = readString(t);
    return t;
  }
  if (std::isdigit(static_cast<unsigned char>(ch)) || ch == '-' || ch == '+')
    return number(t);
  if (std::isalpha(static_cast<unsigned char>(ch)) || ch == '_') {
    t.kind = TokenKind::Ident;
    while (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_')
      t.text += advance();
    // inf and nan are numbers wherever a number can stand.
    if (t.text == "inf" || t.text == "nan")
      t.kind = TokenKind::Number;
    return t;
  }
  if (std::string_view("=(){}[],:@").find(ch) != std::string_view::npos) {
    t.kind = TokenKind::Punct;
    t.text = std::string(1, advance());
    return t;
  }
  throw ParseError(t.line, t.column,
                   std::string("unexpected character '") + ch + "'");
}

} // namespace detail
} // namespace tessera::ir
