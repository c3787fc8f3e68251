// The matmul planner: an exhaustive search over the splits of the groups,
// M, N and K, each candidate costed with the same formulas the compiler's
// cost model applies to the graph the op then builds (vertex estimates,
// exchange bytes of the busiest tile, syncs), so the chosen plan is the one
// the estimates favour and the plan's figure predicts the compiled one.
#include "MatMulInternal.hpp"

#include "tessera/device/CostFormulas.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/OptionParser.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

namespace tessera::ops::matmul {
namespace {

std::size_t ceilDiv(std::size_t a, std::size_t b) { return (a + b - 1) / b; }
std::size_t roundUp(std::size_t a, std::size_t g) { return ceilDiv(a, g) * g; }

// One candidate split and its estimate.
struct Candidate {
  unsigned gS = 1, mS = 1, nS = 1, kS = 1;
  Innermost innermost = Innermost::K;
  MatMulPlan cost;
  std::size_t tempBytes = 0;
  bool fits = true;
};

class Search {
public:
  Search(const Target &target, const Types &types, std::size_t g, std::size_t m,
         std::size_t k, std::size_t n, const Options &options, bool accumulate)
      : t_(target), types_(types), g_(g), m_(m), k_(k), n_(n),
        accumulate_(accumulate),
        cost_(costInputs(target, types.input, types.partials)),
        memory_(static_cast<std::size_t>(options.availableMemoryProportion *
                                         double(target.getBytesPerTile()))) {}

  Candidate best() {
    const unsigned tiles = t_.getTilesPerIPU();
    const AmpShape amp = cost_.amp;
    Candidate best;
    bool have = false;
    // Only the smallest split giving each block size: more parts with the
    // same largest block cost the same on the busiest tile.
    forEachSplit(g_, 1, tiles, [&](unsigned gS) {
      forEachSplit(m_, 1, tiles / gS, [&](unsigned mS) {
        forEachSplit(n_, amp.nGrain, tiles / (gS * mS), [&](unsigned nS) {
          forEachSplit(k_, amp.kGrain, tiles / (gS * mS * nS),
                       [&](unsigned kS) {
                         for (Innermost o : orders(mS, nS)) {
                           Candidate c = evaluate(gS, mS, nS, kS, o);
                           if (!have || better(c, best)) {
                             best = c;
                             have = true;
                           }
                         }
                       });
        });
      });
    });
    return best;
  }

  Partition part(std::size_t length, std::size_t grain, unsigned parts) const {
    return Partition{length, grain, parts};
  }

  // The tile orders worth costing: K innermost always; N or M innermost
  // when an even split lets every exchange-bus pair share an operand.
  std::vector<Innermost> orders(unsigned mS, unsigned nS) const {
    std::vector<Innermost> o{Innermost::K};
    if (t_.getTilesPerSharedExchangeBus() == 2) {
      if (nS % 2 == 0)
        o.push_back(Innermost::N);
      if (mS % 2 == 0)
        o.push_back(Innermost::M);
    }
    return o;
  }

