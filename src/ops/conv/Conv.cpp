// The convolution ops: ConvParams, tensor creation, and the graph each pass
// builds from its plan (ConvPlan.cpp). A forward unit is one tile running
// one ConvPartial vertex per conv group it holds; its entries are rows of
// the activations and outputs, so rows that already live on the tile are
// used in place and only the rest are exchanged. When the plan splits the
// reduced dimension (input channels forward; batch and rows for the weight
// gradient) the units write partial sums and a second compute set reduces
// them, each of the block's tiles reducing a share of the block. Both
// compute sets also get host kernels (Graph::setHostKernel) that write the
// same bytes in a few large blocks: the IPU Model's host then runs a
// handful of vertices per pass instead of one per tile.
#include "ConvInternal.hpp"
#include "OpsInternal.hpp"

#include "tessera/ops/Elementwise.hpp"
#include "tessera/support/Error.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <string>

namespace tessera::ops {

namespace conv {

DebugContext nameOr(const DebugContext &dc, const char *name) {
  return dc.name.empty() ? DebugContext(name) : dc;
}

// Sets each piece in memory order: a tensor laid out block by block has
// its rows out of memory order, and mapping them in the tensor's order
// would insert each interval into the middle of the variable's sorted
// mapping (quadratic in its rows).
void mapInMemoryOrder(Graph &graph, const Tensor &t, const TileMapping &m) {
  struct Piece {
    Run run;
    unsigned tile;
  };
  std::vector<Piece> pieces;
  const Tensor flat = t.flatten();
  for (unsigned tile = 0; tile < m.size(); ++tile)
    for (const Interval &iv : m[tile]) {
      const Tensor piece = flat.slice(iv.begin(), iv.end());
      for (const Run &r : piece.runs())
        pieces.push_back({r, tile});
    }
  std::sort(pieces.begin(), pieces.end(), [](const Piece &a, const Piece &b) {
    return a.run.var != b.run.var ? a.run.var < b.run.var
                                  : a.run.start < b.run.start;
  });
  for (const Piece &p : pieces)
    graph.setTileMapping(Tensor(t.elementType(), ArrayView<Run>(&p.run, 1)),
                         p.tile);
}

void checkTensor(const char *op, const char *what, const Tensor &t,
                 const std::vector<std::size_t> &shape, Type type) {
  if (!t.valid())
    throw ShapeError(std::string(op) + ": " + what + " is an empty tensor");
  if (t.shape() != shape) {
    std::string want = "[";
    for (std::size_t i = 0; i < shape.size(); ++i)
      want += (i ? ", " : "") + std::to_string(shape[i]);
    throw ShapeError(std::string(op) + ": " + what + " has shape " +
                     t.shapeToString() + " but the parameters need " + want +
                     "]");
  }
  if (t.elementType() != type)
    throw TypeError(std::string(op) + ": " + what + " has type " +
                    std::string(typeName(t.elementType())) +
                    " but the parameters say " + std::string(typeName(type)) +
                    "; cast it or change the parameters");
}

} // namespace conv

namespace {

using conv::checkTensor;
using conv::ConvShape;
using conv::mapInMemoryOrder;
using conv::nameOr;
using conv::Pass;
using conv::pieceOf;
using conv::Plan;
using conv::Range;

std::string str(std::size_t v) { return std::to_string(v); }

bool floating(Type t) { return t == Type::FLOAT || t == Type::HALF; }

/// The geometry vector of a vertex reading input rows \p in for output
/// rows \p rows.
std::vector<int> geometry(const ConvShape &s, std::size_t inChans,
                          std::size_t outChans, std::size_t batch, Range rows,
                          Range in) {
  const std::size_t inRows = std::max<std::size_t>(in.size(), 1);
  std::vector<int> g(conv::gCount);
  g[conv::gInChans] = static_cast<int>(inChans);
  g[conv::gOutChans] = static_cast<int>(outChans);
  g[conv::gBatch] = static_cast<int>(batch);
  g[conv::gRows] = static_cast<int>(rows.size());
  g[conv::gOutW] = static_cast<int>(s.outW);
  g[conv::gInRows] = static_cast<int>(inRows);
  g[conv::gInW] = static_cast<int>(s.inW);
  g[conv::gKH] = static_cast<int>(s.kH);
  g[conv::gKW] = static_cast<int>(s.kW);
  g[conv::gSH] = s.sH;
  g[conv::gSW] = s.sW;
  g[conv::gKdH] = s.kdH;
  g[conv::gKdW] = s.kdW;
  g[conv::gIdH] = s.idH;
  g[conv::gIdW] = s.idW;
  g[conv::gRowOrigin] =
      static_cast<int>(static_cast<long>(rows.begin) * s.sH - s.plH -
                       static_cast<long>(in.begin) * s.idH);
  g[conv::gColOrigin] = static_cast<int>(-s.plW);
  return g;
}

/// Input rows to connect: the rows the block reads, or (when it reads only
/// padding) one row, which the vertex then never reads.
Range connectedRows(const ConvShape &s, Range rows) {
  const Range r = conv::inputRowsFor(s, rows);
  return r.size() ? r : Range{0, 1};
}

/// Adds [begin, end) to tile's intervals, merging with the last one.
void addInterval(TileMapping &m, unsigned tile, std::size_t begin,
                 std::size_t end) {
  auto &v = m[tile];
  if (!v.empty() && v.back().end() == begin)
    v.back().last = end;
  else
    v.emplace_back(begin, end);
}

/// Weights as the forward convolution reads them ([G, Cout, Cin, kH, kW]):
/// given so, or transposed and flipped from [G, Cin, Cout, kH, kW].
// Both kernel dimensions reverse as one (the same elements, in the same
// runs): a reverse builds a whole run list, and reversing kH first splits
// each kernel into kH runs (800k for a 512 x 512 x 3 x 3 kernel).
Tensor forwardWeights(const Tensor &w, bool transposeAndFlip) {
  if (!transposeAndFlip)
    return w;
  const Tensor t = w.dimShuffle({0, 2, 1, 3, 4});
  const std::vector<std::size_t> shape = t.shape();
  return t.flatten(3, 5).reverse(3).reshape(shape);
}

class ConvBuilder {
public:
  ConvBuilder(Graph &graph, const ConvShape &s, Pass pass, const Plan &plan,
              const DebugContext &dc)
      : graph_(graph), target_(graph.getTarget()), s_(s), pass_(pass),
        plan_(plan), dc_(dc),
        macs_(target_.getMacsPerCyclePerTile(
            s.inType, s.inType == Type::FLOAT ? Type::FLOAT : s.partialsType)),
        parts_(plan.reduceParts(pass)), mapping_(target_.getNumTiles()) {
    cs_ = graph.addComputeSet(DebugContext(dc, "convolve"));
    if (parts_ > 1) {
      reduceCs_ = graph.addComputeSet(DebugContext(dc, "reduce"));
      reduceHostCs_ = graph.addComputeSet(DebugContext(dc, "reduce/host"));
    }
  }

