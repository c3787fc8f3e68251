// Conformance rows of the elementwise ops: one forward row per operation of
// Elementwise.def (through its named function, so a new row of the table
// gets a row here without an edit), one gradient row per differentiable
// operation, and the other popops-like ops: fused maps, broadcasting,
// select, clamp, casts, fill, zero, iota and scaled additions.
#include "Conformance.hpp"

#include "tessera/ops/Elementwise.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>

namespace tessera::conformance {
namespace {

using ops::expr::BinaryOpType;
using ops::expr::UnaryOpType;
using Unary = Tensor (*)(Graph &, const Tensor &, program::Sequence &);
using Binary = Tensor (*)(Graph &, const Tensor &, const Tensor &,
                          program::Sequence &);

// Every operation with its named function, and whether it has a gradient.
struct UnaryEntry {
  UnaryOpType op;
  Unary fn;
  bool differentiable;
};
struct BinaryEntry {
  BinaryOpType op;
  Binary fn;
  bool differentiable;
};

const std::vector<UnaryEntry> &unaryTable() {
  static const std::vector<UnaryEntry> table{
#define TESSERA_UNARY(E, n, N, k, g)                                           \
  {UnaryOpType::E,                                                             \
   [](Graph &gr, const Tensor &a, program::Sequence &p) {                      \
     return ops::n(gr, a, p);                                                  \
   },                                                                          \
   std::string_view(#g) != "NO_GRADIENT"},
#define TESSERA_PREDICATE(E, n, N, k)                                          \
  {UnaryOpType::E,                                                             \
   [](Graph &gr, const Tensor &a, program::Sequence &p) {                      \
     return ops::n(gr, a, p);                                                  \
   },                                                                          \
   false},
#include "tessera/ops/Elementwise.def"
  };
  return table;
}

const std::vector<BinaryEntry> &binaryTable() {
  static const std::vector<BinaryEntry> table{
#define TESSERA_BINARY(E, n, N, k, ga, gb)                                     \
  {BinaryOpType::E,                                                            \
   [](Graph &gr, const Tensor &a, const Tensor &b, program::Sequence &p) {     \
     return ops::n(gr, a, b, p);                                               \
   },                                                                          \
   true},
#define TESSERA_COMPARE(E, n, N, k)                                            \
  {BinaryOpType::E,                                                            \
   [](Graph &gr, const Tensor &a, const Tensor &b, program::Sequence &p) {     \
     return ops::n(gr, a, b, p);                                               \
   },                                                                          \
   false},
#include "tessera/ops/Elementwise.def"
  };
  return table;
}

// Operations defined only for positive operands are checked there.
bool positiveOnly(const std::string &name) {
  static const std::set<std::string> names{"log", "log1p", "sqrt", "rsqrt",
                                           "pow", "inv",   "div",  "rem"};
  return names.count(name) > 0;
}

Values operandA(const std::string &name, std::size_t n) {
  return positiveOnly(name) ? spread(n, 0.25, 2.0) : spread(n, -2.0, 2.0);
}

Values operandB(const std::string &name, std::size_t n) {
  return positiveOnly(name) ? spread(n, 0.6, 1.4, 1) : spread(n, -1.5, 1.5, 1);
}

Row unaryRow(const UnaryEntry &u) {
  Row row;
  row.name = ops::expr::name(u.op);
  row.types = {FLOAT, HALF};
  row.make = [u](Type type, unsigned, unsigned size) {
    const std::size_t n = 37 * size;
    const Values x = rounded(type, operandA(ops::expr::name(u.op), n));
    OpCase c;
    c.inputs = {HostInput(type, {n}, x)};
    c.build = [u](Graph &g, const auto &in, program::Sequence &p) {
      return std::vector<Tensor>{u.fn(g, in[0], p)};
    };
    const Type out = ops::expr::isPredicate(u.op) ? BOOL : type;
    Values want(n);
    for (std::size_t i = 0; i < n; ++i)
      want[i] = ops::reference::roundTo(out, ops::reference::unary(u.op, x[i]));
    c.expected = {Expected(want, tol(out, 2e-6, 4e-3))};
    return c;
  };
  return row;
}

Row binaryRow(const BinaryEntry &b) {
  Row row;
  row.name = ops::expr::name(b.op);
  row.types = {FLOAT, HALF};
  row.make = [b](Type type, unsigned, unsigned size) {
    const std::size_t n = 33 * size;
    const std::string name = ops::expr::name(b.op);
    const Values x = rounded(type, operandA(name, n));
    Values y = rounded(type, operandB(name, n));
    for (std::size_t i = 0; i < n; i += 5)
      y[i] = x[i]; // ties: equal operands
    OpCase c;
    c.inputs = {HostInput(type, {n}, x), HostInput(type, {n}, y)};
    c.build = [b](Graph &g, const auto &in, program::Sequence &p) {
      return std::vector<Tensor>{b.fn(g, in[0], in[1], p)};
    };
    const Type out = ops::expr::isComparison(b.op) ? BOOL : type;
    Values want(n);
    for (std::size_t i = 0; i < n; ++i)
      want[i] = ops::reference::roundTo(
          out, ops::reference::binary(b.op, x[i], y[i]));
    c.expected = {Expected(want, tol(out, 2e-6, 4e-3))};
    return c;
  };
  return row;
}

// dy * d(op)/dx at x, given y = op(x) as the forward pass stored it.
Row unaryGradientRow(const UnaryEntry &u) {
  Row row;
  row.name = std::string("unaryGradient_") + ops::expr::name(u.op);
  row.kind = Kind::Gradient;
  row.types = {FLOAT, HALF};
  row.make = [u](Type type, unsigned, unsigned size) {
    const std::size_t n = 16 * size;
    const Values x = rounded(type, operandA(ops::expr::name(u.op), n));
    const Values dy = rounded(type, spread(n, 0.5, 1.5, 2));
    Values y(n);
    for (std::size_t i = 0; i < n; ++i)
      y[i] = ops::reference::roundTo(type, ops::reference::unary(u.op, x[i]));
    OpCase c;
    c.inputs = {HostInput(type, {n}, x), HostInput(type, {n}, y),
                HostInput(type, {n}, dy)};
    c.build = [u](Graph &g, const auto &in, program::Sequence &p) {
      return std::vector<Tensor>{
          ops::unaryGradient(g, u.op, in[0], in[1], in[2], p)};
    };
    const Values want = finiteDifference(x, [&](const Values &v) {
      double l = 0;
      for (std::size_t i = 0; i < n; ++i)
        l += dy[i] * ops::reference::unary(u.op, v[i]);
      return l;
    });
    c.expected = {Expected(want, tol(type, 1e-4, 5e-3))};
    return c;
  };
  return row;
}

Row binaryGradientRow(const BinaryEntry &b) {
  Row row;
  row.name = std::string("binaryGradient_") + ops::expr::name(b.op);
  row.kind = Kind::Gradient;
  row.types = {FLOAT, HALF};
  row.make = [b](Type type, unsigned, unsigned size) {
    const std::size_t n = 12 * size;
    const std::string name = ops::expr::name(b.op);
    const Values x = rounded(type, operandA(name, n));
    const Values y = rounded(type, operandB(name, n));
    const Values dy = rounded(type, spread(n, 0.5, 1.5, 2));
    Values out(n);
    for (std::size_t i = 0; i < n; ++i)
      out[i] = ops::reference::roundTo(
          type, ops::reference::binary(b.op, x[i], y[i]));
    OpCase c;
    c.inputs = {HostInput(type, {n}, x), HostInput(type, {n}, y),
                HostInput(type, {n}, out), HostInput(type, {n}, dy)};
    c.build = [b](Graph &g, const auto &in, program::Sequence &p) {
      auto [da, db] =
          ops::binaryGradient(g, b.op, in[0], in[1], in[2], in[3], p);
      return std::vector<Tensor>{da, db};
    };
    auto loss = [&](const Values &a, const Values &bv) {
      double l = 0;
      for (std::size_t i = 0; i < n; ++i)
        l += dy[i] * ops::reference::binary(b.op, a[i], bv[i]);
      return l;
    };
    const Values da =
        finiteDifference(x, [&](const Values &v) { return loss(v, y); });
    const Values db =
        finiteDifference(y, [&](const Values &v) { return loss(x, v); });
    c.expected = {Expected(da, tol(type, 1e-4, 5e-3)),
                  Expected(db, tol(type, 1e-4, 5e-3))};
    return c;
  };
  return row;
}

} // namespace

std::vector<Row> elementwiseRows() {
  std::vector<Row> rows;
  for (const UnaryEntry &u : unaryTable())
    rows.push_back(unaryRow(u));
  for (const BinaryEntry &b : binaryTable())
    rows.push_back(binaryRow(b));
  return rows;
}

std::vector<Row> elementwiseGradientRows() {
  std::vector<Row> rows;
  for (const UnaryEntry &u : unaryTable())
    if (u.differentiable)
      rows.push_back(unaryGradientRow(u));
  for (const BinaryEntry &b : binaryTable())
    if (b.differentiable)
      rows.push_back(binaryGradientRow(b));
  return rows;
}

} // namespace tessera::conformance
