// Converters of ONNX's elementwise, shape and data-movement operators.
// They work on slots, so whatever is known at import (constants,
// initializers, shapes) folds on the host through Context::apply.
#include "ImporterInternal.hpp"

#include <algorithm>
#include <limits>

namespace tessera::onnx::detail {

namespace {

using ir::OpKind;

ir::Attributes shapeAttr(const ir::Shape &s) { return {{"shape", toInts(s)}}; }

Slot reshapeSlot(Context &ctx, Slot x, const ir::Shape &s) {
  return ctx.apply(OpKind::RESHAPE, {std::move(x)}, shapeAttr(s));
}

template <OpKind K> void binary(Context &ctx) {
  ctx.out(0, ctx.apply(K, {ctx.in(0), ctx.in(1)}));
}

// Sum, Max and Min take any number of inputs.
template <OpKind K> void variadic(Context &ctx) {
  Slot acc = ctx.in(0);
  for (int i = 1; i < ctx.node().input_size(); ++i)
    acc = ctx.apply(K, {acc, ctx.in(i)});
  ctx.out(0, acc);
}

void reshape(Context &ctx) {
  const ir::Shape in = ctx.typeOf(0).shape;
  std::vector<std::int64_t> target = ctx.knownInts(1, "target shape");
  const bool allowZero = ctx.attrInt("allowzero", 0) != 0;
  std::optional<std::size_t> infer;
  std::size_t known = 1;
  ir::Shape out;
  for (std::size_t d = 0; d < target.size(); ++d) {
    std::int64_t v = target[d];
    if (v == 0 && !allowZero) {
      if (d >= in.size())
        ctx.shapeError("target dimension " + std::to_string(d) +
                       " copies an input dimension the input lacks");
      v = static_cast<std::int64_t>(in[d]);
    }
    if (v == -1) {
      if (infer)
        ctx.shapeError("the target shape has two -1 dimensions");
      infer = d;
      out.push_back(1);
      continue;
    }
    if (v < 0 || static_cast<std::uint64_t>(v) > ctx.maxElements())
      ctx.shapeError("target dimension " + std::to_string(v) + " is invalid");
    out.push_back(static_cast<std::size_t>(v));
    known *= std::max<std::size_t>(out.back(), 1);
  }
  if (infer) {
    const std::size_t n = ir::numElements(in);
    if (known == 0 || n % known != 0)
      ctx.shapeError("cannot reshape " + ir::shapeToString(in) + " to " +
                     std::to_string(target.size()) + " dimensions");
    out[*infer] = n / known;
  }
  ctx.out(0, reshapeSlot(ctx, ctx.in(0), out));
}

void flatten(Context &ctx) {
  const ir::Shape in = ctx.typeOf(0).shape;
  const std::int64_t a = ctx.attrInt("axis", 1);
  const std::size_t axis = a == static_cast<std::int64_t>(in.size())
                               ? in.size()
                               : ctx.axis(a, in.size());
  const std::size_t outer =
      ir::numElements(ir::Shape(in.begin(), in.begin() + std::ptrdiff_t(axis)));
  ctx.out(0, reshapeSlot(ctx, ctx.in(0),
                         {outer, ir::numElements(in) /
                                     std::max<std::size_t>(outer, 1)}));
}

void transpose(Context &ctx) {
  std::vector<std::int64_t> perm =
      ctx.attrInts("perm").value_or(std::vector<std::int64_t>{});
  ctx.out(0, ctx.apply(OpKind::TRANSPOSE, {ctx.in(0)}, {{"perm", perm}}));
}

void concat(Context &ctx) {
  std::vector<Slot> xs{ctx.in(0)}; // in() names a missing first input
  for (int i = 1; i < ctx.node().input_size(); ++i)
    xs.push_back(ctx.in(i));
  const std::size_t axis =
      ctx.axis(ctx.attrInt("axis", 0), xs.at(0).type().rank());
  ctx.out(0, ctx.apply(OpKind::CONCAT, std::move(xs),
                       {{"axis", static_cast<std::int64_t>(axis)}}));
}

void slice(Context &ctx) {
  const ir::Shape in = ctx.typeOf(0).shape;
  std::vector<std::int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.attrInts("starts").value_or(starts);
    ends = ctx.attrInts("ends").value_or(ends);
    axes = ctx.attrInts("axes").value_or(axes);
  } else {
    starts = ctx.knownInts(1, "starts");
    ends = ctx.knownInts(2, "ends");
    if (ctx.has(3))
      axes = ctx.knownInts(3, "axes");
    if (ctx.has(4))
      steps = ctx.knownInts(4, "steps");
  }
  if (axes.empty())
    for (std::size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<std::int64_t>(i));
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      (!steps.empty() && steps.size() != starts.size()))
    ctx.shapeError("starts, ends, axes and steps differ in length");
  if (std::any_of(steps.begin(), steps.end(), [](auto s) { return s != 1; }))
    ctx.unsupported("Slice with steps other than 1 is not supported");
  ir::Shape begin(in.size(), 0), end = in;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const std::size_t a = ctx.axis(axes[i], in.size());
    const auto dim = static_cast<std::int64_t>(in[a]);
    auto clampIndex = [dim](std::int64_t v) {
      if (v < 0)
        v = v < -dim ? 0 : v + dim;
      return std::min(v, dim);
    };
    const std::int64_t b = clampIndex(starts[i]), e = clampIndex(ends[i]);
    if (e <= b)
      ctx.unsupported("the slice of axis " + std::to_string(a) +
                      " is empty; empty tensors are not supported");
    begin[a] = static_cast<std::size_t>(b);
    end[a] = static_cast<std::size_t>(e);
  }
  ctx.out(0, ctx.apply(OpKind::SLICE, {ctx.in(0)},
                       {{"begin", toInts(begin)}, {"end", toInts(end)}}));
}

