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
