// The convolution vertices and their cycle estimates.
//
// ConvPartial computes one output block of a convolution: its input
// entries are (batch, input channel) row ranges of the activations, its
// weights one [Cin, kH, kW] entry per output channel, its outputs one entry
// per (batch, output channel, output row). ConvWeightGrad computes a block
// of dL/dW from deltas and activation rows; ConvReduce adds partial blocks.
// All three are MultiVertex: the six workers split the block as
// ConvInternal.hpp says, and each worker keeps its own scratch, so workers
// never share host memory whichever thread runs them.
//
// ConvPartialHost and ConvWeightGradHost are host kernels: the IPU Model's
// host runs one in place of many tiles' ConvPartial or ConvWeightGrad
// vertices, with the same code and order of sums (Graph::setHostKernel).
//
// Estimates follow the AMP unit: a worker's cycles are its
// multiply-accumulates over the tile's MACs per cycle (six workers sharing
// the unit: tile cycles = 6 x the busiest worker = MACs / macsPerCycle for
// balanced work), plus per-row overheads. The registered estimators read
// the block shape from the field sizes and the figures from the target
// compiled for. ConvPartial and ConvWeightGrad without a reduction are
// instantiated with the output type, which does not say the partials type
// that sets the AMP's MAC rate for half inputs, so the ops set their
// estimates (setPerfEstimate) from the convolution's partials type.
#include "ConvInternal.hpp"
#include "ConvKernels.hpp"
#include "OpsInternal.hpp"

#include "tessera/Vertex.hpp"

#include <type_traits>
#include <vector>

namespace tessera::ops {
namespace conv {
namespace {

using kernels::withMR;

/// Per-worker host scratch; grows to the largest block a thread has seen.
struct Scratch {
  std::vector<float> xp, w, wt, dyT, ct, tmp;
  std::vector<const float *> tab, rows;
};
Scratch &scratch() {
  thread_local Scratch s;
  return s;
}

template <typename T> T *sized(std::vector<T> &v, std::size_t n) {
  if (v.size() < n)
    v.resize(n);
  return v.data();
}

/// One row of an entry of whole rows, read as the vertices read their
/// fields.
template <typename T> struct RowRef {
  T *p;
  std::size_t n;
  T *data() const { return p; }
  std::size_t size() const { return n; }
};
template <typename List>
using EntryElem =
    std::remove_pointer_t<decltype(std::declval<const List &>()[0].data())>;

/// The rows of \p rowLen elements that \p entries hold one after another
/// (each entry a whole number of rows: the ops merge rows that continue
/// each other on one tile into one entry), in thread-local table Slot; null
/// when an entry is not a whole number of rows.
template <int Slot, typename List>
const std::vector<RowRef<EntryElem<List>>> *rowsOf(const List &entries,
                                                   std::size_t rowLen) {
  thread_local std::vector<RowRef<EntryElem<List>>> rows;
  rows.clear();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::size_t n = entries[i].size();
    if (rowLen == 0 || n % rowLen != 0)
      return nullptr;
    for (std::size_t k = 0; k < n; k += rowLen)
      rows.push_back({entries[i].data() + k, rowLen});
  }
  return &rows;
}

/// Fills xp[c][r][x] (as float) with padded rows [rA, rB), padded columns
/// [xA, xA + wp) of channels c < chans of the input entries, under geometry
/// g: entry in[c] holds channel c's inRows x inW, or, when perRow, entry
/// in[c * inRows + r] holds its row r alone.
template <typename Entry>
void buildPadded(const Entry *in, bool perRow, std::size_t chans, const int *g,
                 long rA, long rB, long xA, std::size_t wp, float *xp) {
  const long inRows = g[gInRows], inW = g[gInW], idH = g[gIdH], idW = g[gIdW],
             rowOrigin = g[gRowOrigin], colOrigin = g[gColOrigin] + xA;
  const std::size_t nr = static_cast<std::size_t>(rB - rA);
  // Columns that hold input elements when idW == 1.
  const long cLo = std::max(0L, -colOrigin);
  const long cHi = std::min<long>(static_cast<long>(wp), inW - colOrigin);
  for (std::size_t c = 0; c < chans; ++c) {
    const auto rowOf = [&](long ir) {
      return perRow ? in[c * static_cast<std::size_t>(inRows) +
                         static_cast<std::size_t>(ir)]
                          .data()
                    : in[c].data() + ir * inW;
    };
    for (std::size_t r = 0; r < nr; ++r) {
      float *dst = xp + (c * nr + r) * wp;
      const long pr = rowOrigin + rA + static_cast<long>(r);
      if (pr < 0 || pr % idH != 0 || pr / idH >= inRows) {
        kernels::zero(dst, wp);
        continue;
      }
      const auto *row = rowOf(pr / idH);
      if (idW == 1) {
        if (cHi <= cLo) {
          kernels::zero(dst, wp);
          continue;
        }
        kernels::zero(dst, static_cast<std::size_t>(cLo));
        kernels::toFloat(row + (cLo + colOrigin), dst + cLo,
                         static_cast<std::size_t>(cHi - cLo));
        kernels::zero(dst + cHi, wp - static_cast<std::size_t>(cHi));
        continue;
      }
      for (std::size_t x = 0; x < wp; ++x) {
        const long pc = colOrigin + static_cast<long>(x);
        dst[x] = pc >= 0 && pc % idW == 0 && pc / idW < inW
                     ? static_cast<float>(row[pc / idW])
                     : 0.0f;
      }
    }
  }
}

/// Padded columns [first, first + width) that output columns [c0, c1)
/// read.
long paddedColumn(const int *g, std::size_t c0) {
  return static_cast<long>(c0) * g[gSW];
}
std::size_t paddedWidth(const int *g, std::size_t c0, std::size_t c1) {
  return static_cast<std::size_t>(static_cast<long>(c1 - 1 - c0) * g[gSW] +
                                  (g[gKW] - 1) * g[gKdW] + 1);
}

/// Pointers to the padded input each kernel element (ci, kh, kw) reads for
/// output row oh, at output column `col`, in the padded buffer xp holding
/// rows from rA and columns from xA.
void rowTable(const int *g, const float *xp, std::size_t chans, std::size_t nr,
              std::size_t wp, long oh, long rA, long xA, std::size_t col,
              const float **tab) {
  const long kH = g[gKH], kW = g[gKW];
  const long base = paddedColumn(g, col) - xA;
  std::size_t k = 0;
  for (std::size_t c = 0; c < chans; ++c)
    for (long kh = 0; kh < kH; ++kh) {
      const long r = oh * g[gSH] + kh * g[gKdH] - rA;
      const float *row =
          xp + (c * nr + static_cast<std::size_t>(r)) * wp + base;
      for (long kw = 0; kw < kW; ++kw)
        tab[k++] = row + kw * g[gKdW];
    }
}

} // namespace

/// The element type behind a list of entries (InT, or float for dense
/// host copies).
template <typename List>
using ElementOf = std::remove_cv_t<
    std::remove_pointer_t<decltype(std::declval<const List &>()[0].data())>>;

/// An entry of a dense host copy, read as the vertices read their fields.
struct DenseEntry {
  const float *p;
  const float *data() const { return p; }
};

/// Widens the concatenation of \p pieces (\p total elements) into \p dst;
/// false when they do not hold exactly \p total.
template <typename List>
bool densify(const List &pieces, std::size_t total, float *dst) {
  std::size_t at = 0;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const std::size_t n = pieces[i].size();
    if (at + n > total)
      return false;
    kernels::toFloat(pieces[i].data(), dst + at, n);
    at += n;
  }
  return at == total;
}

