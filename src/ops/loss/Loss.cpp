// Losses: rows that fit on a tile run as one fused vertex per worker-sized
// group of rows (loss, deltas and the group's correct count in one pass);
// longer rows are spread over tiles as maps and reductions. Either way the
// correct counts reach numCorrect through one reduction with update.
#include "tessera/ops/Loss.hpp"

#include "nonlinearity/NnInternal.hpp"
#include "OpsInternal.hpp"

#include "tessera/ops/Elementwise.hpp"
#include "tessera/ops/Reduce.hpp"
#include "tessera/support/Error.hpp"

#include <numeric>

namespace tessera::ops {
namespace {

using namespace expr;
using namespace nn;

DebugContext nameOr(const DebugContext &dc, const char *name) {
  return dc.name.empty() ? DebugContext(name) : dc;
}

std::string typeStr(const Tensor &t) {
  return std::string(typeName(t.elementType()));
}

bool isFloat(Type t) { return t == FLOAT || t == HALF; }
bool isLabel(Type t) { return t == INT || t == UNSIGNED_INT; }

void checkCounter(const char *op, const Tensor &numCorrect) {
  if (numCorrect.elementType() != UNSIGNED_INT ||
      numCorrect.numElements() != 1 || numCorrect.rank() > 1)
    throw TypeError(std::string(op) + ": numCorrect is " + typeStr(numCorrect) +
                    " of shape " + numCorrect.shapeToString() +
                    "; it must be an unsigned int scalar (shape [] or [1])");
}

void checkOutputsShape(const char *op, const Tensor &p) {
  if (p.rank() != 2 || p.dim(1) == 0)
    throw ShapeError(std::string(op) + ": the model outputs have shape " +
                     p.shapeToString() +
                     "; they must be [batch, classes] with at least one class");
}

void checkLabels(const char *op, const Tensor &labels, std::size_t b) {
  if (labels.rank() != 1 || labels.dim(0) != b)
    throw ShapeError(std::string(op) + ": the labels have shape " +
                     labels.shapeToString() + " but the model outputs have " +
                     std::to_string(b) + " rows; give one label per row, [" +
                     std::to_string(b) + "]");
}

// Checks every operand of calcLoss; returns whether `expected` is labels.
bool checkLoss(const Tensor &p, const Tensor &expected, const Tensor &loss,
               const Tensor &deltas) {
  const char *op = "calcLoss";
  if (!isFloat(p.elementType()))
    throw TypeError(std::string(op) + ": the model outputs are " + typeStr(p) +
                    "; they must be float or half (cast first)");
  checkOutputsShape(op, p);
  const std::size_t b = p.dim(0);
  auto sameType = [&](const Tensor &t, const char *what) {
    if (t.elementType() != p.elementType())
      throw TypeError(std::string(op) + ": " + what + " is " + typeStr(t) +
                      " but the model outputs are " + typeStr(p) +
                      "; give it the outputs' type");
  };
  sameType(deltas, "deltas");
  sameType(loss, "loss");
  if (deltas.shape() != p.shape())
    throw ShapeError(std::string(op) + ": deltas have shape " +
                     deltas.shapeToString() + " but the model outputs have " +
                     p.shapeToString() + "; they must be equal");
  if (loss.rank() != 1 || loss.dim(0) != b)
    throw ShapeError(std::string(op) + ": loss has shape " +
                     loss.shapeToString() + "; it must be [" +
                     std::to_string(b) + "], one value per row");
  if (isLabel(expected.elementType())) {
    checkLabels(op, expected, b);
    return true;
  }
  if (!isFloat(expected.elementType()))
    throw TypeError(std::string(op) + ": expected is " + typeStr(expected) +
                    "; give labels as unsigned int or int [" +
                    std::to_string(b) + "], or targets of the outputs' type " +
                    p.shapeToString());
  sameType(expected, "expected");
  if (expected.shape() != p.shape())
    throw ShapeError(std::string(op) + ": the targets have shape " +
                     expected.shapeToString() + " but the model outputs have " +
                     p.shapeToString() +
                     "; give targets of the same shape or labels [" +
                     std::to_string(b) + "]");
  return false;
}

// Adds the sum of the UNSIGNED_INT tensor `counts` to `numCorrect`.
void addCounts(Graph &graph, const Tensor &counts, const Tensor &numCorrect,
               Sequence &prog, const DebugContext &dc) {
  std::vector<std::size_t> dims(counts.rank());
  std::iota(dims.begin(), dims.end(), 0);
  reduceWithOutput(graph, counts, numCorrect.reshape({}), dims,
                   ReduceParams(Operation::ADD, true), prog, dc);
}

// One fused vertex per worker-sized group of rows; returns the groups'
// correct counts, one element per vertex on the vertex's tile.
Tensor lossRows(Graph &graph, const Tensor &p, const Tensor &expected,
                bool labels, const Tensor &loss, const Tensor &deltas,
                LossType type, Sequence &prog, const DebugContext &dc) {
  const std::string cls =
      labels ? templateName("tessera::ops::LossLabelRows",
                            {p.elementType(), expected.elementType()})
             : templateName("tessera::ops::LossTargetRows", {p.elementType()});
  const auto pieces = splitRowsByTile(graph, deltas);
  Tensor counts = graph.addVariable(UNSIGNED_INT, {pieces.size()},
                                    DebugContext(dc, "correct"));
  ComputeSet cs = graph.addComputeSet(dc);
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const RowPiece &piece = pieces[i];
    VertexRef v = graph.addVertex(cs, cls);
    const std::size_t rows = piece.end - piece.begin;
    for (const char *f : {"probs", "deltas"})
      graph.setFieldSize(v[f], rows);
    graph.connect(v["probs"], rowList(p, piece.begin, piece.end));
    graph.connect(v["deltas"], rowList(deltas, piece.begin, piece.end));
    if (labels) {
      graph.connect(v["labels"], expected.slice(piece.begin, piece.end));
    } else {
      graph.setFieldSize(v["targets"], rows);
      graph.connect(v["targets"], rowList(expected, piece.begin, piece.end));
    }
    graph.connect(v["loss"], loss.slice(piece.begin, piece.end));
    graph.connect(v["correct"], counts[i]);
    graph.setInitialValue(v["lossType"], static_cast<unsigned>(type));
    graph.setTileMapping(v, piece.tile);
    graph.setTileMapping(counts[i], piece.tile);
  }
  prog.add(program::Execute(cs, dc));
  return counts;
}

// 1 where argMax(a) == b (b: labels, or a second tensor's argMax), as
// UNSIGNED_INT [batch].
Tensor correctRows(Graph &graph, const Tensor &p, const Tensor &labels,
                   Sequence &prog, const DebugContext &dc) {
  Tensor predicted = argMax(graph, p, prog, DebugContext(dc, "argMax"));
  return map(graph, Cast(_1 == _2, UNSIGNED_INT), {predicted, labels}, prog,
             DebugContext(dc, "compare"));
}

// The same spread over tiles with maps and reductions.
Tensor lossReduce(Graph &graph, const Tensor &p, const Tensor &expected,
                  bool labels, const Tensor &loss, const Tensor &deltas,
                  LossType type, Sequence &prog, const DebugContext &dc) {
  const std::size_t b = p.dim(0), n = p.dim(1);
  const Const floor(kLogFloor);
  if (labels) {
    Tensor lab = expected.elementType() == UNSIGNED_INT
                     ? expected
                     : cast(graph, expected, UNSIGNED_INT, prog,
                            DebugContext(dc, "labels"));
    std::vector<unsigned> colValues(n);
    std::iota(colValues.begin(), colValues.end(), 0u);
    Tensor cols = graph.addConstant(UNSIGNED_INT, {n}, colValues,
                                    DebugContext(dc, "classes"));
    mapTensorLinearly(graph, cols);
    // One-hot mask and the rows' validity (labels in range), as BOOL.
    Tensor hit = createLike(graph, p, BOOL, DebugContext(dc, "hit"));
    mapWithOutput(graph, _1 == _2, {cols, lab.reshape({b, 1})}, hit, prog,
                  DebugContext(dc, "oneHot"));
    Tensor valid = map(graph, _1 < Const(static_cast<unsigned>(n)), {lab}, prog,
                       DebugContext(dc, "valid"));
    mapWithOutput(
        graph,
        Select(_1 - Select(Const(1.0f), Const(0.0f), _2), Const(0.0f), _3),
        {p, hit, valid.reshape({b, 1})}, deltas, prog,
        DebugContext(dc, "deltas"));
    if (type == LossType::SUM_SQUARED_LOSS) {
      reduceWithOutput(graph, deltas, loss, {1},
                       ReduceParams(Operation::SQUARE_ADD, false, 0.5f), prog,
                       DebugContext(dc, "loss"));
    } else {
      Tensor terms =
          map(graph, Select(Neg(Log(Max(_1, floor))), Const(0.0f), _2),
              {p, hit}, prog, DebugContext(dc, "logs"));
      reduceWithOutput(graph, terms, loss, {1}, Operation::ADD, prog,
                       DebugContext(dc, "loss"));
    }
    return correctRows(graph, p, lab, prog, dc);
  }
  mapWithOutput(graph, _1 - _2, {p, expected}, deltas, prog,
                DebugContext(dc, "deltas"));
  if (type == LossType::SUM_SQUARED_LOSS) {
    reduceWithOutput(graph, deltas, loss, {1},
                     ReduceParams(Operation::SQUARE_ADD, false, 0.5f), prog,
                     DebugContext(dc, "loss"));
  } else {
    Tensor terms = map(graph, Neg(_2 * Log(Max(_1, floor))), {p, expected},
                       prog, DebugContext(dc, "logs"));
    reduceWithOutput(graph, terms, loss, {1}, Operation::ADD, prog,
                     DebugContext(dc, "loss"));
  }
  Tensor target = argMax(graph, expected, prog, DebugContext(dc, "target"));
  return correctRows(graph, p, target, prog, dc);
}

void calcLossImpl(Graph &graph, const Tensor &p, const Tensor &expected,
                  const Tensor &loss, const Tensor &deltas,
                  const Tensor *numCorrect, LossType type, Sequence &prog,
                  const DebugContext &dc, const OptionFlags &options) {
  const Plan plan = parsePlan("calcLoss", options);
  const bool labels = checkLoss(p, expected, loss, deltas);
  if (numCorrect)
    checkCounter("calcLoss", *numCorrect);
  if (type != LossType::SUM_SQUARED_LOSS &&
      type != LossType::CROSS_ENTROPY_LOSS)
    throw UnsupportedError("calcLoss: unknown loss type " +
                           std::to_string(static_cast<int>(type)));
  if (p.dim(0) == 0)
    return;
  const DebugContext name = nameOr(dc, "calcLoss");
  const bool rows = useRows(plan, graph, deltas, labels ? 2 : 3);
  Tensor counts = rows ? lossRows(graph, p, expected, labels, loss, deltas,
                                  type, prog, name)
                       : lossReduce(graph, p, expected, labels, loss, deltas,
                                    type, prog, name);
  if (numCorrect)
    addCounts(graph, counts, *numCorrect, prog, DebugContext(name, "count"));
}

} // namespace

