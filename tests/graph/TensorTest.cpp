// Tensor views checked element by element against a naive reference that
// computes the same view by explicit index arithmetic on a list of
// (variable, element) ids, plus the run-count guarantees and every error.
#include "tessera/graph/Tensor.hpp"
#include "tessera/support/Error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>
#include <sstream>
#include <utility>

using namespace tessera;

namespace {

using Elem = std::pair<std::uint32_t, std::int64_t>;
using Shape = std::vector<std::size_t>;

/// The reference: a shape and the (variable, element) id of every element in
/// row-major order.
struct Ref {
  Shape shape;
  std::vector<Elem> elems;
};

std::size_t count(const Shape &shape) {
  return std::accumulate(shape.begin(), shape.end(), std::size_t{1},
                         std::multiplies<>());
}

std::vector<Elem> elementsOf(tessera::ArrayView<tessera::Run> runs) {
  std::vector<Elem> elems;
  for (const tessera::Run &r : runs)
    for (std::int64_t j = 0; j < r.count; ++j)
      elems.emplace_back(r.var, r.start + j * r.stride);
  return elems;
}

std::vector<Elem> elementsOf(const Tensor &t) { return elementsOf(t.runs()); }

Shape unflatten(std::size_t flat, const Shape &shape) {
  Shape idx(shape.size());
  for (std::size_t k = shape.size(); k-- > 0;) {
    idx[k] = flat % shape[k];
    flat /= shape[k];
  }
  return idx;
}

std::size_t flatIndex(const Shape &idx, const Shape &shape) {
  std::size_t flat = 0;
  for (std::size_t k = 0; k < shape.size(); ++k)
    flat = flat * shape[k] + idx[k];
  return flat;
}

/// The view of \p src with \p shape whose element at idx is src's element at
/// sourceIndex(idx).
Ref build(const Ref &src, const Shape &shape,
          const std::function<Shape(const Shape &)> &sourceIndex) {
  Ref out{shape, {}};
  for (std::size_t f = 0; f < count(shape); ++f)
    out.elems.push_back(
        src.elems[flatIndex(sourceIndex(unflatten(f, shape)), src.shape)]);
  return out;
}

Ref refIndex(const Ref &src, const Shape &indices) {
  Shape shape(src.shape.begin() + indices.size(), src.shape.end());
  return build(src, shape, [&](const Shape &idx) {
    Shape s = indices;
    s.insert(s.end(), idx.begin(), idx.end());
    return s;
  });
}

Ref refSlice(const Ref &src, const Shape &begin, const Shape &end) {
  Shape shape(src.shape.size());
  for (std::size_t k = 0; k < shape.size(); ++k)
    shape[k] = end[k] - begin[k];
  return build(src, shape, [&](const Shape &idx) {
    Shape s = idx;
    for (std::size_t k = 0; k < s.size(); ++k)
      s[k] += begin[k];
    return s;
  });
}

Ref refShuffle(const Ref &src, const std::vector<unsigned> &perm) {
  Shape shape(perm.size());
  for (std::size_t k = 0; k < perm.size(); ++k)
    shape[k] = src.shape[perm[k]];
  return build(src, shape, [&](const Shape &idx) {
    Shape s(idx.size());
    for (std::size_t k = 0; k < idx.size(); ++k)
      s[perm[k]] = idx[k];
    return s;
  });
}

Ref refBroadcast(const Ref &src, std::size_t n, unsigned dim) {
  Shape shape = src.shape;
  shape[dim] *= n;
  return build(src, shape, [&](const Shape &idx) {
    Shape s = idx;
    s[dim] %= src.shape[dim];
    return s;
  });
}

Ref refReverse(const Ref &src, unsigned dim) {
  return build(src, src.shape, [&](const Shape &idx) {
    Shape s = idx;
    s[dim] = src.shape[dim] - 1 - idx[dim];
    return s;
  });
}

Ref refSubSample(const Ref &src, std::size_t stride, unsigned dim) {
  Shape shape = src.shape;
  shape[dim] = (shape[dim] + stride - 1) / stride;
  return build(src, shape, [&](const Shape &idx) {
    Shape s = idx;
    s[dim] *= stride;
    return s;
  });
}

Ref refConcat(const std::vector<Ref> &srcs, unsigned dim) {
  Shape shape = srcs[0].shape;
  shape[dim] = 0;
  for (const Ref &r : srcs)
    shape[dim] += r.shape[dim];
  Ref out{shape, {}};
  for (std::size_t f = 0; f < count(shape); ++f) {
    Shape idx = unflatten(f, shape);
    std::size_t i = 0;
    while (idx[dim] >= srcs[i].shape[dim])
      idx[dim] -= srcs[i++].shape[dim];
    out.elems.push_back(srcs[i].elems[flatIndex(idx, srcs[i].shape)]);
  }
  return out;
}

Ref refReshape(const Ref &src, const Shape &shape) {
  return {shape, src.elems};
}

/// Runs are as merged as the builder promises: none empty, one-element runs
/// of stride 1, and no run that continues the previous one.
void expectCanonical(const std::vector<tessera::Run> &runs) {
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const tessera::Run &r = runs[i];
    EXPECT_GT(r.count, 0) << "run " << i << " " << r;
    if (r.count == 1) {
      EXPECT_EQ(r.stride, 1) << "run " << i << " " << r;
    }
    if (i == 0 || runs[i - 1].var != r.var)
      continue;
    const tessera::Run &p = runs[i - 1];
    std::int64_t pLast = p.start + (p.count - 1) * p.stride;
    bool continues;
    if (p.count == 1)
      continues = r.count == 1 || r.start - p.start == r.stride;
    else
      continues =
          r.start == pLast + p.stride && (r.count == 1 || r.stride == p.stride);
    EXPECT_FALSE(continues)
        << "runs " << i - 1 << " and " << i << ": " << p << " " << r;
  }
}

bool refContiguous(const std::vector<Elem> &elems) {
  if (elems.empty())
    return false;
  for (std::size_t i = 1; i < elems.size(); ++i)
    if (elems[i].first != elems[0].first ||
        elems[i].second != elems[i - 1].second + 1)
      return false;
  return true;
}