  /// Forward: \p acts [N, G*Cin, H, W], \p weights [G, Cout, Cin, kH, kW]
  /// (any view; when \p flipped, [G, Cin, Cout, kH, kW] to transpose and
  /// flip), \p out [N, G*Cout, H', W'], which when \p outFresh is a fresh
  /// variable that the plan maps.
  void forward(const Tensor &acts, const Tensor &weights, bool flipped,
               const Tensor &out, bool outFresh, program::Sequence &prog) {
    outFresh_ = outFresh;
    const Tensor w = forwardWeights(weights, flipped);
    for (unsigned gp = 0; gp < plan_.groups; ++gp)
      for (unsigned nb = 0; nb < plan_.batch; ++nb)
        for (unsigned cb = 0; cb < plan_.outChans; ++cb)
          for (unsigned hb = 0; hb < plan_.rows; ++hb) {
            const Range gr = pieceOf(s_.groups, plan_.groups, gp);
            for (std::size_t g = gr.begin; g < gr.end; ++g)
              forwardBlock(acts, w, out, g, {gp, nb, cb, hb, 0});
          }
    // Mapped before the host kernel, whose row lists merge by the mapping.
    if (outFresh)
      mapInMemoryOrder(graph_, out, mapping_);
    if (plan_.outChans > 1)
      addForwardHostKernel(acts, weights, flipped);
    finish(prog);
  }

  /// Weight gradient: \p deltas [N, G*Cout, H', W'], \p acts, \p dw
  /// [G, Cout, Cin, kH, kW], a fresh variable that the plan maps.
  void weightGrad(const Tensor &deltas, const Tensor &acts, const Tensor &dw,
                  program::Sequence &prog) {
    for (unsigned gp = 0; gp < plan_.groups; ++gp)
      for (unsigned cb = 0; cb < plan_.outChans; ++cb)
        for (unsigned ib = 0; ib < plan_.inChans; ++ib) {
          const Range gr = pieceOf(s_.groups, plan_.groups, gp);
          for (std::size_t g = gr.begin; g < gr.end; ++g)
            weightGradBlock(deltas, acts, dw, g, {gp, 0, cb, 0, ib});
        }
    mapInMemoryOrder(graph_, dw, mapping_);
    if (plan_.outChans * plan_.inChans > 1)
      addWeightGradHostKernel(deltas, acts);
    finish(prog);
  }

private:
  struct Unit {
    unsigned g, n, co, h, ci;
  };

  // A row that a tile vertex writes, as a host kernel lists it.
  using HostRow = RunPiece;

  // The type of the pass's result, and of what its units write: the result
  // itself, or partial sums when a reduction follows.
  Type finalType() const {
    return pass_ == Pass::Forward ? s_.outType : s_.inType;
  }
  Type resultType() const { return parts_ > 1 ? s_.partialsType : finalType(); }

  unsigned tileOf(const Unit &u) const {
    return conv::unitTile(target_, plan_, u.g, u.n, u.co, u.h, u.ci);
  }

  void finish(program::Sequence &prog) {
    prog.add(program::Execute(cs_, dc_));
    if (parts_ > 1) {
      graph_.setHostKernel(reduceCs_, reduceHostCs_);
      prog.add(program::Execute(reduceCs_, dc_));
    }
  }

  // Partial sums of one unit: a variable on the unit's tile.
  Tensor partials(std::size_t elems, unsigned tile) {
    Tensor p = graph_.addVariable(s_.partialsType, {elems},
                                  DebugContext(dc_, "partials"));
    graph_.setTileMapping(p, tile);
    return p;
  }

