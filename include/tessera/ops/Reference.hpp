/// \file
/// Host reference implementations of the ops: plain loops in double
/// precision, used by the tests and the conformance harness to check the
/// tile-parallel ops. One section per op family.
#pragma once

#include "tessera/ops/Collectives.hpp"
#include "tessera/ops/Conv.hpp"
#include "tessera/ops/Expr.hpp"
#include "tessera/ops/Loss.hpp"
#include "tessera/ops/NonLinearity.hpp"
#include "tessera/ops/Pooling.hpp"
#include "tessera/ops/Reduce.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tessera::ops::reference {

// ---- Elementwise --------------------------------------------------------

/// One unary operation of Elementwise.def on one value.
double unary(expr::UnaryOpType op, double x);
/// One binary operation of Elementwise.def on one value pair.
double binary(expr::BinaryOpType op, double a, double b);
/// An expression at one element: inputs[k] is placeholder _k+1's value,
/// \p index the element's flat index. Casts round as the target type.
double evaluate(const expr::Expr &e, const std::vector<double> &inputs,
                std::size_t index = 0);
/// Rounds \p x as storing it in \p type would (half: nearest even).
double roundTo(Type type, double x);

// ---- MatMul -------------------------------------------------------------

/// C = A B for row-major A [m, k] and B [k, n]: C [m, n], in double.
std::vector<double> matMul(const std::vector<double> &a,
                           const std::vector<double> &b, std::size_t m,
                           std::size_t k, std::size_t n);
/// \p groups products of consecutive matrices: A [g, m, k], B [g, k, n],
/// C [g, m, n].
std::vector<double> matMulGrouped(const std::vector<double> &a,
                                  const std::vector<double> &b,
                                  std::size_t groups, std::size_t m,
                                  std::size_t k, std::size_t n);

// ---- Reduce -------------------------------------------------------------

/// reduce() of \p in (row-major, shape \p shape) over \p dims: the result
/// scaled as ReduceParams describes (int types: truncated as a cast) and,
/// when \p initial is given, combined into it as an update does.
/// \p type is the input's type (it decides how int results are scaled).
std::vector<double>
reduce(const std::vector<double> &in, const std::vector<std::size_t> &shape,
       const std::vector<std::size_t> &dims, Operation op, double scale = 1.0,
       const std::vector<double> *initial = nullptr, Type type = Type::FLOAT);
/// For each row of \p in [rows, cols], the index of its largest (argMax)
/// or smallest (argMin) element, the lowest index among equal ones.
std::vector<std::size_t> argMax(const std::vector<double> &in, std::size_t rows,
                                std::size_t cols);
std::vector<std::size_t> argMin(const std::vector<double> &in, std::size_t rows,
                                std::size_t cols);
/// topK of each row of \p in [rows, cols]: values and indices [rows, k],
/// ranked best first (lower index first among equal values) when
/// \p sorted, else in increasing index order.
struct TopKResult {
  std::vector<double> values;
  std::vector<std::size_t> indices;
};
TopKResult topK(const std::vector<double> &in, std::size_t rows,
                std::size_t cols, std::size_t k, bool largest, bool sorted);

// ---- Convolution and pooling -------------------------------------------

/// The convolution \p p of \p in ([N, G*Cin, H, W]) with \p weights
/// ([G, Cout, Cin, kH, kW]): [N, G*Cout, H', W'], straight from the
/// definition.
std::vector<double> convolution(const ConvParams &p,
                                const std::vector<double> &in,
                                const std::vector<double> &weights);
/// dL/dIn of convolution \p p from dL/dOut \p zDeltas: the adjoint of the
/// forward loop.
std::vector<double>
convolutionInputGradient(const ConvParams &p,
                         const std::vector<double> &zDeltas,
                         const std::vector<double> &weights);
/// dL/dWeights of convolution \p p, summed over the batch.
std::vector<double>
convolutionWeightGradient(const ConvParams &p,
                          const std::vector<double> &zDeltas,
                          const std::vector<double> &in);
/// pool() of \p in ([N, C, H, W]) as Pooling.hpp defines it.
std::vector<double> pool(const PoolParams &p, const std::vector<double> &in);
/// poolInputGradient() from dL/dOut \p pooledGradient.
std::vector<double>
poolInputGradient(const PoolParams &p, const std::vector<double> &in,
                  const std::vector<double> &pooledGradient);

// ---- Nn: non-linearities, losses, norms -------------------------------

/// nonLinearity() of \p x, whose innermost dimension has \p rowSize
/// elements (the softmax family normalises each row of that many).
std::vector<double> nonLinearity(NonLinearityType type,
                                 const std::vector<double> &x,
                                 std::size_t rowSize);
/// calcLoss() of outputs \p p [b, n]: each row's loss and deltas, and the
/// number of correct rows.
struct LossResult {
  std::vector<double> loss, deltas;
  unsigned numCorrect = 0;
};
/// Against one label per row (a label outside [0, n) masks its row).
LossResult calcLossLabels(LossType type, const std::vector<double> &p,
                          const std::vector<long long> &labels, std::size_t n);
