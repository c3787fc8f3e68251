#include "tessera/support/ThreadPool.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <stdexcept>
#include <thread>

#include <pthread.h>

using namespace tessera;

namespace {

// A sum split into numTasks static chunks, each chunk's partial kept by
// index: the result must not depend on the pool size.
std::vector<double> chunkSums(ThreadPool &pool, const std::vector<double> &v,
                              std::size_t numTasks) {
  std::vector<double> partial(numTasks, 0.0);
  pool.parallelFor(numTasks, [&](std::size_t task, unsigned) {
    std::size_t begin = v.size() * task / numTasks;
    std::size_t end = v.size() * (task + 1) / numTasks;
    double s = 0;
    for (std::size_t i = begin; i < end; ++i)
      s += v[i];
    partial[task] = s;
  });
  return partial;
}

} // namespace

TEST(ThreadPool, SizeCountsTheCallerAndZeroMeansHardwareThreads) {
  EXPECT_EQ(ThreadPool(1).size(), 1u);
  EXPECT_EQ(ThreadPool(3).size(), 3u);
  EXPECT_GE(ThreadPool(0).size(), 1u);
}

TEST(ThreadPool, RunsEveryTaskExactlyOnceWithValidWorkerIndices) {
  for (unsigned threads : {1u, 2u, 3u, 5u}) {
    ThreadPool pool(threads);
    for (std::size_t numTasks : {0u, 1u, 2u, 7u, 1000u}) {
      std::vector<std::atomic<int>> runs(numTasks);
      std::atomic<bool> badWorker{false};
      pool.parallelFor(numTasks, [&](std::size_t task, unsigned worker) {
        runs[task].fetch_add(1);
        if (worker >= pool.size())
          badWorker = true;
      });
      for (std::size_t t = 0; t < numTasks; ++t)
        EXPECT_EQ(runs[t].load(), 1) << threads << " threads, task " << t;
      EXPECT_FALSE(badWorker);
    }
  }
}

TEST(ThreadPool, ResultsAreTheSameForAnyThreadCount) {
  std::vector<double> v(100003);
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = 1.0 / double(i + 1);
  ThreadPool one(1);
  const auto expected = chunkSums(one, v, 16);
  for (unsigned threads : {2u, 3u, 4u, 8u}) {
    ThreadPool pool(threads);
    EXPECT_EQ(chunkSums(pool, v, 16), expected) << threads << " threads";
  }
  double total = std::accumulate(expected.begin(), expected.end(), 0.0);
  EXPECT_NEAR(total, 12.0902, 0.001); // harmonic number H(100003)
}

// The engine's task k of a step works on the k-th part of the simulated
// memory: when each worker starts on its own block of tasks, a part stays in
// the cache of one core from step to step. With one shared task counter the
// workers took tasks in arrival order (worker 1's first task was 1 here), so
// every part moved between the cores, which costs most where they are far
// apart. Every task waits until each worker has started one, so no worker
// can finish its block and take from another's before all have begun.
TEST(ThreadPool, EachWorkerStartsOnItsOwnBlockOfConsecutiveTasks) {
  for (unsigned threads : {2u, 3u}) {
    ThreadPool pool(threads);
    const std::size_t numTasks = 4 * threads + 1;
    std::vector<std::atomic<std::size_t>> first(threads);
    for (auto &f : first)
      f = numTasks;
    std::atomic<unsigned> started{0};
    pool.parallelFor(numTasks, [&](std::size_t task, unsigned worker) {
      std::size_t none = numTasks;
      if (first[worker].compare_exchange_strong(none, task))
        ++started;
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (started.load() < threads &&
             std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
    });
    for (unsigned w = 0; w < threads; ++w)
      EXPECT_EQ(first[w].load(), numTasks * w / threads)
          << threads << " threads, worker " << w;
  }
}

// A worker that runs out of its own tasks takes the others' last ones,
// leaving each owner the front of its block, so a slow worker's part of
// the data is still mostly its own.
TEST(ThreadPool, AWorkerWithNoTasksLeftTakesTheLastOfAnotherBlock) {
  ThreadPool pool(2);
  std::vector<std::atomic<unsigned>> ranBy(8);
  std::atomic<int> done{0};
  std::atomic<bool> release{false};
  const auto waitFor = [](const auto &ready) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!ready() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
  };
  pool.parallelFor(8, [&](std::size_t task, unsigned worker) {
    ranBy[task] = worker;
    // Worker 0 holds its first task until worker 1, done with its own
    // block, has taken one of worker 0's; that one then waits until
    // worker 0 has run the rest of its block.
    if (task == 0)
      waitFor([&] { return release.load(); });
    if (task == 3) {
      release = true;
      waitFor([&] { return done.load() == 3; });
    }
    if (task <= 2)
      ++done;
  });
  for (std::size_t t = 0; t < 8; ++t)
    EXPECT_EQ(ranBy[t].load(), t < 3 ? 0u : 1u) << "task " << t;
}

TEST(ThreadPool, ManyQuickSuccessiveCallsStayCorrect) {
  ThreadPool pool(3, std::chrono::microseconds(20));
  std::vector<std::uint64_t> out(6);
  std::uint64_t expected = 0;
  for (int call = 0; call < 20000; ++call) {
    pool.parallelFor(out.size(),
                     [&](std::size_t task, unsigned) { out[task] += task; });
    expected += 0 + 1 + 2 + 3 + 4 + 5;
  }
  EXPECT_EQ(std::accumulate(out.begin(), out.end(), std::uint64_t{0}),
            expected);
}

