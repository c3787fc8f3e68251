// Private to ops/: what the convolution and pooling ops, their planner and
// their vertices share: the internal form of a convolution (signed padding,
// input dilation: the input gradient is a convolution of zero-dilated
// deltas), the geometry vector each vertex receives, how a vertex splits
// its work over the six workers (used by the vertex and by its estimate, so
// the two agree), and the cycle figures of each vertex.
#pragma once

#include "tessera/device/Target.hpp"
#include "tessera/graph/Graph.hpp"
#include "tessera/graph/VertexRegistry.hpp"
#include "tessera/ops/Conv.hpp"
#include "tessera/ops/Pooling.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::ops::conv {

constexpr unsigned kWorkers = 6;

/// One convolution as the vertices compute it, per conv group:
/// out[n][co][oh][ow] = sum over ci, kh, kw of
///   w[co][ci][kh][kw] * X[n][ci][oh*s + kh*kd][ow*s + kw*kd]
/// where X is the input dilated by id (id-1 zeros between elements) and
/// padded by pl before and pu after (negative padding truncates).
struct ConvShape {
  Type inType = Type::FLOAT, outType = Type::FLOAT, partialsType = Type::FLOAT;
  std::size_t batch = 1, groups = 1, inChans = 1, outChans = 1;
  std::size_t inH = 1, inW = 1, kH = 1, kW = 1;
  int sH = 1, sW = 1, kdH = 1, kdW = 1, idH = 1, idW = 1;
  long plH = 0, plW = 0, puH = 0, puW = 0;
  std::size_t outH = 1, outW = 1;

  /// kH*kW*inChans: the multiply-accumulates of one output element.
  std::size_t kernelElems() const { return inChans * kH * kW; }
  /// Sets outH and outW from the other fields.
  void computeOutput();
};

/// The forward convolution of \p p with \p partialsType for half inputs.
ConvShape forwardShape(const ConvParams &p, Type partialsType);
/// The convolution that computes dL/dIn of \p p: zero-dilated deltas
/// convolved with the transposed, flipped weights.
ConvShape inputGradientShape(const ConvParams &p, Type partialsType);

/// Indices into the geometry vector (plain state Vector<int>) of the
/// ConvPartial and ConvWeightGrad vertices. Rows and columns are in the
/// block's own frame: padded row r of the block is dilated input row
/// rowOrigin + r relative to the first input row the vertex was given.
enum Geometry : unsigned {
  gInChans,  ///< input channels of the block
  gOutChans, ///< output channels of the block
  gBatch,    ///< batch entries of the block
  gRows,     ///< output rows of the block
  gOutW,
  gInRows, ///< input rows in each input entry
  gInW,
  gKH,
  gKW,
  gSH,
  gSW,
  gKdH,
  gKdW,
  gIdH,
  gIdW,
  gRowOrigin,
  gColOrigin,
  gCount
};

/// How a forward vertex divides its output over workers. Units are output
/// rows (batch entry, row); each unit is cut into colParts column parts
/// (whole 16-column panels) and coParts output-channel parts, chosen so the
/// busiest worker has the least work (each part also costs a fixed
/// overhead, so parts are not cut finer than helps). Worker w takes items
/// [begin(w), begin(w + 1)); item i is unit i / (colParts * coParts),
/// column part i / coParts % colParts, channel part i % coParts.
struct FwdWork {
  /// The fixed cost of one item in multiply-accumulates: about
  /// CostFigures::convWorkerCyclesPerRow at 16 MACs a cycle.
  static constexpr std::size_t kItemOverhead = 256;
  std::size_t units = 0, outChans = 0, outW = 0, colParts = 1, coParts = 1;
  FwdWork(std::size_t units, std::size_t outChans, std::size_t outW,
          std::size_t kElems)
      : units(units), outChans(outChans), outW(outW) {
    std::size_t best = ~std::size_t(0);
    for (std::size_t cp = 1; cp <= std::min<std::size_t>(panels(), kWorkers);
         ++cp)
      for (std::size_t kp = 1;
           kp <=
           std::min<std::size_t>(std::max<std::size_t>(outChans, 1), kWorkers);
           ++kp) {
        const std::size_t perWorker =
            (units * cp * kp + kWorkers - 1) / kWorkers;
        const std::size_t cols = std::min(outW, (panels() + cp - 1) / cp * 16);
        const std::size_t chans = (outChans + kp - 1) / kp;
        const std::size_t cost =
            perWorker * (chans * cols * kElems + kItemOverhead);
        if (cost < best) {
          best = cost;
          colParts = cp;
          coParts = kp;
        }
      }
  }
  std::size_t panels() const {
    return std::max<std::size_t>(1, (outW + 15) / 16);
  }
  std::size_t items() const { return units * colParts * coParts; }
  std::size_t begin(unsigned w) const { return items() * w / kWorkers; }
  std::size_t unitOf(std::size_t i) const { return i / (colParts * coParts); }
  std::size_t colPartOf(std::size_t i) const { return i / coParts % colParts; }
  std::size_t coPartOf(std::size_t i) const { return i % coParts; }
  std::size_t coBegin(std::size_t part) const {
    return outChans * part / coParts;
  }
  std::size_t colBegin(std::size_t part) const {
    return std::min(outW, panels() * part / colParts * 16);
  }
};

/// How a weight-gradient vertex divides its output (kernel elements of all
/// its input channels, kH*kW*inChans) over workers: contiguous ranges.
inline std::size_t wgradBegin(std::size_t kElems, unsigned w) {
  return kElems * w / kWorkers;
}

