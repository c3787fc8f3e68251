// What the compiler checks and decides: mapping and connection errors,
// memory layout with reuse, out-of-memory reports, estimates, and executables
// that survive a round trip through a file.
#include "../engine/TestGraphs.hpp"

#include "tessera/compiler/Compiler.hpp"
#include "tessera/engine/Profile.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/Logging.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

using namespace tessera;
using namespace tessera::program;
using tessera::test::addTestCodelets;
using tessera::test::modelDevice;
using ::testing::HasSubstr;

TEST(CompilerChecks, UnmappedVariableIsNamed) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor w = g.addVariable(FLOAT, {8}, "weights");
  g.setTileMapping(w.slice(0, 5), 1);
  try {
    compileGraph(g, {Sequence()});
    FAIL();
  } catch (const GraphError &err) {
    EXPECT_THAT(err.what(), HasSubstr("\"weights\""));
    EXPECT_THAT(err.what(), HasSubstr("3 of its 8 elements"));
    EXPECT_THAT(err.what(), HasSubstr("element 5"));
    EXPECT_THAT(err.what(), HasSubstr("setTileMapping"));
  }
}

TEST(CompilerChecks, CopyBetweenDifferentSizesIsAShapeError) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor a = g.addVariable(FLOAT, {4}, "a");
  Tensor b = g.addVariable(FLOAT, {2, 3}, "b");
  try {
    Copy c(a, b);
    FAIL();
  } catch (const ShapeError &err) {
    EXPECT_THAT(err.what(), HasSubstr("4 elements"));
    EXPECT_THAT(err.what(), HasSubstr("has 6"));
  }
  Tensor i = g.addVariable(INT, {4}, "i");
  EXPECT_THROW(Copy(a, i), TypeError);
}

TEST(CompilerChecks, UnconnectedFieldAndUnmappedVertexAreNamed) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  addTestCodelets(g);
  Tensor x = g.addVariable(FLOAT, {4}, "x");
  g.setTileMapping(x, 0);
  ComputeSet cs = g.addComputeSet("sums");
  VertexRef v = g.addVertex(cs, "SumVertex", {{"in", x}});
  try {
    compileGraph(g, {Execute(cs)});
    FAIL();
  } catch (const GraphError &err) {
    EXPECT_THAT(err.what(), HasSubstr("not mapped to a tile"));
  }
  g.setTileMapping(v, 0);
  try {
    compileGraph(g, {Execute(cs)});
    FAIL();
  } catch (const GraphError &err) {
    EXPECT_THAT(err.what(), HasSubstr("SumVertex"));
    EXPECT_THAT(err.what(), HasSubstr("\"out\" is not connected"));
  }
}

TEST(CompilerChecks, UnknownVertexClassAndFieldAreErrors) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  addTestCodelets(g);
  ComputeSet cs = g.addComputeSet();
  EXPECT_THROW(g.addVertex(cs, "NoSuchVertex"), GraphError);
  VertexRef v = g.addVertex(cs, "SumVertex");
  Tensor x = g.addVariable(INT, {4}, "x");
  EXPECT_THROW(g.connect(v["inn"], x), GraphError);
  EXPECT_THROW(g.connect(v["in"], x), TypeError);
  Tensor two = g.addVariable(FLOAT, {2}, "two");
  EXPECT_THROW(g.connect(v["out"], two), ShapeError);
}

TEST(CompilerMemory, OutOfMemoryNamesTileNeedCapacityAndVariables) {
  IPUModel model;
  model.tilesPerIPU = 4;
  model.memoryBytesPerTile = 4096;
  Device device = model.createDevice();
  Graph g(device.getTarget());
  Tensor big = g.addVariable(FLOAT, {2048}, "activations");
  g.setTileMapping(big, 2);
  g.setInitialValue(big, 0.0f);
  try {
    compileGraph(g, {Sequence()});
    FAIL();
  } catch (const MemoryError &err) {
    EXPECT_THAT(err.what(), HasSubstr("tile 2"));
    EXPECT_THAT(err.what(), HasSubstr("8192 bytes"));
    EXPECT_THAT(err.what(), HasSubstr("4096"));
    EXPECT_THAT(err.what(), HasSubstr("\"activations\" 8192 B"));
    EXPECT_THAT(err.what(), HasSubstr("debug.allowOutOfMemory"));
  }
  Executable exe =
      compileGraph(g, {Sequence()}, {{"debug.allowOutOfMemory", "true"}});
  EXPECT_EQ(exe.tileMemory[2].alwaysLive, 8192u);
}

TEST(CompilerMemory, ValuesWithDisjointLifetimesShareBytes) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor src = g.addVariable(FLOAT, {256}, "src");
  Tensor a = g.addVariable(FLOAT, {256}, "a");
  Tensor b = g.addVariable(FLOAT, {256}, "b");
  Tensor out = g.addVariable(FLOAT, {256}, "out");
  for (const Tensor &t : {src, a, b, out})
    g.setTileMapping(t, 0);
  g.createHostWrite("src", src);
  g.createHostRead("out", out);
  // a lives from step 0 to 1, b from 2 to 3: they can share bytes.
  Sequence prog{Copy(src, a), Copy(a, out), Copy(src, b), Copy(b, out)};
  Executable exe = compileGraph(g, {prog});
  EXPECT_FALSE(exe.variables[1].alwaysLive);
  EXPECT_FALSE(exe.variables[2].alwaysLive);
  EXPECT_EQ(exe.tileMemory[0].alwaysLive, 2 * 1024u);
  EXPECT_EQ(exe.tileMemory[0].notAlwaysLive, 1024u);

  Engine e(std::move(exe));
  e.load(device);
  std::vector<float> in(256, 2.0f), res(256);
  e.writeTensor("src", in.data(), in.data() + 256);
  e.run();
  e.readTensor("out", res.data(), res.data() + 256);
  EXPECT_EQ(res, in);
}