/// Entries of \p size elements each, one after another from \p base.
inline std::vector<DenseEntry> &denseEntries(std::vector<DenseEntry> &e,
                                             const float *base,
                                             std::size_t count,
                                             std::size_t size) {
  e.resize(count);
  for (std::size_t i = 0; i < count; ++i)
    e[i].p = base + i * size;
  return e;
}

namespace fwd {

/// One forward block under geometry g, from entries read through data():
/// in[(n * cin + ci) * inRows + r] (an input row), weights[co] (cin x kH x
/// kW) and out[(n * cout + co) * rows + oh] (an output row). Each output's
/// sum runs over the kernel elements in one order, whatever the block's
/// channel range and whichever kernel computes it (an FMA's product is the
/// same either way round), so a block with more output channels computes
/// each output exactly as a smaller block holding it does.
template <typename InList, typename WList, typename OutList> class Forward {
public:
  Forward(const int *g, const InList &in, const WList &weights,
          const OutList &out)
      : geometry_(g), in(in), weights(weights), out(out) {}

  bool run() {
    const int *g = geometry_;
    if (in.size() != static_cast<std::size_t>(g[gBatch]) * g[gInChans] *
                         static_cast<std::size_t>(g[gInRows]))
      return false;
    const std::size_t rows = g[gRows], cout = g[gOutChans];
    const FwdWork work(static_cast<std::size_t>(g[gBatch]) * rows, cout,
                       static_cast<std::size_t>(g[gOutW]),
                       static_cast<std::size_t>(g[gInChans]) * g[gKH] * g[gKW]);
    const std::size_t i0 = 0, i1 = work.items();
    if (i0 == i1)
      return true;
    // The channels and columns this worker's items touch.
    std::size_t coLo = cout, coHi = 0, colLo = work.outW, colHi = 0;
    const std::size_t perUnit = work.colParts * work.coParts;
    for (std::size_t i = i0; i < std::min(i1, i0 + perUnit); ++i) {
      coLo = std::min(coLo, work.coBegin(work.coPartOf(i)));
      coHi = std::max(coHi, work.coBegin(work.coPartOf(i) + 1));
      colLo = std::min(colLo, work.colBegin(work.colPartOf(i)));
      colHi = std::max(colHi, work.colBegin(work.colPartOf(i) + 1));
    }
    if (i1 - i0 > perUnit) {
      coLo = colLo = 0;
      coHi = cout;
      colHi = work.outW;
    }
    const Block b{g,
                  coLo,
                  coHi,
                  useColumns(g, coHi - coLo),
                  paddedColumn(g, colLo),
                  paddedWidth(g, colLo, colHi)};
    prepareWeights(b);
    std::size_t item = i0;
    while (item < i1) {
      const std::size_t n = work.unitOf(item) / rows;
      const std::size_t end = std::min(i1, (n + 1) * rows * perUnit);
      const long ohA = static_cast<long>(work.unitOf(item) % rows);
      const long ohB = static_cast<long>(work.unitOf(end - 1) % rows);
      const long rA = ohA * g[gSH];
      const long rB = ohB * g[gSH] + (g[gKH] - 1) * g[gKdH] + 1;
      const std::size_t cin = g[gInChans];
      float *xp =
          sized(scratch().xp, cin * static_cast<std::size_t>(rB - rA) * b.wp);
      buildPadded(&in[n * cin * static_cast<std::size_t>(g[gInRows])], true,
                  cin, g, rA, rB, b.xA, b.wp, xp);
      while (item < end) {
        // Items of one unit and column part: one channel range.
        const std::size_t groupEnd =
            std::min(end, (item / work.coParts + 1) * work.coParts);
        const std::size_t cp = work.colPartOf(item);
        const Span rowsSpan{rA, rB};
        computeRow(b, n, static_cast<long>(work.unitOf(item) % rows), rowsSpan,
                   work.colBegin(cp), work.colBegin(cp + 1),
                   work.coBegin(work.coPartOf(item)),
                   work.coBegin(work.coPartOf(groupEnd - 1) + 1));
        item = groupEnd;
      }
    }
    return true;
  }

private:
  // What one worker computes: channels [coLo, coHi), with the column
  // kernels or the channel kernels.
  struct Block {
    const int *g;
    std::size_t coLo, coHi;
    bool columns;
    long xA;        ///< first padded column in the scratch rows
    std::size_t wp; ///< padded columns in the scratch rows
  };
  struct Span {
    long rA, rB; ///< padded rows in the scratch buffer
  };

  // Column kernels vectorise along output columns: they need unit column
  // stride and should waste no more lanes than the channel kernels.
  static bool useColumns(const int *g, std::size_t nco) {
    if (g[gSW] != 1)
      return false;
    const auto eff = [](std::size_t n) {
      return double(n) / double((n + 15) / 16 * 16);
    };
    return eff(static_cast<std::size_t>(g[gOutW])) >= eff(nco);
  }

  // Column kernels read weight rows (float); channel kernels read the
  // weights transposed to [k][co - coLo].
  void prepareWeights(const Block &b) const {
    const int *g = b.g;
    const std::size_t k =
        static_cast<std::size_t>(g[gInChans]) * g[gKH] * g[gKW];
    const std::size_t nco = b.coHi - b.coLo;
    Scratch &s = scratch();
    if (b.columns) {
      const float **rows = sized(s.rows, nco);
      if constexpr (std::is_same_v<InElem, float>) {
        for (std::size_t co = b.coLo; co < b.coHi; ++co)
          rows[co - b.coLo] = weights[co].data();
      } else {
        float *w = sized(s.w, nco * k);
        for (std::size_t co = b.coLo; co < b.coHi; ++co) {
          float *dst = w + (co - b.coLo) * k;
          kernels::toFloat(weights[co].data(), dst, k);
          rows[co - b.coLo] = dst;
        }
      }
      return;
    }
    float *wt = sized(s.wt, k * nco);
    if constexpr (std::is_same_v<InElem, float>) {
      // In 8 x 8 register blocks: element by element, the scattered
      // stores cost more than a small block's products.
      const float **rows = sized(s.rows, nco);
      for (std::size_t co = b.coLo; co < b.coHi; ++co)
        rows[co - b.coLo] = weights[co].data();
      kernels::transpose(rows, nco, k, wt, nco);
      return;
    }
    for (std::size_t co = b.coLo; co < b.coHi; ++co) {
      const InElem *src = weights[co].data();
      for (std::size_t j = 0; j < k; ++j)
        wt[j * nco + (co - b.coLo)] = static_cast<float>(src[j]);
    }
  }

  void computeRow(const Block &b, std::size_t n, long oh, Span rs,
                  std::size_t col0, std::size_t col1, std::size_t c0,
                  std::size_t c1) const {
    const int *g = b.g;
    const std::size_t cin = g[gInChans], cout = g[gOutChans], rows = g[gRows],
                      ncols = col1 - col0;
    const std::size_t k = cin * g[gKH] * g[gKW];
    Scratch &s = scratch();
    const float **tab = sized(s.tab, k);
    rowTable(g, s.xp.data(), cin, static_cast<std::size_t>(rs.rB - rs.rA), b.wp,
             oh, rs.rA, b.xA, col0, tab);
    const auto outRow = [&](std::size_t co) {
      return out[(n * cout + co) * rows + static_cast<std::size_t>(oh)].data() +
             col0;
    };
    constexpr std::size_t kChunk = 64;
    OutElem *dst[kChunk];
    if (b.columns) {
      for (std::size_t co = c0; co < c1;) {
        const int mr = kernels::nextBlock(c1 - co);
        for (int i = 0; i < mr; ++i)
          dst[i] = outRow(co + static_cast<std::size_t>(i));
        const float *const *w = s.rows.data() + (co - b.coLo);
        withMR(mr, [&]<int MR>() {
          kernels::fwdColumns<MR>(w, tab, k, ncols, dst);
        });
        co += static_cast<std::size_t>(mr);
      }
      return;
    }
    // Channel kernels: up to kChunk channels, MR columns at a time.
    const std::size_t ldw = b.coHi - b.coLo;
    for (std::size_t cb = c0; cb < c1; cb += kChunk) {
      const std::size_t nco = std::min(kChunk, c1 - cb);
      for (std::size_t c = 0; c < nco; ++c)
        dst[c] = outRow(cb + c);
      const float *wt = s.wt.data() + (cb - b.coLo);
      for (std::size_t x = 0; x < ncols;) {
        const int mr = kernels::nextBlock(ncols - x);
        withMR(mr, [&]<int MR>() {
          kernels::fwdChannels<MR>(tab, k, x, g[gSW], wt, ldw, nco, dst);
        });
        x += static_cast<std::size_t>(mr);
      }
    }
  }

  using InElem = ElementOf<WList>;
  using OutElem = std::remove_pointer_t<
      decltype(std::declval<const OutList &>()[0].data())>;

  const int *geometry_;
  const InList &in;
  const WList &weights;
  const OutList &out;
};

} // namespace fwd

