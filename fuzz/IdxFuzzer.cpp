// IDX files (plain or gzip, told apart by content as the reader does):
// readIdx (readIdxTensor, then a conversion to float) must read the bytes
// or reject them with a tessera::Error.
#include "FuzzCommon.hpp"

#include "tessera/data/Idx.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data,
                                      std::size_t size) {
  using namespace tessera;
  const std::string path =
      fuzz::writeScratch("input.idx", fuzz::bytes(data, size));
  return fuzz::runOne([&] {
    const data::IdxArray a = data::readIdx(path);
    std::size_t n = 1;
    for (std::size_t d : a.shape)
      n *= d;
    fuzz::require(n == a.numElements(),
                  "readIdx returned a shape that does not hold its values");
  });
}
