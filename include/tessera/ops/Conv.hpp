/// \file
/// 2-D convolution (PopLibs' poplin convolution): forward, input gradient
/// and weight gradient, with stride, padding, kernel dilation and groups, in
/// float and half.
///
/// Layouts follow Poplar's API: activations are [N, G*C, H, W] (channel
/// index g*C + c), weights are [G, Cout, Cin, kH, kW]
/// ([convGroups][outChansPerGroup][inChansPerGroup][kH][kW]).
///
/// Each op plans its work over tiles with the cost model: the output is
/// split by conv group, batch, output channels and output rows, and, when
/// that leaves tiles idle or blocks too large, the input channels too (the
/// partial sums are then reduced in a second compute set). Every tile runs
/// one vertex that computes its output block from its input rows (with the
/// halo the kernel needs) and its slice of the weights; the compiler brings
/// those operands to the tile. createInput and createWeights lay tensors out
/// the way the plan reads them, so little data has to move.
///
/// Options (OptionFlags; unknown keys are errors):
/// - "partialsType": "float" (default) or "half": the accumulation type of
///   half convolutions (float convolutions always accumulate in float). It
///   picks the AMP rate the estimate uses and the type of the partial sums
///   when the input channels are split over tiles.
/// - "availableMemoryProportion": the share of a tile's memory (0..1,
///   default 0.6) the plan may use for one tile's operands and results.
/// - Accepted and ignored (PopLibs' plan and vertex tuning; each is logged
///   once per process): "pass" ("NONE", "INFERENCE_FWD", "TRAINING_FWD",
///   "TRAINING_BWD", "TRAINING_WU": Tessera takes the pass from the function
///   called), "use128BitConvUnitLoad", "enableMultiStageReduce",
///   "enableFastReduce", "remapOutputTensor", "enableConvDithering",
///   "gatherConvOutput" ("true" or "false"), "planConstraints" (any JSON).
/// Unknown keys are OptionErrors with a did-you-mean hint.
#pragma once

#include "tessera/graph/Graph.hpp"
#include "tessera/graph/Program.hpp"
#include "tessera/support/OptionFlags.hpp"
#include "tessera/support/Type.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace tessera {
namespace ops {

/// The shape of a 2-D convolution (poplin::ConvParams, two field
/// dimensions). Output size per field dimension d:
/// (in[d] + paddingLower[d] + paddingUpper[d] - (kernel[d] - 1) *
/// kernelDilation[d] - 1) / stride[d] + 1.
struct ConvParams {
  Type inputType = Type::FLOAT;
  Type outputType = Type::FLOAT;
  std::size_t batchSize = 1;
  /// Input height and width.
  std::array<std::size_t, 2> inputFieldShape{1, 1};
  /// Kernel height and width.
  std::array<std::size_t, 2> kernelShape{1, 1};
  std::size_t inputChannelsPerConvGroup = 1;
  std::size_t outputChannelsPerConvGroup = 1;
  std::size_t numConvGroups = 1;
  std::array<unsigned, 2> stride{1, 1};
  /// Spacing of kernel taps: 2 leaves one input element between taps.
  std::array<unsigned, 2> kernelDilation{1, 1};
  /// Zero rows / columns added before and after the input.
  std::array<unsigned, 2> paddingLower{0, 0};
  std::array<unsigned, 2> paddingUpper{0, 0};

  ConvParams() = default;
  /// Poplin's constructor: input and output of \p type, unit stride and
  /// dilation, no padding.
  ConvParams(Type type, std::size_t batchSize,
             std::array<std::size_t, 2> inputFieldShape,
             std::array<std::size_t, 2> kernelShape,
             std::size_t inputChannelsPerConvGroup,
             std::size_t outputChannelsPerConvGroup,
             std::size_t numConvGroups = 1);

  /// Throws ShapeError (sizes, a kernel larger than the padded input) or
  /// TypeError (types other than float and half) with the numbers.
  void validate() const;
  /// Output size of field dimension \p dim (0: height, 1: width); requires
  /// a valid shape.
  std::size_t getOutputSize(unsigned dim) const;
  std::array<std::size_t, 2> getOutputFieldShape() const;
  /// [N, G*Cin, H, W].
  std::vector<std::size_t> getInputShape() const;
  /// [G, Cout, Cin, kH, kW].
  std::vector<std::size_t> getWeightsShape() const;
  /// [N, G*Cout, H', W'].
  std::vector<std::size_t> getOutputShape() const;
  /// Multiply-accumulates of the forward pass.
  std::uint64_t getNumMacs() const;
  /// One line for messages: "conv 8x64x32x32 * 64x64x3x3 stride 1x1 ...".
  std::string toString() const;

