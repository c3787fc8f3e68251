// The host side of engine runs (device/HostCost.hpp): each run's round
// trip, a set-up per stream a run uses and a hand-off per callback
// transfer, kept apart from device time; each host figure's override moves
// the host-inclusive estimate and leaves the device estimate alone.
#include "TestGraphs.hpp"

#include "tessera/device/HostCost.hpp"
#include "tessera/engine/Profile.hpp"
#include "tessera/support/Error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace tessera;
using namespace tessera::program;

namespace {

struct Estimates {
  std::uint64_t device = 0, hostInclusive = 0;
  HostCycles host;
};

// \p runs runs of a program that copies \p steps transfers of a host
// function's stream in and streams each out to a buffer.
Estimates run(const OptionFlags &figures, unsigned runs, unsigned steps) {
  IPUModel model;
  model.tilesPerIPU = 4;
  Device device = model.createDevice(figures);
  Graph g(device.getTarget());
  Tensor v = g.addVariable(FLOAT, {8}, "v");
  mapTensorLinearly(g, v, 1, 1);
  DataStream in = g.addHostToDeviceFIFO("in", FLOAT, 8);
  DataStream out = g.addDeviceToHostFIFO("out", FLOAT, 8);
  Engine e(g, Repeat(steps, Sequence{Copy(in, v), Copy(v, out)}));
  e.load(device);
  e.connectStreamToCallback("in", [](void *p) {
    float *f = static_cast<float *>(p);
    for (int i = 0; i < 8; ++i)
      f[i] = float(i);
  });
  std::vector<float> sink(8);
  e.connectStream("out", sink.data(), sink.data() + 8);
  for (unsigned r = 0; r < runs; ++r)
    e.run();
  return {e.getElapsedCycles(), e.getHostInclusiveCycles(), e.getHostCycles()};
}

std::uint64_t cyclesOf(double microseconds, std::uint64_t count) {
  return std::uint64_t(std::llround(microseconds * 1e-6 * 1.33e9)) * count;
}

} // namespace

TEST(EngineHostCost, ChargesEachRunItsStreamsAndItsCallbacks) {
  const CostFigures c;
  const Estimates e = run({}, 3, 5);
  EXPECT_EQ(e.host.runs, cyclesOf(c.hostRunMicroseconds, 3));
  // Two streams in each of three runs.
  EXPECT_EQ(e.host.streamSetups, cyclesOf(c.hostStreamSetupMicroseconds, 6));
  // Only "in" is served by a host function: 5 transfers a run.
  EXPECT_EQ(e.host.callbacks, cyclesOf(c.hostCallbackMicroseconds, 15));
  EXPECT_EQ(e.hostInclusive, e.device + e.host.total());
}

TEST(EngineHostCost, ManyRunsCostTheirRoundTripsOnTopOfTheSameDeviceTime) {
  const Estimates oneRun = run({}, 1, 20), manyRuns = run({}, 20, 1);
  const double deviceDiff =
      std::abs(double(oneRun.device) - double(manyRuns.device));
  // The same copies; only the loop's control steps differ.
  EXPECT_LT(deviceDiff, 0.01 * double(oneRun.device));
  const CostFigures c;
  const double perRun = double(cyclesOf(c.hostRunMicroseconds, 1) +
                               cyclesOf(c.hostStreamSetupMicroseconds, 2));
  EXPECT_NEAR(double(manyRuns.hostInclusive) - double(oneRun.hostInclusive),
              19 * perRun, deviceDiff + 1);
}

TEST(EngineHostCost, ProfileReportsHostSideAndHostInclusiveCycles) {
  IPUModel model;
  model.tilesPerIPU = 4;
  Device device = model.createDevice();
  Graph g(device.getTarget());
  Tensor v = g.addVariable(FLOAT, {8}, "v");
  mapTensorLinearly(g, v, 1, 1);
  DataStream in = g.addHostToDeviceFIFO("in", FLOAT, 8);
  Engine e(g, Sequence{Copy(in, v)});
  e.load(device);
  std::vector<float> src(8);
  e.connectStream("in", src.data(), src.data() + 8);
  e.run();
  const nlohmann::json p =
      makeProfile(e.getExecutable(), &e.getExecutionCounts())["execution"];
  EXPECT_EQ(p["hostCycles"]["total"].get<std::uint64_t>(),
            e.getHostCycles().total());
  EXPECT_GT(e.getHostCycles().total(), 0u);
  EXPECT_EQ(p["hostInclusiveCycles"].get<std::uint64_t>(),
            p["elapsedCycles"].get<std::uint64_t>() +
                e.getHostCycles().total());
}

// Raising each host figure raises the host-inclusive estimate (by the
// figure's share) and leaves the device estimate unchanged.
class HostFigureOverride : public ::testing::TestWithParam<std::string> {};

TEST_P(HostFigureOverride, MovesHostInclusiveTimeAndNotDeviceTime) {
  const Estimates base = run({}, 2, 3);
  const Estimates raised = run({{GetParam(), "50"}}, 2, 3);
  EXPECT_EQ(raised.device, base.device);
  EXPECT_GT(raised.hostInclusive, base.hostInclusive);
  const Estimates zero = run({{GetParam(), "0"}}, 2, 3);
  EXPECT_EQ(zero.device, base.device);
  EXPECT_LT(zero.hostInclusive, base.hostInclusive);
}

INSTANTIATE_TEST_SUITE_P(EngineHostCost, HostFigureOverride,
                         ::testing::Values("hostRunMicroseconds",
                                           "hostStreamSetupMicroseconds",
                                           "hostCallbackMicroseconds"));

// hostTransferFixedCycles is part of each stream copy step of the device
// program: raising it moves device time, and host-inclusive time with it.
TEST(EngineHostCost, HostTransferFixedCyclesIsDeviceTimeOfEachStreamCopy) {
  const Estimates base = run({}, 2, 3);
  const Estimates raised = run({{"hostTransferFixedCycles", "5000"}}, 2, 3);
  const CostFigures c;
  // Two stream copies a step, three steps a run, two runs.
  EXPECT_EQ(raised.device - base.device,
            12 * (5000 - std::uint64_t(c.hostTransferFixedCycles)));
  EXPECT_EQ(raised.hostInclusive - base.hostInclusive,
            raised.device - base.device);
  EXPECT_EQ(raised.host.total(), base.host.total());
}

TEST(EngineHostCost, HostFiguresMustBeNonNegativeMicroseconds) {
  for (const char *name : {"hostRunMicroseconds", "hostStreamSetupMicroseconds",
                           "hostCallbackMicroseconds"})
    for (const char *bad : {"-1", "nan", "1e12"}) {
      try {
        Target::createIPUTarget(1, "ipu2", {{name, bad}});
        ADD_FAILURE() << name << " = " << bad << " was accepted";
      } catch (const OptionError &e) {
        EXPECT_NE(std::string(e.what()).find(name), std::string::npos)
            << e.what();
      }
    }
}