std::string_view lossName(LossType type) {
  switch (type) {
  case LossType::SUM_SQUARED_LOSS:
    return "SUM_SQUARED_LOSS";
  case LossType::CROSS_ENTROPY_LOSS:
    return "CROSS_ENTROPY_LOSS";
  }
  return "?";
}

void calcLoss(Graph &graph, const Tensor &modelOutputs, const Tensor &expected,
              const Tensor &loss, const Tensor &deltas,
              const Tensor &numCorrect, LossType type, Sequence &prog,
              const DebugContext &dc, const OptionFlags &options) {
  calcLossImpl(graph, modelOutputs, expected, loss, deltas, &numCorrect, type,
               prog, dc, options);
}

void calcLoss(Graph &graph, const Tensor &modelOutputs, const Tensor &expected,
              const Tensor &loss, const Tensor &deltas, LossType type,
              Sequence &prog, const DebugContext &dc,
              const OptionFlags &options) {
  calcLossImpl(graph, modelOutputs, expected, loss, deltas, nullptr, type, prog,
               dc, options);
}

void calcAccuracy(Graph &graph, const Tensor &modelOutputs,
                  const Tensor &expected, const Tensor &numCorrect,
                  Sequence &prog, const DebugContext &dc,
                  const OptionFlags &options) {
  const char *op = "calcAccuracy";
  parsePlan(op, options);
  const Type t = modelOutputs.elementType();
  if (!isFloat(t) && !isLabel(t))
    throw TypeError(std::string(op) + ": the model outputs are " +
                    typeStr(modelOutputs) +
                    "; they must be float, half, int or unsigned int");
  checkOutputsShape(op, modelOutputs);
  if (!isLabel(expected.elementType()))
    throw TypeError(std::string(op) + ": the labels are " + typeStr(expected) +
                    "; give them as unsigned int or int");
  checkLabels(op, expected, modelOutputs.dim(0));
  checkCounter(op, numCorrect);
  if (modelOutputs.dim(0) == 0)
    return;
  const DebugContext name = nameOr(dc, op);
  Tensor lab = expected.elementType() == UNSIGNED_INT
                   ? expected
                   : cast(graph, expected, UNSIGNED_INT, prog,
                          DebugContext(name, "labels"));
  addCounts(graph, correctRows(graph, modelOutputs, lab, prog, name),
            numCorrect, prog, DebugContext(name, "count"));
}

} // namespace tessera::ops
