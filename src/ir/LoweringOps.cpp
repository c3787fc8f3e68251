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

namespace tessera::ir::detail {

void setInitialValues(Graph &graph, const Tensor &t,
                      const std::vector<double> &values) {
  const Type type = t.elementType();
  if (isFloatingPoint(type))
    graph.setInitialValue(t, std::vector<float>(values.begin(), values.end()));
  else if (type == UNSIGNED_INT || type == UNSIGNED_SHORT ||
           type == UNSIGNED_CHAR)
    graph.setInitialValue(t,
                          std::vector<unsigned>(values.begin(), values.end()));
  else
    graph.setInitialValue(t, std::vector<int>(values.begin(), values.end()));
}

Tensor addConstantTensor(Graph &graph, const ValueType &t,
                         const std::vector<double> &values,
                         const DebugContext &dc) {
  // A graph variable with an initial value rather than a graph constant:
  // the same bytes and mapping, and one code path for every type.
  Tensor c = graph.addVariable(t.dtype, t.shape, dc);
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
using Results = std::vector<Tensor>;

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
  std::vector<std::size_t> dims;
  for (std::int64_t a : c.op.attrs.getInts("axes"))
    dims.push_back(static_cast<std::size_t>(
        a < 0 ? a + static_cast<std::int64_t>(x.rank()) : a));
  if (dims.empty())
    for (unsigned d = 0; d < x.rank(); ++d)
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
  const OptionFlags &o = c.options.matMulOptions;
  if (c.in[0].rank() == 2)
    return {matMul(c.graph, c.in[0], c.in[1], c.prog, c.dc, o)};
  return {matMulGrouped(c.graph, c.in[0], c.in[1], c.prog, c.dc, o)};
}

Results shapeOp(LowerContext &c) {
  const Attributes &a = c.op.attrs;
  const Shape &out = c.outTypes[0].shape;
  switch (c.op.kind) {
  case OpKind::MATMUL:
    return matmulOp(c);
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
  case OpKind::REDUCE_SUM:
  case OpKind::REDUCE_MEAN:
  case OpKind::REDUCE_MAX:
    return reduceOp(c);
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
  case OpKind::CROSS_REPLICA_SUM:
  case OpKind::CROSS_REPLICA_MEAN:
    return {ops::allReduce(c.graph, c.in[0],
                           c.op.kind == OpKind::CROSS_REPLICA_MEAN
                               ? ops::CollectiveOperator::MEAN
                               : ops::CollectiveOperator::ADD,
                           c.prog, c.dc)};
  case OpKind::GATHER:
    return gatherOp(c);
  default:
    return gatherGradOp(c);
  }
}

} // namespace

// Declared here, defined in LoweringNn.cpp.
std::vector<Tensor> lowerNn(LowerContext &c);

std::vector<Tensor> lowerOp(LowerContext &c) {
  switch (opClass(c.op.kind)) {
  case OpClass::Unary:
  case OpClass::Predicate:
  case OpClass::Binary:
  case OpClass::Compare:
    return elementwise(c);
  case OpClass::Other:
    break;
  }
  switch (c.op.kind) {
  case OpKind::UNARY_GRAD:
  case OpKind::BINARY_GRAD:
    return elementwiseGrad(c);
  case OpKind::MATMUL:
  case OpKind::RESHAPE:
  case OpKind::TRANSPOSE:
  case OpKind::BROADCAST:
  case OpKind::REDUCE_SUM:
  case OpKind::REDUCE_MEAN:
  case OpKind::REDUCE_MAX:
  case OpKind::CONCAT:
  case OpKind::SLICE:
  case OpKind::PAD:
  case OpKind::CAST:
  case OpKind::GATHER:
  case OpKind::GATHER_GRAD:
  case OpKind::CROSS_REPLICA_SUM:
  case OpKind::CROSS_REPLICA_MEAN:
    return shapeOp(c);
  default:
    return lowerNn(c);
  }
}

Tensor preferredLayout(Graph &graph, const Op &op, unsigned operand,
                       const std::vector<ValueType> &types,
                       const LoweringOptions &options, const DebugContext &dc) {
  const ValueType &t = types[operand];
  switch (op.kind) {
  case OpKind::MATMUL: {
    const Shape &a = types[0].shape, &b = types[1].shape;
    const OptionFlags &o = options.matMulOptions;
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
    if (operand == 0)
      return createInput(graph, p, dc, options.convOptions);
    return createWeights(graph, p, dc, options.convOptions).reshape(t.shape);
  }
  case OpKind::GATHER:
    if (operand == 0)
      return createSliceableTensor(graph, t.dtype, t.shape, {0}, {1}, 1, dc);
    return Tensor();
  default:
    return Tensor();
  }
}

} // namespace tessera::ir::detail
