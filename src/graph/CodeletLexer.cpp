#include "CodeletLexer.hpp"

#include <algorithm>
#include <string>

namespace tessera::detail {
namespace {

bool isIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         c == '$' || static_cast<unsigned char>(c) >= 0x80;
}
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }
bool isBlank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

// Macros the IPU toolchain defines and a host compile never does: code
// guarded by them is device-only (inline assembly and the like), so it is
// skipped, or a file with an IPU and a host version of a vertex would show
// two definitions.
bool isIpuOnlyMacro(std::string_view name) {
  return name.substr(0, 5) == "__IPU";
}

enum class Truth { False, True, Unknown };

/// Evaluates the few #if conditions whose value is known without expanding
/// macros: 0, 1, [!]defined(__IPU...) and __IPU... itself.
Truth evaluateCondition(std::string_view directive, std::string_view expr) {
  std::string t;
  for (char c : expr)
    if (!isBlank(c) && c != '\n')
      t += c;
  if (directive == "ifdef")
    return isIpuOnlyMacro(t) ? Truth::False : Truth::Unknown;
  if (directive == "ifndef")
    return isIpuOnlyMacro(t) ? Truth::True : Truth::Unknown;
  if (t == "0")
    return Truth::False;
  if (t == "1")
    return Truth::True;
  bool negate = !t.empty() && t[0] == '!';
  std::string_view rest = std::string_view(t).substr(negate ? 1 : 0);
  if (rest.substr(0, 7) == "defined") {
    rest.remove_prefix(7);
    if (rest.size() >= 2 && rest.front() == '(' && rest.back() == ')')
      rest = rest.substr(1, rest.size() - 2);
  } else if (negate) {
    return Truth::Unknown;
  }
  if (!isIpuOnlyMacro(rest))
    return Truth::Unknown;
  return negate ? Truth::True : Truth::False;
}

/// State of one #if group: whether the current branch is read, and whether
/// a later #else / #elif may still be taken.
enum class Group {
  Taken,      // a branch known to be true: read it, skip the rest
  Unknown,    // condition not known: read every branch
  SkipToElse, // known false so far: skip until a branch that may be true
  SkipRest,   // a branch was taken: skip to #endif
  Dead,       // inside a skipped region: skip everything to #endif
};

class Lexer {
public:
  explicit Lexer(std::string_view s) : s_(s) {}

  std::vector<CodeletToken> run() {
    while (i_ < s_.size())
      step();
    return std::move(out_);
  }

private:
  std::string_view s_;
  std::size_t i_ = 0;
  unsigned line_ = 1;
  bool lineStart_ = true;
  std::vector<Group> groups_;
  std::vector<CodeletToken> out_;

  char at(std::size_t k) const { return k < s_.size() ? s_[k] : '\0'; }
  bool active() const {
    return groups_.empty() || groups_.back() == Group::Taken ||
           groups_.back() == Group::Unknown;
  }

  void step() {
    char c = s_[i_];
    if (c == '\n') {
      ++line_;
      ++i_;
      lineStart_ = true;
    } else if (isBlank(c)) {
      ++i_;
    } else if (c == '\\' && at(i_ + 1) == '\n') {
      i_ += 2;
      ++line_;
    } else if (c == '/' && at(i_ + 1) == '/') {
      while (i_ < s_.size() && s_[i_] != '\n')
        ++i_;
    } else if (c == '/' && at(i_ + 1) == '*') {
      skipBlockComment();
    } else if (c == '#' && lineStart_) {
      directive();
    } else {
      lineStart_ = false;
      token();
    }
  }

  void skipBlockComment() {
    i_ += 2;
    while (i_ < s_.size() && !(s_[i_] == '*' && at(i_ + 1) == '/')) {
      if (s_[i_] == '\n')
        ++line_;
      ++i_;
    }
    i_ = std::min(i_ + 2, s_.size());
  }

  // An unterminated literal ends at the end of its line, as in the
  // compiler's recovery, so one stray quote cannot swallow the file.
  void skipQuoted(char quote) {
    ++i_;
    while (i_ < s_.size() && s_[i_] != quote && s_[i_] != '\n') {
      if (s_[i_] == '\\' && i_ + 1 < s_.size()) {
        if (s_[i_ + 1] == '\n')
          ++line_;
        ++i_;
      }
      ++i_;
    }
    if (i_ < s_.size() && s_[i_] == quote)
      ++i_;
  }