TEST(CompilerMemory, ShortLivedValuesShareBytesBesideALongLivedOne) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor src = g.addVariable(FLOAT, {256}, "src");
  Tensor out = g.addVariable(FLOAT, {256}, "out");
  Tensor kept = g.addVariable(FLOAT, {2, 256}, "kept"); // placed first
  for (const Tensor &t : {src, out, kept})
    g.setTileMapping(t, 0);
  g.createHostWrite("src", src);
  g.createHostRead("out", out);
  // kept lives across the 40 steps of the 20 short values, each of which
  // lives two steps: they take turns in one 1 KB slot beside kept's 2 KB.
  Sequence prog{Copy(src, kept[0]), Copy(src, kept[1])};
  for (int i = 0; i < 20; ++i) {
    Tensor t = g.addVariable(FLOAT, {256}, "t" + std::to_string(i));
    g.setTileMapping(t, 0);
    prog.add(Copy(src, t));
    prog.add(Copy(t, out));
  }
  prog.add(Copy(kept[1], out));
  Executable exe = compileGraph(g, {prog});
  EXPECT_EQ(exe.tileMemory[0].alwaysLive, 2 * 1024u);
  EXPECT_EQ(exe.tileMemory[0].notAlwaysLive, 3 * 1024u);

  Engine e(std::move(exe));
  e.load(device);
  std::vector<float> in(256), res(256);
  for (std::size_t i = 0; i < in.size(); ++i)
    in[i] = float(i);
  e.writeTensor("src", in.data(), in.data() + 256);
  e.run();
  e.readTensor("out", res.data(), res.data() + 256);
  EXPECT_EQ(res, in);
}

namespace {

// A variable "x" holding `values` on tile 0, for vertices on other tiles to
// read.
Tensor sourceOnTileZero(Graph &g, const std::vector<float> &values) {
  Tensor x = g.addVariable(FLOAT, {values.size()}, "x");
  g.setTileMapping(x, 0);
  g.setInitialValue(x, values);
  return x;
}

} // namespace

TEST(CompilerMemory, ManyOperandTemporariesPackSideBySideAndReuseBytes) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  addTestCodelets(g);
  constexpr std::size_t n = 300, w = 16;
  std::vector<float> init(n * w);
  for (std::size_t i = 0; i < init.size(); ++i)
    init[i] = float(i % 97);
  Tensor x = sourceOnTileZero(g, init);
  Sequence prog;
  std::vector<Tensor> sums;
  for (int set = 0; set < 2; ++set) {
    sums.push_back(g.addVariable(FLOAT, {n}, "s" + std::to_string(set)));
    g.setTileMapping(sums.back(), 1);
    g.createHostRead("s" + std::to_string(set), sums.back());
    ComputeSet cs = g.addComputeSet();
    // The second set reads the pieces in the other order.
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t p = set == 0 ? i : n - 1 - i;
      VertexRef v = g.addVertex(
          cs, "SumVertex",
          {{"in", x.slice(p * w, (p + 1) * w)}, {"out", sums.back()[i]}});
      g.setTileMapping(v, 1);
    }
    prog.add(Execute(cs));
  }
  Executable exe = compileGraph(g, {prog});
  // Each set brings its 300 pieces of 64 bytes to tile 1, all live at once;
  // they pack without gaps, and the second set's reuse the first's bytes.
  const TileMemory &m = exe.tileMemory[1];
  EXPECT_EQ(m.temporaries + m.notAlwaysLive, n * w * 4);

  Engine e(std::move(exe));
  e.load(device);
  e.run();
  for (std::size_t set = 0; set < 2; ++set) {
    std::vector<float> got(n);
    e.readTensor("s" + std::to_string(set), got.data(), got.data() + n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t p = set == 0 ? i : n - 1 - i;
      float want = 0;
      for (std::size_t k = p * w; k < (p + 1) * w; ++k)
        want += init[k];
      ASSERT_EQ(got[i], want) << "set " << set << " sum " << i;
    }
  }
}

