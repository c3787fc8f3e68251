// Placeholder until the Slice family lands; replaced by its implementation.
#include "OpsInternal.hpp"

namespace tessera::ops {
void registerSliceVertices(VertexRegistry &) {}
} // namespace tessera::ops
