// The vertex registry with built-in vertices: registration, lookup, name
// clashes and cycle estimates. No compiler runs here.
#include "tessera/graph/VertexRegistry.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

using namespace tessera;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

class AddVertex : public Vertex {
public:
  Input<Vector<float>> a, b;
  Output<Vector<float>> out;
  bool compute() {
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = a[i] + b[i];
    return true;
  }
};

class ReduceMulti : public MultiVertex {
public:
  Vector<Input<Vector<float>>> partials;
  InOut<float> total;
  unsigned stride;
  void compute(unsigned) {}
};

codelet::VertexClassInfo describeAdd(const std::string &name = "test::Add") {
  return codelet::VertexDescriber<AddVertex>(name)
      .field("a", &AddVertex::a)
      .field("b", &AddVertex::b)
      .field("out", &AddVertex::out)
      .take();
}

codelet::VertexClassInfo describeReduce() {
  return codelet::VertexDescriber<ReduceMulti>("test::Reduce")
      .field("partials", &ReduceMulti::partials)
      .field("total", &ReduceMulti::total)
      .field("stride", &ReduceMulti::stride)
      .take();
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const CodeletError &e) {
    return e.what();
  }
  return "no CodeletError";
}

} // namespace

TEST(VertexRegistry, BuiltinIsFoundWithItsEstimator) {
  VertexRegistry registry;
  registry.addBuiltin(describeAdd(),
                      [](const VertexInstanceShape &s, const Target &t) {
                        return std::uint64_t{t.costs().binaryOpWorkerCycles} +
                               3 * s.fieldSizes[2][0] / 2;
                      });
  const RegisteredVertex *add = registry.find("test::Add");
  ASSERT_NE(add, nullptr);
  EXPECT_TRUE(add->builtin);
  EXPECT_EQ(add->codeletName, "built-in");
  EXPECT_EQ(add->library, nullptr);
  EXPECT_EQ(add->info.fields.size(), 3u);
  EXPECT_EQ(registry.find("test::Sub"), nullptr);

  VertexInstanceShape shape{&add->info, {{8}, {8}, {8}}};
  bool usedDefault = true;
  const Target ipu2 = Target::createIPUTarget(1);
  EXPECT_EQ(registry.estimateCycles(*add, shape, ipu2, &usedDefault), 41u);
  EXPECT_FALSE(usedDefault);
  // The estimator reads the figures of the target it is given.
  const Target slow =
      Target::createIPUTarget(1, "ipu2", {{"binaryOpWorkerCycles", "100"}});
  EXPECT_EQ(registry.estimateCycles(*add, shape, slow), 112u);
}

TEST(VertexRegistry, DefaultEstimateCountsConnectedElements) {
  VertexRegistry registry;
  registry.addBuiltin(describeAdd(), nullptr);
  registry.addBuiltin(describeReduce(), {});
  const RegisteredVertex *add = registry.find("test::Add");
  bool usedDefault = false;
  VertexInstanceShape addShape{&add->info, {{10}, {10}, {10}}};
  const Target ipu2 = Target::createIPUTarget(1);
  EXPECT_EQ(registry.estimateCycles(*add, addShape, ipu2, &usedDefault), 50u);
  EXPECT_TRUE(usedDefault);

  // A MultiVertex shares its elements among six workers; state is free.
  const RegisteredVertex *reduce = registry.find("test::Reduce");
  VertexInstanceShape reduceShape{&reduce->info, {{4, 4, 4}, {1}, {}}};
  EXPECT_EQ(VertexRegistry::defaultCycleEstimate(reduceShape, ipu2), 20u + 3u);
  // The fixed part is the target's defaultVertexWorkerCycles.
  const Target slow =
      Target::createIPUTarget(1, "ipu2", {{"defaultVertexWorkerCycles", "70"}});
  EXPECT_EQ(VertexRegistry::defaultCycleEstimate(reduceShape, slow), 70u + 3u);
}

TEST(VertexRegistry, RegisteringTheSameBuiltinTwiceIsANoOp) {
  VertexRegistry registry;
  registry.addBuiltin(describeAdd(), nullptr);
  const RegisteredVertex *first = registry.find("test::Add");
  registry.addBuiltin(describeAdd(), nullptr);
  EXPECT_EQ(registry.find("test::Add"), first);
  EXPECT_EQ(registry.size(), 1u);
}

TEST(VertexRegistry, AnotherClassUnderABuiltinNameIsAnError) {
  VertexRegistry registry;
  registry.addBuiltin(describeAdd(), nullptr);
  auto other = describeReduce();
  other.name = "test::Add";
  EXPECT_THAT(errorOf([&] { registry.addBuiltin(other, nullptr); }),
              HasSubstr("built-in vertex class 'test::Add' is registered "
                        "twice with different definitions"));
  // A user codelet may not take a built-in's name either; no compile runs.
  EXPECT_THAT(errorOf([&] {
                registry.addCodeletSource(
                    "namespace test { struct Add : Vertex {}; }", "user.cpp");
              }),
              HasSubstr("vertex class 'test::Add' is defined twice: in a "
                        "built-in vertex and in codelet 'user.cpp'"));
}

TEST(VertexRegistry, NamesAreSortedAndLookupIgnoresSpacing) {
  VertexRegistry registry;
  registry.addBuiltin(describeReduce(), nullptr);
  registry.addBuiltin(describeAdd("test::Cast< float , unsigned  int >"),
                      nullptr);
  registry.addBuiltin(describeAdd(), nullptr);
  EXPECT_THAT(registry.names(),
              ElementsAre("test::Add", "test::Cast<float,unsigned int>",
                          "test::Reduce"));
  const RegisteredVertex *cast =
      registry.find("test::Cast<float, unsigned int>");
  ASSERT_NE(cast, nullptr);
  EXPECT_EQ(cast->info.name, "test::Cast<float,unsigned int>");
}

TEST(VertexRegistry, EntriesKeepTheirAddressesAsMoreAreAdded) {
  VertexRegistry registry;
  registry.addBuiltin(describeAdd(), nullptr);
  const RegisteredVertex *add = registry.find("test::Add");
  for (int i = 0; i < 1000; ++i)
    registry.addBuiltin(describeAdd("test::Add" + std::to_string(i)), nullptr);
  EXPECT_EQ(registry.find("test::Add"), add);
  EXPECT_EQ(add->info.name, "test::Add");
  EXPECT_EQ(registry.size(), 1001u);
}

TEST(VertexRegistry, BuiltinVertexRunsThroughItsClassInfo) {
  VertexRegistry registry;
  registry.addBuiltin(describeAdd(), nullptr);
  const codelet::VertexClassInfo &info = registry.find("test::Add")->info;
  alignas(AddVertex) unsigned char storage[sizeof(AddVertex)];
  ASSERT_EQ(info.size, sizeof(AddVertex));
  info.construct(storage);
  float a[2] = {1, 2}, b[2] = {10, 20}, out[2] = {};
  codelet::Span spans[3] = {{a, 2}, {b, 2}, {out, 2}};
  for (int i = 0; i < 3; ++i)
    std::memcpy(storage + info.fields[i].offset, &spans[i], sizeof spans[i]);
  EXPECT_TRUE(info.compute(storage, 0));
  info.destroy(storage);
  EXPECT_THAT(out, ElementsAre(11, 22));
}
