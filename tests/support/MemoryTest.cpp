#include "tessera/support/Memory.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace {

// Resident bytes of this process, from /proc/self/statm (Linux).
double residentBytes() {
  std::FILE *f = std::fopen("/proc/self/statm", "r");
  if (!f)
    return -1;
  long size = 0, resident = -1;
  if (std::fscanf(f, "%ld %ld", &size, &resident) != 2)
    resident = -1;
  std::fclose(f);
  return resident < 0 ? -1 : double(resident) * 4096.0;
}

// Small blocks freed below a live one stay in the heap, resident, until
// returnFreedMemory gives their pages back: a compile's graph is millions of
// such blocks with the executable allocated after them.
TEST(Memory, FreedSmallBlocksBelowALiveOneLeaveTheResidentSet) {
#if !defined(__GLIBC__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "only glibc's own allocator keeps freed pages";
#endif
  if (residentBytes() < 0)
    GTEST_SKIP() << "no /proc/self/statm";
  constexpr std::size_t kBlocks = 256 * 1024, kBlockBytes = 1024;
  std::vector<std::unique_ptr<char[]>> blocks(kBlocks);
  for (auto &b : blocks) {
    b = std::make_unique<char[]>(kBlockBytes);
    b[0] = b[kBlockBytes - 1] = 1; // touch both ends: the pages are resident
  }
  auto live = std::make_unique<char[]>(kBlockBytes); // above them all
  live[0] = 1;
  const double full = residentBytes();
  blocks.clear();
  tessera::returnFreedMemory();
  const double after = residentBytes();
  // 256 MiB were freed; at least half of it must have left.
  EXPECT_LT(after, full - 128.0 * 1024 * 1024)
      << "resident " << full << " -> " << after << " bytes";
}

// Populating faults the pages in at once and keeps what they hold.
TEST(Memory, PopulateMakesPagesResidentAndKeepsTheirContents) {
  if (residentBytes() < 0)
    GTEST_SKIP() << "no /proc/self/statm";
  constexpr std::size_t kBytes = std::size_t{64} << 20;
  void *p = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  auto *bytes = static_cast<unsigned char *>(p);
  bytes[100] = 7;
  const double before = residentBytes();
  if (!tessera::populateMemory(bytes + 1, kBytes - 1)) {
    ::munmap(p, kBytes);
    GTEST_SKIP() << "this kernel cannot populate (MADV_POPULATE_WRITE)";
  }
  const double after = residentBytes();
  EXPECT_GT(after, before + 60.0 * 1024 * 1024)
      << "resident " << before << " -> " << after << " bytes";
  EXPECT_EQ(bytes[100], 7);
  EXPECT_EQ(bytes[kBytes - 1], 0);
  ::munmap(p, kBytes);
}