  Candidate evaluate(unsigned gS, unsigned mS, unsigned nS, unsigned kS,
                     Innermost order = Innermost::K) const {
    const AmpShape amp = cost_.amp;
    const std::size_t eb = typeSize(types_.input);
    const std::size_t pb = typeSize(types_.partials);
    const std::size_t gb = part(g_, 1, gS).maxSize();
    const std::size_t mb = part(m_, 1, mS).maxSize();
    const std::size_t nb = part(n_, amp.nGrain, nS).maxSize();
    const std::size_t kb = part(k_, amp.kGrain, kS).maxSize();
    const bool reduces = kS > 1 || accumulate_;
    Candidate cand{gS, mS, nS, kS, order, {}, 0, true};
    MatMulPlan &p = cand.cost;
    const std::uint64_t sync = cost::syncCycles(t_, false);
    const auto exchange = [&](std::size_t bytes) {
      return cost::exchangeCycles(t_, bytes);
    };
    // Operand exchange: A's block arrives as nS row pieces and B's as mS
    // K-row pieces, one of each already local; each tile broadcasts its own
    // pieces to the other users once (the exchange multicasts).
    const std::size_t aLocal = part(mb, 1, nS).minSize() * kb;
    const std::size_t bLocal = part(kb, 1, mS).minSize() * nb;
    const std::size_t aIn = mb * kb - aLocal, bIn = kb * nb - bLocal;
    const std::size_t aOut = nS > 1 ? part(mb, 1, nS).maxSize() * kb : 0;
    const std::size_t bOut = mS > 1 ? part(kb, 1, mS).maxSize() * nb : 0;
    // A pair sharing a block receives at once all of it but the two pieces
    // its own tiles hold, at twice the rate: those bytes count half.
    std::size_t shared = 0;
    if (order == Innermost::N)
      shared = mb * kb - std::min(mb * kb, 2 * aOut);
    else if (order == Innermost::M)
      shared = kb * nb - std::min(kb * nb, 2 * bOut);
    p.exchangeCycles =
        exchange(gb * eb * std::max(aIn + bIn - shared / 2, aOut + bOut));
    // One sync per superstep: a compute set fed by an exchange shares its
    // sync (as the compiler's cost model charges it).
    p.computeCycles =
        gb * cost::computeCycles(t_, blockWorkerCycles(cost_, mb, kb, nb), 1) +
        (p.exchangeCycles ? 0 : sync);
    std::size_t partials = 0, reduceTemps = 0;
    if (reduces) {
      const Partition r = part(mb * nb, 8 / pb, kS);
      const std::size_t in = (kS - 1) * r.maxSize();
      const std::size_t out = mb * nb - r.minSize();
      p.reduceExchangeCycles = exchange(gb * pb * std::max(in, out));
      p.reduceCycles =
          gb * cost::computeCycles(t_,
                                   reduceWorkerCycles(cost_, types_.partials,
                                                      r.maxSize(), kS,
                                                      accumulate_),
                                   1) +
          (p.reduceExchangeCycles ? 0 : sync);
      partials = gb * mb * nb * pb;
      reduceTemps = gb * in * pb;
    }
    cand.tempBytes =
        std::max(gb * (aIn + bIn) * eb + partials, partials + reduceTemps);
    cand.fits = cand.tempBytes <= memory_;
    return cand;
  }

private:
  // Calls f(S) for S = 1, 2, ... up to min(units, limit), skipping an S whose
  // largest part is no smaller than the previous one's.
  template <typename F>
  static void forEachSplit(std::size_t length, std::size_t grain,
                           unsigned limit, F &&f) {
    const std::size_t units = ceilDiv(length, grain);
    std::size_t last = 0;
    for (unsigned s = 1; s <= limit && s <= units; ++s) {
      const std::size_t block = ceilDiv(units, s);
      if (s > 1 && block == last)
        continue;
      last = block;
      f(s);
    }
  }

  static bool better(const Candidate &a, const Candidate &b) {
    if (a.fits != b.fits)
      return a.fits;
    if (!a.fits)
      return a.tempBytes < b.tempBytes;
    const std::uint64_t ca = a.cost.totalCycles(), cb = b.cost.totalCycles();
    if (ca != cb)
      return ca < cb;
    const unsigned ta = a.gS * a.mS * a.nS * a.kS;
    const unsigned tb = b.gS * b.mS * b.nS * b.kS;
    if (ta != tb)
      return ta < tb;
    if (a.kS != b.kS)
      return a.kS < b.kS;
    return a.innermost < b.innermost;
  }

