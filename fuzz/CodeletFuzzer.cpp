// The codelet parser that finds vertex classes in user C++ without a
// compiler front end: any text must parse or be rejected with a
// CodeletError, and every class it finds must have a name.
#include "FuzzCommon.hpp"

#include "../src/graph/CodeletParser.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data,
                                      std::size_t size) {
  using namespace tessera;
  const std::string_view source(reinterpret_cast<const char *>(data), size);
  return fuzz::runOne([&] {
    for (const detail::ParsedVertexClass &c :
         detail::parseCodeletSource(source, "fuzz.cpp"))
      fuzz::require(!c.name.empty() && !c.cppName.empty(),
                    "the codelet parser found a vertex class without a name");
  });
}
