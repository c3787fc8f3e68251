// Helpers shared by the nn sources: Keras-style shape text and seeds.
#pragma once

#include "tessera/nn/Layers.hpp"

#include <cstdint>
#include <string>

namespace tessera::nn::detail {

/// "(None, 28, 28, 1)": a logical shape whose first dimension is the batch.
std::string kerasShape(const Shape &withBatch);

/// A well-mixed 64-bit value of \p a and \p b (splitmix64 steps), so
/// neighbouring layers and variables get unrelated seeds.
std::uint64_t mixSeed(std::uint64_t a, std::uint64_t b);
std::uint64_t hashString(const std::string &s);

/// Default options of a layer (DenseOptions, Conv2DOptions) but for the
/// activation named \p activation.
template <typename Options>
Options withActivation(const std::string &activation) {
  Options o;
  o.activation = activationFromName(activation);
  return o;
}

/// "dense (Dense)", as messages and summary() name a layer.
std::string describeLayer(const Layer &layer);

/// Explicit padding of a "same" window: (lower, upper) for an input of
/// \p in elements, window \p k and stride \p s.
std::pair<unsigned, unsigned> samePadding(std::size_t in, unsigned k,
                                          unsigned s);

/// The training module's output carrying outfeed layer \p layer's input:
/// "outfeed/<layer>".
inline std::string outfeedOutput(const std::string &layer) {
  return "outfeed/" + layer;
}

} // namespace tessera::nn::detail
