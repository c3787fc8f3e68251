/// \file
/// Elementwise expressions (PopLibs' popops::expr): placeholders _1.._9 for
/// the tensors of a map, constants, casts, and the operations of
/// Elementwise.def, combined with C++ operators:
///
///     ops::map(graph, expr::Sigmoid(_1 * _2 + expr::Const(1.0f)), {a, b},
///     prog)
///
/// A map runs as one vertex per tile region, however many nodes it has.
#pragma once

#include "tessera/support/Type.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace tessera {
namespace ops {
namespace expr {

/// Unary operations (the result has the operand's type, or BOOL for
/// predicates).
enum class UnaryOpType : std::uint8_t {
#define TESSERA_UNARY(E, n, N, k, g) E,
#define TESSERA_PREDICATE(E, n, N, k) E,
#include "tessera/ops/Elementwise.def"
};
/// Binary operations (comparisons and logical operations give BOOL).
enum class BinaryOpType : std::uint8_t {
#define TESSERA_BINARY(E, n, N, k, ga, gb) E,
#define TESSERA_COMPARE(E, n, N, k) E,
#include "tessera/ops/Elementwise.def"
};
enum class TernaryOpType : std::uint8_t { SELECT, CLAMP };

/// The operation's name as in the op functions ("add", "exp", ...).
const char *name(UnaryOpType op);
const char *name(BinaryOpType op);
/// True for operations whose result is BOOL.
bool isPredicate(UnaryOpType op);
bool isComparison(BinaryOpType op);

/// What a node is.
enum class NodeKind : std::uint8_t {
  PlaceHolder,
  Index,
  Const,
  Cast,
  Unary,
  Binary,
  Ternary
};

/// An expression: a handle to an immutable tree.
class Expr {
public:
  struct Node {
    NodeKind kind = NodeKind::Const;
    unsigned index = 0;  ///< PlaceHolder: 1-based tensor index
    double value = 0;    ///< Const
    Type type = FLOAT;   ///< Const and Cast: the type
    std::uint8_t op = 0; ///< Unary/Binary/Ternary op type
    std::vector<Expr> args;
  };
  Expr() = default;
  const Node &node() const { return *node_; }
  bool valid() const { return node_ != nullptr; }
  /// Text form, e.g. "add(_1, 2)".
  std::string toString() const;

protected:
  explicit Expr(Node n) : node_(std::make_shared<const Node>(std::move(n))) {}
  std::shared_ptr<const Node> node_;
};

/// The n-th tensor of a map (1-based: _1 is the first).
class PlaceHolder : public Expr {
public:
  explicit PlaceHolder(unsigned index);
};
TESSERA_INLINE_VAR const PlaceHolder _1{1}, _2{2}, _3{3}, _4{4}, _5{5}, _6{6},
    _7{7}, _8{8}, _9{9};

/// The flat index of the element being computed (for iota-like maps).
class Index : public Expr {
public:
  Index();
};

/// A constant; its type follows the C++ type (float and double: FLOAT,
/// integers: INT or UNSIGNED_INT, bool: BOOL) unless given.
class Const : public Expr {
public:
  template <typename T, typename = typename std::enable_if<
                            std::is_arithmetic<T>::value>::type>
  Const(T v) // NOLINT: implicit, so `_1 + 2.0f` works
      : Const(static_cast<double>(v), constType<T>()) {}
  Const(double v, Type type);

private:
  template <typename T> static constexpr Type constType() {
    return std::is_same<T, bool>::value       ? BOOL
           : std::is_floating_point<T>::value ? FLOAT
           : std::is_unsigned<T>::value       ? UNSIGNED_INT
                                              : INT;
  }
};

/// Converts to \p type (float to integer truncates; to half rounds).
class Cast : public Expr {
public:
  Cast(const Expr &e, Type type);
};

class UnaryOp : public Expr {
public:
  UnaryOp(UnaryOpType op, const Expr &a);
};
class BinaryOp : public Expr {
public:
  BinaryOp(BinaryOpType op, const Expr &a, const Expr &b);
};
/// SELECT(a, b, c) is c ? a : b; CLAMP(a, b, c) clamps a to [b, c].
class TernaryOp : public Expr {
public:
  TernaryOp(TernaryOpType op, const Expr &a, const Expr &b, const Expr &c);
};

// One function per operation, named as popops::expr's classes.
#define TESSERA_UNARY(E, n, N, k, g)                                           \
  inline Expr N(const Expr &a) { return UnaryOp(UnaryOpType::E, a); }
#define TESSERA_PREDICATE(E, n, N, k)                                          \
  inline Expr N(const Expr &a) { return UnaryOp(UnaryOpType::E, a); }
#define TESSERA_BINARY(E, n, N, k, ga, gb)                                     \
  inline Expr N(const Expr &a, const Expr &b) {                                \
    return BinaryOp(BinaryOpType::E, a, b);                                    \
  }
#define TESSERA_COMPARE(E, n, N, k)                                            \
  inline Expr N(const Expr &a, const Expr &b) {                                \
    return BinaryOp(BinaryOpType::E, a, b);                                    \
  }
#include "tessera/ops/Elementwise.def"

inline Expr Select(const Expr &a, const Expr &b, const Expr &pred) {
  return TernaryOp(TernaryOpType::SELECT, a, b, pred);
}
inline Expr Clamp(const Expr &a, const Expr &lo, const Expr &hi) {
  return TernaryOp(TernaryOpType::CLAMP, a, lo, hi);
}

inline Expr operator+(const Expr &a, const Expr &b) { return Add(a, b); }
inline Expr operator-(const Expr &a, const Expr &b) { return Sub(a, b); }
inline Expr operator*(const Expr &a, const Expr &b) { return Mul(a, b); }
inline Expr operator/(const Expr &a, const Expr &b) { return Divide(a, b); }
inline Expr operator%(const Expr &a, const Expr &b) { return Rem(a, b); }
inline Expr operator==(const Expr &a, const Expr &b) { return Equal(a, b); }
inline Expr operator!=(const Expr &a, const Expr &b) { return NotEqual(a, b); }
inline Expr operator<(const Expr &a, const Expr &b) { return Lt(a, b); }
inline Expr operator<=(const Expr &a, const Expr &b) { return Lte(a, b); }
inline Expr operator>(const Expr &a, const Expr &b) { return Gt(a, b); }
inline Expr operator>=(const Expr &a, const Expr &b) { return Gte(a, b); }
inline Expr operator&&(const Expr &a, const Expr &b) { return And(a, b); }
inline Expr operator||(const Expr &a, const Expr &b) { return Or(a, b); }
inline Expr operator-(const Expr &a) { return Neg(a); }
inline Expr operator!(const Expr &a) { return Not(a); }

/// The type an expression produces given the types of its placeholders;
/// throws TypeError when a placeholder is missing. Constants are weakly
/// typed: `_1 + 1.0f` has _1's type. Two different strong types promote
/// (HALF with FLOAT gives FLOAT, an integer with a float gives the float,
/// BOOL with anything gives the other).
Type inferType(const Expr &e, const std::vector<Type> &placeholders);

} // namespace expr
} // namespace ops
} // namespace tessera
