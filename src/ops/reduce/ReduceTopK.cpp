// argMax, argMin and topK: the rows of a [b, n] input planned as a
// reduction of dimension 1 (ReduceInternal.hpp), with top-k vertices. Stage
// 1 keeps the best min(k, length) candidates of every piece of a row a tile
// holds; rows spread over several vertices are finished in stage 2 on their
// owner tile from the gathered candidates.
#include "tessera/ops/Reduce.hpp"

#include "OpsInternal.hpp"
#include "ReduceInternal.hpp"

#include "tessera/device/Target.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/OptionParser.hpp"

#include <algorithm>

namespace tessera::ops {
namespace {

using namespace reduceplan;

// One item of a top-k vertex: the best of `values` into the outputs.
struct Item {
  Tensor values, indices; // indices invalid: base + position
  unsigned base = 0;
  Tensor outValues, outIndices;
};

void addTopKVertex(Graph &graph, ComputeSet cs, const std::string &cls,
                   unsigned tile, const std::vector<Item> &items, bool largest,
                   bool sorted) {
  const bool explicitIndices = items.front().indices.valid();
  std::vector<Tensor> values, indices, outValues, outIndices;
  std::vector<unsigned> bases;
  for (const Item &it : items) {
    values.push_back(it.values);
    outValues.push_back(it.outValues);
    outIndices.push_back(it.outIndices);
    if (explicitIndices)
      indices.push_back(it.indices);
    else
      bases.push_back(it.base);
  }
  VertexRef v = graph.addVertex(cs, cls);
  graph.setFieldSize(v["values"], values.size());
  graph.connect(v["values"], values);
  graph.setFieldSize(v["indices"], indices.size());
  if (explicitIndices)
    graph.connect(v["indices"], indices);
  if (!bases.empty()) // an unset plain-state vector is empty
    graph.setInitialValue(v["base"], bases);
  graph.setFieldSize(v["outValues"], outValues.size());
  graph.connect(v["outValues"], outValues);
  graph.setFieldSize(v["outIndices"], outIndices.size());
  graph.connect(v["outIndices"], outIndices);
  graph.setInitialValue(v["largest"], largest);
  graph.setInitialValue(v["sorted"], sorted);
  graph.setTileMapping(v, tile);
}

// The rows a piece holds, as (row, first element, length).
struct RowRun {
  std::size_t row, begin, length;
};
std::vector<RowRun> rowRuns(const VertexWork &w) {
  std::vector<RowRun> runs;
  for (const Piece &p : w.pieces)
    for (std::size_t r = 0; r < p.rows; ++r)
      for (std::size_t j = 0; j < p.cover; ++j)
        runs.push_back({p.out + j, p.begin + (r * p.cover + j) * p.q, p.q});
  return runs;
}

// A finishing vertex must see each of its rows whole, in one piece.
bool wholeRows(const VertexWork &w, std::size_t n) {
  std::size_t expect = w.outBegin;
  for (const RowRun &r : rowRuns(w)) {
    if (r.row != expect || r.length != n)
      return false;
    ++expect;
  }
  return expect == w.outEnd;
}

struct TopKRequest {
  const char *name;
  Tensor in;
  unsigned k;
  bool largest, sorted;
};

void checkTopK(const TopKRequest &r) {
  const std::string name = r.name;
  if (!r.in.valid())
    throw ShapeError(name + ": the input is an empty tensor");
  if (r.in.rank() != 2)
    throw ShapeError(name +
                     ": the input must be 2-D [rows, columns] but it "
                     "has shape " +
                     r.in.shapeToString() + "; reshape it first");
  const Type t = r.in.elementType();
  if (t != FLOAT && t != HALF && t != INT && t != UNSIGNED_INT)
    throw TypeError(name + ": the input type " + std::string(typeName(t)) +
                    " is not supported; use float, half, int or unsigned "
                    "int");
  if (r.k == 0 || r.k > r.in.dim(1))
    throw ShapeError(name + ": k is " + std::to_string(r.k) +
                     " but the rows have " + std::to_string(r.in.dim(1)) +
                     " elements; k must be between 1 and the row length");
}

// The candidates of every partial vertex, row run by row run, in one pair
// of variables mapped to the vertices' tiles.
struct Candidates {
  std::vector<std::vector<RowRun>> runs;
  std::vector<std::vector<std::size_t>> offset;
  Tensor values, indices;

