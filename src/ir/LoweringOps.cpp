// Lowering of each op kind to the ops library: which ops:: calls compute
// it, and the views that reshape operands and results for them.
#include "ConvShapes.hpp"
#include "LoweringInternal.hpp"

#include "tessera/ops/Collectives.hpp"
#include "tessera/ops/Conv.hpp"
#include "tessera/ops/DynamicSlice.hpp"
#include "tessera/ops/Elementwise.hpp"
#include "tessera/ops/Loss.hpp"
#include "tessera/ops/MatMul.hpp"
#include "tessera/ops/NonLinearity.hpp"
#include "tessera/ops/Norms.hpp"
#include "tessera/ops/Pooling.hpp"
#include "tessera/ops/Random.hpp"
#include "tessera/ops/Reduce.hpp"

#include <algorithm>

namespace tessera::ir::detail {

namespace {

// Calls \p f with a value of the host type initial values of \p type pass
// through: float for floating-point types, unsigned or int otherwise.
template <typename F> void withHostType(Type type, F &&f) {
  if (isFloatingPoint(type))
    f(float{});
  else if (type == UNSIGNED_INT || type == UNSIGNED_SHORT ||
           type == UNSIGNED_CHAR)
    f(unsigned{});
  else
    f(int{});
}

} // namespace

void setInitialValues(Graph &graph, const Tensor &t,
                      const std::vector<double> &values) {
  withHostType(t.elementType(), [&](auto host) {
    using H = decltype(host);
    graph.setInitialValue(t, std::vector<H>(values.begin(), values.end()));
  });
}

void setInitialValues(Graph &graph, const Tensor &t, const Initialiser &init,
                      const std::vector<std::size_t> &shape) {
  if (init.kind != InitKind::Zeros && init.kind != InitKind::Ones &&
      init.kind != InitKind::Constant) {
    setInitialValues(graph, t, materialise(init, t.elementType(), shape));
    return;
  }
  // Filled in place, converted as a list of them would be: ResNet-50's
  // optimizer state is 47 M zeros, each list of them fresh memory.
  checkInitialiser(init, t.elementType(), shape);
  const double c = init.kind == InitKind::Zeros  ? 0.0
                   : init.kind == InitKind::Ones ? 1.0
                                                 : init.a;
  withHostType(t.elementType(), [&](auto host) {
    graph.setInitialValue(t, static_cast<decltype(host)>(c));
  });
}

void TileSpreader::map(Graph &graph, const Tensor &t) {
  const unsigned tiles = graph.getTarget().getNumTiles();
  mapTensorLinearly(graph, t);
  if (t.numElements() == 0)
    return;
  // mapTensorLinearly fills tiles 0, 1, ... in order: turn its mapping
  // round so that its first tile is next_.
  TileMapping m = graph.getTileMapping(t);
  unsigned used = 0;
  while (used < tiles && !m[used].empty())
    ++used;
  const unsigned first = next_ % tiles;
  next_ = (first + used) % tiles;
  if (first == 0)
    return;
  std::rotate(m.begin(), m.end() - first, m.end());
  graph.setTileMapping(t, m);
}

Tensor addConstantTensor(Graph &graph, const ValueType &t,
                         const std::vector<double> &values,
                         const DebugContext &dc, TileSpreader *spreader) {
  // A graph variable with an initial value rather than a graph constant:
  // the same bytes and mapping, and one code path for every type.
  Tensor c = graph.addVariable(t.dtype, t.shape, dc);
  if (spreader)
    spreader->map(graph, c);
  else
    mapTensorLinearly(graph, c);
  std::vector<double> all = values;
  if (all.size() == 1)
    all.assign(t.numElements(), values[0]);
  setInitialValues(graph, c, all);
  return c;
}

namespace {

using namespace ops;
using program::Sequence;

std::vector<std::size_t> sizes(const std::vector<std::int64_t> &v) {
  return std::vector<std::size_t>(v.begin(), v.end());
}

// ---- Elementwise -----------------------------------------------------------

Results elementwise(LowerContext &c) {
  using namespace ops::expr;
  std::vector<Tensor> ts;
  std::vector<Expr> args;
  for (std::size_t i = 0; i < c.in.size(); ++i) {
    if (c.splat[i]) {
      args.push_back(Const(*c.splat[i], c.inTypes[i].dtype));
    } else {
      ts.push_back(c.in[i]);
      args.push_back(PlaceHolder(static_cast<unsigned>(ts.size())));
    }
  }
  const Expr e =
      args.size() == 1
          ? Expr(UnaryOp(*unaryOpType(c.op.kind), args[0]))
          : Expr(BinaryOp(*binaryOpType(c.op.kind), args[0], args[1]));
  return {map(c.graph, e, ts, c.prog, c.dc)};
}

Results elementwiseGrad(LowerContext &c) {
  const OpKind op = *opKindFromName(c.op.attrs.getString("op"));
  if (c.op.kind == OpKind::UNARY_GRAD)
    return {unaryGradient(c.graph, *unaryOpType(op), c.in[0], c.in[1], c.in[2],
                          c.prog, c.dc)};
  auto [da, db] = binaryGradient(c.graph, *binaryOpType(op), c.in[0], c.in[1],
                                 c.in[2], c.in[3], c.prog, c.dc);
  return {da, db};
}

// ---- Shapes and data movement ---------------------------------------------

Tensor broadcastTo(const Tensor &t, const Shape &shape) {
  std::vector<std::size_t> lead(shape.size() - t.rank(), 0);
  Tensor r = lead.empty() ? t : t.expand(lead);
  for (unsigned d = 0; d < shape.size(); ++d)
    if (r.dim(d) != shape[d])
      r = r.broadcast(shape[d], d);
  return r;
}

Results reduceOp(LowerContext &c) {
  const Tensor &x = c.in[0];
  const std::vector<bool> reduced =
      decodeReduceAttrs(c.op.attrs).reducedDims(x.rank());
  std::vector<std::size_t> dims;
  for (std::size_t d = 0; d < reduced.size(); ++d)
    if (reduced[d])
      dims.push_back(d);
  std::size_t count = 1;
  for (std::size_t d : dims)
    count *= x.dim(static_cast<unsigned>(d));
  const ReduceParams params(
      c.op.kind == OpKind::REDUCE_MAX ? Operation::MAX : Operation::ADD, false,
      c.op.kind == OpKind::REDUCE_MEAN ? 1.0f / static_cast<float>(count)
                                       : 1.0f);
  return {reduce(c.graph, x, dims, params, c.prog, c.dc)
              .reshape(c.outTypes[0].shape)};
}

Results padOp(LowerContext &c) {
  const Shape lower = sizes(c.op.attrs.getInts("lower"));
  Tensor out =
      c.graph.addVariable(c.outTypes[0].dtype, c.outTypes[0].shape, c.dc);
  mapTensorLinearly(c.graph, out);
  zero(c.graph, out, c.prog, c.dc);
  Shape end(lower.size());
  for (std::size_t d = 0; d < end.size(); ++d)
    end[d] = lower[d] + c.in[0].dim(static_cast<unsigned>(d));
  c.prog.add(program::Copy(c.in[0], out.slice(lower, end)));
  return {out};
}

// Indices as the slicing ops want them: UNSIGNED_INT, one dimension. A
// negative INT index reads as a huge unsigned one, out of range as it
// should be.
Tensor offsets(const Tensor &indices) {
  Tensor flat = indices.flatten();
  return flat.elementType() == INT ? flat.reinterpret(UNSIGNED_INT) : flat;
}

Results gatherOp(LowerContext &c) {
  Tensor rows =
      multiSlice(c.graph, c.in[0], offsets(c.in[1]), 0, 1, c.prog, c.dc);
  return {rows.reshape(c.outTypes[0].shape)};
}

Results gatherGradOp(LowerContext &c) {
  const Shape &s = c.outTypes[0].shape;
  Tensor out =
      createSliceableTensor(c.graph, c.outTypes[0].dtype, s, {0}, {1}, 1, c.dc);
  zero(c.graph, out, c.prog, c.dc);
  const Tensor idx = offsets(c.in[1]);
  Shape updates{idx.numElements()};
  updates.insert(updates.end(), s.begin() + 1, s.end());
  Tensor one = c.graph.addConstant(c.outTypes[0].dtype, {}, 1.0f,
                                   DebugContext(c.dc, "scale"));
  c.graph.setTileMapping(one, 0);
  multiUpdateAdd(c.graph, out, c.in[0].reshape(updates), idx, one, 0, 1, c.prog,
                 c.dc);
  return {out};
}

Results matmulOp(LowerContext &c) {
  const OptionFlags o = withPartials(c.options.matMulOptions, c.op);
  if (c.in[0].rank() == 2)
    return {matMul(c.graph, c.in[0], c.in[1], c.prog, c.dc, o)};
  return {matMulGrouped(c.graph, c.in[0], c.in[1], c.prog, c.dc, o)};
}

// The kinds that move or view data.
Results shapeOp(LowerContext &c) {
  const Attributes &a = c.op.attrs;
  const Shape &out = c.outTypes[0].shape;
  switch (c.op.kind) {
  case OpKind::RESHAPE:
    return {c.in[0].reshape(out)};
  case OpKind::TRANSPOSE: {
    std::vector<unsigned> perm;
    for (std::int64_t p : a.getInts("perm"))
      perm.push_back(static_cast<unsigned>(p));
    return {c.in[0].dimShuffle(perm)};
  }
  case OpKind::BROADCAST:
    return {broadcastTo(c.in[0], out)};
  case OpKind::CONCAT: {
    const auto rank = static_cast<std::int64_t>(out.size());
    return {tessera::concat(
        c.in, static_cast<unsigned>((a.getInt("axis") + rank) % rank))};
  }
  case OpKind::SLICE:
    return {c.in[0].slice(sizes(a.getInts("begin")), sizes(a.getInts("end")))};
  case OpKind::PAD:
    return padOp(c);
  case OpKind::CAST:
    return {ops::cast(c.graph, c.in[0], c.outTypes[0].dtype, c.prog, c.dc)};
  default:
    TESSERA_INTERNAL_ASSERT(false, std::string(opKindName(c.op.kind)) +
                                       " does not move data");
  }
}

Results crossReplicaOp(LowerContext &c) {
  return {ops::allReduce(c.graph, c.in[0],
                         c.op.kind == OpKind::CROSS_REPLICA_MEAN
                             ? ops::CollectiveOperator::MEAN
                             : ops::CollectiveOperator::ADD,
                         c.prog, c.dc)};
}

} // namespace

// One case per kind and no default: a kind added to OpKinds.def or
// Elementwise.def without a lowering fails to compile (-Wswitch).
std::vector<Tensor> lowerOp(LowerContext &c) {
  switch (c.op.kind) {
#define TESSERA_UNARY(E, n, N, k, g) case OpKind::E:
#define TESSERA_PREDICATE(E, n, N, k) case OpKind::E:
#define TESSERA_BINARY(E, n, N, k, ga, gb) case OpKind::E:
#define TESSERA_COMPARE(E, n, N, k) case OpKind::E:
#include "tessera/ops/Elementwise.def"
    return elementwise(c);
  case OpKind::UNARY_GRAD:
  case OpKind::BINARY_GRAD:
    return elementwiseGrad(c);
  case OpKind::MATMUL:
    return matmulOp(c);
  case OpKind::RESHAPE:
  case OpKind::TRANSPOSE:
  case OpKind::BROADCAST:
  case OpKind::CONCAT:
  case OpKind::SLICE:
  case OpKind::PAD:
  case OpKind::CAST:
    return shapeOp(c);
  case OpKind::REDUCE_SUM:
  case OpKind::REDUCE_MEAN:
  case OpKind::REDUCE_MAX:
    return reduceOp(c);
  case OpKind::GATHER:
    return gatherOp(c);
  case OpKind::GATHER_GRAD:
    return gatherGradOp(c);
  case OpKind::CROSS_REPLICA_SUM:
  case OpKind::CROSS_REPLICA_MEAN:
    return crossReplicaOp(c);
  case OpKind::CONV2D:
  case OpKind::CONV2D_BACKPROP_INPUT:
  case OpKind::CONV2D_BACKPROP_FILTER:
    return convOp(c);
  case OpKind::MAX_POOL:
  case OpKind::AVG_POOL:
  case OpKind::MAX_POOL_GRAD:
  case OpKind::AVG_POOL_GRAD:
    return poolOp(c);
  case OpKind::SOFTMAX:
  case OpKind::LOG_SOFTMAX:
  case OpKind::SOFTMAX_GRAD:
  case OpKind::LOG_SOFTMAX_GRAD:
    return softmaxOp(c);
  case OpKind::DROPOUT:
    return dropoutOp(c);
  case OpKind::BATCH_NORM:
  case OpKind::LAYER_NORM:
    return normOp(c);
  case OpKind::BATCH_NORM_GRAD:
  case OpKind::LAYER_NORM_GRAD:
    return normGradOp(c);
  case OpKind::SPARSE_SOFTMAX_CROSS_ENTROPY:
  case OpKind::SPARSE_SOFTMAX_CROSS_ENTROPY_GRAD:
    return sparseCrossEntropyOp(c);
  case OpKind::CATEGORICAL_CROSS_ENTROPY:
  case OpKind::MEAN_SQUARED_ERROR:
    return rowLossOp(c);
  case OpKind::ARGMAX:
    return argmaxOp(c);
  case OpKind::ACCURACY:
    return accuracyOp(c);
  }
  TESSERA_INTERNAL_ASSERT(false, "op kind out of range: " +
                                     std::to_string(unsigned(c.op.kind)));
}

Tensor preferredLayout(Graph &graph, const Op &op, unsigned operand,
                       const std::vector<ValueType> &types,
                       const LoweringOptions &options, const DebugContext &dc) {
  const ValueType &t = types[operand];
  switch (op.kind) {
  case OpKind::MATMUL: {
    const Shape &a = types[0].shape, &b = types[1].shape;
    const OptionFlags o = withPartials(options.matMulOptions, op);
    if (a.size() == 2)
      return operand == 0 ? createMatMulInputLHS(graph, t.dtype, a, b, dc, o)
                          : createMatMulInputRHS(graph, t.dtype, a, b, dc, o);
    return operand == 0 ? createMatMulGroupedInputLHS(graph, t.dtype, t.dtype,
                                                      a, b, dc, o)
                        : createMatMulGroupedInputRHS(graph, t.dtype, t.dtype,
                                                      a, b, dc, o);
  }
  case OpKind::CONV2D: {
    const Conv2dOptions a = decodeConv2dOptions(op.attrs);
    const ConvParams p =
        convParams(a, types[0].shape, types[1].shape, types[0].dtype);
    const OptionFlags o = withPartials(options.convOptions, op);
    if (operand == 0)
      return createInput(graph, p, dc, o);
    return createWeights(graph, p, dc, o).reshape(t.shape);
  }
  case OpKind::GATHER:
    if (operand == 0)
      return createSliceableTensor(graph, t.dtype, t.shape, {0}, {1}, 1, dc);
    return Tensor();
  default: // the other kinds take the layout their operands come with
    return Tensor();
  }
}

} // namespace tessera::ir::detail