  friend bool operator==(const ConvParams &a, const ConvParams &b) {
    return std::tie(a.inputType, a.outputType, a.batchSize, a.inputFieldShape,
                    a.kernelShape, a.inputChannelsPerConvGroup,
                    a.outputChannelsPerConvGroup, a.numConvGroups, a.stride,
                    a.kernelDilation, a.paddingLower, a.paddingUpper) ==
           std::tie(b.inputType, b.outputType, b.batchSize, b.inputFieldShape,
                    b.kernelShape, b.inputChannelsPerConvGroup,
                    b.outputChannelsPerConvGroup, b.numConvGroups, b.stride,
                    b.kernelDilation, b.paddingLower, b.paddingUpper);
  }
  friend bool operator!=(const ConvParams &a, const ConvParams &b) {
    return !(a == b);
  }
};

/// A new input tensor [N, G*Cin, H, W] of params.inputType, mapped over the
/// tiles the way convolution's plan for \p params reads it.
Tensor createInput(Graph &graph, const ConvParams &params,
                   const DebugContext &dc = {},
                   const OptionFlags &options = {});

/// A new weights tensor [G, Cout, Cin, kH, kW] of params.inputType, mapped
/// the way the plan reads it.
Tensor createWeights(Graph &graph, const ConvParams &params,
                     const DebugContext &dc = {},
                     const OptionFlags &options = {});

/// The convolution of \p in ([N, G*Cin, H, W]) with \p weights: a new tensor
/// [N, G*Cout, H', W'] of params.outputType. With \p transposeAndFlipWeights
/// the weights are given as [G, Cin, Cout, kH, kW] (a forward convolution's
/// weights, whose output channels are this convolution's inputs) and are
/// used with input and output channels swapped and both field dimensions
/// reversed, as poplin does for the backward pass.
Tensor convolution(Graph &graph, const Tensor &in, const Tensor &weights,
                   const ConvParams &params, bool transposeAndFlipWeights,
                   program::Sequence &prog, const DebugContext &dc = {},
                   const OptionFlags &options = {});

/// As convolution, writing into \p out ([N, G*Cout, H', W'] of
/// params.outputType).
void convolutionWithOutput(Graph &graph, const Tensor &in,
                           const Tensor &weights, const Tensor &out,
                           const ConvParams &params,
                           bool transposeAndFlipWeights,
                           program::Sequence &prog, const DebugContext &dc = {},
                           const OptionFlags &options = {});

/// dL/dIn ([N, G*Cin, H, W] of params.inputType) of the forward convolution
/// \p fwdParams, from \p zDeltas = dL/dOut ([N, G*Cout, H', W']) and the
/// forward \p weights ([G, Cout, Cin, kH, kW]): a convolution of the
/// zero-dilated deltas with the transposed, flipped weights. Input rows and
/// columns the forward pass never read get zero.
Tensor convolutionInputGradient(Graph &graph, const Tensor &zDeltas,
                                const Tensor &weights,
                                const ConvParams &fwdParams,
                                program::Sequence &prog,
                                const DebugContext &dc = {},
                                const OptionFlags &options = {});

/// dL/dWeights ([G, Cout, Cin, kH, kW] of params.inputType) of the forward
/// convolution \p fwdParams, from \p zDeltas = dL/dOut ([N, G*Cout, H', W'])
/// and the forward input \p activations ([N, G*Cin, H, W]). Summed over the
/// batch.
Tensor convolutionWeightGradient(Graph &graph, const Tensor &zDeltas,
                                 const Tensor &activations,
                                 const ConvParams &fwdParams,
                                 program::Sequence &prog,
                                 const DebugContext &dc = {},
                                 const OptionFlags &options = {});

/// A new bias tensor [G*Cout] of params.outputType for the output of
/// convolution \p params, mapped linearly.
Tensor createBiases(Graph &graph, const ConvParams &params,
                    const DebugContext &dc = {});

/// Adds \p biases ([C]) to every position of \p acts ([N, C, H, W]) in
/// place (poplin::addBias).
void addBias(Graph &graph, const Tensor &acts, const Tensor &biases,
             program::Sequence &prog, const DebugContext &dc = {},
             const OptionFlags &options = {});

} // namespace ops
} // namespace tessera
