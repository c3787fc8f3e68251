/// \file
/// poplin's PlanningCache (also poplin::matmul::PlanningCache), which
/// PopLibs programs pass to the convolution and matrix-product functions.
/// Tessera's planners are cheap enough to run for every call, so the cache
/// holds nothing: passing one, or nullptr, gives the same plans and results
/// as passing none.
#pragma once

namespace poplin {

/// Accepted wherever PopLibs takes a `PlanningCache *`; keeps no plans.
class PlanningCache {
public:
  PlanningCache() {}
  /// The number of plans kept (always 0).
  unsigned size() const { return 0; }
};

namespace matmul {
using poplin::PlanningCache;
} // namespace matmul

} // namespace poplin
