#include "CodeletParser.hpp"

#include "CodeletLexer.hpp"
#include "tessera/graph/VertexRegistry.hpp"
#include "tessera/support/Error.hpp"

#include <map>
#include <set>

namespace tessera {

std::string normalizeVertexName(std::string_view name) {
  auto isWord = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' ||
           static_cast<unsigned char>(c) >= 0x80;
  };
  auto isSpace = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
           c == '\v';
  };
  std::string out;
  out.reserve(name.size());
  bool pendingSpace = false;
  for (char c : name) {
    if (isSpace(c)) {
      pendingSpace = !out.empty();
      continue;
    }
    if (pendingSpace && isWord(out.back()) && isWord(c))
      out += ' ';
    pendingSpace = false;
    out += c;
  }
  return out;
}

namespace detail {
namespace {

bool isAccessKeyword(std::string_view s) {
  return s == "public" || s == "private" || s == "protected";
}

// Keywords followed by a parenthesised operand that is not a parameter list.
bool isParenOperator(std::string_view s) {
  return s == "alignas" || s == "__attribute__" || s == "__declspec" ||
         s == "decltype" || s == "sizeof" || s == "alignof" ||
         s == "noexcept" || s == "typeof" || s == "__typeof__";
}

// Declarations inside a class body that never declare a data member.
bool startsNonMember(std::string_view s) {
  return s == "using" || s == "typedef" || s == "friend" ||
         s == "static_assert" || s == "class" || s == "struct" ||
         s == "union" || s == "enum" || s == "template";
}

// The names vertex base classes go by: plain (with `using namespace
// poplar;`) or qualified.
std::string_view vertexBaseKind(std::string_view name) {
  for (std::string_view ns : {"poplar::", "tessera::"})
    if (name.substr(0, ns.size()) == ns)
      name.remove_prefix(ns.size());
  if (name == "Vertex" || name == "MultiVertex")
    return name;
  return {};
}

struct Base {
  std::string name;
  bool isPublic = false;
};

/// Fields of a vertex class (or template) found so far, for classes that
/// derive from it.
struct KnownVertex {
  std::vector<std::string> fields;
  unsigned line = 0;
};

enum class ClassContext { Plain, TemplatePrimary, TemplateSpecialization };

class Parser {
public:
  Parser(std::string_view source, std::string_view displayName)
      : toks_(lexCodeletSource(source)), display_(displayName) {}

  std::vector<ParsedVertexClass> run() {
    parseScope(false);
    return std::move(result_);
  }

private:
  std::vector<CodeletToken> toks_;
  std::string_view display_;
  std::size_t p_ = 0;
  std::vector<std::string> namespaces_; // "" for unnamed namespaces
  std::size_t depth_ = 0;               // scopes parseScope is inside
  std::vector<ParsedVertexClass> result_;
  std::map<std::string, KnownVertex> vertices_;  // by qualified name
  std::map<std::string, KnownVertex> templates_; // by qualified name

  bool done() const { return p_ >= toks_.size(); }
  const CodeletToken &tok(std::size_t k) const {
    static const CodeletToken end{};
    return k < toks_.size() ? toks_[k] : end;
  }
  const CodeletToken &cur() const { return tok(p_); }
  bool curIs(std::string_view s) const { return !done() && toks_[p_].is(s); }
  bool nextIs(std::string_view s) const { return tok(p_ + 1).is(s); }

  [[noreturn]] void fail(unsigned line, const std::string &what) const {
    throw CodeletError(std::string(display_) + ":" + std::to_string(line) +
                       ": " + what);
  }

  // --- skipping ---------------------------------------------------------

  /// p_ at '(', '[' or '{': moves past the matching closer.
  void skipBalanced() {
    std::string_view open = cur().text;
    std::string_view close = open == "(" ? ")" : open == "[" ? "]" : "}";
    int depth = 0;
    for (; !done(); ++p_) {
      if (curIs(open)) {
        ++depth;
      } else if (curIs(close) && --depth == 0) {
        ++p_;
        return;
      }
    }
  }

  /// p_ at '<' of a template parameter or argument list: moves past its
  /// '>'. Parentheses protect comparisons inside ("N < (a > b)").
  void skipAngles() {
    int depth = 0;
    while (!done()) {
      if (curIs("(") || curIs("[")) {
        skipBalanced();
        continue;
      }
      if (curIs(";") || curIs("{") || curIs("}"))
        return; // malformed: leave it to the compiler
      if (curIs("<"))
        ++depth;
      else if (curIs(">") && --depth == 0) {
        ++p_;
        return;
      }
      ++p_;
    }
  }