// Gather of known values (shape arithmetic, of any type) on the host.
Slot gatherKnown(Context &ctx, const ir::HostValue &data, std::size_t axis,
                 const ir::HostValue &indices) {
  const ir::Shape &ds = data.shape;
  const std::size_t outer =
      ir::numElements(ir::Shape(ds.begin(), ds.begin() + std::ptrdiff_t(axis)));
  const std::size_t inner = ir::numElements(
      ir::Shape(ds.begin() + std::ptrdiff_t(axis) + 1, ds.end()));
  const std::size_t rows = ds[axis];
  ir::Shape shape(ds.begin(), ds.begin() + std::ptrdiff_t(axis));
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), ds.begin() + std::ptrdiff_t(axis) + 1, ds.end());
  std::vector<double> out;
  out.reserve(ir::numElements(shape));
  for (std::size_t o = 0; o < outer; ++o)
    for (double v : indices.values) {
      if (v < 0 || v >= double(rows))
        ctx.shapeError("index " + std::to_string(v) + " is outside [0, " +
                       std::to_string(rows) + ")");
      const std::size_t base = (o * rows + std::size_t(v)) * inner;
      out.insert(out.end(), data.values.begin() + std::ptrdiff_t(base),
                 data.values.begin() + std::ptrdiff_t(base + inner));
    }
  return Context::knownSlot(data.dtype, std::move(shape), std::move(out));
}

// Gather along any axis: the IR gathers rows (axis 0), so other axes are
// moved to the front and the result's dimensions put back in ONNX's order.
void gather(Context &ctx) {
  const ir::Shape data = ctx.typeOf(0).shape;
  const std::size_t axis = ctx.axis(ctx.attrInt("axis", 0), data.size());
  Slot indices = ctx.in(1);
  if (indices.known) {
    for (double &v : indices.known->values) // negative indices count back
      if (v < 0)
        v += static_cast<double>(data[axis]);
    indices.value = {};
  }
  if (indices.known && ctx.in(0).known) {
    ctx.out(0, gatherKnown(ctx, *ctx.in(0).known, axis, *indices.known));
    return;
  }
  std::vector<std::int64_t> front{static_cast<std::int64_t>(axis)};
  for (std::size_t d = 0; d < data.size(); ++d)
    if (d != axis)
      front.push_back(static_cast<std::int64_t>(d));
  Slot table = ctx.in(0);
  if (axis != 0)
    table = ctx.apply(OpKind::TRANSPOSE, {table}, {{"perm", front}});
  const std::size_t ri = indices.type().rank();
  Slot y = ctx.apply(OpKind::GATHER, {table, indices});
  if (axis != 0) {
    const auto a = static_cast<std::int64_t>(axis);
    const auto r = static_cast<std::int64_t>(ri);
    std::vector<std::int64_t> perm;
    for (std::int64_t d = 0; d < a; ++d)
      perm.push_back(r + d);
    for (std::int64_t d = 0; d < r; ++d)
      perm.push_back(d);
    for (auto d = r + a; d < static_cast<std::int64_t>(y.type().rank()); ++d)
      perm.push_back(d);
    y = ctx.apply(OpKind::TRANSPOSE, {y}, {{"perm", perm}});
  }
  ctx.out(0, y);
}

std::vector<std::int64_t> axesOf(Context &ctx, int input, int sinceOpset) {
  if (ctx.opset() >= sinceOpset)
    return ctx.has(input) ? ctx.knownInts(input, "axes")
                          : std::vector<std::int64_t>{};
  return ctx.attrInts("axes").value_or(std::vector<std::int64_t>{});
}

