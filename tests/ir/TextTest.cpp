// The text form: printing and parsing round-trip, and parse errors point at
// the line and column that is wrong.
#include "IrTestModels.hpp"

#include "tessera/ir/Text.hpp"
#include "tessera/ir/Verifier.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace tessera;
using namespace tessera::ir;
using ::testing::HasSubstr;

TEST(Text, EveryOpKindRoundTrips) {
  Module m = test::everyOpModule();
  EXPECT_EQ(test::kindsUsed(m).size(), numOpKinds);
  const std::string text = print(m);
  Module parsed = parse(text);
  verify(parsed);
  EXPECT_EQ(print(parsed), text);
  EXPECT_EQ(parsed.ops().size(), m.ops().size());
  EXPECT_EQ(parsed.name(), "every op");
  for (std::size_t i = 0; i < m.ops().size(); ++i) {
    EXPECT_EQ(parsed.ops()[i].kind, m.ops()[i].kind);
    EXPECT_EQ(parsed.ops()[i].attrs, m.ops()[i].attrs);
    EXPECT_EQ(parsed.ops()[i].annotations, m.ops()[i].annotations);
  }
  for (std::size_t i = 0; i < m.variables().size(); ++i) {
    EXPECT_EQ(parsed.variables()[i].init, m.variables()[i].init);
    EXPECT_EQ(parsed.variables()[i].trainable, m.variables()[i].trainable);
  }
}

TEST(Text, PrintsReadably) {
  Module m("mlp");
  Builder b(m);
  Value x = b.input("x", FLOAT, {32, 784});
  Value w = b.variable("w", {784, 256}, init::glorotUniform(1));
  Value h;
  {
    ShardScope s(b, 1);
    h = relu(matmul(x, w) * 0.5);
  }
  b.output("h", h);
  EXPECT_EQ(print(m), "module \"mlp\" {\n"
                      "  %x = input : float[32, 784]\n"
                      "  %w = variable : float[784, 256] init "
                      "glorotUniform(seed = 1)\n"
                      "  %2 = constant : float[] 0.5 @ipu(1)\n"
                      "  %3 = matmul(%x, %w) : float[32, 256] @ipu(1)\n"
                      "  %4 = mul(%3, %2) : float[32, 256] @ipu(1)\n"
                      "  %5 = relu(%4) : float[32, 256] @ipu(1)\n"
                      "  output \"h\" = %5\n"
                      "}\n");
}

TEST(Text, OddNamesAndValuesSurvive) {
  Module m;
  Builder b(m);
  Value x = b.input("dense/kernel:0 \"q\"", FLOAT, {3});
  Value c = b.constant({1e-300, -0.0, 123456789.125}, {3}, FLOAT, "c.1");
  Value s = b.constant({std::numeric_limits<double>::infinity()}, {2});
  (void)s;
  b.output("out \\ put", x + c);
  const std::string text = print(m);
  EXPECT_THAT(text, HasSubstr("%\"dense/kernel:0 \\\"q\\\"\" = input"));
  Module p = parse(text);
  EXPECT_EQ(print(p), text);
  EXPECT_EQ(p.constants()[0].data[0], 1e-300);
  EXPECT_EQ(p.constants()[0].data[2], 123456789.125);
  EXPECT_TRUE(std::isinf(p.constants()[1].data[0]));
  EXPECT_EQ(p.outputs()[0].name, "out \\ put");
}

namespace {
// The ParseError parse(text) throws.
ParseError parseError(const std::string &text) {
  try {
    parse(text);
  } catch (const ParseError &e) {
    return e;
  }
  ADD_FAILURE() << "no parse error for:\n" << text;
  return ParseError(0, 0, "");
}
} // namespace