TEST(CompilerMemory, ListFieldElementsShareOneTemporaryThatIsFreedAfterUse) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  addTestCodelets(g);
  // 10 parts of 3 floats: 12 bytes each, so each slice of the field's one
  // temporary starts on an 8-byte boundary after a 4-byte gap.
  constexpr std::size_t parts = 10, w = 3;
  std::vector<float> init(parts * w);
  for (std::size_t i = 0; i < init.size(); ++i)
    init[i] = float(i * i % 23);
  Tensor x = sourceOnTileZero(g, init);
  Sequence prog;
  for (int set = 0; set < 2; ++set) {
    Tensor sums = g.addVariable(FLOAT, {parts}, "s" + std::to_string(set));
    g.setTileMapping(sums, 1);
    g.createHostRead("s" + std::to_string(set), sums);
    // The first set reads contiguous rows of x (read where they lie, the
    // copy only costed); the second reads strided columns, copied for real.
    std::vector<Tensor> in;
    for (std::size_t i = 0; i < parts; ++i)
      in.push_back(set == 0 ? x.slice(i * w, (i + 1) * w)
                            : x.reshape({w, parts}).transpose()[i]);
    ComputeSet cs = g.addComputeSet();
    VertexRef v = g.addVertex(cs, "ConcatSumVertex");
    g.connect(v["parts"], in);
    g.connect(v["out"], sums);
    g.setTileMapping(v, 1);
    prog.add(Execute(cs));
  }
  Executable exe = compileGraph(g, {prog});
  // Each set's temporary (10 slices of 16 bytes) lives only for its set, so
  // the second reuses the first's bytes; the gaps do not keep it live.
  const TileMemory &m = exe.tileMemory[1];
  EXPECT_EQ(m.temporaries + m.notAlwaysLive, parts * 16);

  Engine e(std::move(exe));
  e.load(device);
  e.run();
  for (int set = 0; set < 2; ++set) {
    std::vector<float> got(parts);
    e.readTensor("s" + std::to_string(set), got.data(), got.data() + parts);
    for (std::size_t i = 0; i < parts; ++i) {
      float want = 0;
      for (std::size_t k = 0; k < w; ++k)
        want += set == 0 ? init[i * w + k] : init[k * parts + i];
      ASSERT_EQ(got[i], want) << "set " << set << " part " << i;
    }
  }
}

TEST(CompilerMemory, ValueReadBeforeWrittenStaysLiveAcrossRuns) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor acc = g.addVariable(FLOAT, {64}, "acc");
  Tensor tmp = g.addVariable(FLOAT, {64}, "tmp");
  g.setTileMapping(acc, 0);
  g.setTileMapping(tmp, 0);
  Executable exe = compileGraph(g, {Sequence{Copy(acc, tmp), Copy(tmp, acc)}});
  EXPECT_TRUE(exe.variables[0].alwaysLive);
  EXPECT_FALSE(exe.variables[1].alwaysLive);
}

TEST(CompilerEstimates, ComputeCyclesAreDeterministicAndGrowWithWork) {
  auto cycles = [](std::size_t n) {
    Device device = modelDevice();
    Graph g(device.getTarget());
    addTestCodelets(g);
    Tensor x = g.addVariable(FLOAT, {n}, "x");
    Tensor s = g.addVariable(FLOAT, {}, "s");
    g.setTileMapping(x, 0);
    g.setTileMapping(s, 0);
    ComputeSet cs = g.addComputeSet();
    g.setTileMapping(g.addVertex(cs, "SumVertex", {{"in", x}, {"out", s}}), 0);
    Executable exe = compileGraph(g, {Execute(cs)});
    for (std::size_t i = 0; i < exe.steps.size(); ++i)
      if (exe.steps[i].kind == StepKind::Compute)
        return exe.estimates[i].ipuCycles.at(0);
    return std::uint64_t{0};
  };
  EXPECT_GT(cycles(1000), cycles(10));
  EXPECT_EQ(cycles(1000), cycles(1000));
  EXPECT_GT(cycles(10), 0u);
}

namespace {

// The first exchange step's estimate on IPU 0, and its bytes.
std::pair<std::uint64_t, std::uint64_t> firstExchange(const Executable &exe) {
  for (std::size_t i = 0; i < exe.steps.size(); ++i)
    if (exe.steps[i].kind == StepKind::Exchange)
      return {exe.estimates[i].ipuCycles.at(0),
              exe.estimates[i].bytesExchanged};
  return {0, 0};
}

} // namespace

TEST(CompilerExchange, RemoteOperandIsReadCorrectlyAndKeepsItsMemory) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  addTestCodelets(g);
  Tensor x = g.addVariable(FLOAT, {1000}, "x");
  Tensor s = g.addVariable(FLOAT, {}, "s");
  g.setTileMapping(x, 0);
  g.setTileMapping(s, 1);
  std::vector<float> init(1000);
  for (std::size_t i = 0; i < init.size(); ++i)
    init[i] = float(i);
  g.setInitialValue(x, init);
  g.createHostRead("s", s);
  ComputeSet cs = g.addComputeSet();
  g.setTileMapping(g.addVertex(cs, "SumVertex", {{"in", x}, {"out", s}}), 1);
  Executable exe = compileGraph(g, {Execute(cs)});
  // Tile 1 still holds the operand's 4000 bytes, as the IPU would.
  EXPECT_GE(exe.tileMemory[1].temporaries + exe.tileMemory[1].notAlwaysLive,
            4000u);
  // Counted where it leaves and where it arrives.
  EXPECT_EQ(firstExchange(exe).second, 2 * 4000u);
  Engine e(std::move(exe));
  e.load(device);
  e.run();
  float sum = 0;
  e.readTensor("s", &sum, &sum + 1);
  EXPECT_EQ(sum, 499500.0f);
}

