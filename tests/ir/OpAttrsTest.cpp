// The attribute records of the convolution and pooling families: what the
// builder writes is what every reader decodes, and bad attributes are
// errors naming the attribute.
#include "tessera/ir/OpAttrs.hpp"
#include "tessera/ir/Builder.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace tessera;
using namespace tessera::ir;
using ::testing::HasSubstr;

namespace {

bool samePool(const PoolOptions &a, const PoolOptions &b) {
  return a.kernel == b.kernel && a.strides == b.strides &&
         a.padLower == b.padLower && a.padUpper == b.padUpper;
}

std::string decodeError(const Attributes &attrs) {
  try {
    decodePoolOptions(attrs);
  } catch (const IrError &e) {
    return e.what();
  }
  return "no error";
}

} // namespace

TEST(OpAttrs, PoolOptionsSurviveTheOperationsAttributes) {
  Module m;
  Builder b(m);
  const PoolOptions o{.kernel = {3, 2},
                      .strides = {2, 1},
                      .padLower = {1, 0},
                      .padUpper = {0, 1}};
  maxPool(b.input("x", FLOAT, {1, 2, 6, 6}), o);
  const Attributes &written = m.ops().back().attrs;
  EXPECT_EQ(written, encode(o));
  EXPECT_TRUE(samePool(decodePoolOptions(written), o));
}

TEST(OpAttrs, Conv2dOptionsSurviveTheOperationsAttributes) {
  const Conv2dOptions o{.strides = {2, 3},
                        .padLower = {1, 2},
                        .padUpper = {3, 4},
                        .dilations = {1, 2},
                        .groups = 4};
  const Conv2dOptions d = decodeConv2dOptions(encode(o));
  EXPECT_EQ(d.strides, o.strides);
  EXPECT_EQ(d.padLower, o.padLower);
  EXPECT_EQ(d.padUpper, o.padUpper);
  EXPECT_EQ(d.dilations, o.dilations);
  EXPECT_EQ(d.groups, o.groups);
}

TEST(OpAttrs, DecodingNamesTheBadAttribute) {
  Attributes zeroStride = encode(PoolOptions{});
  zeroStride.set("strides", std::vector<std::int64_t>{0, 1});
  EXPECT_THAT(decodeError(zeroStride),
              HasSubstr("'strides' holds 0; each element must be at least 1"));
  Attributes threeKernel = encode(PoolOptions{});
  threeKernel.set("kernel", std::vector<std::int64_t>{2, 2, 2});
  EXPECT_THAT(decodeError(threeKernel),
              HasSubstr("'kernel' has 3 elements; it needs 2"));
  Attributes noPad{{"kernel", std::vector<std::int64_t>{2, 2}},
                   {"strides", std::vector<std::int64_t>{2, 2}},
                   {"padLower", std::vector<std::int64_t>{0, 0}}};
  EXPECT_THAT(decodeError(noPad), HasSubstr("'padUpper'"));
  Attributes noGroups = encode(Conv2dOptions{});
  noGroups.set("groups", std::int64_t(0));
  EXPECT_THROW(decodeConv2dOptions(noGroups), IrError);
}

TEST(OpAttrs, ShapeInferenceNamesTheOperationOfABadAttribute) {
  Module m;
  Builder b(m);
  try {
    avgPool(b.input("x", FLOAT, {1, 2, 6, 6}), {.strides = {1, 0}});
    ADD_FAILURE() << "no error";
  } catch (const IrError &e) {
    EXPECT_THAT(e.what(), HasSubstr("avgPool"));
    EXPECT_THAT(e.what(), HasSubstr("'strides' holds 0"));
  }
}

TEST(OpAttrs, ReduceAttrsNameTheReducedDimensions) {
  Module m;
  Builder b(m);
  reduceSum(b.input("x", FLOAT, {2, 3, 4}), {-1, 0}, true);
  const ReduceAttrs a = decodeReduceAttrs(m.ops().back().attrs);
  EXPECT_EQ(a.axes, (std::vector<std::int64_t>{-1, 0}));
  EXPECT_TRUE(a.keepDims);
  EXPECT_EQ(a.reducedDims(3), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(ReduceAttrs{}.reducedDims(2), (std::vector<bool>{true, true}));
  EXPECT_EQ(encode(a), m.ops().back().attrs);
}

TEST(OpAttrs, DropoutAttrsSurviveAndAreChecked) {
  const DropoutAttrs o{0.25, 0x123456789ull, 7};
  const DropoutAttrs d = decodeDropoutAttrs(encode(o));
  EXPECT_EQ(d.rate, o.rate);
  EXPECT_EQ(d.seed, o.seed);
  EXPECT_EQ(d.seedModifier, o.seedModifier);
  Attributes bad = encode(o);
  bad.set("rate", 1.0);
  EXPECT_THROW(decodeDropoutAttrs(bad), IrError);
  bad = encode(o);
  bad.set("seedModifier", std::int64_t(1) << 33);
  EXPECT_THROW(decodeDropoutAttrs(bad), IrError);
}
