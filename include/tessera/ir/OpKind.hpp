/// \file
/// The kinds of IR operation: one per row of ops/Elementwise.def (unary,
/// predicate, binary and comparison maps, named as the ops functions:
/// "relu", "add", "eq", ...) and one per row of ir/OpKinds.def (matmul,
/// conv2d, softmax, the losses, the gradient operations, ...).
///
/// Attributes each kind reads (Attributes, Module.hpp), by name:
/// - reshape: "shape" (ints); transpose: "perm" (ints, a permutation);
///   broadcast: "shape" (ints, NumPy broadcasting of the operand to it).
/// - reduceSum / reduceMean / reduceMax: a ReduceAttrs record (OpAttrs.hpp).
/// - concat: "axis"; slice: "begin", "end" (ints, one per dimension); pad:
///   "lower", "upper" (ints, zeros added before and after each dimension).
/// - cast: "dtype" (string, a type name as the text format spells it).
/// - conv2d, conv2dBackpropInput, conv2dBackpropFilter: a Conv2dOptions
///   record (OpAttrs.hpp); conv2dBackpropInput also "inputShape" (4 ints)
///   and conv2dBackpropFilter "kernel" (2 ints).
/// - maxPool, avgPool, maxPoolGrad, avgPoolGrad: a PoolOptions record
///   (OpAttrs.hpp); avgPoolGrad also "inputShape".
/// - dropout: a DropoutAttrs record (OpAttrs.hpp).
/// - batchNorm, layerNorm: "eps" (float > 0).
/// - unaryGrad, binaryGrad: "op" (string: the elementwise op's name).
/// - gatherGrad: "numRows" (int).
/// - matmul, conv2d and the conv2d backprops may carry "partialsType"
///   (string "float" or "half"): the accumulation type lowering gives the
///   ops library's option of that name (kPartialsType).
#pragma once

#include "tessera/ops/Expr.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera::ir {

/// The optional attribute naming an op's partials (accumulation) type.
inline constexpr const char *kPartialsType = "partialsType";

/// What an operation computes.
enum class OpKind : std::uint16_t {
#define TESSERA_UNARY(E, n, N, k, g) E,
#define TESSERA_PREDICATE(E, n, N, k) E,
#define TESSERA_BINARY(E, n, N, k, ga, gb) E,
#define TESSERA_COMPARE(E, n, N, k) E,
#include "tessera/ops/Elementwise.def"
#define TESSERA_IR_OP(E, n, lo, hi, r) E,
#include "tessera/ir/OpKinds.def"
};

/// How many kinds there are.
inline constexpr unsigned numOpKinds = 0
#define TESSERA_UNARY(E, n, N, k, g) +1
#define TESSERA_PREDICATE(E, n, N, k) +1
#define TESSERA_BINARY(E, n, N, k, ga, gb) +1
#define TESSERA_COMPARE(E, n, N, k) +1
#include "tessera/ops/Elementwise.def"
#define TESSERA_IR_OP(E, n, lo, hi, r) +1
#include "tessera/ir/OpKinds.def"
    ;

/// The families of op kinds.
enum class OpClass : std::uint8_t {
  Unary,     ///< elementwise, the operand's type
  Predicate, ///< elementwise unary giving BOOL
  Binary,    ///< elementwise with NumPy broadcasting, the operands' type
  Compare,   ///< elementwise with NumPy broadcasting giving BOOL
  Other,     ///< a row of OpKinds.def
};

/// The kind's text name ("relu", "matmul", ...).
std::string_view opKindName(OpKind kind);
/// The kind named \p name, if any.
std::optional<OpKind> opKindFromName(std::string_view name);
OpClass opClass(OpKind kind);
/// Operand counts the kind accepts: [min, max], max -1 for any.
int minOperands(OpKind kind);
int maxOperands(OpKind kind);
unsigned numResults(OpKind kind);

/// The ops library's operation of an elementwise kind (Unary and Predicate
/// kinds, Binary and Compare kinds); nullopt for other kinds.
std::optional<ops::expr::UnaryOpType> unaryOpType(OpKind kind);
std::optional<ops::expr::BinaryOpType> binaryOpType(OpKind kind);
/// The kind of an elementwise operation.
OpKind opKindOf(ops::expr::UnaryOpType op);
OpKind opKindOf(ops::expr::BinaryOpType op);

/// d(op)/dx of a unary operation as an expression of X (placeholder _1, the
/// input) and Y (_2, the output), from Elementwise.def's gradient column;
/// an invalid Expr when the operation has no gradient.
ops::expr::Expr unaryDerivative(ops::expr::UnaryOpType op);
/// d(op)/da and d(op)/db of a binary operation as expressions of A (_1), B
/// (_2) and Y (_3); invalid Exprs when there is none.
std::pair<ops::expr::Expr, ops::expr::Expr>
binaryDerivatives(ops::expr::BinaryOpType op);

} // namespace tessera::ir
