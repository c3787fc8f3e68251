#include "tessera/ir/Initialiser.hpp"

#include "Format.hpp"

#include "tessera/ops/Reference.hpp"
#include "tessera/support/Error.hpp"

#include <cmath>

namespace tessera::ir {

using detail::formatFloat;

namespace init {
Initialiser zeros() { return {InitKind::Zeros, 0, 0, 0, {}}; }
Initialiser ones() { return {InitKind::Ones, 0, 0, 0, {}}; }
Initialiser constant(double value) {
  return {InitKind::Constant, value, 0, 0, {}};
}
Initialiser uniform(double low, double high, std::uint64_t seed) {
  return {InitKind::Uniform, low, high, seed, {}};
}
Initialiser normal(double mean, double stddev, std::uint64_t seed) {
  return {InitKind::Normal, mean, stddev, seed, {}};
}
Initialiser truncatedNormal(double mean, double stddev, std::uint64_t seed) {
  return {InitKind::TruncatedNormal, mean, stddev, seed, {}};
}
Initialiser glorotUniform(std::uint64_t seed) {
  return {InitKind::GlorotUniform, 0, 0, seed, {}};
}
Initialiser glorotNormal(std::uint64_t seed) {
  return {InitKind::GlorotNormal, 0, 0, seed, {}};
}
Initialiser heUniform(std::uint64_t seed) {
  return {InitKind::HeUniform, 0, 0, seed, {}};
}
Initialiser heNormal(std::uint64_t seed) {
  return {InitKind::HeNormal, 0, 0, seed, {}};
}
Initialiser values(std::vector<double> values) {
  return {InitKind::Values, 0, 0, 0, std::move(values)};
}
} // namespace init

bool Initialiser::isRandom() const {
  return kind != InitKind::Zeros && kind != InitKind::Ones &&
         kind != InitKind::Constant && kind != InitKind::Values;
}

std::string Initialiser::toString() const {
  const std::string s = "seed = " + std::to_string(seed);
  switch (kind) {
  case InitKind::Zeros:
    return "zeros";
  case InitKind::Ones:
    return "ones";
  case InitKind::Constant:
    return "constant(value = " + formatFloat(a) + ")";
  case InitKind::Uniform:
    return "uniform(low = " + formatFloat(a) + ", high = " + formatFloat(b) +
           ", " + s + ")";
  case InitKind::Normal:
  case InitKind::TruncatedNormal:
    return std::string(kind == InitKind::Normal ? "normal"
                                                : "truncatedNormal") +
           "(mean = " + formatFloat(a) + ", stddev = " + formatFloat(b) + ", " +
           s + ")";
  case InitKind::GlorotUniform:
    return "glorotUniform(" + s + ")";
  case InitKind::GlorotNormal:
    return "glorotNormal(" + s + ")";
  case InitKind::HeUniform:
    return "heUniform(" + s + ")";
  case InitKind::HeNormal:
    return "heNormal(" + s + ")";
  case InitKind::Values: {
    std::string v = "values(";
    for (std::size_t i = 0; i < values.size(); ++i)
      v += (i ? ", " : "") + formatFloat(values[i]);
    return v + ")";
  }
  }
  TESSERA_INTERNAL_ASSERT(false, "unknown initialiser kind");
}

std::pair<double, double> fans(const std::vector<std::size_t> &shape) {
  if (shape.empty())
    return {1, 1};
  if (shape.size() == 1)
    return {double(shape[0]), double(shape[0])};
  if (shape.size() == 2)
    return {double(shape[0]), double(shape[1])};
  double receptive = 1;
  for (std::size_t i = 2; i < shape.size(); ++i)
    receptive *= double(shape[i]);
  return {double(shape[1]) * receptive, double(shape[0]) * receptive};
}

namespace {

// A normal truncated at two standard deviations has a standard deviation
// 0.87962566 times the untruncated one; dividing by it makes the drawn
// values have the standard deviation the Glorot and He rules ask for.
constexpr double truncatedStddevFactor = 0.87962566103423978;

std::vector<double> draw(const Initialiser &init, Type type, std::size_t n,
                         const std::vector<std::size_t> &shape) {
  namespace ref = ops::reference;
  const std::array<std::uint32_t, 2> seed{
      static_cast<std::uint32_t>(init.seed),
      static_cast<std::uint32_t>(init.seed >> 32)};
  const auto [fanIn, fanOut] = fans(shape);
  switch (init.kind) {
  case InitKind::Uniform:
    return ref::randomUniform(seed, 0, n, type, init.a, init.b);
  case InitKind::Normal:
    return ref::randomNormal(seed, 0, n, type, init.a, init.b);
  case InitKind::TruncatedNormal:
    return ref::randomTruncatedNormal(seed, 0, n, type, init.a, init.b, 2.0);
  case InitKind::GlorotUniform: {
    const double limit = std::sqrt(6.0 / (fanIn + fanOut));
    return ref::randomUniform(seed, 0, n, type, -limit, limit);
  }
  case InitKind::HeUniform: {
    const double limit = std::sqrt(6.0 / fanIn);
    return ref::randomUniform(seed, 0, n, type, -limit, limit);
  }
  case InitKind::GlorotNormal:
  case InitKind::HeNormal: {
    const double var = init.kind == InitKind::GlorotNormal
                           ? 2.0 / (fanIn + fanOut)
                           : 2.0 / fanIn;
    return ref::randomTruncatedNormal(
        seed, 0, n, type, 0.0, std::sqrt(var) / truncatedStddevFactor, 2.0);
  }
  default:
    TESSERA_INTERNAL_ASSERT(false, "not a random initialiser");
  }
}

} // namespace

void checkInitialiser(const Initialiser &init, Type type,
                      const std::vector<std::size_t> &shape) {
  std::size_t n = 1;
  for (std::size_t d : shape)
    n *= d;
  switch (init.kind) {
  case InitKind::Zeros:
  case InitKind::Ones:
  case InitKind::Constant:
    return;
  case InitKind::Values:
    if (init.values.size() != n)
      throw ShapeError("the initialiser has " +
                       std::to_string(init.values.size()) +
                       " values but the shape needs " + std::to_string(n) +
                       "; give one value per element");
    return;
  default:
    break;
  }
  if (!isFloatingPoint(type))
    throw TypeError("a random initialiser (" + init.toString() +
                    ") needs a float or half variable, not " +
                    std::string(typeName(type)) +
                    "; use zeros, ones, constant or values");
  if (init.kind == InitKind::Uniform && init.b < init.a)
    throw UnsupportedError("uniform initialiser: high (" + formatFloat(init.b) +
                           ") is below low (" + formatFloat(init.a) + ")");
  if ((init.kind == InitKind::Normal ||
       init.kind == InitKind::TruncatedNormal) &&
      !(init.b >= 0))
    throw UnsupportedError("normal initialiser: the standard deviation (" +
                           formatFloat(init.b) + ") must be >= 0");
}

std::vector<double> materialise(const Initialiser &init, Type type,
                                const std::vector<std::size_t> &shape) {
  checkInitialiser(init, type, shape);
  std::size_t n = 1;
  for (std::size_t d : shape)
    n *= d;
  switch (init.kind) {
  case InitKind::Zeros:
    return std::vector<double>(n, 0.0);
  case InitKind::Ones:
    return std::vector<double>(n, 1.0);
  case InitKind::Constant:
    return std::vector<double>(n, init.a);
  case InitKind::Values:
    return init.values;
  default:
    break;
  }
  if (n == 0)
    return {};
  return draw(init, type, n, shape);
}

} // namespace tessera::ir
