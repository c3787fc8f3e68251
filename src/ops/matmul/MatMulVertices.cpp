// The matmul vertices and their registration with cycle estimators:
// MatMulBlock (one tile's block product over its K-slice), MatMulReduce (the
// sum of a block's K-partials) and MatMulReduceAcc (C += alpha * that sum).
//
// All three are MultiVertex: the block product occupies the tile's AMP unit,
// which its six workers share, so its estimate is MACs / (rate x 6) worker
// cycles and the compiler's tile figure (6 x the busiest worker) is
// MACs / rate; the reductions split their elements over the six workers.
// On the host each vertex does all its work in worker 0's call (the others
// return at once): one pass of the register-blocked kernel over all rows,
// or one pass over a tile's few hundred sums, is faster than six slices,
// and no result depends on how the work is shared.
#include "MatMulInternal.hpp"
#include "MatMulKernel.hpp"
#include "OpsInternal.hpp"

#include "tessera/Vertex.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace tessera::ops {
namespace {

// Host scratch for converted operands; grown once per thread, reused.
std::vector<float> &scratch(unsigned which) {
  thread_local std::vector<float> buffers[4];
  return buffers[which];
}
std::vector<const float *> &rowPointers(unsigned which) {
  thread_local std::vector<const float *> rows[2];
  return rows[which];
}
std::vector<float *> &outPointers() {
  thread_local std::vector<float *> rows;
  return rows;
}

template <typename T> void toFloat(const T *src, float *dst, std::size_t n) {
  if constexpr (std::is_same_v<T, float>)
    matmul::copyFloats(src, dst, n);
  else
    matmul::halfToFloat(src, dst, n);
}
template <typename T> void fromFloat(const float *src, T *dst, std::size_t n) {
  if constexpr (std::is_same_v<T, float>)
    matmul::copyFloats(src, dst, n);
  else
    matmul::floatToHalf(src, dst, n);
}

// Whether the entries hold exactly rows x width elements (width > 0); if so,
// `buffer` is made large enough for all of them.
template <typename List>
bool holdsMatrix(const List &entries, std::size_t rows, std::size_t width,
                 std::vector<float> &buffer) {
  std::size_t total = 0;
  for (std::size_t i = 0; i < entries.size(); ++i)
    total += entries[i].size();
  if (width == 0 || total != rows * width)
    return false;
  buffer.resize(std::max(buffer.size(), total));
  return true;
}

// Row pointers over a list of entries whose concatenation is a row-major
// matrix of `rows` rows of `width`: rows inside one float entry are read
// where they lie, rows cut by an entry's end are assembled in `buffer`, and
// half entries are converted to float there first. Returns false when the
// entries do not hold exactly rows x width elements.
template <typename T, typename List>
bool rowsOf(const List &entries, std::size_t rows, std::size_t width,
            std::vector<float> &buffer, std::vector<const float *> &out) {
  out.clear();
  if (!holdsMatrix(entries, rows, width, buffer))
    return false;
  if constexpr (!std::is_same_v<T, float>) {
    float *dst = buffer.data();
    for (std::size_t i = 0; i < entries.size(); ++i) {
      toFloat(entries[i].data(), dst, entries[i].size());
      dst += entries[i].size();
    }
    for (std::size_t r = 0; r < rows; ++r)
      out.push_back(buffer.data() + r * width);
  } else {
    std::size_t e = 0, off = 0; // the next element: entry e, offset off
    for (std::size_t r = 0; r < rows; ++r) {
      while (off == entries[e].size()) {
        ++e;
        off = 0;
      }
      if (entries[e].size() - off >= width) {
        out.push_back(entries[e].data() + off);
        off += width;
        continue;
      }
      float *row = buffer.data() + r * width;
      for (std::size_t done = 0; done < width;) {
        while (off == entries[e].size()) {
          ++e;
          off = 0;
        }
        const std::size_t take =
            std::min(width - done, entries[e].size() - off);
        matmul::copyFloats(entries[e].data() + off, row + done, take);
        done += take;
        off += take;
      }
      out.push_back(row);
    }
  }
  return true;
}

// dst (width x rows) = the transpose of src (rows x width), both row-major,
// in 8 x 8 blocks so that both sides stay in a few cache lines.
void transpose(const float *src, std::size_t rows, std::size_t width,
               float *__restrict dst) {
  constexpr std::size_t kBlock = 8;
  for (std::size_t r0 = 0; r0 < rows; r0 += kBlock) {
    const std::size_t r1 = std::min(rows, r0 + kBlock);
    for (std::size_t c0 = 0; c0 < width; c0 += kBlock) {
      const std::size_t c1 = std::min(width, c0 + kBlock);
      for (std::size_t c = c0; c < c1; ++c)
        for (std::size_t r = r0; r < r1; ++r)
          dst[c * rows + r] = src[r * width + c];
    }
  }
}

// Row pointers over the transpose of the row-major `rows` x `width` matrix
// that the entries make when concatenated: the pieces (a few elements each)
// are gathered, as floats, into one matrix, which is transposed into
// `buffer` block by block.
template <typename T, typename List>
bool transposedRowsOf(const List &entries, std::size_t rows, std::size_t width,
                      std::vector<float> &buffer,
                      std::vector<const float *> &out) {
  out.clear();
  if (!holdsMatrix(entries, rows, width, buffer))
    return false;
  std::vector<float> &whole = scratch(3);
  whole.resize(std::max(whole.size(), rows * width));
  float *at = whole.data();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    toFloat(entries[i].data(), at, entries[i].size());
    at += entries[i].size();
  }
  float *dst = buffer.data();
  transpose(whole.data(), rows, width, dst);
  for (std::size_t q = 0; q < width; ++q)
    out.push_back(dst + q * rows);
  return true;
}