  void forwardBlock(const Tensor &acts, const Tensor &w, const Tensor &out,
                    std::size_t g, Unit u) {
    const Range nr = pieceOf(s_.batch, plan_.batch, u.n);
    const Range cr = pieceOf(s_.outChans, plan_.outChans, u.co);
    const Range hr = pieceOf(s_.outH, plan_.rows, u.h);
    const Range ir = connectedRows(s_, hr);
    const std::size_t rowsPerBlock = nr.size() * cr.size() * hr.size();
    const std::size_t c0 = g * s_.outChans, ci0 = g * s_.inChans;
    // The block's output rows [n][co][oh], each outW long, in that order;
    // a tensor per row only for a host kernel, which lists them.
    const Tensor outBlock = out.slice({nr.begin, c0 + cr.begin, hr.begin, 0},
                                      {nr.end, c0 + cr.end, hr.end, s_.outW})
                                .flatten();
    const bool host = plan_.outChans > 1;
    std::vector<std::size_t> outStart; // flat index of each row in out
    for (std::size_t n = nr.begin; n < nr.end; ++n)
      for (std::size_t co = cr.begin; co < cr.end; ++co)
        for (std::size_t oh = hr.begin; oh < hr.end; ++oh)
          outStart.push_back(
              ((n * s_.groups * s_.outChans + c0 + co) * s_.outH + oh) *
              s_.outW);
    const std::string cls =
        templateName("tessera::ops::ConvPartial", {s_.inType, resultType()});
    std::vector<Tensor> parts;
    for (unsigned ib = 0; ib < plan_.inChans; ++ib) {
      u.ci = ib;
      const unsigned tile = tileOf(u);
      const Range cir = pieceOf(s_.inChans, plan_.inChans, ib);
      VertexRef v = graph_.addVertex(cs_, cls);
      // Rows that continue each other on one tile are one entry (the vertex
      // cuts entries back into rows): a worker's list of regions rather
      // than a list element per row, as PopLibs' vertices take them.
      const Tensor &actsBlock = shared(actsBlocks_, {g, u.n, u.h, ib}, [&] {
        return acts.slice({nr.begin, ci0 + cir.begin, ir.begin, 0},
                          {nr.end, ci0 + cir.end, ir.end, s_.inW});
      });
      const Tensor &weightsBlock = shared(weightBlocks_, {g, u.co, ib, 0}, [&] {
        return w.slice({g, cr.begin, cir.begin, 0, 0},
                       {g + 1, cr.end, cir.end, s_.kH, s_.kW});
      });
      connect(v, "in", rowEntries(graph_, actsBlock, s_.inW, tile, false));
      connect(v, "weights",
              rowEntries(graph_, weightsBlock, cir.size() * s_.kH * s_.kW, tile,
                         false));
      if (parts_ > 1)
        parts.push_back(partials(rowsPerBlock * s_.outW, tile));
      connect(v, "out",
              parts_ > 1
                  ? std::vector<Tensor>{parts.back()}
                  : rowEntries(graph_, outBlock, s_.outW, tile, outFresh_));
      if (host) {
        std::vector<HostRow> &entries =
            hostEntries(g, (u.n * plan_.rows + u.h) * plan_.inChans + ib,
                        nr.size() * s_.outChans * hr.size());
        const Tensor &rows = parts_ > 1 ? parts.back() : outBlock;
        for (std::size_t r = 0; r < rowsPerBlock; ++r) {
          const std::size_t oh = r % hr.size(), co = r / hr.size() % cr.size(),
                            n = r / (hr.size() * cr.size());
          setHostRow(
              entries[(n * s_.outChans + cr.begin + co) * hr.size() + oh], rows,
              r * s_.outW, (r + 1) * s_.outW);
        }
      }
      graph_.setInitialValue(v["geometry"], geometry(s_, cir.size(), cr.size(),
                                                     nr.size(), hr, ir));
      graph_.setPerfEstimate(
          v,
          conv::convPartialCycles(nr.size() * hr.size(), cr.size(), s_.outW,
                                  cir.size() * s_.kH * s_.kW, macs_, target_));
      graph_.setTileMapping(v, tile);
    }
    // Without a reduction the unit's tile holds the output rows; with one,
    // each of the block's tiles reduces and holds a share of the rows.
    for (unsigned p = 0; p < parts_; ++p) {
      u.ci = p;
      const Range er = pieceOf(rowsPerBlock, parts_, p);
      if (er.size() == 0)
        continue;
      const unsigned tile = tileOf(u);
      for (std::size_t r = er.begin; r < er.end; ++r)
        addInterval(mapping_, tile, outStart[r], outStart[r] + s_.outW);
      if (parts_ > 1)
        reduce(parts, outBlock, er, s_.outW, tile);
    }
    if (parts_ > 1)
      reduceOnHost(parts, outBlock, s_.outW);
  }

  void weightGradBlock(const Tensor &deltas, const Tensor &acts,
                       const Tensor &dw, std::size_t g, Unit u) {
    const Range cr = pieceOf(s_.outChans, plan_.outChans, u.co);
    const Range cir = pieceOf(s_.inChans, plan_.inChans, u.ci);
    const std::size_t kElems = cir.size() * s_.kH * s_.kW;
    const std::size_t c0 = g * s_.outChans, ci0 = g * s_.inChans;
    // The block's rows of dW, one per output channel (kElems each).
    const Tensor outBlock = dw.slice({g, cr.begin, cir.begin, 0, 0},
                                     {g + 1, cr.end, cir.end, s_.kH, s_.kW})
                                .flatten();
    const bool host = plan_.outChans * plan_.inChans > 1;
    std::vector<std::size_t> outStart;
    for (std::size_t co = cr.begin; co < cr.end; ++co)
      outStart.push_back(((g * s_.outChans + co) * s_.inChans + cir.begin) *
                         s_.kH * s_.kW);
    const std::string cls =
        templateName("tessera::ops::ConvWeightGrad", {s_.inType, resultType()});
    std::vector<Tensor> parts;
    for (unsigned nb = 0; nb < plan_.batch; ++nb)
      for (unsigned hb = 0; hb < plan_.rows; ++hb) {
        u.n = nb;
        u.h = hb;
        const unsigned tile = tileOf(u);
        const Range nr = pieceOf(s_.batch, plan_.batch, nb);
        const Range hr = pieceOf(s_.outH, plan_.rows, hb);
        const Range ir = connectedRows(s_, hr);
        VertexRef v = graph_.addVertex(cs_, cls);
        // Entries of whole (batch, channel) blocks, merged as rows are.
        const Tensor &deltasBlock =
            shared(deltasBlocks_, {g, nb, hb, u.co}, [&] {
              return deltas.slice({nr.begin, c0 + cr.begin, hr.begin, 0},
                                  {nr.end, c0 + cr.end, hr.end, s_.outW});
            });
        const Tensor &actsBlock = shared(actsBlocks_, {g, nb, hb, u.ci}, [&] {
          return acts.slice({nr.begin, ci0 + cir.begin, ir.begin, 0},
                            {nr.end, ci0 + cir.end, ir.end, s_.inW});
        });
        connect(
            v, "deltas",
            rowEntries(graph_, deltasBlock, hr.size() * s_.outW, tile, false));
        connect(v, "acts",
                rowEntries(graph_, actsBlock, ir.size() * s_.inW, tile, false));
        if (parts_ > 1)
          parts.push_back(partials(cr.size() * kElems, tile));
        const Tensor &rows = parts_ > 1 ? parts.back() : outBlock;
        connect(v, "out", rowEntries(graph_, rows, kElems, tile, true));
        if (host) {
          std::vector<HostRow> &entries =
              hostEntries(g, nb * plan_.rows + hb, s_.outChans * plan_.inChans);
          for (std::size_t c = 0; c < cr.size(); ++c)
            setHostRow(entries[(cr.begin + c) * plan_.inChans + u.ci], rows,
                       c * kElems, (c + 1) * kElems);
        }
        graph_.setInitialValue(
            v["geometry"],
            geometry(s_, cir.size(), cr.size(), nr.size(), hr, ir));
        graph_.setPerfEstimate(
            v, conv::convWeightGradCycles(kElems, cr.size(),
                                          nr.size() * hr.size() * s_.outW,
                                          macs_, target_));
        graph_.setTileMapping(v, tile);
      }
    for (unsigned p = 0; p < parts_; ++p) {
      u.n = p / plan_.rows;
      u.h = p % plan_.rows;
      const Range er = pieceOf(cr.size(), parts_, p);
      if (er.size() == 0)
        continue;
      const unsigned tile = tileOf(u);
      for (std::size_t r = er.begin; r < er.end; ++r)
        addInterval(mapping_, tile, outStart[r], outStart[r] + kElems);
      if (parts_ > 1)
        reduce(parts, outBlock, er, kElems, tile);
    }
    if (parts_ > 1)
      reduceOnHost(parts, outBlock, kElems);
  }