template <typename InT, typename OutT> class ConvPartial : public MultiVertex {
public:
  /// Input rows [batch][inChans][inRows], each inW long, one after another
  /// in entries of whole rows, each lying on one tile so that it can be
  /// read where it lives.
  Vector<Input<Vector<InT>>> in;
  /// Rows of inChans x kH x kW per output channel, in entries of whole rows.
  Vector<Input<Vector<InT>>> weights;
  /// Output rows [batch][outChans][rows], each outW long, in entries of
  /// whole rows.
  Vector<Output<Vector<OutT>>> out;
  Vector<int> geometry;

  bool compute(unsigned worker) {
    // The host runs a vertex's six workers one after another on one thread
    // (Runtime::compute), so worker 0 takes every item: the padded input
    // rows are built once per batch entry rather than once per worker, and
    // the kernels run over all the channels at once. Each output's sum runs
    // over the kernel in the same order either way; the estimate still
    // shares the items between six workers, as the IPU does.
    if (worker != 0)
      return true;
    const int *g = geometry.data();
    const auto *inRows = rowsOf<0>(in, static_cast<std::size_t>(g[gInW]));
    const auto *wRows = rowsOf<1>(
        weights, static_cast<std::size_t>(g[gInChans]) * g[gKH] * g[gKW]);
    const auto *outRows = rowsOf<2>(out, static_cast<std::size_t>(g[gOutW]));
    if (!inRows || !wRows || !outRows)
      return false;
    return fwd::Forward(g, *inRows, *wRows, *outRows).run();
  }
};

