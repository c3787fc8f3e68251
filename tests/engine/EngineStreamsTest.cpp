// Host interfaces of the engine: host reads and writes, FIFOs over circular
// buffers, pointers and callbacks, remote buffers, and their errors.
#include "TestGraphs.hpp"

#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

using namespace tessera;
using namespace tessera::program;
using tessera::test::modelDevice;
using ::testing::HasSubstr;

TEST(EngineHostAccess, WriteCopyReadRoundTrip) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor a = g.addVariable(FLOAT, {2, 3}, "a");
  Tensor b = g.addVariable(FLOAT, {3, 2}, "b");
  mapTensorLinearly(g, a, 1, 1);
  g.setTileMapping(b, 3);
  g.createHostWrite("a", a);
  g.createHostRead("b", b);
  Engine e(g, Copy(a.transpose(), b));
  e.load(device);
  std::vector<float> in{1, 2, 3, 4, 5, 6}, out(6);
  e.writeTensor("a", in.data(), in.data() + 6);
  e.run();
  e.readTensor("b", out.data(), out.data() + 6);
  EXPECT_EQ(out, (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(EngineHostAccess, WrongBufferSizeSaysBothSizes) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor a = g.addVariable(FLOAT, {4}, "a");
  g.setTileMapping(a, 0);
  g.createHostWrite("a", a);
  Engine e(g, Sequence());
  e.load(device);
  std::vector<float> in(3);
  try {
    e.writeTensor("a", in.data(), in.data() + 3);
    FAIL();
  } catch (const StreamError &err) {
    EXPECT_THAT(err.what(), HasSubstr("12 bytes"));
    EXPECT_THAT(err.what(), HasSubstr("16 bytes"));
  }
  EXPECT_THROW(e.writeTensor("nope", in.data(), in.data() + 3), StreamError);
}

TEST(EngineStreams, CircularBufferWrapsAcrossRuns) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor v = g.addVariable(FLOAT, {10}, "v");
  g.setTileMapping(v, 1);
  DataStream in = g.addHostToDeviceFIFO("in", FLOAT, 10);
  g.createHostRead("v", v);
  Engine e(g, Sequence{Copy(in, v)});
  e.load(device);
  std::vector<float> host(30);
  std::iota(host.begin(), host.end(), 0.0f);
  e.connectStream("in", host.data(), host.data() + 30);
  std::vector<float> out(10);
  for (float expectFirst : {0.0f, 10.0f, 20.0f, 0.0f}) {
    e.run();
    e.readTensor("v", out.data(), out.data() + 10);
    EXPECT_EQ(out[0], expectFirst);
    EXPECT_EQ(out[9], expectFirst + 9);
  }
}

TEST(EngineStreams, DeviceToHostCallbackAndPointer) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor v = g.addVariable(INT, {3}, "v");
  g.setTileMapping(v, 2);
  g.setInitialValue(v, std::vector<int>{7, 8, 9});
  DataStream out = g.addDeviceToHostFIFO("out", INT, 3);
  DataStream out2 = g.addDeviceToHostFIFO("out2", INT, 3);
  Engine e(g, Sequence{Copy(v.reverse(0), out), Copy(v, out2)});
  e.load(device);
  std::vector<int> got;
  e.connectStreamToCallback("out", [&](void *p) {
    const int *x = static_cast<const int *>(p);
    got.assign(x, x + 3);
  });
  std::vector<int> direct(3);
  e.connectStream("out2", direct.data());
  e.run();
  EXPECT_EQ(got, (std::vector<int>{9, 8, 7}));
  EXPECT_EQ(direct, (std::vector<int>{7, 8, 9}));
}

// A transfer of 1 MiB over many tiles is shared out between the host
// threads in pieces: every element still lands in its place, both ways,
// through a buffer and through a callback.
TEST(EngineStreams, LargeTransfersSharedBetweenThreadsArriveWhole) {
  constexpr std::size_t kN = 256 * 1024;
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor v = g.addVariable(FLOAT, {kN}, "v");
  mapTensorLinearly(g, v, 1, 1);
  DataStream in = g.addHostToDeviceFIFO("in", FLOAT, kN);
  DataStream out = g.addDeviceToHostFIFO("out", FLOAT, kN);
  DataStream back = g.addDeviceToHostFIFO("back", FLOAT, kN);
  Engine e(g, Sequence{Copy(in, v), Copy(v.reverse(0), out), Copy(v, back)},
           {{"engine.hostThreads", "2"}});
  e.load(device);
  std::vector<float> host(kN), reversed(kN), same(kN);
  std::iota(host.begin(), host.end(), 0.0f);
  e.connectStream("in", host.data(), host.data() + kN);
  e.connectStream("out", reversed.data(), reversed.data() + kN);
  std::vector<float> got;
  e.connectStreamToCallback("back", [&](void *p) {
    const float *x = static_cast<const float *>(p);
    got.assign(x, x + kN);
  });
  e.run();
  EXPECT_EQ(got, host);
  std::reverse(reversed.begin(), reversed.end());
  EXPECT_EQ(reversed, host);
}

