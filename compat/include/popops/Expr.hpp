/// \file
/// popops::expr: Tessera's elementwise expressions under PopLibs' names.
#pragma once

#include <poputil/exceptions.hpp>
#include <tessera/ops/Expr.hpp>

namespace popops {
namespace expr = tessera::ops::expr;
} // namespace popops
