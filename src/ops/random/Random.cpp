// Planning of the random ops: the output takes the reference's mapping and
// every worker's share of a tile gets one vertex on the tile, told the
// flat index of each of its regions' first element so the generator's
// counter is the element's index in the whole tensor.
#include "tessera/ops/Random.hpp"

#include "OpsInternal.hpp"

#include "tessera/ops/Elementwise.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/OptionParser.hpp"

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>

namespace tessera::ops {
namespace {

DebugContext nameOr(const DebugContext &dc, const char *name) {
  return dc.name.empty() ? DebugContext(name) : dc;
}

std::string num(double v) { return std::to_string(v); }

void checkType(const char *op, const char *what, Type t,
               std::initializer_list<Type> allowed) {
  std::string names;
  for (Type a : allowed) {
    if (a == t)
      return;
    names += (names.empty() ? "" : ", ") + std::string(typeName(a));
  }
  throw TypeError(std::string(op) + ": " + what + " is " +
                  std::string(typeName(t)) + "; it must be one of " + names);
}

// Checks the seed and options before anything is added to the graph;
// returns the host seed for a null seed tensor.
std::uint64_t checkSeed(const char *op, const Tensor *seed,
                        const OptionFlags &options) {
  unsigned long long hostSeed = 0;
  OptionParser parser(op);
  parser.add("seed", hostSeed);
  parser.parse(options);
  if (!seed)
    return hostSeed;
  if (options.contains("seed"))
    throw OptionError(std::string(op) +
                      ": both a seed tensor and the \"seed\" option are "
                      "given; the option is only for a null seed tensor, so "
                      "drop one of them");
  if (!seed->valid() || seed->elementType() != UNSIGNED_INT)
    throw TypeError(std::string(op) + ": the seed tensor has type " +
                    (seed->valid() ? std::string(typeName(seed->elementType()))
                                   : std::string("(none)")) +
                    "; it must be unsigned int (two elements)");
  if (seed->numElements() != 2)
    throw ShapeError(std::string(op) + ": the seed tensor has shape " +
                     seed->shapeToString() + " (" +
                     std::to_string(seed->numElements()) +
                     " elements); it must have exactly 2 elements");
  return 0;
}

// The seed each tile's vertices read: the user's tensor (brought to the
// tile by exchange), or, for a host seed, a constant copy on every tile
// that needs one, so a host-seeded op needs no exchange at all.
std::map<unsigned, Tensor> seedsByTile(Graph &graph, const Tensor *seed,
                                       std::uint64_t hostSeed,
                                       const std::vector<WorkerPiece> &pieces,
                                       const DebugContext &dc) {
  std::map<unsigned, Tensor> byTile;
  for (const WorkerPiece &p : pieces)
    byTile[p.tile] = Tensor();
  if (seed) {
    for (auto &[tile, t] : byTile)
      t = seed->flatten();
    return byTile;
  }
  if (byTile.empty())
    return byTile;
  std::vector<unsigned> words;
  for (std::size_t i = 0; i < byTile.size(); ++i) {
    words.push_back(static_cast<unsigned>(hostSeed));
    words.push_back(static_cast<unsigned>(hostSeed >> 32));
  }
  const Tensor all = graph.addConstant<unsigned>(
      UNSIGNED_INT, {byTile.size(), 2}, words, DebugContext(dc, "seed"));
  std::size_t row = 0;
  for (auto &[tile, t] : byTile) {
    t = all[row++];
    graph.setTileMapping(t, tile);
  }
  return byTile;
}

void checkReference(const char *op, const Tensor &reference) {
  if (!reference.valid())
    throw ShapeError(std::string(op) +
                     ": the reference tensor is empty; give a tensor whose "
                     "shape and mapping the output should take");
}

// Sets the distribution's own fields of one vertex.
using FieldSetter = std::function<void(Graph &, VertexRef)>;

// One vertex of class `cls` per worker share of `out`'s tiles, writing
// the share's regions; `in` (optional, the shape of out) is connected
// region by region as "in", `mask` as "mask".
void addRandomVertices(Graph &graph, const std::string &cls, const Tensor *seed,
                       std::uint64_t hostSeed, std::uint32_t seedModifier,
                       const Tensor &out, const Tensor *in, const Tensor *mask,
                       const FieldSetter &setFields, Sequence &prog,
                       const DebugContext &dc) {
  const Tensor flat = out.flatten();
  // Shares are whole generator blocks (4 elements) where the mapping
  // allows, so a block is computed by one worker.
  const std::vector<WorkerPiece> shares = splitByWorker(graph, flat, 6, 4);
  const std::map<unsigned, Tensor> seeds =
      seedsByTile(graph, seed, hostSeed, shares, dc);
  ComputeSet cs = graph.addComputeSet(dc);
  const Tensor inFlat = in ? in->flatten() : Tensor();
  const Tensor maskFlat = mask ? mask->flatten() : Tensor();
  for (const WorkerPiece &w : shares) {
    VertexRef v = graph.addVertex(cs, cls);
    graph.connect(v["seed"], seeds.at(w.tile));
    std::vector<Tensor> outs, ins, masks;
    std::vector<unsigned> offsets;
    for (const auto &[b, e] : w.regions) {
      outs.push_back(flat.slice(b, e));
      if (in)
        ins.push_back(inFlat.slice(b, e));
      if (mask)
        masks.push_back(maskFlat.slice(b, e));
      offsets.push_back(static_cast<unsigned>(b));
      offsets.push_back(static_cast<unsigned>(std::uint64_t(b) >> 32));
    }
    graph.connect(v["out"], outs);
    if (in)
      graph.connect(v["in"], ins);
    if (mask)
      graph.connect(v["mask"], masks);
    graph.setInitialValue(v["seedModifier"], seedModifier);
    graph.setInitialValue(v["offsets"], offsets);
    setFields(graph, v);
    graph.setTileMapping(v, w.tile);
  }
  prog.add(program::Execute(cs, dc));
}

// A new output like `reference` filled by the vertices of `base`<outType>.
Tensor generate(Graph &graph, const char *op, const char *base,
                const Tensor *seed, std::uint32_t seedModifier,
                const Tensor &reference, Type outType,
                const FieldSetter &setFields, Sequence &prog,
                const DebugContext &dc, const OptionFlags &options) {
  checkReference(op, reference);
  const std::uint64_t hostSeed = checkSeed(op, seed, options);
  const DebugContext name = nameOr(dc, op);
  Tensor out = createLike(graph, reference, outType, DebugContext(name, "out"));
  addRandomVertices(graph, templateName(base, {outType}), seed, hostSeed,
                    seedModifier, out, nullptr, nullptr, setFields, prog, name);
  return out;
}

void checkFinite(const char *op, const char *what, double v) {
  if (!std::isfinite(v))
    throw UnsupportedError(std::string(op) + ": " + what + " is " + num(v) +
                           "; it must be a finite number");
}

void checkProbability(const char *op, const char *what, double p) {
  if (!(p >= 0.0 && p <= 1.0))
    throw UnsupportedError(std::string(op) + ": " + what + " is " + num(p) +
                           "; it must be in [0, 1]");
}

void checkDropoutOperands(const char *op, const Tensor &input,
                          const Tensor &reference, double keepProbability,
                          double scale) {
  checkReference(op, reference);
  if (!input.valid())
    throw ShapeError(std::string(op) + ": the input tensor is empty");
  checkType(op, "the input type", input.elementType(), {FLOAT, HALF});
  if (input.shape() != reference.shape())
    throw ShapeError(std::string(op) + ": the input has shape " +
                     input.shapeToString() + " but the reference has shape " +
                     reference.shapeToString() + "; they must be equal");
  checkProbability(op, "the keep probability", keepProbability);
  checkFinite(op, "the scale", scale);
}

} // namespace

Tensor uniform(Graph &graph, const Tensor *seed, std::uint32_t seedModifier,
               const Tensor &reference, Type outType, double minVal,
               double maxVal, Sequence &prog, const DebugContext &dc,
               const OptionFlags &options) {
  const char *op = "uniform";
  checkType(op, "the output type", outType, {FLOAT, HALF, INT});
  checkFinite(op, "minVal", minVal);
  checkFinite(op, "maxVal", maxVal);
  if (maxVal < minVal)
    throw UnsupportedError("uniform: maxVal (" + num(maxVal) +
                           ") is below minVal (" + num(minVal) +
                           "); give minVal <= maxVal");
  if (outType == INT) {
    constexpr double lo = std::numeric_limits<int>::min();
    constexpr double hi = std::numeric_limits<int>::max();
    if (minVal != std::floor(minVal) || maxVal != std::floor(maxVal) ||
        minVal < lo || maxVal > hi)
      throw UnsupportedError("uniform: for int output minVal and maxVal must "
                             "be integers within the range of int, but they "
                             "are " +
                             num(minVal) + " and " + num(maxVal));
    return generate(
        graph, op, "tessera::ops::Uniform", seed, seedModifier, reference,
        outType,
        [=](Graph &g, VertexRef v) {
          g.setInitialValue(v["minVal"], static_cast<int>(minVal));
          g.setInitialValue(v["maxVal"], static_cast<int>(maxVal));
        },
        prog, dc, options);
  }
  return generate(
      graph, op, "tessera::ops::Uniform", seed, seedModifier, reference,
      outType,
      [=](Graph &g, VertexRef v) {
        g.setInitialValue(v["minVal"], static_cast<float>(minVal));
        g.setInitialValue(v["maxVal"], static_cast<float>(maxVal));
      },
      prog, dc, options);
}

Tensor normal(Graph &graph, const Tensor *seed, std::uint32_t seedModifier,
              const Tensor &reference, Type outType, double mean, double stdDev,
              Sequence &prog, const DebugContext &dc,
              const OptionFlags &options) {
  const char *op = "normal";
  checkType(op, "the output type", outType, {FLOAT, HALF});
  checkFinite(op, "the mean", mean);
  checkFinite(op, "the standard deviation", stdDev);
  return generate(
      graph, op, "tessera::ops::Normal", seed, seedModifier, reference, outType,
      [=](Graph &g, VertexRef v) {
        g.setInitialValue(v["mean"], static_cast<float>(mean));
        g.setInitialValue(v["stdDev"], static_cast<float>(stdDev));
      },
      prog, dc, options);
}

Tensor truncatedNormal(Graph &graph, const Tensor *seed,
                       std::uint32_t seedModifier, const Tensor &reference,
                       Type outType, double mean, double stdDev, double alpha,
                       Sequence &prog, const DebugContext &dc,
                       const OptionFlags &options) {
  const char *op = "truncatedNormal";
  checkType(op, "the output type", outType, {FLOAT, HALF});
  checkFinite(op, "the mean", mean);
  checkFinite(op, "the standard deviation", stdDev);
  if (!(alpha > 0.0) || !std::isfinite(alpha))
    throw UnsupportedError("truncatedNormal: alpha is " + num(alpha) +
                           "; it must be a positive number of standard "
                           "deviations");
  return generate(
      graph, op, "tessera::ops::TruncatedNormal", seed, seedModifier, reference,
      outType,
      [=](Graph &g, VertexRef v) {
        g.setInitialValue(v["mean"], static_cast<float>(mean));
        g.setInitialValue(v["stdDev"], static_cast<float>(stdDev));
        g.setInitialValue(v["alpha"], static_cast<float>(alpha));
      },
      prog, dc, options);
}

Tensor bernoulli(Graph &graph, const Tensor *seed, std::uint32_t seedModifier,
                 const Tensor &reference, Type outType, double prob,
                 Sequence &prog, const DebugContext &dc,
                 const OptionFlags &options) {
  const char *op = "bernoulli";
  checkType(op, "the output type", outType, {FLOAT, HALF, INT});
  checkProbability(op, "the probability", prob);
  return generate(
      graph, op, "tessera::ops::Bernoulli", seed, seedModifier, reference,
      outType,
      [=](Graph &g, VertexRef v) {
        g.setInitialValue(v["prob"], static_cast<float>(prob));
      },
      prog, dc, options);
}

Tensor dropout(Graph &graph, const Tensor *seed, std::uint32_t seedModifier,
               const Tensor &input, const Tensor &reference,
               double keepProbability, double scale, Sequence &prog,
               const DebugContext &dc, const OptionFlags &options) {
  const char *op = "dropout";
  checkDropoutOperands(op, input, reference, keepProbability, scale);
  const std::uint64_t hostSeed = checkSeed(op, seed, options);
  const DebugContext name = nameOr(dc, op);
  Tensor out = createLike(graph, reference, input.elementType(),
                          DebugContext(name, "out"));
  addRandomVertices(
      graph, templateName("tessera::ops::Dropout", {input.elementType()}), seed,
      hostSeed, seedModifier, out, &input, nullptr,
      [=](Graph &g, VertexRef v) {
        g.setInitialValue(v["keepProb"], static_cast<float>(keepProbability));
        g.setInitialValue(v["scale"], static_cast<float>(scale));
      },
      prog, name);
  return out;
}

std::pair<Tensor, Tensor>
dropoutWithMask(Graph &graph, const Tensor *seed, std::uint32_t seedModifier,
                const Tensor &input, const Tensor &reference,
                double keepProbability, double scale, Sequence &prog,
                const DebugContext &dc, const OptionFlags &options) {
  const char *op = "dropoutWithMask";
  checkDropoutOperands(op, input, reference, keepProbability, scale);
  const std::uint64_t hostSeed = checkSeed(op, seed, options);
  const DebugContext name = nameOr(dc, op);
  const Type type = input.elementType();
  Tensor out = createLike(graph, reference, type, DebugContext(name, "out"));
  Tensor mask = createLike(graph, reference, type, DebugContext(name, "mask"));
  addRandomVertices(
      graph, templateName("tessera::ops::DropoutWithMask", {type}), seed,
      hostSeed, seedModifier, out, &input, &mask,
      [=](Graph &g, VertexRef v) {
        g.setInitialValue(v["keepProb"], static_cast<float>(keepProbability));
        g.setInitialValue(v["scale"], static_cast<float>(scale));
      },
      prog, name);
  return {out, mask};
}

Tensor applyDropoutMask(Graph &graph, const Tensor &input, const Tensor &mask,
                        double scale, Sequence &prog, const DebugContext &dc) {
  const char *op = "applyDropoutMask";
  if (!input.valid() || !mask.valid())
    throw ShapeError("applyDropoutMask: the input or the mask is empty");
  checkType(op, "the input type", input.elementType(), {FLOAT, HALF});
  checkSameShape(op, input, mask);
  if (mask.elementType() != input.elementType())
    throw TypeError("applyDropoutMask: the mask has type " +
                    std::string(typeName(mask.elementType())) +
                    " but the input has type " +
                    std::string(typeName(input.elementType())) +
                    "; use the mask dropoutWithMask returned for this input");
  checkFinite(op, "the scale", scale);
  using namespace expr;
  return map(graph, _1 * _2 * Const(static_cast<float>(scale)), {input, mask},
             prog, nameOr(dc, op));
}

} // namespace tessera::ops