std::vector<std::uint32_t> refVariables(const std::vector<Elem> &elems) {
  std::vector<std::uint32_t> vars;
  for (const Elem &e : elems)
    vars.push_back(e.first);
  std::sort(vars.begin(), vars.end());
  vars.erase(std::unique(vars.begin(), vars.end()), vars.end());
  return vars;
}

void expectMatches(const Tensor &t, const Ref &ref) {
  ASSERT_TRUE(t.valid());
  EXPECT_EQ(t.shape(), ref.shape);
  EXPECT_EQ(t.numElements(), count(ref.shape));
  EXPECT_EQ(elementsOf(t), ref.elems);
  expectCanonical(t.runs());
  EXPECT_EQ(t.isContiguous(), refContiguous(ref.elems));
  EXPECT_EQ(t.variables(), refVariables(ref.elems));
}

/// One variable, elements 0..n-1 in order.
Tensor contiguous(const Shape &shape, std::uint32_t var = 0) {
  return Tensor(FLOAT, shape,
                {{var, 0, 1, static_cast<std::int64_t>(count(shape))}});
}

/// Several variables in random pieces, strides -3..3 (0 included).
Tensor scattered(const Shape &shape, std::mt19937 &rng) {
  auto n = static_cast<std::int64_t>(count(shape));
  std::vector<tessera::Run> runs;
  while (n > 0) {
    std::int64_t c = std::min<std::int64_t>(n, 1 + rng() % 4);
    auto var = static_cast<std::uint32_t>(rng() % 3);
    std::int64_t stride = static_cast<std::int64_t>(rng() % 7) - 3;
    std::int64_t start = 3 * c + static_cast<std::int64_t>(rng() % 20);
    runs.push_back({var, start, stride, c});
    n -= c;
  }
  return Tensor(FLOAT, shape, runs);
}

Ref refOf(const Tensor &t) { return {t.shape(), elementsOf(t)}; }