/// The host kernel of a forward compute set (Graph::setHostKernel): one
/// batch, rows and input-channel piece of the convolution for a band of
/// output channels, with ConvPartial's order of sums, so it writes exactly
/// the bytes of the tile vertices it stands for, in a few large blocks
/// instead of many small ones. in lists pieces whose concatenation is the
/// piece's input rows [n][ci][inRows x inW]; weights, pieces whose
/// concatenation is the band's weights [co][ci][kH x kW] or, when flipped,
/// the weights they are transposed and flipped from, [ci][co][kH x kW] with
/// each kernel reversed; out, the output rows [n][co][rows] in entries of
/// whole rows, as ConvPartial's.
template <typename InT, typename OutT> class ConvPartialHost : public Vertex {
public:
  Input<VectorList<InT>> in;
  Input<VectorList<InT>> weights;
  Vector<Output<Vector<OutT>>> out;
  Vector<int> geometry;
  unsigned flipped = 0;

  bool compute() {
    const int *g = geometry.data();
    const std::size_t batch = g[gBatch], cin = g[gInChans], cout = g[gOutChans],
                      inRows = g[gInRows], kHW = std::size_t(g[gKH]) * g[gKW];
    const std::size_t rowSize = g[gInW],
                      inTotal = batch * cin * inRows * rowSize,
                      wTotal = cout * cin * kHW;
    thread_local std::vector<float> dense;
    thread_local std::vector<DenseEntry> rows, ws;
    float *x = sized(dense, inTotal + 2 * wTotal);
    float *raw = x + inTotal, *w = raw + wTotal;
    if (!densify(in, inTotal, x) || !densify(weights, wTotal, raw))
      return false;
    if (flipped) {
      for (std::size_t ci = 0; ci < cin; ++ci)
        for (std::size_t co = 0; co < cout; ++co)
          for (std::size_t k = 0; k < kHW; ++k)
            w[(co * cin + ci) * kHW + k] =
                raw[(ci * cout + co) * kHW + (kHW - 1 - k)];
    } else {
      w = raw;
    }
    const auto *outRows = rowsOf<2>(out, static_cast<std::size_t>(g[gOutW]));
    if (!outRows)
      return false;
    return fwd::Forward(g, denseEntries(rows, x, batch * cin * inRows, rowSize),
                        denseEntries(ws, w, cout, cin * kHW), *outRows)
        .run();
  }
};

