// Planning of maps: the output is split by tile into one region per worker,
// and each region gets one map vertex running the whole expression.
#include "tessera/ops/Elementwise.hpp"

#include "MapCode.hpp"
#include "OpsInternal.hpp"

#include "tessera/device/CostFormulas.hpp"
#include "tessera/device/Target.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/OptionParser.hpp"
#include "tessera/support/ThreadPool.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

namespace tessera::ops {
namespace {

using namespace expr;

bool mapSupported(Type t) {
  return t == FLOAT || t == HALF || t == INT || t == UNSIGNED_INT || t == BOOL;
}

void checkSupported(const char *what, Type t) {
  if (!mapSupported(t))
    throw UnsupportedError(std::string("map: ") + what + " has type " +
                           std::string(typeName(t)) +
                           "; elementwise ops support float, half, int, "
                           "unsigned int and bool (cast first)");
}

DebugContext nameOr(const DebugContext &dc, const char *name) {
  return dc.name.empty() ? DebugContext(name) : dc;
}

std::vector<std::size_t> shapeOf(const char *op,
                                 const std::vector<Tensor> &ts) {
  std::vector<std::size_t> shape;
  for (const Tensor &t : ts) {
    if (!t.valid())
      throw ShapeError(std::string(op) + ": an operand is an empty tensor");
    shape = broadcastShape(op, shape, t.shape());
  }
  return shape;
}

std::vector<unsigned> words(const std::vector<double> &values) {
  std::vector<unsigned> w(values.size() * 2);
  if (!values.empty()) // memcpy from an empty vector's null data is UB
    std::memcpy(w.data(), values.data(), values.size() * sizeof(double));
  return w;
}

// Whether two tensors' memory pieces have the same lengths in order (then
// their regions cut and join alike).
bool samePieces(const std::vector<MemoryPiece> &a,
                const std::vector<MemoryPiece> &b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].run.count != b[i].run.count)
      return false;
  return true;
}

// An input of the output's shape laid out unlike it, copied into the
// output's layout first (one exchange, as Poplar rearranges operands), so
// the map runs whole regions and not the pieces where the layouts disagree
// or a tile's pieces that follow each other in one but not the other.
Tensor inOutputLayout(Graph &graph, const Tensor &t, const Tensor &out,
                      const std::vector<MemoryPiece> &outPieces, Sequence &prog,
                      const DebugContext &dc) {
  if (t.numElements() <= 1 || t.shape() != out.shape() ||
      samePieces(outPieces, memoryPieces(graph, t.flatten())))
    return t;
  Tensor like =
      createLike(graph, out, t.elementType(), DebugContext(dc, "relayout"));
  prog.add(program::Copy(t, like, false, DebugContext(dc, "relayout")));
  return like;
}

// A tile's regions as its map vertex runs them. An operand of a region
// either gives one element per region element, or fewer: then each of its
// elements repeats region size / its size times in a row (a channel's
// statistic over the channel's rows), as the vertex reads it.
struct Region {
  std::size_t begin = 0;        ///< the flat output index of its first element
  std::vector<Tensor> operands; ///< data inputs, flag inputs, then out
};
using Ranges = std::vector<std::pair<std::size_t, std::size_t>>;

// The operands that repeat some element (stride-0 runs: a broadcast),
// whose pieces repeatCuts may cut at.
std::vector<const Tensor *> repeatingOperands(const std::vector<Tensor> &ts) {
  std::vector<const Tensor *> out;
  for (const Tensor &t : ts)
    if (t.numElements() > 1 &&
        std::any_of(t.runs().begin(), t.runs().end(),
                    [](const Run &r) { return r.stride == 0; }))
      out.push_back(&t);
  return out;
}

