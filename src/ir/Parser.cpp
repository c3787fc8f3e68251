// The text form's reader: a recursive-descent parser over TextLexer's
// tokens that builds the module through Module's own checked API, so a
// parsed module is as valid as a built one.
#include "TextLexer.hpp"

#include "tessera/ir/Text.hpp"

#include <charconv>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

namespace tessera::ir {
namespace {

using detail::Lexer;
using detail::Token;
using detail::TokenKind;

// An initialiser's parameters: numbers, and the seed as the integer it is
// (through a double, seeds above 2^53 would change and negative or huge
// ones would be undefined casts).
struct InitParams {
  std::map<std::string, double> numbers;
  std::optional<std::uint64_t> seed;
};

class Parser {
public:
  explicit Parser(std::string_view text) : lex_(text) { tok_ = lex_.next(); }
  Module run();

private:
  void advance() { tok_ = lex_.next(); }
  [[noreturn]] void fail(const Token &at, const std::string &msg) const {
    throw ParseError(at.line, at.column, msg);
  }
  [[noreturn]] void expected(const std::string &what) const {
    fail(tok_, "expected " + what + ", found " + tok_.describe());
  }
  bool isPunct(char c) const {
    return tok_.kind == TokenKind::Punct && tok_.text[0] == c;
  }
  void expectPunct(char c, const std::string &context);
  std::string expectIdent(const std::string &what);
  std::string expectString(const std::string &what);
  std::int64_t parseInt(const std::string &what);
  unsigned parseUnsigned(const std::string &what);
  double parseNumber(const std::string &what);

  ValueType parseType();
  Annotations parseAnnotations(bool leaf);
  Attributes parseAttributes();
  AttrValue parseAttrValue();
  Initialiser parseInitialiser();
  std::uint64_t parseSeed();
  InitParams parseInitParams(const Token &name);
  std::vector<double> parseConstantData();
  ValueId parseRef();
  void parseItem();
  void parseRecord();
  void parseLeaf(const Token &kindTok, const Token &result);
  void parseOp(const Token &kindTok, const std::vector<Token> &results);
  void checkNew(const Token &result) const;
  void define(const Token &result, ValueId id);
  static std::string key(const Token &t) {
    return t.numeric ? "#" + t.text : t.text;
  }

