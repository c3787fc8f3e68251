// The cost model (DESIGN.md section 6): compute = 6 x the busiest worker on
// the busiest tile plus supervisor overhead; exchange = the busiest tile's
// bytes over the exchange bandwidth (bytes both tiles of an exchange-bus pair
// receive go at twice it); IPU-link and host traffic by their bandwidths; one
// sync per superstep.
#include "CostModel.hpp"

#include "tessera/device/CostFormulas.hpp"
#include "tessera/support/Logging.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace tessera::compiler {
namespace {

// Workers of a tile take vertices longest first, each to the least loaded
// worker; a MultiVertex occupies every worker.
std::uint64_t tileCycles(std::vector<std::pair<std::uint64_t, bool>> &work,
                         const Target &target) {
  const unsigned workers = target.getNumWorkerContexts();
  std::sort(work.begin(), work.end(), std::greater<>());
  std::vector<std::uint64_t> load(workers, 0);
  for (const auto &[cycles, multi] : work) {
    if (multi) {
      const std::uint64_t top = *std::max_element(load.begin(), load.end());
      std::fill(load.begin(), load.end(), top + cycles);
    } else {
      *std::min_element(load.begin(), load.end()) += cycles;
    }
  }
  return cost::computeCycles(
      target, *std::max_element(load.begin(), load.end()), work.size());
}

class ComputeEstimator {
public:
  explicit ComputeEstimator(State &s) : s_(s) {}

  // Estimates every vertex, then every compute set once.
  void run() {
    estimateVertices();
    for (std::size_t i = 0; i < s_.drafts.size(); ++i) {
      const Draft &d = s_.drafts[i];
      StepEstimate &e = s_.exe.estimates[i];
      const auto &c = s_.target.costs();
      const unsigned ipus = s_.target.getNumIPUs();
      switch (d.step.kind) {
      case StepKind::Compute:
        e = computeSet(d.computeSet);
        break;
      case StepKind::Sync:
        e.ipuCycles.assign(
            ipus, cost::syncCycles(s_.target, ipus > 1 || d.step.c != 0));
        break;
      case StepKind::Exchange:
      case StepKind::CrossReplica:
      case StepKind::StreamIn:
      case StepKind::StreamOut:
      case StepKind::RemoteIn:
      case StepKind::RemoteOut:
      case StepKind::Print:
        break; // estimated from their traffic while lowering
      default:
        e.ipuCycles.assign(ipus, c.controlFlowCycles);
      }
    }
  }

private:
  void estimateVertices() {
    const VertexRegistry &reg = *s_.data.registry;
    std::set<std::string> warned;
    VertexInstanceShape shape;
    std::size_t k = 0;
    for (unsigned cs = 0; cs < s_.csPlans.size(); ++cs) {
      if (!s_.csPlans[cs].planned)
        continue;
      for (unsigned v : s_.data.computeSets[cs].vertices) {
        VertexInstance &inst = s_.exe.vertices[k++];
        const VertexData &vd = s_.data.vertices[v];
        if (vd.perfEstimate) {
          inst.cycles = *vd.perfEstimate;
          continue;
        }
        // The sizes resolveSteps gave the vertex's fields: a state's
        // count, or each connected tensor's elements. One shape object
        // serves every vertex, so its lists are not reallocated.
        shape.vertexClass = &vd.vertexClass->info;
        const auto &fields = vd.vertexClass->info.fields;
        shape.fieldSizes.resize(fields.size());
        for (unsigned f = 0; f < fields.size(); ++f) {
          std::vector<std::uint32_t> &sizes = shape.fieldSizes[f];
          sizes.clear();
          const FieldValue &fv = s_.exe.fields[inst.firstField + f];
          if (fields[f].direction == codelet::Direction::State ||
              fields[f].shape == codelet::Shape::Scalar ||
              fields[f].shape == codelet::Shape::Vector)
            sizes.push_back(fv.size);
          else
            for (std::uint32_t i = 0; i < fv.size; ++i)
              sizes.push_back(s_.exe.spans[fv.addr + i].size);
        }
        bool usedDefault = false;
        inst.cycles =
            reg.estimateCycles(*vd.vertexClass, shape, s_.target, &usedDefault);
        if (usedDefault && warned.insert(vd.vertexClass->info.name).second)
          logging::warn("vertex class {} has no cycle estimator; using the "
                        "default estimate (set one with "
                        "graph.setPerfEstimate)",
                        vd.vertexClass->info.name);
      }
    }
  }

