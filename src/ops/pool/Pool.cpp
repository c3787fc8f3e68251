// The pooling ops. The plan splits the (batch x channel) planes over the
// tiles and, when there are fewer planes than tiles, the rows of each plane
// too; a unit's vertex reads the input rows its windows cover (forward) or
// the pooled-gradient rows whose windows cover its input rows (gradient).
#include "OpsInternal.hpp"
#include "conv/ConvInternal.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/OptionParser.hpp"

#include <string>

namespace tessera::ops {
namespace {

void parsePoolOptions(const char *op, const OptionFlags &options) {
  OptionParser p(op);
  const char *why = "Tessera's pooling plan picks its own tile mapping";
  p.addIgnored("poolUseIntrospectiveMapping", why, {"true", "false"});
  p.addIgnored("optimizeForSpeed", why, {"true", "false"});
  p.parse(options);
}

using conv::checkTensor;
using conv::nameOr;
using conv::pieceOf;
using conv::Range;

std::string str(std::size_t v) { return std::to_string(v); }

/// Splits planes x rows over the tiles: all planes when there are enough,
/// else each plane's rows too.
struct PoolPlan {
  unsigned planes = 1, rows = 1;
};
PoolPlan planPool(const Target &t, std::size_t planes, std::size_t rows) {
  const std::size_t tiles = t.getNumTiles();
  PoolPlan p;
  p.planes = static_cast<unsigned>(std::min(planes, tiles));
  p.rows = static_cast<unsigned>(
      std::max<std::size_t>(1, std::min(rows, tiles / p.planes)));
  return p;
}

unsigned unitTile(const Target &t, const PoolPlan &p, unsigned plane,
                  unsigned rows) {
  const std::size_t units = std::size_t(p.planes) * p.rows;
  return static_cast<unsigned>((std::size_t(plane) * p.rows + rows) *
                               t.getNumTiles() / units);
}

/// Input rows [begin, end) that output rows \p out read (one row when they
/// read only padding).
Range inputRows(const PoolParams &p, Range out) {
  const long lo = long(out.begin * p.stride[0]) - long(p.paddingLower[0]);
  const long hi = long((out.end - 1) * p.stride[0] + p.kernelShape[0]) -
                  long(p.paddingLower[0]);
  const long b = std::max(0L, lo),
             e = std::min<long>(long(p.inputFieldShape[0]), hi);
  if (e <= b)
    return {0, 1};
  return {std::size_t(b), std::size_t(e)};
}

std::vector<int> poolGeometry(const PoolParams &p, std::size_t planes,
                              Range rows, Range in) {
  std::vector<int> g(conv::pCount, 0);
  g[conv::pType] = static_cast<int>(p.poolingType);
  g[conv::pPlanes] = static_cast<int>(planes);
  g[conv::pInH] = static_cast<int>(p.inputFieldShape[0]);
  g[conv::pInW] = static_cast<int>(p.inputFieldShape[1]);
  g[conv::pKH] = static_cast<int>(p.kernelShape[0]);
  g[conv::pKW] = static_cast<int>(p.kernelShape[1]);
  g[conv::pSH] = static_cast<int>(p.stride[0]);
  g[conv::pSW] = static_cast<int>(p.stride[1]);
  g[conv::pPlH] = static_cast<int>(p.paddingLower[0]);
  g[conv::pPlW] = static_cast<int>(p.paddingLower[1]);
  g[conv::pOutH] = static_cast<int>(p.getOutputSize(0));
  g[conv::pOutW] = static_cast<int>(p.getOutputSize(1));
  g[conv::pRowBegin] = static_cast<int>(rows.begin);
  g[conv::pRows] = static_cast<int>(rows.size());
  g[conv::pInRow0] = static_cast<int>(in.begin);
  g[conv::pInRows] = static_cast<int>(in.size());
  return g;
}

void connect(Graph &graph, VertexRef v, const char *field,
             const std::vector<Tensor> &ts) {
  graph.setFieldSize(v[field], ts.size());
  if (!ts.empty())
    graph.connect(v[field], ts);
}

/// Rows [begin, end) of plane (n, c) of an [N, C, H, W] tensor, flattened.
Tensor planeRows(const Tensor &t, std::size_t plane, Range r) {
  const std::size_t c = t.dim(1);
  return t.index({plane / c, plane % c}).slice(r.begin, r.end, 0).flatten();
}

} // namespace

const char *poolingTypeName(PoolingType type) {
  switch (type) {
  case PoolingType::MAX:
    return "MAX";
  case PoolingType::AVG:
    return "AVG";
  case PoolingType::SUM:
    return "SUM";
  }
  return "?";
}

PoolParams::PoolParams(
    PoolingType poolingType, std::array<std::size_t, 2> inputFieldShape,
    std::array<std::size_t, 2> kernelShape, std::array<unsigned, 2> stride,
    std::array<unsigned, 2> paddingLower, std::array<unsigned, 2> paddingUpper,
    std::size_t numChannels, std::size_t batchSize, Type dType)
    : poolingType(poolingType), inputFieldShape(inputFieldShape),
      kernelShape(kernelShape), stride(stride), paddingLower(paddingLower),
      paddingUpper(paddingUpper), numChannels(numChannels),
      batchSize(batchSize), dType(dType) {}

void PoolParams::validate() const {
  if (dType != Type::FLOAT && dType != Type::HALF)
    throw TypeError("pool: type " + std::string(typeName(dType)) +
                    " is not supported; use float or half");
  if (batchSize == 0 || numChannels == 0)
    throw ShapeError("pool: batchSize is " + str(batchSize) +
                     " and numChannels " + str(numChannels) +
                     "; both must be at least 1");
  static const char *dimName[2] = {"height", "width"};
  for (unsigned d = 0; d < 2; ++d) {
    if (inputFieldShape[d] == 0 || kernelShape[d] == 0 || stride[d] == 0)
      throw ShapeError(std::string("pool: the input ") + dimName[d] + " (" +
                       str(inputFieldShape[d]) + "), kernel " + dimName[d] +
                       " (" + str(kernelShape[d]) + ") and stride (" +
                       str(stride[d]) + ") must all be at least 1");
    const std::size_t padded =
        inputFieldShape[d] + paddingLower[d] + paddingUpper[d];
    if (padded < kernelShape[d])
      throw ShapeError(std::string("pool: the kernel ") + dimName[d] + " " +
                       str(kernelShape[d]) + " is larger than the padded " +
                       "input " + dimName[d] + " " + str(inputFieldShape[d]) +
                       " + " + str(paddingLower[d]) + " + " +
                       str(paddingUpper[d]) + " = " + str(padded));
  }
}

std::size_t PoolParams::getOutputSize(unsigned dim) const {
  if (dim > 1)
    throw ShapeError("PoolParams::getOutputSize: dimension " + str(dim) +
                     " does not exist; use 0 (height) or 1 (width)");
  const std::size_t padded =
      inputFieldShape[dim] + paddingLower[dim] + paddingUpper[dim];
  return padded < kernelShape[dim]
             ? 0
             : (padded - kernelShape[dim]) / stride[dim] + 1;
}

std::array<std::size_t, 2> PoolParams::getOutputFieldShape() const {
  return {getOutputSize(0), getOutputSize(1)};
}

std::vector<std::size_t> PoolParams::getInputShape() const {
  return {batchSize, numChannels, inputFieldShape[0], inputFieldShape[1]};
}

std::vector<std::size_t> PoolParams::getOutputShape() const {
  return {batchSize, numChannels, getOutputSize(0), getOutputSize(1)};
}

std::string PoolParams::toString() const {
  const auto pair = [](auto a) { return str(a[0]) + "x" + str(a[1]); };
  return std::string("pool ") + poolingTypeName(poolingType) + " batch " +
         str(batchSize) + ", channels " + str(numChannels) + ", field " +
         pair(inputFieldShape) + ", kernel " + pair(kernelShape) + ", stride " +
         pair(stride) + ", padding " + pair(paddingLower) + "/" +
         pair(paddingUpper) + ", " + std::string(typeName(dType));
}

Tensor pool(Graph &graph, const PoolParams &params, const Tensor &in,
            program::Sequence &prog, const DebugContext &dc,
            const OptionFlags &options) {
  params.validate();
  parsePoolOptions("pool", options);
  checkTensor("pool", "the input", in, params.getInputShape(), params.dType);
  const DebugContext name = nameOr(dc, "pool");
  const Target &target = graph.getTarget();
  Tensor out = graph.addVariable(params.dType, params.getOutputShape(),
                                 DebugContext(name, "out"));
  const std::size_t planes = params.batchSize * params.numChannels;
  const std::size_t outH = params.getOutputSize(0),
                    outW = params.getOutputSize(1);
  const PoolPlan plan = planPool(target, planes, outH);
  const std::string cls = templateName("tessera::ops::Pool", {params.dType});
  ComputeSet cs = graph.addComputeSet(name);
  for (unsigned pp = 0; pp < plan.planes; ++pp)
    for (unsigned rp = 0; rp < plan.rows; ++rp) {
      const Range pr = pieceOf(planes, plan.planes, pp);
      const Range rows = pieceOf(outH, plan.rows, rp);
      if (pr.size() == 0 || rows.size() == 0)
        continue;
      const Range ir = inputRows(params, rows);
      const unsigned tile = unitTile(target, plan, pp, rp);
      std::vector<Tensor> src, dst;
      for (std::size_t p = pr.begin; p < pr.end; ++p) {
        src.push_back(planeRows(in, p, ir));
        dst.push_back(planeRows(out, p, rows));
        graph.setTileMapping(dst.back(), tile);
      }
      VertexRef v = graph.addVertex(cs, cls);
      connect(graph, v, "in", src);
      connect(graph, v, "out", dst);
      graph.setInitialValue(v["geometry"],
                            poolGeometry(params, pr.size(), rows, ir));
      graph.setPerfEstimate(
          v, conv::poolCycles(pr.size() * rows.size(), outW,
                              params.kernelShape[0] * params.kernelShape[1],
                              params.dType, target));
      graph.setTileMapping(v, tile);
    }
  prog.add(program::Execute(cs, name));
  return out;
}

Tensor poolInputGradient(Graph &graph, const PoolParams &params,
                         const Tensor &in, const Tensor &pooledOut,
                         const Tensor &pooledGradient, program::Sequence &prog,
                         const DebugContext &dc, const OptionFlags &options) {
  params.validate();
  const char *op = "poolInputGradient";
  parsePoolOptions(op, options);
  const bool isMax = params.poolingType == PoolingType::MAX;
  if (isMax || in.valid())
    checkTensor(op, "the input", in, params.getInputShape(), params.dType);
  if (isMax || pooledOut.valid())
    checkTensor(op, "the pooled output", pooledOut, params.getOutputShape(),
                params.dType);
  checkTensor(op, "the pooled gradient", pooledGradient,
              params.getOutputShape(), params.dType);
  const DebugContext name = nameOr(dc, op);
  const Target &target = graph.getTarget();
  Tensor out = graph.addVariable(params.dType, params.getInputShape(),
                                 DebugContext(name, "out"));
  const std::size_t planes = params.batchSize * params.numChannels;
  const std::size_t inH = params.inputFieldShape[0];
  const long sH = params.stride[0], plH = params.paddingLower[0],
             kH = static_cast<long>(params.kernelShape[0]),
             outH = static_cast<long>(params.getOutputSize(0));
  const PoolPlan plan = planPool(target, planes, inH);
  const std::string cls =
      templateName("tessera::ops::PoolGrad", {params.dType});
  ComputeSet cs = graph.addComputeSet(name);
  for (unsigned pp = 0; pp < plan.planes; ++pp)
    for (unsigned rp = 0; rp < plan.rows; ++rp) {
      const Range pr = pieceOf(planes, plan.planes, pp);
      const Range rows = pieceOf(inH, plan.rows, rp);
      if (pr.size() == 0 || rows.size() == 0)
        continue;
      // Output rows whose windows cover input rows [rows.begin, rows.end).
      const long first = long(rows.begin) + plH - kH + 1;
      const long ohA = first > 0 ? (first + sH - 1) / sH : 0;
      const long ohB = std::min(outH - 1, (long(rows.end) - 1 + plH) / sH);
      const bool any = ohA <= ohB;
      const Range orows =
          any ? Range{std::size_t(ohA), std::size_t(ohB + 1)} : Range{0, 1};
      const Range ir = any ? inputRows(params, orows) : Range{0, 1};
      const unsigned tile = unitTile(target, plan, pp, rp);
      std::vector<Tensor> src, grad, dst;
      for (std::size_t p = pr.begin; p < pr.end; ++p) {
        if (isMax)
          src.push_back(planeRows(in, p, ir));
        grad.push_back(planeRows(pooledGradient, p, orows));
        dst.push_back(planeRows(out, p, rows));
        graph.setTileMapping(dst.back(), tile);
      }
      VertexRef v = graph.addVertex(cs, cls);
      connect(graph, v, "in", src);
      connect(graph, v, "grad", grad);
      connect(graph, v, "out", dst);
      std::vector<int> g = poolGeometry(params, pr.size(), rows, ir);
      g[conv::pOutRow0] = static_cast<int>(orows.begin);
      g[conv::pOutRows] = any ? static_cast<int>(orows.size()) : 0;
      graph.setInitialValue(v["geometry"], g);
      const std::size_t cover =
          ((params.kernelShape[0] + sH - 1) / sH) *
          ((params.kernelShape[1] + params.stride[1] - 1) / params.stride[1]);
      graph.setPerfEstimate(v, conv::poolCycles(pr.size() * rows.size(),
                                                params.inputFieldShape[1],
                                                cover * (isMax ? 2 : 1),
                                                params.dType, target));
      graph.setTileMapping(v, tile);
    }
  prog.add(program::Execute(cs, name));
  return out;
}

} // namespace tessera::ops
