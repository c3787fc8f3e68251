// Executables. The input is read as an executable file, and then taken as
// an uncompressed payload (its parts joined as fuzz::joinPayload does):
// written as a file with a correct header (sizes, frames, both XXH64
// checksums) and read back with readExecutableFile, so every
// mutation reaches the payload decoder and validateExecutable as a cache
// entry or a hostile .tsx file would. Property: what decodes encodes to a
// payload that decodes to the same. Built a second time with
// TESSERA_FUZZ_ENGINE_LOAD, which then loads what decodes on an IPU Model
// device of the executable's size (Engine::load trusts a validated
// executable, so this is where a validation gap shows).
#include "FuzzCommon.hpp"

#include "tessera/compiler/ExecutableFormat.hpp"
#include "tessera/device/Device.hpp"
#include "tessera/device/IPUModel.hpp"
#include "tessera/engine/Engine.hpp"
#include "tessera/graph/VertexRegistry.hpp"
#include "tessera/ops/Codelets.hpp"

#include <sstream>

namespace {

using namespace tessera;

Executable readWithFreshHeader(const detail::ExecutablePayload &payload) {
  std::ostringstream out;
  detail::writeExecutableFile(out, payload);
  std::istringstream in(out.str());
  return detail::readExecutableFile(in, "fuzz input");
}

#ifdef TESSERA_FUZZ_ENGINE_LOAD
void loadOnModel(Executable exe) {
  // Limits of this harness, not of the loader: a small device keeps an
  // execution in the milliseconds, and codelet sources are never compiled
  // (that would run the system compiler on fuzzed C++). The engine
  // allocates the memory an executable lays out (up to the format's 1 TiB
  // ceiling; a tile may exceed its capacity under debug.allowOutOfMemory),
  // and a failed allocation is a MemoryError; asking the sanitizer's
  // allocator for a terabyte ends the process instead, so such inputs stop
  // after decoding.
  const std::uint64_t ipus = std::uint64_t(exe.numIPUs) * exe.replicationFactor;
  if (!exe.codelets.empty() || ipus == 0 || ipus > 4 || exe.tilesPerIPU == 0 ||
      exe.tilesPerIPU > 32 || exe.bytesPerTile > (1u << 20) ||
      exe.replicaBytes() > (std::uint64_t{256} << 20) / exe.replicationFactor)
    return;
  IPUModel model;
  model.numIPUs = static_cast<unsigned>(ipus);
  model.tilesPerIPU = exe.tilesPerIPU;
  model.memoryBytesPerTile = exe.bytesPerTile;
  Device device = model.createDevice();
  Engine engine(std::move(exe));
  engine.load(device);
}
#endif

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // A deserialised executable names the ops library's vertices; a process
  // registers them as Session does before loading a cached executable.
  VertexRegistry::registerBuiltinLibrary("ops", &ops::registerVertices);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data,
                                      std::size_t size) {
  const detail::ExecutablePayload payload =
      fuzz::splitPayload({reinterpret_cast<const std::byte *>(data), size});
  // The input as a whole file too: header checks and decompression.
  fuzz::runOne([&] {
    std::istringstream in(fuzz::bytes(data, size));
    (void)detail::readExecutableFile(in, "fuzz input");
  });
  return fuzz::runOne([&] {
    Executable exe = readWithFreshHeader(payload);
    const detail::ExecutablePayload once = detail::encodeExecutablePayload(exe);
    const detail::ExecutablePayload twice =
        detail::encodeExecutablePayload(readWithFreshHeader(once));
    fuzz::require(once == twice, "an executable's payload does not survive "
                                 "a decode/encode round trip");
#ifdef TESSERA_FUZZ_ENGINE_LOAD
    loadOnModel(std::move(exe));
#endif
  });
}
