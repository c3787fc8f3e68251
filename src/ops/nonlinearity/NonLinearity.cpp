// Non-linearities: the elementwise ones are maps; the softmax family runs
// whole rows on one tile when they fit (one compute set) and otherwise
// composes reductions and maps spread over tiles. Also the row plan the
// loss shares.
#include "tessera/ops/NonLinearity.hpp"

#include "NnInternal.hpp"
#include "OpsInternal.hpp"

#include "tessera/device/CostFormulas.hpp"
#include "tessera/device/Target.hpp"
#include "tessera/ops/Elementwise.hpp"
#include "tessera/ops/Reduce.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/OptionParser.hpp"

#include <algorithm>

namespace tessera::ops {

namespace nn {

std::vector<RowPiece> splitRowsByTile(const Graph &graph, const Tensor &rows,
                                      unsigned maxPerTile) {
  const std::size_t numRows = rows.dim(0), n = rows.dim(1);
  TESSERA_INTERNAL_ASSERT(n > 0, "splitRowsByTile: empty rows");
  const TileMapping mapping = graph.getTileMapping(rows, false);
  const unsigned numTiles = graph.getTarget().getNumTiles();
  std::vector<std::vector<std::size_t>> owned(numTiles);
  std::vector<bool> placed(numRows, false);
  for (unsigned tile = 0; tile < mapping.size(); ++tile)
    for (const Interval &iv : mapping[tile])
      for (std::size_t r = (iv.begin() + n - 1) / n; r * n < iv.end(); ++r) {
        owned[tile].push_back(r);
        placed[r] = true;
      }
  for (std::size_t r = 0; r < numRows; ++r)
    if (!placed[r])
      owned[r % numTiles].push_back(r);
  std::vector<RowPiece> pieces;
  for (unsigned tile = 0; tile < numTiles; ++tile) {
    auto &rs = owned[tile];
    if (rs.empty())
      continue;
    std::sort(rs.begin(), rs.end());
    const std::size_t per = (rs.size() + maxPerTile - 1) / maxPerTile;
    // Cut at every `per` rows and wherever the rows stop being consecutive.
    std::size_t start = 0;
    for (std::size_t i = 1; i <= rs.size(); ++i)
      if (i == rs.size() || rs[i] != rs[i - 1] + 1 || i - start == per) {
        pieces.push_back({tile, rs[start], rs[i - 1] + 1});
        start = i;
      }
  }
  return pieces;
}

bool rowsFitOnTile(const Graph &graph, std::size_t rowSize, Type type,
                   unsigned buffers) {
  return rowSize * typeSize(type) * buffers <=
         graph.getTarget().getBytesPerTile() / 8;
}

std::vector<Tensor> rowList(const Tensor &t, std::size_t begin,
                            std::size_t end) {
  std::vector<Tensor> rows;
  rows.reserve(end - begin);
  for (std::size_t r = begin; r < end; ++r)
    rows.push_back(t[r]);
  return rows;
}

Plan parsePlan(const char *component, const OptionFlags &options) {
  Plan plan = Plan::Auto;
  OptionParser p(component);
  p.addEnum(
      "plan", plan,
      {{"auto", Plan::Auto}, {"rows", Plan::Rows}, {"reduce", Plan::Reduce}});
  p.parse(options);
  return plan;
}

bool useRows(Plan plan, const Graph &graph, const Tensor &rows,
             unsigned buffers) {
  if (plan != Plan::Auto)
    return plan == Plan::Rows;
  const std::size_t b = rows.dim(0), n = rows.dim(1);
  const Type type = rows.elementType();
  if (!rowsFitOnTile(graph, n, type, buffers))
    return false;
  const Target &target = graph.getTarget();
  const CostFigures &c = target.costs();
  const unsigned workers = target.getNumWorkerContexts();
  const std::uint64_t width = target.getVectorWidth(type);
  std::size_t spanned = 0;
  for (const auto &ivs : graph.getTileMapping(rows, false))
    spanned += ivs.empty() ? 0 : 1;
  spanned = std::max<std::size_t>(spanned, 1);
  auto ceilDiv = [](std::uint64_t a, std::uint64_t d) {
    return (a + d - 1) / d;
  };
  // Whole rows: a tile's rows shared by its workers, each row a few passes;
  // a row that spans tiles is exchanged to its owner and back.
  const std::uint64_t perTile = ceilDiv(b, std::min(b, spanned));
  const std::uint64_t elemsPerTile = ceilDiv(b * n, spanned);
  std::uint64_t rowsCycles =
      workers * ceilDiv(perTile, workers) *
      (c.unaryOpWorkerCycles +
       ceilDiv(n, width) * (c.reduceWorkerCyclesPerVector +
                            2 * c.binaryOpWorkerCyclesPerVector));
  if (n > elemsPerTile)
    rowsCycles += cost::exchangeTransferCycles(target, 2 * n * typeSize(type));
  // Spread over tiles: about four supersteps (two reductions, two maps) of
  // every tile's elements over its workers.
  const std::uint64_t stage = cost::exchangeStepCycles(
      target, workers * (c.binaryOpWorkerCycles +
                         ceilDiv(ceilDiv(elemsPerTile, workers), width) *
                             c.binaryOpWorkerCyclesPerVector));
  return rowsCycles <= 4 * stage;
}

} // namespace nn

namespace {

using namespace expr;
using namespace nn;

DebugContext nameOr(const DebugContext &dc, const char *name) {
  return dc.name.empty() ? DebugContext(name) : dc;
}

bool isSoftmax(NonLinearityType type) {
  return type == NonLinearityType::SOFTMAX ||
         type == NonLinearityType::SOFTMAX_STABLE ||
         type == NonLinearityType::LOG_SOFTMAX;
}

void checkFloat(const char *op, const char *what, const Tensor &t) {
  if (!t.valid())
    throw ShapeError(std::string(op) + ": " + what + " is an empty tensor");
  if (t.elementType() != FLOAT && t.elementType() != HALF)
    throw TypeError(std::string(op) + ": " + what + " has type " +
                    std::string(typeName(t.elementType())) +
                    "; non-linearities take float or half (cast first)");
}

// The innermost dimension's size, checked.
std::size_t rowSizeOf(const char *op, NonLinearityType type, const Tensor &t) {
  if (t.rank() == 0 || t.dim(t.rank() - 1) == 0)
    throw ShapeError(
        std::string(op) + ": " + std::string(nonLinearityName(type)) +
        " works on the innermost dimension, but the tensor has "
        "shape " +
        t.shapeToString() + "; give it a non-empty last dimension");
  return t.dim(t.rank() - 1);
}

unsigned modeOf(NonLinearityType type) {
  return type == NonLinearityType::SOFTMAX          ? kSoftmax
         : type == NonLinearityType::SOFTMAX_STABLE ? kSoftmaxStable
                                                    : kLogSoftmax;
}

Expr forwardExpr(NonLinearityType type) {
  switch (type) {
  case NonLinearityType::RELU:
    return Relu(_1);
  case NonLinearityType::GELU:
    return Gelu(_1);
  case NonLinearityType::SIGMOID:
    return Sigmoid(_1);
  case NonLinearityType::TANH:
    return Tanh(_1);
  default:
    break;
  }
  TESSERA_INTERNAL_ASSERT(false, "forwardExpr: not an elementwise type");
  return Expr();
}

// Softmax of each row of the 2-D `in` into `out` (which may be `in`).
void softmaxRows(Graph &graph, unsigned mode, const Tensor &in,
                 const Tensor &out, bool inPlace, Sequence &prog,
                 const DebugContext &dc) {
  const Type type = in.elementType();
  const std::string cls =
      templateName(inPlace ? "tessera::ops::SoftmaxRowsInPlace"
                           : "tessera::ops::SoftmaxRows",
                   {type});
  ComputeSet cs = graph.addComputeSet(dc);
  for (const RowPiece &p : splitRowsByTile(graph, out)) {
    VertexRef v = graph.addVertex(cs, cls);
    const auto outRows = rowList(out, p.begin, p.end);
    if (inPlace) {
      graph.setFieldSize(v["data"], outRows.size());
      graph.connect(v["data"], outRows);
    } else {
      graph.setFieldSize(v["in"], outRows.size());
      graph.setFieldSize(v["out"], outRows.size());
      graph.connect(v["in"], rowList(in, p.begin, p.end));
      graph.connect(v["out"], outRows);
    }
    graph.setInitialValue(v["mode"], mode);
    graph.setTileMapping(v, p.tile);
  }
  prog.add(program::Execute(cs, dc));
}

// The same from reductions and maps: exp (shifted by the row maximum unless
// the unstable form), a sum, a division; log-softmax as x - logsumexp(x).
void softmaxReduce(Graph &graph, unsigned mode, const Tensor &in,
                   const Tensor &out, Sequence &prog, const DebugContext &dc) {
  const std::size_t rows = in.dim(0);
  if (mode == kLogSoftmax) {
    Tensor lse = reduce(graph, in, {1}, Operation::LOG_ADD, prog,
                        DebugContext(dc, "logSumExp"));
    mapWithOutput(graph, _1 - _2, {in, lse.reshape({rows, 1})}, out, prog,
                  DebugContext(dc, "subtract"));
    return;
  }
  Tensor e;
  if (mode == kSoftmaxStable) {
    Tensor m =
        reduce(graph, in, {1}, Operation::MAX, prog, DebugContext(dc, "max"));
    e = map(graph, Exp(_1 - _2), {in, m.reshape({rows, 1})}, prog,
            DebugContext(dc, "exp"));
  } else {
    e = map(graph, Exp(_1), {in}, prog, DebugContext(dc, "exp"));
  }
  Tensor s =
      reduce(graph, e, {1}, Operation::ADD, prog, DebugContext(dc, "sum"));
  mapWithOutput(graph, _1 / _2, {e, s.reshape({rows, 1})}, out, prog,
                DebugContext(dc, "divide"));
}

void softmaxImpl(Graph &graph, NonLinearityType type, const Tensor &in,
                 const Tensor &out, bool inPlace, Sequence &prog,
                 const DebugContext &dc, Plan plan) {
  const std::size_t n = in.dim(in.rank() - 1);
  const std::size_t rows = in.numElements() / n;
  const Tensor in2 = in.reshape({rows, n}), out2 = out.reshape({rows, n});
  if (rows == 0)
    return;
  if (useRows(plan, graph, out2, 2))
    softmaxRows(graph, modeOf(type), in2, out2, inPlace, prog, dc);
  else
    softmaxReduce(graph, modeOf(type), in2, out2, prog, dc);
}

// The softmax family's input gradient into `inGrad`.
void softmaxGradImpl(Graph &graph, NonLinearityType type, const Tensor &out,
                     const Tensor &outGrad, const Tensor &inGrad,
                     Sequence &prog, const DebugContext &dc, Plan plan) {
  const std::size_t n = out.dim(out.rank() - 1);
  const std::size_t rows = out.numElements() / n;
  if (rows == 0)
    return;
  const Tensor y = out.reshape({rows, n}), dy = outGrad.reshape({rows, n}),
               dx = inGrad.reshape({rows, n});
  const bool log = type == NonLinearityType::LOG_SOFTMAX;
  if (useRows(plan, graph, dx, 3)) {
    const std::string cls =
        templateName("tessera::ops::SoftmaxGradRows", {out.elementType()});
    ComputeSet cs = graph.addComputeSet(dc);
    for (const RowPiece &p : splitRowsByTile(graph, dx)) {
      VertexRef v = graph.addVertex(cs, cls);
      for (const char *f : {"out", "outGrad", "inGrad"})
        graph.setFieldSize(v[f], p.end - p.begin);
      graph.connect(v["out"], rowList(y, p.begin, p.end));
      graph.connect(v["outGrad"], rowList(dy, p.begin, p.end));
      graph.connect(v["inGrad"], rowList(dx, p.begin, p.end));
      graph.setInitialValue(v["mode"], modeOf(type));
      graph.setTileMapping(v, p.tile);
    }
    prog.add(program::Execute(cs, dc));
    return;
  }
  if (log) {
    Tensor s = reduce(graph, dy, FLOAT, {1}, Operation::ADD, prog,
                      DebugContext(dc, "sum"));
    mapWithOutput(graph, _2 - Exp(_1) * _3, {y, dy, s.reshape({rows, 1})}, dx,
                  prog, DebugContext(dc, "grad"));
    return;
  }
  Tensor prod = map(graph, _1 * _2, {y, dy}, prog, DebugContext(dc, "product"));
  Tensor s =
      reduce(graph, prod, {1}, Operation::ADD, prog, DebugContext(dc, "sum"));
  mapWithOutput(graph, _1 * (_2 - _3), {y, dy, s.reshape({rows, 1})}, dx, prog,
                DebugContext(dc, "grad"));
}

Expr gradientExpr(NonLinearityType type) {
  // _1: the output (the input for GELU), _2: the output's gradient.
  switch (type) {
  case NonLinearityType::RELU:
    return Select(_2, Const(0.0f), _1 > Const(0.0f));
  case NonLinearityType::GELU:
    return _2 * GeluGrad(_1);
  case NonLinearityType::SIGMOID:
    return _2 * _1 * (Const(1.0f) - _1);
  case NonLinearityType::TANH:
    return _2 * (Const(1.0f) - _1 * _1);
  default:
    break;
  }
  TESSERA_INTERNAL_ASSERT(false, "gradientExpr: not an elementwise type");
  return Expr();
}

} // namespace

std::string_view nonLinearityName(NonLinearityType type) {
  switch (type) {
  case NonLinearityType::RELU:
    return "RELU";
  case NonLinearityType::GELU:
    return "GELU";
  case NonLinearityType::SIGMOID:
    return "SIGMOID";
  case NonLinearityType::TANH:
    return "TANH";
  case NonLinearityType::SOFTMAX:
    return "SOFTMAX";
  case NonLinearityType::SOFTMAX_STABLE:
    return "SOFTMAX_STABLE";
  case NonLinearityType::LOG_SOFTMAX:
    return "LOG_SOFTMAX";
  }
  return "?";
}

Tensor nonLinearity(Graph &graph, NonLinearityType type, const Tensor &t,
                    Sequence &prog, const DebugContext &dc,
                    const OptionFlags &options) {
  const Plan plan = parsePlan("nonLinearity", options);
  checkFloat("nonLinearity", "the input", t);
  const DebugContext name = nameOr(dc, "nonLinearity");
  if (!isSoftmax(type))
    return map(graph, forwardExpr(type), {t}, prog, name);
  rowSizeOf("nonLinearity", type, t);
  Tensor out = createLike(graph, t, t.elementType(), DebugContext(name, "out"));
  softmaxImpl(graph, type, t, out, false, prog, name, plan);
  return out;
}

void nonLinearityInPlace(Graph &graph, NonLinearityType type, const Tensor &t,
                         Sequence &prog, const DebugContext &dc,
                         const OptionFlags &options) {
  const Plan plan = parsePlan("nonLinearityInPlace", options);
  checkFloat("nonLinearityInPlace", "the tensor", t);
  const DebugContext name = nameOr(dc, "nonLinearityInPlace");
  if (!isSoftmax(type)) {
    mapInPlace(graph, forwardExpr(type), {t}, prog, name);
    return;
  }
  rowSizeOf("nonLinearityInPlace", type, t);
  softmaxImpl(graph, type, t, t, true, prog, name, plan);
}

Tensor nonLinearityInputGradient(Graph &graph, NonLinearityType type,
                                 const Tensor &out, const Tensor &outGradient,
                                 Sequence &prog, const DebugContext &dc,
                                 const OptionFlags &options) {
  const char *op = "nonLinearityInputGradient";
  const Plan plan = parsePlan(op, options);
  checkFloat(op, "the activations", out);
  checkFloat(op, "the output gradient", outGradient);
  if (out.shape() != outGradient.shape())
    throw ShapeError(std::string(op) + ": the activations have shape " +
                     out.shapeToString() + " but the output gradient has " +
                     outGradient.shapeToString() + "; they must be equal");
  if (out.elementType() != outGradient.elementType())
    throw TypeError(std::string(op) + ": the activations are " +
                    std::string(typeName(out.elementType())) +
                    " but the output gradient is " +
                    std::string(typeName(outGradient.elementType())) +
                    "; give both the same type");
  const DebugContext name = nameOr(dc, op);
  Tensor inGrad = createLike(graph, outGradient, outGradient.elementType(),
                             DebugContext(name, "inGradient"));
  if (isSoftmax(type)) {
    rowSizeOf(op, type, out);
    softmaxGradImpl(graph, type, out, outGradient, inGrad, prog, name, plan);
  } else {
    mapWithOutput(graph, gradientExpr(type), {out, outGradient}, inGrad, prog,
                  name);
  }
  return inGrad;
}

Tensor nonLinearityInputGradient(Graph &graph, NonLinearityType type,
                                 const Tensor &in, const Tensor &out,
                                 const Tensor &outGradient, Sequence &prog,
                                 const DebugContext &dc,
                                 const OptionFlags &options) {
  if (type != NonLinearityType::GELU)
    return nonLinearityInputGradient(graph, type, out, outGradient, prog, dc,
                                     options);
  checkFloat("nonLinearityInputGradient", "the input", in);
  if (in.shape() != out.shape())
    throw ShapeError("nonLinearityInputGradient: the input has shape " +
                     in.shapeToString() + " but the activations have " +
                     out.shapeToString() + "; they must be equal");
  return nonLinearityInputGradient(graph, type, in, outGradient, prog, dc,
                                   options);
}

} // namespace tessera::ops
