#include "OpsInternal.hpp"

#include "tessera/device/Target.hpp"
#include "tessera/ops/Codelets.hpp"
#include "tessera/support/Error.hpp"

#include <algorithm>
#include <optional>

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

std::vector<MemoryPiece> memoryPieces(const Graph &graph, const Tensor &t) {
  const auto &vars = graph.data().variables;
  std::vector<MemoryPiece> pieces;
  std::int64_t end = 0; // the end of the last piece's interval
  for (const Run &run : t.runs()) {
    const auto &mapping = vars[run.var].mapping;
    for (std::int64_t i = 0; i < run.count;) {
      const std::int64_t e = run.start + i * run.stride;
      auto it = std::upper_bound(mapping.begin(), mapping.end(), e,
                                 [](std::int64_t x, const TileInterval &iv) {
                                   return x < static_cast<std::int64_t>(iv.end);
                                 });
      const bool mapped =
          it != mapping.end() && static_cast<std::int64_t>(it->begin) <= e;
      const std::int64_t ivEnd =
          mapped ? static_cast<std::int64_t>(it->end) : e + 1;
      const std::int64_t n =
          run.stride == 1 ? std::min(run.count - i, ivEnd - e) : 1;
      MemoryPiece *last = pieces.empty() ? nullptr : &pieces.back();
      if (last && last->run.var == run.var &&
          last->run.start + last->run.count == e && e + n <= end) {
        last->run.count += n;
      } else {
        pieces.push_back({Run{run.var, e, 1, n}, mapped ? it->tile : 0});
        end = ivEnd;
      }
      i += n;
    }
  }
  return pieces;
}

std::vector<Tensor> memoryPieceTensors(const Graph &graph, const Tensor &t) {
  std::vector<Tensor> out;
  for (const MemoryPiece &p : memoryPieces(graph, t))
    out.emplace_back(t.elementType(), ArrayView<Run>(&p.run, 1));
  return out;
}