// The points where region [b, e) is cut because a repeating operand's
// piece moves on to its next element (a bias over rows of several
// channels), b and e included, sorted; `cut` says which operands cut it.
// Only operands whose parts have kMinRepeat elements or more on average
// cut: a part is a region more for a worker to set up.
constexpr std::size_t kMinRepeat = 8;
std::vector<std::size_t>
repeatCuts(std::size_t b, std::size_t e,
           const std::vector<const Tensor *> &repeating,
           std::vector<bool> *cut = nullptr) {
  std::vector<std::size_t> cuts{b, e};
  if (cut)
    cut->assign(repeating.size(), false);
  // The runs of each piece, read without building a tensor per region.
  thread_local std::vector<Run> rs;
  for (std::size_t k = 0; k < repeating.size(); ++k) {
    repeating[k]->flatRuns(b, e, rs);
    if (rs.size() < 2 || e - b < kMinRepeat * rs.size() ||
        !std::all_of(rs.begin(), rs.end(), [](const Run &r) {
          return r.stride == 0 || r.count == 1;
        }))
      continue;
    if (cut)
      (*cut)[k] = true;
    std::size_t at = b;
    for (const Run &r : rs)
      cuts.push_back(at += static_cast<std::size_t>(r.count));
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  return cuts;
}

// The regions cut at repeats: what a worker sets up, one by one, on the
// IPU (the estimates count these).
Ranges cutAtRepeats(const Ranges &regions,
                    const std::vector<const Tensor *> &repeating) {
  if (repeating.empty())
    return regions;
  Ranges out;
  for (const auto &[b, e] : regions) {
    const std::vector<std::size_t> cuts = repeatCuts(b, e, repeating);
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i)
      out.emplace_back(cuts[i], cuts[i + 1]);
  }
  return out;
}

// Appends the element at (var, start) to a list of runs, extending the last
// run where the element follows it.
void appendElement(std::vector<Run> &runs, std::uint32_t var,
                   std::int64_t start) {
  if (!runs.empty()) {
    Run &last = runs.back();
    if (last.var == var && last.stride == 1 &&
        last.start + last.count == start) {
      ++last.count;
      return;
    }
  }
  runs.push_back(Run{var, start, 1, 1});
}

// One operand of a region as joinRegions builds it: the whole of a single
// element operand; a contiguous run of one element per region element
// (`repeat` 1); each of `elements` repeated `repeat` times; or, when none
// of these, the piece as it is (`repeat` 0).
struct OperandPart {
  Tensor piece;
  std::vector<Run> elements;
  std::size_t repeat = 0;
  bool scalar = false;
};

OperandPart operandPart(const Tensor &t, std::size_t b, std::size_t e,
                        std::size_t length, bool grouped) {
  OperandPart p;
  if (t.numElements() == 1) {
    p.scalar = true;
    p.piece = t;
    return p;
  }
  thread_local std::vector<Run> rs;
  t.flatRuns(b, e, rs);
  if (grouped) { // one element per part of `length`: see repeatCuts
    for (const Run &r : rs)
      for (std::int64_t k = 0; k < r.count;
           k += static_cast<std::int64_t>(length))
        appendElement(p.elements, r.var, r.start + k * r.stride);
    p.repeat = length;
    return p;
  }
  if (rs.size() == 1 && (rs[0].stride == 0 || rs[0].count == 1)) {
    appendElement(p.elements, rs[0].var, rs[0].start);
    p.repeat = e - b;
  } else if (rs.size() == 1 && rs[0].stride == 1) {
    p.elements.assign(rs.begin(), rs.end());
    p.repeat = 1;
  } else {
    p.piece = Tensor(t.elementType(), rs);
  }
  return p;
}

// Whether \p runs are one run of consecutive elements inside one interval
// of their variable's tile mapping. An operand of fewer elements than its
// region is read where it lies (its exchange only costed) when it is such
// a run; elements from two tiles would need a gather, which the separate
// regions' single elements do not.
bool inOneInterval(const Graph &graph, ArrayView<Run> runs) {
  if (runs.size() != 1 || (runs[0].stride != 1 && runs[0].count != 1))
    return false;
  const Run &r = runs[0];
  const auto &m = graph.data().variables[r.var].mapping;
  auto it = std::upper_bound(m.begin(), m.end(), r.start,
                             [](std::int64_t x, const TileInterval &iv) {
                               return x < static_cast<std::int64_t>(iv.end);
                             });
  return it != m.end() && static_cast<std::int64_t>(it->begin) <= r.start &&
         static_cast<std::int64_t>(it->end) >= r.start + r.count;
}

