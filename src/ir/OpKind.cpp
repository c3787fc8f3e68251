// The op-kind tables, generated from ops/Elementwise.def and ir/OpKinds.def
// so that a kind added to either table is known everywhere at once.
#include "tessera/ir/OpKind.hpp"

#include "tessera/support/Error.hpp"

#include <array>
#include <string>

namespace tessera::ir {
namespace {

struct KindInfo {
  std::string_view name;
  OpClass cls;
  int minOperands, maxOperands;
  unsigned results;
};

constexpr std::array<KindInfo, numOpKinds> kindTable{{
#define TESSERA_UNARY(E, n, N, k, g) {#n, OpClass::Unary, 1, 1, 1},
#define TESSERA_PREDICATE(E, n, N, k) {#n, OpClass::Predicate, 1, 1, 1},
#define TESSERA_BINARY(E, n, N, k, ga, gb) {#n, OpClass::Binary, 2, 2, 1},
#define TESSERA_COMPARE(E, n, N, k) {#n, OpClass::Compare, 2, 2, 1},
#include "tessera/ops/Elementwise.def"
#define TESSERA_IR_OP(E, n, lo, hi, r) {#n, OpClass::Other, lo, hi, r},
#include "tessera/ir/OpKinds.def"
}};

const KindInfo &info(OpKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  TESSERA_INTERNAL_ASSERT(i < kindTable.size(), "op kind out of range");
  return kindTable[i];
}

} // namespace

std::string_view opKindName(OpKind kind) { return info(kind).name; }

std::optional<OpKind> opKindFromName(std::string_view name) {
  for (std::size_t i = 0; i < kindTable.size(); ++i)
    if (kindTable[i].name == name)
      return static_cast<OpKind>(i);
  return std::nullopt;
}

OpClass opClass(OpKind kind) { return info(kind).cls; }
int minOperands(OpKind kind) { return info(kind).minOperands; }
int maxOperands(OpKind kind) { return info(kind).maxOperands; }
unsigned numResults(OpKind kind) { return info(kind).results; }

std::optional<ops::expr::UnaryOpType> unaryOpType(OpKind kind) {
  switch (kind) {
#define TESSERA_UNARY(E, n, N, k, g)                                           \
  case OpKind::E:                                                              \
    return ops::expr::UnaryOpType::E;
#define TESSERA_PREDICATE(E, n, N, k)                                          \
  case OpKind::E:                                                              \
    return ops::expr::UnaryOpType::E;
#include "tessera/ops/Elementwise.def"
  default:
    return std::nullopt;
  }
}

std::optional<ops::expr::BinaryOpType> binaryOpType(OpKind kind) {
  switch (kind) {
#define TESSERA_BINARY(E, n, N, k, ga, gb)                                     \
  case OpKind::E:                                                              \
    return ops::expr::BinaryOpType::E;
#define TESSERA_COMPARE(E, n, N, k)                                            \
  case OpKind::E:                                                              \
    return ops::expr::BinaryOpType::E;
#include "tessera/ops/Elementwise.def"
  default:
    return std::nullopt;
  }
}

OpKind opKindOf(ops::expr::UnaryOpType op) {
  switch (op) {
#define TESSERA_UNARY(E, n, N, k, g)                                           \
  case ops::expr::UnaryOpType::E:                                              \
    return OpKind::E;
#define TESSERA_PREDICATE(E, n, N, k)                                          \
  case ops::expr::UnaryOpType::E:                                              \
    return OpKind::E;
#include "tessera/ops/Elementwise.def"
  }
  TESSERA_INTERNAL_ASSERT(false, "unknown unary op");
}

OpKind opKindOf(ops::expr::BinaryOpType op) {
  switch (op) {
#define TESSERA_BINARY(E, n, N, k, ga, gb)                                     \
  case ops::expr::BinaryOpType::E:                                             \
    return OpKind::E;
#define TESSERA_COMPARE(E, n, N, k)                                            \
  case ops::expr::BinaryOpType::E:                                             \
    return OpKind::E;
#include "tessera/ops/Elementwise.def"
  }
  TESSERA_INTERNAL_ASSERT(false, "unknown binary op");
}

// The gradient columns of Elementwise.def are written in terms of X and Y
// (unary) or A, B and Y (binary); binding those names to placeholders turns
// each column into an expression the interpreter and lowering can use.
ops::expr::Expr unaryDerivative(ops::expr::UnaryOpType op) {
  using namespace ops::expr;
  const Expr X = _1, Y = _2;
#define NO_GRADIENT Expr()
  switch (op) {
#define TESSERA_UNARY(E, n, N, k, g)                                           \
  case UnaryOpType::E:                                                         \
    return g;
#include "tessera/ops/Elementwise.def"
  default:
    return Expr();
  }
#undef NO_GRADIENT
}

std::pair<ops::expr::Expr, ops::expr::Expr>
binaryDerivatives(ops::expr::BinaryOpType op) {
  using namespace ops::expr;
  const Expr A = _1, B = _2, Y = _3;
#define NO_GRADIENT Expr()
  switch (op) {
#define TESSERA_BINARY(E, n, N, k, ga, gb)                                     \
  case BinaryOpType::E:                                                        \
    return {ga, gb};
#include "tessera/ops/Elementwise.def"
  default:
    return {Expr(), Expr()};
  }
#undef NO_GRADIENT
}

} // namespace tessera::ir