TEST(CompilerExchange, StepsOfManyCopyOpsKeepTheirOwnRanges) {
  // x's elements alternate between tiles 0 and 1, so copying it to y takes
  // a copy op per element (more than the resolver's chunks of 65536 ops);
  // the copy from y to z after it must find its own ops, not x's.
  const std::size_t n = 70000;
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor x = g.addVariable(FLOAT, {n}, "x");
  Tensor y = g.addVariable(FLOAT, {n}, "y");
  Tensor z = g.addVariable(FLOAT, {n}, "z");
  for (std::size_t i = 0; i < n; ++i)
    g.setTileMapping(x.slice(i, i + 1), static_cast<unsigned>(i % 2));
  g.setTileMapping(y, 2);
  g.setTileMapping(z, 3);
  std::vector<float> init(n);
  for (std::size_t i = 0; i < n; ++i)
    init[i] = float(i);
  g.setInitialValue(x, init);
  g.createHostRead("z", z);
  Executable exe =
      compileGraph(g, {Sequence{Copy(x, y), Copy(y.reverse(0), z)}});
  EXPECT_GT(exe.copyOps.size(), n);
  Engine e(std::move(exe));
  e.load(device);
  e.run();
  std::vector<float> out(n);
  e.readTensor("z", out.data(), out.data() + n);
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], float(n - 1 - i)) << i;
}

TEST(CompilerExchange, OperandWrittenInTheSameComputeSetIsReadBeforeTheWrite) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  addTestCodelets(g);
  Tensor x = g.addVariable(FLOAT, {4}, "x");
  Tensor s = g.addVariable(FLOAT, {}, "s");
  g.setTileMapping(x, 0);
  g.setTileMapping(s, 1);
  g.setInitialValue(x, std::vector<float>{1, 2, 3, 4});
  g.createHostRead("s", s);
  ComputeSet cs = g.addComputeSet();
  // Exchange comes before compute: the sum sees x before AddOne runs.
  g.setTileMapping(g.addVertex(cs, "AddOneVertex", {{"x", x}}), 0);
  g.setTileMapping(g.addVertex(cs, "SumVertex", {{"in", x}, {"out", s}}), 1);
  Engine e(compileGraph(g, {Execute(cs)}));
  e.load(device);
  for (int run = 0; run < 20; ++run) {
    e.run();
    float sum = 0;
    e.readTensor("s", &sum, &sum + 1);
    EXPECT_EQ(sum, 10.0f + 4.0f * float(run));
  }
}

TEST(CompilerEstimates, BroadcastCostsTheSenderOnce) {
  Device device = modelDevice();
  const Target &t = device.getTarget();
  Graph g(t);
  addTestCodelets(g);
  Tensor x = g.addVariable(FLOAT, {1024}, "x");
  g.setTileMapping(x, 0);
  ComputeSet cs = g.addComputeSet();
  for (unsigned tile = 1; tile < 4; ++tile) {
    Tensor y = g.addVariable(FLOAT, {1024}, "y");
    g.setTileMapping(y, tile);
    VertexRef v = g.addVertex(cs, "ScaleVertex", {{"in", x}, {"out", y}});
    g.setInitialValue(v["scale"], 2.0f);
    g.setTileMapping(v, tile);
  }
  const auto [cycles, bytes] = firstExchange(compileGraph(g, {Execute(cs)}));
  // Each receiver takes 4096 bytes; tile 0 sends them once, not three times.
  const std::uint64_t expected = 4096 / t.getExchangeBytesPerCycle() +
                                 t.costs().exchangeFixedCycles +
                                 t.costs().syncCyclesOnChip;
  EXPECT_EQ(cycles, expected);
  EXPECT_EQ(bytes, 4u * 4096u); // three arrivals, one departure
}

TEST(CompilerEstimates, RepeatedElementCrossesTheExchangeOnce) {
  // Four floats on tile 0, each repeated 64 times on each of tiles 1-8 (a
  // broadcast view, as a mean's gradient is): each receiver takes the 16
  // distinct bytes once and repeats them on its own tile; the sender is
  // not charged every repeat for every receiver (8 x 1024 bytes).
  Device device = modelDevice(16);
  const Target &t = device.getTarget();
  Graph g(t);
  Tensor x = g.addVariable(FLOAT, {4, 1}, "x");
  g.setTileMapping(x, 0);
  std::vector<Tensor> src, dst;
  for (unsigned tile = 1; tile <= 8; ++tile) {
    Tensor y = g.addVariable(FLOAT, {256}, "y");
    g.setTileMapping(y, tile);
    src.push_back(x.broadcast(64, 1).flatten());
    dst.push_back(y);
  }
  g.setInitialValue(x, std::vector<float>{1, 2, 3, 4});
  for (unsigned i = 0; i < dst.size(); ++i)
    g.createHostRead("y" + std::to_string(i), dst[i]);
  Executable exe = compileGraph(g, {Copy(concat(src), concat(dst))});
  const auto [cycles, bytes] = firstExchange(exe);
  const auto &c = t.costs();
  const std::uint64_t step = c.exchangeFixedCycles + c.syncCyclesOnChip;
  // 16 bytes over the exchange, 1008 repeated on tile at 8 a cycle.
  EXPECT_EQ(cycles, step + 16 / t.getExchangeBytesPerCycle() +
                        1008 / c.copyBytesPerWorkerCycle);
  EXPECT_LT(cycles, step + 1024 / t.getExchangeBytesPerCycle());
  (void)bytes;
  // The copy itself still writes every repeat.
  Engine e(std::move(exe));
  e.load(device);
  e.run();
  std::vector<float> y(256);
  e.readTensor("y7", y.data(), y.data() + y.size());
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[63], 1.0f);
  EXPECT_EQ(y[64], 2.0f);
  EXPECT_EQ(y[255], 4.0f);
}

