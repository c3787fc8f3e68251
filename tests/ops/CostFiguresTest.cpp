// Every figure of the device table reaches the estimates that depend on it:
// for each figure, a target that overrides it compiles each workload that
// uses it, and the workload's estimate (cycles of every step taken once, or
// tile memory for the code-size figure) moves in the expected direction. A
// figure added to Target without a row here fails FiguresAreAllCovered.
#include "OpsTestUtil.hpp"

#include "tessera/compiler/Compiler.hpp"
#include "tessera/ops/Conv.hpp"
#include "tessera/ops/DynamicSlice.hpp"
#include "tessera/ops/Elementwise.hpp"
#include "tessera/ops/MatMul.hpp"
#include "tessera/ops/NonLinearity.hpp"
#include "tessera/ops/Pooling.hpp"
#include "tessera/ops/Random.hpp"
#include "tessera/ops/Reduce.hpp"
#include "tessera/support/Error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

using namespace tessera;
using program::Copy;
using program::Execute;
using program::Repeat;
using program::Sequence;

namespace {

constexpr unsigned kTiles = 16;

// A target of \p ipus IPUs of kTiles tiles with \p figure set to \p value
// (none when \p figure is empty).
Target targetWith(unsigned ipus, const std::string &figure = "",
                  const std::string &value = "") {
  OptionFlags flags{{"tilesPerIPU", std::to_string(kTiles)}};
  if (!figure.empty())
    flags.set(figure, value);
  return Target::createIPUTarget(ipus, "ipu2", flags);
}

Tensor linear(Graph &g, Type type, std::vector<std::size_t> shape,
              const std::string &name) {
  Tensor t = g.addVariable(type, shape, name);
  mapTensorLinearly(g, t);
  return t;
}

Tensor onTile(Graph &g, Type type, std::size_t n, unsigned tile,
              const std::string &name) {
  Tensor t = g.addVariable(type, {n}, name);
  g.setTileMapping(t, tile);
  return t;
}

struct Workload {
  unsigned ipus = 1;
  // Builds the graph's program; the graph has the ops' codelets.
  std::function<Sequence(Graph &)> build;
  bool memory = false; // the estimate is tile memory, not cycles
};

Sequence addFloats(Graph &g) {
  Sequence prog;
  Tensor a = linear(g, FLOAT, {4096}, "a"), b = linear(g, FLOAT, {4096}, "b");
  ops::add(g, a, b, prog);
  return prog;
}

Sequence matMulOf(Graph &g, Type type, const OptionFlags &options,
                  std::size_t size) {
  Sequence prog;
  Tensor a = linear(g, type, {size, size}, "a");
  Tensor b = linear(g, type, {size, size}, "b");
  ops::matMul(g, a, b, prog, type, {}, options);
  return prog;
}

std::map<std::string, Workload> workloads() {
  std::map<std::string, Workload> w;
  w["add"] = {1, addFloats};
  w["addMemory"] = {1, addFloats, true};
  w["copyAcrossTiles"] = {
      1, [](Graph &g) {
        // Tiles 2 and 3 (a bus pair) both receive x, which tiles 0 and 1
        // send half each.
        Tensor x = concat(onTile(g, FLOAT, 1024, 0, "x0"),
                          onTile(g, FLOAT, 1024, 1, "x1"));
        Tensor y = onTile(g, FLOAT, 2048, 2, "y");
        Tensor z = onTile(g, FLOAT, 2048, 3, "z");
        return Sequence{Copy(concat({x, x}), concat({y, z}))};
      }};
  w["copyOnTile"] = {1, [](Graph &g) {
                       Tensor x = onTile(g, FLOAT, 2048, 0, "x");
                       Tensor y = onTile(g, FLOAT, 2048, 0, "y");
                       return Sequence{Copy(x, y)};
                     }};
  w["copyAcrossIpus"] = {2, [](Graph &g) {
                           Tensor x = onTile(g, FLOAT, 2048, 0, "x");
                           Tensor y = onTile(g, FLOAT, 2048, kTiles, "y");
                           return Sequence{Copy(x, y)};
                         }};
  w["streamIn"] = {1, [](Graph &g) {
                     Tensor x = onTile(g, FLOAT, 2048, 0, "x");
                     DataStream s = g.addHostToDeviceFIFO(
                         "s", FLOAT, 2048, ReplicatedStreamMode::REPLICATE);
                     return Sequence{Copy(s, x)};
                   }};
  w["remoteIn"] = {1, [](Graph &g) {
                     Tensor x = onTile(g, FLOAT, 2048, 0, "x");
                     RemoteBuffer r = g.addRemoteBuffer("r", FLOAT, 2048);
                     return Sequence{Copy(r, x)};
                   }};
  w["repeat"] = {1, [](Graph &g) {
                   Sequence body = addFloats(g);
                   return Sequence{Repeat(10, body)};
                 }};
  w["reduce"] = {1, [](Graph &g) {
                   Sequence prog;
                   ops::reduce(g, linear(g, FLOAT, {64, 512}, "x"), {0},
                               ops::Operation::ADD, prog);
                   return prog;
                 }};
  w["matMulFloat"] = {1, [](Graph &g) { return matMulOf(g, FLOAT, {}, 128); }};
  w["matMulHalf"] = {
      1, [](Graph &g) {
        return matMulOf(g, HALF, {{"partialsType", "half"}}, 128);
      }};
  w["matMulHalfFloatPartials"] = {
      1, [](Graph &g) {
        return matMulOf(g, HALF, {{"partialsType", "float"}}, 128);
      }};
  w["conv"] = {1, [](Graph &g) {
                 Sequence prog;
                 const ops::ConvParams p(FLOAT, 2, {16, 16}, {3, 3}, 16, 16);
                 Tensor in = ops::createInput(g, p, {"in"});
                 Tensor wt = ops::createWeights(g, p, {"w"});
                 ops::convolution(g, in, wt, p, false, prog);
                 return prog;
               }};
  w["pool"] = {
      1, [](Graph &g) {
        Sequence prog;
        const ops::PoolParams p(ops::PoolingType::MAX, {16, 16}, {2, 2}, {2, 2},
                                {0, 0}, {0, 0}, 16, 2, FLOAT);
        ops::pool(g, p, linear(g, FLOAT, p.getInputShape(), "x"), prog);
        return prog;
      }};
  w["softmax"] = {1, [](Graph &g) {
                    Sequence prog;
                    ops::nonLinearity(g, ops::NonLinearityType::SOFTMAX,
                                      linear(g, FLOAT, {32, 256}, "x"), prog,
                                      {}, {{"plan", "rows"}});
                    return prog;
                  }};
  w["uniform"] = {1, [](Graph &g) {
                    Sequence prog;
                    ops::uniform(g, nullptr, 0, linear(g, FLOAT, {4096}, "x"),
                                 FLOAT, 0, 1, prog);
                    return prog;
                  }};
  w["dynamicSlice"] = {1, [](Graph &g) {
                         Sequence prog;
                         Tensor t = linear(g, FLOAT, {64, 256}, "t");
                         Tensor off = onTile(g, UNSIGNED_INT, 1, 0, "off");
                         ops::dynamicSlice(g, t, off, {0}, {1}, prog);
                         return prog;
                       }};
  w["userVertex"] = {
      1, [](Graph &g) {
        g.addCodeletSource(R"(
#include <poplar/Vertex.hpp>
class Twice : public poplar::Vertex {
public:
  poplar::Input<poplar::Vector<float>> in;
  poplar::Output<poplar::Vector<float>> out;
  bool compute() {
    for (unsigned i = 0; i < out.size(); ++i)
      out[i] = 2 * in[i];
    return true;
  }
};
)",
                           "twice.cpp");
        Tensor x = onTile(g, FLOAT, 256, 0, "x");
        Tensor y = onTile(g, FLOAT, 256, 0, "y");
        ComputeSet cs = g.addComputeSet("twice");
        VertexRef v = g.addVertex(cs, "Twice", {{"in", x}, {"out", y}});
        g.setTileMapping(v, 0);
        return Sequence{Execute(cs)};
      }};
  return w;
}

