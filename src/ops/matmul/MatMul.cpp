// The matmul ops: checking operands, creating tensors in the plan's layout,
// and building the two compute sets (block products, then the reduction of
// K-partials) from a plan.
//
// Layout (see MatMul.hpp): every piece a tile owns is one contiguous range of
// its variable, and the ranges are ordered tile by tile, so each tile's
// share is one interval and each piece a vertex needs is one run — read in
// place on its own tile, one contiguous copy from any other.
#include "tessera/ops/MatMul.hpp"

#include "MatMulInternal.hpp"
#include "MatMulKernel.hpp"
#include "OpsInternal.hpp"

#include "tessera/device/Target.hpp"
#include "tessera/support/Error.hpp"

#include <algorithm>
#include <string>

namespace tessera::ops {
namespace {

using matmul::Partition;
using matmul::Plan;
using matmul::Range;

std::string str(std::size_t v) { return std::to_string(v); }

// Dimensions of one (grouped) product.
struct Dims {
  std::size_t g = 1, m = 0, k = 0, n = 0;
};

Dims checkShapes(const char *op, const std::vector<std::size_t> &a,
                 const std::vector<std::size_t> &b, bool grouped) {
  const std::size_t rank = grouped ? 3 : 2;
  const char *form = grouped ? "[g, m, k] and [g, k, n]" : "[m, k] and [k, n]";
  auto shape = [](const std::vector<std::size_t> &s) {
    std::string t = "[";
    for (std::size_t i = 0; i < s.size(); ++i)
      t += (i ? ", " : "") + str(s[i]);
    return t + "]";
  };
  if (a.size() != rank || b.size() != rank)
    throw ShapeError(std::string(op) + ": A has shape " + shape(a) +
                     " and B has shape " + shape(b) + "; give " +
                     std::to_string(rank) + "-D operands " + form +
                     (grouped ? "" : " (use matMulGrouped for batches)"));
  const std::size_t off = grouped ? 1 : 0;
  if (a[off + 1] != b[off])
    throw ShapeError(std::string(op) + ": A has " + str(a[off + 1]) +
                     " columns but B has " + str(b[off]) +
                     " rows; the inner dimensions must agree (A " + shape(a) +
                     ", B " + shape(b) + " must be " + form + ")");
  if (grouped && a[0] != b[0])
    throw ShapeError(std::string(op) + ": A has " + str(a[0]) +
                     " groups but B has " + str(b[0]) +
                     "; both must have the same first dimension");
  Dims d{grouped ? a[0] : 1, a[off], a[off + 1], b[off + 1]};
  if (d.g == 0 || d.m == 0 || d.k == 0 || d.n == 0)
    throw ShapeError(std::string(op) + ": A has shape " + shape(a) +
                     " and B has shape " + shape(b) +
                     "; every dimension must be at least 1");
  return d;
}

void checkTypes(const char *op, Type a, Type b, Type out) {
  if (a != b)
    throw TypeError(std::string(op) + ": A has type " +
                    std::string(typeName(a)) + " but B has type " +
                    std::string(typeName(b)) +
                    "; both operands must have the same type (cast one)");
  if (a != FLOAT && a != HALF)
    throw TypeError(std::string(op) + ": the operands have type " +
                    std::string(typeName(a)) +
                    "; matrix products take float or half (cast first)");
  if (a == FLOAT && out != FLOAT)
    throw TypeError(std::string(op) +
                    ": float operands give a float "
                    "result, but the output type asked is " +
                    std::string(typeName(out)) + "; cast the result instead");
  if (a == HALF && out != HALF && out != FLOAT)
    throw TypeError(std::string(op) +
                    ": half operands give a half or float "
                    "result, not " +
                    std::string(typeName(out)));
}

// Checks the operands and options, then plans.
Plan planFor(const Target &target, const char *op, Type aType, Type bType,
             Type outType, const std::vector<std::size_t> &a,
             const std::vector<std::size_t> &b, bool grouped,
             const OptionFlags &flags, bool accumulate) {
  const Dims d = checkShapes(op, a, b, grouped);
  checkTypes(op, aType, bType, outType);
  const matmul::Options o = matmul::parseOptions(flags, aType);
  const matmul::Types types{aType, o.partialsType, outType};
  return matmul::makePlan(target, types, d.g, d.m, d.k, d.n, o, accumulate);
}

// Part p of range r cut into `parts` pieces of whole elements.
Range sub(Range r, unsigned parts, unsigned p) {
  const Range s = Partition{r.size(), 1, parts}(p);
  return {r.begin + s.begin, r.begin + s.end};
}

// Calls f(tile, gi, i, j, kk, q) for every group q of every tile's block, in
// tile order.
template <typename F> void forEachTileBlock(const Plan &p, F &&f) {
  for (unsigned tile = 0; tile < p.numTiles(); ++tile) {
    const matmul::BlockIndex b = p.block(tile);
    const Range gr = p.g(b.gi);
    for (std::size_t q = gr.begin; q < gr.end; ++q)
      f(tile, b.gi, b.i, b.j, b.kk, q);
  }
}

// As forEachTileBlock but K-slice by K-slice: vertices run in the order
// they are added, and within one K-slice consecutive vertices share A and B
// blocks, which keeps a host thread's working set in its caches (the order
// changes neither results nor estimates).
template <typename F> void forEachBlockInKOrder(const Plan &p, F &&f) {
  for (unsigned gi = 0; gi < p.g.parts; ++gi)
    for (unsigned kk = 0; kk < p.k.parts; ++kk)
      for (unsigned i = 0; i < p.m.parts; ++i)
        for (unsigned j = 0; j < p.n.parts; ++j) {
          const Range gr = p.g(gi);
          for (std::size_t q = gr.begin; q < gr.end; ++q)
            f(p.tile(gi, i, j, kk), i, j, kk, q);
        }
}

// A variable whose pieces are laid out one after another in the order they
// are added, each mapped to its tile; views of pieces are taken afterwards.
class PieceVariable {
public:
  PieceVariable(std::size_t count) : offsets_(count, 0), sizes_(count, 0) {}
  void add(std::size_t id, std::size_t size, unsigned tile) {
    offsets_[id] = total_;
    sizes_[id] = size;
    tiles_.push_back({total_, size, tile});
    total_ += size;
  }
  void create(Graph &graph, Type type, const DebugContext &dc) {
    var_ = graph.addVariable(type, {total_}, dc);
    for (const Placed &p : tiles_)
      if (p.size)
        graph.setTileMapping(var_.slice(p.offset, p.offset + p.size), p.tile);
  }
  Tensor piece(std::size_t id) const {
    return var_.slice(offsets_[id], offsets_[id] + sizes_[id]);
  }
  std::size_t size(std::size_t id) const { return sizes_[id]; }

private:
  struct Placed {
    std::size_t offset, size;
    unsigned tile;
  };
  std::vector<std::size_t> offsets_, sizes_;
  std::vector<Placed> tiles_;
  std::size_t total_ = 0;
  Tensor var_;
};

Tensor concatNonEmpty(const std::vector<Tensor> &ts, unsigned dim) {
  std::vector<Tensor> keep;
  for (const Tensor &t : ts)
    if (t.numElements())
      keep.push_back(t);
  return concat(keep, dim);
}

Tensor stackGroups(const std::vector<Tensor> &groups) {
  std::vector<Tensor> expanded;
  for (const Tensor &t : groups)
    expanded.push_back(t.expand({0}));
  return concat(expanded, 0);
}

// A [g, m, k]: piece (q, i, kk, j) holds rows sub(m(i), nS, j) of K-slice kk
// and lives on tile (gi, i, j, kk).
Tensor createLHS(Graph &graph, const Plan &p, const DebugContext &dc) {
  const unsigned mS = p.m.parts, nS = p.n.parts, kS = p.k.parts;
  const std::size_t G = p.g.length;
  auto id = [&](std::size_t q, unsigned i, unsigned kk, unsigned j) {
    return ((q * mS + i) * kS + kk) * nS + j;
  };
  PieceVariable v(G * mS * kS * nS);
  forEachTileBlock(p, [&](unsigned tile, unsigned, unsigned i, unsigned j,
                          unsigned kk, std::size_t q) {
    v.add(id(q, i, kk, j), sub(p.m(i), nS, j).size() * p.k(kk).size(), tile);
  });
  v.create(graph, p.types.input, dc);
  std::vector<Tensor> groups;
  for (std::size_t q = 0; q < G; ++q) {
    std::vector<Tensor> panels;
    for (unsigned i = 0; i < mS; ++i) {
      std::vector<Tensor> blocks;
      for (unsigned kk = 0; kk < kS; ++kk) {
        std::vector<Tensor> pieces;
        for (unsigned j = 0; j < nS; ++j)
          pieces.push_back(
              v.piece(id(q, i, kk, j))
                  .reshape({sub(p.m(i), nS, j).size(), p.k(kk).size()}));
        blocks.push_back(concatNonEmpty(pieces, 0));
      }
      panels.push_back(concat(blocks, 1));
    }
    groups.push_back(concat(panels, 0));
  }
  return stackGroups(groups);
}

// B [g, k, n]: piece (q, kk, j, i) holds K-rows sub(k(kk), mS, i) of column
// block j and lives on tile (gi, i, j, kk).
Tensor createRHS(Graph &graph, const Plan &p, const DebugContext &dc) {
  const unsigned mS = p.m.parts, nS = p.n.parts, kS = p.k.parts;
  const std::size_t G = p.g.length;
  auto id = [&](std::size_t q, unsigned kk, unsigned j, unsigned i) {
    return ((q * kS + kk) * nS + j) * mS + i;
  };
  PieceVariable v(G * kS * nS * mS);
  forEachTileBlock(p, [&](unsigned tile, unsigned, unsigned i, unsigned j,
                          unsigned kk, std::size_t q) {
    v.add(id(q, kk, j, i), sub(p.k(kk), mS, i).size() * p.n(j).size(), tile);
  });
  v.create(graph, p.types.input, dc);
  std::vector<Tensor> groups;
  for (std::size_t q = 0; q < G; ++q) {
    std::vector<Tensor> slabs;
    for (unsigned kk = 0; kk < kS; ++kk) {
      std::vector<Tensor> blocks;
      for (unsigned j = 0; j < nS; ++j) {
        std::vector<Tensor> pieces;
        for (unsigned i = 0; i < mS; ++i)
          pieces.push_back(
              v.piece(id(q, kk, j, i))
                  .reshape({sub(p.k(kk), mS, i).size(), p.n(j).size()}));
        blocks.push_back(concatNonEmpty(pieces, 0));
      }
      slabs.push_back(concat(blocks, 1));
    }
    groups.push_back(concat(slabs, 0));
  }
  return stackGroups(groups);
}

// The flat range of block (i, j)'s elements that tile (.., kk) reduces.
Range reduceRange(const Plan &p, unsigned i, unsigned j, unsigned kk) {
  const std::size_t grain = 8 / typeSize(p.types.partials);
  return Partition{p.m(i).size() * p.n(j).size(), grain, p.k.parts}(kk);
}

// The output [g, m, n]: without a reduction block (q, i, j) lives whole on
// tile (gi, i, j, 0); with one, its flat range reduceRange(kk) lives on tile
// (gi, i, j, kk), where it is reduced.
Tensor createOutput(Graph &graph, const Plan &p, const DebugContext &dc) {
  const unsigned mS = p.m.parts, nS = p.n.parts, kS = p.k.parts;
  const std::size_t G = p.g.length;
  const bool reduces = p.reduces();
  PieceVariable v(G * mS * nS * kS);
  forEachTileBlock(p, [&](unsigned tile, unsigned, unsigned i, unsigned j,
                          unsigned kk, std::size_t q) {
    const std::size_t size = reduces   ? reduceRange(p, i, j, kk).size()
                             : kk == 0 ? p.m(i).size() * p.n(j).size()
                                       : 0;
    v.add(p.piece(q, i, j, kk), size, tile);
  });
  v.create(graph, p.types.output, dc);
  std::vector<Tensor> groups;
  for (std::size_t q = 0; q < G; ++q) {
    std::vector<Tensor> panels;
    for (unsigned i = 0; i < mS; ++i) {
      std::vector<Tensor> blocks;
      for (unsigned j = 0; j < nS; ++j) {
        std::vector<Tensor> pieces;
        for (unsigned kk = 0; kk < kS; ++kk)
          pieces.push_back(v.piece(p.piece(q, i, j, kk)));
        blocks.push_back(
            concatNonEmpty(pieces, 0).reshape({p.m(i).size(), p.n(j).size()}));
      }
      panels.push_back(concat(blocks, 1));
    }
    groups.push_back(concat(panels, 0));
  }
  return stackGroups(groups);
}

Tensor blockOf(const Tensor &t, Range rows, Range cols) {
  return t.slice({rows.begin, cols.begin}, {rows.end, cols.end}).flatten();
}

// Contiguous pieces of a 1-D view in its variables.
std::size_t pieces(const Tensor &t) {
  std::size_t n = 0;
  for (const Run &r : t.runs())
    n += r.stride == 1 ? 1 : static_cast<std::size_t>(r.count);
  return n;
}

// Whether the vertices should read 2-D operand \p t by rows of its
// transpose: when its columns lie in memory in fewer pieces per element than
// its rows (a transposed view, as x^T in a weight gradient).
bool readTransposed(const Tensor &t) {
  const std::size_t rows = t.dim(0), cols = t.dim(1);
  if (rows < 2 || cols < 2)
    return false;
  return pieces(t.transpose()[0]) * cols < pieces(t[0]) * rows;
}

// Whether the block vertices would read 3-D operand \p t ([g, rows, cols])
// in pieces shorter than a vector in either order, row-major or its
// transpose's, and in more pieces than the plan has tiles: a view across
// another layout's grain, as a dense layer reads the channels-last flatten
// of channel-planar activations, every element a piece of its own. A
// well-laid operand fails the row-major test, so its transpose is never
// built.
bool scattered(const Target &target, const Plan &p, const Tensor &t) {
  const std::size_t vector = target.getVectorWidth(t.elementType());
  const auto shortPieces = [&](const Tensor &order) {
    const std::size_t n = pieces(order.flatten());
    return n > p.numTiles() && n * vector > t.numElements();
  };
  return shortPieces(t) && shortPieces(t.dimShuffle({0, 2, 1}));
}

// The entries a vertex reads of block [rows x cols] of 2-D operand t: the
// block's elements in row-major order (of its transpose, when `transposed`)
// as memory pieces, so the vertex reads every piece where it lies and the
// simulator copies nothing (DESIGN.md section 5.4); the exchange is still
// costed.
std::vector<Tensor> operandPieces(const Graph &graph, const Tensor &t,
                                  Range rows, Range cols, bool transposed) {
  const Tensor block = t.slice({rows.begin, cols.begin}, {rows.end, cols.end});
  return memoryPieceTensors(graph,
                            (transposed ? block.transpose() : block).flatten());
}

// The [m, n] matrix of group q that K-slice kk's block vertices write: C
// itself, or that slice's partials.
Tensor sliceOutput(const Plan &p, const Tensor &C,
                   const PieceVariable *partials, std::size_t q, unsigned kk) {
  if (!partials)
    return C[q];
  const unsigned mS = p.m.parts, nS = p.n.parts;
  std::vector<Tensor> panels;
  for (unsigned i = 0; i < mS; ++i) {
    std::vector<Tensor> blocks;
    for (unsigned j = 0; j < nS; ++j)
      blocks.push_back(partials->piece(p.piece(q, i, j, kk))
                           .reshape({p.m(i).size(), p.n(j).size()}));
    panels.push_back(concat(blocks, 1));
  }
  return concat(panels, 0);
}

// Whether the host kernels sum the K-slices' products as the block kernel
// runs, leaving each sum in the first slice's partials for the reduction's
// kernel to copy out (paired by Graph::pairHostKernels): float products
// into a new C whose slices are one chunk of matmul::gemm's each and small
// enough to be read in place.
bool summedOnHost(const Plan &p) {
  return p.numTiles() > 1 && p.k.parts > 1 && !p.accumulate &&
         p.types.input == FLOAT && p.types.partials == FLOAT &&
         p.types.output == FLOAT && p.k.maxSize() <= matmul::kMaxSummedSlice &&
         p.k.maxSize() * p.n.length <= matmul::kDirectMaxB;
}

// summedOnHost's block kernel: per group, up to four MatMulHostSum
// vertices, each a band of rows by a band of B's columns over all of K.
void addSummedHostKernel(Graph &graph, const Plan &p, const Tensor &A,
                         const Tensor &B, const Tensor &C,
                         const PieceVariable &partials, ComputeSet blocks,
                         bool transA, bool transB, const DebugContext &dc) {
  ComputeSet cs = graph.addComputeSet(DebugContext(dc, "blocks/host"));
  const Range allK{0, p.k.length};
  std::vector<unsigned> slices;
  for (unsigned kk = 0; kk < p.k.parts; ++kk)
    slices.push_back(static_cast<unsigned>(p.k(kk).size()));
  // Two bands of rows (of at least 32) by two of 16-column panels: each
  // vertex gathers its rows of A (pieces of a few floats each) once per
  // column band and reads its columns of B once per row band, and a
  // K-slice of half of B's columns (36 x 128 floats in the MLP) stays in
  // L1; the host's threads share four vertices. (Measured on the MLP:
  // 1 x 2 beats 1 x 1 at batch 32 and 2 x 2 beats 4 x 1 at 128.)
  const unsigned bands = static_cast<unsigned>(std::clamp<std::size_t>(
      std::min((4 + p.g.length - 1) / p.g.length, p.m.length / 32), 1, 2));
  const std::size_t panels = (p.n.length + 15) / 16;
  const unsigned colBands = panels >= 2 ? 2 : 1;
  for (std::size_t q = 0; q < p.g.length; ++q) {
    const Tensor out = sliceOutput(p, C, &partials, q, 0);
    for (unsigned band = 0; band < bands; ++band)
      for (unsigned cb = 0; cb < colBands; ++cb) {
        const Range rows = sub({0, p.m.length}, bands, band);
        const Range cols{
            std::min(p.n.length, 16 * (cb * panels / colBands)),
            std::min(p.n.length, 16 * ((cb + 1) * panels / colBands))};
        if (!rows.size() || !cols.size())
          continue;
        VertexRef v = graph.addVertex(cs, "tessera::ops::MatMulHostSum");
        graph.connect(v["a"], operandPieces(graph, A[q], rows, allK, transA));
        graph.connect(v["b"], operandPieces(graph, B[q], allK, cols, transB));
        graph.connect(v["c"], operandPieces(graph, out, rows, cols, false));
        graph.setInitialValue(v["m"], static_cast<unsigned>(rows.size()));
        graph.setInitialValue(v["n"], static_cast<unsigned>(cols.size()));
        graph.setInitialValue(v["slices"], slices);
        graph.setInitialValue(v["transA"], static_cast<unsigned>(transA));
        graph.setInitialValue(v["transB"], static_cast<unsigned>(transB));
        graph.setTileMapping(v, 0);
        graph.setPerfEstimate(v, rows.size() * p.k.length * cols.size() / 64);
      }
  }
  graph.setHostKernel(blocks, cs);
}

// The block products' host kernel (Graph::setHostKernel): per group and
// K-slice, a few MatMulHost vertices each multiply a band of rows by all of
// B's columns with the tiles' kernel and order of sums, writing exactly the
// bytes the block vertices would. The host runs a handful of large products
// instead of one small one per tile.
void addHostKernel(Graph &graph, const Plan &p, const Tensor &A,
                   const Tensor &B, const Tensor &C,
                   const PieceVariable *partials, ComputeSet blocks,
                   bool transA, bool transB, const DebugContext &dc) {
  const std::string cls =
      templateName("tessera::ops::MatMulHost",
                   {p.types.input, p.types.partials,
                    partials ? p.types.partials : p.types.output});
  ComputeSet cs = graph.addComputeSet(DebugContext(dc, "blocks/host"));
  const Range all{0, p.n.length};
  // Bands of rows give the host's threads about 16 vertices to share; each
  // band reads all of its K-slice of B, so no more bands than that.
  const std::size_t products = p.g.length * p.k.parts;
  const unsigned bands = static_cast<unsigned>(std::clamp<std::size_t>(
      std::min((16 + products - 1) / products, p.m.length / 16), 1, 8));
  for (std::size_t q = 0; q < p.g.length; ++q)
    for (unsigned kk = 0; kk < p.k.parts; ++kk) {
      const Range ks = p.k(kk);
      const Tensor out = sliceOutput(p, C, partials, q, kk);
      for (unsigned band = 0; band < bands; ++band) {
        const Range rows = sub({0, p.m.length}, bands, band);
        if (!rows.size() || !ks.size())
          continue;
        VertexRef v = graph.addVertex(cs, cls);
        graph.connect(v["a"], operandPieces(graph, A[q], rows, ks, transA));
        graph.connect(v["b"], operandPieces(graph, B[q], ks, all, transB));
        graph.connect(v["c"], operandPieces(graph, out, rows, all, false));
        graph.setInitialValue(v["m"], static_cast<unsigned>(rows.size()));
        graph.setInitialValue(v["k"], static_cast<unsigned>(ks.size()));
        graph.setInitialValue(v["n"], static_cast<unsigned>(all.size()));
        graph.setInitialValue(v["transA"], static_cast<unsigned>(transA));
        graph.setInitialValue(v["transB"], static_cast<unsigned>(transB));
        graph.setTileMapping(v, 0);
        graph.setPerfEstimate(v, rows.size() * ks.size() * all.size() / 64);
      }
    }
  graph.setHostKernel(blocks, cs);
}

// The block products: one MatMulBlock per group of each tile's block,
// writing C directly or the partials when a reduction follows; with a host
// kernel when the product spans several tiles.
ComputeSet addBlockVertices(Graph &graph, const Plan &p, const Tensor &A,
                            const Tensor &B, const Tensor &C,
                            const PieceVariable *partials, Sequence &prog,
                            const DebugContext &dc) {
  const std::string cls =
      templateName("tessera::ops::MatMulBlock",
                   {p.types.input, p.types.partials,
                    partials ? p.types.partials : p.types.output});
  ComputeSet cs = graph.addComputeSet(DebugContext(dc, "blocks"));
  const bool transA = readTransposed(A[0]), transB = readTransposed(B[0]);
  forEachBlockInKOrder(p, [&](unsigned tile, unsigned i, unsigned j,
                              unsigned kk, std::size_t q) {
    const Range rows = p.m(i), cols = p.n(j), ks = p.k(kk);
    VertexRef v = graph.addVertex(cs, cls);
    graph.connect(v["a"], operandPieces(graph, A[q], rows, ks, transA));
    graph.connect(v["b"], operandPieces(graph, B[q], ks, cols, transB));
    graph.setInitialValue(v["transA"], static_cast<unsigned>(transA));
    graph.setInitialValue(v["transB"], static_cast<unsigned>(transB));
    graph.connect(v["c"], partials ? partials->piece(p.piece(q, i, j, kk))
                                   : blockOf(C[q], rows, cols));
    graph.setInitialValue(v["m"], static_cast<unsigned>(rows.size()));
    graph.setInitialValue(v["k"], static_cast<unsigned>(ks.size()));
    graph.setInitialValue(v["n"], static_cast<unsigned>(cols.size()));
    graph.setTileMapping(v, tile);
  });
  if (partials && summedOnHost(p))
    addSummedHostKernel(graph, p, A, B, C, *partials, cs, transA, transB, dc);
  else if (p.numTiles() > 1)
    addHostKernel(graph, p, A, B, C, partials, cs, transA, transB, dc);
  prog.add(program::Execute(cs, DebugContext(dc, "blocks")));
  return cs;
}

// The reduction's host kernel (Graph::setHostKernel), for a product into
// a new C: one vertex per block sums its kS whole partials, in the tiles'
// order, into the block's pieces of C; when summedOnHost, it copies the
// first, which holds the sum.
void addReduceHostKernel(Graph &graph, const Plan &p, const Tensor &C,
                         const PieceVariable &partials, ComputeSet reduce,
                         const DebugContext &dc) {
  const std::string cls = templateName("tessera::ops::MatMulReduceHost",
                                       {p.types.output, p.types.partials});
  const unsigned mS = p.m.parts, nS = p.n.parts, kS = p.k.parts;
  ComputeSet cs = graph.addComputeSet(DebugContext(dc, "reduce/host"));
  for (std::size_t q = 0; q < p.g.length; ++q)
    for (unsigned i = 0; i < mS; ++i)
      for (unsigned j = 0; j < nS; ++j) {
        const std::size_t n = p.m(i).size() * p.n(j).size();
        if (!n)
          continue;
        std::vector<Tensor> parts;
        for (unsigned kk = 0; kk < (summedOnHost(p) ? 1 : kS); ++kk)
          parts.push_back(partials.piece(p.piece(q, i, j, kk)));
        VertexRef v = graph.addVertex(cs, cls);
        graph.connect(v["partials"], parts);
        graph.connect(v["out"],
                      memoryPieceTensors(graph, blockOf(C[q], p.m(i), p.n(j))));
        graph.setTileMapping(v, 0);
        graph.setPerfEstimate(v, n * kS / 64);
      }
  graph.setHostKernel(reduce, cs);
}

// The reduction: tile (.., kk) sums range reduceRange(kk) of its block's
// kS partials into C (or adds alpha times the sum to C).
ComputeSet addReduceVertices(Graph &graph, const Plan &p, const Tensor &C,
                             const PieceVariable &partials, float alpha,
                             Sequence &prog, const DebugContext &dc) {
  const std::string cls =
      templateName(p.accumulate ? "tessera::ops::MatMulReduceAcc"
                                : "tessera::ops::MatMulReduce",
                   {p.types.output, p.types.partials});
  const unsigned kS = p.k.parts;
  ComputeSet cs = graph.addComputeSet(DebugContext(dc, "reduce"));
  forEachTileBlock(p, [&](unsigned tile, unsigned, unsigned i, unsigned j,
                          unsigned kk, std::size_t q) {
    const Range r = reduceRange(p, i, j, kk);
    if (!r.size())
      return;
    std::vector<Tensor> parts;
    for (unsigned k2 = 0; k2 < kS; ++k2)
      parts.push_back(
          partials.piece(p.piece(q, i, j, k2)).slice(r.begin, r.end));
    VertexRef v = graph.addVertex(cs, cls);
    graph.connect(v["partials"], parts);
    graph.connect(v["out"],
                  blockOf(C[q], p.m(i), p.n(j)).slice(r.begin, r.end));
    if (p.accumulate)
      graph.setInitialValue(v["alpha"], alpha);
    graph.setTileMapping(v, tile);
  });
  if (p.numTiles() > 1 && !p.accumulate)
    addReduceHostKernel(graph, p, C, partials, cs, dc);
  prog.add(program::Execute(cs, DebugContext(dc, "reduce")));
  return cs;
}

// \p t, or when scattered a copy of it in \p create's layout: as PopLibs
// rearranges an operand laid out against the plan, one exchange of each
// element replaces the block vertices gathering each element (once for
// every block that reads it) as a piece of its own.
Tensor rearranged(Graph &graph, const Plan &p, const Tensor &t,
                  Tensor (*create)(Graph &, const Plan &, const DebugContext &),
                  Sequence &prog, const DebugContext &dc) {
  if (!scattered(graph.getTarget(), p, t))
    return t;
  Tensor copy = create(graph, p, dc);
  prog.add(program::Copy(t, copy, false, dc));
  return copy;
}

// The product of 3-D A and B into C (created when not given), per plan.
Tensor build(Graph &graph, const Plan &p, const Tensor &operandA,
             const Tensor &operandB, Tensor C, float alpha, Sequence &prog,
             const DebugContext &dc) {
  const Tensor A = rearranged(graph, p, operandA, createLHS, prog,
                              DebugContext(dc, "rearrangeA"));
  const Tensor B = rearranged(graph, p, operandB, createRHS, prog,
                              DebugContext(dc, "rearrangeB"));
  if (!C.valid())
    C = createOutput(graph, p, DebugContext(dc, "output"));
  if (!p.reduces()) {
    addBlockVertices(graph, p, A, B, C, nullptr, prog, dc);
    return C;
  }
  PieceVariable partials(p.g.length * p.m.parts * p.n.parts * p.k.parts);
  forEachTileBlock(p, [&](unsigned tile, unsigned, unsigned i, unsigned j,
                          unsigned kk, std::size_t q) {
    partials.add(p.piece(q, i, j, kk), p.m(i).size() * p.n(j).size(), tile);
  });
  partials.create(graph, p.types.partials, DebugContext(dc, "partials"));
  const ComputeSet blocks =
      addBlockVertices(graph, p, A, B, C, &partials, prog, dc);
  const ComputeSet reduce =
      addReduceVertices(graph, p, C, partials, alpha, prog, dc);
  if (summedOnHost(p))
    graph.pairHostKernels(blocks, reduce);
  return C;
}

DebugContext nameOr(const DebugContext &dc, const char *name) {
  return dc.name.empty() ? DebugContext(name) : dc;
}

} // namespace

Tensor matMulGrouped(Graph &graph, const Tensor &A, const Tensor &B,
                     Sequence &prog, Type outputType, const DebugContext &dc,
                     const OptionFlags &options) {
  const Plan p = planFor(graph.getTarget(), "matMulGrouped", A.elementType(),
                         B.elementType(), outputType, A.shape(), B.shape(),
                         true, options, false);
  return build(graph, p, A, B, Tensor(), 1.0f, prog,
               nameOr(dc, "matMulGrouped"));
}

Tensor matMulGrouped(Graph &graph, const Tensor &A, const Tensor &B,
                     Sequence &prog, const DebugContext &dc,
                     const OptionFlags &options) {
  return matMulGrouped(graph, A, B, prog, A.elementType(), dc, options);
}

Tensor matMul(Graph &graph, const Tensor &A, const Tensor &B, Sequence &prog,
              Type outputType, const DebugContext &dc,
              const OptionFlags &options) {
  const Plan p =
      planFor(graph.getTarget(), "matMul", A.elementType(), B.elementType(),
              outputType, A.shape(), B.shape(), false, options, false);
  return build(graph, p, A.expand({0}), B.expand({0}), Tensor(), 1.0f, prog,
               nameOr(dc, "matMul"))[0];
}

Tensor matMul(Graph &graph, const Tensor &A, const Tensor &B, Sequence &prog,
              const DebugContext &dc, const OptionFlags &options) {
  return matMul(graph, A, B, prog, A.elementType(), dc, options);
}

void matMulGroupedAcc(Graph &graph, const Tensor &C, float alpha,
                      const Tensor &A, const Tensor &B, Sequence &prog,
                      const DebugContext &dc, const OptionFlags &options) {
  const Plan p = planFor(graph.getTarget(), "matMulGroupedAcc", A.elementType(),
                         B.elementType(), C.elementType(), A.shape(), B.shape(),
                         true, options, true);
  const std::vector<std::size_t> want{p.g.length, p.m.length, p.n.length};
  if (C.shape() != want)
    throw ShapeError("matMulGroupedAcc: C has shape " + C.shapeToString() +
                     " but A B has shape [" + str(want[0]) + ", " +
                     str(want[1]) + ", " + str(want[2]) +
                     "]; C must have the product's shape");
  build(graph, p, A, B, C, alpha, prog, nameOr(dc, "matMulGroupedAcc"));
}

void matMulAcc(Graph &graph, const Tensor &C, float alpha, const Tensor &A,
               const Tensor &B, Sequence &prog, const DebugContext &dc,
               const OptionFlags &options) {
  const Plan p =
      planFor(graph.getTarget(), "matMulAcc", A.elementType(), B.elementType(),
              C.elementType(), A.shape(), B.shape(), false, options, true);
  const std::vector<std::size_t> want{p.m.length, p.n.length};
  if (C.shape() != want)
    throw ShapeError("matMulAcc: C has shape " + C.shapeToString() +
                     " but A B has shape [" + str(want[0]) + ", " +
                     str(want[1]) + "]; C must have the product's shape");
  build(graph, p, A.expand({0}), B.expand({0}), C.expand({0}), alpha, prog,
        nameOr(dc, "matMulAcc"));
}

Tensor createMatMulGroupedInputLHS(Graph &graph, Type type, Type outputType,
                                   const std::vector<std::size_t> &aShape,
                                   const std::vector<std::size_t> &bShape,
                                   const DebugContext &dc,
                                   const OptionFlags &options) {
  const Plan p =
      planFor(graph.getTarget(), "createMatMulGroupedInputLHS", type, type,
              outputType, aShape, bShape, true, options, false);
  return createLHS(graph, p, nameOr(dc, "matMulLHS"));
}

Tensor createMatMulGroupedInputRHS(Graph &graph, Type type, Type outputType,
                                   const std::vector<std::size_t> &aShape,
                                   const std::vector<std::size_t> &bShape,
                                   const DebugContext &dc,
                                   const OptionFlags &options) {
  const Plan p =
      planFor(graph.getTarget(), "createMatMulGroupedInputRHS", type, type,
              outputType, aShape, bShape, true, options, false);
  return createRHS(graph, p, nameOr(dc, "matMulRHS"));
}

Tensor createMatMulInputLHS(Graph &graph, Type type, Type outputType,
                            const std::vector<std::size_t> &aShape,
                            const std::vector<std::size_t> &bShape,
                            const DebugContext &dc,
                            const OptionFlags &options) {
  const Plan p = planFor(graph.getTarget(), "createMatMulInputLHS", type, type,
                         outputType, aShape, bShape, false, options, false);
  return createLHS(graph, p, nameOr(dc, "matMulLHS"))[0];
}

Tensor createMatMulInputLHS(Graph &graph, Type type,
                            const std::vector<std::size_t> &aShape,
                            const std::vector<std::size_t> &bShape,
                            const DebugContext &dc,
                            const OptionFlags &options) {
  return createMatMulInputLHS(graph, type, type, aShape, bShape, dc, options);
}

Tensor createMatMulInputRHS(Graph &graph, Type type, Type outputType,
                            const std::vector<std::size_t> &aShape,
                            const std::vector<std::size_t> &bShape,
                            const DebugContext &dc,
                            const OptionFlags &options) {
  const Plan p = planFor(graph.getTarget(), "createMatMulInputRHS", type, type,
                         outputType, aShape, bShape, false, options, false);
  return createRHS(graph, p, nameOr(dc, "matMulRHS"))[0];
}

Tensor createMatMulInputRHS(Graph &graph, Type type,
                            const std::vector<std::size_t> &aShape,
                            const std::vector<std::size_t> &bShape,
                            const DebugContext &dc,
                            const OptionFlags &options) {
  return createMatMulInputRHS(graph, type, type, aShape, bShape, dc, options);
}

MatMulPlan planMatMul(const Target &target, Type inputType, Type outputType,
                      const std::vector<std::size_t> &aShape,
                      const std::vector<std::size_t> &bShape,
                      const OptionFlags &options) {
  const bool grouped = aShape.size() == 3;
  return planFor(target, grouped ? "matMulGrouped" : "matMul", inputType,
                 inputType, outputType, aShape, bShape, grouped, options, false)
      .summary;
}

} // namespace tessera::ops