TEST(CompilerEstimates, BusPairTakesBytesBothReceiveAtTwiceTheRate) {
  // Tiles 2 and 3 share an exchange bus; both read the same 4096 bytes, half
  // from tile 0 and half from tile 1 (a tile sends at the base rate), which
  // the shared bus carries to both at once.
  auto cycles = [](unsigned tilesPerBus) {
    const Target t = Target::createIPUTarget(
        1, "ipu2",
        {{"tilesPerIPU", "8"},
         {"tilesPerSharedExchangeBus", std::to_string(tilesPerBus)}});
    Graph g(t);
    addTestCodelets(g);
    Tensor x = g.addVariable(FLOAT, {1024}, "x");
    g.setTileMapping(x.slice(0, 512), 0);
    g.setTileMapping(x.slice(512, 1024), 1);
    ComputeSet cs = g.addComputeSet();
    for (unsigned tile : {2u, 3u}) {
      Tensor y = g.addVariable(FLOAT, {1024}, "y");
      g.setTileMapping(y, tile);
      VertexRef v = g.addVertex(cs, "ScaleVertex", {{"in", x}, {"out", y}});
      g.setInitialValue(v["scale"], 2.0f);
      g.setTileMapping(v, tile);
    }
    return firstExchange(compileGraph(g, {Execute(cs)})).first;
  };
  const Target t = Target::createIPUTarget(1);
  const std::uint64_t fixed =
      t.costs().exchangeFixedCycles + t.costs().syncCyclesOnChip;
  EXPECT_EQ(cycles(2), 4096 / (2 * t.getExchangeBytesPerCycle()) + fixed);
  EXPECT_EQ(cycles(1), 4096 / t.getExchangeBytesPerCycle() + fixed);
}

TEST(CompilerEstimates, BusPairReceivingDifferentBytesGainsNothing) {
  const Target t = Target::createIPUTarget(1, "ipu2", {{"tilesPerIPU", "8"}});
  Graph g(t);
  addTestCodelets(g);
  Tensor x = g.addVariable(FLOAT, {2048}, "x");
  g.setTileMapping(x.slice(0, 1024), 0);
  g.setTileMapping(x.slice(1024, 2048), 1);
  ComputeSet cs = g.addComputeSet();
  for (unsigned tile : {2u, 3u}) {
    Tensor y = g.addVariable(FLOAT, {1024}, "y");
    g.setTileMapping(y, tile);
    const std::size_t begin = (tile - 2) * 1024;
    VertexRef v = g.addVertex(
        cs, "ScaleVertex", {{"in", x.slice(begin, begin + 1024)}, {"out", y}});
    g.setInitialValue(v["scale"], 2.0f);
    g.setTileMapping(v, tile);
  }
  EXPECT_EQ(firstExchange(compileGraph(g, {Execute(cs)})).first,
            4096 / t.getExchangeBytesPerCycle() +
                t.costs().exchangeFixedCycles + t.costs().syncCyclesOnChip);
}

TEST(CompilerEstimates, AComputeSetFedByAnExchangeSyncsOnce) {
  // A superstep is compute, sync, exchange: the exchange gathering a compute
  // set's operands carries the one sync, and the compute step none.
  auto computeCycles = [](unsigned dataTile) {
    const Target t = Target::createIPUTarget(1, "ipu2", {{"tilesPerIPU", "4"}});
    Graph g(t);
    addTestCodelets(g);
    Tensor x = g.addVariable(FLOAT, {256}, "x");
    Tensor s = g.addVariable(FLOAT, {}, "s");
    g.setTileMapping(x, dataTile);
    g.setTileMapping(s, 1);
    ComputeSet cs = g.addComputeSet();
    g.setTileMapping(g.addVertex(cs, "SumVertex", {{"in", x}, {"out", s}}), 1);
    const Executable exe = compileGraph(g, {Execute(cs)});
    std::uint64_t compute = 0, exchanges = 0;
    for (std::size_t i = 0; i < exe.steps.size(); ++i)
      if (exe.steps[i].kind == StepKind::Compute)
        compute = exe.estimates[i].ipuCycles.at(0);
      else if (exe.steps[i].kind == StepKind::Exchange)
        exchanges += 1;
    return std::pair{compute, exchanges};
  };
  const auto [local, localExchanges] = computeCycles(1);
  const auto [remote, remoteExchanges] = computeCycles(0);
  EXPECT_EQ(localExchanges, 0u);
  EXPECT_EQ(remoteExchanges, 1u);
  EXPECT_EQ(local - remote,
            Target::createIPUTarget(1).costs().syncCyclesOnChip);
}

TEST(CompilerExecutable, SavedExecutableRunsTheSame) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  addTestCodelets(g);
  Tensor x = g.addVariable(FLOAT, {5}, "x");
  Tensor s = g.addVariable(FLOAT, {}, "s");
  g.setTileMapping(x, 1);
  g.setTileMapping(s, 2);
  g.setInitialValue(x, std::vector<float>{1, 2, 3, 4, 5});
  g.createHostRead("s", s);
  ComputeSet cs = g.addComputeSet();
  g.setTileMapping(g.addVertex(cs, "SumVertex", {{"in", x}, {"out", s}}), 3);
  std::stringstream file;
  compileGraph(g, {Execute(cs)}).serialize(file);
  Engine e(Executable::deserialize(file));
  e.load(device);
  e.run();
  float sum = 0;
  e.readTensor("s", &sum, &sum + 1);
  EXPECT_EQ(sum, 15.0f);
}