// The row pointers of a block product's operands (MatMulBlock's fields):
// A (m x k, or its transpose) from `a`, B (k x n, or its transpose) from
// `b`. The transposes change no product and the order of no sum.
template <typename InT, typename List>
bool operandRows(const List &a, const List &b, std::size_t m, std::size_t k,
                 std::size_t n, bool transA, bool transB) {
  auto &aRows = rowPointers(0), &bRows = rowPointers(1);
  return (transA ? transposedRowsOf<InT>(a, k, m, scratch(0), aRows)
                 : rowsOf<InT>(a, m, k, scratch(0), aRows)) &&
         (transB ? transposedRowsOf<InT>(b, n, k, scratch(1), bRows)
                 : rowsOf<InT>(b, k, n, scratch(1), bRows));
}

/// One tile's block product: c[m x n] = sum over its K-slice of a b, where
/// a lists pieces whose concatenation is the A block row-major (m x k), and
/// b pieces of the B block (k x n). With transA, a's pieces make A's
/// transpose (k x m) instead; with transB, b's make B's (n x k): the op
/// reads transposed views that way, where they lie.
template <typename InT, typename PartialsT, typename OutT>
class MatMulBlock : public MultiVertex {
public:
  Input<VectorList<InT>> a;
  Input<VectorList<InT>> b;
  Output<Vector<OutT>> c;
  unsigned m = 0, k = 0, n = 0;
  unsigned transA = 0, transB = 0;

  bool compute(unsigned worker) {
    if (worker != 0)
      return true;
    if (c.size() != std::size_t(m) * n ||
        !operandRows<InT>(a, b, m, k, n, transA, transB))
      return false;
    const auto &aRows = rowPointers(0), &bRows = rowPointers(1);
    constexpr bool roundToHalf = std::is_same_v<PartialsT, Half>;
    if constexpr (std::is_same_v<OutT, float>) {
      matmul::gemm(m, n, k, aRows.data(), bRows.data(), c.data(), n, false,
                   roundToHalf);
    } else {
      std::vector<float> &out = scratch(2);
      out.resize(std::max(out.size(), c.size()));
      matmul::gemm(m, n, k, aRows.data(), bRows.data(), out.data(), n, false,
                   roundToHalf);
      fromFloat(out.data(), c.data(), c.size());
    }
    return true;
  }
};

constexpr std::size_t kPanel = 16; // matmul::gemmPanels' panel width

// Whether the pieces are the 16-column panels of a `rows` x n matrix, row
// by row (row r's panel p is piece r * panels + p): how a block's operand
// spread over tiles of 16 columns arrives.
template <typename List>
bool arePanels(const List &pieces, std::size_t rows, std::size_t n) {
  const std::size_t panels = (n + kPanel - 1) / kPanel;
  if (n == 0 || pieces.size() != rows * panels)
    return false;
  for (std::size_t r = 0, i = 0; r < rows; ++r)
    for (std::size_t p = 0; p < panels; ++p, ++i)
      if (pieces[i].size() != std::min(kPanel, n - kPanel * p))
        return false;
  return true;
}