namespace {

// Where a row of a vertex operand lies, for mergeRows.
struct RowPlace {
  enum Kind { Interval, Remote, Other } kind = Other;
  std::int64_t ivEnd = 0; ///< Interval: the end of its tile interval
};

// The mapping interval holding element e of \p m, or m.end().
std::vector<TileInterval>::const_iterator
intervalAt(const std::vector<TileInterval> &m, std::int64_t e) {
  auto it = std::upper_bound(m.begin(), m.end(), e,
                             [](std::int64_t x, const TileInterval &iv) {
                               return x < static_cast<std::int64_t>(iv.end);
                             });
  return it != m.end() && static_cast<std::int64_t>(it->begin) <= e ? it
                                                                    : m.end();
}

RowPlace placeRow(const std::vector<VariableData> &vars, const Run *runs,
                  std::size_t numRuns, std::optional<unsigned> tile,
                  bool oneTile) {
  const bool simple = numRuns == 1 &&
                      (runs[0].stride == 1 || runs[0].count == 1) &&
                      runs[0].count > 0;
  if (oneTile)
    return {simple ? RowPlace::Interval : RowPlace::Other, 0};
  // Remote: every element mapped, none on the vertex's tile. For a simple
  // row the first search also finds the interval holding its start.
  bool remote = tile.has_value();
  std::vector<TileInterval>::const_iterator first;
  for (std::size_t i = 0; i < numRuns && remote; ++i) {
    const Run &r = runs[i];
    const std::int64_t last = r.start + (r.count - 1) * r.stride;
    const std::int64_t lo = std::min(r.start, last),
                       hi = std::max(r.start, last);
    const auto &m = vars[r.var].mapping;
    auto it = std::upper_bound(m.begin(), m.end(), lo,
                               [](std::int64_t x, const TileInterval &iv) {
                                 return x < static_cast<std::int64_t>(iv.end);
                               });
    if (i == 0)
      first = it;
    std::int64_t covered = lo; // elements below covered are mapped
    for (; it != m.end() && static_cast<std::int64_t>(it->begin) <= hi; ++it) {
      if (static_cast<std::int64_t>(it->begin) > covered || it->tile == *tile)
        remote = false;
      covered = static_cast<std::int64_t>(it->end);
    }
    remote = remote && covered > hi;
  }
  // A row on other tiles joins a remote group even when the vertex could
  // read it where it lies: the IPU exchanges it either way, and a group is
  // one list element and one temporary where rows from many tiles were
  // many.
  if (remote || !simple)
    return {remote ? RowPlace::Remote : RowPlace::Other, 0};
  const Run &r = runs[0];
  const auto &m = vars[r.var].mapping;
  // With a tile, the remote check searched r.start (the lowest element of
  // a simple row) already.
  auto it = tile.has_value() ? first : intervalAt(m, r.start);
  if (it != m.end() && static_cast<std::int64_t>(it->begin) > r.start)
    it = m.end();
  if (it != m.end() && static_cast<std::int64_t>(it->end) >= r.start + r.count)
    return {RowPlace::Interval, static_cast<std::int64_t>(it->end)};
  return {RowPlace::Other, 0};
}

// mergeRows over rows [0, numRows): rowRuns(r, runs) fills row r's runs
// into runs; rowsOf(a, b) is rows [a, b) as one tensor (for a remote group
// or a row kept as it is).
template <typename RowRuns, typename RowsOf>
std::vector<Tensor> mergeRowsCore(const Graph &graph, Type type,
                                  std::size_t numRows, RowRuns &&rowRuns,
                                  RowsOf &&rowsOf, std::optional<unsigned> tile,
                                  bool oneTile) {
  const auto &vars = graph.data().variables;
  std::vector<Tensor> out;
  std::vector<Run> runs;
  Run cur;
  std::int64_t ivEnd = 0;
  bool open = false;          // cur is an open interval entry
  std::size_t remoteFrom = 0; // the first row of an open remote group
  bool remoteOpen = false;
  const auto flush = [&](std::size_t row) {
    if (open)
      out.emplace_back(type, ArrayView<Run>(&cur, 1));
    if (remoteOpen)
      out.push_back(rowsOf(remoteFrom, row));
    open = remoteOpen = false;
  };
  for (std::size_t row = 0; row < numRows; ++row) {
    runs.clear();
    rowRuns(row, runs);
    const RowPlace place =
        placeRow(vars, runs.data(), runs.size(), tile, oneTile);
    if (place.kind == RowPlace::Interval) {
      const Run &r = runs[0];
      if (open && cur.var == r.var && cur.start + cur.count == r.start &&
          (oneTile || r.start + r.count <= ivEnd)) {
        cur.count += r.count;
        continue;
      }
      flush(row);
      cur = Run{r.var, r.start, 1, r.count};
      ivEnd = place.ivEnd;
      open = true;
    } else if (place.kind == RowPlace::Remote) {
      if (!remoteOpen) {
        flush(row);
        remoteFrom = row;
        remoteOpen = true;
      }
    } else {
      flush(row);
      out.push_back(rowsOf(row, row + 1));
    }
  }
  flush(numRows);
  return out;
}

} // namespace

std::vector<Tensor> mergeRows(const Graph &graph,
                              const std::vector<Tensor> &rows,
                              std::optional<unsigned> tile, bool oneTile) {
  if (rows.empty())
    return {};
  return mergeRowsCore(
      graph, rows.front().elementType(), rows.size(),
      [&](std::size_t r, std::vector<Run> &runs) {
        runs.assign(rows[r].runs().begin(), rows[r].runs().end());
      },
      [&](std::size_t a, std::size_t b) {
        if (b == a + 1)
          return rows[a];
        std::vector<Tensor> flat;
        for (std::size_t r = a; r < b; ++r)
          flat.push_back(rows[r].flatten());
        return concat(flat);
      },
      tile, oneTile);
}

