// Conformance rows of the reductions: every Operation over several sets of
// dimensions (float, half and int; bool for the logical ones), a scaled
// update into an existing output, argMax, argMin and both forms of topK.
#include "Conformance.hpp"

#include "tessera/ops/Reduce.hpp"

#include <algorithm>
#include <cmath>

namespace tessera::conformance {
namespace {

using ops::Operation;
using Dims = std::vector<std::size_t>;

const std::vector<Dims> kDimSets = {{2}, {0}, {0, 2}, {0, 1, 2}};

bool logical(Operation op) {
  return op == Operation::LOGICAL_AND || op == Operation::LOGICAL_OR;
}

// Inputs that keep every operation in range: products near 1 (or +-1 for
// integers), small integers, 0/1 for bools.
Values inputFor(Operation op, Type type, std::size_t n) {
  if (type == BOOL)
    return rounded(INT, spread(n, op == Operation::LOGICAL_AND ? 0.1 : 0, 1.2));
  if (type == INT && op == Operation::MUL) {
    Values v(n, 1.0);
    for (std::size_t i = 0; i < n; i += 3)
      v[i] = -1;
    return v;
  }
  if (type == INT)
    return rounded(INT, spread(n, -6, 7));
  return rounded(type,
                 op == Operation::MUL ? spread(n, 0.9, 1.1) : spread(n, -2, 2));
}

// The magnitude a result's rounding grows with: the reduction of |x| (of
// x^2 for SQUARE_ADD) by ADD.
Values magnitude(Operation op, const Values &x, const Shape &shape,
                 const Dims &dims) {
  Values a = absolute(x);
  if (op == Operation::SQUARE_ADD)
    for (double &v : a)
      v *= v;
  Values m = ops::reference::reduce(a, shape, dims, Operation::ADD);
  for (double &v : m)
    v *= 1e-2;
  return m;
}

Row reduceRow(Operation op) {
  Row row;
  row.name = "reduce_" + std::string(ops::operationName(op));
  if (logical(op))
    row.types = {BOOL};
  else if (op == Operation::LOG_ADD)
    row.types = {FLOAT, HALF};
  else
    row.types = {FLOAT, HALF, INT};
  row.make = [op](Type type, unsigned, unsigned size) {
    const Shape shape{6 * size, 5, 7};
    const Values x = inputFor(op, type, product(shape));
    OpCase c;
    c.inputs = {HostInput(type, shape, x)};
    c.build = [op](Graph &g, const auto &in, program::Sequence &p) {
      std::vector<Tensor> outs;
      for (const Dims &d : kDimSets)
        outs.push_back(ops::reduce(g, in[0], d, op, p));
      return outs;
    };
    for (const Dims &d : kDimSets) {
      Values want = ops::reference::reduce(x, shape, d, op, 1.0, nullptr, type);
      Values scale = magnitude(op, x, shape, d);
      for (std::size_t i = 0; i < want.size(); ++i)
        scale[i] = std::max(scale[i], std::fabs(want[i]));
      c.expected.push_back(
          Expected(rounded(type, want), tol(type, 2e-6, 2e-3), scale));
    }
    return c;
  };
  return row;
}

// reduceWithOutput with a scale and an update: out = out + 0.5 * sum.
Row reduceUpdateRow() {
  Row row;
  row.name = "reduceWithOutput_scaledUpdate";
  row.types = {FLOAT, HALF};
  row.make = [](Type type, unsigned, unsigned size) {
    const Shape shape{9 * size, 13};
    const Values x = rounded(type, spread(product(shape), -2, 2));
    const Values old = rounded(type, spread(13, -5, 5, 1));
    OpCase c;
    c.inputs = {HostInput(type, shape, x), HostInput(type, {13}, old)};
    c.build = [](Graph &g, const auto &in, program::Sequence &p) {
      ops::reduceWithOutput(g, in[0], in[1], {0},
                            ops::ReduceParams(Operation::ADD, true, 0.5f), p);
      return std::vector<Tensor>{in[1]};
    };
    const Values want =
        ops::reference::reduce(x, shape, {0}, Operation::ADD, 0.5, &old, type);
    Values scale = magnitude(Operation::ADD, x, shape, {0});
    for (std::size_t i = 0; i < want.size(); ++i)
      scale[i] = std::max(scale[i] * 100, std::fabs(want[i]));
    c.expected = {Expected(rounded(type, want), tol(type, 2e-6, 2e-3), scale)};
    return c;
  };
  return row;
}

// reduce to the other float type: float partials, one rounding at the end.
Row reduceOtherTypeRow() {
  Row row;
  row.name = "reduce_ADD_otherOutputType";
  row.types = {FLOAT, HALF};
  row.make = [](Type type, unsigned, unsigned size) {
    const Shape shape{7 * size, 12};
    const Type out = type == FLOAT ? HALF : FLOAT;
    const Values x = rounded(type, spread(product(shape), -2, 2));
    OpCase c;
    c.inputs = {HostInput(type, shape, x)};
    c.build = [out](Graph &g, const auto &in, program::Sequence &p) {
      return std::vector<Tensor>{
          ops::reduce(g, in[0], out, {0}, Operation::ADD, p)};
    };
    const Values want = ops::reference::reduce(x, shape, {0}, Operation::ADD);
    Values scale = magnitude(Operation::ADD, x, shape, {0});
    for (std::size_t i = 0; i < want.size(); ++i)
      scale[i] = std::max(scale[i], std::fabs(want[i]));
    c.expected = {Expected(rounded(out, want), tol(out, 2e-6, 2e-3), scale)};
    return c;
  };
  return row;
}

// Rows with ties (half rounding makes more): the lowest index wins.
Row argRow(bool max) {
  Row row;
  row.name = max ? "argMax" : "argMin";
  row.types = {FLOAT, HALF, INT, UNSIGNED_INT};
  row.make = [max](Type type, unsigned, unsigned size) {
    const std::size_t b = 5 * size, n = 11;
    const Values x = rounded(type, spread(b * n, type == UNSIGNED_INT ? 0 : -4,
                                          type == INT ? 4.6 : 4));
    OpCase c;
    c.inputs = {HostInput(type, {b, n}, x)};
    c.build = [max](Graph &g, const auto &in, program::Sequence &p) {
      return std::vector<Tensor>{max ? ops::argMax(g, in[0], p)
                                     : ops::argMin(g, in[0], p)};
    };
    const auto idx =
        max ? ops::reference::argMax(x, b, n) : ops::reference::argMin(x, b, n);
    c.expected = {Expected(Values(idx.begin(), idx.end()), 0)};
    return c;
  };
  return row;
}

Row topKRow(bool largest, bool sorted) {
  Row row;
  row.name = std::string("topK_") + (largest ? "largest" : "smallest") +
             (sorted ? "Sorted" : "Unsorted");
  row.types = {FLOAT, HALF, INT};
  row.make = [largest, sorted](Type type, unsigned, unsigned size) {
    const std::size_t b = 4 * size, n = 13, k = 4;
    const Values x = rounded(type, spread(b * n, -6, 6));
    OpCase c;
    c.inputs = {HostInput(type, {b, n}, x)};
    c.build = [largest, sorted](Graph &g, const auto &in,
                                program::Sequence &p) {
      auto [values, indices] = ops::topK(g, in[0], 4, largest, sorted, p);
      return std::vector<Tensor>{values, indices};
    };
    const auto want = ops::reference::topK(x, b, n, k, largest, sorted);
    c.expected = {
        Expected(want.values, 0),
        Expected(Values(want.indices.begin(), want.indices.end()), 0)};
    return c;
  };
  return row;
}

} // namespace

std::vector<Row> reduceRows() {
  std::vector<Row> rows;
  for (Operation op :
       {Operation::ADD, Operation::MUL, Operation::MIN, Operation::MAX,
        Operation::SQUARE_ADD, Operation::LOG_ADD, Operation::LOGICAL_AND,
        Operation::LOGICAL_OR})
    rows.push_back(reduceRow(op));
  rows.push_back(reduceUpdateRow());
  rows.push_back(reduceOtherTypeRow());
  rows.push_back(argRow(true));
  rows.push_back(argRow(false));
  for (bool largest : {true, false})
    for (bool sorted : {true, false})
      rows.push_back(topKRow(largest, sorted));
  return rows;
}

} // namespace tessera::conformance