// Panel pointers (panel p's row r at out[p * rows + r]) over a `rows` x n
// matrix given as panel pieces, or else as row pointers.
template <typename P, typename List>
void panelsOf(const List &pieces, bool asPieces, P *const *rowPtrs,
              std::size_t rows, std::size_t n, std::vector<P *> &out) {
  const std::size_t panels = (n + kPanel - 1) / kPanel;
  out.resize(panels * rows);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t p = 0; p < panels; ++p)
      out[p * rows + r] =
          asPieces ? pieces[r * panels + p].data() : rowPtrs[r] + p * kPanel;
}

// Runs gemm(aRows, bPanels, cPanels) over float operands m x k and k x n:
// B and C are read and written where they lie when they arrive as
// 16-column panels (matmul::gemmPanels' layout), else assembled as rows in
// scratch (C copied out after). False when A or B is not such a product.
template <typename InT, typename AList, typename BList, typename CList,
          typename Gemm>
bool gemmThroughPanels(const AList &a, const BList &b, CList &c, std::size_t m,
                       std::size_t k, std::size_t n, bool transA, bool transB,
                       const Gemm &gemm) {
  auto &aRows = rowPointers(0), &bRows = rowPointers(1);
  const bool bPieces = !transB && arePanels(b, k, n);
  if (!(transA ? transposedRowsOf<InT>(a, k, m, scratch(0), aRows)
               : rowsOf<InT>(a, m, k, scratch(0), aRows)))
    return false;
  if (!bPieces && !(transB ? transposedRowsOf<InT>(b, n, k, scratch(1), bRows)
                           : rowsOf<InT>(b, k, n, scratch(1), bRows)))
    return false;
  thread_local std::vector<const float *> bPanels;
  panelsOf(b, bPieces, bRows.data(), k, n, bPanels);
  const bool cPieces = arePanels(c, m, n);
  std::vector<float> &out = scratch(2);
  std::vector<float *> &rows = outPointers();
  if (!cPieces) {
    out.resize(std::max(out.size(), m * n));
    rows.resize(m);
    for (std::size_t r = 0; r < m; ++r)
      rows[r] = out.data() + r * n;
  }
  thread_local std::vector<float *> cPanels;
  panelsOf(c, cPieces, rows.data(), m, n, cPanels);
  gemm(aRows.data(), bPanels.data(), cPanels.data());
  if (!cPieces)
    for (std::size_t i = 0, at = 0; i < c.size(); at += c[i++].size())
      matmul::copyFloats(out.data() + at, c[i].data(), c[i].size());
  return true;
}

/// The host kernel of a block-product compute set (Graph::setHostKernel):
/// a band of m rows of one K-slice's product over all n columns, with
/// MatMulBlock's fields, kernel and order of sums, so it writes exactly the
/// bytes the tiles' block vertices would; c lists pieces whose
/// concatenation is the band row-major (each the piece of a tile's block).
template <typename InT, typename PartialsT, typename OutT>
class MatMulHost : public Vertex {
public:
  Input<VectorList<InT>> a;
  Input<VectorList<InT>> b;
  Vector<Output<Vector<OutT>>> c;
  unsigned m = 0, k = 0, n = 0;
  unsigned transA = 0, transB = 0;

  bool compute() {
    std::size_t total = 0;
    for (std::size_t i = 0; i < c.size(); ++i)
      total += c[i].size();
    if (total != std::size_t(m) * n)
      return false;
    if constexpr (std::is_same_v<InT, float> && std::is_same_v<OutT, float>)
      if (std::size_t(k) * n <= matmul::kDirectMaxB)
        return inPlace();
    if (!operandRows<InT>(a, b, m, k, n, transA, transB))
      return false;
    std::vector<float> &out = scratch(2);
    out.resize(std::max(out.size(), total));
    matmul::gemm(m, n, k, rowPointers(0).data(), rowPointers(1).data(),
                 out.data(), n, false, std::is_same_v<PartialsT, Half>);
    const float *from = out.data();
    for (std::size_t i = 0; i < c.size(); ++i) {
      fromFloat(from, c[i].data(), c[i].size());
      from += c[i].size();
    }
    return true;
  }

private:
  // Float operands whose B slice is read in place by gemm (gemmThroughPanels).
  bool inPlace() {
    return gemmThroughPanels<InT>(
        a, b, c, m, k, n, transA, transB,
        [&](const float *const *aRows, const float *const *bPanels,
            float *const *cPanels) {
          matmul::gemmPanels(m, n, k, aRows, bPanels, cPanels, false,
                             std::is_same_v<PartialsT, Half>);
        });
  }
};

