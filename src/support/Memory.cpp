#include "tessera/support/Memory.hpp"

// Any C library header defines __GLIBC__ where glibc is the C library;
// without one first, the test below would always fail.
#include <cstdlib>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#ifdef __linux__
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <mutex>
#include <system_error>
#include <thread>

namespace tessera {

void returnFreedMemory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

bool populateMemory(void *p, std::size_t bytes) {
#if defined(__linux__)
  // Older headers lack the name; kernels before 5.14 refuse the value.
  constexpr int kPopulateWrite = 23; // MADV_POPULATE_WRITE
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t lo = (at + page - 1) / page * page;
  const std::uintptr_t hi = (at + bytes) / page * page;
  if (hi <= lo)
    return true;
  return ::madvise(reinterpret_cast<void *>(lo), hi - lo, kPopulateWrite) == 0;
#else
  (void)p;
  (void)bytes;
  return false;
#endif
}

namespace {

// Whether the environment variable \p name is "0".
[[maybe_unused]] bool turnedOff(const char *name) {
  const char *value = std::getenv(name);
  return value && std::string_view(value) == "0";
}

} // namespace

std::optional<std::string> hugePageTunables(const char *current,
                                            std::string_view thpModes) {
  constexpr std::string_view kName = "glibc.malloc.hugetlb";
  if (thpModes.find("[madvise]") == std::string_view::npos)
    return std::nullopt;
  const std::string now = current ? current : "";
  if (now.find(kName) != std::string::npos)
    return std::nullopt;
  return (now.empty() ? "" : now + ":") + std::string(kName) + "=1";
}

void restartWithHugePageHeap(char **argv) {
#if defined(__linux__) && defined(__GLIBC__)
  if (turnedOff("TESSERA_HUGE_PAGES"))
    return;
  const char *preload = std::getenv("LD_PRELOAD");
  if (preload &&
      std::string_view(preload).find("vgpreload") != std::string_view::npos)
    return;
  std::ifstream modes("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(modes, line))
    return;
  const char *current = std::getenv("GLIBC_TUNABLES");
  const std::optional<std::string> value = hugePageTunables(current, line);
  if (!value)
    return;
  // The restart sees the variable set, so it does not restart again.
  const std::string before = current ? current : "";
  ::setenv("GLIBC_TUNABLES", value->c_str(), 1);
  ::execv("/proc/self/exe", argv);
  // Still here: run on as we are, the environment as it was.
  if (current)
    ::setenv("GLIBC_TUNABLES", before.c_str(), 1);
  else
    ::unsetenv("GLIBC_TUNABLES");
#else
  (void)argv;
#endif
}

namespace {

// The one prefaulting thread and the HeapPrefaulters that keep it running.
struct Prefaulting {
  std::mutex mutex;
  unsigned users = 0;
  std::atomic<bool> stop{false};
  std::thread worker;
};

Prefaulting &prefaulting() {
  static auto *p = new Prefaulting; // never destroyed: no join at exit
  return *p;
}

[[maybe_unused]] std::uintptr_t programBreak() {
#if defined(__linux__)
  return static_cast<std::uintptr_t>(::syscall(SYS_brk, 0));
#else
  return 0;
#endif
}

// Populates the heap between where it last stopped and the break, a chunk
// at a time so that the allocator, which moves the break under the same
// kernel lock, never waits long.
[[maybe_unused]] void prefaultHeap(const std::atomic<bool> &stop,
                                   std::uintptr_t done) {
#if defined(__linux__)
  constexpr std::uintptr_t kChunk = std::uintptr_t(2) << 20;
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  while (!stop.load(std::memory_order_relaxed)) {
    const std::uintptr_t brk = programBreak();
    done = std::min(done, brk); // a trim moved the break down
    const std::uintptr_t hi = std::min(brk, done + kChunk) / page * page;
    if (hi <= done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    // A kernel before 5.14, or no memory left: the compile touches its
    // pages itself, as without a prefaulter.
    if (!populateMemory(reinterpret_cast<void *>(done), hi - done))
      return;
    done = hi;
  }
#else
  (void)stop;
  (void)done;
#endif
}

} // namespace

HeapPrefaulter::HeapPrefaulter() {
#if defined(__linux__) && defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
  if (turnedOff("TESSERA_HEAP_PREFAULT"))
    return;
  Prefaulting &p = prefaulting();
  const std::lock_guard lock(p.mutex);
  active_ = true;
  if (p.users++ > 0)
    return;
  p.stop = false;
  try {
    // From the break now: the heap may grow before the thread first runs.
    p.worker = std::thread(prefaultHeap, std::cref(p.stop), programBreak());
  } catch (const std::system_error &) {
    // No thread to spare: the compile runs as without a prefaulter.
    --p.users;
    active_ = false;
    return;
  }
  // Every block from the one heap that grows at the break, claimed a
  // quarter of a GiB ahead: what the thread can reach.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TOP_PAD, 256 << 20);
#endif
}

HeapPrefaulter::~HeapPrefaulter() {
#if defined(__GLIBC__)
  if (!active_)
    return;
  Prefaulting &p = prefaulting();
  const std::lock_guard lock(p.mutex);
  if (--p.users > 0)
    return;
  p.stop = true;
  p.worker.join();
  // glibc's defaults again. Setting any of these stops glibc moving its
  // mmap threshold as blocks are freed, so that threshold is set to where
  // glibc's own moving takes it for large blocks (32 MiB, trimming at
  // twice that): left at 128 KiB, every larger block a run allocates would
  // be a fresh mapping, its pages touched for the first time again.
  mallopt(M_TOP_PAD, 128 << 10);
  mallopt(M_MMAP_MAX, 65536);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
}

} // namespace tessera