// Memory starts zeroed, so the executable keeps only the non-zero stretches
// of initial values: a zero-initialised variable and a long run of zeros
// inside one cost no bytes, short zero gaps stay in their region, and the
// values read back are the ones set.
TEST(CompilerExecutable, ZeroInitialBytesAreNotStored) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor zeros = g.addVariable(FLOAT, {1000}, "zeros");
  Tensor mixed = g.addVariable(FLOAT, {1000}, "mixed");
  g.setTileMapping(zeros, 0);
  g.setTileMapping(mixed, 1);
  g.setInitialValue(zeros, std::vector<float>(1000, 0.0f));
  std::vector<float> m(1000, 0.0f);
  m[0] = 1;   // a region of one element ...
  m[2] = 2;   // ... joined across a gap of 4 bytes
  m[500] = 3; // a region of its own after 497 zero elements
  g.setInitialValue(mixed, m);
  g.createHostRead("zeros", zeros);
  g.createHostRead("mixed", mixed);
  const Executable exe = compileGraph(g, {Sequence()});
  EXPECT_EQ(exe.initRegions.size(), 2u);
  // Bytes, little-endian: 1.0f is 00 00 80 3f, so the first region runs
  // from byte 2 of m[0] to the end of m[2] (10 bytes), the second holds
  // the last two bytes of m[500] (3.0f is 00 00 40 40).
  EXPECT_EQ(exe.initData.size(), 12u);
  Engine e{Executable(exe)};
  e.load(device);
  e.run();
  std::vector<float> z(1000, -1.0f), got(1000, -1.0f);
  e.readTensor("zeros", z.data(), z.data() + z.size());
  e.readTensor("mixed", got.data(), got.data() + got.size());
  EXPECT_EQ(z, std::vector<float>(1000, 0.0f));
  EXPECT_EQ(got, m);
}

namespace {

// s = sum(x) by the compute set; its host kernel sums y instead, so the
// result tells which ran. y lies on tile 2, or across tiles 2 and 3 when
// `split` (then the kernel cannot read it in one piece).
struct HostKernelGraph {
  Device device = modelDevice();
  Graph g{device.getTarget()};
  ComputeSet cs, kernel;

  explicit HostKernelGraph(bool split) {
    addTestCodelets(g);
    Tensor x = g.addVariable(FLOAT, {4}, "x");
    Tensor y = g.addVariable(FLOAT, {4}, "y");
    Tensor s = g.addVariable(FLOAT, {}, "s");
    g.setTileMapping(x, 0);
    g.setTileMapping(y, 2);
    if (split)
      g.setTileMapping(y.slice(2, 4), 3);
    g.setTileMapping(s, 1);
    g.setInitialValue(x, std::vector<float>{1, 2, 3, 4});
    g.setInitialValue(y, std::vector<float>{10, 20, 30, 40});
    g.createHostRead("s", s);
    cs = g.addComputeSet("sum");
    g.setTileMapping(g.addVertex(cs, "SumVertex", {{"in", x}, {"out", s}}), 1);
    kernel = g.addComputeSet("sum/host");
    g.setTileMapping(g.addVertex(kernel, "SumVertex", {{"in", y}, {"out", s}}),
                     0);
    g.setHostKernel(cs, kernel);
  }

  float run(const OptionFlags &options = {}) {
    Engine e(compileGraph(g, {Execute(cs)}, options));
    e.load(device);
    e.run();
    float sum = 0;
    e.readTensor("s", &sum, &sum + 1);
    return sum;
  }
};

} // namespace

TEST(CompilerHostKernel, RunsInPlaceOfItsComputeSetAndChangesNoEstimate) {
  HostKernelGraph h(false);
  EXPECT_EQ(h.run(), 100.0f);
  EXPECT_EQ(h.run({{"engine.hostKernels", "false"}}), 10.0f);
  const Executable on = compileGraph(h.g, {Execute(h.cs)});
  const Executable off =
      compileGraph(h.g, {Execute(h.cs)}, {{"engine.hostKernels", "false"}});
  EXPECT_EQ(on.stepCyclesOnce(), off.stepCyclesOnce());
  // The kernel's vertex, mapped to tile 0, takes none of its memory.
  EXPECT_EQ(on.tileMemory[0].vertexState, 0u);
}

TEST(CompilerHostKernel, ComputeSetRunsWhenAKernelFieldIsNotOnePiece) {
  HostKernelGraph h(true);
  EXPECT_EQ(h.run(), 10.0f);
}

TEST(CompilerHostKernel, KernelCannotBeExecutedOrItsOwnComputeSet) {
  HostKernelGraph h(false);
  EXPECT_THROW(h.g.setHostKernel(h.cs, h.cs), GraphError);
  EXPECT_THROW(h.g.setHostKernel(h.kernel, h.cs), GraphError);
  try {
    compileGraph(h.g, {Execute(h.kernel)});
    FAIL() << "executing a host kernel compiled";
  } catch (const GraphError &e) {
    EXPECT_THAT(e.what(), HasSubstr("host kernel"));
    EXPECT_THAT(e.what(), HasSubstr("sum/host"));
  }
}

TEST(CompilerHostKernel, KernelVertexIsCheckedAsAnyVertexIs) {
  HostKernelGraph h(false);
  // An unconnected field of a kernel vertex is an error naming it, not a
  // reason to run the tiles instead.
  h.g.setTileMapping(h.g.addVertex(h.kernel, "SumVertex"), 0);
  try {
    compileGraph(h.g, {Execute(h.cs)});
    FAIL() << "a kernel vertex with unconnected fields compiled";
  } catch (const GraphError &e) {
    EXPECT_THAT(e.what(), HasSubstr("SumVertex"));
    EXPECT_THAT(e.what(), HasSubstr("is not connected"));
  }
}

