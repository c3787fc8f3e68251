// Programs the engine runs: control flow, vertices of every field form,
// printing, aborts, thread-count independence, replication and multi-IPU
// copies.
#include "TestGraphs.hpp"

#include "tessera/compiler/Compiler.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <sstream>
#include <vector>

using namespace tessera;
using namespace tessera::program;
using tessera::test::addTestCodelets;
using tessera::test::modelDevice;
using ::testing::HasSubstr;

namespace {

std::vector<float> readFloats(Engine &e, const std::string &h, std::size_t n) {
  std::vector<float> out(n);
  e.readTensor(h, out.data(), out.data() + n);
  return out;
}

} // namespace

TEST(EnginePrograms, RepeatRunsItsBodyCountTimes) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  addTestCodelets(g);
  Tensor x = g.addVariable(FLOAT, {4}, "x");
  g.setTileMapping(x, 0);
  g.setInitialValue(x, 0.0f);
  g.createHostRead("x", x);
  ComputeSet cs = g.addComputeSet("inc");
  VertexRef v = g.addVertex(cs, "AddOneVertex", {{"x", x}});
  g.setTileMapping(v, 0);
  Engine e(g, Repeat(5, Execute(cs)));
  e.load(device);
  e.run();
  EXPECT_EQ(readFloats(e, "x", 4), std::vector<float>(4, 5.0f));
  e.run();
  EXPECT_EQ(readFloats(e, "x", 4), std::vector<float>(4, 10.0f));
}

TEST(EnginePrograms, RepeatWhileTrueIfAndSwitchFollowTheirPredicates) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  addTestCodelets(g);
  Tensor counter = g.addVariable(INT, {}, "counter");
  Tensor more = g.addVariable(BOOL, {}, "more");
  Tensor x = g.addVariable(FLOAT, {2}, "x");
  Tensor sel = g.addVariable(INT, {}, "sel");
  for (const Tensor &t : {counter, more, x, sel})
    g.setTileMapping(t, 1);
  g.createHostWrite("counter", counter);
  g.createHostWrite("sel", sel);
  g.createHostRead("x", x);
  ComputeSet down = g.addComputeSet("down");
  g.setTileMapping(g.addVertex(down, "CountDownVertex",
                               {{"counter", counter}, {"more", more}}),
                   1);
  ComputeSet inc = g.addComputeSet("inc");
  g.setTileMapping(g.addVertex(inc, "AddOneVertex", {{"x", x}}), 1);
  Tensor one = g.addConstant<float>(FLOAT, {2}, 100.0f);
  Tensor two = g.addConstant<float>(FLOAT, {2}, 200.0f);
  g.setTileMapping(one, 2);
  g.setTileMapping(two, 3);
  Sequence loop{Copy(one, x),
                RepeatWhileTrue(Execute(down), more, Execute(inc))};
  Switch sw(sel, {{1, Copy(one, x)}, {2, Copy(two, x)}}, Execute(inc));
  Engine e(g, {loop, sw, If(more, Copy(two, x), Copy(one, x))});
  e.load(device);
  int four = 4;
  e.writeTensor("counter", &four, &four + 1);
  e.run(0);
  // The body runs while the count-down leaves the counter above zero: 3x.
  EXPECT_EQ(readFloats(e, "x", 2), std::vector<float>(2, 103.0f));
  for (auto [s, want] : {std::pair{2, 200.0f}, {1, 100.0f}, {7, 101.0f}}) {
    e.writeTensor("sel", &s, &s + 1);
    e.run(1);
    EXPECT_EQ(readFloats(e, "x", 2), std::vector<float>(2, want)) << s;
  }
  e.run(2); // `more` is false after the loop
  EXPECT_EQ(readFloats(e, "x", 2), std::vector<float>(2, 100.0f));
}

TEST(EnginePrograms, FunctionsRunAtEveryCall) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  addTestCodelets(g);
  Tensor x = g.addVariable(FLOAT, {3}, "x");
  g.setTileMapping(x, 0);
  g.setInitialValue(x, 1.0f);
  g.createHostRead("x", x);
  ComputeSet cs = g.addComputeSet("inc");
  g.setTileMapping(g.addVertex(cs, "AddOneVertex", {{"x", x}}), 0);
  Function f = g.addFunction(Execute(cs));
  Engine e(g, Sequence{Call(f), Repeat(2, Call(f)), Call(f)});
  e.load(device);
  e.run();
  EXPECT_EQ(readFloats(e, "x", 3), std::vector<float>(3, 5.0f));
}

