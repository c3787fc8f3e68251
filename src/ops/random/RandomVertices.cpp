// The random vertices and their estimators. Each vertex is one worker's
// share of a tile: a list of regions of its output (a 2-D vertex, so a
// fragmented mapping still gives at most six vertices a tile); its plain
// state says which element of the whole tensor each region starts at, and
// that index, not the vertex, picks the generator's counter.
#include "OpsInternal.hpp"
#include "RandomKernels.hpp"

#include "tessera/Vertex.hpp"
#include "tessera/device/Target.hpp"

#include <bit>
#include <type_traits>

namespace tessera::ops {
namespace {

template <typename T> T fromFloat(float v) {
  if constexpr (std::is_same_v<T, Half>)
    return Half(v);
  else
    return static_cast<T>(v);
}

template <typename T> float toFloat(T v) { return static_cast<float>(v); }

// x where keep, else +0, by masking the bits: branch-free (the keep test is
// a coin flip) and vectorisable, and 0 even for an infinite or NaN x.
inline float keepOrZero(bool keep, float x) {
  const std::uint32_t mask = 0u - static_cast<std::uint32_t>(keep);
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(x) & mask);
}

random::Key keyOf(const Input<Vector<unsigned>> &seed) {
  return {seed[0], seed[1]};
}

// The flat index of region r's first element: offsets holds it as two
// words per region, low first.
std::uint64_t offsetOf(const Vector<unsigned> &offsets, std::size_t r) {
  return (std::uint64_t(offsets[2 * r + 1]) << 32) | offsets[2 * r];
}

// Stores positions skip ... skip + count - 1 of a batch of nb blocks into
// out.
template <typename T>
void storeValues(const random::Values &v, unsigned nb, unsigned skip,
                 unsigned count, T *out) {
  alignas(32) float e[4 * random::kBatch];
  random::toElementOrder(v, nb, e);
  for (unsigned k = 0; k < count; ++k)
    out[k] = fromFloat<T>(e[skip + k]);
}

// The words of a batch of nb blocks in element order.
struct ElementWords {
  alignas(32) std::uint32_t e[4 * random::kBatch];
  ElementWords(const random::Words &w, unsigned nb) {
    random::toElementOrder(w, nb, e);
  }
};

// Fills out[0, n) from a float transform: transform(w, v, nb, firstBlock).
template <typename T, typename Transform>
void fillFrom(random::Key key, unsigned modifier, std::uint64_t offset, T *out,
              std::size_t n, const Transform &transform) {
  random::forEachBatch(key, modifier, offset, n,
                       [&](const random::Words &w, unsigned nb,
                           std::uint64_t first, std::size_t i, unsigned skip,
                           unsigned count) {
                         alignas(32) random::Values v;
                         transform(w, v, nb, first);
                         storeValues(v, nb, skip, count, out + i);
                       });
}

// Fills out[0, n) from the words alone: out = f(word).
template <typename T, typename F>
void fillFromWords(random::Key key, unsigned modifier, std::uint64_t offset,
                   T *out, std::size_t n, const F &f) {
  random::forEachBatch(key, modifier, offset, n,
                       [&](const random::Words &w, unsigned nb, std::uint64_t,
                           std::size_t i, unsigned skip, unsigned count) {
                         const ElementWords words(w, nb);
                         const std::uint32_t *e = words.e + skip;
                         T *o = out + i;
                         for (unsigned k = 0; k < count; ++k)
                           o[k] = f(e[k]);
                       });
}

template <typename T> class UniformVertex : public Vertex {
public:
  Input<Vector<unsigned>> seed;
  Vector<Output<Vector<T>>> out;
  unsigned seedModifier;
  Vector<unsigned> offsets;
  float minVal, maxVal;

  bool compute() {
    const float lo = minVal, range = maxVal - minVal;
    for (std::size_t r = 0; r < out.size(); ++r)
      fillFrom(
          keyOf(seed), seedModifier, offsetOf(offsets, r), out[r].data(),
          out[r].size(),
          [&](const random::Words &w, random::Values &v, unsigned nb,
              std::uint64_t) { random::uniformBatch(w, v, nb, lo, range); });
    return true;
  }
};

class UniformIntVertex : public Vertex {
public:
  Input<Vector<unsigned>> seed;
  Vector<Output<Vector<int>>> out;
  unsigned seedModifier;
  Vector<unsigned> offsets;
  int minVal, maxVal;