/// The host kernel of a float block-product compute set whose K-slices'
/// partials only a reduction reads (paired with that reduction's kernel by
/// Graph::pairHostKernels): a band of m rows over all of K and all n
/// columns, each K-slice's product as MatMulBlock computes it, summed in
/// slice order as the reduction sums the partials (matmul::
/// gemmPanelsSummed), written to the band's rows of the first K-slice's
/// partials. The paired reduction kernel copies those to the output, so
/// the output's bytes are the tiles', and no other partial is written or
/// read. c lists the pieces of the band row-major, as MatMulHost's.
class MatMulHostSum : public Vertex {
public:
  Input<VectorList<float>> a;
  Input<VectorList<float>> b;
  Vector<Output<Vector<float>>> c;
  unsigned m = 0, n = 0;
  unsigned transA = 0, transB = 0;
  Vector<unsigned> slices; ///< the K-slices' sizes, in order

  bool compute() {
    std::size_t total = 0, k = 0;
    for (std::size_t i = 0; i < c.size(); ++i)
      total += c[i].size();
    for (std::size_t s = 0; s < slices.size(); ++s) {
      if (slices[s] > matmul::kMaxSummedSlice)
        return false;
      k += slices[s];
    }
    if (total != std::size_t(m) * n || k == 0)
      return false;
    return gemmThroughPanels<float>(
        a, b, c, m, k, n, transA, transB,
        [&](const float *const *aRows, const float *const *bPanels,
            float *const *cPanels) {
          matmul::gemmPanelsSummed(m, n, slices.data(), slices.size(), aRows,
                                   bPanels, cPanels);
        });
  }
};

// sums[0, len) = the float partials' elements [at, at + len) added in
// partial order, ((p0 + p1) + p2) + ..., as the rounding of the tiles'
// sums requires, written once (matmul::sumRows).
template <typename List>
void addFloatPartials(const List &partials, std::size_t at, std::size_t len,
                      float *sums) {
  matmul::sumRows<false>(partials, at, len, sums);
}

// The sum of the partials over [0, n), in float, chunk by chunk, passed to
// `emit(offset, sums, count)`. Float partials are added where they lie.
template <typename PartialsT, typename List, typename Emit>
void sumPartials(const List &partials, std::size_t n, Emit &&emit) {
  constexpr std::size_t kChunk = 512;
  alignas(32) float acc[kChunk], tmp[kChunk];
  for (std::size_t b = 0; b < n; b += kChunk) {
    const std::size_t len = std::min(kChunk, n - b);
    if constexpr (std::is_same_v<PartialsT, float>) {
      addFloatPartials(partials, b, len, acc);
    } else {
      toFloat(partials[0].data() + b, acc, len);
      for (std::size_t p = 1; p < partials.size(); ++p) {
        toFloat(partials[p].data() + b, tmp, len);
        for (std::size_t i = 0; i < len; ++i)
          acc[i] += tmp[i];
      }
    }
    emit(b, acc, len);
  }
}

// Float partials summed into a float output: straight into the output.
template <typename OutT, typename PartialsT>
constexpr bool bothFloat =
    std::is_same_v<OutT, float> &&std::is_same_v<PartialsT, float>;

template <typename List> bool sizesMatch(const List &partials, std::size_t n) {
  for (std::size_t p = 0; p < partials.size(); ++p)
    if (partials[p].size() != n)
      return false;
  return true;
}

// Stores `len` sums (at most 512) to out: rounded once to the output type,
// or, when Acc, added times alpha to what out holds.
template <bool Acc, typename OutT>
void storeSums(const float *sums, OutT *out, std::size_t len, float alpha) {
  if constexpr (Acc) {
    alignas(32) float old[512];
    toFloat(out, old, len);
    for (std::size_t i = 0; i < len; ++i)
      old[i] += alpha * sums[i];
    fromFloat(old, out, len);
  } else {
    fromFloat(sums, out, len);
  }
}

/// out = the sum of the partials (each out.size() elements), summed in
/// float and rounded once to the output type.
template <typename OutT, typename PartialsT>
class MatMulReduce : public MultiVertex {
public:
  Input<VectorList<PartialsT>> partials;
  Output<Vector<OutT>> out;