namespace {
class Counter : public LegacyStreamCallback {
public:
  explicit Counter(int *next) : next_(next) {}
  void invoke(void *p) override {
    float *f = static_cast<float *>(p);
    f[0] = static_cast<float>((*next_)++);
    f[1] = 100;
  }

private:
  int *next_;
};
} // namespace

TEST(EngineStreams, StreamCallbackObjectFillsEachTransfer) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor v = g.addVariable(FLOAT, {3, 2}, "v");
  g.setTileMapping(v, 0);
  DataStream in = g.addHostToDeviceFIFO("in", FLOAT, 2);
  g.createHostRead("v", v);
  Engine e(g, Sequence{Copy(in, v[0]), Copy(in, v[1]), Copy(in, v[2])});
  e.load(device);
  int next = 1;
  e.connectStream("in", std::make_unique<Counter>(&next));
  e.run();
  std::vector<float> out(6);
  e.readTensor("v", out.data(), out.data() + 6);
  EXPECT_EQ(out, (std::vector<float>{1, 100, 2, 100, 3, 100}));
}

TEST(EngineStreams, UnconnectedStreamIsAnErrorBeforeRunning) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor v = g.addVariable(FLOAT, {4}, "v");
  g.setTileMapping(v, 0);
  DataStream in = g.addHostToDeviceFIFO("images", FLOAT, 4);
  Engine e(g, Sequence{Copy(in, v)});
  e.load(device);
  try {
    e.run();
    FAIL();
  } catch (const StreamError &err) {
    EXPECT_THAT(err.what(), HasSubstr("\"images\" is not connected"));
    EXPECT_THAT(err.what(), HasSubstr("connectStream"));
  }
}

TEST(EngineStreams, BufferMustHoldWholeTransfers) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor v = g.addVariable(FLOAT, {4}, "v");
  g.setTileMapping(v, 0);
  DataStream in = g.addHostToDeviceFIFO("in", FLOAT, 4);
  Engine e(g, Sequence{Copy(in, v)});
  e.load(device);
  std::vector<float> host(6);
  try {
    e.connectStream("in", host.data(), host.data() + 6);
    FAIL();
  } catch (const StreamError &err) {
    EXPECT_THAT(err.what(), HasSubstr("24 bytes"));
    EXPECT_THAT(err.what(), HasSubstr("16 bytes"));
  }
}

TEST(EngineRemoteBuffers, CopiesInAndOutByOffset) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor v = g.addVariable(FLOAT, {2}, "v");
  Tensor slot = g.addVariable(UNSIGNED_INT, {}, "slot");
  g.setTileMapping(v, 1);
  g.setTileMapping(slot, 1);
  g.createHostWrite("slot", slot);
  g.createHostRead("v", v);
  RemoteBuffer rb = g.addRemoteBuffer("store", FLOAT, 2, 3);
  Tensor ones = g.addConstant<float>(FLOAT, {2}, 1.0f);
  g.setTileMapping(ones, 1);
  Engine e(g, {Sequence{Copy(rb, v, slot)},
               Sequence{Copy(ones, v), Copy(v, rb, slot)}});
  e.load(device);
  std::vector<float> data{5, 6};
  e.copyToRemoteBuffer(data.data(), "store", 2);
  unsigned two = 2, zero = 0;
  e.writeTensor("slot", &two, &two + 1);
  e.run(0);
  std::vector<float> out(2);
  e.readTensor("v", out.data(), out.data() + 2);
  EXPECT_EQ(out, data);
  e.writeTensor("slot", &zero, &zero + 1);
  e.run(1);
  e.copyFromRemoteBuffer("store", out.data(), 0);
  EXPECT_EQ(out, (std::vector<float>{1, 1}));
  unsigned bad = 3;
  e.writeTensor("slot", &bad, &bad + 1);
  EXPECT_THROW(e.run(0), RuntimeError);
}

TEST(EngineHostAccess, EmptyTensorsAndEmptyInitialValues) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor empty = g.addVariable(FLOAT, {0}, "empty");
  g.setInitialValue(empty, std::vector<float>{});
  g.createHostWrite("empty", empty);
  g.createHostRead("empty-read", empty);
  Engine e(g, Sequence());
  e.load(device);
  EXPECT_NO_THROW(e.writeTensor("empty", nullptr, nullptr));
  EXPECT_NO_THROW(e.readTensor("empty-read", nullptr, nullptr));
}
