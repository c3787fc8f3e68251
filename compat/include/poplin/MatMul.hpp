/// \file
/// poplin matrix products.
#pragma once

#include <poplar/Graph.hpp>
#include <tessera/ops/MatMul.hpp>

namespace poplin {
using tessera::ops::createMatMulInputLHS;
using tessera::ops::createMatMulInputRHS;
using tessera::ops::matMul;
using tessera::ops::matMulAcc;
using tessera::ops::matMulGrouped;
} // namespace poplin