// Two compute sets sum x into s1 and s2; their kernels sum y1 and y2
// instead, so the results tell which ran. Paired, the kernels run both or
// neither: y2 split over two tiles keeps its kernel from running, and so
// the other's, whichever of the two runs first.
TEST(CompilerHostKernel, PairedKernelsRunBothOrNeither) {
  for (bool split : {false, true})
    for (bool secondSplit : {false, true}) {
      Device device = modelDevice();
      Graph g(device.getTarget());
      addTestCodelets(g);
      Tensor x = g.addVariable(FLOAT, {4}, "x");
      Tensor y1 = g.addVariable(FLOAT, {4}, "y1");
      Tensor y2 = g.addVariable(FLOAT, {4}, "y2");
      Tensor s1 = g.addVariable(FLOAT, {}, "s1");
      Tensor s2 = g.addVariable(FLOAT, {}, "s2");
      for (const Tensor &t : {x, y1, y2, s1, s2})
        g.setTileMapping(t, 0);
      if (split)
        g.setTileMapping((secondSplit ? y2 : y1).slice(2, 4), 3);
      g.setInitialValue(x, std::vector<float>{1, 2, 3, 4});
      g.setInitialValue(y1, std::vector<float>{10, 20, 30, 40});
      g.setInitialValue(y2, std::vector<float>{100, 200, 300, 400});
      g.createHostRead("s1", s1);
      g.createHostRead("s2", s2);
      ComputeSet cs[2], kernel[2];
      const Tensor out[2] = {s1, s2}, alt[2] = {y1, y2};
      for (unsigned i = 0; i < 2; ++i) {
        cs[i] = g.addComputeSet("sum" + std::to_string(i));
        g.setTileMapping(
            g.addVertex(cs[i], "SumVertex", {{"in", x}, {"out", out[i]}}), 0);
        kernel[i] = g.addComputeSet("sum/host" + std::to_string(i));
        g.setTileMapping(g.addVertex(kernel[i], "SumVertex",
                                     {{"in", alt[i]}, {"out", out[i]}}),
                         0);
        g.setHostKernel(cs[i], kernel[i]);
      }
      g.pairHostKernels(cs[0], cs[1]);
      Engine e(compileGraph(g, {Sequence{Execute(cs[0]), Execute(cs[1])}}));
      e.load(device);
      e.run();
      float r1 = 0, r2 = 0;
      e.readTensor("s1", &r1, &r1 + 1);
      e.readTensor("s2", &r2, &r2 + 1);
      EXPECT_EQ(r1, split ? 10.0f : 100.0f) << split << secondSplit;
      EXPECT_EQ(r2, split ? 10.0f : 1000.0f) << split << secondSplit;
    }
}

TEST(CompilerHostKernel, PairsAreTwoKernelsOfTheirOwn) {
  HostKernelGraph h(false);
  ComputeSet other = h.g.addComputeSet("other");
  EXPECT_THROW(h.g.pairHostKernels(h.cs, h.cs), GraphError);
  EXPECT_THROW(h.g.pairHostKernels(h.cs, other), GraphError);
}

// A host kernel reads its operands where they lie, at its compute set's
// step, though the compute set's own vertex reads a copy gathered before
// it: y, gathered from two tiles and so dead after the gather as far as that
// vertex goes, must keep its bytes through the step, or s0, which the step
// writes on y's tile, could take them. (The kernel sums y's first half, so
// its result also shows that it ran.)
TEST(CompilerHostKernel, OperandsTheKernelReadsStayLiveThroughItsStep) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  addTestCodelets(g);
  Tensor x = g.addVariable(FLOAT, {4}, "x");
  Tensor y = g.addVariable(FLOAT, {4}, "y");
  Tensor z = g.addVariable(FLOAT, {1}, "z");
  Tensor s0 = g.addVariable(FLOAT, {}, "s0");
  Tensor s1 = g.addVariable(FLOAT, {}, "s1");
  Tensor r = g.addVariable(FLOAT, {}, "r");
  for (const Tensor &t : {x, y, z, s0, r})
    g.setTileMapping(t, 0);
  g.setTileMapping(y.slice(2, 4), 2);
  g.setTileMapping(s1, 1);
  g.setInitialValue(x, std::vector<float>{1, 2, 3, 4});
  g.setInitialValue(z, std::vector<float>{1000});
  g.createHostRead("s1", s1);
  g.createHostRead("r", r);
  ComputeSet cs = g.addComputeSet("sums");
  g.setTileMapping(g.addVertex(cs, "SumVertex", {{"in", y}, {"out", s1}}), 1);
  g.setTileMapping(g.addVertex(cs, "SumVertex", {{"in", z}, {"out", s0}}), 0);
  ComputeSet kernel = g.addComputeSet("sums/host");
  g.setTileMapping(g.addVertex(kernel, "SumVertex", {{"in", z}, {"out", s0}}),
                   0);
  g.setTileMapping(
      g.addVertex(kernel, "SumVertex", {{"in", y.slice(0, 2)}, {"out", s1}}),
      0);
  g.setHostKernel(cs, kernel);
  // y is defined by the first copy and s0 consumed by the last, so neither
  // is always live.
  const Sequence prog{Copy(x, y), Execute(cs), Copy(s0, r)};
  const Executable tiles =
      compileGraph(g, {prog}, {{"engine.hostKernels", "false"}});
  Engine e(compileGraph(g, {prog}));
  // The layout does not depend on whether the kernel runs.
  for (unsigned t = 0; t < 3; ++t)
    EXPECT_EQ(e.getExecutable().tileMemory[t].total(),
              tiles.tileMemory[t].total())
        << "tile " << t;
  e.load(device);
  e.run();
  float s = 0, rv = 0;
  e.readTensor("s1", &s, &s + 1);
  e.readTensor("r", &rv, &rv + 1);
  EXPECT_EQ(s, 3.0f);
  EXPECT_EQ(rv, 1000.0f);
}