TEST(Memory, HugePageTunablesAskOnlyWhereTheKernelWaitsToBeAsked) {
  using tessera::hugePageTunables;
  const char *madvise = "always [madvise] never";
  EXPECT_EQ(hugePageTunables(nullptr, madvise), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(hugePageTunables("", madvise), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(hugePageTunables(nullptr, "[always] madvise never"), std::nullopt);
  EXPECT_EQ(hugePageTunables(nullptr, "always madvise [never]"), std::nullopt);
  EXPECT_EQ(hugePageTunables(nullptr, ""), std::nullopt);
}

TEST(Memory, HugePageTunablesKeepTheUsersOwn) {
  using tessera::hugePageTunables;
  const char *madvise = "always [madvise] never";
  EXPECT_EQ(hugePageTunables("glibc.malloc.arena_max=2", madvise),
            "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
  // The user's own choice, either way, stands.
  EXPECT_EQ(hugePageTunables("glibc.malloc.hugetlb=0", madvise), std::nullopt);
  EXPECT_EQ(hugePageTunables("glibc.malloc.hugetlb=2", madvise), std::nullopt);
}

// What the probe printed, run with \p env before it: its GLIBC_TUNABLES and
// its first argument.
std::pair<std::string, std::string> runProbe(const std::string &env) {
  const std::string cmd = "env -u GLIBC_TUNABLES -u LD_PRELOAD " + env + " " +
                          TESSERA_PROBE_PATH + " 'an argument'";
  std::FILE *p = ::popen(cmd.c_str(), "r");
  if (!p)
    return {};
  char buf[512];
  std::string out;
  while (std::fgets(buf, sizeof buf, p))
    out += buf;
  ::pclose(p);
  const auto nl = out.find('\n');
  if (nl == std::string::npos)
    return {out, ""};
  std::string arg = out.substr(nl + 1);
  if (!arg.empty() && arg.back() == '\n')
    arg.pop_back();
  return {out.substr(0, nl), arg};
}

TEST(Memory, RestartAsksForHugePagesWhereTheKernelWaitsToBeAsked) {
#if !defined(__linux__) || !defined(__GLIBC__)
  GTEST_SKIP() << "only glibc on Linux restarts";
#endif
  std::ifstream modes("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(modes, line);
  const bool asks = line.find("[madvise]") != std::string::npos;
  const auto [tunables, arg] = runProbe("");
  EXPECT_EQ(tunables, asks ? "glibc.malloc.hugetlb=1" : "(unset)")
      << "kernel modes: " << line;
  EXPECT_EQ(arg, "an argument");
}

TEST(Memory, RestartLeavesTheEnvironmentAloneWhenToldNotTo) {
  EXPECT_EQ(runProbe("TESSERA_HUGE_PAGES=0"),
            std::make_pair(std::string("(unset)"), std::string("an argument")));
  EXPECT_EQ(runProbe("GLIBC_TUNABLES=glibc.malloc.hugetlb=0"),
            std::make_pair(std::string("glibc.malloc.hugetlb=0"),
                           std::string("an argument")));
}

// Waits up to 5 s for the resident set to pass \p bytes.
bool residentReaches(double bytes) {
  for (int i = 0; i < 500; ++i) {
    if (residentBytes() >= bytes)
      return true;
    ::usleep(10000);
  }
  return false;
}

// Allocates 64 MiB blocks, untouched, into \p blocks until the program
// break moves; returns how far it moved.
double growHeap(std::vector<std::unique_ptr<char[]>> &blocks) {
  const auto brk = [] { return reinterpret_cast<std::uintptr_t>(::sbrk(0)); };
  const std::uintptr_t start = brk();
  for (int i = 0; i < 64 && brk() == start; ++i)
    blocks.emplace_back(new char[std::size_t(64) << 20]);
  return double(brk() - start);
}

// The heap malloc claims ahead becomes resident without the program
// touching it, while a prefaulter lives, nested ones included.
TEST(Memory, PrefaulterFaultsInTheHeapClaimedAhead) {
#if !defined(__linux__) || !defined(__GLIBC__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "only glibc's own allocator on Linux claims heap ahead";
#endif
  if (residentBytes() < 0)
    GTEST_SKIP() << "no /proc/self/statm";
  if (const char *off = std::getenv("TESSERA_HEAP_PREFAULT"))
    if (std::string(off) == "0")
      GTEST_SKIP() << "TESSERA_HEAP_PREFAULT=0 turns prefaulting off";
  void *probe = ::mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(probe, MAP_FAILED);
  const bool canPopulate = tessera::populateMemory(probe, 1 << 16);
  ::munmap(probe, 1 << 16);
  if (!canPopulate)
    GTEST_SKIP() << "this kernel cannot populate (MADV_POPULATE_WRITE)";
  std::vector<std::unique_ptr<char[]>> blocks;
  const tessera::HeapPrefaulter outer;
  {
    const tessera::HeapPrefaulter inner;
    const double before = residentBytes();
    const double grown = growHeap(blocks);
    ASSERT_GT(grown, 256.0 * (1 << 20)) << "malloc claims 256 MiB ahead";
    EXPECT_TRUE(residentReaches(before + 0.9 * grown))
        << "resident " << before << " -> " << residentBytes() << " bytes, "
        << grown << " bytes of heap claimed";
  }
  // The inner one's end leaves the outer one's thread running.
  const double before = residentBytes();
  const double grown = growHeap(blocks);
  EXPECT_TRUE(residentReaches(before + 0.9 * grown))
      << "resident " << before << " -> " << residentBytes() << " bytes, "
      << grown << " bytes of heap claimed";
}

} // namespace