  bool compute(unsigned worker) {
    if (worker != 0)
      return true;
    if (partials.size() == 0 || !sizesMatch(partials, out.size()))
      return false;
    if constexpr (bothFloat<OutT, PartialsT>) {
      addFloatPartials(partials, 0, out.size(), out.data());
      return true;
    }
    sumPartials<PartialsT>(
        partials, out.size(),
        [&](std::size_t at, const float *sums, std::size_t len) {
          storeSums<false>(sums, out.data() + at, len, 1.0f);
        });
    return true;
  }
};

/// out += alpha * the sum of the partials, in float, rounded once.
template <typename OutT, typename PartialsT>
class MatMulReduceAcc : public MultiVertex {
public:
  Input<VectorList<PartialsT>> partials;
  InOut<Vector<OutT>> out;
  float alpha = 1.0f;

  bool compute(unsigned worker) {
    if (worker != 0)
      return true;
    if (partials.size() == 0 || !sizesMatch(partials, out.size()))
      return false;
    sumPartials<PartialsT>(
        partials, out.size(),
        [&](std::size_t at, const float *sums, std::size_t len) {
          storeSums<true>(sums, out.data() + at, len, alpha);
        });
    return true;
  }
};

/// The host kernel of a reduction compute set: one block's whole sum, as
/// MatMulReduce computes each tile's range of it, stored to the block's
/// pieces of the output (the tiles' ranges) in order.
template <typename OutT, typename PartialsT>
class MatMulReduceHost : public Vertex {
public:
  Input<VectorList<PartialsT>> partials;
  Vector<Output<Vector<OutT>>> out;

  bool compute() {
    std::size_t n = 0, shortest = SIZE_MAX;
    for (std::size_t i = 0; i < out.size(); ++i) {
      n += out[i].size();
      shortest = std::min(shortest, out[i].size());
    }
    if (partials.size() == 0 || !sizesMatch(partials, n))
      return false;
    // Pieces of whole vectors are summed into where they lie; a few
    // floats each would each pay a pass per partial, so those are summed
    // in chunks and stored piece by piece.
    if constexpr (bothFloat<OutT, PartialsT>) {
      // One partial (the sum MatMulHostSum left): a copy, piece by piece.
      if (partials.size() == 1) {
        for (std::size_t i = 0, at = 0; i < out.size(); at += out[i++].size())
          matmul::copyFloats(partials[0].data() + at, out[i].data(),
                             out[i].size());
        return true;
      }
      if (shortest >= 32) {
        for (std::size_t i = 0, at = 0; i < out.size(); at += out[i++].size())
          addFloatPartials(partials, at, out[i].size(), out[i].data());
        return true;
      }
    }
    std::size_t piece = 0, off = 0; // where the next sum goes
    sumPartials<PartialsT>(
        partials, n, [&](std::size_t, const float *sums, std::size_t len) {
          while (len) {
            while (off == out[piece].size()) {
              ++piece;
              off = 0;
            }
            const std::size_t take = std::min(len, out[piece].size() - off);
            storeSums<false>(sums, out[piece].data() + off, take, 1.0f);
            sums += take;
            len -= take;
            off += take;
          }
        });
    return true;
  }
};

std::uint64_t total(const std::vector<std::uint32_t> &sizes) {
  std::uint64_t t = 0;
  for (std::uint32_t s : sizes)
    t += s;
  return t;
}

// m*k*n from the three field totals (m*k, k*n, m*n): the square root of
// their product, exact for consistent sizes.
std::uint64_t macsOf(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b * c;
  auto r = static_cast<std::uint64_t>(std::sqrt(static_cast<long double>(p)));
  while (static_cast<unsigned __int128>(r) * r > p)
    --r;
  while (static_cast<unsigned __int128>(r + 1) * (r + 1) <= p)
    ++r;
  return r;
}

