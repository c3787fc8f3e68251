// Shared set-up for engine and compiler tests: small IPU Model devices and
// the test codelets.
#pragma once

#include "tessera/device/Device.hpp"
#include "tessera/device/IPUModel.hpp"
#include "tessera/device/Target.hpp"
#include "tessera/engine/Engine.hpp"
#include "tessera/graph/Graph.hpp"

#include <string>

namespace tessera::test {

/// A model device of \p ipus IPUs with \p tiles tiles each.
inline Device modelDevice(unsigned tiles = 4, unsigned ipus = 1) {
  IPUModel model;
  model.tilesPerIPU = tiles;
  model.numIPUs = ipus;
  return model.createDevice();
}

/// Adds the test vertices (tests/engine/codelets/TestVertices.cpp).
inline void addTestCodelets(Graph &g) {
  g.addCodelets(std::string(TESSERA_TEST_SOURCE_DIR) +
                "/engine/codelets/TestVertices.cpp");
}

} // namespace tessera::test
