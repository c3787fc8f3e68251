// A program for MemoryTest to start: it calls restartWithHugePageHeap as a
// main does, then prints the GLIBC_TUNABLES it runs with ("(unset)" when
// none) and its first argument, so that the test sees what the restart did.
#include "tessera/support/Memory.hpp"

#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv) {
  tessera::restartWithHugePageHeap(argv);
  const char *tunables = std::getenv("GLIBC_TUNABLES");
  std::printf("%s\n%s\n", tunables ? tunables : "(unset)",
              argc > 1 ? argv[1] : "");
  return 0;
}
