#include "tessera/ops/Reference.hpp"

#include "elementwise/MapVertex.hpp"

#include <cmath>

namespace tessera::ops::reference {

double unary(expr::UnaryOpType op, double x) {
  double y = 0;
  mapcode::unary<double>(op, &x, &y, 1);
  return y;
}

double binary(expr::BinaryOpType op, double a, double b) {
  double y = 0;
  mapcode::binary<double>(op, &a, &b, &y, 1);
  return y;
}

double roundTo(Type type, double x) { return mapcode::castTo<double>(type, x); }

double evaluate(const expr::Expr &e, const std::vector<double> &inputs,
                std::size_t index) {
  const expr::Expr::Node &n = e.node();
  auto arg = [&](unsigned i) { return evaluate(n.args[i], inputs, index); };
  switch (n.kind) {
  case expr::NodeKind::PlaceHolder:
    return inputs.at(n.index - 1);
  case expr::NodeKind::Index:
    return static_cast<double>(index);
  case expr::NodeKind::Const:
    return n.value;
  case expr::NodeKind::Cast:
    return roundTo(n.type, arg(0));
  case expr::NodeKind::Unary:
    return unary(static_cast<expr::UnaryOpType>(n.op), arg(0));
  case expr::NodeKind::Binary:
    return binary(static_cast<expr::BinaryOpType>(n.op), arg(0), arg(1));
  case expr::NodeKind::Ternary:
    if (n.op == static_cast<std::uint8_t>(expr::TernaryOpType::SELECT))
      return arg(2) != 0 ? arg(0) : arg(1);
    return std::min(std::max(arg(0), arg(1)), arg(2));
  }
  return 0;
}

} // namespace tessera::ops::reference