template <typename InT, typename PartialsT, typename OutT>
void registerBlock(VertexRegistry &registry) {
  using V = MatMulBlock<InT, PartialsT, OutT>;
  codelet::VertexDescriber<V> d(
      templateName("tessera::ops::MatMulBlock",
                   {typeOf<InT>(), typeOf<PartialsT>(), typeOf<OutT>()}));
  d.field("a", &V::a).field("b", &V::b).field("c", &V::c);
  d.field("m", &V::m).field("k", &V::k).field("n", &V::n);
  d.field("transA", &V::transA).field("transB", &V::transB);
  registry.addBuiltin(d.take(), [](const VertexInstanceShape &s,
                                   const Target &t) {
    const matmul::CostInputs cost =
        matmul::costInputs(t, typeOf<InT>(), typeOf<PartialsT>());
    const std::uint64_t a = total(s.fieldSizes[0]), b = total(s.fieldSizes[1]);
    const std::uint64_t c = total(s.fieldSizes[2]);
    if (a == 0 || b == 0 || c == 0)
      return matmul::blockWorkerCycles(cost, 0, 0, 0);
    const std::uint64_t macs = macsOf(a, b, c);
    return matmul::blockWorkerCycles(cost, macs / b, macs / c, macs / a);
  });
  // Its host kernel runs on no tile; the op sets each vertex's estimate to
  // its share of the host's work, which the engine balances threads by.
  using H = MatMulHost<InT, PartialsT, OutT>;
  codelet::VertexDescriber<H> h(
      templateName("tessera::ops::MatMulHost",
                   {typeOf<InT>(), typeOf<PartialsT>(), typeOf<OutT>()}));
  h.field("a", &H::a).field("b", &H::b).field("c", &H::c);
  h.field("m", &H::m).field("k", &H::k).field("n", &H::n);
  h.field("transA", &H::transA).field("transB", &H::transB);
  registry.addBuiltin(h.take(),
                      [](const VertexInstanceShape &, const Target &) {
                        return std::uint64_t(1);
                      });
}

void registerHostSum(VertexRegistry &registry) {
  // Runs on no tile (see registerBlock).
  using H = MatMulHostSum;
  codelet::VertexDescriber<H> h("tessera::ops::MatMulHostSum");
  h.field("a", &H::a).field("b", &H::b).field("c", &H::c);
  h.field("m", &H::m).field("n", &H::n).field("slices", &H::slices);
  h.field("transA", &H::transA).field("transB", &H::transB);
  registry.addBuiltin(h.take(),
                      [](const VertexInstanceShape &, const Target &) {
                        return std::uint64_t(1);
                      });
}

template <typename OutT, typename PartialsT, bool Acc>
void registerReduce(VertexRegistry &registry) {
  using V = std::conditional_t<Acc, MatMulReduceAcc<OutT, PartialsT>,
                               MatMulReduce<OutT, PartialsT>>;
  codelet::VertexDescriber<V> d(templateName(
      Acc ? "tessera::ops::MatMulReduceAcc" : "tessera::ops::MatMulReduce",
      {typeOf<OutT>(), typeOf<PartialsT>()}));
  d.field("partials", &V::partials).field("out", &V::out);
  if constexpr (Acc)
    d.field("alpha", &V::alpha);
  registry.addBuiltin(
      d.take(), [](const VertexInstanceShape &s, const Target &t) {
        const matmul::CostInputs cost =
            matmul::costInputs(t, HALF, typeOf<PartialsT>());
        const std::size_t n = s.fieldSizes[1].empty() ? 0 : s.fieldSizes[1][0];
        return matmul::reduceWorkerCycles(cost, typeOf<PartialsT>(), n,
                                          s.fieldSizes[0].size(), Acc);
      });
  if constexpr (!Acc) {
    // Its host kernel runs on no tile (see registerBlock).
    using H = MatMulReduceHost<OutT, PartialsT>;
    codelet::VertexDescriber<H> h(
        templateName("tessera::ops::MatMulReduceHost",
                     {typeOf<OutT>(), typeOf<PartialsT>()}));
    h.field("partials", &H::partials).field("out", &H::out);
    registry.addBuiltin(h.take(),
                        [](const VertexInstanceShape &, const Target &) {
                          return std::uint64_t(1);
                        });
  }
}

template <typename OutT, typename PartialsT>
void registerReduces(VertexRegistry &registry) {
  registerReduce<OutT, PartialsT, false>(registry);
  registerReduce<OutT, PartialsT, true>(registry);
}

} // namespace

void registerMatMulVertices(VertexRegistry &registry) {
  registerBlock<float, float, float>(registry);
  registerBlock<Half, float, float>(registry);
  registerBlock<Half, float, Half>(registry);
  registerBlock<Half, Half, Half>(registry);
  registerBlock<Half, Half, float>(registry);
  registerHostSum(registry);
  registerReduces<float, float>(registry);
  registerReduces<Half, float>(registry);
  registerReduces<Half, Half>(registry);
  registerReduces<float, Half>(registry);
}

} // namespace tessera::ops