namespace wgrad {

// dyT[p][co] for the positions p of output rows [oc0, oc1) of entry n.
template <typename List>
void transposeDeltas(const int *g, const List &deltas, std::size_t n,
                     std::size_t oc0, std::size_t oc1) {
  using T = ElementOf<List>;
  const std::size_t cout = g[gOutChans], outW = g[gOutW];
  const std::size_t p = (oc1 - oc0) * outW;
  Scratch &s = scratch();
  float *dyT = sized(s.dyT, p * cout);
  const float **src = sized(s.rows, cout);
  for (std::size_t co = 0; co < cout; ++co) {
    const T *d = deltas[n * cout + co].data() + oc0 * outW;
    if constexpr (std::is_same_v<T, float>) {
      src[co] = d;
    } else {
      float *row = sized(s.tmp, cout * p) + co * p;
      kernels::toFloat(d, row, p);
      src[co] = row;
    }
  }
  kernels::transpose(src, cout, p, dyT, cout);
}

// ct[k][co] += sum over the chunk's positions of x(k, p) * dy(co, p), for
// the kElems kernel elements. Flattened: when its kernels were called rather
// than inlined, GCC kept the accumulators in memory (spilled in the inner
// loop, a third slower).
[[gnu::flatten]] inline void accumulate(const int *g, std::size_t kElems,
                                        std::size_t nr, std::size_t oc0,
                                        std::size_t oc1, float *ct) {
  const std::size_t cout = g[gOutChans], outW = g[gOutW],
                    wp = paddedWidth(g, 0, outW);
  const std::size_t kW = g[gKW], kk = static_cast<std::size_t>(g[gKH]) * kW;
  Scratch &s = scratch();
  const float *xp = s.xp.data(), *dyT = s.dyT.data();
  for (std::size_t kb = 0; kb < kElems;) {
    const int mr = kernels::nextBlock(kElems - kb);
    std::size_t base[kernels::kMaxMR];
    for (int i = 0; i < mr; ++i) {
      const std::size_t k = kb + static_cast<std::size_t>(i);
      const std::size_t ci = k / kk, kh = k % kk / kW, kw = k % kW;
      base[i] = (ci * nr + kh * g[gKdH]) * wp + kw * g[gKdW];
    }
    for (std::size_t co0 = 0; co0 < cout; co0 += kernels::kNR) {
      const std::size_t nco = std::min(kernels::kNR, cout - co0);
      const kernels::Mask m(nco);
      withMR(mr, [&]<int MR>() {
        __m256 acc[MR][2];
        kernels::clear(acc);
        const float *x[MR];
        for (std::size_t oh = oc0; oh < oc1; ++oh) {
          for (int i = 0; i < MR; ++i)
            x[i] = xp + base[i] + oh * g[gSH] * wp;
          const float *d = dyT + (oh - oc0) * outW * cout + co0;
          kernels::wgradRow<MR>(x, outW, g[gSW], d, cout, nco, m, acc);
        }
        float *dst[MR];
        for (int i = 0; i < MR; ++i)
          dst[i] = ct + (kb + static_cast<std::size_t>(i)) * cout + co0;
        kernels::addTo<MR>(acc, dst, nco, m);
      });
    }
    kb += static_cast<std::size_t>(mr);
  }
}

/// The weight-gradient sums of one block under geometry g, into ct[k][co]
/// (k: the block's cin x kH x kW kernel elements, co: its output channels):
/// deltas[n * cout + co] and acts[n * cin + ci] are its entries. Each sum
/// runs over the block's positions in one order (entry by entry, chunks of
/// output rows, each row's columns) whatever the block's channel ranges, so
/// a block with more channels computes each element exactly as a smaller
/// block holding it does.
template <typename DeltaList, typename ActList>
void sums(const int *g, const DeltaList &deltas, const ActList &acts,
          float *ct) {
  const std::size_t cin = g[gInChans], cout = g[gOutChans];
  const std::size_t kElems = cin * g[gKH] * g[gKW];
  std::fill(ct, ct + kElems * cout, 0.0f);
  const std::size_t rows = g[gRows], outW = g[gOutW];
  const long rB =
      static_cast<long>(rows - 1) * g[gSH] + (g[gKH] - 1) * g[gKdH] + 1;
  const std::size_t wp = paddedWidth(g, 0, outW);
  // Output rows per chunk: the transposed deltas of a chunk stay cached.
  const std::size_t chunk = std::max<std::size_t>(1, 256 / outW);
  Scratch &s = scratch();
  for (std::size_t n = 0; n < static_cast<std::size_t>(g[gBatch]); ++n) {
    float *xp = sized(s.xp, cin * static_cast<std::size_t>(rB) * wp);
    buildPadded(&acts[n * cin], false, cin, g, 0, rB, 0, wp, xp);
    for (std::size_t oc0 = 0; oc0 < rows; oc0 += chunk) {
      const std::size_t oc1 = std::min(rows, oc0 + chunk);
      transposeDeltas(g, deltas, n, oc0, oc1);
      accumulate(g, kElems, static_cast<std::size_t>(rB), oc0, oc1, ct);
    }
  }
}

/// Stores ct[k][co] (k in [k0, k0 + n)) to dst[0, n) as OutT.
template <typename OutT>
void store(const float *ct, std::size_t cout, std::size_t co, std::size_t k0,
           std::size_t n, OutT *dst) {
  for (std::size_t k = 0; k < n; ++k) {
    if constexpr (std::is_same_v<OutT, float>)
      dst[k] = ct[(k0 + k) * cout + co];
    else
      dst[k].bits = floatToHalfBits(ct[(k0 + k) * cout + co]);
  }
}

} // namespace wgrad

