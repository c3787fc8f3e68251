/// \file
/// popops elementwise operations: map, the named unary and binary
/// operations, select and clamp, as Tessera's.
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/Program.hpp>
#include <popops/Expr.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/Elementwise.hpp>

namespace popops {
using tessera::ops::clamp;
using tessera::ops::map;
using tessera::ops::mapInPlace;
using tessera::ops::mapWithOutput;
using tessera::ops::select;
#define TESSERA_POPOPS_USING(n)                                                \
  using tessera::ops::n;                                                       \
  using tessera::ops::n##InPlace;                                              \
  using tessera::ops::n##WithOutput;
#define TESSERA_UNARY(E, n, N, k, g) TESSERA_POPOPS_USING(n)
#define TESSERA_PREDICATE(E, n, N, k) TESSERA_POPOPS_USING(n)
#define TESSERA_BINARY(E, n, N, k, ga, gb) TESSERA_POPOPS_USING(n)
#define TESSERA_COMPARE(E, n, N, k) TESSERA_POPOPS_USING(n)
#include <tessera/ops/Elementwise.def>
#undef TESSERA_POPOPS_USING
} // namespace popops
