// Placeholder until the Conv family lands; replaced by its implementation.
#include "OpsInternal.hpp"

namespace tessera::ops {
void registerConvVertices(VertexRegistry &) {}
} // namespace tessera::ops
