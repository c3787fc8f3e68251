// Infeeds and outfeeds around a device loop: every element reaches the
// device in order, outfeeds keep ALL or LAST, and can be read while the loop
// runs; mismatches and an exhausted dataset are clear errors.
#include "tessera/session/Feeds.hpp"

#include "tessera/device/IPUModel.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

using namespace tessera;
using namespace tessera::program;
using namespace tessera::session;
using data::Dataset;
using data::HostTensor;
using ::testing::HasSubstr;

namespace {

Device device() {
  IPUModel m;
  m.tilesPerIPU = 4;
  return m.createDevice();
}

// Each of `steps` iterations streams in x (float[3]) and y (int[1]) and
// streams them straight out as "xo" and "yo".
Engine echoLoop(unsigned steps, std::size_t xSize = 3) {
  Graph g(device().getTarget());
  Tensor x = g.addVariable(FLOAT, {xSize}, "x");
  Tensor y = g.addVariable(INT, {1}, "y");
  g.setTileMapping(x, 0);
  g.setTileMapping(y, 1);
  DataStream xi = g.addHostToDeviceFIFO("x", FLOAT, xSize);
  DataStream yi = g.addHostToDeviceFIFO("y", INT, 1);
  DataStream xo = g.addDeviceToHostFIFO("xo", FLOAT, xSize);
  DataStream yo = g.addDeviceToHostFIFO("yo", INT, 1);
  Sequence body{Copy(xi, x), Copy(yi, y), Copy(x, xo), Copy(y, yo)};
  return Engine(g, Repeat(steps, body));
}

// Elements i = 0..n-1: x = {i, i + 0.5, -i}, y = {10 i}.
Dataset numbers(std::size_t n) {
  std::vector<float> xs;
  std::vector<int> ys;
  for (std::size_t i = 0; i < n; ++i) {
    xs.insert(xs.end(), {float(i), float(i) + 0.5f, -float(i)});
    ys.push_back(10 * int(i));
  }
  return Dataset::fromTensors({HostTensor::fromValues<float>({n, 3}, xs),
                               HostTensor::fromValues<int>({n, 1}, ys)});
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(Feeds, EveryElementReachesTheDeviceAndComesBackInOrder) {
  Device d = device();
  Engine e = echoLoop(4);
  e.load(d);
  Infeed in(numbers(8), 2);
  in.connect(e, {"x", "y"});
  Outfeed out;
  out.connect(e, {"xo", "yo"});
  e.run();
  e.run();
  EXPECT_EQ(in.elementsTaken(), 8u);
  const std::vector<data::Element> all = out.dequeueAll();
  ASSERT_EQ(all.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(all[i][0].values<float>()[1], float(i) + 0.5f);
    EXPECT_EQ(all[i][1].values<int>()[0], 10 * int(i));
  }
}

TEST(Feeds, LastModeKeepsOnlyTheLatestStep) {
  Device d = device();
  Engine e = echoLoop(5);
  e.load(d);
  Infeed in(numbers(5));
  in.connect(e, {"x", "y"});
  Outfeed out(OutfeedMode::LAST);
  out.connect(e, {"xo", "yo"});
  e.run();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out.dequeue()->components[1].values<int>()[0], 40);
  EXPECT_FALSE(out.dequeue().has_value());
}

TEST(Feeds, OutfeedIsReadWhileTheLoopRuns) {
  Device d = device();
  Engine e = echoLoop(200);
  e.load(d);
  Infeed in(numbers(200).repeat());
  in.connect(e, {"x", "y"});
  Outfeed out;
  out.connect(e, {"xo", "yo"});
  std::thread loop([&] { e.run(); });
  std::size_t seen = 0;
  while (seen < 200) {
    std::optional<data::Element> v = out.dequeue(/*wait=*/true);
    EXPECT_EQ(v->components[1].values<int>()[0], 10 * int(seen));
    ++seen;
  }
  loop.join();
  EXPECT_EQ(seen, 200u);
}

TEST(Feeds, ExhaustedDatasetSaysHowManyElementsItHad) {
  Device d = device();
  Engine e = echoLoop(4);
  e.load(d);
  Infeed in(numbers(3));
  in.connect(e, {"x", "y"});
  Outfeed out;
  out.connect(e, {"xo", "yo"});
  EXPECT_THAT(errorOf([&] { e.run(); }), HasSubstr("ran out after 3"));
}

TEST(Feeds, MismatchedStreamsAreNamed) {
  Device d = device();
  Engine e = echoLoop(1, 4);
  e.load(d);
  Infeed in(numbers(2));
  EXPECT_THAT(errorOf([&] {
                in.connect(e, {"x", "y"});
              }),
              HasSubstr("stream \"x\" takes 4 elements of float"));
  EXPECT_THAT(errorOf([&] { in.connect(e, {"x"}); }),
              HasSubstr("2 components but 1 streams"));
  EXPECT_THAT(errorOf([&] {
                in.connect(e, {"nope", "y"});
              }),
              HasSubstr("no stream \"nope\""));
  EXPECT_THAT(errorOf([&] {
                in.connect(e, {"xo", "y"});
              }),
              HasSubstr("device-to-host"));
  Infeed ragged(numbers(5).batch(2));
  EXPECT_THAT(errorOf([&] {
                ragged.connect(e, {"x", "y"});
              }),
              HasSubstr("dropRemainder"));
}
