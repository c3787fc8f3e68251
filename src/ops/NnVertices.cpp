// Placeholder until the Nn family lands; replaced by its implementation.
#include "OpsInternal.hpp"

namespace tessera::ops {
void registerNnVertices(VertexRegistry &) {}
} // namespace tessera::ops
