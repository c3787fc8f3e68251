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

// Runs \p prog of \p g once with \p flags: the FloatingPointError's
// message, or "" when none.
std::string floatError(Device &device, const Graph &g, const Program &prog,
                       const OptionFlags &flags) {
  Engine e(g, prog, flags);
  e.load(device);
  try {
    e.run();
  } catch (const FloatingPointError &err) {
    return err.what();
  }
  return "";
}

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
    return floatError(device, g, prog, flags);
  }
};

// Compute set "first" standing for its host kernel "first/host", over
// variables x (from x0), a (NaN beforehand) and b (read back), two floats
// each on tile 1.
struct KernelStep {
  Device device = modelDevice();
  Graph g{device.getTarget()};
  Tensor x, a, b;
  ComputeSet cs, kernel;

  explicit KernelStep(std::vector<float> x0) {
    addTestCodelets(g);
    x = g.addVariable(FLOAT, {2}, "x");
    a = g.addVariable(FLOAT, {2}, "a");
    b = g.addVariable(FLOAT, {2}, "b");
    for (const Tensor &t : {x, a, b})
      g.setTileMapping(t, 1);
    g.setInitialValue(x, x0);
    g.setInitialValue(a, std::vector<float>{kNaN, kNaN});
    g.createHostRead("b", b);
    cs = g.addComputeSet("first");
    kernel = g.addComputeSet("first/host");
  }
  // A vertex of \p set on \p tile writing x * k into \p out.
  void scale(ComputeSet set, const Tensor &out, float k, unsigned tile) {
    VertexRef v = g.addVertex(set, "ScaleVertex", {{"in", x}, {"out", out}});
    g.setInitialValue(v["scale"], k);
    g.setTileMapping(v, tile);
  }
  // Runs the step with NaNs forbidden: the error, or "" when none.
  std::string run() {
    g.setHostKernel(cs, kernel);
    return floatError(device, g, Execute(cs),
                      {{"debug.floatingPointBehaviour.inv", "true"}});
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
    // The tile vertex writes a (NaN beforehand); the kernel writes b
    // (finite: x * 1), or a (inf * 0 is NaN).
    KernelStep s({kInf, 1.0f});
    s.scale(s.cs, s.a, 0.0f, 1);
    s.scale(s.kernel, kernelMakesNaN ? s.a : s.b, kernelMakesNaN ? 0.0f : 1.0f,
            0);
    const std::string error = s.run();
    if (!kernelMakesNaN) {
      EXPECT_EQ(error, "");
      continue;
    }
    EXPECT_THAT(error, HasSubstr("\"first\""));
    EXPECT_THAT(error, HasSubstr("tile 1"));
    EXPECT_THAT(error, HasSubstr("element 0"));
  }
}

// A tile output that the host kernel standing for the step does not write
// holds no result of the step (paired kernels leave such stale partials),
// so a forbidden value there does not name the vertex: the first tile
// vertex with one in the bytes the kernel wrote does.
TEST(EngineFloatingPoint, HostKernelStepIgnoresStaleTileOutputsWhenNaming) {
  // Tile vertices write a (stale: NaN beforehand) and b; the kernel writes
  // b alone: {1 * 0, inf * 0} = {0, NaN}.
  KernelStep s({1.0f, kInf});
  s.scale(s.cs, s.a, 0.0f, 1);
  s.scale(s.cs, s.b, 0.0f, 1);
  s.scale(s.kernel, s.b, 0.0f, 0);
  const std::string error = s.run();
  EXPECT_THAT(error, HasSubstr("by vertex 1 "));
  EXPECT_THAT(error, HasSubstr("element 1"));
}
