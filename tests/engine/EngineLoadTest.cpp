// Engine::load of an untrusted executable: vertex fields (addresses, sizes,
// span indices, state offsets) that a crafted file points outside their
// tables are a SerializationError, not a wild read or write. The files are
// written by the real writer, so their checksums are right and the decoder
// accepts them: only the engine, which knows each field's class, can tell.
#include "TestGraphs.hpp"

#include "tessera/compiler/Compiler.hpp"
#include "tessera/compiler/ExecutableFormat.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <sstream>

using namespace tessera;
using namespace tessera::program;
using tessera::test::addTestCodelets;
using tessera::test::modelDevice;
using ::testing::HasSubstr;

namespace {

// One vertex of each field form: a list of vectors (ConcatSumVertex), plain
// state and vectors (ScaleVertex).
Executable fieldForms() {
  Device device = modelDevice(4);
  Graph g(device.getTarget());
  addTestCodelets(g);
  Tensor m = g.addVariable(FLOAT, {3, 4}, "m");
  Tensor sums = g.addVariable(FLOAT, {3}, "sums");
  Tensor scaled = g.addVariable(FLOAT, {4}, "scaled");
  for (const Tensor &t : {m, sums, scaled})
    g.setTileMapping(t, 1);
  g.createHostWrite("m", m);
  g.createHostRead("sums", sums);
  ComputeSet cs = g.addComputeSet("forms");
  VertexRef list = g.addVertex(cs, "ConcatSumVertex");
  g.connect(list["parts"], {m[0], m[1], m[2]});
  g.connect(list["out"], sums);
  VertexRef scale =
      g.addVertex(cs, "ScaleVertex", {{"in", m[0]}, {"out", scaled}});
  g.setInitialValue(scale["scale"], 2.5f);
  g.setTileMapping(list, 1);
  g.setTileMapping(scale, 1);
  return compileGraph(g, {Execute(cs)});
}

// Through a file and back, checksums recomputed by the writer, as a crafted
// file would have them.
Executable throughFile(const Executable &exe) {
  std::stringstream file;
  exe.serialize(file);
  return Executable::deserialize(file);
}

// The message Engine::load gives for the executable `corrupt` makes of a
// good one (after checking that the decoder accepts it).
std::string loadError(const std::function<void(Executable &)> &corrupt) {
  Executable exe = fieldForms();
  corrupt(exe);
  Executable back = throughFile(exe);
  Device device = modelDevice(4);
  Engine e(std::move(back));
  try {
    e.load(device);
  } catch (const SerializationError &err) {
    return err.what();
  }
  return "loaded";
}

// An exchange step: four floats copied from tile 0 to tile 1.
Executable tileToTileCopy(const Device &device) {
  Graph g(device.getTarget());
  Tensor a = g.addVariable(FLOAT, {4}, "a");
  Tensor b = g.addVariable(FLOAT, {4}, "b");
  g.setTileMapping(a, 0);
  g.setTileMapping(b, 1);
  return compileGraph(g, {Copy(a, b)});
}

} // namespace

