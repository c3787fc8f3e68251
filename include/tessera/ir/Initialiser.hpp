/// \file
/// Initialisers of variables: how a parameter's first value is made. Random
/// initialisers draw from the ops library's counter-based generator
/// (ops/Random.hpp) with the initialiser's seed, so a variable's initial
/// value is a pure function of its initialiser and shape: the same on the
/// host interpreter, in a lowered graph and across runs.
///
/// Fans (for the Glorot and He families) follow the layouts the IR uses: a
/// rank-2 shape is [fanIn, fanOut] (a matmul's right operand); rank 3 and
/// above is [out, in, spatial...] (a conv2d's weights), fanIn = in x
/// spatial and fanOut = out x spatial; rank 1 has fanIn = fanOut = its
/// size; a scalar has 1 and 1.
#pragma once

#include "tessera/support/Type.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tessera::ir {

enum class InitKind : std::uint8_t {
  Zeros,
  Ones,
  Constant,        ///< every element a
  Uniform,         ///< uniform in [a, b)
  Normal,          ///< normal, mean a, standard deviation b
  TruncatedNormal, ///< normal within 2 standard deviations of the mean
  GlorotUniform,   ///< uniform in +-sqrt(6 / (fanIn + fanOut))
  GlorotNormal,    ///< truncated normal, stddev sqrt(2 / (fanIn + fanOut))
  HeUniform,       ///< uniform in +-sqrt(6 / fanIn)
  HeNormal,        ///< truncated normal, stddev sqrt(2 / fanIn)
  Values,          ///< explicit values, one per element
};

/// An initialiser: a kind, its parameters and its seed.
struct Initialiser {
  InitKind kind = InitKind::Zeros;
  double a = 0, b = 0;
  std::uint64_t seed = 0;
  std::vector<double> values;

  /// The text form: "zeros", "constant(value = 0.5)", "uniform(low = -1,
  /// high = 1, seed = 3)", "normal(mean = 0, stddev = 1, seed = 3)",
  /// "truncatedNormal(...)" as normal, "glorotUniform(seed = 3)" (and
  /// glorotNormal, heUniform, heNormal), "values(1, 2.5, 3)".
  std::string toString() const;
  bool isRandom() const;
  bool operator==(const Initialiser &) const = default;
};

/// The initialisers, named as Keras names them.
namespace init {
Initialiser zeros();
Initialiser ones();
Initialiser constant(double value);
Initialiser uniform(double low, double high, std::uint64_t seed);
Initialiser normal(double mean, double stddev, std::uint64_t seed);
Initialiser truncatedNormal(double mean, double stddev, std::uint64_t seed);
Initialiser glorotUniform(std::uint64_t seed);
Initialiser glorotNormal(std::uint64_t seed);
Initialiser heUniform(std::uint64_t seed);
Initialiser heNormal(std::uint64_t seed);
Initialiser values(std::vector<double> values);
} // namespace init

/// (fanIn, fanOut) of \p shape as the file comment defines them.
std::pair<double, double> fans(const std::vector<std::size_t> &shape);

/// Throws ShapeError when explicit values do not match the element count of
/// \p shape, TypeError for a random initialiser of a non-float \p type,
/// UnsupportedError for bad parameters (high < low, a negative standard
/// deviation). Allocates nothing, so a module can be built and verified
/// without drawing its variables' values.
void checkInitialiser(const Initialiser &init, Type type,
                      const std::vector<std::size_t> &shape);

/// The initial value of a variable of \p type and \p shape, row-major
/// (random draws rounded to float). Throws as checkInitialiser does.
std::vector<double> materialise(const Initialiser &init, Type type,
                                const std::vector<std::size_t> &shape);

} // namespace tessera::ir