std::uint64_t estimate(const Workload &w, const Target &target) {
  Graph g(target);
  ops::addCodelets(g);
  const Sequence prog = w.build(g);
  const Executable exe = compileGraph(g, {prog});
  if (!w.memory)
    return exe.stepCyclesOnce();
  std::uint64_t bytes = 0;
  for (const TileMemory &m : exe.tileMemory)
    bytes += m.total();
  return bytes;
}

struct FigureCase {
  const char *figure;
  const char *value; // the override (the ipu2 preset's value differs)
  int direction;     // +1: the estimate grows, -1: it shrinks
  std::vector<const char *> workloads;
};

// Names the case in gtest's messages.
[[maybe_unused]] void PrintTo(const FigureCase &c, std::ostream *os) {
  *os << c.figure << " = " << c.value;
}

// Each figure with a value that moves it well away from the preset, and
// every workload whose estimate depends on it.
const std::vector<FigureCase> &figureCases() {
  static const std::vector<FigureCase> cases = {
      {"tilesPerIPU", "4", +1, {"add", "reduce", "matMulFloat", "softmax"}},
      {"tileClockFrequency", "5e9", +1, {"copyAcrossIpus", "streamIn"}},
      {"numWorkerContexts",
       "12",
       +1,
       {"add", "reduce", "matMulFloat", "conv", "pool", "uniform"}},
      {"dataPathWidth", "32", +1, {"add", "reduce", "pool", "softmax"}},
      {"exchangeBytesPerCycle", "1", +1, {"copyAcrossTiles", "matMulFloat"}},
      {"tilesPerSharedExchangeBus", "1", +1, {"copyAcrossTiles"}},
      {"ipuLinkBandwidth", "1e9", +1, {"copyAcrossIpus"}},
      {"hostLinkBandwidth", "1e9", +1, {"streamIn"}},
      {"remoteMemoryBandwidth", "1e8", +1, {"remoteIn"}},
      {"fp32MacsPerCycle", "2", +1, {"matMulFloat", "conv"}},
      {"fp16MacsPerCycleHalfPartials", "4", +1, {"matMulHalf"}},
      {"fp16MacsPerCycleFloatPartials", "4", +1, {"matMulHalfFloatPartials"}},
      {"supervisorCyclesPerVertex",
       "500",
       +1,
       {"add", "reduce", "matMulFloat", "conv", "pool", "uniform"}},
      {"binaryOpWorkerCycles", "2000", +1, {"add"}},
      {"binaryOpWorkerCyclesPerVector", "30", +1, {"add", "softmax"}},
      {"unaryOpWorkerCycles", "2000", +1, {"uniform", "softmax"}},
      {"unaryOpWorkerCyclesPerVector", "30", +1, {"uniform"}},
      {"copyWorkerCycles", "2000", +1, {"dynamicSlice"}},
      {"copyBytesPerWorkerCycle", "1", +1, {"copyOnTile"}},
      {"reduceWorkerCycles", "2000", +1, {"reduce", "pool"}},
      {"reduceWorkerCyclesPerVector", "30", +1, {"reduce", "pool", "softmax"}},
      {"matMulWorkerCycles", "2000", +1, {"matMulFloat", "conv"}},
      {"convWorkerCyclesPerRow", "2000", +1, {"conv", "pool"}},
      {"defaultVertexWorkerCycles", "2000", +1, {"userVertex"}},
      {"controlFlowCycles", "2000", +1, {"repeat"}},
      {"syncCyclesOnChip",
       "2000",
       +1,
       {"add", "copyAcrossTiles", "reduce", "matMulFloat", "conv"}},
      {"syncCyclesAcrossIpus", "20000", +1, {"copyAcrossIpus"}},
      {"exchangeFixedCycles",
       "2000",
       +1,
       {"copyAcrossTiles", "copyOnTile", "matMulFloat", "conv"}},
      {"ipuLinkFixedCycles", "20000", +1, {"copyAcrossIpus"}},
      {"codeBytesPerVertexClass", "4096", +1, {"addMemory"}},
  };
  return cases;
}

