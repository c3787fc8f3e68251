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

} // namespace tessera
