// The convolution planner: which dimensions to split over how many tiles.
// It tries every split of (groups, batch, output channels, output rows,
// input channels) that fits the target, estimates each with the same
// figures the compiler's cost model uses (exchange of the operands a tile
// reads, the vertex's compute, the reduction of partial sums, the syncs
// between them) and keeps the cheapest plan that fits the memory budget.
#include "ConvInternal.hpp"

#include "tessera/device/CostFormulas.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/OptionParser.hpp"

#include <cmath>
#include <limits>

namespace tessera::ops::conv {
namespace {

std::size_t ceilDiv(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

std::size_t outSize(std::size_t in, int id, long pl, long pu, std::size_t k,
                    int kd, int s) {
  const long padded = static_cast<long>((in - 1) * id + 1) + pl + pu;
  const long extent = static_cast<long>((k - 1) * kd + 1);
  if (padded < extent)
    return 0;
  return static_cast<std::size_t>((padded - extent) / s + 1);
}

/// The split counts worth trying for a dimension of \p size: one per
/// distinct largest piece, the smallest count giving it.
std::vector<unsigned> splitCounts(std::size_t size, std::size_t maxCount) {
  std::vector<unsigned> counts;
  std::size_t last = 0;
  for (std::size_t k = 1; k <= std::min(size, maxCount); ++k) {
    const std::size_t piece = ceilDiv(size, k);
    if (piece != last)
      counts.push_back(static_cast<unsigned>(k));
    last = piece;
  }
  return counts;
}

/// The largest piece of each dimension under \p plan, and what one unit
/// reads, writes and computes.
struct UnitShape {
  std::size_t groups, batch, outChans, rows, inChans, inRows;
  std::size_t inBytes = 0, outElems = 0, memory = 0;
  std::uint64_t workerCycles = 0;
};

UnitShape unitShape(const Target &t, const ConvShape &s, Pass pass,
                    const Plan &p) {
  UnitShape u;
  u.groups = ceilDiv(s.groups, p.groups);
  u.batch = ceilDiv(s.batch, p.batch);
  u.outChans = ceilDiv(s.outChans, p.outChans);
  u.rows = ceilDiv(s.outH, p.rows);
  u.inChans = ceilDiv(s.inChans, p.inChans);
  const std::size_t span = (u.rows - 1) * s.sH + (s.kH - 1) * s.kdH + 1;
  u.inRows = std::min(s.inH, ceilDiv(span, s.idH));
  const std::size_t kElems = u.inChans * s.kH * s.kW;
  const std::size_t acts = u.batch * u.inChans * u.inRows * s.inW;
  const std::size_t positions = u.batch * u.rows * s.outW;
  const unsigned macs = t.getMacsPerCyclePerTile(
      s.inType, s.inType == Type::FLOAT ? Type::FLOAT : s.partialsType);
  const CostFigures &c = t.costs();
  const std::size_t inSize = typeSize(s.inType);
  if (pass == Pass::Forward) {
    u.inBytes = (acts + u.outChans * kElems) * inSize;
    u.outElems = positions * u.outChans;
    // The busiest worker's share, without walking the items.
    const FwdWork work(u.batch * u.rows, u.outChans, s.outW, kElems);
    const std::size_t items = ceilDiv(work.items(), kWorkers);
    const std::size_t cols =
        std::min(s.outW, ceilDiv(work.panels(), work.colParts) * 16);
    const std::uint64_t rowMacs =
        std::uint64_t(ceilDiv(u.outChans, work.coParts)) * cols * kElems;
    u.workerCycles = c.matMulWorkerCycles + items * (c.convWorkerCyclesPerRow +
                                                     ceilDiv(rowMacs, macs));
  } else {
    u.inBytes = (acts + positions * u.outChans) * inSize;
    u.outElems = u.outChans * kElems;
    u.workerCycles =
        convWeightGradCycles(kElems, u.outChans, positions, macs, t);
  }
  const Type resultType = p.reduceParts(pass) > 1 ? s.partialsType
                          : pass == Pass::Forward ? s.outType
                                                  : s.inType;
  u.memory = u.groups * (u.inBytes + u.outElems * typeSize(resultType));
  return u;
}

} // namespace

void ConvShape::computeOutput() {
  outH = outSize(inH, idH, plH, puH, kH, kdH, sH);
  outW = outSize(inW, idW, plW, puW, kW, kdW, sW);
}

ConvShape forwardShape(const ConvParams &p, Type partialsType) {
  ConvShape s;
  s.inType = p.inputType;
  s.outType = p.outputType;
  s.partialsType = p.inputType == Type::FLOAT ? Type::FLOAT : partialsType;
  s.batch = p.batchSize;
  s.groups = p.numConvGroups;
  s.inChans = p.inputChannelsPerConvGroup;
  s.outChans = p.outputChannelsPerConvGroup;
  s.inH = p.inputFieldShape[0];
  s.inW = p.inputFieldShape[1];
  s.kH = p.kernelShape[0];
  s.kW = p.kernelShape[1];
  s.sH = static_cast<int>(p.stride[0]);
  s.sW = static_cast<int>(p.stride[1]);
  s.kdH = static_cast<int>(p.kernelDilation[0]);
  s.kdW = static_cast<int>(p.kernelDilation[1]);
  s.plH = p.paddingLower[0];
  s.plW = p.paddingLower[1];
  s.puH = p.paddingUpper[0];
  s.puW = p.paddingUpper[1];
  s.computeOutput();
  return s;
}

ConvShape inputGradientShape(const ConvParams &p, Type partialsType) {
  const ConvShape f = forwardShape(p, partialsType);
  ConvShape s = f;
  s.inType = p.inputType;
  s.outType = p.inputType;
  s.inChans = f.outChans;
  s.outChans = f.inChans;
  s.inH = f.outH;
  s.inW = f.outW;
  s.idH = f.sH;
  s.idW = f.sW;
  s.sH = s.sW = 1;
  // Derivation: dIn[i] = sum over k of dilatedDeltas[i + pl - k*kd] *
  // w[k], a convolution with the flipped kernel and lower padding
  // (k-1)*kd - pl; the upper padding makes the output the input's size.
  s.plH = static_cast<long>((f.kH - 1) * f.kdH) - f.plH;
  s.plW = static_cast<long>((f.kW - 1) * f.kdW) - f.plW;
  s.puH = static_cast<long>(f.inH) -
          static_cast<long>((f.outH - 1) * f.sH + 1) + f.plH;
  s.puW = static_cast<long>(f.inW) -
          static_cast<long>((f.outW - 1) * f.sW + 1) + f.plW;
  s.computeOutput();
  TESSERA_INTERNAL_ASSERT(s.outH == f.inH && s.outW == f.inW,
                          "input gradient shape does not match the input");
  return s;
}

ConvOptions ConvOptions::parse(const OptionFlags &flags) {
  ConvOptions o;
  OptionParser p("convolution");
  p.addEnum("partialsType", o.partialsType,
            {{"float", Type::FLOAT}, {"half", Type::HALF}});
  p.add("availableMemoryProportion", o.availableMemoryProportion);
  // The pass comes from the function called (convolution, its input or
  // weight gradient); the rest tune PopLibs' plan and vertices.
  p.addIgnored(
      "pass", "the function called gives the pass",
      {"NONE", "INFERENCE_FWD", "TRAINING_FWD", "TRAINING_BWD", "TRAINING_WU"});
  for (const char *key :
       {"use128BitConvUnitLoad", "enableMultiStageReduce", "enableFastReduce",
        "remapOutputTensor", "enableConvDithering", "gatherConvOutput"})
    p.addIgnored(key, "it tunes PopLibs' vertices, not Tessera's",
                 {"true", "false"});
  p.addIgnored("planConstraints", "Tessera's planner takes none");
  p.parse(flags);
  if (!(o.availableMemoryProportion > 0 && o.availableMemoryProportion <= 1))
    throw OptionError("convolution option availableMemoryProportion is " +
                      std::to_string(o.availableMemoryProportion) +
                      "; give a share of tile memory in (0, 1]");
  return o;
}

std::uint64_t estimatePlanCycles(const Target &t, const ConvShape &s, Pass pass,
                                 const Plan &plan) {
  const UnitShape u = unitShape(t, s, pass, plan);
  // One sync per superstep: a compute set fed by an exchange shares that
  // exchange's sync (as the compiler's cost model charges it).
  std::uint64_t cycles = u.groups * cost::computeCycles(t, u.workerCycles, 1) +
                         (t.getNumTiles() > 1 ? 0 : cost::syncCycles(t, false));
  // Operands are assumed to come from elsewhere (another op's layout), so
  // even a one-unit plan pays for bringing them in.
  if (t.getNumTiles() > 1)
    cycles += cost::exchangeStepCycles(
        t, cost::exchangeTransferCycles(t, u.groups * u.inBytes));
  const unsigned parts = plan.reduceParts(pass);
  if (parts > 1) {
    // Each of the parts' tiles reduces 1/parts of the block.
    const std::size_t slice = ceilDiv(u.outElems, parts);
    cycles += cost::exchangeStepCycles(
        t, cost::exchangeTransferCycles(t, u.groups * (parts - 1) * slice *
                                               typeSize(s.partialsType)));
    cycles +=
        u.groups * cost::computeCycles(
                       t, convReduceCycles(parts, slice, s.partialsType, t), 1);
  }
  return cycles;
}

Plan choosePlan(const Target &t, const ConvShape &s, Pass pass,
                const ConvOptions &options) {
  const std::size_t tiles = t.getNumTiles();
  const double budget = options.availableMemoryProportion *
                        static_cast<double>(t.getBytesPerTile());
  Plan best, smallest;
  std::uint64_t bestCycles = std::numeric_limits<std::uint64_t>::max();
  std::size_t smallestMemory = std::numeric_limits<std::size_t>::max();
  bool fits = false;
  const auto gs = splitCounts(s.groups, tiles);
  const auto ns = splitCounts(s.batch, tiles);
  const auto cos = splitCounts(s.outChans, tiles);
  const auto hs = splitCounts(s.outH, tiles);
  const auto cis = splitCounts(s.inChans, tiles);
  for (unsigned g : gs)
    for (unsigned n : ns) {
      if (std::size_t(g) * n > tiles)
        break;
      for (unsigned co : cos) {
        if (std::size_t(g) * n * co > tiles)
          break;
        for (unsigned h : hs) {
          if (std::size_t(g) * n * co * h > tiles)
            break;
          for (unsigned ci : cis) {
            const Plan p{g, n, co, h, ci};
            if (p.units() > tiles)
              break;
            const UnitShape u = unitShape(t, s, pass, p);
            if (u.memory < smallestMemory) {
              smallestMemory = u.memory;
              smallest = p;
            }
            if (double(u.memory) > budget)
              continue;
            const std::uint64_t cycles = estimatePlanCycles(t, s, pass, p);
            if (!fits || cycles < bestCycles) {
              best = p;
              bestCycles = cycles;
              fits = true;
            }
          }
        }
      }
    }
  return fits ? best : smallest;
}

unsigned unitTile(const Target &target, const Plan &p, unsigned g, unsigned n,
                  unsigned co, unsigned h, unsigned ci) {
  const std::size_t u =
      (((std::size_t(g) * p.batch + n) * p.outChans + co) * p.rows + h) *
          p.inChans +
      ci;
  return static_cast<unsigned>(u * target.getNumTiles() / p.units() + p.shift);
}

unsigned planShift(const Target &target, const Plan &plan, const Tensor &t) {
  // Unit u of every plan of U units went to tile u*T/U, so convolutions
  // with fewer units than tiles all used the same tiles (0, T/U, ...), and
  // those tiles collected many layers' weights, optimizer state and work
  // (ResNet-50 at 224x224: 42 small convolutions' weight blocks on tile
  // 1470, 9 on the median tile). Shifting a plan's units by less than the
  // gap after its last unit moves them onto the tiles between, and keeps
  // their order, so reductions over what they write (ordered by tile) sum
  // in the same order and results stay bit for bit the same. A Weyl
  // sequence of the variable id picks the shift: deterministic, and evenly
  // scattered over consecutive layers.
  const std::size_t tiles = target.getNumTiles(), units = plan.units();
  const std::uint64_t room = tiles - (units - 1) * tiles / units;
  const std::uint64_t var = t.runs().front().var;
  const std::uint64_t frac = ((var + 1) * 0x9E3779B97F4A7C15ull) >> 32;
  return static_cast<unsigned>((frac * room) >> 32);
}

Range inputRowsFor(const ConvShape &s, Range out) {
  const long lo = static_cast<long>(out.begin) * s.sH - s.plH;
  const long hi = static_cast<long>(out.end - 1) * s.sH +
                  static_cast<long>((s.kH - 1) * s.kdH) + 1 - s.plH;
  const long first = lo <= 0 ? 0 : (lo + s.idH - 1) / s.idH;
  const long last = hi <= 0 ? -1 : (hi - 1) / s.idH;
  const long end = std::min<long>(static_cast<long>(s.inH), last + 1);
  if (end <= first)
    return {0, 0};
  return {static_cast<std::size_t>(first), static_cast<std::size_t>(end)};
}

namespace {

/// The piece of \p size split \p n ways that holds \p x.
unsigned pieceIndex(std::size_t size, unsigned n, std::size_t x) {
  return static_cast<unsigned>(((x + 1) * n - 1) / size);
}

} // namespace

namespace {

/// Maps the elements of \p segments (intervals of a variable, taken in
/// order as one region) in \p pieces equal pieces, piece j to tileOf(j),
/// cutting only at multiples of \p grain elements (when every segment is
/// a multiple of it). With the cost model counting a tile's outgoing bytes,
/// data that several units read is best spread over all of them; whole
/// grains (the rows or weight slabs a vertex entry reads) keep each entry
/// on one tile, where the simulator reads it in place.
template <typename F>
void spreadRegion(TileMapping &m, const std::vector<Range> &segments,
                  unsigned pieces, std::size_t grain, F &&tileOf) {
  std::size_t total = 0;
  for (const Range &r : segments) {
    total += r.size();
    if (r.size() % grain)
      grain = 1;
  }
  const std::size_t units = total / grain;
  std::size_t offset = 0;
  for (const Range &r : segments) {
    for (std::size_t pos = 0; pos < r.size();) {
      const unsigned j = pieceIndex(units, pieces, (offset + pos) / grain);
      const std::size_t end =
          std::min(r.size(), pieceOf(units, pieces, j).end * grain - offset);
      auto &v = m[tileOf(j)];
      if (!v.empty() && v.back().end() == r.begin + pos)
        v.back().last = r.begin + end;
      else
        v.emplace_back(r.begin + pos, r.begin + end);
      pos = end;
    }
    offset += r.size();
  }
}

} // namespace

void mapInput(Graph &graph, const Tensor &t, const ConvShape &s,
              const Plan &plan) {
  // The rows of a (batch entry, row piece, channel piece) region are read
  // by the units of every output-channel piece: spread them over those.
  const Target &target = graph.getTarget();
  TileMapping m(target.getNumTiles());
  const std::size_t chans = s.groups * s.inChans, plane = s.inH * s.inW;
  std::vector<Range> segments;
  for (std::size_t n = 0; n < s.batch; ++n)
    for (std::size_t g = 0; g < s.groups; ++g)
      for (unsigned h = 0; h < plan.rows; ++h)
        for (unsigned cb = 0; cb < plan.inChans; ++cb) {
          const Range rows = pieceOf(s.inH, plan.rows, h);
          const Range cir = pieceOf(s.inChans, plan.inChans, cb);
          segments.clear();
          for (std::size_t ci = cir.begin; ci < cir.end; ++ci) {
            const std::size_t base = (n * chans + g * s.inChans + ci) * plane;
            segments.push_back(
                {base + rows.begin * s.inW, base + rows.end * s.inW});
          }
          const unsigned gp = pieceIndex(s.groups, plan.groups, g);
          const unsigned nb = pieceIndex(s.batch, plan.batch, n);
          spreadRegion(m, segments, plan.outChans, s.inW, [&](unsigned j) {
            return unitTile(target, plan, gp, nb, j, h, cb);
          });
        }
  graph.setTileMapping(t, m);
}

void mapWeights(Graph &graph, const Tensor &t, const ConvShape &s,
                const Plan &plan) {
  // A weights slab (output-channel piece x input-channel piece) is read by
  // the units of every batch and row piece: spread it over those.
  const Target &target = graph.getTarget();
  TileMapping m(target.getNumTiles());
  const std::size_t kk = s.kH * s.kW;
  const unsigned sharers = plan.batch * plan.rows;
  std::vector<Range> segments;
  for (std::size_t g = 0; g < s.groups; ++g)
    for (unsigned cb = 0; cb < plan.outChans; ++cb)
      for (unsigned ib = 0; ib < plan.inChans; ++ib) {
        const Range cr = pieceOf(s.outChans, plan.outChans, cb);
        const Range cir = pieceOf(s.inChans, plan.inChans, ib);
        segments.clear();
        for (std::size_t co = cr.begin; co < cr.end; ++co) {
          const std::size_t base = ((g * s.outChans + co) * s.inChans) * kk;
          segments.push_back({base + cir.begin * kk, base + cir.end * kk});
        }
        const unsigned gp = pieceIndex(s.groups, plan.groups, g);
        spreadRegion(m, segments, sharers, cir.size() * kk, [&](unsigned j) {
          return unitTile(target, plan, gp, j / plan.rows, cb, j % plan.rows,
                          ib);
        });
      }
  mapInMemoryOrder(graph, t, m);
}

} // namespace tessera::ops::conv