  Lexer lex_;
  Token tok_;
  Module m_;
  std::unordered_map<std::string, std::pair<ValueId, Token>> defined_;
};

void Parser::expectPunct(char c, const std::string &context) {
  if (!isPunct(c))
    expected(std::string("'") + c + "' " + context);
  advance();
}

std::string Parser::expectIdent(const std::string &what) {
  if (tok_.kind != TokenKind::Ident)
    expected(what);
  std::string s = tok_.text;
  advance();
  return s;
}

std::string Parser::expectString(const std::string &what) {
  if (tok_.kind != TokenKind::String)
    expected(what);
  std::string s = tok_.text;
  advance();
  return s;
}

std::int64_t Parser::parseInt(const std::string &what) {
  if (tok_.kind != TokenKind::Number)
    expected(what);
  std::int64_t v = 0;
  const std::string &s = tok_.text;
  const char *begin = s.data() + (s[0] == '+');
  auto [end, ec] = std::from_chars(begin, s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size())
    fail(tok_, "expected " + what + " (an integer), found " + tok_.describe());
  advance();
  return v;
}

unsigned Parser::parseUnsigned(const std::string &what) {
  const Token at = tok_;
  const std::int64_t v = parseInt(what);
  if (v < 0 || v > 0xffffffffll)
    fail(at,
         what + " must be between 0 and 4294967295, not " + std::to_string(v));
  return static_cast<unsigned>(v);
}

double Parser::parseNumber(const std::string &what) {
  if (tok_.kind != TokenKind::Number)
    expected(what);
  const std::string &s = tok_.text;
  const bool neg = s[0] == '-';
  const std::string_view body =
      std::string_view(s).substr(s[0] == '-' || s[0] == '+');
  double v = 0;
  if (body == "inf") {
    v = std::numeric_limits<double>::infinity();
  } else if (body == "nan") {
    v = std::numeric_limits<double>::quiet_NaN();
  } else {
    auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
    if (ec != std::errc() || end != body.data() + body.size())
      fail(tok_, "expected " + what + ", found " + tok_.describe());
  }
  advance();
  return neg ? -v : v;
}

ValueType Parser::parseType() {
  const Token at = tok_;
  const std::string name = expectIdent("a type such as float[2, 3]");
  std::optional<Type> t = dtypeFromName(name);
  if (!t)
    fail(at, "unknown type '" + name +
                 "' (types: float, half, int, uint, short, ushort, char, "
                 "schar, uchar, bool)");
  ValueType vt{*t, {}};
  expectPunct('[', "to open the shape of the type");
  while (!isPunct(']')) {
    const Token dimAt = tok_;
    const std::int64_t d = parseInt("a dimension");
    if (d < 0)
      fail(dimAt, "a dimension must be >= 0, not " + std::to_string(d));
    vt.shape.push_back(static_cast<std::size_t>(d));
    if (!isPunct(']'))
      expectPunct(',', "between dimensions");
  }
  advance();
  return vt;
}

Annotations Parser::parseAnnotations(bool leaf) {
  Annotations a;
  while (isPunct('@')) {
    advance();
    const Token at = tok_;
    const std::string name = expectIdent("an annotation name after '@'");
    if (name == "ipu" || (name == "stage" && !leaf)) {
      expectPunct('(', "after @" + name);
      const unsigned v = parseUnsigned("the " + name + " number");
      expectPunct(')', "after the " + name + " number");
      (name == "ipu" ? a.ipu : a.pipelineStage) = v;
    } else if (!leaf && name == "recompute") {
      a.recompute = true;
    } else if (!leaf && name == "backward") {
      a.backward = true;
    } else if (!leaf && name == "weight_update") {
      a.weightUpdate = true;
    } else {
      fail(at, "unknown annotation '@" + name + "' for " +
                   (leaf ? "an input, variable or constant (it takes @ipu(k))"
                         : "an operation (known: @ipu(k), @stage(s), "
                           "@recompute, @backward, @weight_update)"));
    }
  }
  return a;
}

AttrValue Parser::parseAttrValue() {
  if (tok_.kind == TokenKind::String)
    return expectString("a string");
  if (isPunct('[')) {
    advance();
    std::vector<std::int64_t> list;
    while (!isPunct(']')) {
      list.push_back(parseInt("an integer in the list"));
      if (!isPunct(']'))
        expectPunct(',', "between list elements");
    }
    advance();
    return list;
  }
  if (tok_.kind != TokenKind::Number)
    expected("an attribute value (integer, float, string or [list])");
  if (tok_.text.find_first_of(".eEin") == std::string::npos)
    return parseInt("an integer");
  return parseNumber("a float");
}

Attributes Parser::parseAttributes() {
  Attributes attrs;
  if (!isPunct('{'))
    return attrs;
  advance();
  while (!isPunct('}')) {
    const Token at = tok_;
    const std::string name = expectIdent("an attribute name");
    if (attrs.has(name))
      fail(at, "attribute '" + name + "' is given twice");
    expectPunct('=', "after attribute '" + name + "'");
    attrs.set(name, parseAttrValue());
    if (!isPunct('}'))
      expectPunct(',', "between attributes");
  }
  advance();
  return attrs;
}

std::uint64_t Parser::parseSeed() {
  if (tok_.kind != TokenKind::Number)
    expected("a seed");
  const std::string &s = tok_.text;
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size())
    fail(tok_, "a seed must be an integer from 0 to " +
                   std::to_string(std::numeric_limits<std::uint64_t>::max()) +
                   ", not " + s);
  advance();
  return v;
}

InitParams Parser::parseInitParams(const Token &name) {
  InitParams params;
  if (!isPunct('('))
    return params;
  advance();
  while (!isPunct(')')) {
    const Token at = tok_;
    const std::string k = expectIdent("a parameter of " + name.text);
    if (params.numbers.count(k) || (k == "seed" && params.seed))
      fail(at, "parameter '" + k + "' is given twice");
    expectPunct('=', "after parameter '" + k + "'");
    if (k == "seed")
      params.seed = parseSeed();
    else
      params.numbers[k] = parseNumber("the value of '" + k + "'");
    if (!isPunct(')'))
      expectPunct(',', "between parameters");
  }
  advance();
  return params;
}

Initialiser Parser::parseInitialiser() {
  const Token at = tok_;
  const std::string name = expectIdent("an initialiser (zeros, glorotUniform, "
                                       "...)");
  if (name == "values") {
    expectPunct('(', "after values");
    std::vector<double> v;
    while (!isPunct(')')) {
      v.push_back(parseNumber("a value"));
      if (!isPunct(')'))
        expectPunct(',', "between values");
    }
    advance();
    return init::values(std::move(v));
  }
  InitParams p = parseInitParams(at);
  auto take = [&](const char *k) {
    auto it = p.numbers.find(k);
    if (it == p.numbers.end())
      fail(at, "initialiser " + name + " needs parameter '" + k + "'");
    const double v = it->second;
    p.numbers.erase(it);
    return v;
  };
  auto seed = [&] {
    if (!p.seed)
      fail(at, "initialiser " + name + " needs parameter 'seed'");
    return *std::exchange(p.seed, std::nullopt);
  };
  Initialiser i;
  if (name == "zeros")
    i = init::zeros();
  else if (name == "ones")
    i = init::ones();
  else if (name == "constant")
    i = init::constant(take("value"));
  else if (name == "uniform") {
    const double lo = take("low"), hi = take("high");
    i = init::uniform(lo, hi, seed());
  } else if (name == "normal" || name == "truncatedNormal") {
    const double mean = take("mean"), sd = take("stddev");
    i = name == "normal" ? init::normal(mean, sd, seed())
                         : init::truncatedNormal(mean, sd, seed());
  } else if (name == "glorotUniform")
    i = init::glorotUniform(seed());
  else if (name == "glorotNormal")
    i = init::glorotNormal(seed());
  else if (name == "heUniform")
    i = init::heUniform(seed());
  else if (name == "heNormal")
    i = init::heNormal(seed());
  else
    fail(at, "unknown initialiser '" + name + "'");
  if (!p.numbers.empty() || p.seed)
    fail(at, "initialiser " + name + " has no parameter '" +
                 (p.numbers.empty() ? std::string("seed")
                                    : p.numbers.begin()->first) +
                 "'");
  return i;
}

std::vector<double> Parser::parseConstantData() {
  if (!isPunct('['))
    return {parseNumber("the constant's value or [values]")};
  advance();
  std::vector<double> v;
  while (!isPunct(']')) {
    v.push_back(parseNumber("a value"));
    if (!isPunct(']'))
      expectPunct(',', "between values");
  }
  advance();
  return v;
}

ValueId Parser::parseRef() {
  if (tok_.kind != TokenKind::Value)
    expected("a value (%name)");
  auto it = defined_.find(key(tok_));
  if (it == defined_.end())
    fail(tok_, "value " + tok_.describe() + " is not defined before this use");
  advance();
  return it->second.first;
}

void Parser::checkNew(const Token &result) const {
  auto it = defined_.find(key(result));
  if (it != defined_.end())
    fail(result, "value " + result.describe() +
                     " is defined twice (first at line " +
                     std::to_string(it->second.second.line) + ")");
}

void Parser::define(const Token &result, ValueId id) {
  defined_.emplace(key(result), std::make_pair(id, result));
}

void Parser::parseLeaf(const Token &kindTok, const Token &result) {
  const std::string name = result.numeric ? "" : result.text;
  bool trainable = true;
  if (kindTok.text == "variable" && tok_.kind == TokenKind::Ident &&
      tok_.text == "nontrainable") {
    trainable = false;
    advance();
  }
  expectPunct(':', "before the type of " + result.describe());
  const ValueType type = parseType();
  ValueId id = 0;
  try {
    if (kindTok.text == "input") {
      id = m_.addInput(name, type, parseAnnotations(true).ipu);
    } else if (kindTok.text == "variable") {
      if (expectIdent("'init' and the initialiser") != "init")
        fail(kindTok, "a variable needs 'init <initialiser>' after its type");
      Initialiser i = parseInitialiser();
      id = m_.addVariable(name, type, std::move(i), trainable,
                          parseAnnotations(true).ipu);
    } else {
      std::vector<double> data = parseConstantData();
      id = m_.addConstant(name, type, std::move(data),
                          parseAnnotations(true).ipu);
    }
  } catch (const ParseError &) {
    throw;
  } catch (const Error &e) {
    fail(kindTok, e.what());
  }
  define(result, id);
}

void Parser::parseOp(const Token &kindTok, const std::vector<Token> &results) {
  std::optional<OpKind> kind = opKindFromName(kindTok.text);
  if (!kind)
    fail(kindTok, "unknown operation '" + kindTok.text + "'");
  expectPunct('(', "after operation " + kindTok.text);
  std::vector<ValueId> operands;
  while (!isPunct(')')) {
    operands.push_back(parseRef());
    if (!isPunct(')'))
      expectPunct(',', "between operands");
  }
  advance();
  Attributes attrs = parseAttributes();
  expectPunct(':', "before the result types of " + kindTok.text);
  std::vector<ValueType> declared{parseType()};
  while (isPunct(',')) {
    advance();
    declared.push_back(parseType());
  }
  const Annotations ann = parseAnnotations(false);
  if (results.size() != numResults(*kind) || declared.size() != results.size())
    fail(results[0], kindTok.text + " has " +
                         std::to_string(numResults(*kind)) + " result(s); " +
                         std::to_string(results.size()) + " named and " +
                         std::to_string(declared.size()) + " type(s) given");
  std::vector<std::string> names;
  for (const Token &r : results)
    names.push_back(r.numeric ? "" : r.text);
  std::vector<ValueId> ids;
  try {
    ids = m_.addOp(*kind, operands, std::move(attrs), ann, names);
  } catch (const Error &e) {
    fail(kindTok, e.what());
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (m_.typeOf(ids[i]) != declared[i])
      fail(results[i], results[i].describe() + " is declared " +
                           declared[i].toString() + " but " + kindTok.text +
                           " gives " + m_.typeOf(ids[i]).toString());
    define(results[i], ids[i]);
  }
}

// `update %v = %new`, `gradient %v = %g`, `state %s of %owner`,
// `condition %flag every N`, `reset %v` or `hyper %v "name"`.
void Parser::parseRecord() {
  const Token at = tok_;
  const std::string what = tok_.text;
  advance();
  const ValueId variable = parseRef();
  if (what == "hyper") {
    const std::string name =
        expectString("the hyper-parameter's name in quotes");
    try {
      m_.setHyperParameter(variable, name);
    } catch (const Error &e) {
      fail(at, e.what());
    }
    return;
  }
  if (what == "condition" || what == "reset") {
    unsigned period = 1;
    if (what == "condition") {
      if (!(tok_.kind == TokenKind::Ident && tok_.text == "every"))
        expected("'every N' after the update condition");
      advance();
      period = parseUnsigned("the runs per weight update");
    }
    try {
      if (what == "condition")
        m_.setUpdateCondition(variable, period);
      else
        m_.addReset(variable);
    } catch (const Error &e) {
      fail(at, e.what());
    }
    return;
  }
  if (what == "state") {
    if (!(tok_.kind == TokenKind::Ident && tok_.text == "of"))
      expected("'of' after the state variable");
    advance();
  } else {
    expectPunct('=', "after the " + what + "'s variable");
  }
  const ValueId value = parseRef();
  try {
    if (what == "update")
      m_.setUpdate(variable, value);
    else if (what == "gradient")
      m_.setGradient(variable, value);
    else
      m_.setStateOf(variable, value);
  } catch (const Error &e) {
    fail(at, e.what());
  }
}

void Parser::parseItem() {
  if (tok_.kind == TokenKind::Ident && tok_.text == "output") {
    const Token at = tok_;
    advance();
    const std::string name = expectString("the output's name in quotes");
    expectPunct('=', "after the output's name");
    const ValueId v = parseRef();
    try {
      m_.addOutput(name, v);
    } catch (const Error &e) {
      fail(at, e.what());
    }
    return;
  }
  if (tok_.kind == TokenKind::Ident &&
      (tok_.text == "update" || tok_.text == "gradient" ||
       tok_.text == "state" || tok_.text == "condition" ||
       tok_.text == "reset" || tok_.text == "hyper")) {
    parseRecord();
    return;
  }
  std::vector<Token> results;
  while (true) {
    if (tok_.kind != TokenKind::Value)
      expected("a definition (%name = ...), an output or '}'");
    checkNew(tok_);
    for (const Token &r : results)
      if (key(r) == key(tok_))
        fail(tok_, "value " + tok_.describe() + " is named twice");
    results.push_back(tok_);
    advance();
    if (!isPunct(','))
      break;
    advance();
  }
  expectPunct('=', "after " + results.back().describe());
  const Token kindTok = tok_;
  const std::string kind = expectIdent("input, variable, constant or an "
                                       "operation");
  if (kind == "input" || kind == "variable" || kind == "constant") {
    if (results.size() != 1)
      fail(results[1], "an " + kind + " defines one value");
    parseLeaf(kindTok, results[0]);
  } else {
    parseOp(kindTok, results);
  }
}

Module Parser::run() {
  if (tok_.kind != TokenKind::Ident || tok_.text != "module")
    expected("'module'");
  advance();
  if (tok_.kind == TokenKind::String)
    m_ = Module(expectString("the module's name"));
  expectPunct('{', "to open the module");
  while (!isPunct('}')) {
    if (tok_.kind == TokenKind::End)
      expected("'}' to close the module");
    parseItem();
  }
  advance();
  if (tok_.kind != TokenKind::End)
    expected("end of text after the module");
  return std::move(m_);
}

} // namespace

Module parse(std::string_view text) { return Parser(text).run(); }

} // namespace tessera::ir
