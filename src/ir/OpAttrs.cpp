// The attribute names of the convolution, pooling, reduction and dropout
// families: written and read here only, so a renamed or added attribute
// changes one file.
#include "tessera/ir/OpAttrs.hpp"

#include <string>

namespace tessera::ir {
namespace {

std::vector<std::int64_t> ints(const Pair &p) { return {p[0], p[1]}; }

// The messages match shape inference's other attribute checks; it adds the
// operation's name.
Pair pair(const Attributes &attrs, const char *name, std::int64_t min) {
  const std::vector<std::int64_t> &v = attrs.getInts(name);
  if (v.size() != 2)
    throw IrError("attribute '" + std::string(name) + "' has " +
                  std::to_string(v.size()) + " elements; it needs 2");
  Pair p{};
  for (std::size_t i = 0; i < 2; ++i) {
    if (v[i] < min)
      throw IrError("attribute '" + std::string(name) + "' holds " +
                    std::to_string(v[i]) + "; each element must be at least " +
                    std::to_string(min));
    p[i] = static_cast<unsigned>(v[i]);
  }
  return p;
}

} // namespace

Attributes encode(const Conv2dOptions &o) {
  return {{"strides", ints(o.strides)},
          {"padLower", ints(o.padLower)},
          {"padUpper", ints(o.padUpper)},
          {"dilations", ints(o.dilations)},
          {"groups", std::int64_t(o.groups)}};
}

Attributes encode(const PoolOptions &o) {
  return {{"kernel", ints(o.kernel)},
          {"strides", ints(o.strides)},
          {"padLower", ints(o.padLower)},
          {"padUpper", ints(o.padUpper)}};
}

Conv2dOptions decodeConv2dOptions(const Attributes &attrs) {
  Conv2dOptions o;
  o.strides = pair(attrs, "strides", 1);
  o.padLower = pair(attrs, "padLower", 0);
  o.padUpper = pair(attrs, "padUpper", 0);
  o.dilations = pair(attrs, "dilations", 1);
  const std::int64_t g = attrs.getInt("groups");
  if (g < 1)
    throw IrError("groups must be at least 1, not " + std::to_string(g));
  o.groups = static_cast<unsigned>(g);
  return o;
}

PoolOptions decodePoolOptions(const Attributes &attrs) {
  PoolOptions o;
  o.kernel = pair(attrs, "kernel", 1);
  o.strides = pair(attrs, "strides", 1);
  o.padLower = pair(attrs, "padLower", 0);
  o.padUpper = pair(attrs, "padUpper", 0);
  return o;
}

std::vector<bool> ReduceAttrs::reducedDims(std::size_t rank) const {
  std::vector<bool> reduced(rank, axes.empty());
  for (std::int64_t a : axes)
    reduced[static_cast<std::size_t>(a < 0 ? a + std::int64_t(rank) : a)] =
        true;
  return reduced;
}

Attributes encode(const ReduceAttrs &a) {
  return {{"axes", a.axes}, {"keepDims", std::int64_t(a.keepDims)}};
}

ReduceAttrs decodeReduceAttrs(const Attributes &attrs) {
  return {attrs.getInts("axes"), attrs.getInt("keepDims") != 0};
}

Attributes encode(const DropoutAttrs &a) {
  return {{"rate", a.rate},
          {"seed", static_cast<std::int64_t>(a.seed)},
          {"seedModifier", std::int64_t(a.seedModifier)}};
}

DropoutAttrs decodeDropoutAttrs(const Attributes &attrs) {
  DropoutAttrs a;
  a.rate = attrs.getFloat("rate");
  if (!(a.rate >= 0 && a.rate < 1))
    throw IrError("rate " + std::to_string(a.rate) + " must be in [0, 1)");
  a.seed = static_cast<std::uint64_t>(attrs.getInt("seed"));
  const std::int64_t m = attrs.getInt("seedModifier");
  if (m < 0 || m > 0xffffffffll)
    throw IrError("seedModifier must be a 32-bit unsigned integer");
  a.seedModifier = static_cast<std::uint32_t>(m);
  return a;
}

} // namespace tessera::ir
