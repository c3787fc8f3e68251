// Collectives across replicas: a ring of CrossReplicaCopy programs and
// elementwise ops in "rotated" coordinates, where every replica's program is
// the same (see Collectives.hpp for the algorithm).
#include "tessera/ops/Collectives.hpp"

#include "OpsInternal.hpp"

#include "tessera/ops/DynamicSlice.hpp"
#include "tessera/ops/Elementwise.hpp"
#include "tessera/ops/Reduce.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/OptionParser.hpp"

#include <map>
#include <string>
#include <vector>

namespace tessera::ops {
namespace {

using program::Copy;
using program::CrossReplicaCopy;

DebugContext nameOr(const DebugContext &dc, const char *name) {
  return dc.name.empty() ? DebugContext(name) : dc;
}

void checkData(const char *op, const Tensor &data, const OptionFlags &options) {
  OptionParser parser(op);
  const char *why = "Tessera runs one ring algorithm";
  parser.addIgnored("useReplicatedImplementation", why, {"true", "false"});
  parser.addIgnored("method", why,
                    {"auto", "clockwise_ring", "anticlockwise_ring",
                     "bidirectional_ring_pair", "meet_in_middle_ring",
                     "quad_directional_ring"});
  parser.parse(options);
  if (!data.valid() || data.numElements() == 0)
    throw ShapeError(std::string(op) + ": the tensor has no elements (shape " +
                     (data.valid() ? data.shapeToString() : "none") +
                     "); give it at least one element");
  const Type t = data.elementType();
  if (t != FLOAT && t != HALF && t != INT && t != UNSIGNED_INT && t != BOOL)
    throw TypeError(std::string(op) + ": the tensor has type " +
                    std::string(typeName(t)) +
                    "; collectives support float, half, int, unsigned int "
                    "and bool (cast first)");
}

bool isLogical(CollectiveOperator op) {
  return op == CollectiveOperator::LOGICAL_AND ||
         op == CollectiveOperator::LOGICAL_OR;
}

void checkOperator(const char *op, const Tensor &data, CollectiveOperator c) {
  const Type t = data.elementType();
  const std::string name(collectiveOperatorName(c));
  if (c == CollectiveOperator::LOCAL)
    return;
  if (t == BOOL && !isLogical(c))
    throw TypeError(std::string(op) + ": " + name +
                    " needs numbers but the tensor is bool; use LOGICAL_AND "
                    "or LOGICAL_OR, or cast it");
  if (t != BOOL && isLogical(c))
    throw TypeError(std::string(op) + ": " + name +
                    " needs a bool tensor but it has type " +
                    std::string(typeName(t)) + "; cast it to bool first");
  if (c == CollectiveOperator::MEAN && t != FLOAT && t != HALF)
    throw TypeError(std::string(op) +
                    ": MEAN needs a float or half tensor "
                    "but it has type " +
                    std::string(typeName(t)) +
                    "; use ADD and divide, or cast to float");
}

// Each replica sends to the next one around the ring.
std::map<unsigned, unsigned> ringMap(unsigned replicas) {
  std::map<unsigned, unsigned> m;
  for (unsigned r = 0; r < replicas; ++r)
    m[r] = (r + 1) % replicas;
  return m;
}

// The replica's own index r and R - r, as an UNSIGNED_INT [2] tensor. Every
// replica starts from the same values, so only copies that reach some
// replicas and not others can tell them apart: step b tells the replicas
// whose index has bit b set (each from the replica without that bit) by
// writing column b of a [2, bits + 1] table, which starts as zeros with R in
// its last column, and the rows are summed. Row 0 holds the bits 2^b, row
// 1 their negations 2^32 - 2^b, so it sums to R - r as unsigned arithmetic
// wraps. (Poplar has a replication-index constant for this; Tessera's graph
// has none yet, and these ceil(log2 R) copies move 8 bytes each.)
Tensor replicaOffsets(Graph &graph, Sequence &prog, const DebugContext &dc) {
  const unsigned replicas = graph.getReplicationFactor();
  unsigned bits = 0;
  while ((1u << bits) < replicas)
    ++bits;
  const std::size_t parts = bits + 1;
  std::vector<unsigned> init(2 * parts, 0);
  init.back() = replicas;
  Tensor sum = graph.addVariable(UNSIGNED_INT, {2, parts},
                                 DebugContext(dc, "replicaIndexParts"));
  Tensor start = graph.addConstant<unsigned>(UNSIGNED_INT, {2, parts}, init,
                                             DebugContext(dc, "noParts"));
  graph.setTileMapping(sum, 0);
  graph.setTileMapping(start, 0);
  prog.add(Copy(start, sum));
  for (unsigned b = 0; b < bits; ++b) {
    const unsigned bit = 1u << b;
    Tensor part = graph.addConstant<unsigned>(
        UNSIGNED_INT, {2}, std::vector<unsigned>{bit, 0u - bit},
        DebugContext(dc, "indexBit" + std::to_string(b)));
    graph.setTileMapping(part, 0);
    std::map<unsigned, unsigned> tell;
    for (unsigned d = 0; d < replicas; ++d)
      if (d & bit)
        tell[d - bit] = d;
    prog.add(CrossReplicaCopy(part, sum.slice(b, b + 1, 1).flatten(), tell,
                              DebugContext(dc, "replicaIndex")));
  }
  return reduce(graph, sum, {1}, Operation::ADD, prog,
                DebugContext(dc, "replicaIndex"));
}

// \p flat padded with zeros to replicas * chunk elements, as [R, chunk].
Tensor paddedRows(Graph &graph, const Tensor &flat, unsigned replicas,
                  std::size_t chunk, const DebugContext &dc) {
  const std::size_t pad = replicas * chunk - flat.numElements();
  Tensor all = flat;
  if (pad) {
    Tensor zeros = graph.addConstant(flat.elementType(), {pad}, 0.0f,
                                     DebugContext(dc, "padding"));
    mapTensorLinearly(graph, zeros);
    all = concat(flat, zeros);
  }
  return all.reshape({replicas, chunk});
}

// Rows [R, c] rotated up by \p offset rows (a [1] tensor): row j of the
// result is row (offset + j) mod R. A slice of the rows seen twice.
Tensor rotate(Graph &graph, const Tensor &rows, const Tensor &offset,
              Sequence &prog, const DebugContext &dc) {
  const std::size_t replicas = rows.dim(0);
  return dynamicSlice(graph, concat(rows, rows), offset, {0}, {replicas}, prog,
                      DebugContext(dc, "rotate"));
}

// The rotated chunks as a row-major variable whose rows are mapped as the
// slice mapped its columns. The slice writes column by column, so its rows
// are strided; the ring's maps would otherwise copy them to and from a
// contiguous layout at every step.
Tensor contiguousRows(Graph &graph, const Tensor &rows, Sequence &prog,
                      const DebugContext &dc) {
  if (rows.isContiguous())
    return rows;
  Tensor out = graph.addVariable(rows.elementType(), rows.shape(),
                                 DebugContext(dc, "chunks"));
  const TileMapping columns = graph.getTileMapping(rows[0]);
  for (std::size_t r = 0; r < rows.dim(0); ++r)
    graph.setTileMapping(out[r], columns);
  prog.add(Copy(rows, out, false, dc));
  return out;
}

expr::BinaryOpType combiningOp(CollectiveOperator op) {
  switch (op) {
  case CollectiveOperator::MUL:
    return expr::BinaryOpType::MULTIPLY;
  case CollectiveOperator::MIN:
    return expr::BinaryOpType::MINIMUM;
  case CollectiveOperator::MAX:
    return expr::BinaryOpType::MAXIMUM;
  case CollectiveOperator::LOGICAL_AND:
    return expr::BinaryOpType::LOGICAL_AND;
  case CollectiveOperator::LOGICAL_OR:
    return expr::BinaryOpType::LOGICAL_OR;
  default:
    return expr::BinaryOpType::ADD;
  }
}

// What happens to each replica's values before the ring combines them.
void prepare(Graph &graph, const Tensor &t, CollectiveOperator op,
             Sequence &prog, const DebugContext &dc) {
  if (op == CollectiveOperator::SQUARE_ADD)
    squareInPlace(graph, t, prog, DebugContext(dc, "square"));
}

// ... and after: only MEAN has more to do.
void finish(Graph &graph, const Tensor &t, CollectiveOperator op,
            unsigned replicas, Sequence &prog, const DebugContext &dc) {
  if (op == CollectiveOperator::MEAN && replicas > 1)
    mapInPlace(graph, expr::_1 * expr::Const(1.0 / replicas), {t}, prog,
               DebugContext(dc, "mean"));
}

// Reduce-scatter in rotated coordinates: step k sends rotated chunk
// R-1-k, which the next replica sees as its chunk R-2-k and combines into
// it. Chunk 0 ends up holding every replica's contribution.
void ringReduceScatter(Graph &graph, const Tensor &rel, CollectiveOperator op,
                       Sequence &prog, const DebugContext &dc) {
  const unsigned replicas = static_cast<unsigned>(rel.dim(0));
  const auto ring = ringMap(replicas);
  const expr::Expr combine =
      expr::BinaryOp(combiningOp(op), expr::_1, expr::_2);
  Tensor received = graph.clone(rel[0], DebugContext(dc, "received"));
  for (unsigned k = 0; k + 1 < replicas; ++k) {
    prog.add(CrossReplicaCopy(rel[replicas - 1 - k], received, ring,
                              DebugContext(dc, "reduceScatter")));
    mapInPlace(graph, combine, {rel[replicas - 2 - k], received}, prog,
               DebugContext(dc, "combine"));
  }
}

// All-gather in rotated coordinates: step k forwards rotated chunk -k,
// which the next replica stores as its chunk -k-1.
void ringAllGather(Sequence &prog, const Tensor &rel, const DebugContext &dc) {
  const unsigned replicas = static_cast<unsigned>(rel.dim(0));
  const auto ring = ringMap(replicas);
  for (unsigned k = 0; k + 1 < replicas; ++k)
    prog.add(CrossReplicaCopy(rel[(replicas - k) % replicas],
                              rel[replicas - 1 - k], ring,
                              DebugContext(dc, "allGather")));
}

} // namespace

std::string_view collectiveOperatorName(CollectiveOperator op) {
  switch (op) {
  case CollectiveOperator::ADD:
    return "ADD";
  case CollectiveOperator::MEAN:
    return "MEAN";
  case CollectiveOperator::MUL:
    return "MUL";
  case CollectiveOperator::MIN:
    return "MIN";
  case CollectiveOperator::MAX:
    return "MAX";
  case CollectiveOperator::LOGICAL_AND:
    return "LOGICAL_AND";
  case CollectiveOperator::LOGICAL_OR:
    return "LOGICAL_OR";
  case CollectiveOperator::SQUARE_ADD:
    return "SQUARE_ADD";
  case CollectiveOperator::LOCAL:
    break;
  }
  return "LOCAL";
}

void allReduceWithOutput(Graph &graph, const Tensor &data, const Tensor &out,
                         CollectiveOperator op, Sequence &prog,
                         const DebugContext &dc, const OptionFlags &options) {
  const DebugContext name = nameOr(dc, "allReduce");
  checkData("allReduce", data, options);
  checkOperator("allReduce", data, op);
  if (!out.valid() || out.shape() != data.shape() ||
      out.elementType() != data.elementType())
    throw ShapeError(
        "allReduce: the output is " +
        std::string(out.valid() ? typeName(out.elementType()) : "missing") +
        " " + (out.valid() ? out.shapeToString() : "") + " but the input is " +
        std::string(typeName(data.elementType())) + " " + data.shapeToString() +
        "; they must match");
  const unsigned replicas = graph.getReplicationFactor();
  if (replicas == 1 || op == CollectiveOperator::LOCAL) {
    if (out.runs() != data.runs())
      prog.add(Copy(data, out, false, name));
    if (op != CollectiveOperator::LOCAL)
      prepare(graph, out, op, prog, name);
    return;
  }
  const std::size_t n = data.numElements();
  const std::size_t chunk = (n + replicas - 1) / replicas;
  Tensor offsets = replicaOffsets(graph, prog, name);
  Tensor rows = paddedRows(graph, data.flatten(), replicas, chunk, name);
  Tensor rel = contiguousRows(
      graph, rotate(graph, rows, offsets.slice(0, 1), prog, name), prog, name);
  prepare(graph, rel, op, prog, name);
  ringReduceScatter(graph, rel, op, prog, name);
  finish(graph, rel[0], op, replicas, prog, name);
  ringAllGather(prog, rel, name);
  Tensor result = rotate(graph, rel, offsets.slice(1, 2), prog, name);
  prog.add(Copy(result.flatten().slice(0, n).reshape(data.shape()), out, false,
                name));
}

Tensor allReduce(Graph &graph, const Tensor &data, CollectiveOperator op,
                 Sequence &prog, const DebugContext &dc,
                 const OptionFlags &options) {
  checkData("allReduce", data, options);
  Tensor out =
      createLike(graph, data, data.elementType(), nameOr(dc, "allReduce"));
  allReduceWithOutput(graph, data, out, op, prog, dc, options);
  return out;
}

void allReduceInPlace(Graph &graph, const Tensor &data, CollectiveOperator op,
                      Sequence &prog, const DebugContext &dc,
                      const OptionFlags &options) {
  allReduceWithOutput(graph, data, data, op, prog, dc, options);
}

Tensor reduceScatter(Graph &graph, const Tensor &data, CollectiveOperator op,
                     Sequence &prog, const DebugContext &dc,
                     const OptionFlags &options) {
  const DebugContext name = nameOr(dc, "reduceScatter");
  checkData("reduceScatter", data, options);
  checkOperator("reduceScatter", data, op);
  const unsigned replicas = graph.getReplicationFactor();
  if (replicas == 1) {
    Tensor out = createLike(graph, data.flatten(), data.elementType(), name);
    prog.add(Copy(data.flatten(), out, false, name));
    prepare(graph, out, op, prog, name);
    return out;
  }
  const std::size_t n = data.numElements();
  const std::size_t chunk = (n + replicas - 1) / replicas;
  Tensor offsets = replicaOffsets(graph, prog, name);
  Tensor rows = paddedRows(graph, data.flatten(), replicas, chunk, name);
  Tensor rel = contiguousRows(
      graph, rotate(graph, rows, offsets.slice(0, 1), prog, name), prog, name);
  if (op != CollectiveOperator::LOCAL) {
    prepare(graph, rel, op, prog, name);
    ringReduceScatter(graph, rel, op, prog, name);
    finish(graph, rel[0], op, replicas, prog, name);
  }
  return rel[0];
}

Tensor allGather(Graph &graph, const Tensor &data, Sequence &prog,
                 const DebugContext &dc, const OptionFlags &options) {
  const DebugContext name = nameOr(dc, "allGather");
  checkData("allGather", data, options);
  const unsigned replicas = graph.getReplicationFactor();
  const Tensor flat = data.flatten();
  std::vector<std::size_t> shape = data.shape();
  shape.insert(shape.begin(), replicas);
  if (replicas == 1) {
    Tensor out = createLike(graph, data, data.elementType(), name);
    prog.add(Copy(data, out, false, name));
    return out.reshape(shape);
  }
  // Every row where the input lives, so row 0 is filled on its tiles.
  std::vector<Tensor> rowList;
  for (unsigned r = 0; r < replicas; ++r)
    rowList.push_back(
        createLike(graph, flat, data.elementType(), name).expand({0}));
  Tensor rows = concat(rowList, 0);
  Tensor offsets = replicaOffsets(graph, prog, name);
  prog.add(Copy(flat, rows[0], false, name));
  ringAllGather(prog, rows, name);
  return rotate(graph, rows, offsets.slice(1, 2), prog, name).reshape(shape);
}

} // namespace tessera::ops