// Figures with tests of their own: the host-transfer and host-run figures
// (tests/engine/HostCostTest.cpp), the GW-Link figures, which the
// engine charges at run time to copies between instances
// (tests/dist/LocalReplicasTest.cpp), and the capacities, which bound what
// compiles (CapacitiesBoundWhatCompiles below).
const std::set<std::string> &figuresTestedElsewhere() {
  static const std::set<std::string> names = {"hostTransferFixedCycles",
                                              "hostRunMicroseconds",
                                              "hostStreamSetupMicroseconds",
                                              "hostCallbackMicroseconds",
                                              "gwLinkBandwidth",
                                              "gwLinkFixedCycles",
                                              "bytesPerTile",
                                              "remoteMemoryBytesPerIPU"};
  return names;
}

std::string nameOf(const testing::TestParamInfo<FigureCase> &info) {
  return info.param.figure;
}

class FigureReachesEstimates : public testing::TestWithParam<FigureCase> {};

} // namespace

TEST_P(FigureReachesEstimates, EveryWorkloadThatUsesItMoves) {
  const FigureCase &c = GetParam();
  const auto all = workloads();
  for (const char *name : c.workloads) {
    SCOPED_TRACE(std::string(c.figure) + " = " + c.value + " on " + name);
    const Workload &w = all.at(name);
    const std::uint64_t before = estimate(w, targetWith(w.ipus));
    const std::uint64_t after =
        estimate(w, targetWith(w.ipus, c.figure, c.value));
    if (c.direction > 0)
      EXPECT_GT(after, before);
    else
      EXPECT_LT(after, before);
  }
}