  const Target &t_;
  Types types_;
  std::size_t g_, m_, k_, n_;
  bool accumulate_;
  CostInputs cost_;
  std::size_t memory_;
};

} // namespace

BlockIndex Plan::block(unsigned tile) const {
  BlockIndex b;
  auto take = [&tile](unsigned parts) {
    const unsigned v = tile % parts;
    tile /= parts;
    return v;
  };
  switch (innermost) {
  case Innermost::N:
    b.j = take(n.parts), b.kk = take(k.parts), b.i = take(m.parts);
    break;
  case Innermost::M:
    b.i = take(m.parts), b.kk = take(k.parts), b.j = take(n.parts);
    break;
  default:
    b.kk = take(k.parts), b.j = take(n.parts), b.i = take(m.parts);
  }
  b.gi = tile;
  return b;
}

Range Partition::operator()(unsigned p) const {
  const std::size_t units = ceilDiv(length, grain);
  const std::size_t b = std::size_t(p) * units / parts * grain;
  const std::size_t e = std::size_t(p + 1) * units / parts * grain;
  return {std::min(b, length), std::min(e, length)};
}

std::size_t Partition::maxSize() const {
  const std::size_t units = ceilDiv(length, grain);
  return std::min(length, ceilDiv(units, parts) * grain);
}

std::size_t Partition::minSize() const {
  std::size_t smallest = length;
  // The smallest part is the last (it may be clipped) or one of size
  // floor(units / parts) grains.
  const std::size_t units = ceilDiv(length, grain);
  smallest = std::min(smallest, units / parts * grain);
  return std::min(smallest, (*this)(parts - 1).size());
}

Options parseOptions(const OptionFlags &flags, Type inputType) {
  Options o;
  OptionParser parser("matMul");
  parser.addEnum("partialsType", o.partialsType,
                 {{"float", FLOAT}, {"half", HALF}});
  parser.add("availableMemoryProportion", o.availableMemoryProportion);
  // PopLibs' tuning of its convolution-based plan and vertices.
  parser.addIgnored(
      "fullyConnectedPass", "the plan depends on the shapes, not the pass",
      {"NONE", "INFERENCE_FWD", "TRAINING_FWD", "TRAINING_BWD", "TRAINING_WU"});
  for (const char *key : {"inputRHSIsPreArranged", "use128BitConvUnitLoad",
                          "enableMultiStageReduce", "enableFastReduce",
                          "remapOutputTensor", "gatherOutput"})
    parser.addIgnored(key, "it tunes PopLibs' vertices, not Tessera's",
                      {"true", "false"});
  parser.addIgnored("planConstraints", "Tessera's planner takes none");
  parser.parse(flags);
  if (!(o.availableMemoryProportion > 0 && o.availableMemoryProportion <= 1))
    throw OptionError("matMul option availableMemoryProportion is " +
                      std::to_string(o.availableMemoryProportion) +
                      "; give a share of tile memory in (0, 1], such as 0.6");
  if (inputType == FLOAT && o.partialsType == HALF)
    throw TypeError("matMul: partialsType \"half\" needs half inputs; the AMP "
                    "unit accumulates float inputs in float only (leave "
                    "partialsType at \"float\" or cast the inputs to half)");
  return o;
}

AmpShape ampShape(const Target &target, Type input, Type partials) {
  AmpShape s;
  s.macs = target.getMacsPerCyclePerTile(input, partials);
  s.kGrain = target.getVectorWidth(input);
  s.nGrain = std::max(1u, s.macs / s.kGrain);
  return s;
}

CostInputs costInputs(const Target &target, Type input, Type partials) {
  CostInputs c;
  c.amp = ampShape(target, input, partials);
  c.matMulWorkerCycles = target.costs().matMulWorkerCycles;
  c.reduceWorkerCycles = target.costs().reduceWorkerCycles;
  c.reduceWorkerCyclesPerVector = target.costs().reduceWorkerCyclesPerVector;
  c.workers = target.getNumWorkerContexts();
  c.dataPathBytes = target.getDataPathWidth() / 8;
  return c;
}

std::uint64_t blockWorkerCycles(const CostInputs &c, std::size_t m,
                                std::size_t k, std::size_t n) {
  // The AMP's tile-cycle count, shared by the workers: a MultiVertex costs
  // workers x its worker cycles, so this gives tile cycles = MACs / rate.
  const std::uint64_t macs =
      std::uint64_t(m) * roundUp(n, c.amp.nGrain) * roundUp(k, c.amp.kGrain);
  const std::uint64_t perCycle = std::uint64_t(c.amp.macs) * c.workers;
  return c.matMulWorkerCycles + (macs + perCycle - 1) / perCycle;
}

std::uint64_t reduceWorkerCycles(const CostInputs &c, Type partialsType,
                                 std::size_t n, std::size_t numPartials,
                                 bool accumulate) {
  const std::size_t width = c.dataPathBytes / typeSize(partialsType);
  const std::uint64_t vectors =
      ceilDiv(n, width) * (numPartials + (accumulate ? 1 : 0));
  return c.reduceWorkerCycles +
         ceilDiv(vectors, c.workers) * c.reduceWorkerCyclesPerVector;
}

Plan makePlan(const Target &target, const Types &types, std::size_t groups,
              std::size_t m, std::size_t k, std::size_t n,
              const Options &options, bool accumulate) {
  Search search(target, types, groups, m, k, n, options, accumulate);
  const Candidate c = search.best();
  const AmpShape amp = ampShape(target, types.input, types.partials);
  Plan plan;
  plan.types = types;
  plan.accumulate = accumulate;
  plan.g = Partition{groups, 1, c.gS};
  plan.m = Partition{m, 1, c.mS};
  plan.n = Partition{n, amp.nGrain, c.nS};
  plan.k = Partition{k, amp.kGrain, c.kS};
  plan.innermost = c.innermost;
  MatMulPlan &s = plan.summary;
  s = c.cost;
  s.groups = groups;
  s.m = m;
  s.k = k;
  s.n = n;
  s.inputType = types.input;
  s.partialsType = types.partials;
  s.outputType = types.output;
  s.groupSplit = c.gS;
  s.mSplit = c.mS;
  s.nSplit = c.nS;
  s.kSplit = c.kS;
  s.groupBlock = plan.g.maxSize();
  s.mBlock = plan.m.maxSize();
  s.nBlock = plan.n.maxSize();
  s.kBlock = plan.k.maxSize();
  s.tilesUsed = c.gS * c.mS * c.nS * c.kS;
  s.pairsShare = c.innermost == Innermost::N   ? 'A'
                 : c.innermost == Innermost::M ? 'B'
                                               : 0;
  s.tempBytesPerTile = c.tempBytes;
  s.fitsMemory = c.fits;
  return plan;
}

} // namespace tessera::ops::matmul

namespace tessera::ops {

std::string MatMulPlan::toString() const {
  std::ostringstream os;
  os << "matMul ";
  if (groups > 1)
    os << groups << "x";
  os << m << "x" << k << "x" << n << " " << typeName(inputType) << "->"
     << typeName(outputType) << " (" << typeName(partialsType)
     << " partials): split g" << groupSplit << " m" << mSplit << " n" << nSplit
     << " k" << kSplit << " on " << tilesUsed << " tiles, blocks " << mBlock
     << "x" << kBlock << "x" << nBlock;
  if (pairsShare)
    os << ", tile pairs share " << pairsShare;
  if (groups > 1)
    os << " x" << groupBlock << " groups";
  os << ", ~" << totalCycles() << " cycles (exchange " << exchangeCycles
     << ", compute " << computeCycles << ", reduce exchange "
     << reduceExchangeCycles << ", reduce " << reduceCycles << "), "
     << tempBytesPerTile << " temporary bytes per tile"
     << (fitsMemory ? "" : " (over the available memory)");
  return os.str();
}

} // namespace tessera::ops
