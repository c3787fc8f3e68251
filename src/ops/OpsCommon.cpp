#include "OpsInternal.hpp"

#include "tessera/device/Target.hpp"
#include "tessera/ops/Codelets.hpp"
#include "tessera/support/Error.hpp"

#include <algorithm>

namespace tessera::ops {
std::string shapeString(const std::vector<std::size_t> &shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void registerVertices(VertexRegistry &registry) {
  registerElementwiseVertices(registry);
  registerReduceVertices(registry);
  registerMatMulVertices(registry);
  registerConvVertices(registry);
  registerRandomVertices(registry);
  registerNnVertices(registry);
  registerSliceVertices(registry);
}

void addCodelets(Graph &graph) {
  VertexRegistry::registerBuiltinLibrary("ops", &registerVertices);
  registerVertices(graph.registry());
}

std::string templateName(const std::string &base,
                         std::initializer_list<Type> types) {
  std::string s = base + "<";
  bool first = true;
  for (Type t : types) {
    s += (first ? "" : ",") + std::string(typeName(t));
    first = false;
  }
  return s + ">";
}

std::vector<TilePiece> splitByTile(const Graph &graph, const Tensor &t,
                                   unsigned maxPerTile, std::size_t grain) {
  std::vector<TilePiece> pieces;
  const TileMapping mapping = graph.getTileMapping(t);
  grain = std::max<std::size_t>(grain, 1);
  for (unsigned tile = 0; tile < mapping.size(); ++tile) {
    const auto &ivs = mapping[tile];
    if (ivs.empty())
      continue;
    std::size_t total = 0;
    for (const Interval &iv : ivs)
      total += iv.size();
    // Elements per worker, rounded up to the grain.
    std::size_t per = (total + maxPerTile - 1) / maxPerTile;
    per = (per + grain - 1) / grain * grain;
    for (const Interval &iv : ivs)
      for (std::size_t b = iv.begin(); b < iv.end(); b += per)
        pieces.push_back({tile, b, std::min(iv.end(), b + per)});
  }
  return pieces;
}

std::vector<WorkerPiece> splitByWorker(const Graph &graph, const Tensor &t,
                                       unsigned maxPerTile, std::size_t grain) {
  std::vector<WorkerPiece> pieces;
  const TileMapping mapping = graph.getTileMapping(t);
  grain = std::max<std::size_t>(grain, 1);
  for (unsigned tile = 0; tile < mapping.size(); ++tile) {
    const auto &ivs = mapping[tile];
    std::size_t total = 0;
    for (const Interval &iv : ivs)
      total += iv.size();
    if (total == 0)
      continue;
    // Elements per worker, rounded up to the grain.
    std::size_t per = (total + maxPerTile - 1) / maxPerTile;
    per = (per + grain - 1) / grain * grain;
    WorkerPiece piece{tile, {}};
    std::size_t filled = 0;
    for (const Interval &iv : ivs)
      for (std::size_t b = iv.begin(); b < iv.end();) {
        const std::size_t e = std::min(iv.end(), b + (per - filled));
        piece.regions.emplace_back(b, e);
        filled += e - b;
        b = e;
        if (filled == per) {
          pieces.push_back(std::move(piece));
          piece = WorkerPiece{tile, {}};
          filled = 0;
        }
      }
    if (!piece.regions.empty())
      pieces.push_back(std::move(piece));
  }
  return pieces;
}

Tensor createLike(Graph &graph, const Tensor &like, Type type,
                  const DebugContext &dc) {
  Tensor t = graph.addVariable(type, like.shape(), dc);
  bool usable = true;
  for (const Run &r : like.runs())
    usable = usable && r.stride != 0;
  TileMapping m = graph.getTileMapping(like, false);
  std::size_t mapped = 0;
  for (const auto &ivs : m)
    for (const Interval &iv : ivs)
      mapped += iv.size();
  if (usable && mapped == like.numElements())
    graph.setTileMapping(t, m);
  else
    mapTensorLinearly(graph, t);
  return t;
}

void checkSameShape(const char *op, const Tensor &a, const Tensor &b) {
  if (a.shape() != b.shape())
    throw ShapeError(std::string(op) + ": the operands have shapes " +
                     a.shapeToString() + " and " + b.shapeToString() +
                     "; they must be equal");
}

std::vector<std::size_t> broadcastShape(const char *op,
                                        const std::vector<std::size_t> &a,
                                        const std::vector<std::size_t> &b) {
  const std::size_t rank = std::max(a.size(), b.size());
  std::vector<std::size_t> out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::size_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::size_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw ShapeError(std::string(op) + ": shapes " + shapeString(a) +
                       " and " + shapeString(b) +
                       " do not broadcast: dimension " + std::to_string(i) +
                       " is " + std::to_string(da) + " in one and " +
                       std::to_string(db) +
                       " in the other (each must be equal or 1)");
    out[i] = std::max(da, db);
  }
  return out;
}

Tensor broadcastTo(const Tensor &t, const std::vector<std::size_t> &shape) {
  if (t.shape() == shape)
    return t;
  std::vector<std::size_t> lead(shape.size() - t.rank(), 0);
  Tensor r = t;
  if (!lead.empty())
    r = r.expand(lead);
  for (unsigned d = 0; d < shape.size(); ++d)
    if (r.dim(d) != shape[d])
      r = r.broadcast(shape[d], d);
  return r;
}

} // namespace tessera::ops
