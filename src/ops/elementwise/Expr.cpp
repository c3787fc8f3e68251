#include "tessera/ops/Expr.hpp"

#include "tessera/support/Error.hpp"

#include <algorithm>
#include <sstream>

namespace tessera::ops::expr {

const char *name(UnaryOpType op) {
  switch (op) {
#define TESSERA_UNARY(E, n, N, k, g)                                           \
  case UnaryOpType::E:                                                         \
    return #n;
#define TESSERA_PREDICATE(E, n, N, k)                                          \
  case UnaryOpType::E:                                                         \
    return #n;
#include "tessera/ops/Elementwise.def"
  }
  return "?";
}

const char *name(BinaryOpType op) {
  switch (op) {
#define TESSERA_BINARY(E, n, N, k, ga, gb)                                     \
  case BinaryOpType::E:                                                        \
    return #n;
#define TESSERA_COMPARE(E, n, N, k)                                            \
  case BinaryOpType::E:                                                        \
    return #n;
#include "tessera/ops/Elementwise.def"
  }
  return "?";
}

bool isPredicate(UnaryOpType op) {
  switch (op) {
#define TESSERA_PREDICATE(E, n, N, k)                                          \
  case UnaryOpType::E:                                                         \
    return true;
#include "tessera/ops/Elementwise.def"
  default:
    return false;
  }
}

bool isComparison(BinaryOpType op) {
  switch (op) {
#define TESSERA_COMPARE(E, n, N, k)                                            \
  case BinaryOpType::E:                                                        \
    return true;
#include "tessera/ops/Elementwise.def"
  default:
    return false;
  }
}

namespace {
Expr::Node make(NodeKind kind, std::vector<Expr> args = {}) {
  Expr::Node n;
  n.kind = kind;
  n.args = std::move(args);
  for (const Expr &a : n.args)
    if (!a.valid())
      throw Error("expression: an operand is an empty expression");
  return n;
}
} // namespace

PlaceHolder::PlaceHolder(unsigned index) : Expr([&] {
  if (index == 0)
    throw Error("expression placeholders count from 1 (_1 is the first "
                "tensor)");
  Node n = make(NodeKind::PlaceHolder);
  n.index = index;
  return n;
}()) {}

Index::Index() : Expr(make(NodeKind::Index)) {}

Const::Const(double v, Type type) : Expr([&] {
  Node n = make(NodeKind::Const);
  n.value = v;
  n.type = type;
  return n;
}()) {}

Cast::Cast(const Expr &e, Type type) : Expr([&] {
  Node n = make(NodeKind::Cast, {e});
  n.type = type;
  return n;
}()) {}

UnaryOp::UnaryOp(UnaryOpType op, const Expr &a) : Expr([&] {
  Node n = make(NodeKind::Unary, {a});
  n.op = static_cast<std::uint8_t>(op);
  return n;
}()) {}

BinaryOp::BinaryOp(BinaryOpType op, const Expr &a, const Expr &b)
    : Expr([&] {
        Node n = make(NodeKind::Binary, {a, b});
        n.op = static_cast<std::uint8_t>(op);
        return n;
      }()) {}

TernaryOp::TernaryOp(TernaryOpType op, const Expr &a, const Expr &b,
                     const Expr &c)
    : Expr([&] {
        Node n = make(NodeKind::Ternary, {a, b, c});
        n.op = static_cast<std::uint8_t>(op);
        return n;
      }()) {}

std::string Expr::toString() const {
  const Node &n = node();
  std::ostringstream os;
  switch (n.kind) {
  case NodeKind::PlaceHolder:
    os << '_' << n.index;
    break;
  case NodeKind::Index:
    os << "index";
    break;
  case NodeKind::Const:
    os << n.value;
    break;
  case NodeKind::Cast:
    os << "cast<" << typeName(n.type) << ">(" << n.args[0].toString() << ')';
    break;
  case NodeKind::Unary:
    os << name(static_cast<UnaryOpType>(n.op)) << '(' << n.args[0].toString()
       << ')';
    break;
  case NodeKind::Binary:
    os << name(static_cast<BinaryOpType>(n.op)) << '(' << n.args[0].toString()
       << ", " << n.args[1].toString() << ')';
    break;
  case NodeKind::Ternary:
    os << (n.op == 0 ? "select(" : "clamp(") << n.args[0].toString() << ", "
       << n.args[1].toString() << ", " << n.args[2].toString() << ')';
    break;
  }
  return os.str();
}

namespace {

struct Typed {
  Type type;
  bool strong;
};

int rank(Type t) {
  switch (t) {
  case BOOL:
    return 0;
  case UNSIGNED_CHAR:
  case SIGNED_CHAR:
  case CHAR:
    return 1;
  case SHORT:
  case UNSIGNED_SHORT:
    return 2;
  case UNSIGNED_INT:
    return 3;
  case INT:
    return 4;
  case HALF:
    return 5;
  case FLOAT:
    return 6;
  }
  return 0;
}

Type promote(Type a, Type b) { return rank(a) >= rank(b) ? a : b; }

Typed combine(Typed a, Typed b) {
  if (a.strong != b.strong)
    return a.strong ? a : b;
  return {promote(a.type, b.type), a.strong};
}

Typed infer(const Expr &e, const std::vector<Type> &ph) {
  const Expr::Node &n = e.node();
  switch (n.kind) {
  case NodeKind::PlaceHolder:
    if (n.index > ph.size())
      throw TypeError("expression uses _" + std::to_string(n.index) +
                      " but only " + std::to_string(ph.size()) +
                      " tensors were given");
    return {ph[n.index - 1], true};
  case NodeKind::Index:
    return {UNSIGNED_INT, false};
  case NodeKind::Const:
    return {n.type, false};
  case NodeKind::Cast:
    infer(n.args[0], ph);
    return {n.type, true};
  case NodeKind::Unary: {
    Typed a = infer(n.args[0], ph);
    if (isPredicate(static_cast<UnaryOpType>(n.op)))
      return {BOOL, true};
    return a;
  }
  case NodeKind::Binary: {
    Typed a = infer(n.args[0], ph), b = infer(n.args[1], ph);
    if (isComparison(static_cast<BinaryOpType>(n.op)))
      return {BOOL, true};
    return combine(a, b);
  }
  case NodeKind::Ternary: {
    Typed a = infer(n.args[0], ph), b = infer(n.args[1], ph);
    Typed c = infer(n.args[2], ph);
    if (n.op == static_cast<std::uint8_t>(TernaryOpType::CLAMP))
      return combine(combine(a, b), c);
    return combine(a, b);
  }
  }
  return {FLOAT, false};
}

} // namespace

Type inferType(const Expr &e, const std::vector<Type> &placeholders) {
  return infer(e, placeholders).type;
}

} // namespace tessera::ops::expr