  // Candidates of partial vertex v's i-th row run.
  Tensor valuesOf(std::size_t v, std::size_t i, std::size_t k) const {
    return values.slice(offset[v][i],
                        offset[v][i] + std::min(k, runs[v][i].length));
  }
  Tensor indicesOf(std::size_t v, std::size_t i, std::size_t k) const {
    return indices.slice(offset[v][i],
                         offset[v][i] + std::min(k, runs[v][i].length));
  }
};

Candidates allocateCandidates(Graph &graph, const SplitWork &split, Type type,
                              std::size_t k, const DebugContext &dc) {
  Candidates c;
  std::size_t total = 0;
  TileMapping mapping(graph.getTarget().getNumTiles());
  for (const VertexWork &w : split.partial) {
    c.runs.push_back(rowRuns(w));
    c.offset.emplace_back();
    const std::size_t start = total;
    for (const RowRun &rr : c.runs.back()) {
      c.offset.back().push_back(total);
      total += std::min(k, rr.length);
    }
    if (total > start)
      mapping[w.tile].emplace_back(start, total);
  }
  if (total) {
    c.values = graph.addVariable(type, {total}, DebugContext(dc, "candidates"));
    c.indices = graph.addVariable(UNSIGNED_INT, {total},
                                  DebugContext(dc, "candidateIndices"));
    graph.setTileMapping(c.values, mapping);
    graph.setTileMapping(c.indices, mapping);
  }
  return c;
}

// Stage 1: whole rows into the results, pieces of rows into candidates.
void addStage1(Graph &graph, const TopKRequest &r, const Tensor &flat,
               const SplitWork &split, const Candidates &cands,
               const std::pair<Tensor, Tensor> &result, Sequence &prog,
               const DebugContext &dc) {
  const std::size_t n = r.in.dim(1);
  const std::string cls =
      templateName("tessera::ops::TopK", {r.in.elementType()});
  ComputeSet cs = graph.addComputeSet(DebugContext(dc, "stage1"));
  for (const VertexWork &w : split.finishing) {
    std::vector<Item> items;
    for (const RowRun &rr : rowRuns(w))
      items.push_back({flat.slice(rr.begin, rr.begin + n), Tensor(), 0,
                       result.first[rr.row], result.second[rr.row]});
    addTopKVertex(graph, cs, cls, w.tile, items, r.largest, r.sorted);
  }
  for (std::size_t v = 0; v < split.partial.size(); ++v) {
    std::vector<Item> items;
    for (std::size_t i = 0; i < cands.runs[v].size(); ++i) {
      const RowRun &rr = cands.runs[v][i];
      items.push_back({flat.slice(rr.begin, rr.begin + rr.length), Tensor(),
                       static_cast<unsigned>(rr.begin % n),
                       cands.valuesOf(v, i, r.k), cands.indicesOf(v, i, r.k)});
    }
    addTopKVertex(graph, cs, cls, split.partial[v].tile, items, r.largest,
                  true);
  }
  prog.add(program::Execute(cs, DebugContext(dc, "stage1")));
}

// Stage 2: each owner merges the candidates of its rows.
void addStage2(Graph &graph, const TopKRequest &r,
               const std::vector<Stage2Vertex> &stage2, const Candidates &cands,
               const std::pair<Tensor, Tensor> &result, Sequence &prog,
               const DebugContext &dc) {
  const std::string cls =
      templateName("tessera::ops::TopK", {r.in.elementType()});
  ComputeSet cs = graph.addComputeSet(DebugContext(dc, "stage2"));
  for (const Stage2Vertex &sv : stage2) {
    const std::size_t rows = sv.end - sv.begin;
    std::vector<std::vector<Tensor>> vals(rows), idxs(rows);
    for (std::size_t src : sv.sources)
      for (std::size_t i = 0; i < cands.runs[src].size(); ++i) {
        const std::size_t row = cands.runs[src][i].row;
        if (row < sv.begin || row >= sv.end)
          continue;
        vals[row - sv.begin].push_back(cands.valuesOf(src, i, r.k));
        idxs[row - sv.begin].push_back(cands.indicesOf(src, i, r.k));
      }
    std::vector<Item> items;
    for (std::size_t row = sv.begin; row < sv.end; ++row)
      items.push_back({concat(vals[row - sv.begin]),
                       concat(idxs[row - sv.begin]), 0, result.first[row],
                       result.second[row]});
    addTopKVertex(graph, cs, cls, sv.tile, items, r.largest, r.sorted);
  }
  prog.add(program::Execute(cs, DebugContext(dc, "stage2")));
}

std::pair<Tensor, Tensor> topKImpl(Graph &graph, const TopKRequest &r,
                                   Sequence &prog, const DebugContext &dc,
                                   const OptionFlags &options) {
  checkTopK(r);
  OptionParser(r.name).parse(options);
  const std::size_t b = r.in.dim(0), n = r.in.dim(1), k = r.k;
  const Type type = r.in.elementType();
  const Target &target = graph.getTarget();
  const unsigned workers = target.getNumWorkerContexts();

  CanonicalView cv;
  cv.flat = r.in.flatten();
  cv.W = b;
  cv.P = n;
  const std::vector<VertexWork> work = planStage1(graph, cv, workers);
  const std::vector<Coverage> cov = coverage(work, b);
  // Rows live where they are finished; each row's k results together.
  const TileMapping rowMap = ownerMapping(cov, b, target.getNumTiles());
  TileMapping elemMap(rowMap.size());
  for (unsigned t = 0; t < rowMap.size(); ++t)
    for (const Interval &iv : rowMap[t])
      elemMap[t].emplace_back(iv.begin() * k, iv.end() * k);
  std::pair<Tensor, Tensor> result{
      graph.addVariable(type, {b, k}, DebugContext(dc, "values")),
      graph.addVariable(UNSIGNED_INT, {b, k}, DebugContext(dc, "indices"))};
  graph.setTileMapping(result.first, elemMap);
  graph.setTileMapping(result.second, elemMap);
  if (b == 0)
    return result;

  const std::vector<OwnedRange> owners = ownedRanges(rowMap);
  SplitWork split = splitFinishing(work, cov, owners);
  for (auto it = split.finishing.begin(); it != split.finishing.end();) {
    if (wholeRows(*it, n)) {
      ++it;
      continue;
    }
    split.partial.push_back(std::move(*it));
    it = split.finishing.erase(it);
  }
  const Candidates cands = allocateCandidates(graph, split, type, k, dc);
  addStage1(graph, r, cv.flat, split, cands, result, prog, dc);
  const std::vector<Stage2Vertex> stage2 =
      planStage2(sourcesOf(split.partial), split, owners, workers);
  if (!stage2.empty())
    addStage2(graph, r, stage2, cands, result, prog, dc);
  return result;
}

DebugContext nameOr(const DebugContext &dc, const char *name) {
  return dc.name.empty() ? DebugContext(name) : dc;
}

} // namespace

std::pair<Tensor, Tensor> topK(Graph &graph, const Tensor &in, unsigned k,
                               bool largest, bool sorted, Sequence &prog,
                               const DebugContext &dc,
                               const OptionFlags &options) {
  return topKImpl(graph, {"topK", in, k, largest, sorted}, prog,
                  nameOr(dc, "topK"), options);
}

std::pair<Tensor, Tensor> topK(Graph &graph, const Tensor &in, unsigned k,
                               Sequence &prog, const DebugContext &dc,
                               const OptionFlags &options) {
  return topK(graph, in, k, true, true, prog, dc, options);
}

Tensor argMax(Graph &graph, const Tensor &in, Sequence &prog,
              const DebugContext &dc, const OptionFlags &options) {
  return topKImpl(graph, {"argMax", in, 1, true, true}, prog,
                  nameOr(dc, "argMax"), options)
      .second.reshape({in.dim(0)});
}

Tensor argMin(Graph &graph, const Tensor &in, Sequence &prog,
              const DebugContext &dc, const OptionFlags &options) {
  return topKImpl(graph, {"argMin", in, 1, false, true}, prog,
                  nameOr(dc, "argMin"), options)
      .second.reshape({in.dim(0)});
}

} // namespace tessera::ops