// Whether region part `r` may join `last`, which ends where it begins in
// the memory of every operand: each joined operand is one run, or repeats
// each of its elements as often in both and its joined elements are one
// run in one tile interval (see inOneInterval).
bool follows(const Graph &graph, const std::vector<OperandPart> &last,
             const std::vector<OperandPart> &r) {
  for (std::size_t k = 0; k < r.size(); ++k) {
    if (r[k].scalar)
      continue;
    if (r[k].repeat == 0 || last[k].repeat != r[k].repeat)
      return false;
    const Run &a = last[k].elements.back(), &n = r[k].elements.front();
    if (n.var != a.var || n.start != a.start + a.count)
      return false;
    const Run joined{a.var, a.start, 1, n.start + n.count - a.start};
    if (r[k].repeat > 1 &&
        (last[k].elements.size() != 1 || r[k].elements.size() != 1 ||
         !inOneInterval(graph, {&joined, 1})))
      return false;
  }
  return true;
}

// A region as joinRegions builds it.
struct Built {
  std::size_t begin;
  std::vector<OperandPart> parts;
};

Built buildPart(const std::vector<Tensor> &operands,
                const std::vector<bool> &grouped, std::size_t b, std::size_t e,
                std::size_t length) {
  Built r{b, {}};
  for (std::size_t k = 0; k < operands.size(); ++k)
    r.parts.push_back(operandPart(operands[k], b, e, length, grouped[k]));
  return r;
}

// Whether a group's repeating operands each give one run in one tile
// interval (see inOneInterval).
bool groupable(const Graph &graph, const Built &r,
               const std::vector<bool> &grouped) {
  for (std::size_t k = 0; k < r.parts.size(); ++k)
    if (grouped[k] && !inOneInterval(graph, r.parts[k].elements))
      return false;
  return true;
}

// Joins consecutive regions of a tile that follow each other in the memory
// of the output and of every input (the rows of a tile's block of a matmul
// operand are not consecutive elements but are consecutive in memory).
// Regions are first cut where a repeating operand moves on to its next
// element, and the parts of equal size are run as one region whose
// repeating operands give one element per part: a tile's channels of
// batch norm are one region, not one per channel. Scalar inputs stay
// whole. `join` allows joins that leave the output's index order.
std::vector<Region> joinRegions(const Graph &graph, const Ranges &regions,
                                const std::vector<Tensor> &operands,
                                const std::vector<const Tensor *> &repeating,
                                bool join) {
  std::vector<Built> built;
  std::vector<bool> cut;
  std::vector<bool> grouped(operands.size());
  for (const auto &[b, e] : regions) {
    const std::vector<std::size_t> cuts = repeatCuts(b, e, repeating, &cut);
    for (std::size_t k = 0; k < operands.size(); ++k) {
      grouped[k] = false;
      for (std::size_t j = 0; j < repeating.size(); ++j)
        grouped[k] = grouped[k] || (cut[j] && repeating[j] == &operands[k]);
    }
    for (std::size_t i = 0; i + 1 < cuts.size();) {
      const std::size_t length = cuts[i + 1] - cuts[i];
      std::size_t j = i + 1;
      while (j + 1 < cuts.size() && cuts[j + 1] - cuts[j] == length)
        ++j;
      Built r = buildPart(operands, grouped, cuts[i], cuts[j], length);
      if (j > i + 1 && !groupable(graph, r, grouped)) {
        j = i + 1; // the group's elements lie apart: its parts one by one
        r = buildPart(operands, grouped, cuts[i], cuts[j], length);
      }
      const bool joins =
          join && !built.empty() && follows(graph, built.back().parts, r.parts);
      i = j;
      if (!joins) {
        built.push_back(std::move(r));
        continue;
      }
      for (std::size_t k = 0; k < operands.size(); ++k) {
        OperandPart &into = built.back().parts[k];
        if (into.scalar)
          continue;
        if (into.repeat == 1)
          into.elements.back().count += r.parts[k].elements.front().count;
        else
          for (const Run &el : r.parts[k].elements)
            for (std::int64_t n = 0; n < el.count; ++n)
              appendElement(into.elements, el.var, el.start + n);
      }
    }
  }
  std::vector<Region> out;
  out.reserve(built.size());
  for (Built &r : built) {
    Region region{r.begin, {}};
    for (std::size_t k = 0; k < operands.size(); ++k) {
      OperandPart &p = r.parts[k];
      if (p.scalar || p.repeat == 0) {
        region.operands.push_back(std::move(p.piece));
        continue;
      }
      region.operands.push_back(Tensor(operands[k].elementType(), p.elements));
    }
    out.push_back(std::move(region));
  }
  return out;
}

