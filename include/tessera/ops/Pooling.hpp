/// \file
/// 2-D pooling (PopLibs' popnn::pooling): max, average and sum pooling over
/// [N, C, H, W] activations, and their input gradients.
///
/// Semantics:
/// - MAX ignores padding (a window of padding only gives -infinity); its
///   gradient goes to the position of the window's maximum, the first in
///   row-major window order on ties.
/// - AVG divides the window's sum by the number of input elements in the
///   window, padding excluded (TensorFlow's convention; a window of padding
///   only gives 0); its gradient spreads dOut / count over those elements.
/// - SUM adds the window's elements; its gradient copies dOut to each.
/// Overlapping windows add their gradients.
///
/// The work is split over tiles by (batch x channel) planes and rows; each
/// tile's vertex reads the input rows its windows cover.
#pragma once

#include "tessera/graph/Graph.hpp"
#include "tessera/graph/Program.hpp"
#include "tessera/support/OptionFlags.hpp"
#include "tessera/support/Type.hpp"

#include <array>
#include <cstddef>
#include <string>
#include <tuple>
#include <vector>

namespace tessera {
namespace ops {

enum class PoolingType { MAX, AVG, SUM };

/// "MAX", "AVG" or "SUM".
const char *poolingTypeName(PoolingType type);

/// The shape of a 2-D pooling (popnn::pooling::PoolParams). Output size per
/// field dimension d: (in[d] + paddingLower[d] + paddingUpper[d] -
/// kernel[d]) / stride[d] + 1.
struct PoolParams {
  PoolingType poolingType = PoolingType::MAX;
  /// Input height and width.
  std::array<std::size_t, 2> inputFieldShape{1, 1};
  std::array<std::size_t, 2> kernelShape{1, 1};
  std::array<unsigned, 2> stride{1, 1};
  std::array<unsigned, 2> paddingLower{0, 0};
  std::array<unsigned, 2> paddingUpper{0, 0};
  std::size_t numChannels = 1;
  std::size_t batchSize = 1;
  /// FLOAT or HALF.
  Type dType = Type::FLOAT;

  PoolParams() = default;
  /// popnn's constructor order.
  PoolParams(PoolingType poolingType,
             std::array<std::size_t, 2> inputFieldShape,
             std::array<std::size_t, 2> kernelShape,
             std::array<unsigned, 2> stride,
             std::array<unsigned, 2> paddingLower,
             std::array<unsigned, 2> paddingUpper, std::size_t numChannels,
             std::size_t batchSize, Type dType);

  /// Throws ShapeError or TypeError with the numbers.
  void validate() const;
  std::size_t getOutputSize(unsigned dim) const;
  std::array<std::size_t, 2> getOutputFieldShape() const;
  /// [N, C, H, W].
  std::vector<std::size_t> getInputShape() const;
  /// [N, C, H', W'].
  std::vector<std::size_t> getOutputShape() const;
  std::string toString() const;

  friend bool operator==(const PoolParams &a, const PoolParams &b) {
    return std::tie(a.poolingType, a.inputFieldShape, a.kernelShape, a.stride,
                    a.paddingLower, a.paddingUpper, a.numChannels, a.batchSize,
                    a.dType) == std::tie(b.poolingType, b.inputFieldShape,
                                         b.kernelShape, b.stride,
                                         b.paddingLower, b.paddingUpper,
                                         b.numChannels, b.batchSize, b.dType);
  }
  friend bool operator!=(const PoolParams &a, const PoolParams &b) {
    return !(a == b);
  }
};

/// Options of pool and poolInputGradient: none of Tessera's own. Accepted
/// and ignored (PopLibs' tile-mapping tuning, logged once per process):
/// "poolUseIntrospectiveMapping", "optimizeForSpeed" ("true" or "false").
/// Any other key is an OptionError with a did-you-mean hint.
///
/// Pools \p in ([N, C, H, W]) into a new tensor [N, C, H', W'].
Tensor pool(Graph &graph, const PoolParams &params, const Tensor &in,
            program::Sequence &prog, const DebugContext &dc = {},
            const OptionFlags &options = {});

/// dL/dIn ([N, C, H, W]) of pool(params, in) from \p pooledGradient =
/// dL/dOut ([N, C, H', W']). \p pooledOut (pool's result) is checked for
/// its shape; the maximum's position is found again from \p in. For AVG and
/// SUM, \p in and \p pooledOut are not read and may be empty tensors
/// (Tensor()).
Tensor poolInputGradient(Graph &graph, const PoolParams &params,
                         const Tensor &in, const Tensor &pooledOut,
                         const Tensor &pooledGradient, program::Sequence &prog,
                         const DebugContext &dc = {},
                         const OptionFlags &options = {});

} // namespace ops
} // namespace tessera