  StepEstimate computeSet(int cs) {
    auto [it, added] = cache_.try_emplace(cs);
    if (!added)
      return it->second;
    StepEstimate &e = it->second;
    const unsigned perIpu = s_.target.getTilesPerIPU();
    e.ipuCycles.assign(s_.target.getNumIPUs(), 0);
    const ComputeSetPlan &plan = s_.csPlans[cs];
    const std::size_t n = s_.data.computeSets[cs].vertices.size();
    std::map<unsigned, std::vector<std::pair<std::uint64_t, bool>>> perTile;
    for (std::size_t i = 0; i < n; ++i) {
      const VertexInstance &inst = s_.exe.vertices[plan.firstVertex + i];
      const bool multi = s_.data.vertices[s_.data.computeSets[cs].vertices[i]]
                             .vertexClass->info.multiVertex;
      perTile[inst.tile].emplace_back(inst.cycles, multi);
    }
    e.firstTileCycle = static_cast<std::uint32_t>(s_.exe.tileCycles.size());
    std::vector<bool> touched(e.ipuCycles.size(), perTile.empty());
    for (auto &[tile, work] : perTile) {
      touched[tile / perIpu] = true;
      const std::uint64_t cycles = tileCycles(work, s_.target);
      s_.exe.tileCycleTiles.push_back(tile);
      s_.exe.tileCycles.push_back(cycles);
      auto &ipu = e.ipuCycles[tile / perIpu];
      ipu = std::max(ipu, cycles);
    }
    e.numTileCycles =
        static_cast<std::uint32_t>(s_.exe.tileCycles.size()) - e.firstTileCycle;
    // A superstep is compute, sync, exchange (Graphcore's IPU Programmer's
    // Guide): one sync per compute set, on the IPUs it runs on (each IPU
    // syncs its own tiles; an IPU without vertices skips the compute set).
    // The exchange that gathers a compute set's operands is charged that
    // sync; a compute set without one is.
    if (plan.gathers.empty() && plan.costOnlyGathers.empty())
      for (std::size_t i = 0; i < e.ipuCycles.size(); ++i)
        if (touched[i])
          e.ipuCycles[i] += cost::syncCycles(s_.target, false);
    return e;
  }

  State &s_;
  std::map<int, StepEstimate> cache_;
};

} // namespace

StepEstimate estimateTraffic(const State &s, const Traffic &t) {
  const Target &tg = s.target;
  const auto &c = tg.costs();
  const unsigned perIpu = tg.getTilesPerIPU();
  StepEstimate e;
  e.ipuCycles.assign(tg.getNumIPUs(), 0);
  std::vector<bool> touched(tg.getNumIPUs(), false);
  for (unsigned tile : t.touched) {
    // Bytes a tile's bus partner also receives arrive at twice the rate, so
    // they count half.
    const std::uint64_t in = t.in[tile] - t.sharedIn[tile] / 2;
    const std::uint64_t cycles =
        cost::exchangeTransferCycles(tg, std::max(in, t.out[tile])) +
        cost::transferCycles(t.onTile[tile], c.copyBytesPerWorkerCycle);
    auto &ipu = e.ipuCycles[tile / perIpu];
    ipu = std::max(ipu, cycles);
    touched[tile / perIpu] = true;
    e.bytesExchanged += std::max(t.in[tile], t.out[tile]) + t.onTile[tile];
  }
  bool crossIpu = false;
  for (unsigned i = 0; i < tg.getNumIPUs(); ++i) {
    const std::uint64_t link = std::max(t.ipuIn[i], t.ipuOut[i]);
    if (link) {
      e.ipuCycles[i] += cost::ipuLinkCycles(tg, link);
      crossIpu = true;
    }
  }
  const std::uint64_t host =
      cost::hostTransferCycles(tg, t.hostBytes, t.remoteBytes);
  for (unsigned i = 0; i < tg.getNumIPUs(); ++i) {
    if (!touched[i])
      continue;
    e.ipuCycles[i] =
        host + cost::exchangeStepCycles(tg, e.ipuCycles[i], crossIpu);
  }
  return e;
}

void estimateSteps(State &s) { ComputeEstimator(s).run(); }

} // namespace tessera::compiler