std::vector<Tensor> mergeRowRuns(const Graph &graph, Type type,
                                 const std::vector<ArrayView<Run>> &rows,
                                 std::optional<unsigned> tile, bool oneTile) {
  std::vector<Run> joined;
  return mergeRowsCore(
      graph, type, rows.size(),
      [&](std::size_t r, std::vector<Run> &runs) {
        runs.assign(rows[r].begin(), rows[r].end());
      },
      [&](std::size_t a, std::size_t b) {
        // The runs of rows [a, b) one after another, merged as concat
        // merges them.
        joined.clear();
        for (std::size_t r = a; r < b; ++r)
          joined.insert(joined.end(), rows[r].begin(), rows[r].end());
        return Tensor(type, joined);
      },
      tile, oneTile);
}

std::vector<Tensor> rowEntries(const Graph &graph, const Tensor &block,
                               std::size_t rowLen, std::optional<unsigned> tile,
                               bool oneTile) {
  const std::size_t n = block.numElements();
  if (n == 0 || rowLen == 0)
    return {};
  const Tensor flat = block.flatten();
  const auto &all = flat.runs();
  // Walks the runs once: row r starts at run `at`, element `off` of it.
  std::size_t at = 0;
  std::int64_t off = 0;
  return mergeRowsCore(
      graph, block.elementType(), n / rowLen,
      [&](std::size_t, std::vector<Run> &runs) {
        for (std::int64_t need = static_cast<std::int64_t>(rowLen); need > 0;) {
          const Run &r = all[at];
          const std::int64_t k = std::min(need, r.count - off);
          runs.push_back(
              Run{r.var, r.start + off * r.stride, k == 1 ? 1 : r.stride, k});
          need -= k;
          off += k;
          if (off == r.count) {
            ++at;
            off = 0;
          }
        }
      },
      [&](std::size_t a, std::size_t b) {
        return flat.slice(a * rowLen, b * rowLen);
      },
      tile, oneTile);
}

std::optional<std::vector<unsigned>> memoryOrder(const Tensor &t) {
  const unsigned rank = t.rank();
  if (rank < 2 || t.numElements() < 2 || t.isContiguous() ||
      t.variables().size() != 1)
    return std::nullopt;
  // Each dimension's step in memory: where its index 1 lies from index 0.
  const std::vector<std::size_t> zero(rank, 0);
  const auto at = [&](const std::vector<std::size_t> &index) {
    std::vector<std::size_t> end = index;
    for (std::size_t &e : end)
      ++e;
    return t.slice(index, end).runs()[0].start;
  };
  const std::int64_t origin = at(zero);
  std::vector<std::int64_t> step(rank, 0);
  for (unsigned d = 0; d < rank; ++d)
    if (t.dim(d) > 1) {
      std::vector<std::size_t> index = zero;
      index[d] = 1;
      step[d] = at(index) - origin;
    }
  std::vector<unsigned> order(rank);
  for (unsigned d = 0; d < rank; ++d)
    order[d] = d;
  std::stable_sort(order.begin(), order.end(),
                   [&](unsigned a, unsigned b) { return step[a] > step[b]; });
  if (std::is_sorted(order.begin(), order.end()) ||
      !t.dimShuffle(order).isContiguous())
    return std::nullopt;
  return order;
}

Tensor createLike(Graph &graph, const Tensor &like, Type type,
                  const DebugContext &dc) {
  bool usable = true;
  for (const Run &r : like.runs())
    usable = usable && r.stride != 0;
  std::size_t mapped = 0;
  for (const auto &ivs : graph.getTileMapping(like, false))
    for (const Interval &iv : ivs)
      mapped += iv.size();
  if (usable && mapped == like.numElements())
    return graph.clone(type, like, dc);
  Tensor t = graph.addVariable(type, like.shape(), dc);
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
      throw ShapeError(
          std::string(op) + ": shapes " + shapeString(a) + " and " +
          shapeString(b) + " do not broadcast: dimension " + std::to_string(i) +
          " is " + std::to_string(da) + " in one and " + std::to_string(db) +
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