  void skipAttributes() {
    while (!done()) {
      if (curIs("[") && nextIs("[")) {
        skipBalanced();
      } else if (isParenOperator(cur().text) && nextIs("(")) {
        ++p_;
        skipBalanced();
      } else {
        return;
      }
    }
  }

  /// Skips one declaration: to its ';', or past the body of a function
  /// definition. Stops before a '}' that closes the enclosing scope.
  void skipDeclaration() {
    bool sawParen = false;
    while (!done()) {
      if (curIs(";")) {
        ++p_;
        return;
      }
      if (curIs("}"))
        return;
      if (curIs("(") || curIs("[")) {
        sawParen |= curIs("(");
        skipBalanced();
      } else if (curIs("{")) {
        skipBalanced();
        if (sawParen)
          return;
      } else {
        ++p_;
      }
    }
  }

  /// Skips a member function declaration or definition. A brace after a
  /// name in a constructor's initializer list initialises a member; a brace
  /// after ')' or '}' opens the body.
  void skipFunction() {
    bool sawParen = false, inInitList = false;
    while (!done()) {
      if (curIs(";")) {
        ++p_;
        return;
      }
      if (curIs("}"))
        return;
      if (curIs("(") || curIs("[")) {
        sawParen |= curIs("(");
        skipBalanced();
      } else if (curIs(":") && sawParen) {
        inInitList = true;
        ++p_;
      } else if (curIs("{")) {
        bool memberInit = inInitList && p_ > 0 &&
                          (tok(p_ - 1).isIdentifier() || tok(p_ - 1).is(">"));
        skipBalanced();
        if (sawParen && !memberInit)
          return;
      } else {
        ++p_;
      }
    }
  }

  // --- names --------------------------------------------------------------

  /// Reads `[::] a :: b :: c`; returns "a::b::c", or "" if p_ is not at a
  /// name.
  std::string parseQualifiedName() {
    std::string name;
    if (curIs("::"))
      ++p_;
    while (!done() && cur().isIdentifier()) {
      name += cur().text;
      ++p_;
      if (!(curIs("::") && tok(p_ + 1).isIdentifier()))
        break;
      name += "::";
      ++p_;
    }
    return name;
  }

  /// p_ at '<': reads a template argument list, returns it normalised
  /// without the brackets.
  std::string readTemplateArgs() {
    std::size_t begin = p_;
    skipAngles();
    std::string text;
    for (std::size_t k = begin + 1; k + 1 < p_; ++k) {
      if (!text.empty() && toks_[k].kind != CodeletTokenKind::Punct &&
          toks_[k - 1].kind != CodeletTokenKind::Punct)
        text += ' ';
      text += toks_[k].text;
    }
    return text;
  }

  std::string prefix(std::size_t depth) const {
    std::string out;
    for (std::size_t k = 0; k < depth; ++k) {
      if (namespaces_[k].empty())
        continue;
      if (!out.empty())
        out += "::";
      out += namespaces_[k];
    }
    return out;
  }
  std::string qualify(const std::string &name) const {
    std::string ns = prefix(namespaces_.size());
    return ns.empty() ? name : ns + "::" + name;
  }

  /// Looks \p name up from the current namespace outwards, as C++ does.
  const KnownVertex *lookup(const std::map<std::string, KnownVertex> &table,
                            const std::string &name,
                            std::string *found = nullptr) const {
    for (std::size_t depth = namespaces_.size() + 1; depth-- > 0;) {
      std::string ns = prefix(depth);
      std::string candidate = ns.empty() ? name : ns + "::" + name;
      auto it = table.find(candidate);
      if (it != table.end()) {
        if (found)
          *found = candidate;
        return &it->second;
      }
    }
    return nullptr;
  }

  void addVertex(const std::string &name, std::vector<std::string> fields,
                 unsigned line) {
    if (vertices_.count(name))
      return; // a second definition (another #if branch): the first wins
    vertices_[name] = {fields, line};
    result_.push_back({name, "::" + name, std::move(fields), line});
  }

  // --- scopes -------------------------------------------------------------

  // Namespaces and extern "C" blocks nest by recursion; a hostile file of
  // thousands of them would overflow the stack. Clang stops at 256 nested
  // brackets by default (-fbracket-depth), so no real codelet goes deeper.
  static constexpr std::size_t kMaxScopeDepth = 256;

  void parseScope(bool nested) {
    if (nested && ++depth_ > kMaxScopeDepth)
      fail(tok(p_ - 1).line, // the scope's '{'
           "namespaces and extern blocks nest more than " +
               std::to_string(kMaxScopeDepth) +
               " deep; Tessera reads codelet files nested at most that "
               "deep (as Clang's default -fbracket-depth)");
    parseScopeBody(nested);
    if (nested)
      --depth_;
  }

