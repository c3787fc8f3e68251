// Host references of the nn ops, in double precision, straight from the
// definitions (no shifts or fusions: the ops' own tricks are what they
// check).
#include "tessera/ops/Reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::ops::reference {
namespace {

constexpr double kLogFloor = 1e-7;

double gelu(double x) {
  return 0.5 * x *
         (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

std::size_t argMaxRow(const double *x, std::size_t n) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < n; ++i)
    if (x[i] > x[best])
      best = i;
  return best;
}

} // namespace

std::vector<double> nonLinearity(NonLinearityType type,
                                 const std::vector<double> &x,
                                 std::size_t rowSize) {
  std::vector<double> y(x.size());
  switch (type) {
  case NonLinearityType::RELU:
    std::transform(x.begin(), x.end(), y.begin(),
                   [](double v) { return v > 0 ? v : 0.0; });
    return y;
  case NonLinearityType::GELU:
    std::transform(x.begin(), x.end(), y.begin(), gelu);
    return y;
  case NonLinearityType::SIGMOID:
    std::transform(x.begin(), x.end(), y.begin(),
                   [](double v) { return 1 / (1 + std::exp(-v)); });
    return y;
  case NonLinearityType::TANH:
    std::transform(x.begin(), x.end(), y.begin(),
                   [](double v) { return std::tanh(v); });
    return y;
  case NonLinearityType::SOFTMAX:
  case NonLinearityType::SOFTMAX_STABLE:
  case NonLinearityType::LOG_SOFTMAX:
    break;
  }
  for (std::size_t r = 0; r + rowSize <= x.size(); r += rowSize) {
    double sum = 0;
    for (std::size_t i = 0; i < rowSize; ++i)
      sum += std::exp(x[r + i]);
    for (std::size_t i = 0; i < rowSize; ++i)
      y[r + i] = type == NonLinearityType::LOG_SOFTMAX
                     ? x[r + i] - std::log(sum)
                     : std::exp(x[r + i]) / sum;
  }
  return y;
}

LossResult calcLossLabels(LossType type, const std::vector<double> &p,
                          const std::vector<long long> &labels, std::size_t n) {
  std::vector<double> t(p.size(), 0.0);
  std::vector<bool> masked(labels.size());
  for (std::size_t r = 0; r < labels.size(); ++r) {
    masked[r] = labels[r] < 0 || labels[r] >= static_cast<long long>(n);
    if (!masked[r])
      t[r * n + static_cast<std::size_t>(labels[r])] = 1.0;
  }
  LossResult res = calcLossTargets(type, p, t, n);
  res.numCorrect = 0;
  for (std::size_t r = 0; r < labels.size(); ++r) {
    if (masked[r]) {
      res.loss[r] = 0;
      std::fill(res.deltas.begin() + r * n, res.deltas.begin() + (r + 1) * n,
                0.0);
    } else if (argMaxRow(&p[r * n], n) == static_cast<std::size_t>(labels[r])) {
      ++res.numCorrect;
    }
  }
  return res;
}

LossResult calcLossTargets(LossType type, const std::vector<double> &p,
                           const std::vector<double> &t, std::size_t n) {
  LossResult res;
  const std::size_t b = p.size() / n;
  res.loss.assign(b, 0.0);
  res.deltas.resize(p.size());
  for (std::size_t r = 0; r < b; ++r) {
    for (std::size_t i = 0; i < n; ++i) {
      const double pi = p[r * n + i], ti = t[r * n + i];
      res.deltas[r * n + i] = pi - ti;
      res.loss[r] += type == LossType::SUM_SQUARED_LOSS
                         ? 0.5 * (pi - ti) * (pi - ti)
                         : -ti * std::log(std::max(pi, kLogFloor));
    }
    res.numCorrect += argMaxRow(&p[r * n], n) == argMaxRow(&t[r * n], n);
  }
  return res;
}

namespace {

// The statistic that element i of x belongs to, and how many there are.
struct Grouping {
  std::size_t n, c, s, groups;
  std::size_t numStats() const { return groups ? n * groups : c; }
  std::size_t statOf(std::size_t i) const {
    const std::size_t ch = i / s % c;
    return groups ? i / (c * s) * groups + ch / (c / groups) : ch;
  }
};

Grouping grouping(const std::vector<std::size_t> &shape, unsigned groups) {
  std::size_t s = 1;
  for (std::size_t d = 2; d < shape.size(); ++d)
    s *= shape[d];
  return {shape[0], shape[1], s, groups};
}

} // namespace

NormStatistics normStatistics(const std::vector<double> &x,
                              const std::vector<std::size_t> &shape,
                              unsigned groups, double eps, bool unbiased) {
  const Grouping g = grouping(shape, groups);
  std::vector<double> sum(g.numStats()), count(g.numStats());
  for (std::size_t i = 0; i < x.size(); ++i) {
    sum[g.statOf(i)] += x[i];
    count[g.statOf(i)] += 1;
  }
  NormStatistics st;
  st.mean.resize(g.numStats());
  for (std::size_t k = 0; k < st.mean.size(); ++k)
    st.mean[k] = sum[k] / count[k];
  std::vector<double> sq(g.numStats());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = x[i] - st.mean[g.statOf(i)];
    sq[g.statOf(i)] += d * d;
  }
  st.invStdDev.resize(g.numStats());
  for (std::size_t k = 0; k < sq.size(); ++k)
    st.invStdDev[k] =
        1 / std::sqrt(sq[k] / (unbiased ? count[k] - 1 : count[k]) + eps);
  return st;
}

std::pair<std::vector<double>, std::vector<double>>
normalise(const std::vector<double> &x, const std::vector<std::size_t> &shape,
          unsigned groups, const std::vector<double> &gamma,
          const std::vector<double> &beta, const NormStatistics &stats) {
  const Grouping g = grouping(shape, groups);
  std::vector<double> out(x.size()), whitened(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t k = g.statOf(i), ch = i / g.s % g.c;
    whitened[i] = (x[i] - stats.mean[k]) * stats.invStdDev[k];
    out[i] = whitened[i] * gamma[ch] + beta[ch];
  }
  return {out, whitened};
}

} // namespace tessera::ops::reference
