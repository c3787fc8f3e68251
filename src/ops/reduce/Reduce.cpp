// reduce() and reduceWithOutput(): checks, then the two-stage plan of
// ReduceInternal.hpp turned into vertices.
#include "tessera/ops/Reduce.hpp"

#include "OpsInternal.hpp"
#include "ReduceInternal.hpp"

#include "tessera/device/CostFormulas.hpp"
#include "tessera/device/Target.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/OptionParser.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <ostream>

namespace tessera::ops {

std::string_view operationName(Operation op) {
  switch (op) {
  case Operation::ADD:
    return "ADD";
  case Operation::MUL:
    return "MUL";
  case Operation::MIN:
    return "MIN";
  case Operation::MAX:
    return "MAX";
  case Operation::SQUARE_ADD:
    return "SQUARE_ADD";
  case Operation::LOG_ADD:
    return "LOG_ADD";
  case Operation::LOGICAL_AND:
    return "LOGICAL_AND";
  case Operation::LOGICAL_OR:
    return "LOGICAL_OR";
  }
  return "?";
}

std::ostream &operator<<(std::ostream &os, Operation op) {
  return os << operationName(op);
}

std::vector<std::size_t> reducedShape(const char *op,
                                      const std::vector<std::size_t> &shape,
                                      const std::vector<std::size_t> &dims) {
  std::vector<bool> reduced(shape.size(), false);
  for (std::size_t d : dims) {
    if (d >= shape.size())
      throw ShapeError(std::string(op) + ": dimension " + std::to_string(d) +
                       " is out of range for a tensor of rank " +
                       std::to_string(shape.size()) +
                       (shape.empty() ? std::string("; a scalar has no "
                                                    "dimensions to reduce")
                                      : "; dimensions are numbered 0 to " +
                                            std::to_string(shape.size() - 1)));
    if (reduced[d])
      throw ShapeError(std::string(op) + ": dimension " + std::to_string(d) +
                       " is listed twice in the dimensions to reduce; list "
                       "each dimension once");
    reduced[d] = true;
  }
  std::vector<std::size_t> out;
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (!reduced[d])
      out.push_back(shape[d]);
  return out;
}

namespace {

using namespace reduceplan;

bool isLogical(Operation op) {
  return op == Operation::LOGICAL_AND || op == Operation::LOGICAL_OR;
}

std::string typeStr(Type t) { return std::string(typeName(t)); }
std::string opStr(Operation op) { return std::string(operationName(op)); }

void checkTypes(const char *name, Type in, Type out, Operation op) {
  const std::string what = std::string(name) + ": " + opStr(op);
  if (isLogical(op) != (in == BOOL)) {
    if (in == BOOL)
      throw TypeError(what + " needs a numeric input but the input is bool; "
                             "use LOGICAL_AND or LOGICAL_OR, or cast it");
    throw TypeError(what + " needs a bool input but the input is " +
                    typeStr(in) + "; cast it to bool first");
  }
  if (in == FLOAT || in == HALF) {
    if (out != FLOAT && out != HALF)
      throw TypeError(what + " of a " + typeStr(in) +
                      " input gives float or half, not " + typeStr(out));
    return;
  }
  if (in == INT || in == UNSIGNED_INT) {
    if (op == Operation::LOG_ADD)
      throw TypeError(what +
                      " needs a float or half input but the input "
                      "is " +
                      typeStr(in) + "; cast it to float first");
  } else if (in != BOOL) {
    throw TypeError(what + ": the input type " + typeStr(in) +
                    " is not supported; reductions take float, half, int, "
                    "unsigned int and bool (cast first)");
  }
  if (out != in)
    throw TypeError(what + " of a " + typeStr(in) + " input gives " +
                    typeStr(in) + ", not " + typeStr(out) +
                    "; cast the result instead");
}

void checkScale(const char *name, const ReduceParams &params) {
  if (!std::isfinite(params.scale))
    throw UnsupportedError(std::string(name) +
                           ": the scale must be finite, "
                           "but it is " +
                           std::to_string(params.scale));
  if (isLogical(params.op) && params.scale != 1.0f)
    throw UnsupportedError(std::string(name) + ": " + opStr(params.op) +
                           " takes no scale, but the scale is " +
                           std::to_string(params.scale) + "; use 1");
  if (params.op == Operation::LOG_ADD && !(params.scale > 0.0f))
    throw UnsupportedError(
        std::string(name) +
        ": LOG_ADD scales in the log domain (it adds log(scale)), so the "
        "scale must be positive, but it is " +
        std::to_string(params.scale));
}

// The type of the partials exchanged between tiles.
Type partialType(const char *name, Type in, const OptionFlags &flags) {
  std::string interTile = "float";
  OptionParser p(name);
  p.add("accumType.interTile", interTile);
  p.addIgnored("accumType.inVertex",
               "Tessera's reduce vertices accumulate in float (or the "
               "integer type)",
               {"float", "half"});
  p.parse(flags);
  if (interTile != "float" && interTile != "half")
    throw OptionError(std::string(name) +
                      ": accumType.interTile must be \"float\" or \"half\", "
                      "not \"" +
                      interTile + "\"");
  if (in != FLOAT && in != HALF)
    return in;
  return interTile == "half" ? HALF : FLOAT;
}

// The operation that combines partials: sums of squares are added.
Operation partialOp(Operation op) {
  return op == Operation::SQUARE_ADD ? Operation::ADD : op;
}

VertexRef addReduceVertex(Graph &graph, ComputeSet cs, const std::string &cls,
                          unsigned tile, const std::vector<Tensor> &parts,
                          const std::vector<unsigned> &meta, const Tensor &out,
                          float scale) {
  VertexRef v = graph.addVertex(cs, cls);
  graph.setFieldSize(v["partials"], parts.size());
  if (!parts.empty())
    graph.connect(v["partials"], parts);
  graph.connect(v["out"], out);
  if (!meta.empty()) // an unset plain-state vector is empty
    graph.setInitialValue(v["meta"], meta);
  graph.setInitialValue(v["scale"], scale);
  graph.setTileMapping(v, tile);
  return v;
}

// A stage-1 vertex's partials being built: partial i reduces into outputs
// [meta[3i], meta[3i] + meta[3i + 1]) of the vertex's out, meta[3i + 2]
// elements each (ReduceKernels.hpp). A partial is kept as its runs, and
// made a tensor only for the vertex (tensors): a ResNet-50 has millions of
// pieces, most joined into a neighbour.
struct PieceList {
  Type type = FLOAT;
  std::vector<RunPiece> entries;
  std::vector<unsigned> meta;
  std::vector<std::size_t> rows;