/// Against target rows \p t [b, n].
LossResult calcLossTargets(LossType type, const std::vector<double> &p,
                           const std::vector<double> &t, std::size_t n);
/// Norm statistics of \p x (shape \p shape, [N, C, ...]): per channel when
/// \p groups is 0 (batch norm, [C]), else per sample and group ([N *
/// groups], layer norm: 1 group).
struct NormStatistics {
  std::vector<double> mean, invStdDev;
};
NormStatistics normStatistics(const std::vector<double> &x,
                              const std::vector<std::size_t> &shape,
                              unsigned groups, double eps, bool unbiased);
/// (out, whitened) of \p x normalised with \p stats, gamma and beta [C].
std::pair<std::vector<double>, std::vector<double>>
normalise(const std::vector<double> &x, const std::vector<std::size_t> &shape,
          unsigned groups, const std::vector<double> &gamma,
          const std::vector<double> &beta, const NormStatistics &stats);

// ---- Random -------------------------------------------------------------

/// One Philox4x32-10 block: the generator's four words for \p counter under
/// the key (\p key0, \p key1), computed round by round.
std::array<std::uint32_t, 4>
philox4x32(const std::array<std::uint32_t, 4> &counter, std::uint32_t key0,
           std::uint32_t key1);
/// The first \p n elements of the random ops' results for the seed words
/// \p seed ({low, high} of a host seed) and \p seedModifier, element by
/// element from the generator, rounded to \p outType.
std::vector<double> randomUniform(std::array<std::uint32_t, 2> seed,
                                  std::uint32_t seedModifier, std::size_t n,
                                  Type outType, double minVal, double maxVal);
std::vector<double> randomNormal(std::array<std::uint32_t, 2> seed,
                                 std::uint32_t seedModifier, std::size_t n,
                                 Type outType, double mean, double stdDev);
std::vector<double> randomTruncatedNormal(std::array<std::uint32_t, 2> seed,
                                          std::uint32_t seedModifier,
                                          std::size_t n, Type outType,
                                          double mean, double stdDev,
                                          double alpha);
std::vector<double> randomBernoulli(std::array<std::uint32_t, 2> seed,
                                    std::uint32_t seedModifier, std::size_t n,
                                    double prob);
/// dropout() of \p input (of \p type): input * mask * scale with the mask
/// randomBernoulli(keepProbability) gives.
std::vector<double> randomDropout(std::array<std::uint32_t, 2> seed,
                                  std::uint32_t seedModifier,
                                  const std::vector<double> &input, Type type,
                                  double keepProbability, double scale);

// ---- Slicing ------------------------------------------------------------

/// dynamicSlice() of \p t (row-major, shape \p shape) at one offset per
/// dimension of \p dims, clamped to keep the slice inside: the slice,
/// row-major.
std::vector<double> dynamicSlice(const std::vector<double> &t,
                                 const std::vector<std::size_t> &shape,
                                 const std::vector<std::size_t> &offsets,
                                 const std::vector<std::size_t> &dims,
                                 const std::vector<std::size_t> &sizes);
/// dynamicUpdate(): writes the slice \p s into \p t.
void dynamicUpdate(std::vector<double> &t,
                   const std::vector<std::size_t> &shape,
                   const std::vector<double> &s,
                   const std::vector<std::size_t> &offsets,
                   const std::vector<std::size_t> &dims,
                   const std::vector<std::size_t> &sizes);
/// multiSlice(): \p offsets holds M rows of dims.size() offsets; the result
/// is M slices, row-major; an index whose slice does not fit gives zeros.
std::vector<double> multiSlice(const std::vector<double> &t,
                               const std::vector<std::size_t> &shape,
                               const std::vector<std::size_t> &offsets,
                               const std::vector<std::size_t> &dims,
                               const std::vector<std::size_t> &sizes);
/// multiUpdate() and multiUpdateAdd(): slice m of \p s written into (added
/// with \p scale to) \p t, indices in order, out-of-range ones skipped.
void multiUpdate(std::vector<double> &t, const std::vector<std::size_t> &shape,
                 const std::vector<double> &s,
                 const std::vector<std::size_t> &offsets,
                 const std::vector<std::size_t> &dims,
                 const std::vector<std::size_t> &sizes);
void multiUpdateAdd(std::vector<double> &t,
                    const std::vector<std::size_t> &shape,
                    const std::vector<double> &s,
                    const std::vector<std::size_t> &offsets,
                    const std::vector<std::size_t> &dims,
                    const std::vector<std::size_t> &sizes, double scale);

// ---- Collectives ---------------------------------------------------------

/// allReduce() of the values every replica holds (replicas[r] is replica
/// r's flattened tensor), element by element in double; LOCAL gives
/// replica 0's values.
std::vector<double> allReduce(CollectiveOperator op,
                              const std::vector<std::vector<double>> &replicas);
/// reduceScatter(): replica \p replica's chunk of allReduce() of the
/// tensors zero-padded to a multiple of the number of replicas (LOCAL:
/// the chunk of that replica's own values).
std::vector<double>
reduceScatter(CollectiveOperator op,
              const std::vector<std::vector<double>> &replicas,
              unsigned replica);

} // namespace tessera::ops::reference
