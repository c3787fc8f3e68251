// The codelet parser: which classes are vertices, which members are fields,
// and the errors it reports, without running a compiler.
#include "graph/CodeletParser.hpp"

#include "tessera/graph/VertexRegistry.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using tessera::CodeletError;
using tessera::detail::parseCodeletSource;
using tessera::detail::ParsedVertexClass;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Fields = std::vector<std::string>;

namespace {

std::vector<ParsedVertexClass> parse(const std::string &source) {
  return parseCodeletSource(source, "test.cpp");
}

std::vector<std::string> namesOf(const std::vector<ParsedVertexClass> &cs) {
  std::vector<std::string> names;
  for (const ParsedVertexClass &c : cs)
    names.push_back(c.name);
  return names;
}

std::string messageOf(const std::string &source) {
  try {
    parse(source);
  } catch (const CodeletError &e) {
    return e.what();
  }
  return "no error";
}

std::string readTestFile(const std::string &name) {
  std::ifstream in(std::string(TESSERA_TEST_CODELET_DIR) + "/" + name);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace

TEST(CodeletParser, FindsEveryVertexOfTheTutorialFile) {
  auto classes = parse(readTestFile("TutorialVertices.cpp"));
  ASSERT_THAT(namesOf(classes),
              ElementsAre("SumVertex", "ScaleMulti", "RowSums",
                          "demo::inner::Axpy", "Fill<float>", "Fill<int>",
                          "ScaledSum"));
  EXPECT_THAT(classes[0].fields, ElementsAre("in", "out"));
  EXPECT_EQ(classes[0].cppName, "::SumVertex");
  EXPECT_EQ(classes[0].line, 11u);
  EXPECT_THAT(classes[1].fields, ElementsAre("data", "scale"));
  EXPECT_THAT(classes[2].fields, ElementsAre("rows", "sums", "order", "bias"));
  EXPECT_THAT(classes[3].fields, ElementsAre("x", "y", "a"));
  EXPECT_EQ(classes[3].cppName, "::demo::inner::Axpy");
  EXPECT_THAT(classes[4].fields, ElementsAre("out", "value"));
  EXPECT_EQ(classes[4].cppName, "::Fill<float>");
  EXPECT_THAT(classes[6].fields, ElementsAre("in", "out", "factor"));
}

TEST(CodeletParser, IgnoresCommentsStringsAndDeviceOnlyCode) {
  auto classes = parse(R"src(
// class A : public Vertex { public: Input<float> a; };
/* class B : public Vertex {
   public: Input<float> b; }; */
const char *s = "class C : public Vertex { };";
const char *r = R"x(class D : public Vertex { public: Input<float> d; };)x";
const char c = '{';
const int n = 1'000'000;
#define MACRO class E : public Vertex { };
#if 0
class F : public Vertex {};
#elif defined(__IPU__)
class G : public Vertex {};
#else
class Real : public Vertex { public: Input<float> in; };
#endif
#ifndef __IPU__
class Host : public Vertex { public: Output<float> out; };
#else
class Device : public Vertex {};
#endif
)src");
  EXPECT_THAT(namesOf(classes), ElementsAre("Real", "Host"));
  EXPECT_THAT(classes[0].fields, ElementsAre("in"));
  EXPECT_EQ(classes[1].line, 18u);
}

TEST(CodeletParser, OnlyPublicNonStaticDataMembersAreFields) {
  auto classes = parse(R"src(
struct S : poplar::Vertex {
  Input<float> a, b;
  static Input<float> shared;
  static constexpr int k = 4;
  inline static float t = 1;
  float defaulted = (1 < 2) ? 1.0f : 2.0f, braced{3};
  unsigned bits : 3;
  float table[4];
  Vector<float, ONE_PTR, 8> aligned;
  std::function<void(int)> callback;
  using T = float;
  typedef int I;
  friend class Helper;
  struct Nested { Input<float> notMine; };
  enum class Mode { A, B };
  template <typename U> U get(U u) const { return u; }
  S() : a{}, b() { int local; (void)local; }
  explicit S(int) {}
  virtual ~S() = default;
  bool operator==(const S &) const = default;
  auto compute() -> bool { return true; }
  [[maybe_unused]] Output<float> last;
protected:
  float protectedState;
};
)src");
  ASSERT_EQ(classes.size(), 1u);
  EXPECT_THAT(classes[0].fields,
              ElementsAre("a", "b", "defaulted", "braced", "table", "aligned",
                          "callback", "last"));
}

TEST(CodeletParser, ClassMembersArePrivateUntilAPublicSection) {
  auto classes = parse(R"src(
class C : public tessera::MultiVertex {
  float helper;
public:
  InOut<Vector<float>> data;
private:
  int counter;
public:
  float scale;
};
)src");
  ASSERT_EQ(classes.size(), 1u);
  EXPECT_THAT(classes[0].fields, ElementsAre("data", "scale"));
}

TEST(CodeletParser, PrivateFieldIsAnErrorNamingFieldVertexAndLine) {
  std::string message = messageOf(readTestFile("PrivateField.cpp"));
  EXPECT_THAT(message, HasSubstr("test.cpp:6: field 'in' of vertex 'Hidden' "
                                 "is private; make vertex fields public"));
  EXPECT_THAT(messageOf("struct S : Vertex { protected: Vector<int> v; };"),
              HasSubstr("field 'v' of vertex 'S' is private"));
}

TEST(CodeletParser, PrivateDerivationFromVertexIsAnError) {
  EXPECT_THAT(messageOf("\nclass P : Vertex { public: Input<float> x; };"),
              HasSubstr("test.cpp:2: vertex class 'P' derives from 'Vertex' "
                        "privately; derive publicly: 'class P : public "
                        "Vertex'"));
  // A struct derives publicly by default.
  EXPECT_EQ(parse("struct Q : Vertex { Input<float> x; };").size(), 1u);
}

TEST(CodeletParser, NamespacesQualifyTheName) {
  auto classes = parse(R"src(
namespace a::b { class X : public Vertex {}; }
namespace { class Anonymous : public Vertex {}; }
namespace outer { inline namespace v1 { class Y : public Vertex {}; } }
namespace alias = outer;
extern "C" { class InExternC : public Vertex {}; }
namespace c { class Z : public a::b::X { public: Input<float> z; }; }
)src");
  EXPECT_THAT(
      namesOf(classes),
      ElementsAre("a::b::X", "Anonymous", "outer::v1::Y", "InExternC", "c::Z"));
  EXPECT_EQ(classes[1].cppName, "::Anonymous");
}

TEST(CodeletParser, TemplatesRegisterExplicitInstantiationsAndSpecialisations) {
  auto classes = parse(R"src(
namespace ns {
template <typename T, unsigned N = 2> class Foo : public Vertex {
public:
  Input<Vector<T>> in;
};
template <typename T> class Foo<T *, 1> : public Vertex {};
template <> class Foo<int, 3> : public Vertex { public: Output<int> only; };
template class Foo<unsigned  int , 4>;
}
template class ns::Foo<half>;
extern template class ns::Foo<float>;
template <typename T> class NotAVertex {};
template class NotAVertex<float>;
)src");
  ASSERT_THAT(namesOf(classes),
              ElementsAre("ns::Foo<int,3>", "ns::Foo<unsigned int,4>",
                          "ns::Foo<half>"));
  EXPECT_THAT(classes[0].fields, ElementsAre("only"));
  EXPECT_THAT(classes[1].fields, ElementsAre("in"));
  EXPECT_EQ(classes[2].cppName, "::ns::Foo<half>");
}

TEST(CodeletParser, ClassesInFunctionsAndOtherClassesAreNotVertices) {
  auto classes = parse(R"src(
void f() { class Local : public Vertex {}; }
struct Outer { class Inner : public Vertex {}; };
class Declared;
class Plain { Input<float> notAVertexField; };
int g(class Elaborated *e);
)src");
  EXPECT_TRUE(classes.empty());
}

TEST(CodeletParser, AClassDefinedTwiceInBranchesIsFoundOnce) {
  auto classes = parse(R"src(
#if FANCY
class V : public Vertex { public: Input<float> a; };
#else
class V : public Vertex { public: Input<float> a; };
#endif
)src");
  EXPECT_THAT(namesOf(classes), ElementsAre("V"));
}

TEST(CodeletParser, NoVerticesGivesAnEmptyList) {
  EXPECT_TRUE(parse(readTestFile("NoVertices.cpp")).empty());
  EXPECT_TRUE(parse("").empty());
  EXPECT_NO_THROW(parse("struct Unclosed : Vertex { Input<float> x;"));
}

TEST(VertexName, NormalisationKeepsOnlySpacesBetweenWords) {
  EXPECT_EQ(tessera::normalizeVertexName(" Foo< unsigned  int , 4 > "),
            "Foo<unsigned int,4>");
  EXPECT_EQ(tessera::normalizeVertexName("ns::Bar<float,true>"),
            "ns::Bar<float,true>");
  EXPECT_EQ(tessera::normalizeVertexName("A<B<C> >"), "A<B<C>>");
}

namespace {

// \p depth namespaces n0 { n1 { ... } }, with \p inner in the innermost.
std::string nestedNamespaces(std::size_t depth, const std::string &inner) {
  std::string s;
  for (std::size_t i = 0; i < depth; ++i)
    s += "namespace n" + std::to_string(i) + " {\n";
  s += inner;
  s.append(depth, '}');
  return s;
}

} // namespace

TEST(CodeletParser, NestingDeeperThanClangAllowsIsAnErrorNotAStackOverflow) {
  // 200,000 levels overflowed the stack of the recursive scope parser.
  EXPECT_THAT(messageOf(nestedNamespaces(200000, "")),
              HasSubstr("test.cpp:257: namespaces and extern blocks nest "
                        "more than 256 deep"));
  std::string externs;
  for (int i = 0; i < 300; ++i)
    externs += "extern \"C\" {\n";
  EXPECT_THAT(messageOf(externs), HasSubstr("nest more than 256 deep"));
}

TEST(CodeletParser, NamespacesNestedToTheLimitStillParse) {
  const auto classes = parse(nestedNamespaces(
      256, "struct V : public poplar::Vertex { poplar::Input<float> in; };\n"));
  ASSERT_EQ(classes.size(), 1u);
  EXPECT_THAT(classes[0].name, ::testing::StartsWith("n0::n1::n2::"));
  EXPECT_THAT(classes[0].name, ::testing::EndsWith("::n255::V"));
  EXPECT_THAT(classes[0].fields, ElementsAre("in"));
}