TEST(Text, ParseErrorsNameLineAndColumn) {
  ParseError e = parseError("module {\n  %x = input : float[2]\n"
                            "  %y = relu(%z) : float[2]\n}\n");
  EXPECT_EQ(e.line(), 3u);
  EXPECT_EQ(e.column(), 13u);
  EXPECT_THAT(e.what(), HasSubstr("line 3, column 13: value '%z' is not "
                                  "defined before this use"));

  e = parseError("module {\n  %x = input : float[2]\n  %y = frobnicate(%x) : "
                 "float[2]\n}");
  EXPECT_THAT(e.what(), HasSubstr("line 3, column 8: unknown operation "
                                  "'frobnicate'"));

  e = parseError("module {\n  %x = input : float[2\n}");
  EXPECT_THAT(e.what(), HasSubstr("line 3, column 1: expected ',' between "
                                  "dimensions, found '}'"));

  e = parseError("module {\n  %x = input : float[2]\n  %x = input : "
                 "float[2]\n}");
  EXPECT_THAT(e.what(), HasSubstr("line 3, column 3: value '%x' is defined "
                                  "twice (first at line 2)"));

  e = parseError("module {\n  %x = input : float[2]\n  %y = relu(%x) : "
                 "float[3]\n}");
  EXPECT_THAT(e.what(), HasSubstr("line 3, column 3: '%y' is declared "
                                  "float[3] but relu gives float[2]"));

  e = parseError("module {\n  %a = input : float[2, 3]\n  %b = input : "
                 "float[4, 5]\n  %c = matmul(%a, %b) : float[2, 5]\n}");
  EXPECT_THAT(e.what(), HasSubstr("line 4, column 8: matmul: 'a' float[2, "
                                  "3] has 3 columns but 'b' float[4, 5] has "
                                  "4 rows"));

  e = parseError("module {\n  %x = input : double[2]\n}");
  EXPECT_THAT(e.what(), HasSubstr("line 2, column 16: unknown type 'double'"));

  e = parseError("module {\n  %x = input : float[2] @stage(1)\n}");
  EXPECT_THAT(e.what(), HasSubstr("unknown annotation '@stage' for an input"));

  e = parseError("module {\n  %w = variable : float[2] init glorot(seed = "
                 "1)\n}");
  EXPECT_THAT(e.what(), HasSubstr("line 2, column 33: unknown initialiser "
                                  "'glorot'"));

  e = parseError("module {\n  %w = variable : float[2] init uniform(low = "
                 "0, seed = 1)\n}");
  EXPECT_THAT(e.what(), HasSubstr("initialiser uniform needs parameter "
                                  "'high'"));

  e = parseError("module {\n  %x = input : float[2]\n  %y = reshape(%x) "
                 "{shape = [2], shape = [1, 2]} : float[1, 2]\n}");
  EXPECT_THAT(e.what(), HasSubstr("attribute 'shape' is given twice"));

  e = parseError("module {\n  %x = input : float[2]\n  %y = reshape(%x) : "
                 "float[2]\n}");
  EXPECT_THAT(e.what(), HasSubstr("reshape: attribute 'shape' (a list of "
                                  "integers) is missing"));

  e = parseError("module {\n  %x = input : float[2] $\n}");
  EXPECT_THAT(e.what(), HasSubstr("line 2, column 25: unexpected character "
                                  "'$'"));

  e = parseError("module {\n  output \"o\" = %x\n}");
  EXPECT_THAT(e.what(), HasSubstr("value '%x' is not defined"));

  e = parseError("module { %s = input : float[1] } trailing");
  EXPECT_THAT(e.what(), HasSubstr("expected end of text after the module, "
                                  "found 'trailing'"));

  e = parseError("module {\n  %c = constant : float[3] [1.0, 2.0]\n}");
  EXPECT_THAT(e.what(), HasSubstr("constant 'c' of type float[3] has 3 "
                                  "elements but 2 values were given"));

  e = parseError("module {\n  %x = input : float[2]\n  %a, %b = relu(%x) : "
                 "float[2], float[2]\n}");
  EXPECT_THAT(e.what(), HasSubstr("relu has 1 result(s); 2 named"));
}

TEST(Text, CommentsAndNumericNamesParse) {
  Module m = parse("# a comment\nmodule {\n  %0 = input : float[2] # x\n"
                   "  %7 = neg(%0) : float[2] @ipu(3) @backward\n"
                   "  output \"n\" = %7\n}\n");
  EXPECT_EQ(m.ops().size(), 1u);
  EXPECT_EQ(m.ops()[0].annotations.ipu, 3u);
  EXPECT_TRUE(m.ops()[0].annotations.backward);
  // Numbers are labels: printing renumbers by position.
  EXPECT_THAT(print(m), HasSubstr("%1 = neg(%0)"));
}

TEST(Text, SeedsRoundTripExactlyUpToTheLargestUint64) {
  // 2^53 + 1 is the first integer a double cannot hold: read through one,
  // it came back as 2^53.
  for (std::uint64_t seed : {std::uint64_t(0), std::uint64_t(9007199254740993),
                             std::uint64_t(18446744073709551615u)}) {
    Module m("seeds");
    Builder b(m);
    b.variable("w", {2, 2}, init::glorotUniform(seed));
    b.variable("u", {2}, init::uniform(-1, 1, seed));
    const std::string text = print(m);
    EXPECT_THAT(text, HasSubstr("seed = " + std::to_string(seed)));
    const Module parsed = parse(text);
    ASSERT_EQ(parsed.variables().size(), 2u);
    EXPECT_EQ(parsed.variables()[0].init.seed, seed);
    EXPECT_EQ(parsed.variables()[1].init.seed, seed);
    EXPECT_EQ(print(parsed), text);
  }
}

