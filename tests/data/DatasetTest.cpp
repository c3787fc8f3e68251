// Dataset operations on the consumer's thread: their order, counts,
// seeds, remainders, cardinalities and the errors for bad arguments.
#include "DataTestUtil.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

using namespace tessera;
using namespace tessera::data;
using namespace tessera::data::test;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(FromTensors, SlicesEveryTensorAlongDimensionZero) {
  auto x = HostTensor::fromValues<float>({3, 2}, {0, 1, 10, 11, 20, 21});
  auto y = HostTensor::fromValues<int>({3}, {7, 8, 9});
  Dataset ds = Dataset::fromTensors({x, y}, {"x", "y"});
  EXPECT_EQ(ds.spec().toString(), "(x: float [2], y: int [])");
  EXPECT_EQ(ds.cardinality(), Cardinality::finite(3));
  Iterator it = ds.iterator();
  for (int i = 0; i < 3; ++i) {
    std::optional<Element> e = it.next();
    ASSERT_TRUE(e);
    EXPECT_THAT((*e)[0].values<float>(),
                ElementsAre(10.0f * float(i), 10.0f * float(i) + 1));
    EXPECT_EQ((*e)[1].item<int>(), 7 + i);
  }
  EXPECT_FALSE(it.next());
  EXPECT_FALSE(it.next()); // stays at the end
}

TEST(FromTensors, MismatchedFirstDimensionsAreAShapeError) {
  try {
    Dataset::fromTensors({HostTensor(FLOAT, {5, 2}), HostTensor(INT, {4})},
                         {"image", "label"});
    FAIL();
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("tensor 0 has 5 elements along dimension "
                                    "0 but tensor 1 (\"label\") has 4"));
  }
  EXPECT_THROW(Dataset::fromTensors({}), ShapeError);
  EXPECT_THROW(Dataset::fromTensors({HostTensor::scalar<int>(1)}), ShapeError);
  EXPECT_THROW(Dataset::fromTensors({HostTensor(INT, {2})}, {"a", "b"}),
               ShapeError);
}

TEST(FromElement, IsOneElementThatRepeatsAsAConstantStream) {
  Element e{HostTensor::fromValues<float>({2}, {1, 2}),
            HostTensor::scalar<int>(3)};
  Dataset ds = Dataset::fromElement(e, {"x", "y"});
  EXPECT_EQ(ds.spec().toString(), "(x: float [2], y: int [])");
  EXPECT_EQ(ds.cardinality(), Cardinality::finite(1));
  Iterator it = ds.repeat().take(3).iterator();
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(*it.next(), e);
  EXPECT_FALSE(it.next());
  EXPECT_THROW(Dataset::fromElement(Element{}), ShapeError);
}

TEST(FromGenerator, YieldsWhatTheGeneratorMakesAndRestartsEachIteration) {
  int factoryCalls = 0;
  auto factory = [&] {
    ++factoryCalls;
    return [i = 0]() mutable -> std::optional<Element> {
      if (i == 3)
        return std::nullopt;
      return Element{HostTensor::scalar<int>(i++)};
    };
  };
  Dataset ds = Dataset::fromGenerator(factory, {{"n", INT, {}}});
  EXPECT_TRUE(ds.cardinality().isUnknown());
  EXPECT_THAT(drainInts(ds.repeat(2)), ElementsAre(0, 1, 2, 0, 1, 2));
  EXPECT_EQ(factoryCalls, 2);
}

TEST(FromGenerator, AnElementOfTheWrongDtypeIsATypeError) {
  auto factory = [] {
    return [i = 0]() mutable -> std::optional<Element> {
      ++i;
      if (i == 3)
        return Element{HostTensor::scalar<float>(2.5f)};
      return Element{HostTensor::scalar<int>(i)};
    };
  };
  Iterator it = Dataset::fromGenerator(factory, {{"n", INT, {}}}).iterator();
  EXPECT_TRUE(it.next());
  EXPECT_TRUE(it.next());
  try {
    it.next();
    FAIL();
  } catch (const TypeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("fromGenerator: element 2: component 0 "
                                    "(\"n\") is float [] but the dataset "
                                    "declares int []"));
  }
  // A failed iteration stays failed.
  EXPECT_THROW(it.next(), TypeError);
}