template <typename InT, typename OutT>
class ConvWeightGrad : public MultiVertex {
public:
  /// Per (batch, output channel): output rows x outW; entries hold whole
  /// such blocks one after another.
  Vector<Input<Vector<InT>>> deltas;
  /// Per (batch, input channel): inRows x inW, in entries as deltas.
  Vector<Input<Vector<InT>>> acts;
  /// Per output channel: inChans x kH x kW, in entries as deltas.
  Vector<Output<Vector<OutT>>> out;
  Vector<int> geometry;

  bool compute(unsigned worker) {
    // As in ConvPartial, worker 0 takes every kernel element (the host runs
    // a vertex's workers one after another on one thread): the padded
    // activations and the transposed deltas are built once per vertex
    // rather than once per worker. Each element's sum runs over the
    // positions in the same order either way; the estimate still shares
    // the elements between six workers (wgradBegin), as the IPU does.
    if (worker != 0)
      return true;
    const int *g = geometry.data();
    const std::size_t cout = g[gOutChans];
    const std::size_t kElems =
        static_cast<std::size_t>(g[gInChans]) * g[gKH] * g[gKW];
    if (kElems == 0)
      return true;
    const auto *dl =
        rowsOf<0>(deltas, static_cast<std::size_t>(g[gRows]) * g[gOutW]);
    const auto *ac =
        rowsOf<1>(acts, static_cast<std::size_t>(g[gInRows]) * g[gInW]);
    const auto *o = rowsOf<2>(out, kElems);
    if (!dl || !ac || !o || o->size() != cout)
      return false;
    float *ct = sized(scratch().ct, kElems * cout);
    wgrad::sums(g, *dl, *ac, ct);
    for (std::size_t co = 0; co < cout; ++co)
      wgrad::store(ct, cout, co, 0, kElems, (*o)[co].data());
    return true;
  }
};

/// The host kernel of a weight-gradient compute set (Graph::setHostKernel):
/// one batch-and-rows piece of the gradient for a band of output channels
/// and every input channel, with ConvWeightGrad's order of sums, so it
/// writes exactly the bytes of the tile vertices it stands for, in a few
/// large blocks instead of many small ones. deltas and acts list pieces
/// whose concatenations are the piece's deltas [n][co][rows x outW] and
/// activation rows [n][ci][inRows x inW]; out holds the tiles' rows piece
/// by piece (ciParts input-channel pieces), channel by channel, in entries
/// of whole rows.
template <typename InT, typename OutT>
class ConvWeightGradHost : public Vertex {
public:
  Input<VectorList<InT>> deltas;
  Input<VectorList<InT>> acts;
  Vector<Output<Vector<OutT>>> out;
  Vector<int> geometry;
  unsigned ciParts = 1;

