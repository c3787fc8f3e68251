// Placeholder until the Reduce family lands; replaced by its implementation.
#include "OpsInternal.hpp"

namespace tessera::ops {
void registerReduceVertices(VertexRegistry &) {}
} // namespace tessera::ops
