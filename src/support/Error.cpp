#include "tessera/support/Error.hpp"

#include <cstdio>
#include <cstdlib>

namespace tessera::detail {

void internalAssertFailed(const char *cond, const char *file, int line,
                          const std::string &msg) {
  // fprintf rather than iostreams: this may run during static destruction
  // or with the heap in a bad state.
  std::fprintf(stderr,
               "Tessera internal error: %s at %s:%d%s%s (this is a bug in "
               "Tessera)\n",
               cond, file, line, msg.empty() ? "" : ": ", msg.c_str());
  std::fflush(stderr);
  std::abort();
}

} // namespace tessera::detail