TEST(EngineVertices, EveryFieldFormReachesTheVertex) {
  Device device = modelDevice(4);
  Graph g(device.getTarget());
  addTestCodelets(g);
  Tensor m = g.addVariable(FLOAT, {3, 4}, "m");
  mapTensorLinearly(g, m, 1, 1); // spread: operands come by exchange
  g.createHostWrite("m", m);
  Tensor sums = g.addVariable(FLOAT, {3}, "sums");
  Tensor scaled = g.addVariable(FLOAT, {4}, "scaled");
  Tensor ids = g.addVariable(INT, {6}, "ids");
  for (const Tensor &t : {sums, scaled, ids})
    g.setTileMapping(t, 3);
  g.createHostRead("sums", sums);
  g.createHostRead("scaled", scaled);
  g.createHostRead("ids", ids);
  ComputeSet cs = g.addComputeSet("forms");
  VertexRef list = g.addVertex(cs, "ConcatSumVertex");
  g.connect(list["parts"], {m[0], m[1], m[2]});
  g.connect(list["out"], sums);
  VertexRef scale =
      g.addVertex(cs, "ScaleVertex",
                  {{"in", m.transpose()[1]}, {"out", scaled.slice(0, 3)}});
  g.setInitialValue(scale["scale"], 2.5f);
  VertexRef multi = g.addVertex(cs, "WorkerIdVertex", {{"out", ids}});
  for (VertexRef v : {list, scale, multi})
    g.setTileMapping(v, 3);
  Engine e(g, Execute(cs));
  e.load(device);
  std::vector<float> in(12);
  std::iota(in.begin(), in.end(), 0.0f);
  e.writeTensor("m", in.data(), in.data() + 12);
  e.run();
  EXPECT_EQ(readFloats(e, "sums", 3), (std::vector<float>{6, 22, 38}));
  // m.transpose()[1] is column 1: 1, 5, 9.
  EXPECT_EQ(readFloats(e, "scaled", 4),
            (std::vector<float>{2.5, 12.5, 22.5, 0}));
  std::vector<int> got(6);
  e.readTensor("ids", got.data(), got.data() + 6);
  EXPECT_EQ(got, (std::vector<int>{0, 10, 20, 30, 40, 50}));
}

TEST(EngineVertices, VertexReturningFalseStopsTheRunNamingIt) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  addTestCodelets(g);
  Tensor x = g.addConstant<float>(FLOAT, {}, 3.0f);
  g.setTileMapping(x, 2);
  ComputeSet cs = g.addComputeSet("check");
  g.setTileMapping(g.addVertex(cs, "FailVertex", {{"in", x}}), 2);
  Engine e(g, Execute(cs));
  e.load(device);
  try {
    e.run();
    FAIL();
  } catch (const RuntimeError &err) {
    EXPECT_THAT(err.what(), HasSubstr("FailVertex"));
    EXPECT_THAT(err.what(), HasSubstr("\"check\""));
    EXPECT_THAT(err.what(), HasSubstr("tile 2"));
  }
}

TEST(EnginePrograms, AbortAndAbortOnConditionStopWithTheirMessage) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor flag = g.addVariable(BOOL, {}, "flag");
  g.setTileMapping(flag, 0);
  g.createHostWrite("flag", flag);
  Engine e(g, {Abort("stop here"), AbortOnCondition(flag, "flag was set")});
  e.load(device);
  EXPECT_THROW(
      {
        try {
          e.run(0);
        } catch (const RuntimeError &err) {
          EXPECT_THAT(err.what(), HasSubstr("stop here"));
          throw;
        }
      },
      RuntimeError);
  bool f = false;
  e.writeTensor("flag", &f, &f + 1);
  EXPECT_NO_THROW(e.run(1));
  f = true;
  e.writeTensor("flag", &f, &f + 1);
  EXPECT_THROW(e.run(1), RuntimeError);
}

TEST(EnginePrograms, PrintTensorUsesPoplarsFormat) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor v = g.addConstant<float>(FLOAT, {4}, {1.0f, 1.5f, 2.0f, 2.5f}, "v1");
  Tensor m = g.addConstant<int>(INT, {2, 2}, {1, 2, 3, 4}, "m");
  g.setTileMapping(v, 0);
  g.setTileMapping(m, 1);
  Engine e(g, Sequence{PrintTensor("v1", v), PrintTensor("m", m)});
  std::ostringstream os;
  e.setPrintStream(os);
  e.load(device);
  e.run();
  EXPECT_EQ(os.str(), "v1: [1.0000000 1.5000000 2.0000000 2.5000000]\n"
                      "m: [\n [1 2]\n [3 4]\n]\n");
}

TEST(EngineCopies, OverlappingCopyReadsBeforeWriting) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor x = g.addVariable(FLOAT, {6}, "x");
  g.setTileMapping(x, 0);
  g.setInitialValue(x, std::vector<float>{0, 1, 2, 3, 4, 5});
  g.createHostRead("x", x);
  Engine e(g, Copy(x.slice(0, 5), x.slice(1, 6)));
  e.load(device);
  e.run();
  EXPECT_EQ(readFloats(e, "x", 6), (std::vector<float>{0, 0, 1, 2, 3, 4}));
}