TEST(FromGenerator, EmptyFactoriesGeneratorsAndSpecsAreErrors) {
  EXPECT_THROW(Dataset::fromGenerator(nullptr, {{"", INT, {}}}), Error);
  auto good = [] { return [] { return std::optional<Element>(); }; };
  EXPECT_THROW(Dataset::fromGenerator(good, ElementSpec{}), ShapeError);
  auto empty = [] { return Dataset::Generator(); };
  Iterator it = Dataset::fromGenerator(empty, {{"", INT, {}}}).iterator();
  try {
    it.next();
    FAIL();
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("returned an empty function"));
  }
}

TEST(Map, TransformsEveryElementInOrder) {
  Dataset ds = range(5).map([](Element e) {
    e[0].values<int>()[0] *= 10;
    return e;
  });
  EXPECT_THAT(drainInts(ds), ElementsAre(0, 10, 20, 30, 40));
  EXPECT_EQ(ds.cardinality(), Cardinality::finite(5));
}

TEST(Map, ChangingTypesNeedsTheOutputSpec) {
  auto toFloat = [](Element e) { return Element{e[0].cast(FLOAT)}; };
  try {
    drainInts(range(3).map(toFloat));
    FAIL();
  } catch (const TypeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("map: the function's result for element 0:"
                                    " component 0 is float [] but the dataset"
                                    " declares int []"));
  }
  Dataset ds = range(3).map(toFloat, {{"f", FLOAT, {}}});
  Iterator it = ds.iterator();
  EXPECT_EQ(it.next()->components[0].item<float>(), 0.0f);
  EXPECT_THROW(range(3).map(nullptr), Error);
  EXPECT_THROW(range(3).map(toFloat, 0), Error);
  EXPECT_THROW(range(3).map(toFloat, 1u << 20), Error);
}

TEST(Cast, ConvertsOneComponent) {
  auto x = HostTensor::fromValues<float>({2}, {1.75f, -2.5f});
  Dataset ds = Dataset::fromTensors({x, x}).cast(1, INT);
  EXPECT_EQ(ds.spec()[1].type, INT);
  Iterator it = ds.iterator();
  Element e;
  ASSERT_TRUE(it.next(e));
  EXPECT_EQ(e[0].item<float>(), 1.75f);
  EXPECT_EQ(e[1].item<int>(), 1);
  ASSERT_TRUE(it.next(e));
  EXPECT_EQ(e[1].item<int>(), -2);
  EXPECT_THROW(ds.cast(2, INT), ShapeError);
}

