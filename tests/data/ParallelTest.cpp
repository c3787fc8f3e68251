// Parallel map and prefetch: input order whatever the workers' timing,
// exceptions at their place in the sequence, bounded buffering, and
// stopping cleanly when the iterator goes away mid-stream.
#include "DataTestUtil.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <stdexcept>
#include <thread>

using namespace tessera;
using namespace tessera::data;
using namespace tessera::data::test;
using ::testing::HasSubstr;

namespace {

std::vector<int> iota(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// Sleeps longer for elements whose value is small modulo 7, so workers
// finish out of order.
Element jitter(Element e) {
  const int v = e[0].values<int>()[0];
  std::this_thread::sleep_for(std::chrono::microseconds(((v * 5) % 7) * 100));
  e[0].values<int>()[0] = v * 2;
  return e;
}

} // namespace

TEST(ParallelMap, KeepsInputOrderWhateverTheWorkersTiming) {
  std::vector<int> expected = iota(200);
  for (int &v : expected)
    v *= 2;
  for (std::size_t workers : {2u, 3u, 8u})
    EXPECT_EQ(drainInts(range(200).map(jitter, workers)), expected)
        << workers << " workers";
  EXPECT_EQ(drainInts(range(200).map(jitter, autotune)), expected);
}

TEST(ParallelMap, RunsOnSeveralThreadsAtOnce) {
  std::atomic<int> running{0}, most{0};
  auto slow = [&](Element e) {
    const int now = ++running;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    --running;
    return e;
  };
  EXPECT_EQ(countElements(range(40).map(slow, 4)), 40u);
  EXPECT_GT(most.load(), 1);
  EXPECT_LE(most.load(), 4);
}

TEST(ParallelMap, AnExceptionReachesNextAtItsElement) {
  auto failAt7 = [](Element e) {
    if (e[0].values<int>()[0] == 7)
      throw std::runtime_error("bad element 7");
    return e;
  };
  Iterator it = range(100).map(failAt7, 4).iterator();
  for (int i = 0; i < 7; ++i) {
    auto e = it.next();
    ASSERT_TRUE(e);
    EXPECT_EQ((*e)[0].item<int>(), i);
  }
  try {
    it.next();
    FAIL();
  } catch (const std::runtime_error &e) {
    EXPECT_STREQ(e.what(), "bad element 7");
  }
  EXPECT_THROW(it.next(), std::runtime_error);
}

TEST(ParallelMap, AWrongOutputTypeIsATypeError) {
  auto toFloat = [](Element e) { return Element{e[0].cast(FLOAT)}; };
  try {
    drainInts(range(10).map(toFloat, 2));
    FAIL();
  } catch (const TypeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("for element 0: component 0 is float []"));
  }
}

TEST(Prefetch, YieldsTheSameSequenceAsWithout) {
  Dataset base = range(1000).shuffle(100, 5).batch(7);
  Dataset fresh = range(1000).shuffle(100, 5).batch(7).prefetch(3);
  EXPECT_EQ(drainInts(fresh), drainInts(base));
  EXPECT_EQ(drainInts(range(10).prefetch(1)), iota(10));
  EXPECT_EQ(drainInts(range(10).prefetch()), iota(10));
  EXPECT_EQ(drainInts(range(0).prefetch(2)), std::vector<int>{});
  EXPECT_EQ(drainInts(range(5).prefetch(2).repeat(3).prefetch(4)).size(), 15u);
  EXPECT_THROW(range(5).prefetch(0), ShapeError);
}

TEST(Prefetch, HoldsAtMostDepthElementsAhead) {
  std::atomic<int> produced{0};
  auto factory = [&] {
    return [&, i = 0]() mutable -> std::optional<Element> {
      ++produced;
      return Element{HostTensor::scalar<int>(i++)};
    };
  };
  Dataset ds = Dataset::fromGenerator(factory, {{"", INT, {}}}).prefetch(3);
  Iterator it = ds.iterator();
  ASSERT_TRUE(it.next());
  // The worker fills the buffer without being asked...
  for (int i = 0; i < 1000 && produced.load() < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_GE(produced.load(), 3);
  // ...but never runs more than three elements ahead of the consumer.
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_LE(produced.load(), 4);
  for (int i = 1; i <= 20; ++i) {
    ASSERT_EQ(it.next()->components[0].item<int>(), i);
    EXPECT_LE(produced.load(), i + 4);
  }
}

TEST(Prefetch, AnInputExceptionReachesTheConsumerInOrder) {
  auto factory = [] {
    return [i = 0]() mutable -> std::optional<Element> {
      if (i == 4)
        throw std::runtime_error("generator broke at 4");
      return Element{HostTensor::scalar<int>(i++)};
    };
  };
  Iterator it =
      Dataset::fromGenerator(factory, {{"", INT, {}}}).prefetch(8).iterator();
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(it.next()->components[0].item<int>(), i);
  EXPECT_THROW(it.next(), std::runtime_error);
  EXPECT_THROW(it.next(), std::runtime_error);

  // A wrong dtype from a generator behind a prefetch is still a TypeError.
  auto wrong = [] {
    return []() -> std::optional<Element> {
      return Element{HostTensor::scalar<float>(1)};
    };
  };
  EXPECT_THROW(Dataset::fromGenerator(wrong, {{"", INT, {}}})
                   .prefetch(2)
                   .iterator()
                   .next(),
               TypeError);
}

TEST(Prefetch, DestroyingTheIteratorMidStreamStopsTheWorkers) {
  std::atomic<int> produced{0};
  auto factory = [&] {
    return [&, i = 0]() mutable -> std::optional<Element> {
      ++produced;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      return Element{HostTensor::scalar<int>(i++)};
    };
  };
  Dataset ds = Dataset::fromGenerator(factory, {{"", INT, {}}})
                   .map([](Element e) { return e; }, 3)
                   .prefetch(4)
                   .repeat();
  for (int round = 0; round < 5; ++round) {
    Iterator it = ds.iterator();
    for (int i = 0; i < 10; ++i)
      ASSERT_TRUE(it.next());
  } // each iterator joins its threads here; a leak or hang fails the test
  const int after = produced.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(produced.load(), after);
}

TEST(Prefetch, ManyIteratorsAtOnceAreIndependent) {
  Dataset ds = range(300).map(jitter, 2).prefetch(2);
  std::vector<int> expected = iota(300);
  for (int &v : expected)
    v *= 2;
  std::vector<std::vector<int>> results(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < results.size(); ++t)
    threads.emplace_back([&, t] { results[t] = drainInts(ds); });
  for (std::thread &t : threads)
    t.join();
  for (const std::vector<int> &r : results)
    EXPECT_EQ(r, expected);
}