// What one map vertex is connected to: its regions' inputs, flag inputs,
// outputs and first output indices.
struct MapFields {
  std::vector<Tensor> in, flagIn, outs;
  std::vector<unsigned> bases;
  void append(const MapFields &o) {
    in.insert(in.end(), o.in.begin(), o.in.end());
    flagIn.insert(flagIn.end(), o.flagIn.begin(), o.flagIn.end());
    outs.insert(outs.end(), o.outs.begin(), o.outs.end());
    bases.insert(bases.end(), o.bases.begin(), o.bases.end());
  }
};

VertexRef addMapVertex(Graph &graph, ComputeSet cs, const std::string &cls,
                       const MapFields &f, const mapcode::Program &code,
                       unsigned tile, std::uint64_t estimate) {
  VertexRef v = graph.addVertex(cs, cls);
  graph.setPerfEstimate(v, estimate);
  graph.setFieldSize(v["in"], f.in.size());
  graph.setFieldSize(v["flags"], f.flagIn.size());
  graph.setFieldSize(v["out"], f.outs.size());
  if (!f.in.empty())
    graph.connect(v["in"], f.in);
  if (!f.flagIn.empty())
    graph.connect(v["flags"], f.flagIn);
  graph.connect(v["out"], f.outs);
  graph.setInitialValue(
      v["code"], std::vector<unsigned>(code.code.begin(), code.code.end()));
  graph.setInitialValue(v["constants"], words(code.constants));
  // Only a program that reads the index needs the regions' bases.
  graph.setInitialValue(v["indexBase"],
                        code.usesIndex() ? f.bases : std::vector<unsigned>());
  graph.setTileMapping(v, tile);
  return v;
}

// A map whose tiles hold few elements each costs the host more to start a
// vertex per tile than to compute: its host kernel (Graph::setHostKernel)
// runs the same regions, the same way, in about 16 vertices.
constexpr std::size_t kHostMapMaxElementsPerTile = 64;
void addMapHostKernel(Graph &graph, ComputeSet cs, const std::string &cls,
                      const std::vector<MapFields> &tiles,
                      const mapcode::Program &code, std::size_t elements,
                      const DebugContext &dc) {
  if (tiles.size() < 2 || elements > kHostMapMaxElementsPerTile * tiles.size())
    return;
  ComputeSet kernel = graph.addComputeSet(DebugContext(dc, "host"));
  const std::size_t per = (elements + 15) / 16;
  MapFields group;
  std::size_t filled = 0;
  for (std::size_t t = 0; t < tiles.size(); ++t) {
    group.append(tiles[t]);
    for (const Tensor &o : tiles[t].outs)
      filled += o.numElements();
    if (filled >= per || t + 1 == tiles.size()) {
      addMapVertex(graph, kernel, cls, group, code, 0, filled);
      group = MapFields();
      filled = 0;
    }
  }
  graph.setHostKernel(cs, kernel);
}

// A tile's map vertex fields from its regions, whose operands are
// \p numData data inputs, \p numFlags flag inputs, then the output.
MapFields tileFields(const std::vector<Region> &regions, std::size_t numData,
                     std::size_t numFlags) {
  MapFields f;
  for (const Region &r : regions) {
    const auto begin = r.operands.begin();
    f.in.insert(f.in.end(), begin, begin + numData);
    f.flagIn.insert(f.flagIn.end(), begin + numData,
                    begin + numData + numFlags);
    f.outs.push_back(r.operands.back());
    f.bases.push_back(static_cast<unsigned>(r.begin));
  }
  return f;
}

// Planning a map's tiles reads the graph and writes only the tile's own
// results, and took a quarter of ResNet-50's compile at 224x224 on one
// thread: maps of this many tiles or more plan on two.
constexpr std::size_t kParallelMinTiles = 64;

