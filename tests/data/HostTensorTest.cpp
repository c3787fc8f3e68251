// HostTensor: construction, typed access, slicing, casting and reshaping,
// and the errors for asking with the wrong type or shape.
#include "tessera/data/HostTensor.hpp"
#include "tessera/data/Element.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace tessera;
using namespace tessera::data;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(HostTensor, HoldsValuesOfItsTypeAndShape) {
  auto t = HostTensor::fromValues<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(t.type(), FLOAT);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.numElements(), 6u);
  EXPECT_EQ(t.numBytes(), 24u);
  EXPECT_EQ(t.dim(1), 3u);
  EXPECT_THAT(t.values<float>(), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.data()) % 64, 0u);
}

TEST(HostTensor, NewTensorsAreZeroAndCopiesAreDeep) {
  HostTensor t(INT, {4});
  EXPECT_THAT(t.values<int>(), ElementsAre(0, 0, 0, 0));
  HostTensor copy = t;
  copy.values<int>()[2] = 7;
  EXPECT_EQ(t.values<int>()[2], 0);
  EXPECT_FALSE(copy == t);
  t = copy;
  EXPECT_TRUE(copy == t);
}

TEST(HostTensor, ScalarsHaveRankZeroAndOneElement) {
  HostTensor s = HostTensor::scalar<int>(5);
  EXPECT_EQ(s.rank(), 0u);
  EXPECT_EQ(s.item<int>(), 5);
  HostTensor empty;
  EXPECT_EQ(empty.numElements(), 0u);
  EXPECT_EQ(empty.shape(), Shape{0});
}

TEST(HostTensor, ReadingWithTheWrongTypeIsATypeErrorNamingBoth) {
  auto t = HostTensor::fromValues<float>({2}, {1, 2});
  try {
    (void)t.values<int>();
    FAIL();
  } catch (const TypeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("are float but were read as int"));
  }
}

TEST(HostTensor, WrongValueCountIsAShapeError) {
  try {
    (void)HostTensor::fromValues<int>({2, 2}, {1, 2, 3});
    FAIL();
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("[2,2] holds 4 elements but 3 values"));
  }
}

TEST(HostTensor, ItemOfSeveralElementsIsAShapeError) {
  auto t = HostTensor::fromValues<int>({2}, {1, 2});
  EXPECT_THROW((void)t.item<int>(), ShapeError);
  EXPECT_THROW((void)t.dim(1), ShapeError);
}

TEST(HostTensor, SliceCastAndReshape) {
  auto t = HostTensor::fromValues<int>({3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_THAT(t.slice(1).values<int>(), ElementsAre(3, 4));
  EXPECT_EQ(t.slice(2).shape(), Shape{2});
  EXPECT_THROW((void)t.slice(3), ShapeError);
  EXPECT_THROW((void)HostTensor::scalar<int>(1).slice(0), ShapeError);
  HostTensor h = t.cast(HALF);
  EXPECT_EQ(h.type(), HALF);
  EXPECT_EQ(float(h.values<Half>()[5]), 6.0f);
  EXPECT_THAT(h.cast(FLOAT).values<float>(), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_EQ(t.reshaped({6}).shape(), Shape{6});
  try {
    (void)t.reshaped({4});
    FAIL();
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("(6 elements) to [4] (4 elements)"));
  }
}

TEST(HostTensor, ResetReusesStorageThatIsLargeEnough) {
  HostTensor t(FLOAT, {100});
  const void *before = t.data();
  t.reset(INT, {10, 10});
  EXPECT_EQ(t.data(), before);
  EXPECT_EQ(t.type(), INT);
  t.reset(INT, {200});
  EXPECT_EQ(t.numElements(), 200u);
}

TEST(ElementSpec, ChecksTypesShapesAndCounts) {
  ElementSpec spec{{"image", FLOAT, {2, anyDim}}, {"label", INT, {}}};
  Element good{HostTensor(FLOAT, {2, 5}), HostTensor::scalar<int>(1)};
  EXPECT_NO_THROW(spec.check(good, "test"));
  Element wrongType{HostTensor(INT, {2, 5}), HostTensor::scalar<int>(1)};
  try {
    spec.check(wrongType, "test");
    FAIL();
  } catch (const TypeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("component 0 (\"image\") is int [2,5] but "
                                    "the dataset declares float [2,?]"));
  }
  Element wrongShape{HostTensor(FLOAT, {3, 5}), HostTensor::scalar<int>(1)};
  EXPECT_THROW(spec.check(wrongShape, "test"), ShapeError);
  EXPECT_THROW(spec.check(Element{HostTensor(FLOAT, {2, 5})}, "test"),
               ShapeError);
  EXPECT_EQ(spec.indexOf("label"), 1u);
  try {
    (void)spec.indexOf("labels");
    FAIL();
  } catch (const OptionError &e) {
    EXPECT_THAT(e.what(), HasSubstr("\"image\", \"label\""));
  }
  EXPECT_EQ(spec.toString(), "(image: float [2,?], label: int [])");
}

TEST(ElementSpec, OfAnElementTakesOneNamePerComponent) {
  Element e{HostTensor(FLOAT, {3}), HostTensor::scalar<int>(1)};
  EXPECT_EQ(ElementSpec::of(e, {"x", "y"}).toString(),
            "(x: float [3], y: int [])");
  EXPECT_EQ(ElementSpec::of(e).describe(1), "component 1");
  EXPECT_THROW(ElementSpec::of(e, {"x"}), ShapeError);
}

TEST(ElementSpec, CheckFeedsSaysHowToFixAMismatch) {
  ElementSpec model{{"x", FLOAT, {32, 784}}, {"y", INT, {32}}};
  ElementSpec ok{{"image", FLOAT, {32, 784}}, {"label", INT, {32}}};
  EXPECT_NO_THROW(ok.checkFeeds(model, "infeed"));
  ElementSpec floatLabels{{"image", FLOAT, {32, 784}}, {"label", FLOAT, {32}}};
  try {
    floatLabels.checkFeeds(model, "infeed");
    FAIL();
  } catch (const TypeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("Dataset::cast(1, int)"));
  }
  ElementSpec ragged{{"image", FLOAT, {anyDim, 784}}, {"label", INT, {anyDim}}};
  try {
    ragged.checkFeeds(model, "infeed");
    FAIL();
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("dropRemainder = true"));
  }
  const ElementSpec one{{"x", FLOAT, {1}}};
  EXPECT_THROW(one.checkFeeds(model, "infeed"), ShapeError);
}

TEST(Cardinality, KindsAndCounts) {
  EXPECT_EQ(Cardinality::finite(3).count(), 3u);
  EXPECT_TRUE(Cardinality::infinite().isInfinite());
  EXPECT_EQ(Cardinality::unknown().toString(), "unknown");
  EXPECT_THROW((void)Cardinality::infinite().count(), Error);
}