TEST(ThreadPool, WorkersThatFellAsleepWakeForTheNextCall) {
  ThreadPool pool(3, std::chrono::microseconds(1));
  for (int round = 0; round < 5; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::atomic<int> sum{0};
    pool.parallelFor(
        64, [&](std::size_t task, unsigned) { sum += static_cast<int>(task); });
    EXPECT_EQ(sum.load(), 64 * 63 / 2);
  }
}

TEST(ThreadPool, RethrowsTheExceptionOfTheLowestFailingTask) {
  for (unsigned threads : {1u, 2u, 4u}) {
    ThreadPool pool(threads);
    std::atomic<int> ran{0};
    try {
      pool.parallelFor(100, [&](std::size_t task, unsigned) {
        ++ran;
        if (task == 17 || task == 60)
          throw std::runtime_error("task " + std::to_string(task));
      });
      FAIL() << "expected an exception";
    } catch (const std::runtime_error &e) {
      EXPECT_STREQ(e.what(), "task 17");
    }
    // Tasks that did not throw still ran; the pool stays usable.
    std::atomic<int> after{0};
    pool.parallelFor(10, [&](std::size_t, unsigned) { ++after; });
    EXPECT_EQ(after.load(), 10);
  }
}

TEST(ThreadPool, NestedCallsRunInlineOnTheCallingWorker) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(8 * 8);
  std::atomic<bool> mismatch{false};
  pool.parallelFor(8, [&](std::size_t outer, unsigned worker) {
    pool.parallelFor(8, [&](std::size_t inner, unsigned innerWorker) {
      if (innerWorker != worker)
        mismatch = true;
      hits[outer * 8 + inner]++;
    });
  });
  EXPECT_FALSE(mismatch);
  for (auto &h : hits)
    EXPECT_EQ(h.load(), 1);
}

TEST(ThreadPool, CallsFromSeveralThreadsAreSerialisedCorrectly) {
  ThreadPool pool(3);
  std::atomic<std::uint64_t> total{0};
  auto caller = [&] {
    for (int i = 0; i < 500; ++i)
      pool.parallelFor(10, [&](std::size_t task, unsigned) { total += task; });
  };
  std::thread a(caller), b(caller);
  a.join();
  b.join();
  EXPECT_EQ(total.load(), 2u * 500u * 45u);
}

TEST(ThreadPool, AcceptsStdFunctionAndConstCallables) {
  ThreadPool pool(2);
  std::atomic<int> n{0};
  const std::function<void(std::size_t, unsigned)> f = [&](std::size_t,
                                                           unsigned) { ++n; };
  pool.parallelFor(5, f);
  const auto lambda = [&](std::size_t, unsigned) { ++n; };
  pool.parallelFor(5, lambda);
  EXPECT_EQ(n.load(), 10);
}

TEST(ThreadPool, ARefusedThreadIsARuntimeErrorSayingWhatToLower) {
  // Threads whose stacks cannot fit in the address space: the system
  // refuses them as it does under a thread or memory limit.
  pthread_attr_t saved, huge;
  ASSERT_EQ(pthread_getattr_default_np(&saved), 0);
  pthread_attr_init(&huge);
  ASSERT_EQ(pthread_attr_setstacksize(&huge, std::size_t(1) << 47), 0);
  ASSERT_EQ(pthread_setattr_default_np(&huge), 0);
  std::string what;
  try {
    ThreadPool pool(4);
  } catch (const RuntimeError &e) {
    what = e.what();
  } catch (...) {
    pthread_setattr_default_np(&saved);
    throw;
  }
  pthread_setattr_default_np(&saved);
  pthread_attr_destroy(&huge);
  pthread_attr_destroy(&saved);
  EXPECT_THAT(what, ::testing::HasSubstr("cannot start 4 host threads: the "
                                         "system refused thread 2"));
  EXPECT_THAT(what, ::testing::HasSubstr("ask for fewer (engine.hostThreads)"));
}

TEST(ThreadPool, MoreTasksThanOneCallCanCountIsAnErrorBeforeAnyRuns) {
  ThreadPool pool(2);
  std::atomic<std::size_t> ran{0};
  const std::size_t tooMany = (std::size_t(1) << 32) + 1;
  try {
    pool.parallelFor(tooMany, [&](std::size_t, unsigned) { ++ran; });
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError &e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("4294967297 tasks are more "
                                               "than the 4294967295"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("split the loop"));
  }
  EXPECT_EQ(ran.load(), 0u);
}

TEST(ForEachOnTwoThreads, EveryIndexOnceTheUpperHalfOnASecondThread) {
  std::vector<int> hits(100, 0);
  std::vector<std::thread::id> by(100);
  forEachOnTwoThreads(100, 64, [&](std::size_t i) {
    ++hits[i];
    by[i] = std::this_thread::get_id();
  });
  EXPECT_EQ(hits, std::vector<int>(100, 1));
  EXPECT_EQ(by[0], std::this_thread::get_id());
  EXPECT_EQ(by[49], std::this_thread::get_id());
  EXPECT_NE(by[50], std::this_thread::get_id());
  EXPECT_EQ(by[50], by[99]);
}

TEST(ForEachOnTwoThreads, FewerThanTheMinimumRunOnTheCaller) {
  std::vector<std::thread::id> by(63);
  forEachOnTwoThreads(
      63, 64, [&](std::size_t i) { by[i] = std::this_thread::get_id(); });
  for (const std::thread::id &id : by)
    EXPECT_EQ(id, std::this_thread::get_id());
}

TEST(ForEachOnTwoThreads, AnExceptionOfTheUpperHalfReachesTheCaller) {
  std::atomic<int> ran{0};
  EXPECT_THROW(forEachOnTwoThreads(10, 2,
                                   [&](std::size_t i) {
                                     ++ran;
                                     if (i == 7)
                                       throw std::runtime_error("seven");
                                   }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 8); // the lower half and 5..7 of the upper
}