// The core of every map: one vertex per worker region of `out`.
// A map's inputs as its vertices read them: of one non-BOOL type (others
// cast to it first), in the output's layout where they have its shape,
// flattened (broadcast to the output's shape unless a single element), and
// split into the data and the BOOL flag lists; `slot` and `isBool` say
// where each input went. Inputs of more than one element keep the output's
// shape, for mapImpl to flatten in the order it runs them.
struct MapInputs {
  Type type = BOOL;
  std::vector<Tensor> data, flags;
  std::vector<unsigned> slot;
  std::vector<bool> isBool;
};
MapInputs mapInputs(Graph &graph, const std::vector<Tensor> &ts,
                    const Tensor &out, Sequence &prog, const DebugContext &dc) {
  MapInputs m;
  for (const Tensor &t : ts) {
    checkSupported("an input", t.elementType());
    if (m.type == BOOL && t.elementType() != BOOL)
      m.type = t.elementType();
  }
  m.slot.resize(ts.size());
  m.isBool.resize(ts.size());
  const std::vector<MemoryPiece> outPieces = memoryPieces(graph, out.flatten());
  for (std::size_t k = 0; k < ts.size(); ++k) {
    Tensor t = ts[k];
    if (t.elementType() != m.type && t.elementType() != BOOL)
      t = cast(graph, t, m.type, prog, DebugContext(dc, "cast"));
    t = inOutputLayout(graph, t, out, outPieces, prog, dc);
    m.isBool[k] = t.elementType() == BOOL && m.type != BOOL;
    auto &list = m.isBool[k] ? m.flags : m.data;
    m.slot[k] = static_cast<unsigned>(list.size());
    list.push_back(t.numElements() == 1 ? t.flatten()
                                        : broadcastTo(t, out.shape()));
  }
  return m;
}

void mapImpl(Graph &graph, const Expr &e, std::vector<Tensor> ts,
             const Tensor &out, Sequence &prog, const DebugContext &dc) {
  checkSupported("the output", out.elementType());
  MapInputs inputs = mapInputs(graph, ts, out, prog, dc);
  const mapcode::Program code = mapcode::compile(e, inputs.slot, inputs.isBool);
  // An output that lies in memory in another order than its shape's (a
  // transposed view) runs in memory order, all operands permuted alike,
  // so its regions are whole runs and not one element each; a result that
  // depends on its index keeps the shape's order.
  std::optional<std::vector<unsigned>> order;
  if (!code.usesIndex())
    order = memoryOrder(out);
  const auto flat = [&](const Tensor &t) {
    return order && t.numElements() > 1 ? t.dimShuffle(*order).flatten()
                                        : t.flatten();
  };
  for (Tensor &t : inputs.data)
    t = flat(t);
  for (Tensor &t : inputs.flags)
    t = flat(t);
  const std::vector<Tensor> &data = inputs.data, &flags = inputs.flags;
  const Tensor outFlat = flat(out);
  const std::string cls =
      templateName("tessera::ops::Map", {inputs.type, out.elementType()});
  ComputeSet cs = graph.addComputeSet(dc);
  std::vector<Tensor> operands = data;
  operands.insert(operands.end(), flags.begin(), flags.end());
  operands.push_back(outFlat);
  const std::size_t grain = graph.getTarget().getVectorWidth(out.elementType());
  // The code is known here, so the estimate counts its operations (the
  // registered estimator sees only the code's length, loads included).
  const CostFigures &costs = graph.getTarget().costs();
  const unsigned operations = code.numOperations();
  // One MultiVertex per tile; its estimate is the busiest of the six
  // worker shares Poplar would give the tile.
  const std::vector<WorkerPiece> shares =
      splitByWorker(graph, outFlat, 6, grain);
  const std::vector<const Tensor *> repeating = repeatingOperands(operands);
  // Each tile's shares, [first, next) of `shares`.
  std::vector<std::pair<std::size_t, std::size_t>> groups;
  for (std::size_t first = 0, next = 0; first < shares.size(); first = next) {
    while (next < shares.size() && shares[next].tile == shares[first].tile)
      ++next;
    groups.emplace_back(first, next);
  }
  std::vector<MapFields> perTile(groups.size());
  std::vector<std::uint64_t> estimates(groups.size());
  forEachOnTwoThreads(groups.size(), kParallelMinTiles, [&](std::size_t g) {
    const auto [first, next] = groups[g];
    Ranges regions;
    std::vector<std::uint64_t> shareCycles;
    for (std::size_t w = first; w < next; ++w) {
      for (const auto &[b, e] : shares[w].regions) {
        // Workers cut the tile's intervals; rejoin what they cut.
        if (!regions.empty() && regions.back().second == b)
          regions.back().second = e;
        else
          regions.emplace_back(b, e);
      }
      // A worker runs its share's regions as cut at repeats, each cut a
      // region more to set up.
      std::vector<unsigned> sizes;
      for (const auto &[b, e] : cutAtRepeats(shares[w].regions, repeating))
        sizes.push_back(static_cast<unsigned>(e - b));
      shareCycles.push_back(mapcode::mapWorkerCycles(
          costs.binaryOpWorkerCycles, costs.binaryOpWorkerCyclesPerVector,
          operations, sizes, static_cast<unsigned>(grain)));
    }
    // A worker a share (at most six): the busiest, plus the supervisor's
    // starts of the others, as it would start six separate vertices.
    estimates[g] = cost::multiVertexWorkerCycles(
        graph.getTarget(), std::move(shareCycles), MultiVertex::numWorkers());
    // The index an element's value may depend on is its place in the
    // output, so only maps without it join regions out of that order.
    perTile[g] = tileFields(
        joinRegions(graph, regions, operands, repeating, !code.usesIndex()),
        data.size(), flags.size());
  });
  for (std::size_t g = 0; g < groups.size(); ++g)
    addMapVertex(graph, cs, cls, perTile[g], code, shares[groups[g].first].tile,
                 estimates[g]);
  addMapHostKernel(graph, cs, cls, perTile, code, out.numElements(), dc);
  prog.add(program::Execute(cs, dc));
}