TEST(Text, SeedsThatAreNotUint64sAreErrors) {
  for (const char *bad :
       {"-1", "1e300", "nan", "inf", "1.5", "18446744073709551616"}) {
    const ParseError e =
        parseError(std::string("module {\n  %w = variable : float[2] init "
                               "heNormal(seed = ") +
                   bad + ")\n}");
    EXPECT_THAT(e.what(), HasSubstr(std::string("line 2, column 49: a seed "
                                                "must be an integer from 0 "
                                                "to 18446744073709551615, "
                                                "not ") +
                                    bad))
        << bad;
  }
  ParseError e = parseError("module {\n  %w = variable : float[2] init "
                            "heNormal(seed = 1, seed = 2)\n}");
  EXPECT_THAT(e.what(), HasSubstr("parameter 'seed' is given twice"));
  e = parseError("module {\n  %w = variable : float[2] init heNormal\n}");
  EXPECT_THAT(e.what(), HasSubstr("initialiser heNormal needs parameter "
                                  "'seed'"));
  e = parseError("module {\n  %w = variable : float[2] init zeros(seed = "
                 "3)\n}");
  EXPECT_THAT(e.what(), HasSubstr("initialiser zeros has no parameter "
                                  "'seed'"));
}

TEST(Text, ShapesWhoseElementCountWouldWrapAreErrors) {
  // 2^32 x 2^32 elements wrapped to 0, which a reshape to [0] then matched.
  const ParseError e = parseError(
      "module {\n  %x = input : float[4294967296, 4294967296]\n  %y = "
      "reshape(%x) {shape = [0]} : float[0]\n}");
  EXPECT_THAT(e.what(), HasSubstr("has more than 2^48 elements"));
  EXPECT_NO_THROW(parse("module {\n  %x = input : float[65536, 65536, "
                        "65536]\n}"));
}

TEST(Text, AHugeVariableParsesAndPrintsWithoutDrawingItsValues) {
  // 2^40 elements: drawing them (8 TiB of doubles) to check the initialiser
  // made a short hostile text run the parser out of memory.
  const std::string text = "module {\n  %w = variable : float[1048576, "
                           "1048576] init glorotUniform(seed = 7)\n}\n";
  const Module m = parse(text);
  ASSERT_EQ(m.variables().size(), 1u);
  EXPECT_EQ(m.typeOf(m.variables()[0].value).numElements(), std::size_t(1)
                                                                << 40);
  EXPECT_THAT(print(m), HasSubstr("float[1048576, 1048576]"));
}

TEST(Text, AVariableWhoseValuesDoNotMatchItsShapeIsStillAnError) {
  const ParseError e =
      parseError("module {\n  %w = variable : float[3] init values(1, 2)\n}");
  EXPECT_THAT(e.what(), HasSubstr("the initialiser has 2 values but the shape "
                                  "needs 3"));
}

TEST(Text, TrainingRecordsRoundTrip) {
  Module m("step");
  Builder b(m);
  Value w = b.variable("w", {2}, init::ones());
  Value mom = b.variable("w/momentum", {2}, init::zeros(), FLOAT, false);
  Value g = w * 2.0;
  m.setGradient(w.id(), g.id());
  m.setStateOf(mom.id(), w.id());
  b.update(mom, mom * 0.9 + g);
  b.update(w, w - g);
  const std::string text = print(m);
  EXPECT_THAT(text, HasSubstr("  update %w/momentum = %"));
  EXPECT_THAT(text, HasSubstr("  gradient %w = %"));
  EXPECT_THAT(text, HasSubstr("  state %w/momentum of %w\n"));
  Module parsed = parse(text);
  verify(parsed);
  EXPECT_EQ(print(parsed), text);
  ASSERT_EQ(parsed.updates().size(), 2u);
  EXPECT_EQ(parsed.updates()[1].variable, *parsed.findValue("w"));
  EXPECT_EQ(parsed.gradientOf(*parsed.findValue("w")),
            parsed.gradientOf(*parsed.findValue("w")));
  EXPECT_EQ(parsed.states().at(0).value, *parsed.findValue("w"));
}

TEST(Text, RecordsOfValuesThatAreNotVariablesAreParseErrors) {
  const std::string head = "module {\n  %x = input : float[2]\n"
                           "  %w = variable : float[2] init zeros\n"
                           "  %h = variable : half[2] init zeros\n";
  auto error = [&](const std::string &line) {
    try {
      parse(head + line + "\n}");
    } catch (const ParseError &e) {
      return std::string(e.what());
    }
    return std::string("parsed");
  };
  EXPECT_THAT(error("  update %x = %w"),
              HasSubstr("line 5, column 3: the update: 'x' is not a variable"));
  EXPECT_THAT(error("  gradient %w = %h"),
              HasSubstr("the gradient of 'w' (float[2]) cannot be 'h', which "
                        "is half[2]"));
  EXPECT_THAT(error("  state %w of %x"), HasSubstr("'x', which is not a "
                                                   "variable"));
  EXPECT_THAT(error("  state %w = %x"), HasSubstr("expected 'of'"));
}