// A host kernel's compute set still costs the gathers the simulator skips,
// as the IPU would make them: a column of x crossing a tile interval at
// every element, strided pieces of several elements, a repeated element,
// bytes already on the vertex's tile and bytes two bus partners (tiles 6
// and 7) both receive cost what copying them would.
TEST(CompilerHostKernel, SkippedGathersCostWhatTheirCopiesWould) {
  Device device = modelDevice(8);
  Graph g(device.getTarget());
  addTestCodelets(g);
  // Rows 0-7 of x on tiles 0-3 in turn, rows 8-15 one interval on tile 5.
  Tensor x = g.addVariable(FLOAT, {16, 12}, "x");
  for (std::size_t r = 0; r < 8; ++r)
    g.setTileMapping(x.slice(r, r + 1), static_cast<unsigned>(r % 4));
  g.setTileMapping(x.slice(8, 16), 5);
  const Tensor column = x.transpose().flatten();
  const Tensor repeated = x.flatten().slice(0, 1).broadcast(5, 0);
  const Tensor row = x.slice(1, 2).flatten();
  ComputeSet cs = g.addComputeSet("sums");
  for (unsigned tile : {1u, 6u, 7u}) {
    Tensor out = g.addVariable(FLOAT, {3}, "out");
    g.setTileMapping(out, tile);
    VertexRef v = g.addVertex(cs, "ConcatSumVertex", {{"out", out}});
    g.connect(v["parts"], std::vector<Tensor>{column, repeated, row});
    g.setTileMapping(v, tile);
  }
  Tensor y = g.addVariable(FLOAT, {4}, "y");
  Tensor s = g.addVariable(FLOAT, {}, "s");
  g.setTileMapping(y, 2);
  g.setTileMapping(s, 2);
  ComputeSet kernel = g.addComputeSet("sums/host");
  g.setTileMapping(g.addVertex(kernel, "SumVertex", {{"in", y}, {"out", s}}),
                   2);
  g.setHostKernel(cs, kernel);
  const Executable on = compileGraph(g, {Execute(cs)});
  const Executable off =
      compileGraph(g, {Execute(cs)}, {{"engine.hostKernels", "false"}});
  // The kernel ran instead, so its gathers made no copy ops.
  EXPECT_LT(on.copyOps.size(), off.copyOps.size());
  ASSERT_EQ(on.steps.size(), off.steps.size());
  for (std::size_t i = 0; i < on.steps.size(); ++i) {
    EXPECT_EQ(on.estimates[i].ipuCycles, off.estimates[i].ipuCycles) << i;
    EXPECT_EQ(on.estimates[i].bytesExchanged, off.estimates[i].bytesExchanged)
        << i;
  }
}

TEST(CompilerReport, ProfileListsEveryPhaseWithItsTimeAndMemory) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  addTestCodelets(g);
  Tensor x = g.addVariable(FLOAT, {5}, "x");
  Tensor s = g.addVariable(FLOAT, {}, "s");
  g.setTileMapping(x, 1);
  g.setTileMapping(s, 2);
  ComputeSet cs = g.addComputeSet();
  g.setTileMapping(g.addVertex(cs, "SumVertex", {{"in", x}, {"out", s}}), 3);
  const auto level =
      static_cast<logging::Level>(logging::detail::currentLevel());
  logging::setLevel(logging::Level::INFO);
  ::testing::internal::CaptureStderr();
  const Executable exe = compileGraph(g, {Execute(cs)});
  const std::string log = ::testing::internal::GetCapturedStderr();
  logging::setLevel(level);

  const std::vector<std::string> names = {
      "checking graph",  "flattening programs", "laying out memory",
      "resolving steps", "estimating cycles",   "releasing compiler state"};
  ASSERT_EQ(exe.compilePhases.size(), names.size());
  const nlohmann::json phases =
      makeProfile(exe, nullptr)["compilation"]["phases"];
  ASSERT_EQ(phases.size(), names.size());
  std::ostringstream summary;
  printProfileSummary(summary, exe, ExecutionCounts{});
  EXPECT_THAT(summary.str(), HasSubstr("Compilation:"));
  for (std::size_t i = 0; i < names.size(); ++i) {
    SCOPED_TRACE(names[i]);
    const CompilePhase &p = exe.compilePhases[i];
    EXPECT_EQ(p.name, names[i]);
    EXPECT_GE(p.seconds, 0.0);
    EXPECT_GT(p.peakRssBytes, 0u);
    EXPECT_GE(p.peakRssBytes, p.rssBytes);
    EXPECT_EQ(phases[i]["name"], names[i]);
    EXPECT_GE(phases[i]["seconds"].get<double>(), 0.0);
    EXPECT_THAT(log, HasSubstr("compile phase " + names[i] + ": "));
    EXPECT_THAT(summary.str(), HasSubstr(names[i] + ":"));
  }
}