template <typename E, typename F>
void expectError(F &&f, const std::string &message) {
  try {
    f();
    ADD_FAILURE() << "no error; expected: " << message;
  } catch (const E &e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

} // namespace

TEST(Tensor, ConstructorMergesRunsThatContinueEachOther) {
  Tensor t(FLOAT, {9},
           {{0, 0, 1, 2},
            {0, 2, 1, 3},
            {0, 5, 1, 0},
            {1, 7, 1, 1},
            {1, 9, 5, 1},
            {1, 11, 2, 2}});
  std::vector<tessera::Run> expected{{0, 0, 1, 5}, {1, 7, 2, 4}};
  EXPECT_EQ(t.runs(), expected);
  EXPECT_EQ(elementsOf(t),
            elementsOf(std::vector<tessera::Run>{{0, 0, 1, 5}, {1, 7, 2, 4}}));
}

TEST(Tensor, ConstructorKeepsRunsOfDifferentVariablesApart) {
  Tensor t(FLOAT, {2, 2}, {{0, 0, 1, 2}, {1, 2, 1, 2}});
  EXPECT_EQ(t.runs().size(), 2u);
  EXPECT_FALSE(t.isContiguous());
  EXPECT_EQ(t.variables(), (std::vector<std::uint32_t>{0, 1}));
}

TEST(Tensor, RepeatedElementsMergeIntoStrideZeroRun) {
  Tensor t(FLOAT, {4}, {{2, 5, 1, 1}, {2, 5, 1, 1}, {2, 5, 0, 2}});
  EXPECT_EQ(t.runs(), (std::vector<tessera::Run>{{2, 5, 0, 4}}));
}

TEST(Tensor, BasicQueries) {
  Tensor t = contiguous({4, 3});
  EXPECT_EQ(t.rank(), 2u);
  EXPECT_EQ(t.dim(0), 4u);
  EXPECT_EQ(t.dim(1), 3u);
  EXPECT_EQ(t.numElements(), 12u);
  EXPECT_EQ(t.elementType(), FLOAT);
  EXPECT_EQ(t.shapeToString(), "[4, 3]");
  EXPECT_EQ(Tensor(INT, {}, {{0, 7, 1, 1}}).shapeToString(), "[]");
  EXPECT_TRUE(t.valid());
  EXPECT_FALSE(Tensor().valid());
  EXPECT_EQ(Tensor().numElements(), 0u);
  EXPECT_TRUE(Tensor().runs().empty());
}

TEST(Tensor, ReshapeFlattenExpandSqueezeReinterpretShareTheRunList) {
  Tensor t = contiguous({4, 3}).transpose().reshape({3, 4});
  const tessera::Run *runs = t.runs().data();
  EXPECT_EQ(t.reshape({2, 6}).runs().data(), runs);
  EXPECT_EQ(t.flatten().runs().data(), runs);
  EXPECT_EQ(t.flatten(0, 2).runs().data(), runs);
  EXPECT_EQ(t.expand({0, 2}).runs().data(), runs);
  EXPECT_EQ(t.expand({1}).squeeze({1}).runs().data(), runs);
  EXPECT_EQ(t.reinterpret(INT).runs().data(), runs);
  EXPECT_EQ(t.reinterpret(INT).elementType(), INT);
}

TEST(Tensor, IdentityViewsShareTheRunList) {
  Tensor t(FLOAT, {2, 3}, {{0, 0, 1, 3}, {1, 9, -1, 3}});
  const tessera::Run *runs = t.runs().data();
  EXPECT_EQ(t.slice(0, 2, 0).runs().data(), runs);
  EXPECT_EQ(t.dimShuffle({0, 1}).runs().data(), runs);
  EXPECT_EQ(t.subSample(1, 1).runs().data(), runs);
  EXPECT_EQ(t.broadcast(1, 0).runs().data(), runs);
}

TEST(Tensor, LongShapesSurviveCopiesMovesAndViews) {
  // Shapes of more than four dimensions live outside the tensor, in a block
  // its copies share; each copy must still see its own shape.
  const Shape six{2, 1, 3, 1, 2, 2};
  Tensor t = contiguous(six);
  EXPECT_EQ(t.shape(), six);
  Tensor copy = t;
  Tensor moved = std::move(copy);
  EXPECT_EQ(moved.shape(), six);
  EXPECT_EQ(moved.rank(), 6u);
  Tensor assigned;
  assigned = moved;
  assigned = assigned; // self-assignment keeps the tensor
  EXPECT_EQ(assigned.shape(), six);
  moved = contiguous({3});
  EXPECT_EQ(assigned.shape(), six);
  EXPECT_EQ(moved.shape(), Shape{3});
  const Tensor shuffled = t.dimShuffle({5, 4, 3, 2, 1, 0});
  EXPECT_EQ(shuffled.shape(), (Shape{2, 2, 1, 3, 1, 2}));
  expectMatches(shuffled, refShuffle(refOf(t), {5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(t.squeeze({1, 3}).shape(), (Shape{2, 3, 2, 2}));
  EXPECT_EQ(t.squeeze({1, 3}).expand({0, 4}).shape(),
            (Shape{1, 2, 3, 2, 2, 1}));
  std::vector<Tensor> many(100, t);
  many.resize(300, shuffled);
  EXPECT_EQ(many.front().shape(), six);
  EXPECT_EQ(many.back().shape(), shuffled.shape());
}

TEST(Tensor, ShapeAndRunsConvertAndCompareLikeVectors) {
  const Tensor t(FLOAT, {2, 3}, {{0, 0, 1, 3}, {1, 9, -1, 3}});
  const Shape shape = t.shape();
  EXPECT_EQ(shape, (Shape{2, 3}));
  EXPECT_TRUE(t.shape() == shape && shape == t.shape());
  EXPECT_FALSE(t.shape() != t.transpose().transpose().shape());
  EXPECT_NE(t.shape(), t.transpose().shape());
  const std::vector<tessera::Run> runs = t.runs();
  EXPECT_EQ(runs.size(), 2u);
  EXPECT_EQ(t.runs().at(1), (tessera::Run{1, 9, -1, 3}));
  EXPECT_THROW(t.runs().at(2), std::out_of_range);
  EXPECT_EQ(t.runs().front().var, 0u);
  EXPECT_EQ(t.runs().back().var, 1u);
  EXPECT_EQ(t.shape().back(), 3u);
}

TEST(Tensor, TransposeOf4096SquareIsOneRunPerRow) {
  constexpr std::int64_t n = 4096;
  Tensor t = contiguous({n, n});
  Tensor tt = t.transpose();
  ASSERT_EQ(tt.runs().size(), static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; i += 511)
    EXPECT_EQ(tt.runs()[i], (tessera::Run{0, i, n, n}));
  EXPECT_EQ(tt.shape(), (Shape{n, n}));
  EXPECT_TRUE(tt.transpose().isContiguous());
}

TEST(Tensor, ViewsOfStridedSourcesStayOneRunPerRow) {
  // Every other column of a 64 x 127 variable: rows do not continue each
  // other, so 64 runs, and so is its transpose.
  Tensor t = contiguous({64, 127}).subSample(2, 1);
  EXPECT_EQ(t.runs().size(), 64u);
  EXPECT_EQ(t.transpose().runs().size(), 64u);
  EXPECT_EQ(t.flatten().subSample(2, 0).runs().size(), 64u);
  // With an even row length the columns line up into one strided run.
  EXPECT_EQ(contiguous({64, 128}).subSample(2, 1).runs(),
            (std::vector<tessera::Run>{{0, 0, 2, 64 * 64}}));
}

TEST(Tensor, ViewsOfTransposeCostTheirRunsNotTheirElements) {
  // Views of views of one variable compose into one map of the variable, so
  // a block of a transpose has one run per row of the block.
  constexpr std::int64_t n = 4096;
  Tensor tt = contiguous({n, n}).transpose();
  Tensor block = tt.slice({64, 128}, {128, 256});
  ASSERT_EQ(block.runs().size(), 64u);
  EXPECT_EQ(block.runs()[0], (tessera::Run{0, 128 * n + 64, n, 128}));
  EXPECT_TRUE(tt.transpose().isContiguous());
  Tensor cube = contiguous({256, 256, 256}).dimShuffle({2, 0, 1});
  EXPECT_EQ(cube.runs().size(), 256u);
  EXPECT_TRUE(cube.dimShuffle({1, 2, 0}).isContiguous());
  Ref small = refOf(contiguous({8, 6}));
  Tensor s = contiguous({8, 6}).transpose().reshape({6, 2, 4});
  expectMatches(
      s.dimShuffle({2, 0, 1}),
      refShuffle(refReshape(refShuffle(small, {1, 0}), {6, 2, 4}), {2, 0, 1}));
  // A view whose rows carry from one source row into the next falls back to
  // walking the runs.
  Tensor carry = contiguous({5, 6}).transpose().flatten().subSample(4, 0);
  expectMatches(
      carry,
      refSubSample(
          refReshape(refShuffle(refOf(contiguous({5, 6})), {1, 0}), {30}), 4,
          0));
}

TEST(Tensor, BroadcastOfColumnGivesStrideZeroRuns) {
  Tensor t = contiguous({3, 1}).broadcast(4, 1);
  EXPECT_EQ(t.shape(), (Shape{3, 4}));
  EXPECT_EQ(t.runs(), (std::vector<tessera::Run>{
                          {0, 0, 0, 4}, {0, 1, 0, 4}, {0, 2, 0, 4}}));
  Tensor r = contiguous({3}).broadcast(2, 0);
  EXPECT_EQ(r.runs(), (std::vector<tessera::Run>{{0, 0, 1, 3}, {0, 0, 1, 3}}));
  Tensor s = Tensor(FLOAT, {}, {{3, 9, 1, 1}}).expand({0}).broadcast(5, 0);
  EXPECT_EQ(s.runs(), (std::vector<tessera::Run>{{3, 9, 0, 5}}));
}

TEST(Tensor, ReverseGivesNegativeStride) {
  Tensor t = contiguous({5}).reverse(0);
  EXPECT_EQ(t.runs(), (std::vector<tessera::Run>{{0, 4, -1, 5}}));
  EXPECT_FALSE(t.isContiguous());
  EXPECT_TRUE(t.reverse(0).isContiguous());
}

TEST(Tensor, IsContiguous) {
  Tensor t = contiguous({4, 3});
  EXPECT_TRUE(t.isContiguous());
  EXPECT_TRUE(t.slice(1, 3, 0).isContiguous());
  EXPECT_TRUE(t[2].isContiguous());
  EXPECT_TRUE(t.slice({1, 1}, {2, 3}).isContiguous());
  EXPECT_FALSE(t.slice(0, 2, 1).isContiguous());
  EXPECT_FALSE(t.transpose().isContiguous());
  EXPECT_FALSE(t.subSample(2, 0).isContiguous());
  EXPECT_TRUE(t.index({3, 2}).isContiguous());
  EXPECT_FALSE(t.slice(0, 0, 0).isContiguous());
  EXPECT_TRUE(concat(t.slice(0, 1, 0), t.slice(1, 4, 0)).isContiguous());
  EXPECT_FALSE(concat(t.slice(1, 4, 0), t.slice(0, 1, 0)).isContiguous());
  EXPECT_FALSE(concat(contiguous({2}, 0), contiguous({2}, 1)).isContiguous());
  EXPECT_FALSE(Tensor().isContiguous());
}

TEST(Tensor, VariablesAreSortedAndUnique) {
  Tensor t = concat(
      {contiguous({2}, 3), contiguous({2}, 1), contiguous({3}, 3).slice(1, 3)});
  EXPECT_EQ(t.variables(), (std::vector<std::uint32_t>{1, 3}));
  EXPECT_EQ(t.slice(0, 2).variables(), (std::vector<std::uint32_t>{3}));
  EXPECT_TRUE(t.slice(0, 0).variables().empty());
}

TEST(Tensor, ConcatAlongInnerDimensionInterleavesRows) {
  Tensor a = contiguous({2, 2}, 0), b = contiguous({2, 3}, 1);
  Tensor c = concat(a, b, 1);
  EXPECT_EQ(c.shape(), (Shape{2, 5}));
  EXPECT_EQ(c.runs(),
            (std::vector<tessera::Run>{
                {0, 0, 1, 2}, {1, 0, 1, 3}, {0, 2, 1, 2}, {1, 3, 1, 3}}));
  // Two halves of each row rejoin into the original variable.
  Tensor t = contiguous({3, 4});
  EXPECT_TRUE(concat(t.slice(0, 1, 1), t.slice(1, 4, 1), 1).isContiguous());
  expectMatches(concat({t, t.reverse(1), t.slice(0, 0, 1)}, 1),
                refConcat({refOf(t), refReverse(refOf(t), 1),
                           refSlice(refOf(t), {0, 0}, {3, 0})},
                          1));
}

TEST(Tensor, ConcatOfEmptyAndSingleTensors) {
  Tensor t = contiguous({2, 3});
  EXPECT_EQ(concat({t}).runs().data(), t.runs().data());
  Tensor e = t.slice(0, 0, 0);
  EXPECT_EQ(concat(e, t).runs(), t.runs());
  EXPECT_EQ(concat(e, e).numElements(), 0u);
}

TEST(Tensor, AppendAddsOneSliceAlongDimension) {
  Tensor a = contiguous({2, 3}, 0), b = contiguous({3}, 1);
  Tensor rows = append(a, b, 0);
  EXPECT_EQ(rows.shape(), (Shape{3, 3}));
  EXPECT_EQ(rows.runs(),
            (std::vector<tessera::Run>{{0, 0, 1, 6}, {1, 0, 1, 3}}));
  Tensor c = contiguous({2}, 1);
  Tensor cols = append(a, c, 1);
  EXPECT_EQ(cols.shape(), (Shape{2, 4}));
  expectMatches(cols, refConcat({refOf(a), refReshape(refOf(c), {2, 1})}, 1));
}

TEST(Tensor, ExpandAndSqueezePositions) {
  Tensor t = contiguous({4, 3});
  EXPECT_EQ(t.expand({0, 2}).shape(), (Shape{1, 4, 3, 1}));
  EXPECT_EQ(t.expand({2, 0}).shape(), (Shape{1, 4, 3, 1}));
  EXPECT_EQ(t.expand({1, 1}).shape(), (Shape{4, 1, 1, 3}));
  EXPECT_EQ(t.expand({}).shape(), (Shape{4, 3}));
  EXPECT_EQ(t.expand({0, 2, 1}).squeeze({0, 2, 4}).shape(), (Shape{4, 3}));
}

TEST(Tensor, SlicesAndIntervals) {
  Tensor t = contiguous({5, 2});
  std::vector<Tensor> parts = t.slices({{0, 2}, {2, 2}, {3, 5}});
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].runs(), (std::vector<tessera::Run>{{0, 0, 1, 4}}));
  EXPECT_EQ(parts[1].numElements(), 0u);
  EXPECT_EQ(parts[2].runs(), (std::vector<tessera::Run>{{0, 6, 1, 4}}));
  EXPECT_EQ(t.slice(Interval(1, 2), 1).runs(),
            (std::vector<tessera::Run>{{0, 1, 2, 5}}));
  EXPECT_EQ(Interval(3, 7).size(), 4u);
}

// Slices of one many-run tensor taken out of order (each search for a
// slice's first run starts where the thread's last one ended) still find
// their elements.
TEST(Tensor, SlicesOfManyRunsInAnyOrderFindTheirElements) {
  // Runs of 1 to 3 elements, 5 apart: 200 runs, no affine form.
  std::vector<Tensor> pieces;
  for (std::size_t k = 0; k < 200; ++k)
    pieces.push_back(contiguous({1000}).slice(5 * k, 5 * k + 1 + k % 3));
  const Tensor t = concat(pieces);
  ASSERT_EQ(t.runs().size(), 200u);
  const Ref ref = refOf(t);
  std::mt19937 rng(7);
  for (int n = 0; n < 500; ++n) {
    std::size_t b = rng() % 399, e = rng() % 399;
    if (b > e)
      std::swap(b, e);
    const Tensor piece = t.slice(b, e + 1);
    const std::vector<Elem> want(ref.elems.begin() + b,
                                 ref.elems.begin() + e + 1);
    ASSERT_EQ(elementsOf(piece.runs()), want) << "slice " << b << ", " << e + 1;
    // A progression through the runs, backwards as well.
    ASSERT_EQ(elementsOf(piece.reverse(0).runs()),
              std::vector<Elem>(want.rbegin(), want.rend()));
  }
}

TEST(Tensor, DimRollMovesOneDimension) {
  Tensor t = contiguous({2, 3, 4, 5});
  EXPECT_EQ(t.dimRoll(2).shape(), (Shape{4, 2, 3, 5}));
  EXPECT_EQ(t.dimRoll(0, 3).shape(), (Shape{3, 4, 5, 2}));
  expectMatches(t.dimRoll(3, 1), refShuffle(refOf(t), {0, 3, 1, 2}));
}

TEST(Tensor, EachViewOverOneAndManyVariablesMatchesReference) {
  std::mt19937 rng(7);
  for (int source = 0; source < 2; ++source) {
    SCOPED_TRACE(source == 0 ? "one variable" : "many variables");
    Shape shape{3, 4, 5};
    Tensor t = source == 0 ? contiguous(shape) : scattered(shape, rng);
    Ref r = refOf(t);
    expectMatches(t[1], refIndex(r, {1}));
    expectMatches(t.index({2, 3}), refIndex(r, {2, 3}));
    expectMatches(t.index({2, 3, 4}), refIndex(r, {2, 3, 4}));
    expectMatches(t.slice(1, 4, 1), refSlice(r, {0, 1, 0}, {3, 4, 5}));
    expectMatches(t.slice({1, 0, 2}, {3, 3, 5}),
                  refSlice(r, {1, 0, 2}, {3, 3, 5}));
    expectMatches(t.dimShuffle({2, 0, 1}), refShuffle(r, {2, 0, 1}));
    expectMatches(t.broadcast(3, 1), refBroadcast(r, 3, 1));
    expectMatches(t.broadcast(2, 2), refBroadcast(r, 2, 2));
    expectMatches(t.reverse(0), refReverse(r, 0));
    expectMatches(t.reverse(2), refReverse(r, 2));
    expectMatches(t.subSample(2, 2), refSubSample(r, 2, 2));
    expectMatches(t.subSample(3, 1), refSubSample(r, 3, 1));
    expectMatches(t.flatten(1, 3), refReshape(r, {3, 20}));
    expectMatches(t[0].transpose(), refShuffle(refIndex(r, {0}), {1, 0}));
    expectMatches(concat(t, t.reverse(0), 2),
                  refConcat({r, refReverse(r, 0)}, 2));
    expectMatches(concat(t.slice(0, 1), t, 0),
                  refConcat({refSlice(r, {0, 0, 0}, {1, 4, 5}), r}, 0));
  }
}

namespace {

/// A random chain of views applied to a tensor and to its reference in step.
class ViewChain {
public:
  ViewChain(Tensor t, std::mt19937 &rng) : t_(t), ref_(refOf(t)), rng_(rng) {}

  void step() {
    unsigned rank = t_.rank();
    unsigned op = pick(13);
    if (rank == 0 && op < 11)
      op = 11 + pick(2);
    unsigned dim = rank ? pick(rank) : 0;
    switch (op) {
    case 0:
      return index();
    case 1:
      return slice(dim);
    case 2:
      return multiSlice();
    case 3:
      return dimShuffle();
    case 4:
      return dimRoll(dim);
    case 5:
      return broadcast(dim);
    case 6:
      return apply(t_.reverse(dim), refReverse(ref_, dim),
                   "reverse " + std::to_string(dim));
    case 7:
      return subSample(dim);
    case 8:
      return rank == 2
                 ? apply(t_.transpose(), refShuffle(ref_, {1, 0}), "transpose")
                 : flatten(dim);
    case 9:
      return concatWithItself(dim);
    case 10:
      return squeeze();
    case 11:
      return expand();
    default:
      return reshape();
    }
  }

private:
  Tensor t_;
  Ref ref_;
  std::mt19937 &rng_;
  std::string history_;

  unsigned pick(std::size_t n) {
    return n ? static_cast<unsigned>(rng_() % n) : 0;
  }

  template <typename T> static std::string show(const std::vector<T> &v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i)
      s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
  }

  void apply(const Tensor &t, const Ref &ref, const std::string &what) {
    history_ += what + "; ";
    SCOPED_TRACE(history_);
    expectMatches(t, ref);
    t_ = t;
    ref_ = ref;
  }

  void index() {
    Shape idx;
    for (unsigned k = 0, n = 1 + pick(t_.rank()); k < n; ++k) {
      if (t_.dim(k) == 0)
        return;
      idx.push_back(pick(t_.dim(k)));
    }
    apply(t_.index(idx), refIndex(ref_, idx), "index " + show(idx));
  }

  void slice(unsigned dim) {
    std::size_t size = t_.dim(dim);
    std::size_t b = pick(size + 1), e = b + pick(size - b + 1);
    Shape begin(t_.rank(), 0), end = t_.shape();
    begin[dim] = b;
    end[dim] = e;
    apply(t_.slice(b, e, dim), refSlice(ref_, begin, end),
          "slice " + std::to_string(b) + " " + std::to_string(e) + " dim " +
              std::to_string(dim));
  }

  void multiSlice() {
    Shape begin(t_.rank()), end(t_.rank());
    for (unsigned k = 0; k < t_.rank(); ++k) {
      begin[k] = pick(t_.dim(k) + 1);
      end[k] = begin[k] + pick(t_.dim(k) - begin[k] + 1);
    }
    apply(t_.slice(begin, end), refSlice(ref_, begin, end),
          "slice " + show(begin) + " " + show(end));
  }

  void dimShuffle() {
    std::vector<unsigned> perm(t_.rank());
    std::iota(perm.begin(), perm.end(), 0u);
    std::shuffle(perm.begin(), perm.end(), rng_);
    apply(t_.dimShuffle(perm), refShuffle(ref_, perm),
          "dimShuffle " + show(perm));
  }

  void dimRoll(unsigned dim) {
    unsigned to = pick(t_.rank());
    std::vector<unsigned> perm;
    for (unsigned k = 0; k < t_.rank(); ++k)
      if (k != dim)
        perm.push_back(k);
    perm.insert(perm.begin() + to, dim);
    apply(t_.dimRoll(dim, to), refShuffle(ref_, perm),
          "dimRoll " + std::to_string(dim) + " " + std::to_string(to));
  }

  void broadcast(unsigned dim) {
    std::size_t n = pick(4);
    if (t_.numElements() * n > 3000)
      n = 1;
    apply(t_.broadcast(n, dim), refBroadcast(ref_, n, dim),
          "broadcast " + std::to_string(n) + " dim " + std::to_string(dim));
  }

  void subSample(unsigned dim) {
    std::size_t stride = 1 + pick(4);
    apply(t_.subSample(stride, dim), refSubSample(ref_, stride, dim),
          "subSample " + std::to_string(stride) + " dim " +
              std::to_string(dim));
  }

  void flatten(unsigned dim) {
    unsigned e = dim + 1 + pick(t_.rank() - dim);
    const Shape &old = t_.shape();
    Shape shape(old.begin(), old.begin() + dim);
    shape.push_back(count(Shape(old.begin() + dim, old.begin() + e)));
    shape.insert(shape.end(), old.begin() + e, old.end());
    apply(t_.flatten(dim, e), refReshape(ref_, shape),
          "flatten " + std::to_string(dim) + " " + std::to_string(e));
  }

  void concatWithItself(unsigned dim) {
    if (t_.numElements() * 2 > 3000)
      return;
    Tensor other = pick(2) ? t_.reverse(dim) : t_.subSample(2, dim);
    apply(concat(t_, other, dim), refConcat({ref_, refOf(other)}, dim),
          "concat dim " + std::to_string(dim));
  }

  void squeeze() {
    std::vector<std::size_t> ones;
    Shape shape;
    for (unsigned k = 0; k < t_.rank(); ++k) {
      if (t_.dim(k) == 1)
        ones.push_back(k);
      else
        shape.push_back(t_.dim(k));
    }
    apply(t_.squeeze(ones), refReshape(ref_, shape), "squeeze " + show(ones));
  }

  void expand() {
    if (t_.rank() >= 5)
      return;
    std::size_t position = pick(t_.rank() + 1);
    Shape shape = t_.shape();
    shape.insert(shape.begin() + position, 1);
    apply(t_.expand({position}), refReshape(ref_, shape),
          "expand " + std::to_string(position));
  }

  void reshape() {
    Shape shape;
    std::size_t n = t_.numElements();
    if (n == 0)
      shape = {0, 1 + pick(3)};
    while (n > 1 && shape.size() < 3) {
      std::size_t f = 1 + pick(n);
      while (n % f)
        --f;
      shape.push_back(f);
      n /= f;
    }
    if (n > 1 || shape.empty())
      shape.push_back(n);
    apply(t_.reshape(shape), refReshape(ref_, shape), "reshape " + show(shape));
  }
};

Shape randomShape(std::mt19937 &rng) {
  Shape shape(rng() % 5);
  for (std::size_t &d : shape)
    d = rng() % 12 == 0 ? 0 : 1 + rng() % 6;
  return shape;
}

} // namespace

TEST(Tensor, RandomViewChainsOverOneVariableMatchReference) {
  std::mt19937 rng(2024);
  for (int i = 0; i < 400; ++i) {
    ViewChain chain(contiguous(randomShape(rng)), rng);
    for (int s = 0; s < 8 && !::testing::Test::HasFailure(); ++s)
      chain.step();
  }
}

TEST(Tensor, RandomViewChainsOverManyVariablesMatchReference) {
  std::mt19937 rng(99);
  for (int i = 0; i < 400; ++i) {
    ViewChain chain(scattered(randomShape(rng), rng), rng);
    for (int s = 0; s < 8 && !::testing::Test::HasFailure(); ++s)
      chain.step();
  }
}

TEST(Tensor, LargeStepsSkipRunsOfManyRunSource) {
  // 100 runs of 7 elements; a subSample by 23 jumps over several runs at a
  // time, forwards and (after reverse) backwards.
  std::vector<tessera::Run> runs;
  for (std::uint32_t i = 0; i < 100; ++i)
    runs.push_back({i % 5, 1000 + i * 13, i % 3 == 0 ? 2 : -1, 7});
  Tensor t(FLOAT, {700}, runs);
  Ref r = refOf(t);
  expectMatches(t.subSample(23, 0), refSubSample(r, 23, 0));
  expectMatches(t.reverse(0).subSample(23, 0),
                refSubSample(refReverse(r, 0), 23, 0));
  expectMatches(t.reshape({28, 25}).transpose(),
                refShuffle(refReshape(r, {28, 25}), {1, 0}));
  expectMatches(
      t.reshape({35, 20}).slice({3, 5}, {30, 17}).transpose(),
      refShuffle(refSlice(refReshape(r, {35, 20}), {3, 5}, {30, 17}), {1, 0}));
}

TEST(Tensor, PrintsTypeShapeAndRuns) {
  std::ostringstream os;
  os << contiguous({2, 3}).slice(1, 3, 1);
  EXPECT_EQ(os.str(), "float[2, 2]{{var 0, start 1, stride 1, count 2}, "
                      "{var 0, start 4, stride 1, count 2}}");
  std::ostringstream invalid;
  invalid << Tensor();
  EXPECT_EQ(invalid.str(), "Tensor(invalid)");
  std::ostringstream many;
  many << contiguous({20, 2}).transpose();
  EXPECT_EQ(many.str(), "float[2, 20]{{var 0, start 0, stride 2, count 20}, "
                        "{var 0, start 1, stride 2, count 20}}");
  std::ostringstream cut;
  cut << contiguous({2, 20}).transpose();
  EXPECT_NE(cut.str().find(", ... 4 more runs}"), std::string::npos);
}

TEST(TensorErrors, ShapeErrorsSayWhatIsWrongWithTheNumbers) {
  Tensor t = contiguous({4, 3});
  Tensor s = Tensor(FLOAT, {}, {{0, 0, 1, 1}});
  expectError<ShapeError>([&] { t.dim(2); },
                          "dim: dimension 2 is out of range for tensor of "
                          "shape [4, 3] of rank 2");
  expectError<ShapeError>([&] { s[0]; },
                          "operator[]: cannot index a rank-0 tensor (shape "
                          "[]); indexing drops the outermost dimension, so "
                          "the tensor needs at least one");
  expectError<ShapeError>([&] { t[4]; },
                          "index: index 4 is out of range for dimension 0 of "
                          "size 4 in tensor of shape [4, 3]");
  expectError<ShapeError>(
      [&] {
        t.index({1, 3});
      },
      "index: index 3 is out of range for dimension 1 of "
      "size 3 in tensor of shape [4, 3]");
  expectError<ShapeError>(
      [&] {
        t.index({0, 0, 0});
      },
      "index: 3 indices given for tensor of shape [4, 3] "
      "of rank 2; give at most one per dimension");
  expectError<ShapeError>([&] { t.slice(2, 5); },
                          "slice: end 5 is beyond dimension 0 of size 4 in "
                          "tensor of shape [4, 3]");
  expectError<ShapeError>([&] { t.slice(3, 2, 1); },
                          "slice: begin 3 is after end 2 on dimension 1 in "
                          "tensor of shape [4, 3]");
  expectError<ShapeError>([&] { t.slice(0, 1, 2); },
                          "slice: dimension 2 is out of range for tensor of "
                          "shape [4, 3] of rank 2");
  expectError<ShapeError>(
      [&] {
        t.slice({0}, {1, 1});
      },
      "slice: 1 begin and 2 end indices given for tensor "
      "of shape [4, 3] of rank 2; give one of each per "
      "dimension");
  expectError<ShapeError>(
      [&] {
        t.slices({{0, 1}, {1, 4}}, 1);
      },
      "slice: end 4 is beyond dimension 1 of size 3 in "
      "tensor of shape [4, 3]");
}

TEST(TensorErrors, ReshapeAndFlattenErrors) {
  Tensor t = contiguous({2, 3});
  expectError<ShapeError>(
      [&] {
        t.reshape({4, 2});
      },
      "reshape: [2, 3] has 6 elements but the new shape "
      "[4, 2] has 8");
  expectError<ShapeError>([&] { t.flatten(1, 1); },
                          "flatten: dimensions [1, 1) are not a non-empty "
                          "range of the dimensions of tensor of shape [2, 3] "
                          "of rank 2");
  expectError<ShapeError>([&] { t.flatten(0, 3); },
                          "flatten: dimensions [0, 3) are not a non-empty "
                          "range of the dimensions of tensor of shape [2, 3] "
                          "of rank 2");
}

TEST(TensorErrors, PermutationErrors) {
  Tensor t = contiguous({2, 3, 4});
  expectError<ShapeError>(
      [&] {
        t.dimShuffle({0, 0, 1});
      },
      "dimShuffle: [0, 0, 1] is not a permutation of "
      "0..2; each dimension of the tensor of shape "
      "[2, 3, 4] must appear exactly once");
  expectError<ShapeError>(
      [&] {
        t.dimShuffle({0, 3, 1});
      },
      "dimShuffle: [0, 3, 1] is not a permutation of "
      "0..2; each dimension of the tensor of shape "
      "[2, 3, 4] must appear exactly once");
  expectError<ShapeError>(
      [&] {
        t.dimShuffle({1, 0});
      },
      "dimShuffle: permutation [1, 0] has 2 entries but "
      "the tensor of shape [2, 3, 4] has rank 3");
  expectError<ShapeError>([&] { t.dimRoll(3, 0); },
                          "dimRoll: dimension 3 is out of range for tensor "
                          "of shape [2, 3, 4] of rank 3");
  expectError<ShapeError>([&] { t.dimRoll(0, 3); },
                          "dimRoll: dimension 3 is out of range for tensor "
                          "of shape [2, 3, 4] of rank 3");
  expectError<ShapeError>([&] { t.transpose(); },
                          "transpose: tensor of shape [2, 3, 4] has rank 3 "
                          "but transpose needs rank 2; use dimShuffle to "
                          "permute the dimensions of other ranks");
}

TEST(TensorErrors, DimensionArgumentErrors) {
  Tensor t = contiguous({4, 3});
  expectError<ShapeError>([&] { t.broadcast(2, 2); },
                          "broadcast: dimension 2 is out of range for tensor "
                          "of shape [4, 3] of rank 2");
  expectError<ShapeError>([&] { t.reverse(5); },
                          "reverse: dimension 5 is out of range for tensor of "
                          "shape [4, 3] of rank 2");
  expectError<ShapeError>([&] { t.subSample(2, 2); },
                          "subSample: dimension 2 is out of range for tensor "
                          "of shape [4, 3] of rank 2");
  expectError<ShapeError>([&] { t.subSample(0, 1); },
                          "subSample: stride 0 on dimension 1 in tensor of "
                          "shape [4, 3] is not allowed; the stride must be at "
                          "least 1");
  expectError<ShapeError>([&] { t.expand({3}); },
                          "expand: position 3 is beyond rank 2 of tensor of "
                          "shape [4, 3]; positions go from 0 to the rank");
  Tensor u = t.expand({1});
  expectError<ShapeError>([&] { u.squeeze({0}); },
                          "squeeze: dimension 0 has size 4, not 1, in tensor "
                          "of shape [4, 1, 3]; only dimensions of size 1 can "
                          "be removed");
  expectError<ShapeError>([&] { u.squeeze({3}); },
                          "squeeze: dimension 3 is out of range for tensor of "
                          "shape [4, 1, 3] of rank 3");
  expectError<ShapeError>(
      [&] {
        u.squeeze({1, 1});
      },
      "squeeze: dimension 1 is listed twice in [1, 1]");
}

TEST(TensorErrors, ReinterpretNeedsTypeOfSameSize) {
  Tensor t = contiguous({4});
  expectError<TypeError>([&] { t.reinterpret(HALF); },
                         "reinterpret: float has 4 bytes per element but half "
                         "has 2; reinterpret needs types of the same size");
  EXPECT_EQ(t.reinterpret(UNSIGNED_INT).elementType(), UNSIGNED_INT);
}

TEST(TensorErrors, ConcatAndAppendErrors) {
  Tensor a = contiguous({4, 3}), b = contiguous({4, 2}, 1);
  expectError<ShapeError>([&] { concat(std::vector<Tensor>{}); },
                          "concat: no tensors to join; pass at least one");
  expectError<ShapeError>([&] { concat(a, b, 0); },
                          "concat: tensor 1 has shape [4, 2] but tensor 0 has "
                          "shape [4, 3]; they differ on dimension 1 (2 vs 3) "
                          "and only dimension 0 may differ");
  expectError<ShapeError>([&] { concat(a, b.flatten(), 0); },
                          "concat: tensor 1 has shape [8] of rank 1 but tensor "
                          "0 has shape [4, 3] of rank 2");
  expectError<ShapeError>([&] { concat(a, a, 2); },
                          "concat: dimension 2 is out of range for tensors of "
                          "shape [4, 3] of rank 2");
  expectError<TypeError>([&] { concat(a, a.reinterpret(INT), 1); },
                         "concat: tensor 1 has type int but tensor 0 has type "
                         "float");
  expectError<ShapeError>([&] { append(a, b, 1); },
                          "append: b has shape [4, 2] of rank 2 but a has "
                          "shape [4, 3] of rank 2; b needs one dimension "
                          "fewer than a");
  expectError<ShapeError>([&] { append(a, contiguous({4}), 2); },
                          "append: dimension 2 is out of range for tensor a "
                          "of shape [4, 3] of rank 2");
  expectError<ShapeError>([&] { append(a, contiguous({4}), 0); },
                          "concat: tensor 1 has shape [1, 4] but tensor 0 has "
                          "shape [4, 3]; they differ on dimension 1 (4 vs 3) "
                          "and only dimension 0 may differ");
}

TEST(TensorErrors, ViewsOfDefaultConstructedTensorAreGraphErrors) {
  Tensor t;
  expectError<GraphError>([&] { t.slice(0, 1); },
                          "slice: the tensor is default-constructed and views "
                          "no variable; make tensors with Graph::addVariable "
                          "or Graph::addConstant");
  expectError<GraphError>([&] { t.flatten(); },
                          "flatten: the tensor is default-constructed and "
                          "views no variable; make tensors with "
                          "Graph::addVariable or Graph::addConstant");
  expectError<GraphError>([&] { concat(contiguous({1}), t); },
                          "concat: the tensor is default-constructed and "
                          "views no variable; make tensors with "
                          "Graph::addVariable or Graph::addConstant");
}

TEST(TensorDeathTest, RunsThatDoNotFillTheShapeAreABug) {
  auto bad = [] {
    try {
      Tensor(FLOAT, {2, 3}, {{0, 0, 1, 5}});
    } catch (...) {
      std::abort();
    }
  };
  EXPECT_DEATH(bad(), "");
}

TEST(Tensor, FlatRunsAreTheRunsOfTheFlatSlice) {
  // Every range of views whose runs are strided, repeated, reversed and
  // from two variables gives the runs its slice has, merged alike.
  Tensor a = contiguous({6, 5});
  Tensor b(FLOAT, {4, 5}, {{1, 0, 1, 20}});
  const std::vector<Tensor> views{a.transpose(),
                                  a.subSample(2, 1),
                                  contiguous({6, 1}).broadcast(3, 1),
                                  a.reverse(1),
                                  concat(a, b),
                                  concat(a.transpose(), b.transpose(), 1),
                                  a.flatten().slice(3, 4)};
  std::vector<tessera::Run> runs{{7, 7, 7, 7}};
  for (const Tensor &v : views) {
    const std::size_t n = v.numElements();
    for (std::size_t begin = 0; begin <= n; ++begin)
      for (std::size_t end = begin; end <= n; ++end) {
        v.flatRuns(begin, end, runs);
        if (begin == end)
          EXPECT_TRUE(runs.empty());
        else
          EXPECT_EQ(ArrayView<tessera::Run>(runs),
                    v.flatten().slice(begin, end).runs())
              << v << " [" << begin << ", " << end << ")";
      }
  }
}

TEST(Tensor, FlatRunsRejectRangesOutsideTheTensor) {
  std::vector<tessera::Run> runs;
  EXPECT_THROW(contiguous({2, 3}).flatRuns(2, 7, runs), ShapeError);
  EXPECT_THROW(contiguous({2, 3}).flatRuns(4, 3, runs), ShapeError);
  EXPECT_THROW(Tensor().flatRuns(0, 0, runs), GraphError);
}

TEST(Tensor, OneDimensionalConstructorMergesRuns) {
  const std::vector<tessera::Run> runs{
      {0, 0, 1, 2}, {0, 2, 1, 3}, {1, 7, 1, 1}, {1, 9, 5, 1}, {1, 11, 2, 2}};
  Tensor t(FLOAT, ArrayView<tessera::Run>(runs));
  EXPECT_EQ(t.shape(), (Shape{9}));
  EXPECT_EQ(t.runs(), Tensor(FLOAT, {9}, runs).runs());
  EXPECT_EQ(Tensor(HALF, ArrayView<tessera::Run>()).numElements(), 0u);
}

TEST(Tensor, ReversingInnerDimensionsTogetherGivesTheSameRuns) {
  // What the convolution's flipped weights rely on: reversing the two
  // kernel dimensions of a transposed kernel one after the other or as one
  // flattened dimension gives the same runs.
  for (const Shape &s : {Shape{1, 4, 3, 3, 3}, Shape{2, 3, 5, 1, 1},
                         Shape{1, 2, 3, 7, 7}, Shape{1, 3, 2, 1, 3}}) {
    const Tensor t = contiguous(s).dimShuffle({0, 2, 1, 3, 4});
    const std::vector<std::size_t> shape = t.shape();
    EXPECT_EQ(t.flatten(3, 5).reverse(3).reshape(shape).runs(),
              t.reverse(3).reverse(4).runs())
        << t;
  }
}
