// The nn family's vertices: softmax over whole rows (forward, in place and
// gradient) and the loss over whole rows, each running a list of rows on
// one worker. Everything computes in float; half rows are converted a chunk
// at a time so no vertex allocates.
#include "NnInternal.hpp"
#include "OpsInternal.hpp"

#include "tessera/Vertex.hpp"
#include "tessera/device/Target.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace tessera::ops {
namespace {

using namespace nn;

constexpr unsigned kChunk = 256;

template <typename T> void loadF(const T *src, float *dst, unsigned m) {
  for (unsigned k = 0; k < m; ++k)
    dst[k] = static_cast<float>(src[k]);
}
template <typename T> void storeF(const float *src, T *dst, unsigned m) {
  for (unsigned k = 0; k < m; ++k)
    dst[k] = T(src[k]);
}

// Four running maxima so the comparison chain does not serialise the loop.
template <typename T> float rowMax(const T *x, unsigned n) {
  float m[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
  unsigned i = 0;
  for (; i + 4 <= n; i += 4)
    for (unsigned k = 0; k < 4; ++k)
      m[k] = std::max(m[k], static_cast<float>(x[i + k]));
  for (; i < n; ++i)
    m[0] = std::max(m[0], static_cast<float>(x[i]));
  return std::max(std::max(m[0], m[1]), std::max(m[2], m[3]));
}

// Safe when in == out: every chunk is read before it is written.
template <typename T>
void softmaxRow(const T *in, T *out, unsigned n, unsigned mode) {
  const float shift = mode == kSoftmax ? 0.0f : rowMax(in, n);
  alignas(32) float buf[kChunk];
  float sum = 0;
  for (unsigned b = 0; b < n; b += kChunk) {
    const unsigned m = std::min(kChunk, n - b);
    loadF(in + b, buf, m);
    for (unsigned k = 0; k < m; ++k) {
      buf[k] = std::exp(buf[k] - shift);
      sum += buf[k];
    }
    // Float rows keep the exponentials; half rows recompute them below
    // rather than round them to half twice.
    if constexpr (std::is_same_v<T, float>)
      if (mode != kLogSoftmax)
        std::copy(buf, buf + m, out + b);
  }
  if (mode == kLogSoftmax) {
    const float lse = shift + std::log(sum);
    for (unsigned b = 0; b < n; b += kChunk) {
      const unsigned m = std::min(kChunk, n - b);
      loadF(in + b, buf, m);
      for (unsigned k = 0; k < m; ++k)
        buf[k] -= lse;
      storeF(buf, out + b, m);
    }
    return;
  }
  const float inv = 1.0f / sum;
  if constexpr (std::is_same_v<T, float>) {
    for (unsigned i = 0; i < n; ++i)
      out[i] *= inv;
  } else {
    for (unsigned b = 0; b < n; b += kChunk) {
      const unsigned m = std::min(kChunk, n - b);
      loadF(in + b, buf, m);
      for (unsigned k = 0; k < m; ++k)
        buf[k] = std::exp(buf[k] - shift) * inv;
      storeF(buf, out + b, m);
    }
  }
}

// softmax: dx = y * (dy - sum(y * dy)); log-softmax: dx = dy - exp(y) *
// sum(dy).
template <typename T>
void softmaxGradRow(const T *y, const T *dy, T *dx, unsigned n, bool log) {
  alignas(32) float ybuf[kChunk], gbuf[kChunk];
  float s = 0;
  for (unsigned b = 0; b < n; b += kChunk) {
    const unsigned m = std::min(kChunk, n - b);
    loadF(dy + b, gbuf, m);
    if (log) {
      for (unsigned k = 0; k < m; ++k)
        s += gbuf[k];
    } else {
      loadF(y + b, ybuf, m);
      for (unsigned k = 0; k < m; ++k)
        s += ybuf[k] * gbuf[k];
    }
  }
  for (unsigned b = 0; b < n; b += kChunk) {
    const unsigned m = std::min(kChunk, n - b);
    loadF(y + b, ybuf, m);
    loadF(dy + b, gbuf, m);
    if (log)
      for (unsigned k = 0; k < m; ++k)
        ybuf[k] = gbuf[k] - std::exp(ybuf[k]) * s;
    else
      for (unsigned k = 0; k < m; ++k)
        ybuf[k] = ybuf[k] * (gbuf[k] - s);
    storeF(ybuf, dx + b, m);
  }
}

// The index of the largest element, the lowest among equal ones (NaNs are
// never largest).
template <typename T> unsigned rowArgMax(const T *x, unsigned n) {
  unsigned best = 0;
  float bestValue = -INFINITY;
  for (unsigned i = 0; i < n; ++i) {
    const float v = static_cast<float>(x[i]);
    if (v > bestValue) {
      bestValue = v;
      best = i;
    }
  }
  return best;
}

// One row against a label; returns 1 when the row is correct. A label
// outside [0, n) masks the row.
template <typename T>
unsigned lossLabelRow(const T *p, long long label, T *d, T &loss, unsigned n,
                      unsigned type) {
  if (label < 0 || label >= static_cast<long long>(n)) {
    std::fill(d, d + n, T(0.0f));
    loss = T(0.0f);
    return 0;
  }
  const unsigned l = static_cast<unsigned>(label);
  alignas(32) float buf[kChunk];
  float squares = 0;
  for (unsigned b = 0; b < n; b += kChunk) {
    const unsigned m = std::min(kChunk, n - b);
    loadF(p + b, buf, m);
    if (l >= b && l < b + m)
      buf[l - b] -= 1.0f;
    for (unsigned k = 0; k < m; ++k)
      squares += buf[k] * buf[k];
    storeF(buf, d + b, m);
  }
  loss = T(type == kSumSquared
               ? 0.5f * squares
               : -std::log(std::max(static_cast<float>(p[l]), kLogFloor)));
  return rowArgMax(p, n) == l ? 1u : 0u;
}

// One row against a target distribution.
template <typename T>
unsigned lossTargetRow(const T *p, const T *t, T *d, T &loss, unsigned n,
                       unsigned type) {
  alignas(32) float pb[kChunk], tb[kChunk];
  float acc = 0;
  for (unsigned b = 0; b < n; b += kChunk) {
    const unsigned m = std::min(kChunk, n - b);
    loadF(p + b, pb, m);
    loadF(t + b, tb, m);
    if (type == kSumSquared)
      for (unsigned k = 0; k < m; ++k)
        acc += (pb[k] - tb[k]) * (pb[k] - tb[k]);
    else
      for (unsigned k = 0; k < m; ++k)
        acc -= tb[k] * std::log(std::max(pb[k], kLogFloor));
    for (unsigned k = 0; k < m; ++k)
      pb[k] -= tb[k];
    storeF(pb, d + b, m);
  }
  loss = T(type == kSumSquared ? 0.5f * acc : acc);
  return rowArgMax(p, n) == rowArgMax(t, n) ? 1u : 0u;
}

/// Softmax of each row of a list (mode: SoftmaxMode).
template <typename T> class SoftmaxRows : public Vertex {
public:
  Vector<Input<Vector<T>>> in;
  Vector<Output<Vector<T>>> out;
  unsigned mode;

  bool compute() {
    for (std::size_t r = 0; r < in.size(); ++r)
      softmaxRow<T>(in[r].data(), out[r].data(),
                    static_cast<unsigned>(in[r].size()), mode);
    return true;
  }
};

/// Softmax of each row of a list, in place.
template <typename T> class SoftmaxRowsInPlace : public Vertex {
public:
  Vector<InOut<Vector<T>>> data;
  unsigned mode;

  bool compute() {
    for (std::size_t r = 0; r < data.size(); ++r)
      softmaxRow<T>(data[r].data(), data[r].data(),
                    static_cast<unsigned>(data[r].size()), mode);
    return true;
  }
};

/// The input gradient of softmax (mode kSoftmax or kSoftmaxStable) or
/// log-softmax (kLogSoftmax) of each row, from the output and its gradient.
template <typename T> class SoftmaxGradRows : public Vertex {
public:
  Vector<Input<Vector<T>>> out;
  Vector<Input<Vector<T>>> outGrad;
  Vector<Output<Vector<T>>> inGrad;
  unsigned mode;

  bool compute() {
    for (std::size_t r = 0; r < out.size(); ++r)
      softmaxGradRow<T>(out[r].data(), outGrad[r].data(), inGrad[r].data(),
                        static_cast<unsigned>(out[r].size()),
                        mode == kLogSoftmax);
    return true;
  }
};

/// Loss, deltas and the count of correct rows against labels.
template <typename T, typename L> class LossLabelRows : public Vertex {
public:
  Vector<Input<Vector<T>>> probs;
  Input<Vector<L>> labels;
  Vector<Output<Vector<T>>> deltas;
  Output<Vector<T>> loss;
  Output<unsigned> correct;
  unsigned lossType;

  bool compute() {
    unsigned c = 0;
    for (std::size_t r = 0; r < probs.size(); ++r)
      c += lossLabelRow<T>(probs[r].data(), static_cast<long long>(labels[r]),
                           deltas[r].data(), loss[r],
                           static_cast<unsigned>(probs[r].size()), lossType);
    correct = c;
    return true;
  }
};

/// Loss, deltas and the count of correct rows against target rows.
template <typename T> class LossTargetRows : public Vertex {
public:
  Vector<Input<Vector<T>>> probs;
  Vector<Input<Vector<T>>> targets;
  Vector<Output<Vector<T>>> deltas;
  Output<Vector<T>> loss;
  Output<unsigned> correct;
  unsigned lossType;

  bool compute() {
    unsigned c = 0;
    for (std::size_t r = 0; r < probs.size(); ++r)
      c += lossTargetRow<T>(probs[r].data(), targets[r].data(),
                            deltas[r].data(), loss[r],
                            static_cast<unsigned>(probs[r].size()), lossType);
    correct = c;
    return true;
  }
};

// Worker cycles of a vertex that walks the rows of its list field
// fieldSizes[field]: a fixed cost, a per-row cost and a per-vector cost.
// A row vertex's figures, read from the target compiled for.
struct RowsCost {
  std::uint64_t fixed, perRow, perVector;
};
using RowsCostOf = RowsCost (*)(const CostFigures &);

CycleEstimator rowsEstimator(unsigned field, Type type, RowsCostOf costOf) {
  return [=](const VertexInstanceShape &s, const Target &t) {
    const RowsCost c = costOf(t.costs());
    const std::uint64_t width = t.getVectorWidth(type);
    std::uint64_t cycles = c.fixed;
    for (std::uint32_t n : s.fieldSizes[field])
      cycles += c.perRow + c.perVector * ((n + width - 1) / width);
    return cycles;
  };
}

template <typename T> void registerSoftmax(VertexRegistry &registry) {
  const Type type = typeOf<T>();
  // Per row: the setup of a small loop nest and one division or log, about
  // a unary vertex's fixed cost (estimate). Per vector: a max pass (as a
  // reduction), an exp-and-sum pass and a scaling pass (as binary ops); the
  // unstable form skips the max pass on the IPU, charged here all the same
  // as the estimator cannot see the mode.
  const RowsCostOf forward = [](const CostFigures &c) {
    return RowsCost{c.unaryOpWorkerCycles, c.unaryOpWorkerCycles,
                    c.reduceWorkerCyclesPerVector +
                        2ull * c.binaryOpWorkerCyclesPerVector};
  };
  {
    using V = SoftmaxRows<T>;
    codelet::VertexDescriber<V> d(
        templateName("tessera::ops::SoftmaxRows", {type}));
    d.field("in", &V::in).field("out", &V::out).field("mode", &V::mode);
    registry.addBuiltin(d.take(), rowsEstimator(0, type, forward));
  }
  {
    using V = SoftmaxRowsInPlace<T>;
    codelet::VertexDescriber<V> d(
        templateName("tessera::ops::SoftmaxRowsInPlace", {type}));
    d.field("data", &V::data).field("mode", &V::mode);
    registry.addBuiltin(d.take(), rowsEstimator(0, type, forward));
  }
  {
    // A multiply-and-sum pass and an output pass, as binary ops.
    using V = SoftmaxGradRows<T>;
    codelet::VertexDescriber<V> d(
        templateName("tessera::ops::SoftmaxGradRows", {type}));
    d.field("out", &V::out)
        .field("outGrad", &V::outGrad)
        .field("inGrad", &V::inGrad)
        .field("mode", &V::mode);
    registry.addBuiltin(
        d.take(), rowsEstimator(0, type, [](const CostFigures &c) {
          return RowsCost{c.binaryOpWorkerCycles, c.unaryOpWorkerCycles,
                          2ull * c.binaryOpWorkerCyclesPerVector};
        }));
  }
}

template <typename T, typename L>
void registerLossLabels(VertexRegistry &registry) {
  using V = LossLabelRows<T, L>;
  codelet::VertexDescriber<V> d(
      templateName("tessera::ops::LossLabelRows", {typeOf<T>(), typeOf<L>()}));
  d.field("probs", &V::probs)
      .field("labels", &V::labels)
      .field("deltas", &V::deltas)
      .field("loss", &V::loss)
      .field("correct", &V::correct)
      .field("lossType", &V::lossType);
  // Per vector: an argmax pass and a loss pass (as reductions) and a deltas
  // pass (as a binary op).
  registry.addBuiltin(
      d.take(), rowsEstimator(0, typeOf<T>(), [](const CostFigures &c) {
        return RowsCost{c.binaryOpWorkerCycles, c.unaryOpWorkerCycles,
                        2ull * c.reduceWorkerCyclesPerVector +
                            c.binaryOpWorkerCyclesPerVector};
      }));
}

template <typename T> void registerLossTargets(VertexRegistry &registry) {
  using V = LossTargetRows<T>;
  codelet::VertexDescriber<V> d(
      templateName("tessera::ops::LossTargetRows", {typeOf<T>()}));
  d.field("probs", &V::probs)
      .field("targets", &V::targets)
      .field("deltas", &V::deltas)
      .field("loss", &V::loss)
      .field("correct", &V::correct)
      .field("lossType", &V::lossType);
  // As the label vertex, with a second argmax pass over the targets.
  registry.addBuiltin(
      d.take(), rowsEstimator(0, typeOf<T>(), [](const CostFigures &c) {
        return RowsCost{c.binaryOpWorkerCycles, c.unaryOpWorkerCycles,
                        3ull * c.reduceWorkerCyclesPerVector +
                            c.binaryOpWorkerCyclesPerVector};
      }));
}

} // namespace

void registerNnVertices(VertexRegistry &registry) {
  registerSoftmax<float>(registry);
  registerSoftmax<Half>(registry);
  registerLossLabels<float, unsigned>(registry);
  registerLossLabels<float, int>(registry);
  registerLossLabels<Half, unsigned>(registry);
  registerLossLabels<Half, int>(registry);
  registerLossTargets<float>(registry);
  registerLossTargets<Half>(registry);
}

} // namespace tessera::ops