  bool compute() {
    const int *g = geometry.data();
    const std::size_t batch = g[gBatch], cin = g[gInChans], cout = g[gOutChans],
                      kHW = std::size_t(g[gKH]) * g[gKW];
    const std::size_t dEntry = std::size_t(g[gRows]) * g[gOutW],
                      aEntry = std::size_t(g[gInRows]) * g[gInW];
    if (ciParts == 0)
      return false;
    thread_local std::vector<float> dense;
    thread_local std::vector<DenseEntry> dl, ac;
    const std::size_t dTotal = batch * cout * dEntry;
    float *d = sized(dense, dTotal + batch * cin * aEntry);
    float *a = d + dTotal;
    if (!densify(deltas, dTotal, d) || !densify(acts, batch * cin * aEntry, a))
      return false;
    float *ct = sized(scratch().ct, cin * kHW * cout);
    wgrad::sums(g, denseEntries(dl, d, batch * cout, dEntry),
                denseEntries(ac, a, batch * cin, aEntry), ct);
    // Rows piece by piece, channel by channel, in entries of whole rows.
    std::size_t e = 0, off = 0;
    for (unsigned p = 0; p < ciParts; ++p) {
      const Range cr = pieceOf(cin, ciParts, p);
      const std::size_t len = cr.size() * kHW;
      for (std::size_t co = 0; co < cout && len; ++co) {
        while (e < out.size() && out[e].size() == 0)
          ++e;
        if (e == out.size() || off + len > out[e].size())
          return false;
        wgrad::store(ct, cout, co, cr.begin * kHW, len, out[e].data() + off);
        if ((off += len) == out[e].size()) {
          ++e;
          off = 0;
        }
      }
    }
    return true;
  }
};

/// Sums partial blocks: out (entries of any size, in order) = sum over
/// parts of the partial blocks, each as long as all out entries together,
/// which partials holds one after another in entries of whole blocks.
template <typename PT, typename OutT> class ConvReduce : public MultiVertex {
public:
  Vector<Input<Vector<PT>>> partials;
  Vector<Output<Vector<OutT>>> out;

  bool compute(unsigned worker) {
    std::size_t total = 0;
    for (std::size_t i = 0; i < out.size(); ++i)
      total += out[i].size();
    // Each part is total long; the ops join parts on other tiles into one
    // entry.
    const auto *parts = rowsOf<0>(partials, total);
    if (total == 0)
      return true;
    if (!parts)
      return false;
    const std::size_t b = total * worker / kWorkers,
                      end = total * (worker + 1) / kWorkers;
    constexpr std::size_t kChunk = 512;
    alignas(32) float acc[kChunk];
    std::size_t entry = 0, entryBegin = 0; // the entry holding pos
    for (std::size_t pos = b; pos < end;) {
      while (entryBegin + out[entry].size() <= pos)
        entryBegin += out[entry++].size();
      const std::size_t e = out[entry].size(), off = pos - entryBegin;
      const std::size_t len = std::min({e - off, end - pos, kChunk});
      if constexpr (std::is_same_v<PT, float> && std::is_same_v<OutT, float>) {
        kernels::sumFrom0(*parts, pos, len, out[entry].data() + off);
      } else {
        kernels::zero(acc, len);
        for (std::size_t p = 0; p < parts->size(); ++p)
          kernels::addTo((*parts)[p].data() + pos, acc, len);
        kernels::fromFloat(acc, out[entry].data() + off, len);
      }
      pos += len;
    }
    return true;
  }
};

std::uint64_t convPartialCycles(std::size_t units, std::size_t outChans,
                                std::size_t outW, std::size_t kElems,
                                unsigned macsPerCycle, const Target &t) {
  const CostFigures &c = t.costs();
  const FwdWork work(units, outChans, outW, kElems);
  std::uint64_t busiest = 0;
  for (unsigned w = 0; w < kWorkers; ++w) {
    std::uint64_t cycles = 0;
    for (std::size_t i = work.begin(w); i < work.begin(w + 1); ++i) {
      const std::size_t p = work.coPartOf(i), q = work.colPartOf(i);
      const std::uint64_t macs =
          std::uint64_t(work.coBegin(p + 1) - work.coBegin(p)) *
          (work.colBegin(q + 1) - work.colBegin(q)) * kElems;
      cycles +=
          c.convWorkerCyclesPerRow + (macs + macsPerCycle - 1) / macsPerCycle;
    }
    busiest = std::max(busiest, cycles);
  }
  return c.matMulWorkerCycles + busiest;
}

std::uint64_t convWeightGradCycles(std::size_t kElems, std::size_t outChans,
                                   std::size_t positions, unsigned macsPerCycle,
                                   const Target &t) {
  const CostFigures &c = t.costs();
  std::uint64_t busiest = 0;
  for (unsigned w = 0; w < kWorkers; ++w) {
    const std::uint64_t macs =
        std::uint64_t(wgradBegin(kElems, w + 1) - wgradBegin(kElems, w)) *
        outChans * positions;
    busiest = std::max(busiest, (macs + macsPerCycle - 1) / macsPerCycle);
  }
  // Each worker walks the positions' rows once per kernel-element block.
  const std::uint64_t blocks =
      (kElems / kWorkers + kernels::kMaxMR - 1) / kernels::kMaxMR;
  return c.matMulWorkerCycles + busiest +
         blocks * ((outChans + 15) / 16) * c.convWorkerCyclesPerRow;
}