TEST(EngineLoad, IntactExecutableFromAFileLoadsAndRuns) {
  Executable back = throughFile(fieldForms());
  Device device = modelDevice(4);
  Engine e(std::move(back));
  e.load(device);
  std::vector<float> in{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, out(3);
  e.writeTensor("m", in.data(), in.data() + in.size());
  e.run();
  e.readTensor("sums", out.data(), out.data() + out.size());
  EXPECT_EQ(out, (std::vector<float>{10, 26, 42}));
}

TEST(EngineLoad, FieldAddressOutsideMemoryIsCorrupt) {
  const std::string msg = loadError([](Executable &e) {
    for (FieldValue &f : e.fields)
      f.addr += e.replicaBytes();
  });
  EXPECT_THAT(msg, HasSubstr("is corrupt: vertex"));
  EXPECT_THAT(msg, HasSubstr("but there are only"));
}

TEST(EngineLoad, VectorSizePastMemoryIsCorrupt) {
  const std::string msg = loadError([](Executable &e) {
    for (FieldValue &f : e.fields)
      f.size = 0x40000000;
  });
  EXPECT_THAT(msg, HasSubstr("is corrupt: vertex"));
}

TEST(EngineLoad, SpanIndexPastTheSpanTableIsCorrupt) {
  const std::string msg = loadError([](Executable &e) { e.spans.resize(1); });
  EXPECT_THAT(msg, HasSubstr("(ConcatSumVertex) field \"parts\" uses spans"));
}

TEST(EngineLoad, SpanOutsideMemoryIsCorrupt) {
  const std::string msg = loadError([](Executable &e) {
    ASSERT_FALSE(e.spans.empty());
    e.spans.back().addr = e.replicaBytes() - 4;
  });
  EXPECT_THAT(msg, HasSubstr("field \"parts\" element uses memory"));
}

TEST(EngineLoad, StateOffsetPastTheStateBytesIsCorrupt) {
  const std::string msg = loadError([](Executable &e) {
    ASSERT_FALSE(e.stateBytes.empty());
    e.stateBytes.clear();
  });
  EXPECT_THAT(msg, HasSubstr("(ScaleVertex) field \"scale\" uses state"));
}

TEST(EngineLoad, FieldsPastTheFieldTableAreCorrupt) {
  const std::string msg = loadError([](Executable &e) { e.fields.pop_back(); });
  EXPECT_THAT(msg, HasSubstr("has fields"));
}

// Codelets read fields through typed pointers: an address that is not a
// multiple of the element size would be a misaligned load.
TEST(EngineLoad, MisalignedFieldAddressIsCorrupt) {
  const std::string msg = loadError([](Executable &e) {
    for (const VertexInstance &v : e.vertices)
      if (e.vertexClasses[v.vertexClass].name == "ScaleVertex")
        e.fields[v.firstField].addr += 2;
  });
  EXPECT_THAT(msg, HasSubstr("(ScaleVertex) field"));
  EXPECT_THAT(msg, HasSubstr("not a multiple of its 4-byte element type"));
}

TEST(EngineLoad, MisalignedSpanElementIsCorrupt) {
  const std::string msg = loadError([](Executable &e) {
    ASSERT_FALSE(e.spans.empty());
    e.spans.front().addr += 1;
  });
  EXPECT_THAT(msg, HasSubstr("field \"parts\" element uses memory bytes from"));
  EXPECT_THAT(msg, HasSubstr("not a multiple of its 4-byte element type"));
}

TEST(EngineLoad, StateBytesNotAMultipleOfEightAreCorrupt) {
  const std::string msg =
      loadError([](Executable &e) { e.stateBytes.push_back(std::byte{0}); });
  EXPECT_THAT(msg, HasSubstr("bytes of vertex state are not a multiple of 8"));
}

// Replicas and loop counters size the engine's tables before anything runs:
// a file asking for billions of them fails to load instead of exhausting the
// host in Engine's constructor.
TEST(EngineLoad, HugeReplicaOrCounterCountsNeverReachTheEngine) {
  for (const auto &corrupt : std::vector<std::function<void(Executable &)>>{
           [](Executable &e) { e.replicationFactor = 0x80000000u; },
           [](Executable &e) { e.numCounters = 0xffffffffu; }}) {
    Executable exe = fieldForms();
    corrupt(exe);
    EXPECT_THROW(
        {
          Executable back = throughFile(exe);
          Engine e(std::move(back));
        },
        SerializationError);
  }
}

TEST(EngineLoad, AnEmptyCopyWithAHugeStrideLoads) {
  // A copy op of count 0 touches nothing, whatever its strides say, so the
  // decoder lets any stride through; the engine's chunk planner multiplied
  // (count - 1), wrapped to 2^32 - 1, by the stride: signed overflow, which
  // UBSan reports (found by the engine_load fuzz harness).
  Device device = modelDevice(4);
  Executable exe = tileToTileCopy(device);
  ASSERT_FALSE(exe.copyOps.empty());
  for (CopyOp &op : exe.copyOps) {
    op.count = 0;
    op.srcStride = op.dstStride = std::int64_t{1} << 32;
  }
  Engine e(throughFile(exe));
  EXPECT_NO_THROW(e.load(device));
}

TEST(EngineLoad, AStrideWhoseSpanOverflowsIsRefusedOrLoadsWithoutOverflow) {
  // count 59 at a stride near 2^62.5: the span overflows int64 (the engine
  // _load fuzz harness's second find in the chunk planner).
  Device device = modelDevice(4);
  Executable exe = tileToTileCopy(device);
  ASSERT_FALSE(exe.copyOps.empty());
  for (CopyOp &op : exe.copyOps) {
    op.count = 59;
    op.srcStride = std::int64_t{6701356245527298048};
  }
  try {
    Engine e(throughFile(exe));
    e.load(device);
  } catch (const SerializationError &) {
    // Refused by the decoder or the engine: what a crafted file deserves.
  }
}
