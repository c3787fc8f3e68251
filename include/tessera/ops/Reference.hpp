/// \file
/// Host reference implementations of the ops: plain loops in double
/// precision, used by the tests and the conformance harness to check the
/// tile-parallel ops. One section per op family.
#pragma once

#include "tessera/ops/Expr.hpp"

#include <cstddef>
#include <vector>

namespace tessera::ops::reference {

// ---- Elementwise --------------------------------------------------------

/// One unary operation of Elementwise.def on one value.
double unary(expr::UnaryOpType op, double x);
/// One binary operation of Elementwise.def on one value pair.
double binary(expr::BinaryOpType op, double a, double b);
/// An expression at one element: inputs[k] is placeholder _k+1's value,
/// \p index the element's flat index. Casts round as the target type.
double evaluate(const expr::Expr &e, const std::vector<double> &inputs,
                std::size_t index = 0);
/// Rounds \p x as storing it in \p type would (half: nearest even).
double roundTo(Type type, double x);

} // namespace tessera::ops::reference
