#include "tessera/support/Memory.hpp"

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
