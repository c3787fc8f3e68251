// The floating-point behaviour flags: a run stops at the first compute step
// that produces a NaN or an infinity the flags forbid, naming it.
#include "TestGraphs.hpp"

#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace tessera;
using namespace tessera::program;
using tessera::test::addTestCodelets;
using tessera::test::modelDevice;
using ::testing::HasSubstr;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// x -> "first" (x * scale1) -> y -> "second" (y * 2) -> z, on tile 1.
struct TwoScales {
  Device device = modelDevice();
  Graph g{device.getTarget()};
  Sequence prog;

  TwoScales(std::vector<float> x0, float scale1) {
    addTestCodelets(g);
    const std::size_t n = x0.size();
    Tensor x = g.addVariable(FLOAT, {n}, "x");
    Tensor y = g.addVariable(FLOAT, {n}, "y");
    Tensor z = g.addVariable(FLOAT, {n}, "z");
    for (const Tensor &t : {x, y, z})
      g.setTileMapping(t, 1);
    g.setInitialValue(x, x0);
    g.createHostRead("z", z);
    scale("first", x, y, scale1);
    scale("second", y, z, 2.0f);
  }
  void scale(const char *name, const Tensor &in, const Tensor &out, float k) {
    ComputeSet cs = g.addComputeSet(name);
    VertexRef v = g.addVertex(cs, "ScaleVertex", {{"in", in}, {"out", out}});
    g.setInitialValue(v["scale"], k);
    g.setTileMapping(v, 1);
    prog.add(Execute(cs));
  }
  std::string runWith(const OptionFlags &flags) {
    Engine e(g, prog, flags);
    e.load(device);
    try {
      e.run();
    } catch (const FloatingPointError &err) {
      return err.what();
    }
    return "";
  }
};

} // namespace

TEST(EngineFloatingPoint, OverflowStopsAtTheFirstStepNamingIt) {
  TwoScales t({1.0f, 1e30f}, 1e30f);
  const std::string msg =
      t.runWith({{"debug.floatingPointBehaviour.oflo", "true"}});
  EXPECT_THAT(msg, HasSubstr("overflow"));
  EXPECT_THAT(msg, HasSubstr("\"first\""));
  EXPECT_THAT(msg, HasSubstr("ScaleVertex"));
  EXPECT_THAT(msg, HasSubstr("field \"out\" element 1"));
  EXPECT_THAT(msg, HasSubstr("tile 1"));
}

TEST(EngineFloatingPoint, InvalidOperationNamesTheOpThatMadeTheNaN) {
  // inf * 0 is NaN in "first"; "second" only passes it on.
  TwoScales t({kInf, 1.0f}, 0.0f);
  const std::string msg =
      t.runWith({{"debug.floatingPointBehaviour.inv", "true"}});
  EXPECT_THAT(msg, HasSubstr("invalid operation"));
  EXPECT_THAT(msg, HasSubstr("\"first\""));
  EXPECT_THAT(msg, HasSubstr("element 0"));
}

TEST(EngineFloatingPoint, FlagsOffOrNotMatchingLetValuesThrough) {
  TwoScales overflow({1e30f}, 1e30f);
  EXPECT_EQ(overflow.runWith({}), "");
  // An infinity is not an invalid operation.
  EXPECT_EQ(overflow.runWith({{"debug.floatingPointBehaviour.inv", "true"}}),
            "");
  TwoScales fine({1.0f, 2.0f}, 3.0f);
  EXPECT_EQ(fine.runWith({{"debug.floatingPointBehaviour.inv", "true"},
                          {"debug.floatingPointBehaviour.oflo", "true"}}),
            "");
}

