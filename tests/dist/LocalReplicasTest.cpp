// Engine::setLocalReplicas without MPI: two engines in threads, each
// running 2 of 4 replicas and joined by an in-process ReplicaExchange,
// give every replica the bits one engine running all 4 gives, for
// allReduce, reduceScatter and allGather (values chosen so that the order
// of a float sum shows).
#include "tessera/device/IPUModel.hpp"
#include "tessera/engine/Engine.hpp"
#include "tessera/ops/Codelets.hpp"
#include "tessera/ops/Collectives.hpp"
#include "tessera/support/Error.hpp"

#include <gtest/gtest.h>

#include <barrier>
#include <cstring>
#include <thread>

using namespace tessera;

namespace {

constexpr unsigned kReplicas = 4;
constexpr std::size_t kN = 10;

// allGather between threads: each posts its bytes, all copy everyone's.
class ThreadExchange : public ReplicaExchange {
public:
  struct Shared {
    explicit Shared(unsigned n) : sync(n), posted(n) {}
    std::barrier<> sync;
    std::vector<const std::byte *> posted;
  };
  ThreadExchange(std::shared_ptr<Shared> s, unsigned me)
      : s_(std::move(s)), me_(me) {}
  void allGather(const void *send, const std::vector<std::size_t> &bytes,
                 void *recv) override {
    s_->posted[me_] = static_cast<const std::byte *>(send);
    s_->sync.arrive_and_wait();
    for (std::size_t i = 0, at = 0; i < bytes.size(); at += bytes[i++])
      std::memcpy(static_cast<std::byte *>(recv) + at, s_->posted[i], bytes[i]);
    s_->sync.arrive_and_wait(); // nobody reposts before all have copied
  }

private:
  std::shared_ptr<Shared> s_;
  unsigned me_;
};

struct Built {
  Device device;
  std::unique_ptr<Engine> engine;
};

Built build(const OptionFlags &figures = {}) {
  IPUModel model;
  model.tilesPerIPU = 4;
  model.numIPUs = kReplicas;
  Built b{model.createDevice(figures), nullptr};
  Graph g(b.device.getTarget(), replication_factor(kReplicas));
  ops::addCodelets(g);
  Tensor x = g.addVariable(FLOAT, {kN}, "x");
  mapTensorLinearly(g, x);
  program::Sequence p;
  Tensor sum = ops::allReduce(g, x, ops::CollectiveOperator::ADD, p);
  Tensor part = ops::reduceScatter(g, x, ops::CollectiveOperator::ADD, p);
  Tensor all = ops::allGather(g, x, p);
  g.createHostWrite("x", x);
  g.createHostRead("sum", sum);
  g.createHostRead("part", part);
  g.createHostRead("all", all);
  b.engine = std::make_unique<Engine>(g, p);
  b.engine->load(b.device);
  return b;
}

// Replica r's input: large and small values, so the sum's order matters.
std::vector<float> input(unsigned r) {
  std::vector<float> v(kN);
  for (std::size_t i = 0; i < kN; ++i)
    v[i] = (r % 2 ? 1e8f : 1.0f) * float(i + 1) * (r == 2 ? -1.0f : 1.0f) +
           0.1f * float(r);
  return v;
}

// Each local replica's outputs, concatenated.
std::vector<float> outputs(Engine &e, unsigned r) {
  std::vector<float> out;
  for (const auto &[name, n] : std::vector<std::pair<std::string, std::size_t>>{
           {"sum", kN},
           {"part", (kN + kReplicas - 1) / kReplicas},
           {"all", kN * kReplicas}}) {
    std::vector<float> v(n);
    e.readTensor(name, r, v.data(), v.data() + n);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

void runReplicas(Engine &e) {
  const auto [first, count] = e.getLocalReplicas();
  for (unsigned r = first; r < first + count; ++r) {
    const std::vector<float> v = input(r);
    e.writeTensor("x", r, v.data(), v.data() + kN);
  }
  e.run(0);
}

// Runs two engines of two replicas each in two threads.
void runInHalves(Built (&halves)[2]) {
  auto shared = std::make_shared<ThreadExchange::Shared>(2);
  for (unsigned i = 0; i < 2; ++i)
    halves[i].engine->setLocalReplicas(
        2 * i, 2, std::make_shared<ThreadExchange>(shared, i));
  std::thread other([&] { runReplicas(*halves[1].engine); });
  runReplicas(*halves[0].engine);
  other.join();
}

} // namespace

TEST(LocalReplicas, TwoEnginesOfTwoReplicasMatchOneOfFourBitForBit) {
  Built whole = build();
  runReplicas(*whole.engine);

  Built halves[2] = {build(), build()};
  runInHalves(halves);

  for (unsigned r = 0; r < kReplicas; ++r) {
    const std::vector<float> want = outputs(*whole.engine, r);
    const std::vector<float> got = outputs(*halves[r / 2].engine, r);
    ASSERT_EQ(want.size(), got.size());
    EXPECT_EQ(0,
              std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
        << "replica " << r;
  }
  EXPECT_EQ(halves[1].engine->getLocalReplicas(),
            (std::pair<unsigned, unsigned>{2, 2}));
  // Only the halves pay for GW-Link traffic.
  EXPECT_GT(halves[0].engine->getExecutionCounts().gatewayCycles, 0u);
  EXPECT_EQ(whole.engine->getExecutionCounts().gatewayCycles, 0u);
}

TEST(LocalReplicas, BlocksThatDoNotSplitTheReplicasAreErrors) {
  Built b = build();
  auto exchange = std::make_shared<ThreadExchange>(
      std::make_shared<ThreadExchange::Shared>(1), 0);
  EXPECT_THROW(b.engine->setLocalReplicas(0, 3, exchange), StreamError);
  EXPECT_THROW(b.engine->setLocalReplicas(1, 2, exchange), StreamError);
  EXPECT_THROW(b.engine->setLocalReplicas(0, 2, nullptr), StreamError);
  EXPECT_NO_THROW(b.engine->setLocalReplicas(0, 4, nullptr));
}

// The GW-Link figures reach the cycles the engine charges for the bytes
// that leave each half: a slower link or a longer fixed cost, more cycles.
TEST(LocalReplicas, GatewayCyclesFollowTheGwLinkFigures) {
  const auto gatewayCycles = [](const OptionFlags &figures) {
    Built halves[2] = {build(figures), build(figures)};
    runInHalves(halves);
    return halves[0].engine->getExecutionCounts().gatewayCycles;
  };
  const std::uint64_t preset = gatewayCycles({});
  EXPECT_GT(gatewayCycles({{"gwLinkFixedCycles", "100000"}}), preset);
  EXPECT_GT(gatewayCycles({{"gwLinkBandwidth", "1e6"}}), preset);
}
