// Batch, group and layer norms from reductions and fused maps. Every norm
// is seen through a 3-D view of the activations whose statistics reduce
// some of its dimensions: batch norm [N, C, S] over {0, 2}, group norm
// [N, G, K] over {2}. Statistics stay in the partials type until the map
// that makes invStdDev, so E[x^2] - E[x]^2 does not cancel in half.
#include "tessera/ops/Norms.hpp"

#include "OpsInternal.hpp"

#include "tessera/device/Target.hpp"
#include "tessera/ops/Elementwise.hpp"
#include "tessera/ops/Reduce.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/OptionParser.hpp"

#include <algorithm>

namespace tessera::ops {
namespace {

using namespace expr;

struct View {
  bool perChannel = true; ///< batch norm: one statistic per channel
  std::size_t n = 0, c = 0, s = 0;
  Tensor x;                      ///< the activations as [N, C, S] or [N, G, K]
  std::vector<std::size_t> dims; ///< the dims of x the statistics reduce
  std::vector<std::size_t> statShape;     ///< statistics as returned
  std::vector<std::size_t> statBroadcast; ///< statistics broadcast against x
  std::size_t count = 0;                  ///< elements per statistic
};

std::string typeStr(Type t) { return std::string(typeName(t)); }

void checkFloat(const std::string &op, const char *what, const Tensor &t) {
  if (!t.valid())
    throw ShapeError(op + ": " + what + " is an empty tensor");
  if (t.elementType() != FLOAT && t.elementType() != HALF)
    throw TypeError(op + ": " + what + " has type " + typeStr(t.elementType()) +
                    "; norms take float or half");
}

void checkLike(const std::string &op, const char *what, const Tensor &t,
               const Tensor &acts, const std::vector<std::size_t> &shape) {
  checkFloat(op, what, t);
  if (t.elementType() != acts.elementType())
    throw TypeError(op + ": " + what + " is " + typeStr(t.elementType()) +
                    " but the activations are " + typeStr(acts.elementType()) +
                    "; give it their type");
  if (t.shape() != shape)
    throw ShapeError(op + ": " + what + " has shape " + t.shapeToString() +
                     " but must be " + shapeString(shape));
}

// The view of `acts` for batch norm (groups == 0) or group norm.
View makeView(const std::string &op, const Tensor &acts, unsigned groups) {
  checkFloat(op, "the activations", acts);
  if (acts.rank() < 2)
    throw ShapeError(op + ": the activations have shape " +
                     acts.shapeToString() +
                     "; they must be [batch, channels, ...] (rank >= 2)");
  View v;
  v.n = acts.dim(0);
  v.c = acts.dim(1);
  v.s = acts.numElements() / std::max<std::size_t>(v.n * v.c, 1);
  if (acts.numElements() == 0)
    throw ShapeError(op + ": the activations have shape " +
                     acts.shapeToString() + ", which has no elements");
  if (groups == 0) {
    v.x = acts.reshape({v.n, v.c, v.s});
    v.dims = {0, 2};
    v.statShape = {v.c};
    v.statBroadcast = {v.c, 1};
    v.count = v.n * v.s;
    return v;
  }
  if (v.c % groups != 0)
    throw ShapeError(op + ": " + std::to_string(groups) +
                     " groups do not divide the " + std::to_string(v.c) +
                     " channels of the activations " + acts.shapeToString() +
                     "; choose a number of groups that divides it");
  v.perChannel = false;
  const std::size_t k = v.c / groups * v.s;
  v.x = acts.reshape({v.n, groups, k});
  v.dims = {2};
  v.statShape = {v.n * groups};
  v.statBroadcast = {v.n, groups, 1};
  v.count = k;
  return v;
}

// The number of groups that statistics of \p stat's size imply.
unsigned groupsOf(const std::string &op, const Tensor &acts,
                  const Tensor &stat) {
  checkFloat(op, "the activations", acts);
  if (acts.rank() < 2 || acts.dim(0) == 0 ||
      stat.numElements() % acts.dim(0) != 0 || stat.numElements() == 0)
    throw ShapeError(op + ": statistics of shape " + stat.shapeToString() +
                     " do not fit activations of shape " +
                     acts.shapeToString() + "; they must be [batch * groups]");
  return static_cast<unsigned>(stat.numElements() / acts.dim(0));
}

OptionFlags reduceOptions(Type partialsType, const std::string &op) {
  if (partialsType != FLOAT && partialsType != HALF)
    throw TypeError(op + ": partialsType is " + typeStr(partialsType) +
                    "; use float or half");
  return {{"accumType.interTile", partialsType == FLOAT ? "float" : "half"}};
}

void noOptions(const std::string &op, const OptionFlags &options) {
  OptionParser(op).parse(options);
}

// Per-channel statistics copied into a variable mapped linearly, so that
// the channels a tile's activations need lie in one run on one or two
// tiles: a map broadcasting them over the activations then takes a tile's
// channels as one list element read where it lies (Elementwise.cpp),
// rather than one element per channel from as many tiles as the
// reduction spread them over.
Tensor channelsLinear(Graph &graph, const View &v, const Tensor &t,
                      Sequence &prog, const DebugContext &dc) {
  if (!v.perChannel || t.numElements() < 2)
    return t;
  Tensor out =
      graph.addVariable(t.elementType(), t.shape(), DebugContext(dc, "linear"));
  // Pieces of 32 channels (128 bytes of float, Poplar's least a tile),
  // spread over the IPU from a tile that moves with each new variable, so
  // that the statistics of every layer do not all land on tile 0.
  // They stay on the IPU of the statistics they copy.
  const std::size_t n = t.numElements(), piece = 32;
  const TileMapping from = graph.getTileMapping(t);
  std::size_t source = 0;
  while (source + 1 < from.size() && from[source].empty())
    ++source;
  const std::size_t tiles = std::min<std::size_t>(
      graph.getTarget().getTilesPerIPU(), graph.getTarget().getNumTiles());
  const std::size_t base = source - source % tiles;
  const std::size_t pieces = (n + piece - 1) / piece;
  const std::size_t step = std::max<std::size_t>(tiles / pieces, 1);
  const std::size_t first = out.runs()[0].var % step;
  const Tensor flat = out.flatten();
  for (std::size_t p = 0; p < pieces; ++p)
    graph.setTileMapping(
        flat.slice(p * piece, std::min(n, (p + 1) * piece)),
        static_cast<unsigned>(base + (first + p * step) % tiles));
  prog.add(program::Copy(t, out, false, DebugContext(dc, "linear")));
  return out;
}

std::pair<Tensor, Tensor> statistics(Graph &graph, const View &v, Type type,
                                     float eps, bool unbiased, bool stable,
                                     Type partialsType, Sequence &prog,
                                     const DebugContext &dc,
                                     const std::string &op) {
  const OptionFlags ro = reduceOptions(partialsType, op);
  if (unbiased && v.count < 2)
    throw ShapeError(op +
                     ": an unbiased variance needs at least 2 elements "
                     "per statistic, but there is " +
                     std::to_string(v.count));
  const float scale = 1.0f / static_cast<float>(v.count);
  const double correction =
      unbiased ? double(v.count) / double(v.count - 1) : 1.0;
  Tensor mean =
      channelsLinear(graph, v,
                     reduce(graph, v.x, partialsType, v.dims,
                            ReduceParams(Operation::ADD, false, scale), prog,
                            DebugContext(dc, "mean"), ro),
                     prog, DebugContext(dc, "mean"));
  Tensor istd;
  if (stable) {
    Tensor centred = map(graph, _1 - _2, {v.x, mean.reshape(v.statBroadcast)},
                         prog, DebugContext(dc, "centred"));
    Tensor var = reduce(graph, centred, partialsType, v.dims,
                        ReduceParams(Operation::SQUARE_ADD, false, scale), prog,
                        DebugContext(dc, "variance"), ro);
    istd = map(graph, Cast(Rsqrt(_1 * Const(correction) + Const(eps)), type),
               {var}, prog, DebugContext(dc, "invStdDev"));
  } else {
    Tensor meanSq = reduce(graph, v.x, partialsType, v.dims,
                           ReduceParams(Operation::SQUARE_ADD, false, scale),
                           prog, DebugContext(dc, "meanSquare"), ro);
    istd = map(graph,
               Cast(Rsqrt(Max(_2 - _1 * _1, Const(0.0f)) * Const(correction) +
                          Const(eps)),
                    type),
               {mean, meanSq}, prog, DebugContext(dc, "invStdDev"));
  }
  if (mean.elementType() != type)
    mean = cast(graph, mean, type, prog, DebugContext(dc, "meanCast"));
  istd = channelsLinear(graph, v, istd, prog, DebugContext(dc, "invStdDev"));
  return {mean.reshape(v.statShape), istd.reshape(v.statShape)};
}

std::pair<Tensor, Tensor>
normalise(Graph &graph, const View &v, const Tensor &acts, const Tensor &gamma,
          const Tensor &beta, const Tensor &mean, const Tensor &istd,
          Sequence &prog, const DebugContext &dc, const std::string &op) {
  checkLike(op, "gamma", gamma, acts, {v.c});
  checkLike(op, "beta", beta, acts, {v.c});
  checkLike(op, "the mean", mean, acts, v.statShape);
  checkLike(op, "invStdDev", istd, acts, v.statShape);
  Tensor whitened =
      map(graph, (_1 - _2) * _3,
          {v.x, mean.reshape(v.statBroadcast), istd.reshape(v.statBroadcast)},
          prog, DebugContext(dc, "whiten"));
  whitened = whitened.reshape({v.n, v.c, v.s});
  Tensor out = map(graph, _1 * _2 + _3,
                   {whitened, gamma.reshape({v.c, 1}), beta.reshape({v.c, 1})},
                   prog, DebugContext(dc, "scaleShift"));
  return {out.reshape(acts.shape()), whitened.reshape(acts.shape())};
}

// (gammaDelta, betaDelta): sum(dy * xhat) and sum(dy) per channel of the
// [N, C, S] tensors \p prod and \p dy, in one reduction of the two
// stacked: a tile's shares of both make one vertex, not two, and so do the
// owners'.
std::pair<Tensor, Tensor> deltas(Graph &graph, const View &v,
                                 const Tensor &prod, const Tensor &dy,
                                 Type type, Sequence &prog,
                                 const DebugContext &dc,
                                 const OptionFlags &ro) {
  const std::vector<std::size_t> one{1, v.n, v.c, v.s};
  const Tensor both =
      reduce(graph, concat(prod.reshape(one), dy.reshape(one), 0), type, {1, 3},
             Operation::ADD, prog, DebugContext(dc, "deltas"), ro);
  return {both[0], both[1]};
}

NormGradients gradients(Graph &graph, const View &v, const Tensor &whitened,
                        const Tensor &gradsIn, const Tensor &istd,
                        const Tensor &gamma, Type partialsType, Sequence &prog,
                        const DebugContext &dc, const std::string &op) {
  checkLike(op, "gradsIn", gradsIn, whitened, whitened.shape());
  checkLike(op, "invStdDev", istd, whitened, v.statShape);
  checkLike(op, "gamma", gamma, whitened, {v.c});
  const OptionFlags ro = reduceOptions(partialsType, op);
  const Type type = whitened.elementType();
  const Tensor xh = whitened.reshape({v.n, v.c, v.s});
  const Tensor dy = gradsIn.reshape({v.n, v.c, v.s});
  const Tensor g = gamma.reshape({v.c, 1});
  Tensor prod = map(graph, _1 * _2, {dy, xh}, prog, DebugContext(dc, "dyXhat"));
  const auto [gammaDelta, betaDelta] =
      deltas(graph, v, prod, dy, type, prog, dc, ro);
  Tensor gradsOut;
  if (v.perChannel) {
    // The batch's means of dy and dy * xhat are the deltas over the count.
    const Const inv(1.0 / double(v.count));
    gradsOut = map(graph, _5 * _6 * (_1 - (_4 + _2 * _3) * inv),
                   {dy, xh,
                    channelsLinear(graph, v, gammaDelta, prog,
                                   DebugContext(dc, "gammaDelta"))
                        .reshape({v.c, 1}),
                    channelsLinear(graph, v, betaDelta, prog,
                                   DebugContext(dc, "betaDelta"))
                        .reshape({v.c, 1}),
                    g, istd.reshape(v.statBroadcast)},
                   prog, DebugContext(dc, "gradsOut"));
  } else {
    // Group statistics: the means of dxhat = dy * gamma and of dxhat * xhat
    // over each group.
    const float scale = 1.0f / static_cast<float>(v.count);
    Tensor dxh = map(graph, _1 * _2, {dy, g}, prog, DebugContext(dc, "dxhat"));
    Tensor dxhXh =
        map(graph, _1 * _2, {dxh, xh}, prog, DebugContext(dc, "dxhatXhat"));
    const std::vector<std::size_t> grouped = v.x.shape();
    Tensor m1 = reduce(graph, dxh.reshape(grouped), type, v.dims,
                       ReduceParams(Operation::ADD, false, scale), prog,
                       DebugContext(dc, "meanDxhat"), ro);
    Tensor m2 = reduce(graph, dxhXh.reshape(grouped), type, v.dims,
                       ReduceParams(Operation::ADD, false, scale), prog,
                       DebugContext(dc, "meanDxhatXhat"), ro);
    gradsOut = map(graph, _5 * (_1 - _2 - _3 * _4),
                   {dxh.reshape(grouped), m1.reshape(v.statBroadcast),
                    xh.reshape(grouped), m2.reshape(v.statBroadcast),
                    istd.reshape(v.statBroadcast)},
                   prog, DebugContext(dc, "gradsOut"));
  }
  return {gradsOut.reshape(whitened.shape()), gammaDelta, betaDelta};
}

// Batch norm's gradients from the activations: as gradients() of the
// whitened activations, with xhat = (x - mean) * invStdDev computed inside
// the two maps that read it rather than stored by a map of its own. Each
// map evaluates an operation at a time in the activations' type, so xhat
// has the same bits either way; the activations' size less of temporary
// memory and a vertex a tile less.
NormGradients gradientsFromActs(Graph &graph, const View &v, const Tensor &acts,
                                const Tensor &gradsIn, const Tensor &mean,
                                const Tensor &istd, const Tensor &gamma,
                                Type partialsType, Sequence &prog,
                                const DebugContext &dc, const std::string &op) {
  checkLike(op, "the mean", mean, acts, v.statShape);
  checkLike(op, "invStdDev", istd, acts, v.statShape);
  checkLike(op, "gradsIn", gradsIn, acts, acts.shape());
  checkLike(op, "gamma", gamma, acts, {v.c});
  const OptionFlags ro = reduceOptions(partialsType, op);
  const Type type = acts.elementType();
  const Tensor dy = gradsIn.reshape({v.n, v.c, v.s});
  const Tensor m = mean.reshape(v.statBroadcast);
  const Tensor is = istd.reshape(v.statBroadcast);
  Tensor prod = map(graph, _1 * ((_2 - _3) * _4), {dy, v.x, m, is}, prog,
                    DebugContext(dc, "dyXhat"));
  const auto [gammaDelta, betaDelta] =
      deltas(graph, v, prod, dy, type, prog, dc, ro);
  // The batch's means of dy and dy * xhat are the deltas over the count.
  const Const inv(1.0 / double(v.count));
  Tensor gradsOut = map(
      graph, _5 * _6 * (_1 - (_4 + ((_2 - _7) * _6) * _3) * inv),
      {dy, v.x,
       channelsLinear(graph, v, gammaDelta, prog,
                      DebugContext(dc, "gammaDelta"))
           .reshape({v.c, 1}),
       channelsLinear(graph, v, betaDelta, prog, DebugContext(dc, "betaDelta"))
           .reshape({v.c, 1}),
       gamma.reshape({v.c, 1}), is, m},
      prog, DebugContext(dc, "gradsOut"));
  return {gradsOut.reshape(acts.shape()), gammaDelta, betaDelta};
}

Tensor whiten(Graph &graph, const View &v, const Tensor &acts,
              const Tensor &mean, const Tensor &istd, Sequence &prog,
              const DebugContext &dc, const std::string &op) {
  checkLike(op, "the mean", mean, acts, v.statShape);
  checkLike(op, "invStdDev", istd, acts, v.statShape);
  return map(graph, (_1 - _2) * _3,
             {v.x, mean.reshape(v.statBroadcast),
              istd.reshape(v.statBroadcast)},
             prog, DebugContext(dc, "whiten"))
      .reshape(acts.shape());
}

DebugContext nameOr(const DebugContext &dc, const std::string &name) {
  return dc.name.empty() ? DebugContext(name) : dc;
}

} // namespace

// ---- Batch norm ----------------------------------------------------------

std::pair<Tensor, Tensor>
batchNormStatistics(Graph &graph, const Tensor &acts, float eps, Sequence &prog,
                    bool unbiasedVarEstimate, bool stableAlgo,
                    Type partialsType, const DebugContext &dc,
                    const OptionFlags &options) {
  const std::string op = "batchNormStatistics";
  noOptions(op, options);
  const View v = makeView(op, acts, 0);
  return statistics(graph, v, acts.elementType(), eps, unbiasedVarEstimate,
                    stableAlgo, partialsType, prog, nameOr(dc, op), op);
}

std::pair<Tensor, Tensor> batchNormalise(Graph &graph, const Tensor &acts,
                                         const Tensor &gamma,
                                         const Tensor &beta, const Tensor &mean,
                                         const Tensor &invStdDev,
                                         Sequence &prog, const DebugContext &dc,
                                         const OptionFlags &options) {
  const std::string op = "batchNormalise";
  noOptions(op, options);
  return normalise(graph, makeView(op, acts, 0), acts, gamma, beta, mean,
                   invStdDev, prog, nameOr(dc, op), op);
}

Tensor batchNormalise(Graph &graph, const Tensor &acts,
                      const Tensor &combinedMultiplicand, const Tensor &addend,
                      Sequence &prog, const DebugContext &dc,
                      const OptionFlags &options) {
  const std::string op = "batchNormalise";
  noOptions(op, options);
  const View v = makeView(op, acts, 0);
  checkLike(op, "the multiplicand", combinedMultiplicand, acts, {v.c});
  checkLike(op, "the addend", addend, acts, {v.c});
  return map(graph, _1 * _2 + _3,
             {v.x, combinedMultiplicand.reshape({v.c, 1}),
              addend.reshape({v.c, 1})},
             prog, nameOr(dc, op))
      .reshape(acts.shape());
}

NormGradients batchNormGradients(Graph &graph, const Tensor &actsWhitened,
                                 const Tensor &gradsIn, const Tensor &invStdDev,
                                 const Tensor &gamma, Sequence &prog,
                                 Type partialsType, const DebugContext &dc,
                                 const OptionFlags &options) {
  const std::string op = "batchNormGradients";
  noOptions(op, options);
  return gradients(graph, makeView(op, actsWhitened, 0), actsWhitened, gradsIn,
                   invStdDev, gamma, partialsType, prog, nameOr(dc, op), op);
}

NormGradients batchNormGradients(Graph &graph, const Tensor &acts,
                                 const Tensor &gradsIn, const Tensor &mean,
                                 const Tensor &invStdDev, const Tensor &gamma,
                                 Sequence &prog, Type partialsType,
                                 const DebugContext &dc,
                                 const OptionFlags &options) {
  const std::string op = "batchNormGradients";
  noOptions(op, options);
  return gradientsFromActs(graph, makeView(op, acts, 0), acts, gradsIn, mean,
                           invStdDev, gamma, partialsType, prog, nameOr(dc, op),
                           op);
}

// ---- Group norm and layer norm (one group) ------------------------------

namespace {

std::pair<Tensor, Tensor>
groupStatistics(const std::string &op, Graph &graph, const Tensor &acts,
                float eps, Sequence &prog, unsigned numGroups, bool unbiased,
                bool stable, Type partialsType, const DebugContext &dc,
                const OptionFlags &options) {
  noOptions(op, options);
  if (numGroups == 0)
    throw ShapeError(op + ": numGroups is 0; give at least one group");
  const View v = makeView(op, acts, numGroups);
  return statistics(graph, v, acts.elementType(), eps, unbiased, stable,
                    partialsType, prog, nameOr(dc, op), op);
}

std::pair<Tensor, Tensor>
groupNormaliseImpl(const std::string &op, Graph &graph, const Tensor &acts,
                   const Tensor &gamma, const Tensor &beta, const Tensor &mean,
                   const Tensor &istd, Sequence &prog, const DebugContext &dc,
                   const OptionFlags &options) {
  noOptions(op, options);
  const View v = makeView(op, acts, groupsOf(op, acts, mean));
  return normalise(graph, v, acts, gamma, beta, mean, istd, prog,
                   nameOr(dc, op), op);
}

NormGradients groupGradients(const std::string &op, Graph &graph,
                             const Tensor &whitened, const Tensor &gradsIn,
                             const Tensor &istd, const Tensor &gamma,
                             Sequence &prog, Type partialsType,
                             const DebugContext &dc,
                             const OptionFlags &options) {
  noOptions(op, options);
  const View v = makeView(op, whitened, groupsOf(op, whitened, istd));
  return gradients(graph, v, whitened, gradsIn, istd, gamma, partialsType, prog,
                   nameOr(dc, op), op);
}

NormGradients groupGradientsFromActs(const std::string &op, Graph &graph,
                                     const Tensor &acts, const Tensor &gradsIn,
                                     const Tensor &mean, const Tensor &istd,
                                     const Tensor &gamma, Sequence &prog,
                                     Type partialsType, const DebugContext &dc,
                                     const OptionFlags &options) {
  noOptions(op, options);
  const DebugContext name = nameOr(dc, op);
  const View v = makeView(op, acts, groupsOf(op, acts, mean));
  const Tensor xh = whiten(graph, v, acts, mean, istd, prog, name, op);
  return gradients(graph, makeView(op, xh, groupsOf(op, xh, mean)), xh, gradsIn,
                   istd, gamma, partialsType, prog, name, op);
}

} // namespace

std::pair<Tensor, Tensor>
groupNormStatistics(Graph &graph, const Tensor &acts, float eps, Sequence &prog,
                    unsigned numGroups, bool unbiasedVarEstimate,
                    bool stableAlgo, Type partialsType, const DebugContext &dc,
                    const OptionFlags &options) {
  return groupStatistics("groupNormStatistics", graph, acts, eps, prog,
                         numGroups, unbiasedVarEstimate, stableAlgo,
                         partialsType, dc, options);
}

std::pair<Tensor, Tensor> groupNormalise(Graph &graph, const Tensor &acts,
                                         const Tensor &gamma,
                                         const Tensor &beta, const Tensor &mean,
                                         const Tensor &invStdDev,
                                         Sequence &prog, const DebugContext &dc,
                                         const OptionFlags &options) {
  return groupNormaliseImpl("groupNormalise", graph, acts, gamma, beta, mean,
                            invStdDev, prog, dc, options);
}

NormGradients groupNormGradients(Graph &graph, const Tensor &actsWhitened,
                                 const Tensor &gradsIn, const Tensor &invStdDev,
                                 const Tensor &gamma, Sequence &prog,
                                 Type partialsType, const DebugContext &dc,
                                 const OptionFlags &options) {
  return groupGradients("groupNormGradients", graph, actsWhitened, gradsIn,
                        invStdDev, gamma, prog, partialsType, dc, options);
}

NormGradients groupNormGradients(Graph &graph, const Tensor &acts,
                                 const Tensor &gradsIn, const Tensor &mean,
                                 const Tensor &invStdDev, const Tensor &gamma,
                                 Sequence &prog, Type partialsType,
                                 const DebugContext &dc,
                                 const OptionFlags &options) {
  return groupGradientsFromActs("groupNormGradients", graph, acts, gradsIn,
                                mean, invStdDev, gamma, prog, partialsType, dc,
                                options);
}

std::pair<Tensor, Tensor>
layerNormStatistics(Graph &graph, const Tensor &acts, float eps, Sequence &prog,
                    bool unbiasedVarEstimate, bool stableAlgo,
                    Type partialsType, const DebugContext &dc,
                    const OptionFlags &options) {
  return groupStatistics("layerNormStatistics", graph, acts, eps, prog, 1,
                         unbiasedVarEstimate, stableAlgo, partialsType, dc,
                         options);
}

std::pair<Tensor, Tensor> layerNormalise(Graph &graph, const Tensor &acts,
                                         const Tensor &gamma,
                                         const Tensor &beta, const Tensor &mean,
                                         const Tensor &invStdDev,
                                         Sequence &prog, const DebugContext &dc,
                                         const OptionFlags &options) {
  return groupNormaliseImpl("layerNormalise", graph, acts, gamma, beta, mean,
                            invStdDev, prog, dc, options);
}

NormGradients layerNormGradients(Graph &graph, const Tensor &actsWhitened,
                                 const Tensor &gradsIn, const Tensor &invStdDev,
                                 const Tensor &gamma, Sequence &prog,
                                 Type partialsType, const DebugContext &dc,
                                 const OptionFlags &options) {
  return groupGradients("layerNormGradients", graph, actsWhitened, gradsIn,
                        invStdDev, gamma, prog, partialsType, dc, options);
}

NormGradients layerNormGradients(Graph &graph, const Tensor &acts,
                                 const Tensor &gradsIn, const Tensor &mean,
                                 const Tensor &invStdDev, const Tensor &gamma,
                                 Sequence &prog, Type partialsType,
                                 const DebugContext &dc,
                                 const OptionFlags &options) {
  return groupGradientsFromActs("layerNormGradients", graph, acts, gradsIn,
                                mean, invStdDev, gamma, prog, partialsType, dc,
                                options);
}

} // namespace tessera::ops
