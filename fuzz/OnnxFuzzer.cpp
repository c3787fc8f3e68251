// ONNX import: any bytes either import to a module that verifies or are
// rejected with a tessera::Error (protobuf's parse, the size checks before
// allocating, the converters' shape checks). The cap on elements keeps a
// crafted tensor from asking for more memory than the fuzzer allows.
#include "FuzzCommon.hpp"

#include "tessera/ir/Verifier.hpp"
#include "tessera/onnx/Importer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data,
                                      std::size_t size) {
  using namespace tessera;
  onnx::ImportOptions options;
  options.maxElements = std::size_t{1} << 20;
  return fuzz::runOne([&] {
    const onnx::ImportedModel m =
        onnx::importModel(fuzz::bytes(data, size), options, "fuzz input");
    try {
      ir::verify(m.module);
    } catch (const Error &e) {
      std::fprintf(stderr, "imported module does not verify: %s\n", e.what());
      fuzz::require(false, "an imported module does not verify");
    }
  });
}