std::uint64_t convReduceCycles(std::size_t parts, std::size_t elems,
                               Type partialsType, const Target &t) {
  const CostFigures &c = t.costs();
  const std::uint64_t width = t.getVectorWidth(partialsType);
  const std::uint64_t perWorker = (elems + kWorkers - 1) / kWorkers;
  return c.reduceWorkerCycles + parts * ((perWorker + width - 1) / width) *
                                    c.reduceWorkerCyclesPerVector;
}

namespace {

unsigned macsFor(const Target &t, Type in, Type partials) {
  return t.getMacsPerCyclePerTile(in,
                                  in == Type::FLOAT ? Type::FLOAT : partials);
}

template <typename InT, typename OutT>
void registerConvClasses(VertexRegistry &registry) {
  const Type in = typeOf<InT>(), outType = typeOf<OutT>();
  {
    using V = ConvPartial<InT, OutT>;
    codelet::VertexDescriber<V> d(
        templateName("tessera::ops::ConvPartial", {in, outType}));
    d.field("in", &V::in)
        .field("weights", &V::weights)
        .field("out", &V::out)
        .field("geometry", &V::geometry);
    // Fields: weights has one entry per output channel (kernel elements
    // each), out one per output row.
    registry.addBuiltin(
        d.take(), [=](const VertexInstanceShape &s, const Target &t) {
          const auto &w = s.fieldSizes[1], &o = s.fieldSizes[2];
          if (w.empty() || o.empty())
            return std::uint64_t(t.costs().matMulWorkerCycles);
          return convPartialCycles(o.size() / w.size(), w.size(), o[0], w[0],
                                   macsFor(t, in, outType), t);
        });
  }
  {
    using V = ConvPartialHost<InT, OutT>;
    codelet::VertexDescriber<V> d(
        templateName("tessera::ops::ConvPartialHost", {in, outType}));
    d.field("in", &V::in)
        .field("weights", &V::weights)
        .field("out", &V::out)
        .field("geometry", &V::geometry)
        .field("flipped", &V::flipped);
    // A host kernel: the compute set it stands for is what is costed.
    registry.addBuiltin(d.take(),
                        [](const VertexInstanceShape &, const Target &) {
                          return std::uint64_t(1);
                        });
  }
  {
    using V = ConvWeightGrad<InT, OutT>;
    codelet::VertexDescriber<V> d(
        templateName("tessera::ops::ConvWeightGrad", {in, outType}));
    d.field("deltas", &V::deltas)
        .field("acts", &V::acts)
        .field("out", &V::out)
        .field("geometry", &V::geometry);
    registry.addBuiltin(
        d.take(), [=](const VertexInstanceShape &s, const Target &t) {
          const auto &dl = s.fieldSizes[0], &o = s.fieldSizes[2];
          if (dl.empty() || o.empty())
            return std::uint64_t(t.costs().matMulWorkerCycles);
          std::size_t positions = 0;
          for (std::uint32_t n : dl)
            positions += n;
          return convWeightGradCycles(o[0], o.size(), positions / o.size(),
                                      macsFor(t, in, outType), t);
        });
  }
  {
    using V = ConvWeightGradHost<InT, OutT>;
    codelet::VertexDescriber<V> d(
        templateName("tessera::ops::ConvWeightGradHost", {in, outType}));
    d.field("deltas", &V::deltas)
        .field("acts", &V::acts)
        .field("out", &V::out)
        .field("geometry", &V::geometry)
        .field("ciParts", &V::ciParts);
    // A host kernel: the compute set it stands for is what is costed.
    registry.addBuiltin(d.take(),
                        [](const VertexInstanceShape &, const Target &) {
                          return std::uint64_t(1);
                        });
  }
  {
    using V = ConvReduce<InT, OutT>;
    codelet::VertexDescriber<V> d(
        templateName("tessera::ops::ConvReduce", {in, outType}));
    d.field("partials", &V::partials).field("out", &V::out);
    registry.addBuiltin(
        d.take(), [=](const VertexInstanceShape &s, const Target &t) {
          // Parts may share entries: count them by their elements.
          std::size_t parts = 0, elems = 0;
          for (std::uint32_t n : s.fieldSizes[0])
            parts += n;
          for (std::uint32_t n : s.fieldSizes[1])
            elems += n;
          return convReduceCycles(elems ? parts / elems : 0, elems, in, t);
        });
  }
}

} // namespace
} // namespace conv

void registerConvVertices(VertexRegistry &registry) {
  conv::registerConvClasses<float, float>(registry);
  conv::registerConvClasses<float, Half>(registry);
  conv::registerConvClasses<Half, Half>(registry);
  conv::registerConvClasses<Half, float>(registry);
  conv::registerPoolVertices(registry);
}

} // namespace tessera::ops