// A step a host kernel runs is checked by what the kernel wrote: the tiles'
// outputs it leaves unwritten (paired kernels pass work through them in
// another form) hold no result. A value found is still named by the first
// tile vertex whose output shows it.
TEST(EngineFloatingPoint, HostKernelStepIsCheckedByWhatTheKernelWrote) {
  for (bool kernelMakesNaN : {false, true}) {
    Device device = modelDevice();
    Graph g(device.getTarget());
    addTestCodelets(g);
    Tensor x = g.addVariable(FLOAT, {2}, "x");
    Tensor y = g.addVariable(FLOAT, {2}, "y");
    Tensor w = g.addVariable(FLOAT, {2}, "w");
    for (const Tensor &t : {x, y, w})
      g.setTileMapping(t, 1);
    g.setInitialValue(x, std::vector<float>{kInf, 1.0f});
    g.setInitialValue(y, std::vector<float>{kNaN, kNaN});
    g.createHostRead("w", w);
    ComputeSet cs = g.addComputeSet("first");
    VertexRef v = g.addVertex(cs, "ScaleVertex", {{"in", x}, {"out", y}});
    g.setInitialValue(v["scale"], 0.0f);
    g.setTileMapping(v, 1);
    // The kernel writes w (finite: x * 1), or y (inf * 0 is NaN).
    ComputeSet kernel = g.addComputeSet("first/host");
    VertexRef k = g.addVertex(kernel, "ScaleVertex",
                              {{"in", x}, {"out", kernelMakesNaN ? y : w}});
    g.setInitialValue(k["scale"], kernelMakesNaN ? 0.0f : 1.0f);
    g.setTileMapping(k, 0);
    g.setHostKernel(cs, kernel);
    Engine e(g, Execute(cs), {{"debug.floatingPointBehaviour.inv", "true"}});
    e.load(device);
    if (!kernelMakesNaN) {
      EXPECT_NO_THROW(e.run());
      continue;
    }
    try {
      e.run();
      ADD_FAILURE() << "the kernel's NaN went through";
    } catch (const FloatingPointError &err) {
      EXPECT_THAT(err.what(), HasSubstr("\"first\""));
      EXPECT_THAT(err.what(), HasSubstr("tile 1"));
      EXPECT_THAT(err.what(), HasSubstr("element 0"));
    }
  }
}

// A tile output that the host kernel standing for the step does not write
// holds no result of the step (paired kernels leave such stale partials),
// so a forbidden value there does not name the vertex: the first tile
// vertex with one in the bytes the kernel wrote does.
TEST(EngineFloatingPoint, HostKernelStepIgnoresStaleTileOutputsWhenNaming) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  addTestCodelets(g);
  Tensor x = g.addVariable(FLOAT, {2}, "x");
  Tensor stale = g.addVariable(FLOAT, {2}, "stale");
  Tensor z = g.addVariable(FLOAT, {2}, "z");
  for (const Tensor &t : {x, stale, z})
    g.setTileMapping(t, 1);
  g.setInitialValue(x, std::vector<float>{1.0f, kInf});
  g.setInitialValue(stale, std::vector<float>{kNaN, kNaN});
  g.createHostRead("z", z);
  ComputeSet cs = g.addComputeSet("first");
  for (const Tensor &out : {stale, z}) {
    VertexRef v = g.addVertex(cs, "ScaleVertex", {{"in", x}, {"out", out}});
    g.setInitialValue(v["scale"], 0.0f);
    g.setTileMapping(v, 1);
  }
  // The kernel writes z alone: {1 * 0, inf * 0} = {0, NaN}.
  ComputeSet kernel = g.addComputeSet("first/host");
  VertexRef k = g.addVertex(kernel, "ScaleVertex", {{"in", x}, {"out", z}});
  g.setInitialValue(k["scale"], 0.0f);
  g.setTileMapping(k, 0);
  g.setHostKernel(cs, kernel);
  Engine e(g, Execute(cs), {{"debug.floatingPointBehaviour.inv", "true"}});
  e.load(device);
  try {
    e.run();
    ADD_FAILURE() << "the kernel's NaN went through";
  } catch (const FloatingPointError &err) {
    EXPECT_THAT(err.what(), HasSubstr("by vertex 1 "));
    EXPECT_THAT(err.what(), HasSubstr("element 1"));
  }
}
