// Checkpoint files as loadCheckpoint reads them. Built twice: as is, and
// with TESSERA_FUZZ_FIX_CHECKSUM, which overwrites the XXH64 trailer with
// the checksum of the bytes before it so that mutations get past the check
// to the size and shape fields (a corrupt but checksummed file is what a
// buggy writer or a hostile user produces).
#include "FuzzCommon.hpp"

#include "tessera/session/Checkpoint.hpp"
#include "tessera/support/Hash.hpp"

#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data,
                                      std::size_t size) {
  using namespace tessera;
  std::string file = fuzz::bytes(data, size);
#ifdef TESSERA_FUZZ_FIX_CHECKSUM
  if (file.size() < 8)
    return 0;
  const std::uint64_t sum = hash64(file.data(), file.size() - 8);
  std::memcpy(file.data() + file.size() - 8, &sum, 8);
#endif
  const std::string path = fuzz::writeScratch("input.ckpt", file);
  return fuzz::runOne([&] {
    const session::Checkpoint c = session::loadCheckpoint(path);
    for (const auto &[name, t] : c.variables) {
      // A loaded tensor's shape must describe exactly the bytes it holds.
      // (A zero dimension makes it empty whatever the others say.)
      std::size_t n = typeSize(t.type());
      bool overflow = false;
      for (std::size_t d : t.shape())
        overflow |= __builtin_mul_overflow(n, d, &n);
      for (std::size_t d : t.shape())
        if (d == 0)
          n = 0, overflow = false;
      fuzz::require(!overflow && n == t.numBytes(),
                    "a checkpoint variable's shape does not match its bytes");
    }
  });
}
