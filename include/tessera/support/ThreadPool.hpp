/// \file
/// A fixed pool of worker threads for data-parallel loops. The engine calls
/// it once per simulated compute set or exchange, thousands of times a
/// second, so a call does not allocate and idle workers spin briefly before
/// they block.
///
/// \code
///   ThreadPool pool(0); // one thread per hardware thread
///   pool.parallelFor(chunks.size(), [&](std::size_t chunk, unsigned worker) {
///     run(chunks[chunk], scratch[worker]);
///   });
/// \endcode
///
/// Which worker runs which task is not fixed; results must depend only on the
/// task index (callers partition their work statically), so they never
/// depend on the number of threads. Each worker starts on its own block of
/// consecutive tasks (worker w: tasks [w * n / size, (w + 1) * n / size))
/// and only then takes the last tasks left in other workers' blocks: a
/// caller whose task k touches the k-th part of its data gets each part
/// handled by the same worker call after call, so that part stays in that
/// core's caches instead of moving between cores every call.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

namespace tessera {

class ThreadPool {
public:
  /// Starts \p numThreads - 1 worker threads; the calling thread of
  /// parallelFor is worker 0. \p numThreads 0 means one per hardware
  /// thread. Idle workers spin for \p spin before they sleep. Throws
  /// RuntimeError when the system refuses a thread (a thread or memory
  /// limit).
  explicit ThreadPool(unsigned numThreads, std::chrono::microseconds spin =
                                               std::chrono::microseconds(50));
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  /// The number of workers, the caller included: worker indices are
  /// 0 .. size()-1.
  unsigned size() const { return size_; }

  /// Runs body(task, worker) for every task in [0, numTasks) and returns
  /// when all have finished. Runs inline on the caller when size() == 1,
  /// numTasks == 1, or when called from inside one of this pool's tasks.
  /// If tasks throw, every task still runs and the exception of the lowest
  /// task index is rethrown here, so which one surfaces does not depend on
  /// timing. Calls from several threads at once are serialised.
  template <typename F> void parallelFor(std::size_t numTasks, F &&body) {
    if (numTasks == 0)
      return;
    if (numTasks == 1 || size_ == 1 || currentPool_ == this) {
      const unsigned worker = currentPool_ == this ? currentWorker_ : 0;
      for (std::size_t task = 0; task < numTasks; ++task)
        body(task, worker);
      return;
    }
    using Fn = std::remove_reference_t<F>;
    run(
        numTasks,
        [](void *ctx, std::size_t task, unsigned worker) {
          (*static_cast<Fn *>(ctx))(task, worker);
        },
        const_cast<void *>(static_cast<const void *>(std::addressof(body))));
  }

private:
  using TaskFn = void (*)(void *ctx, std::size_t task, unsigned worker);

  void run(std::size_t numTasks, TaskFn fn, void *ctx);
  void workerMain(unsigned worker);
  std::uint64_t waitForJob(std::uint64_t lastSeen);
  void work(unsigned worker);
  /// The next task of \p block: its first left for its own worker, its
  /// last for another; false when none is left.
  bool claim(unsigned block, bool own, std::size_t &task);
  void waitUntilDone();

  static inline thread_local const ThreadPool *currentPool_ = nullptr;
  static inline thread_local unsigned currentWorker_ = 0;

  const unsigned size_;
  const std::chrono::microseconds spin_;
  std::vector<std::thread> threads_;
  std::mutex callMutex_;

  // The current job; written by the caller before it publishes the job's
  // generation and read by workers after they see it.
  TaskFn fn_ = nullptr;
  void *ctx_ = nullptr;
  std::size_t errorTask_ = 0;
  std::exception_ptr error_;
  std::mutex errorMutex_;

  alignas(64) std::atomic<std::uint64_t> activeJob_{0}; // 0: none
  /// Per worker: the tasks of its block not yet claimed, packed as
  /// (first << 32) | end so that the owner (from the front) and others
  /// (from the back) claim with one compare-and-swap.
  struct alignas(64) Block {
    std::atomic<std::uint64_t> range{0};
  };
  std::unique_ptr<Block[]> blocks_;
  alignas(64) std::atomic<std::size_t> remaining_{0};
  alignas(64) std::atomic<unsigned> busyWorkers_{0};
  alignas(64) std::atomic<unsigned> sleepingWorkers_{0};
  std::atomic<bool> callerSleeping_{false};
  std::atomic<bool> stop_{false};
  std::uint64_t generation_ = 0;

  std::mutex sleepMutex_;
  std::condition_variable wakeWorkers_;
  std::condition_variable wakeCaller_;
};

/// Calls fn(i) for every i in [0, n) without a pool: when n is at least
/// \p minParallel, the upper half runs on a thread started for the call
/// (or on the caller, if the system grants none) while the caller runs the
/// lower half. For one-off loops of independent iterations that write only
/// their own results (a compiler phase over tiles), so the outcome does not
/// depend on the split. An exception from either half reaches the caller
/// once both halves have ended.
template <typename Fn>
void forEachOnTwoThreads(std::size_t n, std::size_t minParallel, Fn &&fn) {
  const auto range = [&fn](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i)
      fn(i);
  };
  std::size_t half = n;
  std::future<void> upper;
  if (n >= minParallel && n > 1) {
    half = n / 2;
    try {
      upper = std::async(std::launch::async, range, half, n);
    } catch (const std::system_error &) {
      half = n; // no second thread to be had
    }
  }
  range(0, half); // on throwing, upper's destructor waits for its half
  if (upper.valid())
    upper.get();
}

} // namespace tessera