  void parseScopeBody(bool nested) {
    while (!done()) {
      if (curIs("}")) {
        ++p_;
        if (nested)
          return;
      } else if (curIs("{")) {
        skipBalanced(); // function bodies, initialisers
      } else if (curIs("namespace")) {
        parseNamespace();
      } else if (curIs("extern") && nextIs("{")) { // extern "C" {
        p_ += 2;
        parseScope(true);
      } else if (curIs("using") || curIs("typedef") || curIs("union") ||
                 curIs("enum") || (curIs("extern") && nextIs("template"))) {
        skipDeclaration();
      } else if (curIs("template")) {
        parseTemplate();
      } else if (curIs("class") || curIs("struct")) {
        parseClass(ClassContext::Plain);
      } else {
        ++p_;
      }
    }
  }

  void parseNamespace() {
    ++p_;
    skipAttributes();
    std::string name;
    while (!done() && (cur().isIdentifier() || curIs("::"))) {
      if (curIs("::"))
        name += "::";
      else if (!curIs("inline"))
        name += cur().text;
      ++p_;
    }
    if (!curIs("{")) {
      skipDeclaration(); // namespace alias
      return;
    }
    ++p_;
    namespaces_.push_back(name);
    parseScope(true);
    namespaces_.pop_back();
  }

  void parseTemplate() {
    ++p_;
    if (curIs("class") || curIs("struct")) {
      parseExplicitInstantiation();
      return;
    }
    if (!curIs("<")) {
      skipDeclaration(); // explicit instantiation of a function
      return;
    }
    bool noParameters = nextIs(">");
    skipAngles();
    while (curIs("template")) { // out-of-class member templates
      ++p_;
      if (curIs("<"))
        skipAngles();
    }
    if (curIs("class") || curIs("struct"))
      parseClass(noParameters ? ClassContext::TemplateSpecialization
                              : ClassContext::TemplatePrimary);
    else
      skipDeclaration();
  }

  void parseExplicitInstantiation() {
    unsigned line = cur().line;
    ++p_;
    skipAttributes();
    std::string name = parseQualifiedName();
    if (name.empty() || !curIs("<")) {
      skipDeclaration();
      return;
    }
    std::string args = readTemplateArgs();
    skipDeclaration();
    std::string resolved;
    if (const KnownVertex *t = lookup(templates_, name, &resolved))
      addVertex(resolved + "<" + args + ">", t->fields, line);
  }

  std::vector<Base> parseBases(bool isStruct) {
    ++p_; // ':'
    std::vector<Base> bases;
    while (!done() && !curIs("{") && !curIs(";")) {
      Base base;
      base.isPublic = isStruct;
      while (curIs("virtual") || isAccessKeyword(cur().text)) {
        if (!curIs("virtual"))
          base.isPublic = curIs("public");
        ++p_;
      }
      base.name = parseQualifiedName();
      if (curIs("<"))
        base.name.append(1, '<').append(readTemplateArgs()).append(1, '>');
      bases.push_back(std::move(base));
      while (!done() && !curIs(",") && !curIs("{") && !curIs(";")) {
        if (curIs("<"))
          skipAngles();
        else if (curIs("(") || curIs("["))
          skipBalanced();
        else
          ++p_;
      }
      if (curIs(","))
        ++p_;
    }
    return bases;
  }

  void parseClass(ClassContext context) {
    bool isStruct = curIs("struct");
    unsigned line = cur().line;
    ++p_;
    skipAttributes();
    std::string name = parseQualifiedName();
    if (name.empty()) { // unnamed class type: not a vertex
      skipDeclaration();
      return;
    }
    std::string args;
    bool hasArgs = curIs("<");
    if (hasArgs)
      args = readTemplateArgs();
    if (curIs("final"))
      ++p_;
    if (!curIs(":") && !curIs("{"))
      return; // a declaration, or a class named in another declaration
    std::vector<Base> bases;
    if (curIs(":"))
      bases = parseBases(isStruct);
    if (!curIs("{"))
      return;

    const Base *vertexBase = nullptr;
    const KnownVertex *inherited = nullptr;
    for (const Base &b : bases) {
      inherited =
          vertexBaseKind(b.name).empty() ? lookup(vertices_, b.name) : nullptr;
      if (!vertexBaseKind(b.name).empty() || inherited) {
        vertexBase = &b;
        break;
      }
    }
    bool partialSpecialization =
        context == ClassContext::TemplatePrimary && hasArgs;
    if (!vertexBase || partialSpecialization) {
      skipBalanced();
      return;
    }
    std::string fullName = qualify(name) + (hasArgs ? "<" + args + ">" : "");
    if (!vertexBase->isPublic)
      fail(line, "vertex class '" + fullName + "' derives from '" +
                     vertexBase->name + "' privately; derive publicly: '" +
                     (isStruct ? "struct " : "class ") + name + " : public " +
                     vertexBase->name + "'");
    std::vector<std::string> fields;
    if (inherited)
      fields = inherited->fields;
    parseVertexBody(isStruct, fullName, fields);
    if (context == ClassContext::TemplatePrimary)
      templates_[qualify(name)] = {std::move(fields), line};
    else
      addVertex(fullName, std::move(fields), line);
  }

