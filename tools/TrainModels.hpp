/// \file
/// The models `tessera train` and `tessera plan` build, and how their
/// layers split into pipeline stages.
#pragma once

#include "tessera/nn/Model.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::tools {

/// "mlp" (784-256-128-10) or "cnn" (two convolutions and two dense
/// layers), seeded by \p seed; OptionError for another name.
nn::Sequential buildTrainModel(const std::string &model, std::uint64_t seed);
/// Keras' ResNet50 v1 (tf.keras.applications.ResNet50(weights=None,
/// input_shape=(imageSize, imageSize, 3), classes=\p classes)) with
/// Keras' layer names; 23,608,202 parameters for 10 classes at any image
/// size. OptionError for an image size below 32 (the five stride-2 steps
/// need it).
nn::Model buildResNet50(unsigned imageSize, unsigned classes,
                        std::uint64_t seed);
/// The layers after the Input of buildTrainModel(\p model).
std::size_t trainModelLayers(const std::string &model);

/// Layer i of the \p layers layers after the Input goes to stage
/// floor(i * S / L): S contiguous stages whose sizes differ by at most one
/// layer.
std::vector<unsigned> evenStages(std::size_t layers, unsigned stages);

/// With \p stages > 0: the layers split by evenStages, stage i on IPU i,
/// trained with \p schedule ("grouped", "interleaved" or "sequential")
/// over \p accumulation micro-batches; otherwise plain gradient
/// accumulation of \p accumulation steps (MEAN).
void applyPipelining(nn::Model &model, unsigned stages,
                     const std::string &schedule, unsigned accumulation,
                     bool recompute);

} // namespace tessera::tools