  bool compute() {
    const random::UniformIntDist dist{
        minVal, static_cast<std::uint64_t>(std::int64_t(maxVal) - minVal + 1)};
    for (std::size_t r = 0; r < out.size(); ++r)
      fillFromWords(keyOf(seed), seedModifier, offsetOf(offsets, r),
                    out[r].data(), out[r].size(),
                    [&](std::uint32_t x) { return dist.value(x); });
    return true;
  }
};

template <typename T> class NormalVertex : public Vertex {
public:
  Input<Vector<unsigned>> seed;
  Vector<Output<Vector<T>>> out;
  unsigned seedModifier;
  Vector<unsigned> offsets;
  float mean, stdDev;

  bool compute() {
    const float m = mean, s = stdDev;
    for (std::size_t r = 0; r < out.size(); ++r)
      fillFrom(keyOf(seed), seedModifier, offsetOf(offsets, r), out[r].data(),
               out[r].size(),
               [&](const random::Words &w, random::Values &v, unsigned nb,
                   std::uint64_t) { random::normalBatch(w, v, nb, m, s); });
    return true;
  }
};

template <typename T> class TruncatedNormalVertex : public Vertex {
public:
  Input<Vector<unsigned>> seed;
  Vector<Output<Vector<T>>> out;
  unsigned seedModifier;
  Vector<unsigned> offsets;
  float mean, stdDev, alpha;

  bool compute() {
    const random::Key key = keyOf(seed);
    const unsigned modifier = seedModifier;
    for (std::size_t r = 0; r < out.size(); ++r)
      fillFrom(key, modifier, offsetOf(offsets, r), out[r].data(),
               out[r].size(),
               [&](const random::Words &w, random::Values &v, unsigned nb,
                   std::uint64_t first) {
                 random::truncatedNormalBatch(key, modifier, first, w, v, nb,
                                              mean, stdDev, alpha);
               });
    return true;
  }
};

template <typename T> class BernoulliVertex : public Vertex {
public:
  Input<Vector<unsigned>> seed;
  Vector<Output<Vector<T>>> out;
  unsigned seedModifier;
  Vector<unsigned> offsets;
  float prob;

  bool compute() {
    const std::uint64_t threshold = random::probabilityThreshold(prob);
    for (std::size_t r = 0; r < out.size(); ++r)
      fillFromWords(keyOf(seed), seedModifier, offsetOf(offsets, r),
                    out[r].data(), out[r].size(), [&](std::uint32_t x) {
                      return fromFloat<T>(keepOrZero(x < threshold, 1.0f));
                    });
    return true;
  }
};

// One batch's worth of dropout; restrict lets the loop vectorise.
template <typename T, bool WithMask>
void dropoutRange(const std::uint32_t *__restrict e, const T *__restrict in,
                  T *__restrict out, T *__restrict mask, unsigned count,
                  std::uint64_t threshold, float scale) {
  for (unsigned c = 0; c < count; ++c) {
    const bool keep = e[c] < threshold;
    out[c] = fromFloat<T>(keepOrZero(keep, toFloat(in[c]) * scale));
    if constexpr (WithMask)
      mask[c] = fromFloat<T>(keepOrZero(keep, 1.0f));
  }
}

// Dropout with or without writing the mask (the element type, 0 or 1):
// region r reads in[r] and writes out[r] (and mask[r]).
template <typename T, bool WithMask> class DropoutVertex : public Vertex {
public:
  Input<Vector<unsigned>> seed;
  Vector<Input<Vector<T>>> in;
  Vector<Output<Vector<T>>> out;
  Vector<Output<Vector<T>>> mask; ///< empty without the mask
  unsigned seedModifier;
  Vector<unsigned> offsets;
  float keepProb, scale;

  bool compute() {
    const std::uint64_t threshold = random::probabilityThreshold(keepProb);
    for (std::size_t r = 0; r < out.size(); ++r) {
      const T *i0 = in[r].data();
      T *o = out[r].data();
      T *m = WithMask ? mask[r].data() : nullptr;
      random::forEachBatch(
          keyOf(seed), seedModifier, offsetOf(offsets, r), out[r].size(),
          [&](const random::Words &w, unsigned nb, std::uint64_t, std::size_t i,
              unsigned skip, unsigned count) {
            const ElementWords words(w, nb);
            dropoutRange<T, WithMask>(words.e + skip, i0 + i, o + i,
                                      WithMask ? m + i : nullptr, count,
                                      threshold, scale);
          });
    }
    return true;
  }
};

// The fields every random vertex has, in order: the seed, then (after any
// inputs and outputs) the modifier and each region's first element index.
template <typename V>
codelet::VertexDescriber<V> &counterFields(codelet::VertexDescriber<V> &d) {
  return d.field("seedModifier", &V::seedModifier)
      .field("offsets", &V::offsets);
}

// Estimated worker cycles: a fixed cost (reading the seed into the
// generator's state, as poprand's vertices set the hardware seeds) plus
// `perVector` cycles per 64-bit vector of output. The IPU draws 64 random
// bits per cycle (its urand instructions) and Gaussian pairs in one
// instruction (f32v2grand), so a uniform or bernoulli draw costs about a
// unary op, a normal draw about twice that (estimate), a truncated normal
// four times (estimate: poprand redraws out-of-range values over several
// passes), and dropout a binary op (it also loads the input). Each region
// rounds up to whole vectors, and each after the first costs one vector's
// worth more to set up its pointers and loop count (as a map's 2-D vertex).
// Every figure is read from the target compiled for when the estimate is
// made.
CycleEstimator randomEstimator(unsigned outField, Type type,
                               unsigned CostFigures::*perVector,
                               unsigned times = 1, unsigned plus = 0) {
  return [=](const VertexInstanceShape &s, const Target &t) {
    const CostFigures &c = t.costs();
    const std::uint64_t width = t.getVectorWidth(type);
    const std::uint64_t vector = std::uint64_t(times) * (c.*perVector) + plus;
    const auto &regions = s.fieldSizes[outField];
    std::uint64_t cycles = c.unaryOpWorkerCycles;
    for (const auto n : regions)
      cycles += vector * ((std::uint64_t(n) + width - 1) / width);
    if (!regions.empty())
      cycles += (c.*perVector) * (regions.size() - 1);
    return cycles;
  };
}

template <typename T>
void registerFloatDistributions(VertexRegistry &registry) {
  const Type t = typeOf<T>();
  const auto unary = &CostFigures::unaryOpWorkerCyclesPerVector;
  const auto binary = &CostFigures::binaryOpWorkerCyclesPerVector;
  {
    using V = UniformVertex<T>;
    codelet::VertexDescriber<V> d(templateName("tessera::ops::Uniform", {t}));
    d.field("seed", &V::seed).field("out", &V::out);
    counterFields(d).field("minVal", &V::minVal).field("maxVal", &V::maxVal);
    registry.addBuiltin(d.take(), randomEstimator(1, t, unary));
  }
  {
    using V = NormalVertex<T>;
    codelet::VertexDescriber<V> d(templateName("tessera::ops::Normal", {t}));
    d.field("seed", &V::seed).field("out", &V::out);
    counterFields(d).field("mean", &V::mean).field("stdDev", &V::stdDev);
    registry.addBuiltin(d.take(), randomEstimator(1, t, unary, 2));
  }
  {
    using V = TruncatedNormalVertex<T>;
    codelet::VertexDescriber<V> d(
        templateName("tessera::ops::TruncatedNormal", {t}));
    d.field("seed", &V::seed).field("out", &V::out);
    counterFields(d)
        .field("mean", &V::mean)
        .field("stdDev", &V::stdDev)
        .field("alpha", &V::alpha);
    registry.addBuiltin(d.take(), randomEstimator(1, t, unary, 4));
  }
  {
    using V = DropoutVertex<T, false>;
    codelet::VertexDescriber<V> d(templateName("tessera::ops::Dropout", {t}));
    d.field("seed", &V::seed).field("in", &V::in).field("out", &V::out);
    counterFields(d).field("keepProb", &V::keepProb).field("scale", &V::scale);
    registry.addBuiltin(d.take(), randomEstimator(2, t, binary));
  }
  {
    using V = DropoutVertex<T, true>;
    codelet::VertexDescriber<V> d(
        templateName("tessera::ops::DropoutWithMask", {t}));
    d.field("seed", &V::seed)
        .field("in", &V::in)
        .field("out", &V::out)
        .field("mask", &V::mask);
    counterFields(d).field("keepProb", &V::keepProb).field("scale", &V::scale);
    registry.addBuiltin(d.take(), randomEstimator(2, t, binary, 1, 1));
  }
}

template <typename T> void registerBernoulli(VertexRegistry &registry) {
  using V = BernoulliVertex<T>;
  codelet::VertexDescriber<V> d(
      templateName("tessera::ops::Bernoulli", {typeOf<T>()}));
  d.field("seed", &V::seed).field("out", &V::out);
  counterFields(d).field("prob", &V::prob);
  registry.addBuiltin(
      d.take(), randomEstimator(1, typeOf<T>(),
                                &CostFigures::unaryOpWorkerCyclesPerVector));
}

} // namespace

void registerRandomVertices(VertexRegistry &registry) {
  registerFloatDistributions<float>(registry);
  registerFloatDistributions<Half>(registry);
  registerBernoulli<float>(registry);
  registerBernoulli<Half>(registry);
  registerBernoulli<int>(registry);
  {
    using V = UniformIntVertex;
    codelet::VertexDescriber<V> d(templateName("tessera::ops::Uniform", {INT}));
    d.field("seed", &V::seed).field("out", &V::out);
    counterFields(d).field("minVal", &V::minVal).field("maxVal", &V::maxVal);
    registry.addBuiltin(
        d.take(),
        randomEstimator(1, INT, &CostFigures::unaryOpWorkerCyclesPerVector));
  }
}

} // namespace tessera::ops
