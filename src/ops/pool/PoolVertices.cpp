// The pooling vertices and their cycle estimates. A vertex handles a block
// of (batch, channel) planes and rows; its six workers take contiguous
// ranges of (plane, row) items. Sums are formed in float for half data.
//
// Estimates: popnn's pooling vertices reduce each window with vector
// max/add instructions, so a row costs its elements x window size over the
// vector width, at the reduction figures of CostFigures, plus a per-row
// overhead. The registered estimators guess the window from the field
// sizes; the ops set each vertex's exact estimate (setPerfEstimate).
#include "OpsInternal.hpp"
#include "conv/ConvInternal.hpp"
#include "conv/ConvKernels.hpp"

#include "tessera/Vertex.hpp"

#include <limits>
#include <type_traits>
#include <vector>

namespace tessera::ops {
namespace conv {
namespace {

struct PoolScratch {
  std::vector<float> acc, row;
  std::vector<int> count;
};
PoolScratch &poolScratch() {
  thread_local PoolScratch s;
  return s;
}

template <typename T> T *sized(std::vector<T> &v, std::size_t n) {
  if (v.size() < n)
    v.resize(n);
  return v.data();
}

/// The output columns [lo, hi) whose window column kw lands inside the
/// input (0 <= ow*sW - plW + kw < inW).
Range validColumns(const int *g, long kw) {
  const long sW = g[pSW], off = kw - g[pPlW];
  long lo = off >= 0 ? 0 : (-off + sW - 1) / sW;
  long hi = (g[pInW] - 1 - off) >= 0 ? (g[pInW] - 1 - off) / sW + 1 : 0;
  hi = std::min<long>(hi, g[pOutW]);
  lo = std::min(lo, hi);
  return {static_cast<std::size_t>(lo), static_cast<std::size_t>(hi)};
}

/// Output rows [lo, hi] (inclusive, possibly empty) whose windows cover
/// input row ih.
std::pair<long, long> windowsOver(const int *g, long ih) {
  const long sH = g[pSH], top = ih + g[pPlH], first = top - g[pKH] + 1;
  const long lo = first > 0 ? (first + sH - 1) / sH : 0;
  const long hi = std::min<long>(g[pOutH] - 1, top >= 0 ? top / sH : -1);
  return {lo, hi};
}

} // namespace

template <typename T> class Pool : public MultiVertex {
public:
  /// Per plane: input rows [inRow0, inRow0 + inRows) x inW.
  Vector<Input<Vector<T>>> in;
  /// Per plane: output rows [rowBegin, rowBegin + rows) x outW.
  Vector<Output<Vector<T>>> out;
  Vector<int> geometry;

  bool compute(unsigned worker) {
    const int *g = geometry.data();
    const std::size_t rows = g[pRows], items = g[pPlanes] * rows;
    const std::size_t outW = g[pOutW];
    const auto type = static_cast<PoolingType>(g[pType]);
    PoolScratch &s = poolScratch();
    float *const scratchAcc = sized(s.acc, outW);
    int *count = sized(s.count, outW);
    // Only an average needs the counts; a float max runs in its output
    // row, which then needs no copy.
    const bool avg = type == PoolingType::AVG;
    constexpr bool inPlace = std::is_same_v<T, float>;
    // Each window column's valid outputs, found once, not per row (each
    // takes divisions).
    constexpr long kCachedColumns = 16;
    Range cached[kCachedColumns];
    for (long kw = 0; kw < std::min<long>(g[pKW], kCachedColumns); ++kw)
      cached[kw] = validColumns(g, kw);
    const std::size_t first = items * worker / kWorkers;
    std::size_t plane = rows ? first / rows : 0, r = rows ? first % rows : 0;
    for (std::size_t it = first; it < items * (worker + 1) / kWorkers;
         ++it, ++r) {
      if (r == rows) {
        r = 0;
        ++plane;
      }
      const long oh = g[pRowBegin] + static_cast<long>(r);
      T *const dst = out[plane].data() + r * outW;
      float *acc = scratchAcc;
      if constexpr (inPlace)
        if (!avg)
          acc = dst;
      std::fill(acc, acc + outW,
                type == PoolingType::MAX
                    ? -std::numeric_limits<float>::infinity()
                    : 0.0f);
      if (avg)
        std::fill(count, count + outW, 0);
      for (long kh = 0; kh < g[pKH]; ++kh) {
        const long ih = oh * g[pSH] - g[pPlH] + kh;
        if (ih < 0 || ih >= g[pInH])
          continue;
        const T *src = in[plane].data() + (ih - g[pInRow0]) * g[pInW];
        for (long kw = 0; kw < g[pKW]; ++kw) {
          const Range cols =
              kw < kCachedColumns ? cached[kw] : validColumns(g, kw);
          const long sW = g[pSW], off = kw - g[pPlW];
          if (type == PoolingType::MAX) {
            for (std::size_t ow = cols.begin; ow < cols.end; ++ow)
              acc[ow] = std::max(acc[ow],
                                 static_cast<float>(src[long(ow) * sW + off]));
          } else {
            for (std::size_t ow = cols.begin; ow < cols.end; ++ow)
              acc[ow] += static_cast<float>(src[long(ow) * sW + off]);
          }
          if (avg)
            for (std::size_t ow = cols.begin; ow < cols.end; ++ow)
              ++count[ow];
        }
      }
      if (avg)
        for (std::size_t ow = 0; ow < outW; ++ow)
          acc[ow] = count[ow] ? acc[ow] / static_cast<float>(count[ow]) : 0;
      if (acc != static_cast<void *>(dst))
        kernels::fromFloat(acc, dst, outW);
    }
    return true;
  }
};

template <typename T> class PoolGrad : public MultiVertex {
public:
  /// Per plane (MAX only): input rows [inRow0, inRow0 + inRows) x inW.
  Vector<Input<Vector<T>>> in;
  /// Per plane: pooled-gradient rows [outRow0, outRow0 + outRows) x outW.
  Vector<Input<Vector<T>>> grad;
  /// Per plane: gradient rows [rowBegin, rowBegin + rows) x inW.
  Vector<Output<Vector<T>>> out;
  Vector<int> geometry;

  bool compute(unsigned worker) {
    // The host runs a vertex's workers one after another on one thread
    // (Runtime::compute), so worker 0 takes every plane and visits each
    // window once; taken row by row, a max window was searched once for
    // every input row it covers. Each input element still sums its windows
    // in the same order (output row, then column); the estimate shares the
    // rows between six workers, as the IPU does.
    if (worker != 0)
      return true;
    const int *g = geometry.data();
    const std::size_t rows = g[pRows], inW = g[pInW];
    const long rowBegin = g[pRowBegin];
    if (rows == 0)
      return true;
    float *const scratchAcc = sized(poolScratch().acc, rows * inW);
    const long ohLo = windowsOver(g, rowBegin).first;
    const long ohHi =
        windowsOver(g, rowBegin + static_cast<long>(rows) - 1).second;
    for (std::size_t plane = 0; plane < static_cast<std::size_t>(g[pPlanes]);
         ++plane) {
      // Float gradients accumulate in their output rows, which then need
      // no copy.
      float *acc = scratchAcc;
      if constexpr (std::is_same_v<T, float>)
        acc = out[plane].data();
      std::fill(acc, acc + rows * inW, 0.0f);
      for (long oh = ohLo; oh <= ohHi && g[pOutRows] > 0; ++oh)
        addWindowRow(g, plane, oh, acc);
      if (acc != static_cast<void *>(out[plane].data()))
        kernels::fromFloat(acc, out[plane].data(), rows * inW);
    }
    return true;
  }

private:
  // Adds the gradient that the windows of output row oh send to the block's
  // input rows into acc (the block's rows x inW).
  void addWindowRow(const int *g, std::size_t plane, long oh,
                    float *acc) const {
    const auto type = static_cast<PoolingType>(g[pType]);
    const std::size_t outW = g[pOutW];
    const long inW = g[pInW];
    const T *dy = grad[plane].data() + (oh - g[pOutRow0]) * g[pOutW];
    const long top = oh * g[pSH] - g[pPlH];
    const long rowLo = std::max(0L, top),
               rowHi = std::min<long>(g[pInH], top + g[pKH]);
    // The window's rows that lie in the block.
    const long blockLo = std::max<long>(rowLo, g[pRowBegin]);
    const long blockHi = std::min<long>(rowHi, g[pRowBegin] + g[pRows]);
    const auto at = [&](long y, long col) -> float & {
      return acc[(y - g[pRowBegin]) * inW + col];
    };
    if (type != PoolingType::MAX) {
      for (long kw = 0; kw < g[pKW]; ++kw) {
        const Range cols = validColumns(g, kw);
        for (std::size_t ow = cols.begin; ow < cols.end; ++ow) {
          float v = static_cast<float>(dy[ow]);
          if (type == PoolingType::AVG)
            v /= static_cast<float>((rowHi - rowLo) * windowWidth(g, ow));
          const long col = static_cast<long>(ow) * g[pSW] - g[pPlW] + kw;
          for (long y = blockLo; y < blockHi; ++y)
            at(y, col) += v;
        }
      }
      return;
    }
    // MAX: the first maximum of the window in row-major order (a NaN first
    // element stays: nothing compares greater). The search starts from the
    // first element and keeps the best with selects, not branches: which
    // element wins is data, and mispredicted branches cost more than the
    // whole comparison.
    if (rowLo >= rowHi)
      return;
    const T *base = in[plane].data() - g[pInRow0] * inW;
    for (std::size_t ow = 0; ow < outW; ++ow) {
      const long left = static_cast<long>(ow) * g[pSW] - g[pPlW];
      const long colLo = std::max(0L, left),
                 colHi = std::min<long>(inW, left + g[pKW]);
      if (colLo >= colHi)
        continue;
      float best = static_cast<float>(base[rowLo * inW + colLo]);
      long bestAt = rowLo * inW + colLo;
      for (long y = rowLo; y < rowHi; ++y)
        for (long c = colLo; c < colHi; ++c) {
          const float v = static_cast<float>(base[y * inW + c]);
          const bool greater = v > best;
          best = greater ? v : best;
          bestAt = greater ? y * inW + c : bestAt;
        }
      const long bestRow = bestAt / inW;
      if (bestRow >= blockLo && bestRow < blockHi)
        at(bestRow, bestAt % inW) += static_cast<float>(dy[ow]);
    }
  }

  static long windowWidth(const int *g, std::size_t ow) {
    const long left = static_cast<long>(ow) * g[pSW] - g[pPlW];
    return std::min<long>(g[pInW], left + g[pKW]) - std::max(0L, left);
  }
};

std::uint64_t poolCycles(std::size_t rows, std::size_t width,
                         std::size_t window, Type type, const Target &t) {
  const CostFigures &c = t.costs();
  const std::uint64_t vector = t.getVectorWidth(type);
  const std::uint64_t perRow =
      c.convWorkerCyclesPerRow + (std::uint64_t(width) * window + vector - 1) /
                                     vector * c.reduceWorkerCyclesPerVector;
  return c.reduceWorkerCycles + (rows + kWorkers - 1) / kWorkers * perRow;
}

namespace {

std::size_t total(const std::vector<std::uint32_t> &sizes) {
  std::size_t n = 0;
  for (std::uint32_t s : sizes)
    n += s;
  return n;
}

template <typename T> void registerPool(VertexRegistry &registry) {
  const Type type = typeOf<T>();
  // From sizes alone the window is unknown: the input-to-output ratio
  // stands for it (exact for non-overlapping windows).
  const auto estimate = [=](const Target &t, std::size_t inElems,
                            std::size_t outElems, std::size_t entries,
                            std::size_t rowElems) {
    if (entries == 0 || outElems == 0)
      return std::uint64_t(t.costs().reduceWorkerCycles);
    const std::size_t window = std::max<std::size_t>(1, inElems / outElems);
    const std::size_t width = std::max<std::size_t>(1, rowElems);
    return poolCycles(outElems / width, width, window, type, t);
  };
  {
    using V = Pool<T>;
    codelet::VertexDescriber<V> d(templateName("tessera::ops::Pool", {type}));
    d.field("in", &V::in).field("out", &V::out).field("geometry", &V::geometry);
    registry.addBuiltin(d.take(),
                        [=](const VertexInstanceShape &s, const Target &t) {
                          const auto &o = s.fieldSizes[1];
                          return estimate(t, total(s.fieldSizes[0]), total(o),
                                          o.size(), o.empty() ? 0 : o[0]);
                        });
  }
  {
    using V = PoolGrad<T>;
    codelet::VertexDescriber<V> d(
        templateName("tessera::ops::PoolGrad", {type}));
    d.field("in", &V::in)
        .field("grad", &V::grad)
        .field("out", &V::out)
        .field("geometry", &V::geometry);
    registry.addBuiltin(d.take(),
                        [=](const VertexInstanceShape &s, const Target &t) {
                          const auto &o = s.fieldSizes[2];
                          return estimate(t, total(o), total(s.fieldSizes[1]),
                                          o.size(), o.empty() ? 0 : o[0]);
                        });
  }
}

} // namespace

void registerPoolVertices(VertexRegistry &registry) {
  registerPool<float>(registry);
  registerPool<Half>(registry);
}

} // namespace conv
} // namespace tessera::ops
