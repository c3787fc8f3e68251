// Placeholder until the Random family lands; replaced by its implementation.
#include "OpsInternal.hpp"

namespace tessera::ops {
void registerRandomVertices(VertexRegistry &) {}
} // namespace tessera::ops
