// Shape and type inference for every op kind: the single definition of
// what an operation accepts, used when building, parsing and verifying.
#include "InferContext.hpp"

#include "tessera/ir/OpAttrs.hpp"

#include <algorithm>
#include <numeric>

namespace tessera::ir {
namespace detail {

std::string InferContext::describe(std::size_t i) const {
  const std::string who = i < names.size() && !names[i].empty()
                              ? names[i]
                              : "operand " + std::to_string(i);
  return who + " " + in[i].toString();
}

void InferContext::shapeError(const std::string &msg) const {
  throw ShapeError(op() + ": " + msg);
}
void InferContext::typeError(const std::string &msg) const {
  throw TypeError(op() + ": " + msg);
}
void InferContext::attrError(const std::string &msg) const {
  throw IrError(op() + ": " + msg);
}

// Attribute errors carry no op context of their own: add it here.
#define TESSERA_WITH_OP(expr)                                                  \
  try {                                                                        \
    return expr;                                                               \
  } catch (const IrError &e) {                                                 \
    attrError(e.what());                                                       \
  }

std::int64_t InferContext::getInt(const char *name) const {
  TESSERA_WITH_OP(attrs.getInt(name))
}
double InferContext::getFloat(const char *name) const {
  TESSERA_WITH_OP(attrs.getFloat(name))
}
const std::string &InferContext::getString(const char *name)
    const {TESSERA_WITH_OP(attrs.getString(name))} std::vector<
        std::int64_t> InferContext::getInts(const char *name) const {
        TESSERA_WITH_OP(attrs.getInts(name))}
#undef TESSERA_WITH_OP

std::vector<std::size_t> InferContext::getSizes(const char *name,
                                                std::size_t count,
                                                std::size_t min) const {
  const std::vector<std::int64_t> v = getInts(name);
  if (v.size() != count)
    attrError("attribute '" + std::string(name) + "' has " +
              std::to_string(v.size()) + " elements; it needs " +
              std::to_string(count));
  std::vector<std::size_t> out;
  for (std::int64_t x : v) {
    if (x < static_cast<std::int64_t>(min))
      attrError("attribute '" + std::string(name) + "' holds " +
                std::to_string(x) + "; each element must be at least " +
                std::to_string(min));
    out.push_back(static_cast<std::size_t>(x));
  }
  return out;
}

void InferContext::requireFloat(std::size_t i) const {
  if (!isFloatingPoint(dtype(i)))
    typeError(describe(i) + " must be float or half; cast it first");
}

void InferContext::requireIndex(std::size_t i) const {
  if (dtype(i) != INT && dtype(i) != UNSIGNED_INT)
    typeError(describe(i) + " must hold indices (int or uint)");
}

void InferContext::requireRank(std::size_t i, std::size_t rank) const {
  if (in[i].rank() != rank)
    shapeError(describe(i) + " must have rank " + std::to_string(rank));
}

void InferContext::requireSameType(std::size_t i, std::size_t j) const {
  if (dtype(i) != dtype(j))
    typeError(describe(i) + " and " + describe(j) +
              " must have the same type; cast one of them");
}

void InferContext::requireSameShape(std::size_t i, std::size_t j) const {
  if (shape(i) != shape(j))
    shapeError(describe(i) + " and " + describe(j) +
               " must have the same shape");
}

std::size_t InferContext::axis(std::int64_t a, std::size_t rank) const {
  const auto r = static_cast<std::int64_t>(rank);
  if (a < -r || a >= r)
    attrError("axis " + std::to_string(a) + " is out of range for rank " +
              std::to_string(rank) + " (use " + std::to_string(-r) + " to " +
              std::to_string(r - 1) + ")");
  return static_cast<std::size_t>(a < 0 ? a + r : a);
}

std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::size_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::size_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

} // namespace detail

namespace {

using detail::InferContext;
using Types = std::vector<ValueType>;

bool mapType(Type t) {
  return t == FLOAT || t == HALF || t == INT || t == UNSIGNED_INT || t == BOOL;
}

Types inferUnary(const InferContext &c, bool predicate) {
  if (!mapType(c.dtype(0)))
    c.typeError(c.describe(0) + " has a type elementwise operations do not "
                                "take (float, half, int, uint, bool)");
  return {{predicate ? BOOL : c.dtype(0), c.shape(0)}};
}

Types inferBinary(const InferContext &c, bool compare) {
  if (!mapType(c.dtype(0)))
    c.typeError(c.describe(0) + " has a type elementwise operations do not "
                                "take (float, half, int, uint, bool)");
  c.requireSameType(0, 1);
  std::optional<Shape> s = detail::broadcastShapes(c.shape(0), c.shape(1));
  if (!s)
    c.shapeError(c.describe(0) + " and " + c.describe(1) +
                 " do not broadcast: trailing dimensions must be equal or 1");
  return {{compare ? BOOL : c.dtype(0), *s}};
}

Types inferMatmul(const InferContext &c) {
  c.requireFloat(0);
  c.requireSameType(0, 1);
  const Shape &a = c.shape(0), &b = c.shape(1);
  if (a.size() != b.size() || (a.size() != 2 && a.size() != 3))
    c.shapeError(c.describe(0) + " and " + c.describe(1) +
                 " must both be matrices [m, k] x [k, n] or both batches "
                 "[g, m, k] x [g, k, n]");
  const std::size_t r = a.size();
  if (a[r - 1] != b[r - 2])
    c.shapeError(c.describe(0) + " has " + std::to_string(a[r - 1]) +
                 " columns but " + c.describe(1) + " has " +
                 std::to_string(b[r - 2]) + " rows");
  if (r == 3 && a[0] != b[0])
    c.shapeError(c.describe(0) + " has " + std::to_string(a[0]) +
                 " groups but " + c.describe(1) + " has " +
                 std::to_string(b[0]));
  Shape out = a;
  out[r - 1] = b[r - 1];
  return {{c.dtype(0), out}};
}

Types inferReshape(const InferContext &c) {
  Shape s = c.getSizes("shape", c.getInts("shape").size(), 0);
  if (numElements(s) != c.in[0].numElements())
    c.shapeError("cannot reshape " + c.describe(0) + " (" +
                 std::to_string(c.in[0].numElements()) + " elements) to " +
                 shapeToString(s) + " (" + std::to_string(numElements(s)) +
                 " elements)");
  return {{c.dtype(0), s}};
}

Types inferTranspose(const InferContext &c) {
  const std::size_t r = c.in[0].rank();
  const std::vector<std::int64_t> perm = c.getInts("perm");
  if (perm.size() != r)
    c.attrError("perm has " + std::to_string(perm.size()) + " elements but " +
                c.describe(0) + " has rank " + std::to_string(r));
  std::vector<bool> seen(r);
  Shape out(r);
  for (std::size_t i = 0; i < r; ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<std::int64_t>(r) || seen[perm[i]])
      c.attrError("perm must be a permutation of 0.." + std::to_string(r - 1));
    seen[perm[i]] = true;
    out[i] = c.shape(0)[perm[i]];
  }
  return {{c.dtype(0), out}};
}

Types inferBroadcast(const InferContext &c) {
  Shape target = c.getSizes("shape", c.getInts("shape").size(), 0);
  std::optional<Shape> s = detail::broadcastShapes(c.shape(0), target);
  if (!s || *s != target)
    c.shapeError(c.describe(0) + " does not broadcast to " +
                 shapeToString(target));
  return {{c.dtype(0), target}};
}

Types inferReduce(const InferContext &c) {
  const std::size_t r = c.in[0].rank();
  if (c.kind == OpKind::REDUCE_MEAN)
    c.requireFloat(0);
  else if (!mapType(c.dtype(0)) || c.dtype(0) == BOOL)
    c.typeError(c.describe(0) + " must be float, half, int or uint");
  const ReduceAttrs attrs = c.decode(decodeReduceAttrs);
  std::vector<bool> listed(r, false);
  for (std::int64_t a : attrs.axes) {
    const std::size_t ax = c.axis(a, r);
    if (listed[ax])
      c.attrError("axis " + std::to_string(a) + " is listed twice");
    listed[ax] = true;
  }
  const std::vector<bool> reduced = attrs.reducedDims(r);
  const bool keep = attrs.keepDims;
  Shape out;
  for (std::size_t i = 0; i < r; ++i)
    if (!reduced[i])
      out.push_back(c.shape(0)[i]);
    else if (keep)
      out.push_back(1);
  return {{c.dtype(0), out}};
}

Types inferConcat(const InferContext &c) {
  const std::size_t r = c.in[0].rank();
  if (r == 0)
    c.shapeError("cannot concatenate scalars; reshape them to [1] first");
  const std::size_t ax = c.axis(c.getInt("axis"), r);
  Shape out = c.shape(0);
  for (std::size_t i = 1; i < c.in.size(); ++i) {
    c.requireSameType(0, i);
    bool ok = c.in[i].rank() == r;
    for (std::size_t d = 0; ok && d < r; ++d)
      ok = d == ax || c.shape(i)[d] == out[d];
    if (!ok)
      c.shapeError(c.describe(i) + " does not match " + c.describe(0) +
                   " in every dimension but the concatenated one (" +
                   std::to_string(ax) + ")");
    out[ax] += c.shape(i)[ax];
  }
  return {{c.dtype(0), out}};
}

Types inferSlice(const InferContext &c) {
  const std::size_t r = c.in[0].rank();
  const Shape b = c.getSizes("begin", r, 0), e = c.getSizes("end", r, 0);
  Shape out(r);
  for (std::size_t d = 0; d < r; ++d) {
    if (b[d] > e[d] || e[d] > c.shape(0)[d])
      c.shapeError("slice [" + std::to_string(b[d]) + ", " +
                   std::to_string(e[d]) + ") of dimension " +
                   std::to_string(d) + " of " + c.describe(0) +
                   " is not within [0, " + std::to_string(c.shape(0)[d]) + "]");
    out[d] = e[d] - b[d];
  }
  return {{c.dtype(0), out}};
}

Types inferPad(const InferContext &c) {
  const std::size_t r = c.in[0].rank();
  const Shape lo = c.getSizes("lower", r, 0), hi = c.getSizes("upper", r, 0);
  Shape out(r);
  for (std::size_t d = 0; d < r; ++d)
    out[d] = c.shape(0)[d] + lo[d] + hi[d];
  return {{c.dtype(0), out}};
}

Types inferCast(const InferContext &c) {
  const std::string &name = c.getString("dtype");
  std::optional<Type> t = dtypeFromName(name);
  if (!t)
    c.attrError("dtype \"" + name +
                "\" is not a type (float, half, int, "
                "uint, bool, ...)");
  if (!mapType(*t) || !mapType(c.dtype(0)))
    c.typeError("casts are between float, half, int, uint and bool; " +
                c.describe(0) + " to " + name + " is not");
  return {{*t, c.shape(0)}};
}

Types inferCrossReplica(const InferContext &c, bool mean) {
  if (mean ? !isFloatingPoint(c.dtype(0)) : !mapType(c.dtype(0)))
    c.typeError(c.describe(0) + (mean ? " must be float or half to average "
                                        "it over replicas"
                                      : " must be float, half, int or uint "
                                        "to sum it over replicas"));
  return {{c.dtype(0), c.shape(0)}};
}

Types inferGather(const InferContext &c) {
  if (c.in[0].rank() < 1)
    c.shapeError(c.describe(0) + " must have at least one dimension");
  c.requireFloat(0);
  c.requireIndex(1);
  Shape out = c.shape(1);
  out.insert(out.end(), c.shape(0).begin() + 1, c.shape(0).end());
  return {{c.dtype(0), out}};
}

Types inferGatherGrad(const InferContext &c) {
  c.requireFloat(0);
  c.requireIndex(1);
  const Shape &dy = c.shape(0), &idx = c.shape(1);
  if (dy.size() < idx.size() || !std::equal(idx.begin(), idx.end(), dy.begin()))
    c.shapeError(c.describe(0) + " must start with the shape of " +
                 c.describe(1));
  const std::int64_t rows = c.getInt("numRows");
  if (rows < 1)
    c.attrError("numRows must be at least 1");
  Shape out{static_cast<std::size_t>(rows)};
  out.insert(out.end(), dy.begin() + idx.size(), dy.end());
  return {{c.dtype(0), out}};
}

} // namespace

