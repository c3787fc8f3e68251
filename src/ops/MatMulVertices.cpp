// Placeholder until the MatMul family lands; replaced by its implementation.
#include "OpsInternal.hpp"

namespace tessera::ops {
void registerMatMulVertices(VertexRegistry &) {}
} // namespace tessera::ops