INSTANTIATE_TEST_SUITE_P(CostFigures, FigureReachesEstimates,
                         testing::ValuesIn(figureCases()), nameOf);

TEST(CostFigures, FiguresAreAllCovered) {
  std::set<std::string> covered = figuresTestedElsewhere();
  for (const FigureCase &c : figureCases())
    covered.insert(c.figure);
  for (const std::string &name : Target::figureNames())
    EXPECT_TRUE(covered.count(name))
        << "figure " << name << " has no row in figureCases()";
  // The override must differ from the preset, or nothing could move.
  const OptionFlags preset = Target::createIPUTarget(1).figuresAsOptions();
  for (const FigureCase &c : figureCases())
    EXPECT_NE(preset.at(c.figure), c.value) << c.figure;
}

// A capacity admits a workload that fits in it and rejects the same
// workload when it is smaller, with a MemoryError that says so.
TEST(CostFigures, CapacitiesBoundWhatCompiles) {
  struct Capacity {
    const char *figure, *fits, *tooSmall, *workload;
  };
  const Capacity capacities[] = {
      // 8192 bytes of remote buffer.
      {"remoteMemoryBytesPerIPU", "8192", "8191", "remoteIn"},
      // Tile 0 of "add" holds 3 x 256 floats, code and vertex state.
      {"bytesPerTile", "4096", "1024", "add"},
  };
  const auto all = workloads();
  for (const Capacity &c : capacities) {
    SCOPED_TRACE(c.figure);
    const Workload &w = all.at(c.workload);
    EXPECT_GT(estimate(w, targetWith(1, c.figure, c.fits)), 0u);
    try {
      estimate(w, targetWith(1, c.figure, c.tooSmall));
      ADD_FAILURE() << "a workload larger than the capacity compiled";
    } catch (const MemoryError &e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.find(c.figure) != std::string::npos ||
                  what.find("a tile has") != std::string::npos)
          << what;
    }
  }
}

// A reduction's estimate follows reduceWorkerCycles: the issue's example,
// 20 -> 2000, which once left the estimate unchanged.
TEST(CostFigures, ReduceWorkerCyclesMovesAReduction) {
  const Workload w = workloads().at("reduce");
  const std::uint64_t preset = estimate(w, targetWith(1));
  const std::uint64_t slow =
      estimate(w, targetWith(1, "reduceWorkerCycles", "2000"));
  // At least one reduce vertex a tile, six workers' issue slots each.
  EXPECT_GE(slow - preset, 6u * (2000 - 20));
}