void squeeze(Context &ctx) {
  const ir::Shape in = ctx.typeOf(0).shape;
  std::vector<bool> drop(in.size(), false);
  const auto axes = axesOf(ctx, 1, 13);
  for (std::int64_t a : axes) {
    const std::size_t d = ctx.axis(a, in.size());
    if (in[d] != 1)
      ctx.shapeError("cannot squeeze axis " + std::to_string(d) + " of " +
                     ir::shapeToString(in) + ": its size is not 1");
    drop[d] = true;
  }
  ir::Shape out;
  for (std::size_t d = 0; d < in.size(); ++d)
    if (!(axes.empty() ? in[d] == 1 : drop[d]))
      out.push_back(in[d]);
  ctx.out(0, reshapeSlot(ctx, ctx.in(0), out));
}

void unsqueeze(Context &ctx) {
  const ir::Shape in = ctx.typeOf(0).shape;
  const auto axes = axesOf(ctx, 1, 13);
  const std::size_t rank = in.size() + axes.size();
  std::vector<bool> added(rank, false);
  for (std::int64_t a : axes)
    added[ctx.axis(a, rank)] = true;
  ir::Shape out;
  for (std::size_t d = 0, i = 0; d < rank; ++d)
    out.push_back(added[d] ? 1 : in.at(i++));
  ctx.out(0, reshapeSlot(ctx, ctx.in(0), out));
}

template <OpKind K> void reduce(Context &ctx) {
  // ReduceSum takes its axes as an input from opset 13, the others from 18.
  const int since = K == OpKind::REDUCE_SUM ? 13 : 18;
  const std::size_t rank = ctx.typeOf(0).rank();
  std::vector<std::int64_t> axes;
  for (std::int64_t a : axesOf(ctx, 1, since))
    axes.push_back(static_cast<std::int64_t>(ctx.axis(a, rank)));
  if (axes.empty() && ctx.attrInt("noop_with_empty_axes", 0)) {
    ctx.out(0, ctx.in(0));
    return;
  }
  const bool keep = ctx.attrInt("keepdims", 1) != 0;
  ctx.out(0, ctx.apply(K, {ctx.in(0)},
                       {{"axes", axes}, {"keepDims", std::int64_t(keep)}}));
}

void constant(Context &ctx) {
  const std::string what = ctx.where() + "'s value";
  if (const auto *a = ctx.attr("value")) {
    ctx.out(0, Slot{{}, tensorValue(a->t(), ctx.maxElements(), what)});
  } else if (const auto *f = ctx.attr("value_float")) {
    ctx.out(0, Context::knownSlot(FLOAT, {}, {f->f()}));
  } else if (const auto *i = ctx.attr("value_int")) {
    ctx.out(0, Context::knownSlot(INT, {}, {double(i->i())}));
  } else if (const auto *fs = ctx.attr("value_floats")) {
    std::vector<double> v(fs->floats().begin(), fs->floats().end());
    ctx.out(0, Context::knownSlot(FLOAT, {v.size()}, v));
  } else if (const auto *is = ctx.attr("value_ints")) {
    std::vector<double> v(is->ints().begin(), is->ints().end());
    ctx.out(0, Context::knownSlot(INT, {v.size()}, v));
  } else {
    ctx.unsupported("only value, value_float(s) and value_int(s) constants "
                    "are supported");
  }
}

void shape(Context &ctx) {
  const ir::Shape in = ctx.typeOf(0).shape;
  const auto rank = static_cast<std::int64_t>(in.size());
  auto clampIndex = [rank](std::int64_t v) {
    return std::clamp<std::int64_t>(v < 0 ? v + rank : v, 0, rank);
  };
  const std::int64_t start = clampIndex(ctx.attrInt("start", 0));
  const std::int64_t end = clampIndex(ctx.attrInt("end", rank));
  std::vector<double> dims;
  for (std::int64_t d = start; d < end; ++d)
    dims.push_back(double(in[static_cast<std::size_t>(d)]));
  ctx.out(0, Context::knownSlot(INT, {dims.size()}, dims));
}

void size(Context &ctx) {
  ctx.out(0,
          Context::knownSlot(INT, {}, {double(ctx.typeOf(0).numElements())}));
}

void cast(Context &ctx) {
  const Type to = elementType(static_cast<std::int32_t>(ctx.attrInt("to", 1)),
                              ctx.where() + "'s target");
  Slot x = ctx.in(0);
  if (x.type().dtype == to) {
    ctx.out(0, x);
    return;
  }
  ctx.out(0, ctx.apply(OpKind::CAST, {x},
                       {{"dtype", std::string(ir::dtypeName(to))}}));
}

