// Host reference of the collectives: each element combined over the
// replicas in double, in replica order. The ring on the device combines in
// another order and in the element type, so tests compare within rounding.
#include "tessera/ops/Reference.hpp"

#include "tessera/support/Error.hpp"

#include <algorithm>
#include <limits>

namespace tessera::ops::reference {
namespace {

double identity(CollectiveOperator op) {
  switch (op) {
  case CollectiveOperator::MUL:
  case CollectiveOperator::LOGICAL_AND:
    return 1.0;
  case CollectiveOperator::MIN:
    return std::numeric_limits<double>::infinity();
  case CollectiveOperator::MAX:
    return -std::numeric_limits<double>::infinity();
  default:
    return 0.0;
  }
}

double combine(CollectiveOperator op, double acc, double x) {
  switch (op) {
  case CollectiveOperator::MUL:
    return acc * x;
  case CollectiveOperator::MIN:
    return std::min(acc, x);
  case CollectiveOperator::MAX:
    return std::max(acc, x);
  case CollectiveOperator::SQUARE_ADD:
    return acc + x * x;
  case CollectiveOperator::LOGICAL_AND:
    return acc != 0 && x != 0;
  case CollectiveOperator::LOGICAL_OR:
    return acc != 0 || x != 0;
  default:
    return acc + x;
  }
}

} // namespace

std::vector<double>
allReduce(CollectiveOperator op,
          const std::vector<std::vector<double>> &replicas) {
  TESSERA_INTERNAL_ASSERT(!replicas.empty(),
                          "allReduce reference: no replicas");
  if (op == CollectiveOperator::LOCAL)
    return replicas[0];
  std::vector<double> out(replicas[0].size(), identity(op));
  for (const std::vector<double> &v : replicas) {
    TESSERA_INTERNAL_ASSERT(v.size() == out.size(),
                            "allReduce reference: replica sizes differ");
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = combine(op, out[i], v[i]);
  }
  if (op == CollectiveOperator::MEAN)
    for (double &x : out)
      x /= double(replicas.size());
  return out;
}

std::vector<double>
reduceScatter(CollectiveOperator op,
              const std::vector<std::vector<double>> &replicas,
              unsigned replica) {
  TESSERA_INTERNAL_ASSERT(replica < replicas.size(),
                          "reduceScatter reference: no such replica");
  const std::size_t n = replicas[0].size(), r = replicas.size();
  const std::size_t chunk = (n + r - 1) / r;
  std::vector<std::vector<double>> padded;
  for (const std::vector<double> &v : replicas) {
    padded.push_back(v);
    padded.back().resize(chunk * r, 0.0);
  }
  const std::vector<double> all =
      op == CollectiveOperator::LOCAL ? padded[replica] : allReduce(op, padded);
  return std::vector<double>(all.begin() + replica * chunk,
                             all.begin() + (replica + 1) * chunk);
}

} // namespace tessera::ops::reference
