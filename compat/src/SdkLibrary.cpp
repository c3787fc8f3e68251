// Part of libpoplar.so, the SDK-shaped library: makes the ops' built-in
// vertex classes known to the whole process as it loads, so an engine
// loading a saved executable finds them in a program that never called
// popops::addCodelets (Poplar's executables carry their codelets).
#include "tessera/graph/VertexRegistry.hpp"
#include "tessera/ops/Codelets.hpp"

namespace {

const bool registered = [] {
  tessera::VertexRegistry::registerBuiltinLibrary(
      "ops", &tessera::ops::registerVertices);
  return true;
}();

} // namespace