  // The pieces a host kernel vertex covers, per group: batch-and-rows
  // pieces of a weight gradient; batch, rows and input-channel pieces of a
  // forward pass.
  unsigned hostPieces() const {
    return pass_ == Pass::Forward ? plan_.batch * plan_.rows * plan_.inChans
                                  : parts_;
  }

  // The \p size entries the tile vertices of group g's piece p write, in
  // the order a host kernel vertex lists them: by output channel, then
  // input-channel piece (weight gradient), or by batch entry, output
  // channel and row (forward).
  std::vector<HostRow> &hostEntries(std::size_t g, std::size_t p,
                                    std::size_t size) {
    hostEntries_.resize(s_.groups * hostPieces());
    std::vector<HostRow> &e = hostEntries_[g * hostPieces() + p];
    e.resize(size);
    return e;
  }

  // Row [begin, end) of \p rows as a host kernel lists it: its runs, kept
  // as a tensor only when there are several (a tensor per row of every
  // tile vertex was a fifth of a ResNet-50's convolution lowering).
  void setHostRow(HostRow &row, const Tensor &rows, std::size_t begin,
                  std::size_t end) {
    hostType_ = rows.elementType();
    rows.flatRuns(begin, end, runs_);
    row = RunPiece(rows.elementType(), runs_);
  }

  // The host kernel's out entries: \p rows merged as mergeRows merges
  // them.
  std::vector<Tensor> hostOut(const std::vector<const HostRow *> &rows) const {
    std::vector<ArrayView<Run>> runs;
    runs.reserve(rows.size());
    for (const HostRow *r : rows)
      runs.push_back(r->runs());
    return mergeRowRuns(graph_, hostType_, runs, std::nullopt, false);
  }

  // A host kernel vertex: on tile 0 (it takes no tile memory), its
  // estimate its multiply-accumulates / 64, which only shares the kernel's
  // vertices between the host's threads.
  VertexRef hostVertex(ComputeSet cs, const std::string &cls,
                       std::uint64_t macs) {
    VertexRef v = graph_.addVertex(cs, cls);
    graph_.setTileMapping(v, 0);
    graph_.setPerfEstimate(v, macs / 64);
    return v;
  }

  // Bands of output channels for host kernel vertices over \p pieces pieces:
  // about 16 vertices for the host's threads to share, each band at least
  // 16 channels wide (the kernels' row of output channels).
  unsigned hostBands(std::size_t pieces) const {
    return static_cast<unsigned>(
        std::clamp<std::size_t>((16 + pieces - 1) / pieces, 1,
                                std::max<std::size_t>(1, s_.outChans / 16)));
  }

  // The forward pass's host kernel (Graph::setHostKernel): per group and
  // batch, rows and input-channel piece, ConvPartialHost vertices each
  // compute a band of output channels, writing the rows of all the tiles
  // of that piece with their order of sums. Flipped weights are read in
  // the order they lie (the vertex transposes and flips them), so each
  // weight row is one piece rather than one per element.
  void addForwardHostKernel(const Tensor &acts, const Tensor &weights,
                            bool flipped) {
    ComputeSet cs = graph_.addComputeSet(DebugContext(dc_, "convolve/host"));
    const std::string cls = templateName("tessera::ops::ConvPartialHost",
                                         {s_.inType, resultType()});
    const unsigned pieces = hostPieces();
    const unsigned bands = hostBands(s_.groups * pieces);
    for (std::size_t g = 0; g < s_.groups; ++g)
      for (unsigned p = 0; p < pieces; ++p) {
        const Range nr =
            pieceOf(s_.batch, plan_.batch, p / plan_.inChans / plan_.rows);
        const Range hr =
            pieceOf(s_.outH, plan_.rows, p / plan_.inChans % plan_.rows);
        const Range cir = pieceOf(s_.inChans, plan_.inChans, p % plan_.inChans);
        const Range ir = connectedRows(s_, hr);
        const std::vector<HostRow> &entries =
            hostEntries(g, p, nr.size() * s_.outChans * hr.size());
        // Every band reads the whole input block.
        const std::vector<Tensor> in = memoryPieceTensors(
            graph_,
            acts.slice({nr.begin, g * s_.inChans + cir.begin, ir.begin, 0},
                       {nr.end, g * s_.inChans + cir.end, ir.end, s_.inW})
                .flatten());
        for (unsigned b = 0; b < bands; ++b) {
          const Range cb = pieceOf(s_.outChans, bands, b);
          const Tensor w =
              flipped ? weights.slice({g, cir.begin, cb.begin, 0, 0},
                                      {g + 1, cir.end, cb.end, s_.kH, s_.kW})
                      : weights.slice({g, cb.begin, cir.begin, 0, 0},
                                      {g + 1, cb.end, cir.end, s_.kH, s_.kW});
          std::vector<const HostRow *> out;
          for (std::size_t n = 0; n < nr.size(); ++n)
            for (std::size_t co = cb.begin; co < cb.end; ++co)
              for (std::size_t oh = 0; oh < hr.size(); ++oh)
                out.push_back(
                    &entries[(n * s_.outChans + co) * hr.size() + oh]);
          VertexRef v = hostVertex(cs, cls,
                                   cir.size() * s_.kH * s_.kW * cb.size() *
                                       nr.size() * hr.size() * s_.outW);
          graph_.connect(v["in"], in);
          graph_.connect(v["weights"], memoryPieceTensors(graph_, w.flatten()));
          // Rows that continue each other in one tile interval are one
          // entry; the vertex cuts them back into rows.
          connect(v, "out", hostOut(out));
          graph_.setInitialValue(
              v["geometry"],
              geometry(s_, cir.size(), cb.size(), nr.size(), hr, ir));
          graph_.setInitialValue(v["flipped"], unsigned(flipped));
        }
      }
    graph_.setHostKernel(cs_, cs);
  }