TEST(Batch, StacksElementsAndKeepsOrDropsTheRemainder) {
  auto x = HostTensor::fromValues<int>({5, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  Dataset keep = Dataset::fromTensors({x}).batch(2);
  EXPECT_EQ(keep.spec()[0].shape, (Shape{anyDim, 2}));
  EXPECT_EQ(keep.cardinality(), Cardinality::finite(3));
  Iterator it = keep.iterator();
  Element e;
  ASSERT_TRUE(it.next(e));
  EXPECT_EQ(e[0].shape(), (Shape{2, 2}));
  EXPECT_THAT(e[0].values<int>(), ElementsAre(0, 1, 2, 3));
  ASSERT_TRUE(it.next(e));
  EXPECT_THAT(e[0].values<int>(), ElementsAre(4, 5, 6, 7));
  ASSERT_TRUE(it.next(e));
  EXPECT_EQ(e[0].shape(), (Shape{1, 2}));
  EXPECT_THAT(e[0].values<int>(), ElementsAre(8, 9));
  EXPECT_FALSE(it.next(e));

  Dataset drop = Dataset::fromTensors({x}).batch(2, true);
  EXPECT_EQ(drop.spec()[0].shape, (Shape{2, 2}));
  EXPECT_EQ(drop.cardinality(), Cardinality::finite(2));
  EXPECT_EQ(countElements(drop), 2u);
  EXPECT_THAT(drainInts(drop), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
}

TEST(Batch, BatchesOfBatchesAndErrors) {
  Dataset ds = range(10).batch(2, true).batch(2);
  EXPECT_EQ(ds.spec()[0].shape, (Shape{anyDim, 2}));
  EXPECT_EQ(ds.cardinality(), Cardinality::finite(3));
  EXPECT_THAT(drainInts(ds), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9));
  EXPECT_THROW(range(3).batch(0), ShapeError);
  // Ragged batches cannot be stacked.
  try {
    drainInts(range(3).batch(2).batch(2));
    FAIL();
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("shape [1] but element 0 had [2]"));
  }
}

TEST(Repeat, RepeatsCountTimesOrForever) {
  EXPECT_THAT(drainInts(range(3).repeat(2)), ElementsAre(0, 1, 2, 0, 1, 2));
  EXPECT_EQ(range(3).repeat(2).cardinality(), Cardinality::finite(6));
  EXPECT_EQ(countElements(range(3).repeat(0)), 0u);
  EXPECT_EQ(range(3).repeat(0).cardinality(), Cardinality::finite(0));
  Dataset forever = range(3).repeat();
  EXPECT_TRUE(forever.cardinality().isInfinite());
  EXPECT_THAT(drainInts(forever.take(8)), ElementsAre(0, 1, 2, 0, 1, 2, 0, 1));
  // An empty input ends an endless repeat instead of hanging.
  Dataset empty = range(3).take(0).repeat();
  EXPECT_EQ(empty.cardinality(), Cardinality::finite(0));
  EXPECT_EQ(countElements(empty), 0u);
  auto none = [] { return [] { return std::optional<Element>(); }; };
  EXPECT_EQ(
      countElements(Dataset::fromGenerator(none, {{"", INT, {}}}).repeat()),
      0u);
}

TEST(TakeAndSkip, SelectAPrefixOrTheRest) {
  EXPECT_THAT(drainInts(range(5).take(2)), ElementsAre(0, 1));
  EXPECT_THAT(drainInts(range(5).take(9)), ElementsAre(0, 1, 2, 3, 4));
  EXPECT_THAT(drainInts(range(5).skip(3)), ElementsAre(3, 4));
  EXPECT_EQ(countElements(range(5).skip(9)), 0u);
  EXPECT_EQ(range(5).take(2).cardinality(), Cardinality::finite(2));
  EXPECT_EQ(range(5).skip(9).cardinality(), Cardinality::finite(0));
  EXPECT_EQ(range(5).repeat().take(7).cardinality(), Cardinality::finite(7));
  EXPECT_TRUE(range(5).repeat().skip(7).cardinality().isInfinite());
}

TEST(Cardinality, FollowsEachOperation) {
  auto gen = [] { return [] { return std::optional<Element>(); }; };
  Dataset unknown = Dataset::fromGenerator(gen, {{"", INT, {}}});
  EXPECT_TRUE(unknown.batch(4).cardinality().isUnknown());
  EXPECT_TRUE(unknown.repeat(3).cardinality().isUnknown());
  EXPECT_TRUE(unknown.take(3).cardinality().isUnknown());
  EXPECT_EQ(unknown.repeat(0).cardinality(), Cardinality::finite(0));
  EXPECT_TRUE(range(10).repeat().batch(3).cardinality().isInfinite());
  EXPECT_EQ(range(10)
                .shuffle(4)
                .map([](Element e) { return e; })
                .prefetch(2)
                .batch(3)
                .cardinality(),
            Cardinality::finite(4));
  EXPECT_EQ(range(10).batch(3, true).cardinality(), Cardinality::finite(3));
}

TEST(Shuffle, IsAPermutationThatDependsOnlyOnTheSeed) {
  std::vector<int> a = drainInts(range(100).shuffle(100, 7));
  std::vector<int> b = drainInts(range(100).shuffle(100, 7));
  std::vector<int> c = drainInts(range(100).shuffle(100, 8));
  std::vector<int> sorted(100);
  std::iota(sorted.begin(), sorted.end(), 0);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, sorted);
  std::sort(a.begin(), a.end());
  EXPECT_EQ(a, sorted);
}

namespace {

// The ints 0..56 from a generator: the streamed twin of range(57).
Dataset streamedRange57() {
  auto gen = [] {
    return [i = 0]() mutable -> std::optional<Element> {
      if (i == 57)
        return std::nullopt;
      return Element{HostTensor::scalar<int>(i++)};
    };
  };
  return Dataset::fromGenerator(gen, {{"", INT, {}}});
}

} // namespace

TEST(Shuffle, InMemoryAndStreamedInputsShuffleAlike) {
  // fromTensors shuffles indices, a generator shuffles whole elements; the
  // same seed must give the same order either way, for any buffer size.
  Dataset streamed = streamedRange57();
  for (std::size_t buffer : {1u, 5u, 56u, 57u, 100u}) {
    EXPECT_EQ(drainInts(range(57).shuffle(buffer, 9)),
              drainInts(streamed.shuffle(buffer, 9)))
        << "buffer " << buffer;
    EXPECT_EQ(drainInts(range(57).shuffle(buffer, 9).batch(4)),
              drainInts(streamed.shuffle(buffer, 9).batch(4)))
        << "buffer " << buffer;
  }
}

