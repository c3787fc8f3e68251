#include "tessera/support/Memory.hpp"

// Any C library header defines __GLIBC__ where glibc is the C library;
// without one first, the test below would always fail.
#include <cstdlib>
#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace tessera {

void returnFreedMemory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

} // namespace tessera
