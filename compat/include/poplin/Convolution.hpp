/// \file
/// poplin convolutions: ConvParams, createInput, createWeights, createBiases,
/// convolution and its gradients, addBias, as Tessera's.
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/Program.hpp>
#include <tessera/ops/Conv.hpp>

namespace poplin {
using tessera::ops::addBias;
using tessera::ops::ConvParams;
using tessera::ops::convolution;
using tessera::ops::convolutionInputGradient;
using tessera::ops::convolutionWeightGradient;
using tessera::ops::convolutionWithOutput;
using tessera::ops::createBiases;
using tessera::ops::createInput;
using tessera::ops::createWeights;
} // namespace poplin