/// Worker cycles (each of the six) of a ConvPartial vertex computing
/// \p units output rows of \p outW elements for \p outChans channels, each
/// element \p kElems multiply-accumulates, at \p macsPerCycle tile MACs.
std::uint64_t convPartialCycles(std::size_t units, std::size_t outChans,
                                std::size_t outW, std::size_t kElems,
                                unsigned macsPerCycle, const Target &t);
/// Worker cycles of a ConvWeightGrad vertex: \p kElems kernel elements x
/// \p outChans channels, each summed over \p positions output positions.
std::uint64_t convWeightGradCycles(std::size_t kElems, std::size_t outChans,
                                   std::size_t positions, unsigned macsPerCycle,
                                   const Target &t);
/// Worker cycles of a ConvReduce vertex adding \p parts partial blocks of
/// \p elems elements of \p partialsType.
std::uint64_t convReduceCycles(std::size_t parts, std::size_t elems,
                               Type partialsType, const Target &t);

/// Indices into the geometry vector of the pooling vertices.
enum PoolGeometry : unsigned {
  pType,   ///< PoolingType
  pPlanes, ///< (batch, channel) planes of the block
  pInH,    ///< input rows of the whole input
  pInW,
  pKH,
  pKW,
  pSH,
  pSW,
  pPlH,
  pPlW,
  pOutH, ///< output rows of the whole output
  pOutW,
  pRowBegin, ///< first row of the block (output rows forward, input rows
             ///< for the gradient)
  pRows,     ///< rows of the block
  pInRow0,   ///< first input row of the input entries
  pInRows,   ///< input rows of each input entry
  pOutRow0,  ///< gradient: first output row of the pooled-gradient entries
  pOutRows,  ///< gradient: output rows of each pooled-gradient entry
  pCount
};

/// Worker cycles of a pooling vertex producing \p rows rows of \p width
/// elements, each from a window of \p window elements.
std::uint64_t poolCycles(std::size_t rows, std::size_t width,
                         std::size_t window, Type type, const Target &t);

/// Registers Pool<T> and PoolGrad<T> (called by registerConvVertices).
void registerPoolVertices(VertexRegistry &registry);

// ---- Planning ------------------------------------------------------------

/// What a plan computes: a forward convolution (reduces over input
/// channels) or a weight gradient (reduces over batch and output rows).
enum class Pass { Forward, WeightGrad };

/// How many pieces each dimension is split into; every unit (one piece of
/// each) runs on its own tile. \p shift moves the units' tiles up (see
/// unitTile); the planner leaves it 0 and the callers set it per
/// convolution (see planShift).
struct Plan {
  unsigned groups = 1, batch = 1, outChans = 1, rows = 1, inChans = 1;
  unsigned shift = 0;
  std::size_t units() const {
    return std::size_t(groups) * batch * outChans * rows * inChans;
  }
  /// Pieces whose partial results are summed.
  unsigned reduceParts(Pass pass) const {
    return pass == Pass::Forward ? inChans : batch * rows;
  }
};

/// [begin, end) of piece \p i of \p n pieces of \p size (sizes differ by at
/// most one).
struct Range {
  std::size_t begin = 0, end = 0;
  std::size_t size() const { return end - begin; }
};
inline Range pieceOf(std::size_t size, unsigned n, unsigned i) {
  return {size * i / n, size * (i + 1) / n};
}

/// The planner's options, parsed from OptionFlags.
struct ConvOptions {
  Type partialsType = Type::FLOAT;
  double availableMemoryProportion = 0.6;
  static ConvOptions parse(const OptionFlags &flags);
};

/// The plan with the lowest estimated cycles that fits the memory budget
/// (or, when none fits, the one that needs the least memory per tile).
Plan choosePlan(const Target &target, const ConvShape &s, Pass pass,
                const ConvOptions &options);
/// Estimated cycles of \p plan (exchange, compute, reduction, syncs).
std::uint64_t estimatePlanCycles(const Target &target, const ConvShape &s,
                                 Pass pass, const Plan &plan);

/// The tile of unit (g, n, co, h, ci) of \p plan: units spread evenly over
/// the target's tiles, unit u of U on tile u*T/U + plan.shift.
unsigned unitTile(const Target &target, const Plan &plan, unsigned g,
                  unsigned n, unsigned co, unsigned h, unsigned ci);

/// The shift of \p plan (below T - (U-1)*T/U, so its units keep their
/// order and stay on the target) for the convolutions whose operand \p t
/// is (the weights, or the weight gradient's deltas): taken from the
/// variable holding t's first element, so createWeights and every
/// convolution of those weights agree on it, and different layers' units
/// lie on different tiles.
unsigned planShift(const Target &target, const Plan &plan, const Tensor &t);

/// Input rows [begin, end) (clamped to the input) that output rows \p out
/// read.
Range inputRowsFor(const ConvShape &s, Range out);

/// Maps an activation tensor [N, G*Cin, H, W] as \p plan reads it.
void mapInput(Graph &graph, const Tensor &t, const ConvShape &s,
              const Plan &plan);
/// Maps a weights tensor [G, Cout, Cin, kH, kW] as \p plan reads it.
void mapWeights(Graph &graph, const Tensor &t, const ConvShape &s,
                const Plan &plan);

/// graph.setTileMapping(t, m), setting the variables' intervals in the
/// order they lie in memory (fast for views laid out block by block).
void mapInMemoryOrder(Graph &graph, const Tensor &t, const TileMapping &m);

/// \p dc, or \p name when \p dc has no name.
DebugContext nameOr(const DebugContext &dc, const char *name);

/// Throws ShapeError when \p t (called \p what in messages of \p op) is
/// empty or not of \p shape, TypeError when its element type is not
/// \p type; the messages name both and say what to change.
void checkTensor(const char *op, const char *what, const Tensor &t,
                 const std::vector<std::size_t> &shape, Type type);

} // namespace tessera::ops::conv