void pad(Context &ctx) {
  const std::string mode = ctx.attrString("mode", "constant");
  if (mode != "constant")
    ctx.unsupported("Pad mode '" + mode +
                    "' is not supported (only "
                    "'constant' with value 0)");
  const std::size_t rank = ctx.typeOf(0).rank();
  std::vector<std::int64_t> pads;
  double value = 0;
  if (ctx.opset() < 11) {
    pads = ctx.attrInts("pads").value_or(pads);
    value = ctx.attrFloat("value", 0);
  } else {
    pads = ctx.knownInts(1, "pads");
    if (ctx.has(2))
      value = ctx.known(2, "constant value").values.at(0);
  }
  if (value != 0)
    ctx.unsupported("padding with " + std::to_string(value) +
                    " is not supported (only zeros)");
  if (pads.size() != 2 * rank ||
      std::any_of(pads.begin(), pads.end(),
                  [](auto p) { return p < 0 || p > kMaxAttributeSize; }))
    ctx.unsupported("pads must hold 2 x rank (" + std::to_string(2 * rank) +
                    ") numbers in [0, 2^24]");
  std::vector<std::int64_t> lower(pads.begin(), pads.begin() + long(rank));
  std::vector<std::int64_t> upper(pads.begin() + long(rank), pads.end());
  ctx.out(0, ctx.apply(OpKind::PAD, {ctx.in(0)},
                       {{"lower", lower}, {"upper", upper}}));
}

void constantOfShape(Context &ctx) {
  std::vector<std::int64_t> dims = ctx.knownInts(0, "shape");
  ir::Shape s;
  std::size_t n = 1;
  for (std::int64_t d : dims) {
    if (d <= 0 || static_cast<std::uint64_t>(d) > ctx.maxElements() / n)
      ctx.shapeError("shape dimension " + std::to_string(d) +
                     " is not positive or makes too many elements");
    n *= static_cast<std::size_t>(d);
    s.push_back(static_cast<std::size_t>(d));
  }
  ir::HostValue v{FLOAT, {}, {0.0}};
  if (const auto *a = ctx.attr("value"))
    v = tensorValue(a->t(), 1, ctx.where() + "'s value");
  ctx.out(0, Context::knownSlot(v.dtype, s,
                                std::vector<double>(n, v.values.at(0))));
}

void expand(Context &ctx) {
  const ir::Shape in = ctx.typeOf(0).shape;
  std::vector<std::int64_t> to = ctx.knownInts(1, "shape");
  const std::size_t rank = std::max(in.size(), to.size());
  ir::Shape out(rank, 1);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::size_t a = i + in.size() >= rank ? in[i + in.size() - rank] : 1;
    const std::int64_t b = i + to.size() >= rank ? to[i + to.size() - rank] : 1;
    if (b <= 0 || (a != 1 && b != 1 && std::size_t(b) != a))
      ctx.shapeError("cannot expand " + ir::shapeToString(in) + " by " +
                     std::to_string(b) + " in dimension " + std::to_string(i));
    out[i] = a == 1 ? std::size_t(b) : a;
  }
  ctx.out(0, ctx.apply(OpKind::BROADCAST, {ctx.in(0)}, shapeAttr(out)));
}

} // namespace

void addShapeConverters(std::map<std::string, Converter, std::less<>> &t) {
  t["Add"] = binary<OpKind::ADD>;
  t["Sub"] = binary<OpKind::SUBTRACT>;
  t["Mul"] = binary<OpKind::MULTIPLY>;
  t["Div"] = binary<OpKind::DIVIDE>;
  t["Pow"] = binary<OpKind::POWER>;
  t["Equal"] = binary<OpKind::EQUAL>;
  t["Less"] = binary<OpKind::LESS_THAN>;
  t["Greater"] = binary<OpKind::GREATER_THAN>;
  t["Sum"] = variadic<OpKind::ADD>;
  t["Max"] = variadic<OpKind::MAXIMUM>;
  t["Min"] = variadic<OpKind::MINIMUM>;
  t["Reshape"] = reshape;
  t["Flatten"] = flatten;
  t["Transpose"] = transpose;
  t["Concat"] = concat;
  t["Slice"] = slice;
  t["Gather"] = gather;
  t["Squeeze"] = squeeze;
  t["Unsqueeze"] = unsqueeze;
  t["ReduceMean"] = reduce<OpKind::REDUCE_MEAN>;
  t["ReduceSum"] = reduce<OpKind::REDUCE_SUM>;
  t["ReduceMax"] = reduce<OpKind::REDUCE_MAX>;
  t["Identity"] = [](Context &c) { c.out(0, c.in(0)); };
  t["Constant"] = constant;
  t["Shape"] = shape;
  t["Size"] = size;
  t["Cast"] = cast;
  t["Pad"] = pad;
  t["ConstantOfShape"] = constantOfShape;
  t["Expand"] = expand;
}

} // namespace tessera::onnx::detail