  // Appends the partial of \p runs (merged, as a tensor's), or joins it to
  // the last partial when it continues it in memory and in the outputs,
  // one row each with the same q: the vertex then reads one region where
  // it would read two, and every output still sees its elements in the
  // same order.
  void add(ArrayView<Run> runs, std::size_t offset, std::size_t cover,
           std::size_t q, std::size_t r) {
    if (!entries.empty() && r == 1 && rows.back() == 1 &&
        meta[meta.size() - 1] == q &&
        meta[meta.size() - 3] + meta[meta.size() - 2] == offset &&
        continuesRun(entries.back(), runs)) {
      entries.back().run.count += runs[0].count;
      meta[meta.size() - 2] += static_cast<unsigned>(cover);
      return;
    }
    entries.emplace_back(type, runs);
    meta.insert(meta.end(),
                {static_cast<unsigned>(offset), static_cast<unsigned>(cover),
                 static_cast<unsigned>(q)});
    rows.push_back(r);
  }
  void add(const RunPiece &e, std::size_t offset, std::size_t cover,
           std::size_t q, std::size_t r) {
    add(e.runs(), offset, cover, q, r);
  }

  // Whether \p runs are consecutive elements right after \p last's.
  static bool continuesRun(const RunPiece &last, ArrayView<Run> runs) {
    const Run &a = last.run;
    return runs.size() == 1 && runs[0].stride == 1 && !last.tensor.valid() &&
           a.stride == 1 && a.var == runs[0].var &&
           a.start + a.count == runs[0].start;
  }

  std::vector<std::uint32_t> sizes() const {
    std::vector<std::uint32_t> n;
    for (const RunPiece &e : entries)
      n.push_back(static_cast<std::uint32_t>(e.size()));
    return n;
  }