// One case per kind and no default: a kind added to OpKinds.def or
// Elementwise.def without shape inference fails to compile (-Wswitch).
std::vector<ValueType> inferResultTypes(OpKind kind,
                                        const std::vector<ValueType> &operands,
                                        const Attributes &attrs,
                                        const std::vector<std::string> &names) {
  using namespace detail;
  const InferContext c{kind, operands, attrs, names};
  switch (kind) {
#define TESSERA_UNARY(E, n, N, k, g) case OpKind::E:
#define TESSERA_PREDICATE(E, n, N, k) case OpKind::E:
#include "tessera/ops/Elementwise.def"
    return inferUnary(c, opClass(kind) == OpClass::Predicate);
#define TESSERA_BINARY(E, n, N, k, ga, gb) case OpKind::E:
#define TESSERA_COMPARE(E, n, N, k) case OpKind::E:
#include "tessera/ops/Elementwise.def"
    return inferBinary(c, opClass(kind) == OpClass::Compare);
  case OpKind::UNARY_GRAD:
  case OpKind::BINARY_GRAD:
    return inferElementwiseGrad(c);
  case OpKind::MATMUL:
    return inferMatmul(c);
  case OpKind::RESHAPE:
    return inferReshape(c);
  case OpKind::TRANSPOSE:
    return inferTranspose(c);
  case OpKind::BROADCAST:
    return inferBroadcast(c);
  case OpKind::CONCAT:
    return inferConcat(c);
  case OpKind::SLICE:
    return inferSlice(c);
  case OpKind::PAD:
    return inferPad(c);
  case OpKind::CAST:
    return inferCast(c);
  case OpKind::REDUCE_SUM:
  case OpKind::REDUCE_MEAN:
  case OpKind::REDUCE_MAX:
    return inferReduce(c);
  case OpKind::GATHER:
    return inferGather(c);
  case OpKind::GATHER_GRAD:
    return inferGatherGrad(c);
  case OpKind::CROSS_REPLICA_SUM:
  case OpKind::CROSS_REPLICA_MEAN:
    return inferCrossReplica(c, c.kind == OpKind::CROSS_REPLICA_MEAN);
  case OpKind::CONV2D:
  case OpKind::CONV2D_BACKPROP_INPUT:
  case OpKind::CONV2D_BACKPROP_FILTER:
    return inferConv(c);
  case OpKind::MAX_POOL:
  case OpKind::AVG_POOL:
  case OpKind::MAX_POOL_GRAD:
  case OpKind::AVG_POOL_GRAD:
    return inferPool(c);
  case OpKind::SOFTMAX:
  case OpKind::LOG_SOFTMAX:
  case OpKind::SOFTMAX_GRAD:
  case OpKind::LOG_SOFTMAX_GRAD:
    return inferSoftmax(c);
  case OpKind::DROPOUT:
    return inferDropout(c);
  case OpKind::BATCH_NORM:
  case OpKind::LAYER_NORM:
  case OpKind::BATCH_NORM_GRAD:
  case OpKind::LAYER_NORM_GRAD:
    return inferNorm(c);
  case OpKind::SPARSE_SOFTMAX_CROSS_ENTROPY:
  case OpKind::SPARSE_SOFTMAX_CROSS_ENTROPY_GRAD:
  case OpKind::ACCURACY:
    return inferLabelled(c);
  case OpKind::CATEGORICAL_CROSS_ENTROPY:
  case OpKind::MEAN_SQUARED_ERROR:
    return inferRowLoss(c);
  case OpKind::ARGMAX:
    return inferArgmax(c);
  }
  TESSERA_INTERNAL_ASSERT(false, "op kind out of range: " +
                                     std::to_string(unsigned(kind)));
}

} // namespace tessera::ir