  // The weight gradient's host kernel (Graph::setHostKernel): per group
  // and batch-and-rows piece, ConvWeightGradHost vertices each compute a
  // band of output channels over every input channel, writing the entries
  // of all the tiles of that piece with their order of sums.
  void addWeightGradHostKernel(const Tensor &deltas, const Tensor &acts) {
    ComputeSet cs = graph_.addComputeSet(DebugContext(dc_, "convolve/host"));
    const std::string cls = templateName("tessera::ops::ConvWeightGradHost",
                                         {s_.inType, resultType()});
    const unsigned bands = hostBands(s_.groups * hostPieces());
    for (std::size_t g = 0; g < s_.groups; ++g)
      for (unsigned p = 0; p < parts_; ++p) {
        const Range nr = pieceOf(s_.batch, plan_.batch, p / plan_.rows);
        const Range hr = pieceOf(s_.outH, plan_.rows, p % plan_.rows);
        const Range ir = connectedRows(s_, hr);
        const std::vector<HostRow> &entries =
            hostEntries(g, p, s_.outChans * plan_.inChans);
        // Every band reads all input channels.
        const std::vector<Tensor> in = memoryPieceTensors(
            graph_, acts.slice({nr.begin, g * s_.inChans, ir.begin, 0},
                               {nr.end, (g + 1) * s_.inChans, ir.end, s_.inW})
                        .flatten());
        for (unsigned b = 0; b < bands; ++b) {
          const Range cb = pieceOf(s_.outChans, bands, b);
          const std::size_t c0 = g * s_.outChans;
          const Tensor dl =
              deltas.slice({nr.begin, c0 + cb.begin, hr.begin, 0},
                           {nr.end, c0 + cb.end, hr.end, s_.outW});
          VertexRef v = hostVertex(cs, cls,
                                   s_.inChans * s_.kH * s_.kW * cb.size() *
                                       nr.size() * hr.size() * s_.outW);
          graph_.connect(v["deltas"], memoryPieceTensors(graph_, dl.flatten()));
          graph_.connect(v["acts"], in);
          // Piece by piece, channel by channel: a tile's rows of one piece
          // then follow each other in memory and merge into one entry.
          std::vector<const HostRow *> out;
          for (unsigned p = 0; p < plan_.inChans; ++p)
            for (std::size_t co = cb.begin; co < cb.end; ++co)
              out.push_back(&entries[co * plan_.inChans + p]);
          connect(v, "out", hostOut(out));
          graph_.setInitialValue(
              v["geometry"],
              geometry(s_, s_.inChans, cb.size(), nr.size(), hr, ir));
          graph_.setInitialValue(v["ciParts"], plan_.inChans);
        }
      }
    graph_.setHostKernel(cs_, cs);
  }

  std::string reduceClass() const {
    return templateName("tessera::ops::ConvReduce",
                        {s_.partialsType, finalType()});
  }

  // The reduction's host kernel (Graph::setHostKernel): one ConvReduce per
  // block sums the block's whole partials into all its rows, each element
  // in the tiles' order, instead of each of the block's tiles gathering its
  // share of every partial first.
  void reduceOnHost(const std::vector<Tensor> &parts, const Tensor &outBlock,
                    std::size_t rowElems) {
    VertexRef v = hostVertex(reduceHostCs_, reduceClass(),
                             parts.size() * outBlock.numElements());
    connect(v, "partials", parts);
    connect(v, "out",
            rowEntries(graph_, outBlock, rowElems, std::nullopt, false));
  }

  // One ConvReduce vertex on \p tile summing rows \p er (each \p rowElems
  // long) of every partial block into those rows of \p outBlock.
  void reduce(const std::vector<Tensor> &parts, const Tensor &outBlock,
              Range er, std::size_t rowElems, unsigned tile) {
    VertexRef v = graph_.addVertex(reduceCs_, reduceClass());
    // Each partial's rows er, as runs (a tensor each only once merged).
    std::vector<Run> all;
    std::vector<std::size_t> ends;
    for (const Tensor &p : parts) {
      p.flatRuns(er.begin * rowElems, er.end * rowElems, runs_);
      all.insert(all.end(), runs_.begin(), runs_.end());
      ends.push_back(all.size());
    }
    std::vector<ArrayView<Run>> in;
    for (std::size_t i = 0, from = 0; i < ends.size(); from = ends[i++])
      in.emplace_back(all.data() + from, ends[i] - from);
    connect(v, "partials",
            mergeRowRuns(graph_, s_.partialsType, in, tile, false));
    connect(v, "out",
            rowEntries(graph_,
                       outBlock.slice(er.begin * rowElems, er.end * rowElems),
                       rowElems, tile, outFresh_));
    graph_.setTileMapping(v, tile);
  }

