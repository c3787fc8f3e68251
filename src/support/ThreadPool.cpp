#include "tessera/support/ThreadPool.hpp"

#include "tessera/support/Error.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <system_error>
#include <utility>

namespace tessera {

namespace {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

using Clock = std::chrono::steady_clock;

// Reading the clock costs more than a pause, so spins check it only every
// few hundred iterations.
constexpr unsigned clockCheckMask = 255;

} // namespace

ThreadPool::ThreadPool(unsigned numThreads, std::chrono::microseconds spin)
    : size_(numThreads != 0
                ? numThreads
                : std::max(1u, std::thread::hardware_concurrency())),
      spin_(spin), blocks_(std::make_unique<Block[]>(size_)) {
  threads_.reserve(size_ - 1);
  const auto stopStarted = [this] {
    {
      std::lock_guard<std::mutex> lock(sleepMutex_);
      stop_.store(true);
    }
    wakeWorkers_.notify_all();
    for (auto &t : threads_)
      t.join();
  };
  try {
    for (unsigned worker = 1; worker < size_; ++worker)
      threads_.emplace_back([this, worker] { workerMain(worker); });
  } catch (const std::system_error &e) {
    const std::size_t refused = threads_.size() + 2; // counting worker 0
    stopStarted();
    // A thread or memory limit, not a bug: say which number to lower.
    throw RuntimeError("cannot start " + std::to_string(size_) +
                       " host threads: the system refused thread " +
                       std::to_string(refused) + " (" + e.what() +
                       "); ask for fewer (engine.hostThreads) or raise the "
                       "process's thread and memory limits");
  } catch (...) {
    stopStarted();
    throw;
  }
}

ThreadPool::~ThreadPool() {
  {
    // Under the lock so that a worker between its predicate check and its
    // wait cannot miss the notification.
    std::lock_guard<std::mutex> lock(sleepMutex_);
    stop_.store(true);
  }
  wakeWorkers_.notify_all();
  for (auto &t : threads_)
    t.join();
}

void ThreadPool::run(std::size_t numTasks, TaskFn fn, void *ctx) {
  if (numTasks > std::numeric_limits<std::uint32_t>::max())
    throw RuntimeError("ThreadPool::parallelFor: " + std::to_string(numTasks) +
                       " tasks are more than the 4294967295 one call can "
                       "run; split the loop into several calls");
  std::lock_guard<std::mutex> call(callMutex_);
  fn_ = fn;
  ctx_ = ctx;
  error_ = nullptr;
  errorTask_ = std::numeric_limits<std::size_t>::max();
  for (unsigned w = 0; w < size_; ++w) {
    const std::uint64_t first = numTasks * w / size_,
                        end = numTasks * (w + 1) / size_;
    blocks_[w].range.store(first << 32 | end, std::memory_order_relaxed);
  }
  remaining_.store(numTasks, std::memory_order_relaxed);
  const std::uint64_t job = ++generation_;
  activeJob_.store(job); // publishes the fields above
  if (sleepingWorkers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(sleepMutex_); }
    wakeWorkers_.notify_all();
  }

  const ThreadPool *outerPool = currentPool_;
  const unsigned outerWorker = currentWorker_;
  currentPool_ = this;
  currentWorker_ = 0;
  work(0);
  currentPool_ = outerPool;
  currentWorker_ = outerWorker;
  waitUntilDone();

  // Close the job, then wait for workers still inside work(): they may yet
  // read blocks_, which the next call overwrites. A worker
  // that announces itself after the close sees activeJob_ != job and leaves
  // without touching the job (busyWorkers_ and activeJob_ are sequentially
  // consistent, so one of the two sides sees the other).
  activeJob_.store(0);
  for (unsigned spins = 0; busyWorkers_.load() != 0; ++spins) {
    if (spins < 1024)
      cpuRelax();
    else
      std::this_thread::yield();
  }
  fn_ = nullptr;
  ctx_ = nullptr;
  if (error_)
    std::rethrow_exception(std::exchange(error_, nullptr));
}

bool ThreadPool::claim(unsigned block, bool own, std::size_t &task) {
  std::atomic<std::uint64_t> &range = blocks_[block].range;
  std::uint64_t r = range.load(std::memory_order_relaxed);
  for (;;) {
    const std::uint64_t first = r >> 32, end = r & 0xffffffffu;
    if (first >= end)
      return false;
    const std::uint64_t next =
        own ? (first + 1) << 32 | end : first << 32 | (end - 1);
    if (range.compare_exchange_weak(r, next, std::memory_order_relaxed)) {
      task = own ? first : end - 1;
      return true;
    }
  }
}

void ThreadPool::work(unsigned worker) {
  // Own block first, then the next workers' blocks in turn, each from its
  // back: the part its owner would reach last.
  unsigned step = 0, block = worker;
  for (;;) {
    std::size_t task = 0;
    if (!claim(block, step == 0, task)) {
      if (++step >= size_)
        return;
      block = (worker + step) % size_;
      continue;
    }
    try {
      fn_(ctx_, task, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(errorMutex_);
      if (task < errorTask_) {
        errorTask_ = task;
        error_ = std::current_exception();
      }
    }
    if (remaining_.fetch_sub(1) == 1 && callerSleeping_.load()) {
      { std::lock_guard<std::mutex> lock(sleepMutex_); }
      wakeCaller_.notify_one();
    }
  }
}

void ThreadPool::waitUntilDone() {
  const auto start = Clock::now();
  for (unsigned i = 1;; ++i) {
    if (remaining_.load(std::memory_order_acquire) == 0)
      return;
    cpuRelax();
    if ((i & clockCheckMask) == 0 && Clock::now() - start > spin_)
      break;
  }
  std::unique_lock<std::mutex> lock(sleepMutex_);
  callerSleeping_.store(true);
  wakeCaller_.wait(lock, [this] { return remaining_.load() == 0; });
  callerSleeping_.store(false);
}

std::uint64_t ThreadPool::waitForJob(std::uint64_t lastSeen) {
  const auto start = Clock::now();
  for (unsigned i = 1;; ++i) {
    const std::uint64_t job = activeJob_.load(std::memory_order_acquire);
    if (job != lastSeen || stop_.load(std::memory_order_relaxed))
      return job;
    cpuRelax();
    if ((i & clockCheckMask) == 0 && Clock::now() - start > spin_)
      break;
  }
  std::unique_lock<std::mutex> lock(sleepMutex_);
  sleepingWorkers_.fetch_add(1);
  wakeWorkers_.wait(
      lock, [&] { return activeJob_.load() != lastSeen || stop_.load(); });
  sleepingWorkers_.fetch_sub(1);
  return activeJob_.load(std::memory_order_acquire);
}

void ThreadPool::workerMain(unsigned worker) {
  currentPool_ = this;
  currentWorker_ = worker;
  std::uint64_t lastSeen = 0;
  for (;;) {
    const std::uint64_t job = waitForJob(lastSeen);
    if (stop_.load())
      return;
    lastSeen = job;
    if (job == 0)
      continue;
    busyWorkers_.fetch_add(1);
    if (activeJob_.load() == job)
      work(worker);
    busyWorkers_.fetch_sub(1);
  }
}

} // namespace tessera