TEST(Shuffle, TakenAndSkippedInMemoryInputsShuffleLikeStreamedOnes) {
  // take and skip of fromTensors stay in-memory (the shuffle reads the
  // elements it picks in place): same order as a generator's elements.
  Dataset streamed = streamedRange57();
  for (std::size_t buffer : {1u, 7u, 40u, 100u}) {
    EXPECT_EQ(drainInts(range(57).take(40).shuffle(buffer, 9)),
              drainInts(streamed.take(40).shuffle(buffer, 9)))
        << "buffer " << buffer;
    EXPECT_EQ(drainInts(range(57).skip(10).shuffle(buffer, 9).batch(4)),
              drainInts(streamed.skip(10).shuffle(buffer, 9).batch(4)))
        << "buffer " << buffer;
  }
  EXPECT_TRUE(drainInts(range(57).skip(60).shuffle(8, 1)).empty());
  EXPECT_EQ(drainInts(range(57).take(100).shuffle(100, 9)).size(), 57u);
}

TEST(Shuffle, ReshufflesEachIterationUnlessAskedNotTo) {
  Dataset ds = range(50).shuffle(50, 3);
  std::vector<int> first = drainInts(ds), second = drainInts(ds);
  EXPECT_NE(first, second);
  // The k-th iteration's order is the same in every run.
  Dataset again = range(50).shuffle(50, 3);
  EXPECT_EQ(drainInts(again), first);
  EXPECT_EQ(drainInts(again), second);
  // Each epoch of a repeat is a new iteration.
  std::vector<int> epochs = drainInts(range(50).shuffle(50, 3).repeat(2));
  EXPECT_EQ(std::vector<int>(epochs.begin(), epochs.begin() + 50), first);
  EXPECT_EQ(std::vector<int>(epochs.begin() + 50, epochs.end()), second);

  Dataset fixed = range(50).shuffle(50, 3, false);
  EXPECT_EQ(drainInts(fixed), drainInts(fixed));
}

TEST(Shuffle, ASmallBufferOnlyMovesElementsALittleEarlier) {
  // With a buffer of b, output i is one of the input elements 0 .. i+b-1.
  std::vector<int> out = drainInts(range(200).shuffle(4, 11));
  ASSERT_EQ(out.size(), 200u);
  for (std::size_t i = 0; i < out.size(); ++i)
    EXPECT_LT(out[i], int(i) + 4) << "at " << i;
  EXPECT_EQ(std::set<int>(out.begin(), out.end()).size(), 200u);
  std::vector<int> sorted(200);
  std::iota(sorted.begin(), sorted.end(), 0);
  EXPECT_NE(out, sorted);
  EXPECT_THAT(drainInts(range(5).shuffle(1)), ElementsAre(0, 1, 2, 3, 4));
  EXPECT_THROW(range(5).shuffle(0), ShapeError);
}

TEST(Shuffle, IsRoughlyUniformWithAFullBuffer) {
  // Where element 0 lands over 2000 iterations of a 10-element shuffle:
  // each position expects 200 hits.
  Dataset ds = range(10).shuffle(10, 123);
  std::vector<int> hits(10);
  for (int run = 0; run < 2000; ++run) {
    std::vector<int> order = drainInts(ds);
    hits[std::size_t(std::find(order.begin(), order.end(), 0) -
                     order.begin())]++;
  }
  for (int h : hits) {
    EXPECT_GT(h, 140);
    EXPECT_LT(h, 260);
  }
}

TEST(Iterator, NextIntoReusesTheCallersBuffers) {
  auto x = HostTensor::fromValues<float>({4, 3}, std::vector<float>(12, 1.0f));
  Iterator it = Dataset::fromTensors({x}).batch(2).iterator();
  Element e;
  ASSERT_TRUE(it.next(e));
  const void *buffer = e[0].data();
  ASSERT_TRUE(it.next(e));
  EXPECT_EQ(e[0].data(), buffer);
  EXPECT_EQ(it.spec()[0].shape, (Shape{anyDim, 3}));
  Iterator moved = std::move(it);
  EXPECT_FALSE(moved.next(e));
}
