#include "tessera/support/Memory.hpp"

// Any C library header defines __GLIBC__ where glibc is the C library;
// without one first, the test below would always fail.
#include <cstdlib>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

#include <cstdint>
#include <fstream>

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
  const char *optOut = std::getenv("TESSERA_HUGE_PAGES");
  if (optOut && std::string_view(optOut) == "0")
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

} // namespace tessera
