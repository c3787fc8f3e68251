// The attribute names of the convolution and pooling families: written and
// read here only, so a renamed or added attribute changes one file.
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

} // namespace tessera::ir
