/// \file
/// Batch, layer and group normalisation (PopLibs' popnn::bn, ln and gn).
///
/// Activations are [N, C, ...]: batch first, channels second, any number of
/// further (spatial) dimensions. gamma and beta are per channel, [C].
///  - Batch norm: statistics per channel over the batch and spatial
///    dimensions; mean and invStdDev are [C].
///  - Group norm with G groups: channels are split into G contiguous groups
///    of C / G channels (channel c is in group c / (C / G), as PyTorch's
///    GroupNorm); statistics per sample and group over the group's channels
///    and the spatial dimensions; mean and invStdDev are [N * G], element
///    n * G + g for sample n and group g.
///  - Layer norm is group norm with one group (as popnn): statistics per
///    sample over every other dimension, [N].
///
/// Statistics reduce with ops::reduce in \p partialsType and are returned in
/// the activations' type: invStdDev = 1 / sqrt(var + eps), var the biased
/// (population) variance unless \p unbiasedVarEstimate. Without
/// \p stableAlgo the variance is E[x^2] - E[x]^2 from two reductions of the
/// input (clamped at 0); with it, E[(x - mean)^2] after the mean is known,
/// which keeps precision when |mean| >> stddev.
///
/// normalise gives (out, whitened): whitened = (acts - mean) * invStdDev,
/// out = whitened * gamma + beta, each one map. The gradients take the
/// whitened activations, or the activations and the mean, and give
/// (gradsOut, gammaDelta, betaDelta): the gradient with respect to the
/// activations (the statistics depending on the batch, as in training),
/// and sum(gradsIn * whitened) and sum(gradsIn) per channel.
///
/// All tensors are FLOAT or HALF; errors are ShapeError and TypeError
/// naming the tensor and the shape expected. The functions take no options:
/// any key is an OptionError.
#pragma once

#include "tessera/graph/Graph.hpp"
#include "tessera/graph/Program.hpp"
#include "tessera/support/OptionFlags.hpp"

#include <tuple>
#include <utility>

namespace tessera {
namespace ops {

using program::Sequence;

/// (gradsOut, gammaDelta, betaDelta).
using NormGradients = std::tuple<Tensor, Tensor, Tensor>;

// ---- Batch norm ----------------------------------------------------------

/// (mean, invStdDev) of \p acts per channel, each [C].
std::pair<Tensor, Tensor>
batchNormStatistics(Graph &graph, const Tensor &acts, float eps, Sequence &prog,
                    bool unbiasedVarEstimate = false, bool stableAlgo = false,
                    Type partialsType = FLOAT, const DebugContext &dc = {},
                    const OptionFlags &options = {});

/// (out, whitened) for \p acts normalised with per-channel statistics.
std::pair<Tensor, Tensor>
batchNormalise(Graph &graph, const Tensor &acts, const Tensor &gamma,
               const Tensor &beta, const Tensor &mean, const Tensor &invStdDev,
               Sequence &prog, const DebugContext &dc = {},
               const OptionFlags &options = {});

/// acts * combinedMultiplicand + addend per channel (inference with folded
/// statistics: multiplicand = gamma * invStdDev, addend = beta - mean *
/// multiplicand).
Tensor batchNormalise(Graph &graph, const Tensor &acts,
                      const Tensor &combinedMultiplicand, const Tensor &addend,
                      Sequence &prog, const DebugContext &dc = {},
                      const OptionFlags &options = {});

/// Gradients from the whitened activations.
NormGradients batchNormGradients(Graph &graph, const Tensor &actsWhitened,
                                 const Tensor &gradsIn, const Tensor &invStdDev,
                                 const Tensor &gamma, Sequence &prog,
                                 Type partialsType = FLOAT,
                                 const DebugContext &dc = {},
                                 const OptionFlags &options = {});

/// Gradients from the activations and their statistics.
NormGradients batchNormGradients(Graph &graph, const Tensor &acts,
                                 const Tensor &gradsIn, const Tensor &mean,
                                 const Tensor &invStdDev, const Tensor &gamma,
                                 Sequence &prog, Type partialsType = FLOAT,
                                 const DebugContext &dc = {},
                                 const OptionFlags &options = {});

// ---- Group norm ----------------------------------------------------------

/// (mean, invStdDev) of \p acts per sample and group, each [N * numGroups].
/// Throws ShapeError unless numGroups divides C.
std::pair<Tensor, Tensor>
groupNormStatistics(Graph &graph, const Tensor &acts, float eps, Sequence &prog,
                    unsigned numGroups, bool unbiasedVarEstimate = false,
                    bool stableAlgo = false, Type partialsType = FLOAT,
                    const DebugContext &dc = {},
                    const OptionFlags &options = {});

/// (out, whitened); the number of groups is mean's size / N.
std::pair<Tensor, Tensor>
groupNormalise(Graph &graph, const Tensor &acts, const Tensor &gamma,
               const Tensor &beta, const Tensor &mean, const Tensor &invStdDev,
               Sequence &prog, const DebugContext &dc = {},
               const OptionFlags &options = {});

NormGradients groupNormGradients(Graph &graph, const Tensor &actsWhitened,
                                 const Tensor &gradsIn, const Tensor &invStdDev,
                                 const Tensor &gamma, Sequence &prog,
                                 Type partialsType = FLOAT,
                                 const DebugContext &dc = {},
                                 const OptionFlags &options = {});

NormGradients groupNormGradients(Graph &graph, const Tensor &acts,
                                 const Tensor &gradsIn, const Tensor &mean,
                                 const Tensor &invStdDev, const Tensor &gamma,
                                 Sequence &prog, Type partialsType = FLOAT,
                                 const DebugContext &dc = {},
                                 const OptionFlags &options = {});

// ---- Layer norm (group norm with one group) ------------------------------

/// (mean, invStdDev) per sample, each [N].
std::pair<Tensor, Tensor>
layerNormStatistics(Graph &graph, const Tensor &acts, float eps, Sequence &prog,
                    bool unbiasedVarEstimate = false, bool stableAlgo = false,
                    Type partialsType = FLOAT, const DebugContext &dc = {},
                    const OptionFlags &options = {});

std::pair<Tensor, Tensor>
layerNormalise(Graph &graph, const Tensor &acts, const Tensor &gamma,
               const Tensor &beta, const Tensor &mean, const Tensor &invStdDev,
               Sequence &prog, const DebugContext &dc = {},
               const OptionFlags &options = {});

NormGradients layerNormGradients(Graph &graph, const Tensor &actsWhitened,
                                 const Tensor &gradsIn, const Tensor &invStdDev,
                                 const Tensor &gamma, Sequence &prog,
                                 Type partialsType = FLOAT,
                                 const DebugContext &dc = {},
                                 const OptionFlags &options = {});

NormGradients layerNormGradients(Graph &graph, const Tensor &acts,
                                 const Tensor &gradsIn, const Tensor &mean,
                                 const Tensor &invStdDev, const Tensor &gamma,
                                 Sequence &prog, Type partialsType = FLOAT,
                                 const DebugContext &dc = {},
                                 const OptionFlags &options = {});

} // namespace ops
} // namespace tessera