  void connect(VertexRef v, const char *field, const std::vector<Tensor> &ts) {
    graph_.setFieldSize(v[field], ts.size());
    if (!ts.empty())
      graph_.connect(v[field], ts);
  }

  Graph &graph_;
  const Target &target_;
  const ConvShape &s_;
  Pass pass_;
  Plan plan_;
  DebugContext dc_;
  unsigned macs_;
  unsigned parts_;
  TileMapping mapping_;
  ComputeSet cs_, reduceCs_, reduceHostCs_;
  /// Whether the result is a fresh variable mapped as mapping_ says (always
  /// for a weight gradient), so its rows on one tile may be merged before
  /// it is mapped.
  bool outFresh_ = true;
  /// hostEntries' lists, by group and piece.
  std::vector<std::vector<HostRow>> hostEntries_;
  /// setHostRow's scratch, and the type of the rows it set.
  std::vector<Run> runs_;
  Type hostType_ = Type::FLOAT;
  /// The blocks of the input (by group, batch piece, row piece and
  /// input-channel piece), of the weights (by group, output- and
  /// input-channel piece) and of the deltas (by group, batch, row and
  /// output-channel piece) that the units read, each sliced once: every
  /// output-channel piece of a forward pass reads the same input block and
  /// every batch and row piece the same weights (a weight gradient's
  /// pieces share inputs and deltas alike), and a block whose rows all lie
  /// on other tiles is one entry sharing the block's runs.
  using BlockKey = std::array<std::size_t, 4>;
  std::map<BlockKey, Tensor> actsBlocks_, weightBlocks_, deltasBlocks_;