// Many pieces whose sources come in falling address order (sorted by the
// engine's overlap test) and overlap the destinations of other pieces:
// every piece still reads what the variable held before the copy.
TEST(EngineCopies, ScatteredOverlappingPiecesReadBeforeWriting) {
  constexpr std::size_t kPieces = 512, kSize = 4 * kPieces + 8;
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor x = g.addVariable(FLOAT, {kSize}, "x");
  g.setTileMapping(x, 0);
  std::vector<float> before(kSize);
  std::iota(before.begin(), before.end(), 0.0f);
  g.setInitialValue(x, before);
  g.createHostRead("x", x);
  std::vector<Tensor> pieces;
  std::vector<std::size_t> from;
  for (std::size_t k = kPieces; k-- > 0;) {
    pieces.push_back(x.slice(4 * k, 4 * k + 2));
    from.insert(from.end(), {4 * k, 4 * k + 1});
  }
  Engine e(g, Copy(concat(pieces), x.slice(1, 1 + 2 * kPieces)));
  e.load(device);
  e.run();
  std::vector<float> want = before;
  for (std::size_t i = 0; i < from.size(); ++i)
    want[1 + i] = before[from[i]];
  EXPECT_EQ(readFloats(e, "x", kSize), want);
}

// The engine moves a contiguous piece in whole vectors plus overlapping
// smaller moves, by length: every length up to past the memcpy cut-off
// (512 bytes) must land exactly, touching no byte around it.
TEST(EngineCopies, PiecesOfEveryLengthLandExactly) {
  constexpr std::size_t kMax = 530, kBytes = 3 * kMax;
  Device device = modelDevice(2);
  Graph g(device.getTarget());
  Tensor src = g.addVariable(UNSIGNED_CHAR, {kBytes}, "src");
  Tensor dst = g.addVariable(UNSIGNED_CHAR, {kBytes}, "dst");
  g.setTileMapping(src, 0);
  g.setTileMapping(dst, 1);
  std::vector<unsigned char> from(kBytes), before(kBytes, 0xee);
  for (std::size_t i = 0; i < kBytes; ++i)
    from[i] = static_cast<unsigned char>(i * 37 + 11);
  g.setInitialValue(src, from);
  g.setInitialValue(dst, before);
  g.createHostRead("dst", dst);
  for (std::size_t len = 1; len <= kMax; ++len) {
    // Odd offsets on both sides: no alignment helps the copy.
    const std::size_t at = len % 7, to = kMax + len % 5;
    Engine e(g, Copy(src.slice(at, at + len), dst.slice(to, to + len)));
    e.load(device);
    e.run();
    std::vector<unsigned char> got(kBytes);
    e.readTensor("dst", got.data(), got.data() + kBytes);
    std::vector<unsigned char> want = before;
    std::copy(from.begin() + at, from.begin() + at + len, want.begin() + to);
    ASSERT_EQ(got, want) << "a piece of " << len << " bytes";
  }
}