  // R"delim( ... )delim"; i_ is at the opening quote.
  void skipRawString() {
    std::size_t open = s_.find('(', i_ + 1);
    if (open == std::string_view::npos || open - i_ - 1 > 16) {
      skipQuoted('"');
      return;
    }
    // Built by appending: GCC 12 warns wrongly (-Wrestrict) on ")" + string.
    std::string close(1, ')');
    close.append(s_.substr(i_ + 1, open - i_ - 1)).push_back('"');
    std::size_t end = s_.find(close, open);
    end = end == std::string_view::npos ? s_.size() : end + close.size();
    for (std::size_t k = i_; k < end; ++k)
      if (s_[k] == '\n')
        ++line_;
    i_ = end;
  }

  void emit(CodeletTokenKind kind, std::size_t begin) {
    if (active())
      out_.push_back({kind, s_.substr(begin, i_ - begin), line_});
  }

  void token() {
    char c = s_[i_];
    std::size_t begin = i_;
    if (isIdentStart(c)) {
      while (i_ < s_.size() && isIdentChar(s_[i_]))
        ++i_;
      std::string_view word = s_.substr(begin, i_ - begin);
      char next = at(i_);
      if (next == '"' && (word == "R" || word == "u8R" || word == "uR" ||
                          word == "UR" || word == "LR")) {
        skipRawString();
      } else if ((next == '"' || next == '\'') &&
                 (word == "u8" || word == "u" || word == "U" || word == "L")) {
        skipQuoted(next);
      } else {
        emit(CodeletTokenKind::Identifier, begin);
      }
    } else if (isDigit(c) || (c == '.' && isDigit(at(i_ + 1)))) {
      number();
      emit(CodeletTokenKind::Number, begin);
    } else if (c == '"' || c == '\'') {
      skipQuoted(c);
    } else if (c == ':' && at(i_ + 1) == ':') {
      i_ += 2;
      emit(CodeletTokenKind::Punct, begin);
    } else {
      ++i_;
      emit(CodeletTokenKind::Punct, begin);
    }
  }

  // A preprocessing number: digits, letters, '.', digit separators and
  // signed exponents (1'000, 0x1p-3, 1.5e+10f).
  void number() {
    while (i_ < s_.size()) {
      char c = s_[i_];
      char n = at(i_ + 1);
      if ((c == 'e' || c == 'E' || c == 'p' || c == 'P') &&
          (n == '+' || n == '-'))
        i_ += 2;
      else if (c == '\'' && isIdentChar(n))
        i_ += 2;
      else if (isIdentChar(c) || c == '.')
        ++i_;
      else
        break;
    }
  }

  /// Reads one logical directive line (continuations joined, comments
  /// dropped) starting after the '#', leaving i_ at its newline.
  std::string directiveText() {
    ++i_;
    std::string text;
    while (i_ < s_.size() && s_[i_] != '\n') {
      char c = s_[i_];
      if (c == '\\' && at(i_ + 1) == '\n') {
        i_ += 2;
        ++line_;
      } else if (c == '/' && at(i_ + 1) == '*') {
        skipBlockComment();
        text += ' ';
      } else if (c == '/' && at(i_ + 1) == '/') {
        while (i_ < s_.size() && s_[i_] != '\n')
          ++i_;
      } else if (c == '"' || c == '\'') {
        std::size_t begin = i_;
        skipQuoted(c);
        text += s_.substr(begin, i_ - begin);
      } else {
        text += c;
        ++i_;
      }
    }
    return text;
  }

  void directive() {
    std::string text = directiveText();
    std::size_t p = 0;
    while (p < text.size() && isBlank(text[p]))
      ++p;
    std::size_t nameEnd = p;
    while (nameEnd < text.size() && isIdentChar(text[nameEnd]))
      ++nameEnd;
    std::string_view name = std::string_view(text).substr(p, nameEnd - p);
    std::string_view expr = std::string_view(text).substr(nameEnd);
    conditional(name, expr);
  }

  void conditional(std::string_view name, std::string_view expr) {
    if (name == "if" || name == "ifdef" || name == "ifndef") {
      if (!active()) {
        groups_.push_back(Group::Dead);
        return;
      }
      groups_.push_back(open(evaluateCondition(name, expr)));
    } else if ((name == "elif" || name == "else") && !groups_.empty()) {
      Group &g = groups_.back();
      if (g == Group::Taken)
        g = Group::SkipRest;
      else if (g == Group::SkipToElse)
        g = name == "else" ? Group::Taken : open(evaluateCondition("if", expr));
    } else if (name == "endif" && !groups_.empty()) {
      groups_.pop_back();
    }
  }

  static Group open(Truth t) {
    return t == Truth::True    ? Group::Taken
           : t == Truth::False ? Group::SkipToElse
                               : Group::Unknown;
  }
};

} // namespace

std::vector<CodeletToken> lexCodeletSource(std::string_view source) {
  return Lexer(source).run();
}

} // namespace tessera::detail
