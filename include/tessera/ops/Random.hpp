/// \file
/// Random tensors and dropout (PopLibs' poprand). Every op draws from a
/// counter-based generator (Philox4x32-10): the value of element i of the
/// result is a pure function of the seed, the seed modifier and i, where i
/// is the element's row-major index in the reference tensor. Results
/// therefore do not depend on the tile mapping, the number of tiles or the
/// engine's host threads, and two ops with the same seed, modifier and
/// reference shape draw the same words (bernoulli(p) and the mask of
/// dropout(keepProbability = p) agree element for element).
///
/// The seed is a tensor of two UNSIGNED_INT elements, read when the program
/// runs, or, when \p seed is null, the host value of the option "seed" (an
/// unsigned 64-bit integer, default 0) fixed when the graph is built. Unlike
/// the IPU's hardware generator, which poprand uses for a null seed, a
/// null-seed op draws the same values on every run: vary the seed modifier
/// or pass a seed tensor to get fresh values.
///
/// Each op appends one compute set: the output is mapped like \p reference
/// and each worker region of it gets one vertex, told the index of its first
/// element, on the tile that holds it. A seed tensor is brought to every
/// such tile by exchange; a host seed is a constant copied onto each of
/// them, so a host-seeded op exchanges nothing.
#pragma once

#include "tessera/graph/Graph.hpp"
#include "tessera/graph/Program.hpp"
#include "tessera/support/OptionFlags.hpp"

#include <cstdint>
#include <utility>

namespace tessera {
namespace ops {

using program::Sequence;

/// Uniform values mapped like \p reference. FLOAT and HALF: in [minVal,
/// maxVal) (computed in float, so rounding to half can give maxVal). INT:
/// integers in [minVal, maxVal], both included. Throws TypeError for other
/// types, a seed that is not two UNSIGNED_INT elements, and
/// UnsupportedError for maxVal < minVal or (INT) bounds outside int.
Tensor uniform(Graph &graph, const Tensor *seed, std::uint32_t seedModifier,
               const Tensor &reference, Type outType, double minVal,
               double maxVal, Sequence &prog, const DebugContext &dc = {},
               const OptionFlags &options = {});

/// Normal values (Box-Muller) with \p mean and \p stdDev; FLOAT or HALF.
Tensor normal(Graph &graph, const Tensor *seed, std::uint32_t seedModifier,
              const Tensor &reference, Type outType, double mean, double stdDev,
              Sequence &prog, const DebugContext &dc = {},
              const OptionFlags &options = {});

/// Normal values truncated to mean +- alpha * stdDev (alpha > 0, in standard
/// deviations); FLOAT or HALF. Drawn by inversion of the normal distribution
/// function, so every value is within the bounds and costs one draw.
Tensor truncatedNormal(Graph &graph, const Tensor *seed,
                       std::uint32_t seedModifier, const Tensor &reference,
                       Type outType, double mean, double stdDev, double alpha,
                       Sequence &prog, const DebugContext &dc = {},
                       const OptionFlags &options = {});

/// 1 with probability \p prob (in [0, 1]), else 0; FLOAT, HALF or INT.
Tensor bernoulli(Graph &graph, const Tensor *seed, std::uint32_t seedModifier,
                 const Tensor &reference, Type outType, double prob,
                 Sequence &prog, const DebugContext &dc = {},
                 const OptionFlags &options = {});

/// input * mask * scale, where mask is 1 with probability \p keepProbability
/// (in [0, 1]) and 0 otherwise, drawn per element of \p reference, which
/// must have the input's shape and gives the output's mapping. FLOAT or
/// HALF (the product is computed in float).
Tensor dropout(Graph &graph, const Tensor *seed, std::uint32_t seedModifier,
               const Tensor &input, const Tensor &reference,
               double keepProbability, double scale, Sequence &prog,
               const DebugContext &dc = {}, const OptionFlags &options = {});

/// As dropout, also returning the mask (the input's type, 0 or 1) so that
/// the gradient can reuse it with applyDropoutMask: {output, mask}. Calling
/// dropout again with the same seed and modifier gives the same mask too.
std::pair<Tensor, Tensor>
dropoutWithMask(Graph &graph, const Tensor *seed, std::uint32_t seedModifier,
                const Tensor &input, const Tensor &reference,
                double keepProbability, double scale, Sequence &prog,
                const DebugContext &dc = {}, const OptionFlags &options = {});

/// input * mask * scale elementwise, for a mask from dropoutWithMask (the
/// dropout gradient: apply the forward mask to the incoming gradient).
Tensor applyDropoutMask(Graph &graph, const Tensor &input, const Tensor &mask,
                        double scale, Sequence &prog,
                        const DebugContext &dc = {});

} // namespace ops
} // namespace tessera
