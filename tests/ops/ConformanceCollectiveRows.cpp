// Conformance rows of the collectives: allReduce with every arithmetic and
// logical operator, in place, reduceScatter of an uneven size and
// allGather, on four replicas that each write their own data.
#include "Conformance.hpp"

#include "tessera/ops/Collectives.hpp"

#include <algorithm>
#include <cmath>

namespace tessera::conformance {

using ops::CollectiveOperator;

namespace {

constexpr unsigned kReplicas = 4;

std::vector<Values> perReplica(Type type, std::size_t n, double lo, double hi) {
  std::vector<Values> v;
  for (unsigned r = 0; r < kReplicas; ++r)
    v.push_back(type == BOOL ? rounded(INT, spread(n, 0, 2, r + 1))
                             : rounded(type, spread(n, lo, hi, r + 1)));
  return v;
}

// Rounding of a combination grows with the magnitudes combined.
Values magnitude(const std::vector<Values> &x, const Values &want) {
  std::vector<Values> a;
  for (const Values &v : x)
    a.push_back(absolute(v));
  Values s = ops::reference::allReduce(CollectiveOperator::ADD, a);
  for (std::size_t i = 0; i < s.size(); ++i)
    s[i] = std::max(s[i], std::fabs(want[i]));
  return s;
}

Row allReduceRow(CollectiveOperator op, bool inPlace) {
  Row row;
  row.name = std::string(inPlace ? "allReduceInPlace_" : "allReduce_") +
             std::string(ops::collectiveOperatorName(op));
  const bool logical = op == CollectiveOperator::LOGICAL_AND ||
                       op == CollectiveOperator::LOGICAL_OR;
  row.types =
      logical ? std::vector<Type>{BOOL} : std::vector<Type>{FLOAT, HALF};
  row.make = [op, inPlace](Type type, unsigned, unsigned size) {
    const std::size_t n = 37 * size;
    const bool mul = op == CollectiveOperator::MUL;
    const auto x = perReplica(type, n, mul ? 0.5 : -3, mul ? 1.5 : 3);
    OpCase c;
    c.replicas = kReplicas;
    c.inputs = {HostInput(type, {n}, x)};
    c.build = [op, inPlace](Graph &g, const auto &in, program::Sequence &p) {
      if (!inPlace)
        return std::vector<Tensor>{ops::allReduce(g, in[0], op, p)};
      ops::allReduceInPlace(g, in[0], op, p);
      return std::vector<Tensor>{in[0]};
    };
    const Values want = ops::reference::allReduce(op, x);
    c.expected = {Expected(rounded(type, want), tol(type, 2e-6, 4e-3),
                           magnitude(x, want))};
    return c;
  };
  return row;
}

Row reduceScatterRow() {
  Row row;
  row.name = "reduceScatter_ADD";
  row.types = {FLOAT, HALF};
  row.make = [](Type type, unsigned, unsigned size) {
    const std::size_t n = 37 * size; // not a multiple of 4: padded
    const auto x = perReplica(type, n, -3, 3);
    OpCase c;
    c.replicas = kReplicas;
    c.inputs = {HostInput(type, {n}, x)};
    c.build = [](Graph &g, const auto &in, program::Sequence &p) {
      return std::vector<Tensor>{
          ops::reduceScatter(g, in[0], CollectiveOperator::ADD, p)};
    };
    const Values sum = ops::reference::allReduce(CollectiveOperator::ADD, x);
    const Values scale = magnitude(x, sum);
    std::vector<Values> parts;
    for (unsigned r = 0; r < kReplicas; ++r)
      parts.push_back(rounded(
          type, ops::reference::reduceScatter(CollectiveOperator::ADD, x, r)));
    Expected e(parts, tol(type, 2e-6, 4e-3));
    e.scale.assign(parts[0].size(),
                   *std::max_element(scale.begin(), scale.end()));
    c.expected = {e};
    return c;
  };
  return row;
}

Row allGatherRow() {
  Row row;
  row.name = "allGather";
  row.types = {FLOAT, HALF, INT};
  row.make = [](Type type, unsigned, unsigned size) {
    const Shape shape{3, 5 * size};
    const auto x = perReplica(type, product(shape), -9, 9);
    OpCase c;
    c.replicas = kReplicas;
    c.inputs = {HostInput(type, shape, x)};
    c.build = [](Graph &g, const auto &in, program::Sequence &p) {
      return std::vector<Tensor>{ops::allGather(g, in[0], p)};
    };
    Values all;
    for (const Values &v : x)
      all.insert(all.end(), v.begin(), v.end());
    c.expected = {Expected(all, 0)};
    return c;
  };
  return row;
}

} // namespace

std::vector<Row> collectiveRows() {
  std::vector<Row> rows;
  for (CollectiveOperator op :
       {CollectiveOperator::ADD, CollectiveOperator::MEAN,
        CollectiveOperator::MUL, CollectiveOperator::MIN,
        CollectiveOperator::MAX, CollectiveOperator::SQUARE_ADD,
        CollectiveOperator::LOGICAL_AND, CollectiveOperator::LOGICAL_OR})
    rows.push_back(allReduceRow(op, false));
  rows.push_back(allReduceRow(CollectiveOperator::ADD, true));
  rows.push_back(reduceScatterRow());
  rows.push_back(allGatherRow());
  return rows;
}

} // namespace tessera::conformance
