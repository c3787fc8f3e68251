// Conformance rows of the popops-like ops around the operation table: a
// fused map, broadcasting, select, clamp, casts to every type, fill, zero,
// iota and the scaled additions.
#include "Conformance.hpp"

#include "tessera/ops/Elementwise.hpp"

#include <algorithm>
#include <cmath>

namespace tessera::conformance {
namespace {

using namespace ops::expr;

Row fusedMapRow() {
  Row row;
  row.name = "map_fused";
  row.types = {FLOAT, HALF};
  row.make = [](Type type, unsigned, unsigned size) {
    const std::size_t n = 41 * size;
    const Values a = rounded(type, spread(n, -1, 1));
    const Values b = rounded(type, spread(n, 0.5, 2, 1));
    const Expr e = Sigmoid(_1 * _2 + Const(0.5f)) - Square(_1) / _2;
    OpCase c;
    c.inputs = {HostInput(type, {n}, a), HostInput(type, {n}, b)};
    c.build = [e](Graph &g, const auto &in, program::Sequence &p) {
      return std::vector<Tensor>{ops::map(g, e, in, p)};
    };
    Values want(n);
    for (std::size_t i = 0; i < n; ++i)
      want[i] = ops::reference::roundTo(
          type, ops::reference::evaluate(e, {a[i], b[i]}));
    c.expected = {Expected(want, tol(type, 1e-5, 4e-3))};
    return c;
  };
  return row;
}

// The in-place and with-output forms of maps and named operations.
Row mapVariantsRow() {
  Row row;
  row.name = "map_inPlaceAndWithOutput";
  row.types = {FLOAT, HALF};
  row.make = [](Type type, unsigned, unsigned size) {
    const std::size_t n = 35 * size;
    const Values a = rounded(type, spread(n, -2, 2));
    const Values b = rounded(type, spread(n, -2, 2, 1));
    OpCase c;
    c.inputs = {HostInput(type, {n}, a), HostInput(type, {n}, b),
                HostInput(type, {n}, a)};
    c.build = [](Graph &g, const auto &in, program::Sequence &p) {
      Tensor out = g.clone(in[0], "out");
      Tensor expOut = g.clone(in[0], "expOut");
      ops::mapWithOutput(g, _1 * _2 - Const(1.0f), {in[0], in[1]}, out, p);
      ops::expWithOutput(g, in[1], expOut, p);
      ops::mapInPlace(g, Max(_1, _2), {in[0], in[1]}, p);
      ops::subInPlace(g, in[2], in[1], p);
      return std::vector<Tensor>{out, expOut, in[0], in[2]};
    };
    auto each = [&](auto f) {
      Values v(n);
      for (std::size_t i = 0; i < n; ++i)
        v[i] = ops::reference::roundTo(type, f(a[i], b[i]));
      return Expected(v, tol(type, 2e-6, 4e-3));
    };
    c.expected = {each([](double x, double y) { return x * y - 1; }),
                  each([](double, double y) { return std::exp(y); }),
                  each([](double x, double y) { return std::max(x, y); }),
                  each([](double x, double y) { return x - y; })};
    return c;
  };
  return row;
}

Row broadcastRow() {
  Row row;
  row.name = "add_broadcast";
  row.types = {FLOAT, HALF, INT};
  row.make = [](Type type, unsigned, unsigned size) {
    const std::size_t rows = 3 * size, cols = 7;
    const Values a = rounded(type, spread(rows, -9, 9));
    const Values b = rounded(type, spread(cols, -9, 9, 1));
    OpCase c;
    c.inputs = {HostInput(type, {rows, 1}, a), HostInput(type, {cols}, b)};
    c.build = [](Graph &g, const auto &in, program::Sequence &p) {
      return std::vector<Tensor>{ops::add(g, in[0], in[1], p),
                                 ops::mul(g, in[1], 3, p)};
    };
    Values sum, scaled;
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t k = 0; k < cols; ++k)
        sum.push_back(ops::reference::roundTo(type, a[r] + b[k]));
    for (double v : b)
      scaled.push_back(ops::reference::roundTo(type, 3 * v));
    c.expected = {Expected(sum, tol(type, 1e-6, 2e-3)),
                  Expected(scaled, tol(type, 1e-6, 2e-3))};
    return c;
  };
  return row;
}

Row selectClampRow() {
  Row row;
  row.name = "select_clamp";
  row.types = {FLOAT, HALF, INT};
  row.make = [](Type type, unsigned, unsigned size) {
    const std::size_t n = 29 * size;
    const Values a = rounded(type, spread(n, -6, 6));
    const Values b = rounded(type, spread(n, -6, 6, 1));
    const Values pred = rounded(INT, spread(n, 0, 2, 2));
    const Values lo{-2}, hi{3};
    OpCase c;
    c.inputs = {HostInput(type, {n}, a), HostInput(type, {n}, b),
                HostInput(BOOL, {n}, pred), HostInput(type, {}, lo),
                HostInput(type, {}, hi)};
    c.build = [](Graph &g, const auto &in, program::Sequence &p) {
      return std::vector<Tensor>{ops::select(g, in[0], in[1], in[2], p),
                                 ops::clamp(g, in[0], in[3], in[4], p)};
    };
    Values sel(n), clamped(n);
    for (std::size_t i = 0; i < n; ++i) {
      sel[i] = pred[i] != 0 ? a[i] : b[i];
      clamped[i] = std::min(std::max(a[i], lo[0]), hi[0]);
    }
    c.expected = {Expected(sel, 0), Expected(clamped, 0)};
    return c;
  };
  return row;
}

// cast from the row's type to \p to.
Row castRow(Type to) {
  Row row;
  row.name = "cast_to_" + typeLabel(to);
  row.types = {FLOAT, HALF, INT, UNSIGNED_INT, BOOL};
  row.make = [to](Type type, unsigned, unsigned size) {
    const std::size_t n = 31 * size;
    // Unsigned targets and sources see no negative values.
    const bool unsignedSide = to == UNSIGNED_INT || type == UNSIGNED_INT;
    Values x = type == BOOL
                   ? rounded(INT, spread(n, 0, 2))
                   : rounded(type, spread(n, unsignedSide ? 0 : -40, 40));
    OpCase c;
    c.inputs = {HostInput(type, {n}, x)};
    c.build = [to](Graph &g, const auto &in, program::Sequence &p) {
      return std::vector<Tensor>{ops::cast(g, in[0], to, p)};
    };
    Values want(n);
    for (std::size_t i = 0; i < n; ++i)
      want[i] = ops::reference::roundTo(to, x[i]);
    c.expected = {Expected(want, 0)};
    return c;
  };
  return row;
}

// fill, zero and (for integers) iota, writing over host-written tensors.
Row fillRow() {
  Row row;
  row.name = "fill_zero_iota";
  row.types = {FLOAT, HALF, INT, UNSIGNED_INT, BOOL};
  row.make = [](Type type, unsigned, unsigned size) {
    const std::size_t n = 23 * size;
    const bool integer = type == INT || type == UNSIGNED_INT;
    const Values old = rounded(type, spread(n, 1, 9));
    OpCase c;
    c.inputs = {HostInput(type, {n}, old), HostInput(type, {n}, old),
                HostInput(type, {n}, old)};
    c.build = [integer](Graph &g, const auto &in, program::Sequence &p) {
      ops::fill(g, in[0], 3.25, p);
      ops::zero(g, in[1], p);
      if (integer)
        ops::iota(g, in[2], 5, p);
      return std::vector<Tensor>{in[0], in[1], in[2]};
    };
    Values counted = old;
    if (integer)
      for (std::size_t i = 0; i < n; ++i)
        counted[i] = double(5 + i);
    c.expected = {Expected(Values(n, ops::reference::roundTo(type, 3.25)), 0),
                  Expected(Values(n, 0.0), 0), Expected(counted, 0)};
    return c;
  };
  return row;
}

// The scaled additions: a + s b, sa a + sb b, a + t b for a scalar tensor
// t, and the subtracting forms.
Row scaledAddRow() {
  Row row;
  row.name = "scaledAddTo";
  row.types = {FLOAT, HALF};
  row.make = [](Type type, unsigned, unsigned size) {
    const std::size_t n = 27 * size;
    const Values a = rounded(type, spread(n, -4, 4));
    const Values b = rounded(type, spread(n, -4, 4, 1));
    OpCase c;
    for (int k = 0; k < 5; ++k)
      c.inputs.push_back(HostInput(type, {n}, a));
    c.inputs.push_back(HostInput(type, {n}, b));
    c.inputs.push_back(HostInput(type, {}, Values{0.75}));
    c.build = [](Graph &g, const auto &in, program::Sequence &p) {
      ops::scaledAddTo(g, in[0], in[5], 0.5f, p);
      ops::scaledAddTo(g, in[1], 1.5f, in[5], -0.25f, p);
      ops::scaledAddTo(g, in[2], in[5], in[6], p);
      ops::scaledSubtractFrom(g, in[3], in[5], 2.0f, p);
      ops::scaledSubtractFrom(g, in[4], in[5], in[6], p);
      return std::vector<Tensor>{in[0], in[1], in[2], in[3], in[4]};
    };
    auto expect = [&](double sa, double sb) {
      Values v(n);
      for (std::size_t i = 0; i < n; ++i)
        v[i] = ops::reference::roundTo(type, sa * a[i] + sb * b[i]);
      return Expected(v, tol(type, 2e-6, 4e-3));
    };
    c.expected = {expect(1, 0.5), expect(1.5, -0.25), expect(1, 0.75),
                  expect(1, -2), expect(1, -0.75)};
    return c;
  };
  return row;
}

} // namespace

std::vector<Row> miscElementwiseRows() {
  std::vector<Row> rows{fusedMapRow(),    mapVariantsRow(), broadcastRow(),
                        selectClampRow(), fillRow(),        scaledAddRow()};
  for (Type to : {FLOAT, HALF, INT, UNSIGNED_INT, BOOL})
    rows.push_back(castRow(to));
  return rows;
}

} // namespace tessera::conformance
