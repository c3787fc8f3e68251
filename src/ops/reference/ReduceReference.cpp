// Reference reductions: one pass over the input by multi-index, in double.
#include "tessera/ops/Reference.hpp"

#include "tessera/support/Error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace tessera::ops::reference {
namespace {

double identity(Operation op) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (op) {
  case Operation::MUL:
  case Operation::LOGICAL_AND:
    return 1;
  case Operation::MIN:
    return inf;
  case Operation::MAX:
  case Operation::LOG_ADD:
    return -inf;
  default:
    return 0;
  }
}

double logAddExp(double a, double b) {
  if (a < b)
    std::swap(a, b);
  if (std::isinf(a))
    return a;
  return a + std::log1p(std::exp(b - a));
}

double combine(Operation op, double a, double b) {
  switch (op) {
  case Operation::ADD:
  case Operation::SQUARE_ADD:
    return a + b;
  case Operation::MUL:
    return a * b;
  case Operation::MIN:
    return std::min(a, b);
  case Operation::MAX:
    return std::max(a, b);
  case Operation::LOG_ADD:
    return logAddExp(a, b);
  case Operation::LOGICAL_AND:
    return (a != 0 && b != 0) ? 1 : 0;
  case Operation::LOGICAL_OR:
    return (a != 0 || b != 0) ? 1 : 0;
  }
  return a;
}

// Output index of every input element: the kept dims' multi-index.
std::vector<std::size_t> outputIndex(const std::vector<std::size_t> &shape,
                                     const std::vector<bool> &reduced) {
  const std::size_t n = std::accumulate(shape.begin(), shape.end(),
                                        std::size_t(1), std::multiplies<>());
  std::vector<std::size_t> result(n), idx(shape.size(), 0);
  for (std::size_t e = 0; e < n; ++e) {
    std::size_t o = 0;
    for (std::size_t d = 0; d < shape.size(); ++d)
      if (!reduced[d])
        o = o * shape[d] + idx[d];
    result[e] = o;
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
  return result;
}

} // namespace

std::vector<double> reduce(const std::vector<double> &in,
                           const std::vector<std::size_t> &shape,
                           const std::vector<std::size_t> &dims, Operation op,
                           double scale, const std::vector<double> *initial,
                           Type type) {
  const std::vector<std::size_t> outShape =
      reducedShape("reference::reduce", shape, dims);
  std::vector<bool> reduced(shape.size(), false);
  for (std::size_t d : dims)
    reduced[d] = true;
  const std::size_t numOut = std::accumulate(
      outShape.begin(), outShape.end(), std::size_t(1), std::multiplies<>());
  const std::vector<std::size_t> oi = outputIndex(shape, reduced);
  std::vector<double> out(numOut, identity(op));
  if (op == Operation::LOG_ADD) {
    std::vector<double> mx(numOut, -std::numeric_limits<double>::infinity()),
        sum(numOut, 0.0);
    for (std::size_t e = 0; e < in.size(); ++e)
      mx[oi[e]] = std::max(mx[oi[e]], in[e]);
    for (std::size_t e = 0; e < in.size(); ++e)
      if (std::isfinite(mx[oi[e]]))
        sum[oi[e]] += std::exp(in[e] - mx[oi[e]]);
    for (std::size_t o = 0; o < numOut; ++o)
      out[o] = std::isfinite(mx[o]) ? mx[o] + std::log(sum[o]) : mx[o];
  } else {
    for (std::size_t e = 0; e < in.size(); ++e) {
      const double x = op == Operation::SQUARE_ADD ? in[e] * in[e] : in[e];
      out[oi[e]] = combine(op, out[oi[e]], x);
    }
  }
  const bool isInt = type == Type::INT || type == Type::UNSIGNED_INT;
  for (std::size_t o = 0; o < numOut; ++o) {
    double r = out[o];
    if (op == Operation::LOG_ADD)
      r += std::log(scale);
    else if (op != Operation::LOGICAL_AND && op != Operation::LOGICAL_OR)
      r = isInt ? std::trunc(r * scale) : r * scale;
    if (initial)
      r = combine(op, initial->at(o), r);
    out[o] = r;
  }
  return out;
}

namespace {

bool better(double a, std::size_t ia, double b, std::size_t ib, bool largest) {
  if (a != b)
    return largest ? a > b : a < b;
  return ia < ib;
}

} // namespace

TopKResult topK(const std::vector<double> &in, std::size_t rows,
                std::size_t cols, std::size_t k, bool largest, bool sorted) {
  TopKResult r;
  std::vector<std::size_t> order(cols);
  for (std::size_t row = 0; row < rows; ++row) {
    const double *v = in.data() + row * cols;
    std::iota(order.begin(), order.end(), std::size_t(0));
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return better(v[a], a, v[b], b, largest);
    });
    std::vector<std::size_t> best(order.begin(), order.begin() + k);
    if (!sorted)
      std::sort(best.begin(), best.end());
    for (std::size_t i : best) {
      r.values.push_back(v[i]);
      r.indices.push_back(i);
    }
  }
  return r;
}

std::vector<std::size_t> argMax(const std::vector<double> &in, std::size_t rows,
                                std::size_t cols) {
  return topK(in, rows, cols, 1, true, true).indices;
}

std::vector<std::size_t> argMin(const std::vector<double> &in, std::size_t rows,
                                std::size_t cols) {
  return topK(in, rows, cols, 1, false, true).indices;
}

} // namespace tessera::ops::reference
