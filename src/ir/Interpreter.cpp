// The host interpreter: elementwise, shape and data-movement kinds, and
// the driver that runs a module op by op.
#include "InterpreterInternal.hpp"

#include "tessera/ops/Reference.hpp"

#include <algorithm>
#include <limits>

namespace tessera::ir {
namespace detail {

std::vector<std::size_t> stridesOf(const Shape &shape) {
  std::vector<std::size_t> s(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;)
    s[i - 1] = s[i] * shape[i];
  return s;
}

std::vector<std::size_t> broadcastIndices(const Shape &in, const Shape &out) {
  const std::size_t n = numElements(out), lead = out.size() - in.size();
  const std::vector<std::size_t> inStrides = stridesOf(in);
  std::vector<std::size_t> idx(n, 0), coord(out.size(), 0);
  for (std::size_t e = 0; e < n; ++e) {
    std::size_t k = 0;
    for (std::size_t d = 0; d < in.size(); ++d)
      if (in[d] != 1)
        k += coord[lead + d] * inStrides[d];
    idx[e] = k;
    for (std::size_t d = out.size(); d-- > 0;) {
      if (++coord[d] < out[d])
        break;
      coord[d] = 0;
    }
  }
  return idx;
}

void roundToType(HostValue &v) {
  if (isFloatingPoint(v.dtype))
    return;
  for (double &x : v.values)
    x = ops::reference::roundTo(v.dtype, x);
}

} // namespace detail

namespace {

using namespace detail;
namespace ref = ops::reference;

Results unary(OpKind kind, const Operands &in, const ValueType &t) {
  HostValue r = zeros(t);
  const auto op = *unaryOpType(kind);
  for (std::size_t i = 0; i < r.values.size(); ++i)
    r.values[i] = ref::unary(op, in[0]->values[i]);
  roundToType(r);
  return {r};
}

Results binary(OpKind kind, const Operands &in, const ValueType &t) {
  HostValue r = zeros(t);
  const auto op = *binaryOpType(kind);
  const auto ia = broadcastIndices(in[0]->shape, t.shape);
  const auto ib = broadcastIndices(in[1]->shape, t.shape);
  for (std::size_t i = 0; i < r.values.size(); ++i)
    r.values[i] = ref::binary(op, in[0]->values[ia[i]], in[1]->values[ib[i]]);
  roundToType(r);
  return {r};
}

Results matmul(const Operands &in, const ValueType &t) {
  const Shape &a = in[0]->shape, &b = in[1]->shape;
  HostValue r = zeros(t);
  if (a.size() == 2)
    r.values = ref::matMul(in[0]->values, in[1]->values, a[0], a[1], b[1]);
  else
    r.values = ref::matMulGrouped(in[0]->values, in[1]->values, a[0], a[1],
                                  a[2], b[2]);
  return {r};
}

Results transpose(const Attributes &attrs, const Operands &in,
                  const ValueType &t) {
  const std::vector<std::int64_t> &perm = attrs.getInts("perm");
  const std::vector<std::size_t> inStrides = stridesOf(in[0]->shape);
  HostValue r = zeros(t);
  std::vector<std::size_t> coord(t.rank(), 0);
  for (double &v : r.values) {
    std::size_t k = 0;
    for (std::size_t d = 0; d < coord.size(); ++d)
      k += coord[d] * inStrides[perm[d]];
    v = in[0]->values[k];
    for (std::size_t d = coord.size(); d-- > 0;) {
      if (++coord[d] < t.shape[d])
        break;
      coord[d] = 0;
    }
  }
  return {r};
}

Results broadcast(const Operands &in, const ValueType &t) {
  HostValue r = zeros(t);
  const auto idx = broadcastIndices(in[0]->shape, t.shape);
  for (std::size_t i = 0; i < idx.size(); ++i)
    r.values[i] = in[0]->values[idx[i]];
  return {r};
}

Results reduce(OpKind kind, const Attributes &attrs, const Operands &in,
               const ValueType &t) {
  const Shape &s = in[0]->shape;
  const std::vector<bool> reduced =
      decodeReduceAttrs(attrs).reducedDims(s.size());
  // The output index of each input element: its coordinates with the
  // reduced ones dropped.
  Shape kept;
  for (std::size_t d = 0; d < s.size(); ++d)
    kept.push_back(reduced[d] ? 1 : s[d]);
  const std::vector<std::size_t> keptStrides = stridesOf(kept);
  const bool max = kind == OpKind::REDUCE_MAX;
  HostValue r = zeros(t);
  std::fill(r.values.begin(), r.values.end(),
            max ? -std::numeric_limits<double>::infinity() : 0.0);
  std::vector<std::size_t> coord(s.size(), 0);
  for (double v : in[0]->values) {
    std::size_t k = 0;
    for (std::size_t d = 0; d < s.size(); ++d)
      k += reduced[d] ? 0 : coord[d] * keptStrides[d];
    r.values[k] = max ? std::max(r.values[k], v) : r.values[k] + v;
    for (std::size_t d = s.size(); d-- > 0;) {
      if (++coord[d] < s[d])
        break;
      coord[d] = 0;
    }
  }
  if (kind == OpKind::REDUCE_MEAN) {
    const double count = double(in[0]->numElements()) /
                         double(std::max<std::size_t>(t.numElements(), 1));
    for (double &v : r.values)
      v /= count;
  }
  roundToType(r);
  return {r};
}

// Copies the box of `src` starting at `srcBegin` with the shape `size` into
// `dst` at `dstBegin` (both row-major): slicing, padding and concatenation.
void copyBox(const HostValue &src, const Shape &srcBegin, HostValue &dst,
             const Shape &dstBegin, const Shape &size) {
  const auto ss = stridesOf(src.shape), ds = stridesOf(dst.shape);
  const std::size_t n = numElements(size);
  std::vector<std::size_t> coord(size.size(), 0);
  for (std::size_t e = 0; e < n; ++e) {
    std::size_t si = 0, di = 0;
    for (std::size_t d = 0; d < size.size(); ++d) {
      si += (srcBegin[d] + coord[d]) * ss[d];
      di += (dstBegin[d] + coord[d]) * ds[d];
    }
    dst.values[di] = src.values[si];
    for (std::size_t d = size.size(); d-- > 0;) {
      if (++coord[d] < size[d])
        break;
      coord[d] = 0;
    }
  }
}

Results dataMovement(OpKind kind, const Attributes &attrs, const Operands &in,
                     const ValueType &t) {
  HostValue r = zeros(t);
  const Shape origin(t.rank(), 0);
  if (kind == OpKind::SLICE) {
    copyBox(*in[0], attrs.getSizes("begin"), r, origin, t.shape);
  } else if (kind == OpKind::PAD) {
    copyBox(*in[0], origin, r, attrs.getSizes("lower"), in[0]->shape);
  } else {
    const auto ax = static_cast<std::size_t>(
        (attrs.getInt("axis") + static_cast<std::int64_t>(t.rank())) %
        static_cast<std::int64_t>(t.rank()));
    Shape at(t.rank(), 0);
    for (const HostValue *v : in) {
      copyBox(*v, origin, r, at, v->shape);
      at[ax] += v->shape[ax];
    }
  }
  return {r};
}

Results gather(const Operands &in, const ValueType &t) {
  const HostValue &table = *in[0], &idx = *in[1];
  const std::size_t rows = table.shape[0],
                    row = rows ? table.numElements() / rows : 0;
  HostValue r = zeros(t);
  for (std::size_t i = 0; i < idx.values.size(); ++i) {
    const double k = idx.values[i];
    if (k < 0 || k >= double(rows))
      continue;
    std::copy_n(table.values.begin() + std::size_t(k) * row, row,
                r.values.begin() + i * row);
  }
  return {r};
}

Results gatherGrad(const Operands &in, const ValueType &t) {
  const HostValue &dy = *in[0], &idx = *in[1];
  const std::size_t rows = t.shape[0], row = numElements(t.shape) / rows;
  HostValue r = zeros(t);
  for (std::size_t i = 0; i < idx.values.size(); ++i) {
    const double k = idx.values[i];
    if (k < 0 || k >= double(rows))
      continue;
    for (std::size_t j = 0; j < row; ++j)
      r.values[std::size_t(k) * row + j] += dy.values[i * row + j];
  }
  return {r};
}

} // namespace

// One case per kind and no default: a kind added to OpKinds.def or
// Elementwise.def without a host implementation fails to compile
// (-Wswitch).
std::vector<HostValue> interpretOp(OpKind kind, const Attributes &attrs,
                                   const Operands &in,
                                   const std::vector<ValueType> &types) {
  switch (kind) {
#define TESSERA_UNARY(E, n, N, k, g) case OpKind::E:
#define TESSERA_PREDICATE(E, n, N, k) case OpKind::E:
#include "tessera/ops/Elementwise.def"
    return unary(kind, in, types[0]);
#define TESSERA_BINARY(E, n, N, k, ga, gb) case OpKind::E:
#define TESSERA_COMPARE(E, n, N, k) case OpKind::E:
#include "tessera/ops/Elementwise.def"
    return binary(kind, in, types[0]);
  case OpKind::UNARY_GRAD:
  case OpKind::BINARY_GRAD:
    return interpretElementwiseGrad(kind, attrs, in, types);
  case OpKind::MATMUL:
    return matmul(in, types[0]);
  case OpKind::RESHAPE:
  case OpKind::CROSS_REPLICA_SUM: // the interpreter runs one replica
  case OpKind::CROSS_REPLICA_MEAN:
    return {{types[0].dtype, types[0].shape, in[0]->values}};
  case OpKind::TRANSPOSE:
    return transpose(attrs, in, types[0]);
  case OpKind::BROADCAST:
    return broadcast(in, types[0]);
  case OpKind::REDUCE_SUM:
  case OpKind::REDUCE_MEAN:
  case OpKind::REDUCE_MAX:
    return reduce(kind, attrs, in, types[0]);
  case OpKind::CONCAT:
  case OpKind::SLICE:
  case OpKind::PAD:
    return dataMovement(kind, attrs, in, types[0]);
  case OpKind::CAST: {
    HostValue r{types[0].dtype, types[0].shape, in[0]->values};
    roundToType(r);
    return {r};
  }
  case OpKind::GATHER:
    return gather(in, types[0]);
  case OpKind::GATHER_GRAD:
    return gatherGrad(in, types[0]);
  case OpKind::CONV2D:
  case OpKind::CONV2D_BACKPROP_INPUT:
  case OpKind::CONV2D_BACKPROP_FILTER:
    return interpretConv(kind, attrs, in, types[0]);
  case OpKind::MAX_POOL:
  case OpKind::AVG_POOL:
  case OpKind::MAX_POOL_GRAD:
  case OpKind::AVG_POOL_GRAD:
    return interpretPool(kind, attrs, in, types[0]);
  case OpKind::SOFTMAX:
  case OpKind::LOG_SOFTMAX:
    return interpretSoftmax(kind, in, types[0]);
  case OpKind::SOFTMAX_GRAD:
  case OpKind::LOG_SOFTMAX_GRAD:
    return interpretSoftmaxGrad(kind, in, types[0]);
  case OpKind::DROPOUT:
    return interpretDropout(attrs, in, types[0]);
  case OpKind::BATCH_NORM:
  case OpKind::LAYER_NORM:
    return interpretNorm(kind, attrs, in, types);
  case OpKind::BATCH_NORM_GRAD:
  case OpKind::LAYER_NORM_GRAD:
    return interpretNormGrad(kind, in, types);
  case OpKind::SPARSE_SOFTMAX_CROSS_ENTROPY:
  case OpKind::SPARSE_SOFTMAX_CROSS_ENTROPY_GRAD:
  case OpKind::ACCURACY:
    return interpretLabelled(kind, in, types[0]);
  case OpKind::CATEGORICAL_CROSS_ENTROPY:
  case OpKind::MEAN_SQUARED_ERROR:
    return interpretRowLoss(kind, in, types[0]);
  case OpKind::ARGMAX:
    return interpretArgmax(in, types[0]);
  }
  TESSERA_INTERNAL_ASSERT(false, "op kind out of range: " +
                                     std::to_string(unsigned(kind)));
}

// ---- The driver ------------------------------------------------------------

const HostValue &Evaluation::at(ValueId id) const {
  TESSERA_INTERNAL_ASSERT(module_ != nullptr, "an empty evaluation");
  if (id >= values_.size())
    throw IrError("%" + std::to_string(id) +
                  " is not a value of the interpreted module");
  return values_[id];
}

const HostValue &Evaluation::operator[](const Value &v) const {
  if (&v.module() != module_)
    throw IrError("the value " + v.module().describe(v.id()) +
                  " belongs to another module than the one interpreted");
  return at(v.id());
}

const HostValue &Evaluation::output(std::string_view name) const {
  return at(module_->output(name));
}

namespace {

HostValue fed(const Module &m, ValueId id, const HostValue &feed) {
  const ValueType &t = m.typeOf(id);
  const std::string who = "feed for " + m.describe(id);
  if (feed.dtype != t.dtype)
    throw TypeError(who + " has type " + std::string(dtypeName(feed.dtype)) +
                    " but the value is " + t.toString());
  if (feed.shape != t.shape || feed.values.size() != t.numElements())
    throw ShapeError(who + " has shape " + shapeToString(feed.shape) + " and " +
                     std::to_string(feed.values.size()) +
                     " values but the value is " + t.toString());
  return feed;
}

void setLeaves(const Module &m, const Feeds &feeds,
               std::vector<HostValue> &values) {
  for (const auto &[name, value] : feeds) {
    std::optional<ValueId> id = m.findValue(name);
    if (!id || (m.value(*id).kind != ValueKind::Input &&
                m.value(*id).kind != ValueKind::Variable))
      throw IrError("feed '" + name +
                    "' names no input or variable of the "
                    "module");
    values[*id] = fed(m, *id, value);
  }
  for (ValueId id : m.inputs())
    if (!feeds.count(m.value(id).name))
      throw IrError("input " + m.describe(id) +
                    " has no feed; give a value for every input");
  for (const Variable &v : m.variables()) {
    if (feeds.count(m.value(v.value).name))
      continue;
    const ValueType &t = m.typeOf(v.value);
    values[v.value] = {t.dtype, t.shape, materialise(v.init, t.dtype, t.shape)};
  }
  for (const Constant &c : m.constants()) {
    const ValueType &t = m.typeOf(c.value);
    std::vector<double> data = c.data;
    if (data.size() == 1)
      data.assign(t.numElements(), data[0]);
    values[c.value] = {t.dtype, t.shape, std::move(data)};
  }
}

} // namespace

Evaluation interpret(const Module &module, const Feeds &feeds) {
  Evaluation e;
  e.module_ = &module;
  e.values_.resize(module.numValues());
  setLeaves(module, feeds, e.values_);
  for (const Op &op : module.ops()) {
    Operands in;
    for (ValueId v : op.operands)
      in.push_back(&e.values_[v]);
    std::vector<ValueType> types;
    for (ValueId r : op.results)
      types.push_back(module.typeOf(r));
    std::vector<HostValue> out = interpretOp(op.kind, op.attrs, in, types);
    for (std::size_t i = 0; i < out.size(); ++i)
      e.values_[op.results[i]] = std::move(out[i]);
  }
  return e;
}

Feeds variablesAfterRun(const Module &module, const Evaluation &e,
                        Feeds before) {
  const auto c = module.updateCondition();
  const bool apply = !c || e.at(*c).values.at(0) != 0;
  for (const VariableRecord &r : module.updates()) {
    const ValueInfo &next = module.value(r.value);
    if (!apply && next.kind == ValueKind::OpResult &&
        module.producer(r.value).annotations.weightUpdate)
      continue;
    before[module.value(r.variable).name] = e.at(r.value);
  }
  if (apply && c)
    for (ValueId v : module.resets()) {
      const ValueType &t = module.typeOf(v);
      before[module.value(v).name] = {
          t.dtype, t.shape, std::vector<double>(numElements(t.shape), 0.0)};
    }
  return before;
}

} // namespace tessera::ir