  std::vector<Tensor> tensors() const {
    std::vector<Tensor> ts;
    ts.reserve(entries.size());
    for (const RunPiece &e : entries)
      ts.push_back(e.toTensor(type));
    return ts;
  }
};

// The pieces of \p w, their outputs numbered from its first.
PieceList piecesOf(const CanonicalView &cv, const VertexWork &w) {
  PieceList list;
  list.type = cv.flat.elementType();
  thread_local std::vector<Run> runs;
  for (const Piece &p : w.pieces) {
    cv.flat.flatRuns(p.begin, p.begin + p.size(), runs);
    list.add(runs, p.out - w.outBegin, p.cover, p.q, p.rows);
  }
  return list;
}

// One worker's share of a tile's work as the planner cut it: its partials
// (outputs numbered from its first) and the outputs it writes.
struct Part {
  PieceList pieces;
  Tensor out;
};

// The vertex of one tile's \p parts, whose outputs are consecutive in
// memory: its out is theirs concatenated and its partials theirs, joined
// where one continues another. A MultiVertex whose workers take a part
// each, estimated as the maps' MultiVertex is: on one tile, the cost of
// separate vertices.
void addParts(Graph &graph, ComputeSet cs, const ReduceCostShape &cost,
              unsigned tile, const std::vector<Part> &parts, float scale) {
  const Target &target = graph.getTarget();
  PieceList all;
  if (!parts.empty())
    all.type = parts.front().pieces.type;
  std::vector<std::uint64_t> partCycles;
  std::vector<Tensor> outs;
  std::size_t base = 0;
  for (const Part &part : parts) {
    const PieceList &own = part.pieces;
    partCycles.push_back(
        reduceWorkerCycles(target, cost, own.sizes(),
                           static_cast<std::uint32_t>(part.out.numElements())));
    for (std::size_t i = 0; i < own.entries.size(); ++i)
      all.add(own.entries[i], base + own.meta[3 * i], own.meta[3 * i + 1],
              own.meta[3 * i + 2], own.rows[i]);
    base += part.out.numElements();
    outs.push_back(part.out);
  }
  VertexRef v = addReduceVertex(
      graph, cs, reduceVertexName(cost.op, cost.update, cost.in, cost.out),
      tile, all.tensors(), all.meta, concat(outs), scale);
  graph.setPerfEstimate(
      v, tessera::cost::multiVertexWorkerCycles(target, std::move(partCycles),
                                                MultiVertex::numWorkers()));
}

// Partials exchanged between stages: tensors[i] holds outputs
// [ranges[i].begin, ranges[i].end) on tile ranges[i].tile.
struct Sources {
  std::vector<OwnedRange> ranges;
  std::vector<Tensor> tensors;
};

// One variable of `type` holding every range, each on its own tile.
Sources allocate(Graph &graph, Type type, const std::vector<OwnedRange> &ranges,
                 const DebugContext &dc) {
  Sources s;
  s.ranges = ranges;
  std::size_t total = 0;
  TileMapping mapping(graph.getTarget().getNumTiles());
  for (const OwnedRange &r : ranges) {
    mapping[r.tile].emplace_back(total, total + (r.end - r.begin));
    total += r.end - r.begin;
  }
  if (!total)
    return s;
  Tensor t = graph.addVariable(type, {total}, dc);
  graph.setTileMapping(t, mapping);
  total = 0;
  for (const OwnedRange &r : ranges) {
    s.tensors.push_back(t.slice(total, total + (r.end - r.begin)));
    total += r.end - r.begin;
  }
  return s;
}

// The parts of `src` that overlap outputs [v.begin, v.end), numbered from
// v.begin.
PieceList gatherPieces(const Stage2Vertex &v, const Sources &src) {
  // Slices over the same outputs are joined into one multi-row partial:
  // the exchange delivers them into one contiguous buffer, as it would on
  // the IPU, and the vertex reads them as one vectorised run.
  std::map<std::pair<std::size_t, std::size_t>, std::vector<Run>> byRange;
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> slices;
  std::vector<Run> runs;
  for (std::size_t s : v.sources) {
    const OwnedRange &r = src.ranges[s];
    const std::size_t lo = std::max(v.begin, r.begin),
                      hi = std::min(v.end, r.end);
    src.tensors[s].flatRuns(lo - r.begin, hi - r.begin, runs);
    std::vector<Run> &joined = byRange[{lo, hi}];
    joined.insert(joined.end(), runs.begin(), runs.end());
    ++slices[{lo, hi}];
  }
  PieceList list;
  if (!src.tensors.empty())
    list.type = src.tensors.front().elementType();
  for (const auto &[range, joined] : byRange) {
    // Merged as concat merges the slices.
    const Tensor t(list.type, joined);
    list.add(t.runs(), range.first - v.begin, range.second - range.first, 1,
             slices[range]);
  }
  return list;
}

// Whether contiguous \p b starts where contiguous \p a ends.
bool continues(const Tensor &a, const Tensor &b) {
  if (!a.isContiguous() || !b.isContiguous())
    return false;
  const Run &x = a.runs().front(), &y = b.runs().front();
  return x.var == y.var && x.start + x.count == y.start;
}

// Vertices reducing the partials `src` as \p vs plans, vs[i] into outs[i]:
// a tile's consecutive vertices whose outputs follow each other in memory
// make one (addParts).
void addGatherVertices(Graph &graph, ComputeSet cs, const ReduceCostShape &cost,
                       const std::vector<Stage2Vertex> &vs, const Sources &src,
                       const std::vector<Tensor> &outs, float scale) {
  for (std::size_t i = 0; i < vs.size();) {
    std::vector<Part> parts{{gatherPieces(vs[i], src), outs[i]}};
    const unsigned tile = vs[i].tile;
    for (++i; i < vs.size() && vs[i].tile == tile &&
              continues(parts.back().out, outs[i]);
         ++i)
      parts.push_back({gatherPieces(vs[i], src), outs[i]});
    addParts(graph, cs, cost, tile, parts, scale);
  }
}

// Above this many partials for one output, an intermediate level reduces
// them in groups first: with one partial per tile of a full ipu2 (1472),
// the owner would receive 1472 values and the exchange would have that
// many pieces per output; a level of sqrt-sized groups cuts both to ~40.
constexpr std::size_t kMaxFanIn = 128;

struct ReduceRequest {
  const char *name;
  Tensor in;
  Type outType;
  std::vector<std::size_t> dims;
  ReduceParams params;
};

// Stage 1: finishing vertices write the output, the others partials
// (returned). A tile's consecutive finishing parts over consecutive
// outputs make one vertex (addParts), and so do its partial parts
// (consecutive in the partials variable).
Sources addStage1(Graph &graph, const ReduceRequest &r, Type partType,
                  const CanonicalView &cv, const SplitWork &split,
                  const Tensor &outFlat, Sequence &prog,
                  const DebugContext &dc) {
  Sources partials = allocate(graph, partType, sourcesOf(split.partial),
                              DebugContext(dc, "partials"));
  const Type inType = r.in.elementType();
  const ReduceParams &p = r.params;
  ComputeSet cs = graph.addComputeSet(DebugContext(dc, "stage1"));
  const ReduceCostShape finishing{p.op, inType, r.outType, p.update};
  for (std::size_t i = 0; i < split.finishing.size();) {
    const VertexWork &w = split.finishing[i];
    std::vector<Part> parts{
        {piecesOf(cv, w), outFlat.slice(w.outBegin, w.outEnd)}};
    std::size_t end = w.outEnd;
    for (++i; i < split.finishing.size() && split.finishing[i].tile == w.tile &&
              split.finishing[i].outBegin == end;
         ++i) {
      const VertexWork &next = split.finishing[i];
      parts.push_back(
          {piecesOf(cv, next), outFlat.slice(next.outBegin, next.outEnd)});
      end = next.outEnd;
    }
    addParts(graph, cs, finishing, w.tile, parts, p.scale);
  }
  const ReduceCostShape partial{p.op, inType, partType, false};
  for (std::size_t i = 0; i < split.partial.size();) {
    const unsigned tile = split.partial[i].tile;
    std::vector<Part> parts;
    for (; i < split.partial.size() && split.partial[i].tile == tile; ++i)
      parts.push_back({piecesOf(cv, split.partial[i]), partials.tensors[i]});
    addParts(graph, cs, partial, tile, parts, 1.0f);
  }
  if (!split.finishing.empty() || !split.partial.empty())
    prog.add(program::Execute(cs, DebugContext(dc, "stage1")));
  return partials;
}

// Intermediate levels while some output has too many partials; returns the
// partials of the last level.
Sources addIntermediateLevels(Graph &graph, Operation op, Type partType,
                              Sources partials, Sequence &prog,
                              const DebugContext &dc) {
  const unsigned workers = graph.getTarget().getNumWorkerContexts();
  const ReduceCostShape cost{op, partType, partType, false};
  for (unsigned level = 1;; ++level) {
    const std::vector<Stage2Vertex> inter =
        planIntermediate(partials.ranges, workers, kMaxFanIn);
    if (inter.empty())
      return partials;
    std::vector<OwnedRange> ranges;
    for (const Stage2Vertex &v : inter)
      ranges.push_back({v.begin, v.end, v.tile});
    const std::string name = "intermediate" + std::to_string(level);
    Sources next = allocate(graph, partType, ranges, DebugContext(dc, name));
    ComputeSet cs = graph.addComputeSet(DebugContext(dc, name));
    addGatherVertices(graph, cs, cost, inter, partials, next.tensors, 1.0f);
    prog.add(program::Execute(cs, DebugContext(dc, name)));
    partials = std::move(next);
  }
}

Tensor reduceImpl(Graph &graph, const ReduceRequest &r, Tensor out,
                  Sequence &prog, const DebugContext &dc,
                  const OptionFlags &options);

// The reduction of an input that is a permuted view of contiguous memory
// (batch-norm statistics of channels-last activations seen channels-first,
// dimension \p order of the view lying outermost), planned on the input in
// memory order: the planner's canonical view then follows the tiles'
// contiguous pieces rather than cutting them into single elements. The
// output keeps its shape; its elements are combined in memory order (the
// tiles' pieces, each in order), which is where a float result may differ
// in rounding from a plan of the view's order.
Tensor reduceInMemoryOrder(Graph &graph, const ReduceRequest &r, Tensor out,
                           const std::vector<bool> &reduced,
                           const std::vector<unsigned> &order, Sequence &prog,
                           const DebugContext &dc, const OptionFlags &options) {
  ReduceRequest permuted = r;
  permuted.in = r.in.dimShuffle(order);
  permuted.dims.clear();
  // The output's dimensions (the kept ones, in the input's order) as the
  // permuted input keeps them.
  std::vector<unsigned> keptRank(r.in.rank(), 0), outOrder;
  unsigned kept = 0;
  for (unsigned d = 0; d < r.in.rank(); ++d)
    if (!reduced[d])
      keptRank[d] = kept++;
  for (unsigned i = 0; i < order.size(); ++i) {
    if (reduced[order[i]])
      permuted.dims.push_back(i);
    else
      outOrder.push_back(keptRank[order[i]]);
  }
  std::vector<unsigned> inverse(outOrder.size());
  for (unsigned j = 0; j < outOrder.size(); ++j)
    inverse[outOrder[j]] = j;
  const bool shuffle = outOrder.size() > 1;
  Tensor result = reduceImpl(
      graph, permuted, out.valid() && shuffle ? out.dimShuffle(outOrder) : out,
      prog, dc, options);
  return shuffle ? result.dimShuffle(inverse) : result;
}

// Plans and adds the reduction of r.in into `out` (created here, mapped
// where its last stage runs, when not valid). Returns the output.
Tensor reduceImpl(Graph &graph, const ReduceRequest &r, Tensor out,
                  Sequence &prog, const DebugContext &dc,
                  const OptionFlags &options) {
  if (!r.in.valid())
    throw ShapeError(std::string(r.name) + ": the input is an empty tensor");
  const auto outShape = reducedShape(r.name, r.in.shape(), r.dims);
  checkTypes(r.name, r.in.elementType(), r.outType, r.params.op);
  checkScale(r.name, r.params);
  const Type partType = partialType(r.name, r.in.elementType(), options);
  std::vector<bool> reduced(r.in.rank(), false);
  for (std::size_t d : r.dims)
    reduced[d] = true;
  if (const auto order = memoryOrder(r.in))
    return reduceInMemoryOrder(graph, r, out, reduced, *order, prog, dc,
                               options);
  std::size_t numOutputs = 1;
  for (std::size_t d : outShape)
    numOutputs *= d;

  const Target &target = graph.getTarget();
  const unsigned workers = target.getNumWorkerContexts();
  const CanonicalView cv =
      r.in.numElements() ? canonicalView(r.in, reduced) : CanonicalView{};
  const std::vector<VertexWork> work = r.in.numElements()
                                           ? planStage1(graph, cv, workers)
                                           : std::vector<VertexWork>{};
  const std::vector<Coverage> cov = coverage(work, numOutputs);
  if (!out.valid()) {
    out = graph.addVariable(r.outType, outShape, DebugContext(dc, "out"));
    graph.setTileMapping(out,
                         ownerMapping(cov, numOutputs, target.getNumTiles()));
  }
  if (numOutputs == 0)
    return out;
  const Tensor outFlat = out.flatten();
  const std::vector<OwnedRange> owners =
      ownedRanges(graph.getTileMapping(outFlat));
  const SplitWork split = splitFinishing(work, cov, owners);
  const Operation op2 = partialOp(r.params.op);
  const Sources partials = addIntermediateLevels(
      graph, op2, partType,
      addStage1(graph, r, partType, cv, split, outFlat, prog, dc), prog, dc);

  // Stage 2: the owners reduce the partials of their outputs.
  const std::vector<Stage2Vertex> stage2 =
      planStage2(partials.ranges, split, owners, workers);
  if (stage2.empty())
    return out;
  ComputeSet cs = graph.addComputeSet(DebugContext(dc, "stage2"));
  std::vector<Tensor> outs;
  for (const Stage2Vertex &v : stage2)
    outs.push_back(outFlat.slice(v.begin, v.end));
  addGatherVertices(graph, cs, {op2, partType, r.outType, r.params.update},
                    stage2, partials, outs, r.params.scale);
  prog.add(program::Execute(cs, DebugContext(dc, "stage2")));
  return out;
}

std::string shapeText(const std::vector<std::size_t> &shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

DebugContext nameOr(const DebugContext &dc, const char *name) {
  return dc.name.empty() ? DebugContext(name) : dc;
}

} // namespace

Tensor reduce(Graph &graph, const Tensor &in, Type outType,
              const std::vector<std::size_t> &dims, ReduceParams params,
              Sequence &prog, const DebugContext &dc,
              const OptionFlags &options) {
  if (params.update)
    throw UnsupportedError("reduce: params.update combines the result into "
                           "an existing output; use reduceWithOutput");
  return reduceImpl(graph, {"reduce", in, outType, dims, params}, Tensor(),
                    prog, nameOr(dc, "reduce"), options);
}

Tensor reduce(Graph &graph, const Tensor &in,
              const std::vector<std::size_t> &dims, ReduceParams params,
              Sequence &prog, const DebugContext &dc,
              const OptionFlags &options) {
  if (!in.valid())
    throw ShapeError("reduce: the input is an empty tensor");
  return reduce(graph, in, in.elementType(), dims, params, prog, dc, options);
}

void reduceWithOutput(Graph &graph, const Tensor &in, const Tensor &out,
                      const std::vector<std::size_t> &dims, ReduceParams params,
                      Sequence &prog, const DebugContext &dc,
                      const OptionFlags &options) {
  const char *name = "reduceWithOutput";
  if (!in.valid() || !out.valid())
    throw ShapeError(std::string(name) + ": the input or the output is an "
                                         "empty tensor");
  const auto shape = reducedShape(name, in.shape(), dims);
  if (shape != out.shape())
    throw ShapeError(std::string(name) + ": reducing " + in.shapeToString() +
                     " gives " + shapeText(shape) +
                     " but the output has shape " + out.shapeToString());
  reduceImpl(graph, {name, in, out.elementType(), dims, params}, out, prog,
             nameOr(dc, name), options);
}

namespace {

/// Appends the compute sets of \p prog, which the reduction built from
/// Execute programs only, to \p css.
void appendComputeSets(const program::Program &prog,
                       std::vector<ComputeSet> &css) {
  const program::ProgramNode &node = prog.node();
  if (node.kind == program::ProgramKind::Execute) {
    css.push_back(ComputeSet(node.id));
    return;
  }
  TESSERA_INTERNAL_ASSERT(node.kind == program::ProgramKind::Sequence,
                          "a reduction added a program that is not a "
                          "compute set");
  for (const program::Program &child : node.children)
    appendComputeSets(child, css);
}

} // namespace

Tensor reduce(Graph &graph, const Tensor &in, Type outType,
              const std::vector<std::size_t> &dims, ReduceParams params,
              std::vector<ComputeSet> &css, const DebugContext &dc,
              const OptionFlags &options) {
  Sequence prog;
  Tensor out = reduce(graph, in, outType, dims, params, prog, dc, options);
  appendComputeSets(prog, css);
  return out;
}

Tensor reduce(Graph &graph, const Tensor &in,
              const std::vector<std::size_t> &dims, ReduceParams params,
              std::vector<ComputeSet> &css, const DebugContext &dc,
              const OptionFlags &options) {
  Sequence prog;
  Tensor out = reduce(graph, in, dims, params, prog, dc, options);
  appendComputeSets(prog, css);
  return out;
}

void reduceWithOutput(Graph &graph, const Tensor &in, const Tensor &out,
                      const std::vector<std::size_t> &dims, ReduceParams params,
                      std::vector<ComputeSet> &css, const DebugContext &dc,
                      const OptionFlags &options) {
  Sequence prog;
  reduceWithOutput(graph, in, out, dims, params, prog, dc, options);
  appendComputeSets(prog, css);
}

} // namespace tessera::ops