  template <typename Make>
  static const Tensor &shared(std::map<BlockKey, Tensor> &blocks,
                              const BlockKey &key, Make &&make) {
    auto it = blocks.find(key);
    if (it == blocks.end())
      it = blocks.emplace(key, make()).first;
    return it->second;
  }
};

// Blocks [begin, end) of \p v assembled into the tensor of \p shape whose
// leading dimensions are cut into \p pieces (see blockedVariable).
Tensor assembleBlocks(const Tensor &v, std::size_t &offset,
                      const std::vector<std::size_t> &shape,
                      const std::vector<unsigned> &pieces, unsigned dim,
                      std::vector<std::size_t> &blockShape) {
  if (dim == pieces.size()) {
    std::size_t size = 1;
    for (std::size_t d : blockShape)
      size *= d;
    offset += size;
    return v.slice(offset - size, offset).reshape(blockShape);
  }
  std::vector<Tensor> parts;
  for (unsigned i = 0; i < pieces[dim]; ++i) {
    blockShape[dim] = pieceOf(shape[dim], pieces[dim], i).size();
    if (blockShape[dim])
      parts.push_back(
          assembleBlocks(v, offset, shape, pieces, dim + 1, blockShape));
  }
  blockShape[dim] = shape[dim];
  return parts.size() == 1 ? parts[0] : concat(parts, dim);
}

// A fresh result whose memory holds a plan's blocks one after another:
// dimension d < pieces.size() of \p shape cut into pieces[d] pieces, the
// blocks in order of their piece indices, each block row-major. The plan
// puts each block (or each share of one) on a tile, so a tile's elements
// are one run of memory, and the maps, reductions and convolutions that
// read them get a region per tile rather than one per row. A row-major
// variable when that is already so.
Tensor blockedVariable(Graph &graph, Type type,
                       const std::vector<std::size_t> &shape,
                       const std::vector<unsigned> &pieces,
                       const DebugContext &dc) {
  Tensor v = graph.addVariable(type, shape, dc);
  std::size_t cut = 0; // pieced dimensions up to the last cut one
  for (std::size_t d = 0; d < pieces.size(); ++d)
    if (pieces[d] > 1)
      cut = d + 1;
  std::size_t firstCut = cut;
  for (std::size_t d = 0; d < cut; ++d)
    if (pieces[d] > 1) {
      firstCut = d;
      break;
    }
  if (cut == 0 || firstCut + 1 == cut)
    return v; // blocks already follow each other in row-major order
  std::size_t offset = 0;
  std::vector<std::size_t> blockShape = shape;
  return assembleBlocks(
      v.flatten(), offset, shape,
      std::vector<unsigned>(pieces.begin(), pieces.begin() + cut), 0,
      blockShape);
}

// Convolves \p in with \p w (transposed and flipped first when
// \p transposeAndFlip) into \p out, or, when \p out is not valid, into a
// fresh tensor of \p type laid out and mapped as the plan wants, which it
// returns.
Tensor convolveInto(Graph &graph, const ConvShape &s, const Tensor &in,
                    const Tensor &w, bool transposeAndFlip, Tensor out,
                    Type type, const std::vector<std::size_t> &shape,
                    program::Sequence &prog, const DebugContext &dc,
                    const conv::ConvOptions &options) {
  Plan plan = conv::choosePlan(graph.getTarget(), s, Pass::Forward, options);
  plan.shift = conv::planShift(graph.getTarget(), plan, w);
  const bool fresh = !out.valid();
  if (fresh)
    out = s.groups == 1
              ? blockedVariable(graph, type, shape,
                                {plan.batch, plan.outChans, plan.rows},
                                DebugContext(dc, "out"))
              : graph.addVariable(type, shape, DebugContext(dc, "out"));
  ConvBuilder b(graph, s, Pass::Forward, plan, dc);
  b.forward(in, w, transposeAndFlip, out, fresh, prog);
  return out;
}

} // namespace

ConvParams::ConvParams(Type type, std::size_t batchSize,
                       std::array<std::size_t, 2> inputFieldShape,
                       std::array<std::size_t, 2> kernelShape,
                       std::size_t inputChannelsPerConvGroup,
                       std::size_t outputChannelsPerConvGroup,
                       std::size_t numConvGroups)
    : inputType(type), outputType(type), batchSize(batchSize),
      inputFieldShape(inputFieldShape), kernelShape(kernelShape),
      inputChannelsPerConvGroup(inputChannelsPerConvGroup),
      outputChannelsPerConvGroup(outputChannelsPerConvGroup),
      numConvGroups(numConvGroups) {}

void ConvParams::validate() const {
  if (!floating(inputType) || !floating(outputType))
    throw TypeError("convolution: input type " +
                    std::string(typeName(inputType)) + " and output type " +
                    std::string(typeName(outputType)) +
                    " are not supported; use float or half");
  const std::pair<const char *, std::size_t> sizes[] = {
      {"batchSize", batchSize},
      {"inputFieldShape[0] (height)", inputFieldShape[0]},
      {"inputFieldShape[1] (width)", inputFieldShape[1]},
      {"kernelShape[0] (height)", kernelShape[0]},
      {"kernelShape[1] (width)", kernelShape[1]},
      {"inputChannelsPerConvGroup", inputChannelsPerConvGroup},
      {"outputChannelsPerConvGroup", outputChannelsPerConvGroup},
      {"numConvGroups", numConvGroups}};
  for (const auto &[name, v] : sizes)
    if (v == 0)
      throw ShapeError(std::string("convolution: ") + name +
                       " is 0; every size must be at least 1");
  static const char *dimName[2] = {"height", "width"};
  for (unsigned d = 0; d < 2; ++d) {
    if (stride[d] == 0 || kernelDilation[d] == 0)
      throw ShapeError(std::string("convolution: the ") + dimName[d] +
                       " stride is " + str(stride[d]) + " and dilation " +
                       str(kernelDilation[d]) + "; both must be at least 1");
    const std::size_t padded =
        inputFieldShape[d] + paddingLower[d] + paddingUpper[d];
    const std::size_t extent = (kernelShape[d] - 1) * kernelDilation[d] + 1;
    if (padded < extent)
      throw ShapeError(std::string("convolution: the kernel ") + dimName[d] +
                       " " + str(kernelShape[d]) + " (dilated by " +
                       str(kernelDilation[d]) + ": " + str(extent) +
                       ") is larger than the padded input " + dimName[d] + " " +
                       str(inputFieldShape[d]) + " + " + str(paddingLower[d]) +
                       " + " + str(paddingUpper[d]) + " = " + str(padded) +
                       "; pad the input more or use a smaller kernel");
  }
}

std::size_t ConvParams::getOutputSize(unsigned dim) const {
  if (dim > 1)
    throw ShapeError("ConvParams::getOutputSize: dimension " + str(dim) +
                     " does not exist; use 0 (height) or 1 (width)");
  const std::size_t padded =
      inputFieldShape[dim] + paddingLower[dim] + paddingUpper[dim];
  const std::size_t extent = (kernelShape[dim] - 1) * kernelDilation[dim] + 1;
  return padded < extent ? 0 : (padded - extent) / stride[dim] + 1;
}

std::array<std::size_t, 2> ConvParams::getOutputFieldShape() const {
  return {getOutputSize(0), getOutputSize(1)};
}

std::vector<std::size_t> ConvParams::getInputShape() const {
  return {batchSize, numConvGroups * inputChannelsPerConvGroup,
          inputFieldShape[0], inputFieldShape[1]};
}

std::vector<std::size_t> ConvParams::getWeightsShape() const {
  return {numConvGroups, outputChannelsPerConvGroup, inputChannelsPerConvGroup,
          kernelShape[0], kernelShape[1]};
}

std::vector<std::size_t> ConvParams::getOutputShape() const {
  return {batchSize, numConvGroups * outputChannelsPerConvGroup,
          getOutputSize(0), getOutputSize(1)};
}

std::uint64_t ConvParams::getNumMacs() const {
  return std::uint64_t(batchSize) * numConvGroups * outputChannelsPerConvGroup *
         getOutputSize(0) * getOutputSize(1) * inputChannelsPerConvGroup *
         kernelShape[0] * kernelShape[1];
}

std::string ConvParams::toString() const {
  const auto pair = [](auto a) { return str(a[0]) + "x" + str(a[1]); };
  return "conv batch " + str(batchSize) + ", groups " + str(numConvGroups) +
         ", channels " + str(inputChannelsPerConvGroup) + "->" +
         str(outputChannelsPerConvGroup) + ", field " + pair(inputFieldShape) +
         ", kernel " + pair(kernelShape) + ", stride " + pair(stride) +
         ", dilation " + pair(kernelDilation) + ", padding " +
         pair(paddingLower) + "/" + pair(paddingUpper) + ", " +
         std::string(typeName(inputType)) + "->" +
         std::string(typeName(outputType));
}

Tensor createInput(Graph &graph, const ConvParams &params,
                   const DebugContext &dc, const OptionFlags &options) {
  params.validate();
  const auto o = conv::ConvOptions::parse(options);
  const ConvShape s = conv::forwardShape(params, o.partialsType);
  Tensor t = graph.addVariable(params.inputType, params.getInputShape(),
                               nameOr(dc, "input"));
  // The convolution takes its shift from weights not known here: the
  // input's own variable at least scatters different layers' inputs.
  Plan plan = conv::choosePlan(graph.getTarget(), s, Pass::Forward, o);
  plan.shift = conv::planShift(graph.getTarget(), plan, t);
  conv::mapInput(graph, t, s, plan);
  return t;
}

Tensor createWeights(Graph &graph, const ConvParams &params,
                     const DebugContext &dc, const OptionFlags &options) {
  params.validate();
  const auto o = conv::ConvOptions::parse(options);
  const ConvShape s = conv::forwardShape(params, o.partialsType);
  Plan plan = conv::choosePlan(graph.getTarget(), s, Pass::Forward, o);
  const std::vector<std::size_t> shape = params.getWeightsShape();
  // Slab by slab (output- x input-channel piece) in memory, so that the
  // share of a slab each tile holds is one run.
  Tensor t =
      s.groups == 1
          ? blockedVariable(graph, params.inputType,
                            {shape[1], shape[2], shape[3] * shape[4]},
                            {plan.outChans, plan.inChans},
                            nameOr(dc, "weights"))
                .reshape(shape)
          : graph.addVariable(params.inputType, shape, nameOr(dc, "weights"));
  plan.shift = conv::planShift(graph.getTarget(), plan, t);
  conv::mapWeights(graph, t, s, plan);
  return t;
}

void convolutionWithOutput(Graph &graph, const Tensor &in,
                           const Tensor &weights, const Tensor &out,
                           const ConvParams &params,
                           bool transposeAndFlipWeights,
                           program::Sequence &prog, const DebugContext &dc,
                           const OptionFlags &options) {
  params.validate();
  const auto o = conv::ConvOptions::parse(options);
  checkTensor("convolution", "the input", in, params.getInputShape(),
              params.inputType);
  auto wShape = params.getWeightsShape();
  if (transposeAndFlipWeights)
    std::swap(wShape[1], wShape[2]);
  checkTensor("convolution", "the weights", weights, wShape, params.inputType);
  checkTensor("convolution", "the output", out, params.getOutputShape(),
              params.outputType);
  const ConvShape s = conv::forwardShape(params, o.partialsType);
  convolveInto(graph, s, in, weights, transposeAndFlipWeights, out,
               params.outputType, params.getOutputShape(), prog,
               nameOr(dc, "convolution"), o);
}

Tensor convolution(Graph &graph, const Tensor &in, const Tensor &weights,
                   const ConvParams &params, bool transposeAndFlipWeights,
                   program::Sequence &prog, const DebugContext &dc,
                   const OptionFlags &options) {
  params.validate();
  const auto o = conv::ConvOptions::parse(options);
  checkTensor("convolution", "the input", in, params.getInputShape(),
              params.inputType);
  auto wShape = params.getWeightsShape();
  if (transposeAndFlipWeights)
    std::swap(wShape[1], wShape[2]);
  checkTensor("convolution", "the weights", weights, wShape, params.inputType);
  const DebugContext name = nameOr(dc, "convolution");
  const ConvShape s = conv::forwardShape(params, o.partialsType);
  return convolveInto(graph, s, in, weights, transposeAndFlipWeights, Tensor(),
                      params.outputType, params.getOutputShape(), prog, name,
                      o);
}

Tensor convolutionInputGradient(Graph &graph, const Tensor &zDeltas,
                                const Tensor &weights,
                                const ConvParams &fwdParams,
                                program::Sequence &prog, const DebugContext &dc,
                                const OptionFlags &options) {
  fwdParams.validate();
  const auto o = conv::ConvOptions::parse(options);
  const char *op = "convolutionInputGradient";
  checkTensor(op, "zDeltas", zDeltas, fwdParams.getOutputShape(),
              fwdParams.inputType);
  checkTensor(op, "the weights", weights, fwdParams.getWeightsShape(),
              fwdParams.inputType);
  const DebugContext name = nameOr(dc, op);
  const ConvShape s = conv::inputGradientShape(fwdParams, o.partialsType);
  return convolveInto(graph, s, zDeltas, weights, true, Tensor(),
                      fwdParams.inputType, fwdParams.getInputShape(), prog,
                      name, o);
}

Tensor convolutionWeightGradient(Graph &graph, const Tensor &zDeltas,
                                 const Tensor &activations,
                                 const ConvParams &fwdParams,
                                 program::Sequence &prog,
                                 const DebugContext &dc,
                                 const OptionFlags &options) {
  fwdParams.validate();
  const auto o = conv::ConvOptions::parse(options);
  const char *op = "convolutionWeightGradient";
  checkTensor(op, "zDeltas", zDeltas, fwdParams.getOutputShape(),
              fwdParams.inputType);
  checkTensor(op, "the activations", activations, fwdParams.getInputShape(),
              fwdParams.inputType);
  const DebugContext name = nameOr(dc, op);
  const ConvShape s = conv::forwardShape(fwdParams, o.partialsType);
  Plan plan = conv::choosePlan(graph.getTarget(), s, Pass::WeightGrad, o);
  plan.shift = conv::planShift(graph.getTarget(), plan, zDeltas);
  const std::vector<std::size_t> shape = fwdParams.getWeightsShape();
  const Tensor dw =
      s.groups == 1 ? blockedVariable(graph, fwdParams.inputType,
                                      {shape[1], shape[2], shape[3] * shape[4]},
                                      {plan.outChans, plan.inChans},
                                      DebugContext(name, "out"))
                          .reshape(shape)
                    : graph.addVariable(fwdParams.inputType, shape,
                                        DebugContext(name, "out"));
  ConvBuilder b(graph, s, Pass::WeightGrad, plan, name);
  b.weightGrad(zDeltas, activations, dw, prog);
  return dw;
}

Tensor createBiases(Graph &graph, const ConvParams &params,
                    const DebugContext &dc) {
  params.validate();
  Tensor b = graph.addVariable(
      params.outputType,
      {params.numConvGroups * params.outputChannelsPerConvGroup},
      nameOr(dc, "biases"));
  mapTensorLinearly(graph, b);
  return b;
}

void addBias(Graph &graph, const Tensor &acts, const Tensor &biases,
             program::Sequence &prog, const DebugContext &dc,
             const OptionFlags &options) {
  if (!acts.valid() || !biases.valid() || acts.rank() != 4 ||
      biases.rank() != 1 || biases.dim(0) != acts.dim(1))
    throw ShapeError("addBias: activations " +
                     (acts.valid() ? acts.shapeToString() : "(empty)") +
                     " and biases " +
                     (biases.valid() ? biases.shapeToString() : "(empty)") +
                     " do not fit; give activations [N, C, H, W] and biases "
                     "[C]");
  if (acts.elementType() != biases.elementType())
    throw TypeError("addBias: activations are " +
                    std::string(typeName(acts.elementType())) +
                    " but biases are " +
                    std::string(typeName(biases.elementType())) +
                    "; give both the same type");
  addInPlace(graph, acts, biases.reshape({biases.dim(0), 1, 1}), prog,
             nameOr(dc, "addBias"), options);
}

} // namespace tessera::ops