  // --- class bodies -------------------------------------------------------

  void parseVertexBody(bool isStruct, const std::string &className,
                       std::vector<std::string> &fields) {
    ++p_; // '{'
    bool isPublic = isStruct;
    while (!done() && !curIs("}")) {
      if (isAccessKeyword(cur().text) && nextIs(":")) {
        isPublic = curIs("public");
        p_ += 2;
      } else if (curIs(";")) {
        ++p_;
      } else {
        parseMember(isPublic, className, fields);
      }
    }
    if (!done())
      ++p_;
  }

  /// Whether the declaration at p_ has a field type (Input, Output, InOut,
  /// Vector, VectorList): those must be public.
  bool hasFieldType() const {
    for (std::size_t k = p_; k < toks_.size(); ++k) {
      std::string_view t = toks_[k].text;
      if (t == "const" || t == "volatile" || t == "mutable" ||
          t == "typename" || t == "::" ||
          ((t == "poplar" || t == "tessera") && tok(k + 1).is("::")))
        continue;
      return t == "Input" || t == "Output" || t == "InOut" || t == "Vector" ||
             t == "VectorList";
    }
    return false;
  }

  void parseMember(bool isPublic, const std::string &className,
                   std::vector<std::string> &fields) {
    skipAttributes();
    if (done() || curIs("}"))
      return;
    if (startsNonMember(cur().text)) {
      if (curIs("template") && nextIs("<")) {
        ++p_;
        skipAngles();
      }
      skipDeclaration();
      return;
    }
    if (curIs("~") || curIs("operator") || curIs("virtual") ||
        curIs("explicit")) {
      skipFunction();
      return;
    }
    bool fieldType = hasFieldType();
    bool isStatic = false, bitField = false, inInitializer = false;
    int angles = 0;
    const CodeletToken *declName = nullptr;
    auto endDeclarator = [&] {
      if (declName && !isStatic && !bitField) {
        std::string name(declName->text);
        if (!isPublic && fieldType)
          fail(declName->line,
               "field '" + name + "' of vertex '" + className +
                   "' is private; make vertex fields public (declare them "
                   "after 'public:')");
        if (isPublic)
          fields.push_back(std::move(name));
      }
      declName = nullptr;
      bitField = inInitializer = false;
    };
    while (!done() && !curIs("}")) {
      const CodeletToken &t = cur();
      if (t.is(";")) {
        endDeclarator();
        ++p_;
        return;
      }
      if (t.is(",") && angles == 0) {
        endDeclarator();
        ++p_;
      } else if (t.is("(") || t.is("[") || t.is("{")) {
        if (t.is("(") && angles == 0 && !inInitializer) {
          skipFunction(); // a member function (or a constructor)
          return;
        }
        if (t.is("{") && angles == 0)
          inInitializer = true; // brace initialiser
        skipBalanced();
      } else if (inInitializer) {
        ++p_; // expression tokens: '<' here is a comparison
      } else if (isParenOperator(t.text) && nextIs("(")) {
        ++p_;
        skipBalanced();
      } else if (t.is("operator")) {
        skipFunction(); // `bool operator==(...)`, conversion operators
        return;
      } else {
        if (t.is("static"))
          isStatic = true;
        else if (t.is("<"))
          ++angles;
        else if (t.is(">") && angles > 0)
          --angles;
        else if (angles == 0 && t.isIdentifier())
          declName = &t;
        else if (angles == 0 && (t.is("=") || t.is(":"))) {
          bitField = t.is(":");
          inInitializer = true;
        }
        ++p_;
      }
    }
  }
};

} // namespace

std::vector<ParsedVertexClass>
parseCodeletSource(std::string_view source, std::string_view displayName) {
  return Parser(source, displayName).run();
}

} // namespace detail
} // namespace tessera