void parseMapOptions(const char *op, const OptionFlags &options) {
  OptionParser p(op);
  for (const char *key :
       {"enableGenerateCodelet", "forceGenerateCodelet",
        "enableExpressionOptimizations", "enableVectorBroadcastOptimisations"})
    p.addIgnored(key,
                 "every map runs its whole expression as one vertex per "
                 "worker region",
                 {"true", "false"});
  p.parse(options);
}

std::vector<Type> typesOf(const std::vector<Tensor> &ts) {
  std::vector<Type> types;
  for (const Tensor &t : ts)
    types.push_back(t.elementType());
  return types;
}

} // namespace

Tensor map(Graph &graph, const Expr &e, const std::vector<Tensor> &ts,
           Sequence &prog, const DebugContext &dc, const OptionFlags &options) {
  parseMapOptions("map", options);
  const auto shape = shapeOf("map", ts);
  const Type type = inferType(e, typesOf(ts));
  Tensor out;
  for (const Tensor &t : ts)
    if (t.shape() == shape && !out.valid()) {
      bool broadcastView = false;
      for (const Run &r : t.runs())
        broadcastView = broadcastView || r.stride == 0;
      if (!broadcastView)
        out = createLike(graph, t, type, DebugContext(dc, "out"));
    }
  if (!out.valid()) {
    out = graph.addVariable(type, shape, DebugContext(dc, "out"));
    mapTensorLinearly(graph, out);
  }
  mapImpl(graph, e, ts, out, prog, nameOr(dc, "map"));
  return out;
}

void mapInPlace(Graph &graph, const Expr &e, const std::vector<Tensor> &ts,
                Sequence &prog, const DebugContext &dc,
                const OptionFlags &options) {
  parseMapOptions("mapInPlace", options);
  if (ts.empty())
    throw ShapeError("mapInPlace: give at least one tensor; the result is "
                     "written into the first");
  const auto shape = shapeOf("mapInPlace", ts);
  if (shape != ts[0].shape())
    throw ShapeError("mapInPlace: the operands broadcast to " +
                     shapeString(shape) +
                     " but the first, which receives the result, has shape " +
                     ts[0].shapeToString());
  inferType(e, typesOf(ts));
  mapImpl(graph, e, ts, ts[0], prog, nameOr(dc, "mapInPlace"));
}

void mapWithOutput(Graph &graph, const Expr &e, const std::vector<Tensor> &ts,
                   const Tensor &out, Sequence &prog, const DebugContext &dc,
                   const OptionFlags &options) {
  parseMapOptions("mapWithOutput", options);
  auto all = ts;
  all.push_back(out);
  const auto shape = shapeOf("mapWithOutput", all);
  if (shape != out.shape())
    throw ShapeError("mapWithOutput: the operands broadcast to " +
                     shapeString(shape) + " but the output has shape " +
                     out.shapeToString());
  inferType(e, typesOf(ts));
  mapImpl(graph, e, ts, out, prog, nameOr(dc, "mapWithOutput"));
}