TEST(EngineThreads, ResultsDoNotDependOnTheThreadCount) {
  std::vector<std::vector<float>> results;
  for (const char *threads : {"1", "2", "3"}) {
    Device device = modelDevice(16);
    Graph g(device.getTarget());
    addTestCodelets(g);
    Tensor m = g.addVariable(FLOAT, {64, 33}, "m");
    mapTensorLinearly(g, m);
    g.setInitialValue(m, [] {
      std::vector<float> v(64 * 33);
      for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<float>((i * 7919) % 101) / 7.0f;
      return v;
    }());
    Tensor out = g.addVariable(FLOAT, {33}, "out");
    mapTensorLinearly(g, out, 1, 1);
    g.createHostRead("out", out);
    ComputeSet cs = g.addComputeSet("cols");
    for (unsigned c = 0; c < 33; ++c)
      g.setTileMapping(g.addVertex(cs, "SumVertex",
                                   {{"in", m.transpose()[c]}, {"out", out[c]}}),
                       c % 16);
    Engine e(g, Repeat(3, Execute(cs)), {{"engine.hostThreads", threads}});
    e.load(device);
    e.run();
    results.push_back(readFloats(e, "out", 33));
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
}

TEST(EngineReplication, EachReplicaHasItsOwnStreamsAndMemory) {
  Device device = modelDevice(4, 2);
  Graph g(device.getTarget(), replication_factor(2));
  EXPECT_EQ(g.getTarget().getNumIPUs(), 1u);
  addTestCodelets(g);
  Tensor x = g.addVariable(FLOAT, {4}, "x");
  g.setTileMapping(x, 0);
  DataStream in = g.addHostToDeviceFIFO("in", FLOAT, 4);
  g.createHostRead("x", x);
  ComputeSet cs = g.addComputeSet("inc");
  g.setTileMapping(g.addVertex(cs, "AddOneVertex", {{"x", x}}), 0);
  Engine e(g, Sequence{Copy(in, x), Execute(cs)});
  e.load(device);
  std::vector<float> a{1, 2, 3, 4}, b{10, 20, 30, 40};
  e.connectStream("in", 0, a.data(), a.data() + 4);
  e.connectStream("in", 1, b.data(), b.data() + 4);
  e.run();
  std::vector<float> r0(4), r1(4);
  e.readTensor("x", 0, r0.data(), r0.data() + 4);
  e.readTensor("x", 1, r1.data(), r1.data() + 4);
  EXPECT_EQ(r0, (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(r1, (std::vector<float>{11, 21, 31, 41}));
}

TEST(EngineMultiIpu, CopiesBetweenIpusAreCostedOnTheLinks) {
  Device device = modelDevice(4, 4);
  Graph g(device.getTarget());
  Tensor x = g.addVariable(FLOAT, {1024}, "x");
  Tensor y = g.addVariable(FLOAT, {1024}, "y");
  Tensor z = g.addVariable(FLOAT, {1024}, "z");
  g.setTileMapping(x, 0);  // IPU 0
  g.setTileMapping(y, 13); // IPU 3
  g.setTileMapping(z, 1);  // IPU 0
  g.setInitialValue(x, 3.0f);
  g.createHostRead("y", y);
  Engine e(g, {Copy(x, y), Copy(x, z)});
  e.load(device);
  e.run(0);
  EXPECT_EQ(readFloats(e, "y", 1024), std::vector<float>(1024, 3.0f));
  const auto across = e.getCycleCounts();
  e.run(1);
  const auto after = e.getCycleCounts();
  EXPECT_GT(across[3], 0u);
  EXPECT_GT(across[0], after[0] - across[0]); // the link copy costs more
}

TEST(EngineOptionsTest, UnknownOptionIsAnErrorWithAHint) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  try {
    Engine e(g, Sequence(), {{"autoReport.al", "true"}});
    FAIL();
  } catch (const OptionError &err) {
    EXPECT_THAT(err.what(), HasSubstr("autoReport.al"));
    EXPECT_THAT(err.what(), HasSubstr("did you mean \"autoReport.all\""));
  }
}

TEST(EngineLoad, DeviceMustMatchTheExecutable) {
  Device small = modelDevice(4);
  Device big = modelDevice(8);
  Graph g(small.getTarget());
  Engine e(g, Sequence());
  try {
    e.load(big);
    FAIL();
  } catch (const DeviceError &err) {
    EXPECT_THAT(err.what(), HasSubstr("4 tiles"));
    EXPECT_THAT(err.what(), HasSubstr("8 tiles"));
  }
  EXPECT_THROW(e.run(), DeviceError);
}

TEST(EngineReplication, CrossReplicaCopyRotatesValuesAroundTheReplicas) {
  Device device = modelDevice(4, 4);
  Graph g(device.getTarget(), replication_factor(4));
  Tensor x = g.addVariable(FLOAT, {3}, "x");
  g.setTileMapping(x, 2);
  DataStream in = g.addHostToDeviceFIFO("in", FLOAT, 3);
  g.createHostRead("x", x);
  // Replica r receives replica (r + 3) % 4's values: a rotation by one.
  Engine e(g,
           Sequence{Copy(in, x),
                    CrossReplicaCopy(x, x, {{0, 1}, {1, 2}, {2, 3}, {3, 0}})});
  e.load(device);
  std::vector<std::vector<float>> data(4);
  for (unsigned r = 0; r < 4; ++r) {
    data[r] = {float(r), float(10 * r), float(100 * r)};
    e.connectStream("in", r, data[r].data(), data[r].data() + 3);
  }
  e.run();
  for (unsigned r = 0; r < 4; ++r) {
    std::vector<float> got(3);
    e.readTensor("x", r, got.data(), got.data() + 3);
    EXPECT_EQ(got, data[(r + 3) % 4]) << r;
  }
  EXPECT_GT(e.getCycleCounts()[0], 0u);
}

TEST(EngineReplication, CrossReplicaCopyChecksItsReplicas) {
  Device device = modelDevice(4, 2);
  Graph g(device.getTarget(), replication_factor(2));
  Tensor x = g.addVariable(FLOAT, {3}, "x");
  g.setTileMapping(x, 0);
  EXPECT_THROW(CrossReplicaCopy(x, x, {{0, 1}, {1, 1}}), GraphError);
  EXPECT_THROW(compileGraph(g, {CrossReplicaCopy(x, x, {{0, 5}})}), GraphError);
}
