// Reference convolution and pooling: the definitions as loops in double.
// The gradients are the adjoints of the forward loops (scatter where the
// forward pass gathers), so they check the ops' reformulations (dilated
// deltas, transposed and flipped weights) independently.
#include "tessera/ops/Reference.hpp"

#include <limits>

namespace tessera::ops::reference {
namespace {

// Calls f(inIndex, weightIndex, outIndex) for every term of the
// convolution whose input element lies inside the input.
template <typename F> void forEachTerm(const ConvParams &p, F &&f) {
  p.validate();
  const std::size_t G = p.numConvGroups, Ci = p.inputChannelsPerConvGroup,
                    Co = p.outputChannelsPerConvGroup;
  const std::size_t H = p.inputFieldShape[0], W = p.inputFieldShape[1];
  const std::size_t kH = p.kernelShape[0], kW = p.kernelShape[1];
  const std::size_t oH = p.getOutputSize(0), oW = p.getOutputSize(1);
  for (std::size_t n = 0; n < p.batchSize; ++n)
    for (std::size_t g = 0; g < G; ++g)
      for (std::size_t co = 0; co < Co; ++co)
        for (std::size_t oh = 0; oh < oH; ++oh)
          for (std::size_t ow = 0; ow < oW; ++ow) {
            const std::size_t out =
                ((n * G * Co + g * Co + co) * oH + oh) * oW + ow;
            for (std::size_t ci = 0; ci < Ci; ++ci)
              for (std::size_t kh = 0; kh < kH; ++kh) {
                const long ih =
                    long(oh * p.stride[0] + kh * p.kernelDilation[0]) -
                    long(p.paddingLower[0]);
                if (ih < 0 || ih >= long(H))
                  continue;
                for (std::size_t kw = 0; kw < kW; ++kw) {
                  const long iw =
                      long(ow * p.stride[1] + kw * p.kernelDilation[1]) -
                      long(p.paddingLower[1]);
                  if (iw < 0 || iw >= long(W))
                    continue;
                  const std::size_t in =
                      ((n * G * Ci + g * Ci + ci) * H + std::size_t(ih)) * W +
                      std::size_t(iw);
                  const std::size_t w =
                      (((g * Co + co) * Ci + ci) * kH + kh) * kW + kw;
                  f(in, w, out);
                }
              }
          }
}

std::size_t product(const std::vector<std::size_t> &shape) {
  std::size_t n = 1;
  for (std::size_t d : shape)
    n *= d;
  return n;
}

// Calls f(window elements' input indices, output index) for every pooling
// window; the list holds only elements inside the input, in row-major
// window order.
template <typename F> void forEachWindow(const PoolParams &p, F &&f) {
  p.validate();
  const std::size_t H = p.inputFieldShape[0], W = p.inputFieldShape[1];
  const std::size_t oH = p.getOutputSize(0), oW = p.getOutputSize(1);
  std::vector<std::size_t> window;
  for (std::size_t plane = 0; plane < p.batchSize * p.numChannels; ++plane)
    for (std::size_t oh = 0; oh < oH; ++oh)
      for (std::size_t ow = 0; ow < oW; ++ow) {
        window.clear();
        for (std::size_t kh = 0; kh < p.kernelShape[0]; ++kh) {
          const long ih = long(oh * p.stride[0] + kh) - long(p.paddingLower[0]);
          if (ih < 0 || ih >= long(H))
            continue;
          for (std::size_t kw = 0; kw < p.kernelShape[1]; ++kw) {
            const long iw =
                long(ow * p.stride[1] + kw) - long(p.paddingLower[1]);
            if (iw >= 0 && iw < long(W))
              window.push_back((plane * H + std::size_t(ih)) * W +
                               std::size_t(iw));
          }
        }
        f(window, (plane * oH + oh) * oW + ow);
      }
}

} // namespace

std::vector<double> convolution(const ConvParams &p,
                                const std::vector<double> &in,
                                const std::vector<double> &weights) {
  std::vector<double> out(product(p.getOutputShape()), 0.0);
  forEachTerm(p, [&](std::size_t i, std::size_t w, std::size_t o) {
    out[o] += in[i] * weights[w];
  });
  return out;
}

std::vector<double>
convolutionInputGradient(const ConvParams &p,
                         const std::vector<double> &zDeltas,
                         const std::vector<double> &weights) {
  std::vector<double> dIn(product(p.getInputShape()), 0.0);
  forEachTerm(p, [&](std::size_t i, std::size_t w, std::size_t o) {
    dIn[i] += zDeltas[o] * weights[w];
  });
  return dIn;
}

std::vector<double>
convolutionWeightGradient(const ConvParams &p,
                          const std::vector<double> &zDeltas,
                          const std::vector<double> &in) {
  std::vector<double> dW(product(p.getWeightsShape()), 0.0);
  forEachTerm(p, [&](std::size_t i, std::size_t w, std::size_t o) {
    dW[w] += zDeltas[o] * in[i];
  });
  return dW;
}

std::vector<double> pool(const PoolParams &p, const std::vector<double> &in) {
  std::vector<double> out(product(p.getOutputShape()), 0.0);
  forEachWindow(p, [&](const std::vector<std::size_t> &window, std::size_t o) {
    if (p.poolingType == PoolingType::MAX) {
      double m = -std::numeric_limits<double>::infinity();
      for (std::size_t i : window)
        m = std::max(m, in[i]);
      out[o] = m;
      return;
    }
    double sum = 0;
    for (std::size_t i : window)
      sum += in[i];
    out[o] = p.poolingType == PoolingType::SUM ? sum
             : window.empty()                  ? 0.0
                                               : sum / double(window.size());
  });
  return out;
}

std::vector<double>
poolInputGradient(const PoolParams &p, const std::vector<double> &in,
                  const std::vector<double> &pooledGradient) {
  std::vector<double> dIn(product(p.getInputShape()), 0.0);
  forEachWindow(p, [&](const std::vector<std::size_t> &window, std::size_t o) {
    if (window.empty())
      return;
    if (p.poolingType == PoolingType::MAX) {
      std::size_t best = window[0];
      for (std::size_t i : window)
        if (in[i] > in[best])
          best = i;
      dIn[best] += pooledGradient[o];
      return;
    }
    const double share = p.poolingType == PoolingType::SUM
                             ? pooledGradient[o]
                             : pooledGradient[o] / double(window.size());
    for (std::size_t i : window)
      dIn[i] += share;
  });
  return dIn;
}

} // namespace tessera::ops::reference