#define TESSERA_UNARY_DEF(E, n)                                                \
  Tensor n(Graph &graph, const Tensor &a, Sequence &prog,                      \
           const DebugContext &dc, const OptionFlags &options) {               \
    return map(graph, UnaryOp(UnaryOpType::E, _1), {a}, prog, nameOr(dc, #n),  \
               options);                                                       \
  }                                                                            \
  void n##InPlace(Graph &graph, const Tensor &a, Sequence &prog,               \
                  const DebugContext &dc, const OptionFlags &options) {        \
    mapInPlace(graph, UnaryOp(UnaryOpType::E, _1), {a}, prog, nameOr(dc, #n),  \
               options);                                                       \
  }                                                                            \
  void n##WithOutput(Graph &graph, const Tensor &a, const Tensor &out,         \
                     Sequence &prog, const DebugContext &dc,                   \
                     const OptionFlags &options) {                             \
    mapWithOutput(graph, UnaryOp(UnaryOpType::E, _1), {a}, out, prog,          \
                  nameOr(dc, #n), options);                                    \
  }
#define TESSERA_BINARY_DEF(E, n)                                               \
  Tensor n(Graph &graph, const Tensor &a, const Tensor &b, Sequence &prog,     \
           const DebugContext &dc, const OptionFlags &options) {               \
    return map(graph, BinaryOp(BinaryOpType::E, _1, _2), {a, b}, prog,         \
               nameOr(dc, #n), options);                                       \
  }                                                                            \
  void n##InPlace(Graph &graph, const Tensor &a, const Tensor &b,              \
                  Sequence &prog, const DebugContext &dc,                      \
                  const OptionFlags &options) {                                \
    mapInPlace(graph, BinaryOp(BinaryOpType::E, _1, _2), {a, b}, prog,         \
               nameOr(dc, #n), options);                                       \
  }                                                                            \
  void n##WithOutput(Graph &graph, const Tensor &a, const Tensor &b,           \
                     const Tensor &out, Sequence &prog,                        \
                     const DebugContext &dc, const OptionFlags &options) {     \
    mapWithOutput(graph, BinaryOp(BinaryOpType::E, _1, _2), {a, b}, out, prog, \
                  nameOr(dc, #n), options);                                    \
  }
#define TESSERA_UNARY(E, n, N, k, g) TESSERA_UNARY_DEF(E, n)
#define TESSERA_PREDICATE(E, n, N, k) TESSERA_UNARY_DEF(E, n)
#define TESSERA_BINARY(E, n, N, k, ga, gb) TESSERA_BINARY_DEF(E, n)
#define TESSERA_COMPARE(E, n, N, k) TESSERA_BINARY_DEF(E, n)
#include "tessera/ops/Elementwise.def"

Tensor select(Graph &graph, const Tensor &a, const Tensor &b,
              const Tensor &pred, Sequence &prog, const DebugContext &dc,
              const OptionFlags &options) {
  return map(graph, Select(_1, _2, _3), {a, b, pred}, prog,
             nameOr(dc, "select"), options);
}

Tensor clamp(Graph &graph, const Tensor &x, const Tensor &lo, const Tensor &hi,
             Sequence &prog, const DebugContext &dc,
             const OptionFlags &options) {
  return map(graph, Clamp(_1, _2, _3), {x, lo, hi}, prog, nameOr(dc, "clamp"),
             options);
}

Tensor cast(Graph &graph, const Tensor &t, Type type, Sequence &prog,
            const DebugContext &dc, const OptionFlags &options) {
  return map(graph, Cast(_1, type), {t}, prog, nameOr(dc, "cast"), options);
}

void fill(Graph &graph, const Tensor &t, double value, Sequence &prog,
          const DebugContext &dc) {
  mapWithOutput(graph, Const(value, t.elementType()), {}, t, prog,
                nameOr(dc, "fill"));
}

void zero(Graph &graph, const Tensor &t, Sequence &prog,
          const DebugContext &dc) {
  fill(graph, t, 0.0, prog, nameOr(dc, "zero"));
}

void iota(Graph &graph, const Tensor &t, std::int64_t start, Sequence &prog,
          const DebugContext &dc) {
  if (t.rank() != 1 ||
      (t.elementType() != INT && t.elementType() != UNSIGNED_INT))
    throw TypeError("iota: the tensor must be 1-D of int or unsigned int, "
                    "but it is " +
                    std::string(typeName(t.elementType())) + " of shape " +
                    t.shapeToString());
  mapWithOutput(
      graph,
      Cast(Index() + Const(static_cast<double>(start), INT), t.elementType()),
      {}, t, prog, nameOr(dc, "iota"));
}

void scaledAddTo(Graph &graph, const Tensor &a, const Tensor &b, float scaleB,
                 Sequence &prog, const DebugContext &dc,
                 const OptionFlags &options) {
  mapInPlace(graph, _1 + Const(scaleB) * _2, {a, b}, prog,
             nameOr(dc, "scaledAddTo"), options);
}

void scaledAddTo(Graph &graph, const Tensor &a, float scaleA, const Tensor &b,
                 float scaleB, Sequence &prog, const DebugContext &dc,
                 const OptionFlags &options) {
  mapInPlace(graph, Const(scaleA) * _1 + Const(scaleB) * _2, {a, b}, prog,
             nameOr(dc, "scaledAddTo"), options);
}

void scaledAddTo(Graph &graph, const Tensor &a, const Tensor &b,
                 const Tensor &scaleB, Sequence &prog, const DebugContext &dc,
                 const OptionFlags &options) {
  mapInPlace(graph, _1 + _3 * _2, {a, b, scaleB}, prog,
             nameOr(dc, "scaledAddTo"), options);
}

void scaledSubtractFrom(Graph &graph, const Tensor &a, const Tensor &b,
                        float scaleB, Sequence &prog, const DebugContext &dc,
                        const OptionFlags &options) {
  mapInPlace(graph, _1 - Const(scaleB) * _2, {a, b}, prog,
             nameOr(dc, "scaledSubtractFrom"), options);
}

void scaledSubtractFrom(Graph &graph, const Tensor &a, const Tensor &b,
                        const Tensor &scaleB, Sequence &prog,
                        const DebugContext &dc, const OptionFlags &options) {
  mapInPlace(graph, _1 - _3 * _2, {a, b, scaleB}, prog,
             nameOr(dc, "scaledSubtractFrom"), options);
}

#define NO_GRADIENT Expr()

Tensor unaryGradient(Graph &graph, UnaryOpType op, const Tensor &x,
                     const Tensor &y, const Tensor &dy, Sequence &prog,
                     const DebugContext &dc) {
  const Expr X = _1, Y = _2;
  Expr grad;
  switch (op) {
#define TESSERA_UNARY(E, n, N, k, g)                                           \
  case UnaryOpType::E:                                                         \
    grad = g;                                                                  \
    break;
#include "tessera/ops/Elementwise.def"
  default:
    break;
  }
  if (!grad.valid())
    throw UnsupportedError(std::string("unaryGradient: ") + name(op) +
                           " has no gradient");
  return map(graph, _3 * grad, {x, y, dy}, prog, nameOr(dc, "unaryGradient"));
}

std::pair<Tensor, Tensor> binaryGradient(Graph &graph, BinaryOpType op,
                                         const Tensor &a, const Tensor &b,
                                         const Tensor &y, const Tensor &dy,
                                         Sequence &prog,
                                         const DebugContext &dc) {
  const Expr A = _1, B = _2, Y = _3;
  Expr ga, gb;
  switch (op) {
#define TESSERA_BINARY(E, n, N, k, ea, eb)                                     \
  case BinaryOpType::E:                                                        \
    ga = ea;                                                                   \
    gb = eb;                                                                   \
    break;
#include "tessera/ops/Elementwise.def"
  default:
    break;
  }
  if (!ga.valid())
    throw UnsupportedError(std::string("binaryGradient: ") + name(op) +
                           " has no gradient");
  const DebugContext base = nameOr(dc, "binaryGradient");
  return {map(graph, _4 * ga, {a, b, y, dy}, prog, DebugContext(base, "a")),
          map(graph, _4 * gb, {a, b, y, dy}, prog, DebugContext(base, "b"))};
}

} // namespace tessera::ops
