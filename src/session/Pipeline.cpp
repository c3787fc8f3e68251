// Pipelined training (Pipeline.hpp): the schedules' ticks, the stage of
// every op, and the device program of one step, unrolled tick by tick so
// each stash slot is a fixed tensor.
#include "Steps.hpp"

#include "tessera/ops/Elementwise.hpp"
#include "tessera/passes/Optimizer.hpp"
#include "tessera/session/Pipeline.hpp"
#include "tessera/support/Error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdint>
#include <map>
#include <numeric>

namespace tessera::session {

std::string_view scheduleName(PipelineSchedule s) {
  switch (s) {
  case PipelineSchedule::Grouped:
    return "Grouped";
  case PipelineSchedule::Interleaved:
    return "Interleaved";
  case PipelineSchedule::Sequential:
    return "Sequential";
  }
  return "?";
}

std::optional<PipelineSchedule> parseSchedule(std::string_view name) {
  const auto lower = [](std::string_view in) {
    std::string out(in);
    for (char &c : out)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  for (PipelineSchedule s :
       {PipelineSchedule::Grouped, PipelineSchedule::Interleaved,
        PipelineSchedule::Sequential})
    if (lower(scheduleName(s)) == lower(name))
      return s;
  return std::nullopt;
}

std::vector<PipelineTick> pipelineTicks(PipelineSchedule schedule,
                                        unsigned stages,
                                        unsigned microBatches) {
  const std::int64_t S = stages, N = microBatches;
  if (S == 0 || N == 0)
    throw OptionError(fmt::format("pipeline: {} stages and {} micro-batches "
                                  "per step; both must be at least 1",
                                  S, N));
  if (schedule != PipelineSchedule::Sequential && N < S)
    throw OptionError(fmt::format(
        "pipeline: the {} schedule needs at least as many micro-batches per "
        "step as stages, so every stage reaches its steady state, but the "
        "gradient accumulation count is {} for {} stages; set it to at least "
        "{} (or use the Sequential schedule)",
        scheduleName(schedule), N, S, S));
  std::vector<PipelineTick> ticks;
  const auto add = [&](PipelineTick t) {
    if (!t.empty())
      ticks.push_back(std::move(t));
  };
  const auto pass = [](std::int64_t s, bool backward, std::int64_t i) {
    return StagePass{unsigned(s), backward, unsigned(i)};
  };
  switch (schedule) {
  case PipelineSchedule::Sequential:
    for (std::int64_t i = 0; i < N; ++i) {
      for (std::int64_t s = 0; s < S; ++s)
        add({pass(s, false, i)});
      for (std::int64_t s = S; s-- > 0;)
        add({pass(s, true, i)});
    }
    break;
  case PipelineSchedule::Grouped:
    for (std::int64_t t = 0; t < N + 2 * S - 2; ++t) {
      PipelineTick f, b;
      for (std::int64_t s = 0; s < S; ++s) {
        if (const std::int64_t i = t - s; i >= 0 && i < N)
          f.push_back(pass(s, false, i));
        if (const std::int64_t i = t - (2 * S - 2 - s); i >= 0 && i < N)
          b.push_back(pass(s, true, i));
      }
      add(std::move(f));
      add(std::move(b));
    }
    break;
  case PipelineSchedule::Interleaved:
    for (std::int64_t t = 0; t < 2 * (N + S - 1); ++t) {
      PipelineTick tick;
      for (std::int64_t s = 0; s < S; ++s) {
        if (const std::int64_t f = t - s; f >= 0 && f % 2 == 0 && f / 2 < N)
          tick.push_back(pass(s, false, f / 2));
        if (const std::int64_t b = t - (2 * S - 1 - s);
            b >= 0 && b % 2 == 0 && b / 2 < N)
          tick.push_back(pass(s, true, b / 2));
      }
      add(std::move(tick));
    }
    break;
  }
  return ticks;
}

namespace detail {
namespace {

using namespace tessera::program;

// Units: a stage, or each concurrent sub-stage of one (its ops annotated
// @ipu(j)), numbered by stage, then sub-stage; each runs on one IPU.
// Program indices: F_u = 2u, B_u = 2u + 1, the weight update 2K (K
// units), and A_u = 2K + 1 + u: B_u's gradient accumulation, run after its
// tick's transfers.
unsigned passProgram(unsigned unit, bool backward) {
  return 2 * unit + (backward ? 1 : 0);
}

bool isUpdateOp(const ir::Module &m, ir::ValueId v) {
  return m.value(v).kind == ir::ValueKind::OpResult &&
         m.producer(v).annotations.weightUpdate;
}

// Every op's unit and every value's: annotated ops keep their stage (and
// sub-stage: @ipu(j), else an operand's of the same stage, else 0); ops
// the passes made without one take their operands' latest unit (forward)
// or earliest (backward); an input or variable belongs to its first
// reader's unit; the weight update's ops take their operands' latest unit,
// so each variable's update runs on its unit's IPU.
struct Stages {
  unsigned count = 0;
  /// Per stage its first unit; first[count] is the number of units.
  std::vector<unsigned> first{0};
  std::vector<unsigned> ofOp, ofValue;
  unsigned units() const { return first.back(); }
  unsigned stageOf(unsigned unit) const {
    return unsigned(std::upper_bound(first.begin(), first.end(), unit) -
                    first.begin()) -
           1;
  }
  bool concurrent(unsigned stage) const {
    return first[stage + 1] - first[stage] > 1;
  }
};

using Units = std::vector<std::optional<unsigned>>;

void countUnits(const ir::Module &m, Stages &st) {
  for (const ir::Op &op : m.ops())
    if (op.annotations.pipelineStage)
      st.count = std::max(st.count, *op.annotations.pipelineStage + 1);
  std::vector<unsigned> subs(st.count, 1);
  for (const ir::Op &op : m.ops())
    if (op.annotations.pipelineStage && op.annotations.ipu)
      subs[*op.annotations.pipelineStage] = std::max(
          subs[*op.annotations.pipelineStage], *op.annotations.ipu + 1);
  for (unsigned n : subs)
    st.first.push_back(st.first.back() + n);
  if (!subs.empty() && *std::max_element(subs.begin(), subs.end()) > 64)
    throw OptionError("session: a pipeline stage has more than 64 concurrent "
                      "sub-stages (@ipu annotations); use at most 64");
}

// The gradient of a value that several concurrent sub-stages read is the
// sum of their gradients: an op adding those (a join, made by autodiff in
// the stage) can run in none of the sub-stages beside the others, so it
// runs in its earliest reader's unit (the backward pass of the stage that
// made the value). A concurrent stage's sub-stages share no weights: a
// join that no earlier stage reads is an error.
void placeJoins(const ir::Module &m, Stages &st, Units &value) {
  const auto &ops = m.ops();
  std::vector<std::uint64_t> mask(m.numValues(), 0);
  std::vector<bool> join(ops.size(), false);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const ir::Op &op = ops[i];
    const unsigned s = st.stageOf(st.ofOp[i]);
    if (!op.annotations.backward || op.annotations.weightUpdate ||
        !st.concurrent(s))
      continue;
    std::uint64_t mk = 0;
    for (ir::ValueId v : op.operands) {
      if (m.value(v).kind != ir::ValueKind::OpResult)
        continue;
      const std::size_t p = m.value(v).def;
      if (join[p])
        mk |= mask[v];
      else if (ops[p].annotations.backward &&
               !ops[p].annotations.weightUpdate && st.stageOf(st.ofOp[p]) == s)
        mk |= std::uint64_t(1) << (st.ofOp[p] - st.first[s]);
    }
    join[i] = std::popcount(mk) > 1;
    for (ir::ValueId r : op.results)
      mask[r] = mk;
  }
  std::vector<std::vector<std::size_t>> readers(m.numValues());
  for (std::size_t i = 0; i < ops.size(); ++i)
    for (ir::ValueId v : ops[i].operands)
      readers[v].push_back(i);
  for (std::size_t i = ops.size(); i-- > 0;) {
    if (!join[i])
      continue;
    const unsigned s = st.stageOf(st.ofOp[i]);
    std::optional<unsigned> unit;
    for (ir::ValueId r : ops[i].results)
      for (std::size_t j : readers[r])
        if (!ops[j].annotations.weightUpdate)
          unit = std::min(unit.value_or(st.ofOp[j]), st.ofOp[j]);
    if (!unit || st.stageOf(*unit) >= s)
      throw UnsupportedError(fmt::format(
          "session: op {} ({}) adds up gradients of the concurrent sub-stages "
          "of pipeline stage {}, and no earlier stage reads the sum: "
          "concurrent sub-stages take the same inputs but share no weights "
          "or values; give each sub-stage its own variables",
          i, ir::opKindName(ops[i].kind), s));
    st.ofOp[i] = *unit;
    for (ir::ValueId r : ops[i].results)
      value[r] = *unit;
  }
}

Stages assignStages(const ir::Module &m) {
  Stages st;
  countUnits(m, st);
  const auto &ops = m.ops();
  Units value(m.numValues());
  st.ofOp.assign(ops.size(), 0);
  const auto span = [&](const ir::Op &op) {
    std::optional<unsigned> lo, hi;
    for (ir::ValueId v : op.operands)
      if (value[v]) {
        lo = std::min(lo.value_or(*value[v]), *value[v]);
        hi = std::max(hi.value_or(*value[v]), *value[v]);
      }
    return std::make_pair(lo, hi);
  };
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const ir::Op &op = ops[i];
    if (op.annotations.weightUpdate)
      continue;
    const auto [lo, hi] = span(op);
    const std::optional<unsigned> near = op.annotations.backward ? lo : hi;
    unsigned u = 0;
    if (const auto s = op.annotations.pipelineStage) {
      if (op.annotations.ipu)
        u = st.first[*s] + *op.annotations.ipu;
      else
        u = near && st.stageOf(*near) == *s ? *near : st.first[*s];
    } else {
      u = near.value_or(op.annotations.backward ? st.units() - 1 : 0);
    }
    st.ofOp[i] = u;
    for (ir::ValueId r : op.results)
      value[r] = u;
    for (ir::ValueId v : op.operands)
      if (m.value(v).kind != ir::ValueKind::OpResult)
        value[v] = std::min(value[v].value_or(u), u);
  }
  placeJoins(m, st, value);
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].annotations.weightUpdate) {
      st.ofOp[i] = span(ops[i]).second.value_or(0);
      for (ir::ValueId r : ops[i].results)
        value[r] = st.ofOp[i];
    }
  for (const auto &v : value)
    st.ofValue.push_back(v.value_or(0));
  return st;
}

class PipelineBuilder {
public:
  PipelineBuilder(const ir::Module &module, const Config &config,
                  const RunSpec &spec, Graph &graph)
      : module_(module), config_(config), spec_(spec), graph_(graph),
        stages_(assignStages(module)), S_(stages_.count), K_(stages_.units()),
        U_(2 * K_) {}

  Sequence build(ir::LoweredModule &lowered);

private:
  void checkModule();
  void mapUnits();
  /// "stage s forward" or "stage s backward", for program \p p.
  std::string passName(unsigned p) const {
    return fmt::format("stage {} {}", stages_.stageOf(p / 2),
                       p % 2 ? "backward" : "forward");
  }
  /// The IPU of program \p p (a pass, or an accumulation).
  unsigned ipuOf(unsigned p) const { return mapping_[passOf(p) / 2]; }
  void placeOps(ir::Module &m) const;
  void timeTicks();
  void checkOrder() const;
  std::size_t depthOf(unsigned from, unsigned to) const;
  bool overwrites(unsigned from, unsigned to) const;
  std::size_t depth(unsigned from, unsigned to) const {
    return to == U_ ? 1 : depths_[passOf(from)][passOf(to)];
  }
  unsigned programOfOp(std::size_t i) const;
  /// The pass whose tick runs program \p p (B_s for A_s).
  unsigned passOf(unsigned p) const {
    return p > U_ ? 2 * (p - U_ - 1) + 1 : p;
  }
  void findAccumulations();
  void checkUpdates() const;
  void planForwards(const ir::LoweredModule &lowered);
  const Tensor &destination(std::size_t b, unsigned microBatch,
                            const ir::LoweredModule &lowered) const;
  std::string passLabel(unsigned prog, unsigned microBatch) const;
  void addPass(Sequence &passes, unsigned prog, unsigned microBatch,
               const ir::LoweredModule &lowered);
  bool needsPending(std::size_t k, const ir::LoweredModule &lowered) const;
  Sequence tick(std::size_t k, const ir::LoweredModule &lowered);

  const ir::Module &module_;
  const Config &config_;
  const RunSpec &spec_;
  Graph &graph_;
  Stages stages_;
  unsigned S_, K_, U_, N_ = 1;
  /// Per unit, its IPU.
  std::vector<unsigned> mapping_;
  /// Per op: whether it runs in its backward pass's accumulation A_s.
  std::vector<bool> accumulation_;
  std::vector<PipelineTick> ticks_;
  /// [program][micro-batch] -> tick.
  std::vector<std::vector<std::size_t>> tickOf_;
  /// [program][micro-batch] -> its place among its tick's passes.
  std::vector<std::vector<std::size_t>> orderOf_;
  /// [from][to] -> depthOf(from, to), for the passes' programs: lowering
  /// asks for every operand read across programs.
  std::vector<std::vector<std::size_t>> depths_;
  std::vector<Sequence> programs_;
  /// Per program: (stream, tensor) copies before it and after it, and the
  /// update copies after it.
  std::vector<std::vector<std::pair<DataStream, Tensor>>> feeds_;
  std::vector<std::vector<std::pair<Tensor, DataStream>>> outfeeds_;
  std::vector<std::vector<std::pair<Tensor, Tensor>>> updates_;
  /// Per boundary: its stash slots (none when the boundary tensor is the
  /// only one needed).
  std::vector<std::vector<Tensor>> slots_;
  /// Per boundary: the boundaries whose tensors it fills from its own once
  /// its reading pass pops it (values another IPU reads in several passes
  /// cross the IPU-links once).
  std::vector<std::vector<std::size_t>> forwards_;
  /// Per boundary: whether another boundary forwards it.
  std::vector<bool> forwarded_;
  /// Transfers not yet made, and the ticks whose passes made them.
  std::vector<std::pair<Tensor, Tensor>> pending_;
  std::vector<std::size_t> pendingTicks_;
};

void PipelineBuilder::checkModule() {
  if (!module_.updateCondition())
    throw OptionError(fmt::format(
        "session: module \"{}\" has {} pipeline stages but does not "
        "accumulate gradients; a pipeline runs the micro-batches of a step "
        "through its stages and updates the weights once after them: set a "
        "gradient accumulation count of at least {}",
        module_.name(), S_, S_));
  N_ = module_.updatePeriod();
  ticks_ = pipelineTicks(config_.pipeline.schedule, S_, N_);
  if (spec_.stepsPerExecution % N_ != 0)
    throw OptionError(fmt::format(
        "session: {} steps per execution is not a whole number of pipeline "
        "steps of {} micro-batches (the gradient accumulation count); make "
        "it a multiple of {}",
        spec_.stepsPerExecution, N_, N_));
  mapUnits();
}

// Per unit its IPU: deviceMapping[s] lists one IPU per sub-stage of stage
// s; without a mapping, the units on IPUs 0, 1, 2, ... in order.
void PipelineBuilder::mapUnits() {
  const auto &mapping = config_.pipeline.deviceMapping;
  if (mapping.empty()) {
    mapping_.resize(K_);
    std::iota(mapping_.begin(), mapping_.end(), 0u);
  } else if (mapping.size() != S_) {
    throw OptionError(fmt::format(
        "session: the device mapping lists {} IPUs for {} pipeline stages; "
        "give one IPU per stage",
        mapping.size(), S_));
  }
  for (unsigned s = 0; s < S_ && !mapping.empty(); ++s) {
    const unsigned subs = stages_.first[s + 1] - stages_.first[s];
    if (mapping[s].ipus.size() != subs)
      throw OptionError(fmt::format(
          "session: the device mapping gives pipeline stage {} {} IPU{}, but "
          "it has {} concurrent sub-stage{} (@ipu annotations); list one IPU "
          "per sub-stage, as {{1, 2}}",
          s, mapping[s].ipus.size(), mapping[s].ipus.size() == 1 ? "" : "s",
          subs, subs == 1 ? "" : "s"));
    mapping_.insert(mapping_.end(), mapping[s].ipus.begin(),
                    mapping[s].ipus.end());
  }
  for (unsigned u = 0; u < K_; ++u) {
    if (mapping_[u] < config_.autoSelectIpus)
      continue;
    const unsigned s = stages_.stageOf(u);
    throw OptionError(fmt::format(
        "session: the device mapping puts {}stage {} on IPU {}, but the model "
        "has {} IPU{} (autoSelectIpus); select at least {} IPUs or map the "
        "stage to IPU 0 to {}",
        stages_.concurrent(s)
            ? fmt::format("sub-stage {} of ", u - stages_.first[s])
            : "",
        s, mapping_[u], config_.autoSelectIpus,
        config_.autoSelectIpus == 1 ? "" : "s", mapping_[u] + 1,
        config_.autoSelectIpus - 1));
  }
}

unsigned PipelineBuilder::programOfOp(std::size_t i) const {
  const ir::Op &op = module_.ops()[i];
  if (op.annotations.weightUpdate)
    return U_;
  if (accumulation_[i])
    return U_ + 1 + stages_.ofOp[i];
  return passProgram(stages_.ofOp[i], op.annotations.backward);
}

// A backward pass's gradient accumulation (the elementwise ops computing
// the accumulators' next values, read only by the weight update of their
// stage, and the elementwise ops only those read, all reading only that
// pass's values) sends nothing to another pass: it runs after its tick's
// transfers (program A_s), so the next stage's pass need not wait for it,
// as the sharded program's IPUs accumulate in parallel at the end of a
// micro-batch. The weights' gradients (matmuls, reductions) stay in the
// pass, where the sharded program computes them too: Sequential then costs
// what sharded execution does per micro-batch.
void PipelineBuilder::findAccumulations() {
  const auto &ops = module_.ops();
  accumulation_.assign(ops.size(), false);
  std::vector<std::vector<std::size_t>> readers(module_.numValues());
  for (std::size_t i = 0; i < ops.size(); ++i)
    for (ir::ValueId v : ops[i].operands)
      readers[v].push_back(i);
  std::vector<bool> output(module_.numValues(), false);
  for (const std::string &o : spec_.outfeeds)
    output[module_.output(o)] = true;
  std::vector<bool> accumulator(module_.numValues(), false);
  for (const ir::VariableRecord &u : module_.updates())
    accumulator[u.value] = true;
  for (std::size_t i = ops.size(); i-- > 0;) {
    const ir::Op &op = ops[i];
    if (!op.annotations.backward || op.annotations.weightUpdate)
      continue;
    const ir::OpClass cls = ir::opClass(op.kind);
    bool tail = !op.results.empty() && cls != ir::OpClass::Other;
    for (ir::ValueId r : op.results) {
      // Read by an op of its tail, or an accumulator's next value that
      // its stage's weight update reads.
      bool any = accumulator[r];
      tail = tail && !output[r];
      for (std::size_t j : readers[r]) {
        const bool update = ops[j].annotations.weightUpdate && accumulator[r] &&
                            stages_.ofOp[j] == stages_.ofOp[i];
        any = any || accumulation_[j];
        tail = tail && (update || (accumulation_[j] &&
                                   stages_.ofOp[j] == stages_.ofOp[i]));
      }
      tail = tail && any;
    }
    // Reading only its own pass's values, variables and constants: a
    // value of another pass would need its boundary filled for this
    // program too, and could be replaced by the tick's transfers.
    for (ir::ValueId v : op.operands) {
      const ir::ValueInfo &info = module_.value(v);
      if (info.kind == ir::ValueKind::Input)
        tail = false;
      else if (info.kind == ir::ValueKind::OpResult) {
        const ir::Op &p = ops[info.def];
        tail = tail && p.annotations.backward && !p.annotations.weightUpdate &&
               stages_.ofOp[info.def] == stages_.ofOp[i];
      }
    }
    accumulation_[i] = tail;
  }
}

// Each op on its unit's IPU; an input or variable annotated @ipu(j) (made
// in a sub-stage's scope) on its unit's IPU too, not on IPU j.
void PipelineBuilder::placeOps(ir::Module &m) const {
  for (std::size_t i = 0; i < m.ops().size(); ++i)
    m.mutableOps()[i].annotations.ipu = mapping_[stages_.ofOp[i]];
  for (ir::ValueId v = 0; v < m.numValues(); ++v)
    if (m.value(v).kind != ir::ValueKind::OpResult && m.value(v).ipu)
      m.mutableValue(v).ipu = mapping_[stages_.ofValue[v]];
}

void PipelineBuilder::timeTicks() {
  tickOf_.assign(U_, std::vector<std::size_t>(N_, 0));
  orderOf_.assign(U_, std::vector<std::size_t>(N_, 0));
  for (std::size_t t = 0; t < ticks_.size(); ++t) {
    std::size_t order = 0;
    for (const StagePass &p : ticks_[t])
      for (unsigned u = stages_.first[p.stage]; u < stages_.first[p.stage + 1];
           ++u) {
        tickOf_[passProgram(u, p.backward)][p.microBatch] = t;
        orderOf_[passProgram(u, p.backward)][p.microBatch] = order++;
      }
  }
  depths_.assign(U_, std::vector<std::size_t>(U_, 1));
  for (unsigned from = 0; from < U_; ++from)
    for (unsigned to = 0; to < U_; ++to)
      depths_[from][to] = depthOf(from, to);
}

// A pass reads values of passes that run before it on the same
// micro-batch; a stage reading a later stage's value cannot be scheduled,
// nor a concurrent sub-stage one of the sub-stages beside it.
void PipelineBuilder::checkOrder() const {
  const auto &ops = module_.ops();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const unsigned to = programOfOp(i);
    if (to == U_)
      continue;
    for (ir::ValueId v : ops[i].operands) {
      const ir::ValueKind kind = module_.value(v).kind;
      if (kind == ir::ValueKind::Input &&
          tickOf_[passOf(to)][0] ==
              tickOf_[passProgram(stages_.ofValue[v], false)][0] &&
          passOf(to) != passProgram(stages_.ofValue[v], false))
        throw UnsupportedError(fmt::format(
            "session: input {} is read by the concurrent sub-stages of "
            "pipeline stage {} on IPUs {} and {}; a pipeline feeds an input "
            "to one IPU: compute the sub-stages' arguments in a stage before "
            "them",
            module_.describe(v), stages_.stageOf(stages_.ofValue[v]),
            mapping_[stages_.ofValue[v]], ipuOf(to)));
      if (kind != ir::ValueKind::OpResult)
        continue;
      const unsigned from = programOfOp(module_.value(v).def);
      if (passOf(from) != passOf(to) &&
          tickOf_[passOf(to)][0] == tickOf_[passOf(from)][0])
        throw ir::IrError(fmt::format(
            "session: op {} ({}) on IPU {} in {} reads {} from the concurrent "
            "sub-stage on IPU {}, which runs beside it; concurrent sub-stages "
            "share no values: compute it in an earlier stage",
            i, ir::opKindName(ops[i].kind), ipuOf(to), passName(passOf(to)),
            module_.describe(v), ipuOf(from)));
      if (passOf(from) != passOf(to) &&
          tickOf_[passOf(to)][0] <= tickOf_[passOf(from)][0])
        throw ir::IrError(fmt::format(
            "session: op {} ({}) in {} reads {} from {}, which runs after it "
            "in the pipeline; a forward stage can only use values of itself "
            "or earlier stages: move the op to stage {} or later",
            i, ir::opKindName(ops[i].kind), passName(passOf(to)),
            module_.describe(v), passName(passOf(from)),
            stages_.stageOf(passOf(from) / 2)));
    }
  }
}

// How many micro-batches of a value made by \p from must be kept for
// \p to: those whose transfer (at the end of their tick) comes before the
// tick in which \p to reads the oldest of them.
std::size_t PipelineBuilder::depthOf(unsigned from, unsigned to) const {
  std::size_t d = 1;
  for (std::size_t i = 0; i < N_; ++i) {
    std::size_t k = 0;
    while (i + k < N_ && tickOf_[from][i + k] < tickOf_[to][i])
      ++k;
    d = std::max(d, k);
  }
  return d;
}

// Whether \p from runs for micro-batch i + 1 before \p to reads micro-batch
// i in the same tick (Grouped's F_s(i + 1) before F_{s+1}(i)): on one IPU,
// \p to must then read a copy made at the end of the tick before, not the
// value where it lies.
bool PipelineBuilder::overwrites(unsigned from, unsigned to) const {
  if (to == U_)
    return false;
  from = passOf(from);
  to = passOf(to);
  for (std::size_t i = 0; i + 1 < N_; ++i)
    if (tickOf_[from][i + 1] == tickOf_[to][i] &&
        orderOf_[from][i + 1] < orderOf_[to][i])
      return true;
  return false;
}

// A variable that a pass updates every micro-batch must be read by that
// pass alone: another pass would see it a varying number of micro-batches
// later (the running-mean accumulation's counter, for one).
void PipelineBuilder::checkUpdates() const {
  const auto &ops = module_.ops();
  for (const ir::VariableRecord &u : module_.updates()) {
    if (isUpdateOp(module_, u.value) ||
        module_.value(u.value).kind != ir::ValueKind::OpResult)
      continue;
    const unsigned writer = programOfOp(module_.value(u.value).def);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const unsigned reader = programOfOp(i);
      if (passOf(reader) == passOf(writer) || reader == U_)
        continue;
      for (ir::ValueId v : ops[i].operands)
        if (v == u.variable)
          throw UnsupportedError(fmt::format(
              "session: variable \"{}\" is updated every micro-batch by {} "
              "and read by {}, which sees it a varying number of "
              "micro-batches later in a pipeline; use the SUM or MEAN "
              "gradient accumulation (RUNNING_MEAN reads a shared counter)",
              module_.value(u.variable).name, passName(passOf(writer)),
              passName(reader)));
    }
  }
}

// A value that passes of one IPU read from another IPU (a stage's input,
// read by its forward and its backward pass) goes over the IPU-links only
// to the first of them; the later ones take it from the first's boundary
// tensor, laid out as theirs (an on-tile copy, no sync), when the first
// pops it. That is later than the transfer would have filled them, never
// early: each later reader's slot for micro-batch i is free by then, as
// the transfer of micro-batch i would have found it.
void PipelineBuilder::planForwards(const ir::LoweredModule &lowered) {
  const auto &bounds = lowered.boundaries();
  forwards_.assign(bounds.size(), {});
  forwarded_.assign(bounds.size(), false);
  const auto before = [&](unsigned a, unsigned b) {
    for (std::size_t i = 0; i < N_; ++i)
      if (tickOf_[a][i] >= tickOf_[b][i])
        return false;
    return true;
  };
  for (std::size_t later = 0; later < bounds.size(); ++later) {
    const ir::Boundary &l = bounds[later];
    if (l.to == U_ || lowered.ipu(l.value) == ipuOf(l.to))
      continue;
    std::optional<std::size_t> first;
    for (std::size_t e = 0; e < bounds.size(); ++e) {
      const ir::Boundary &f = bounds[e];
      if (e == later || f.value != l.value || f.from != l.from || f.to == U_ ||
          ipuOf(f.to) != ipuOf(l.to) || !before(f.to, l.to))
        continue;
      if (!first || before(f.to, bounds[*first].to))
        first = e;
    }
    if (first) {
      forwards_[*first].push_back(later);
      forwarded_[later] = true;
    }
  }
}

// Where micro-batch \p microBatch of boundary \p b is put for its reader.
const Tensor &
PipelineBuilder::destination(std::size_t b, unsigned microBatch,
                             const ir::LoweredModule &lowered) const {
  return slots_[b].empty() ? lowered.boundaries()[b].tensor
                           : slots_[b][microBatch % slots_[b].size()];
}

// One copy per element type of every (source, destination) pair: a single
// exchange (and, across IPUs, a single sync), as Poplar merges the copies
// of a program into one exchange.
void addMergedCopy(Sequence &prog,
                   const std::vector<std::pair<Tensor, Tensor>> &pairs) {
  std::map<Type, std::pair<std::vector<Tensor>, std::vector<Tensor>>> byType;
  for (const auto &[from, to] : pairs) {
    auto &[src, dst] = byType[from.elementType()];
    src.push_back(from.flatten());
    dst.push_back(to.flatten());
  }
  for (const auto &[type, tensors] : byType)
    prog.add(Copy(concat(tensors.first), concat(tensors.second)));
}

// Whether tick \p k must wait for the pending transfers: a pass of it
// reads one of their values, or runs again a program whose values they
// send (and would overwrite them). A tick's transfers otherwise wait for
// the next tick's: one exchange, and one sync of the IPUs, for both
// (Grouped's forward tick sends what only the next step's forward tick
// reads). Made later, they still fill each slot after its last reader and
// before its next.
bool PipelineBuilder::needsPending(std::size_t k,
                                   const ir::LoweredModule &lowered) const {
  if (k >= ticks_.size())
    return true;
  const auto pending = [&](std::size_t tick) {
    return std::find(pendingTicks_.begin(), pendingTicks_.end(), tick) !=
           pendingTicks_.end();
  };
  for (const StagePass &p : ticks_[k]) {
    for (std::size_t t : pendingTicks_)
      for (const StagePass &q : ticks_[t])
        if (q.stage == p.stage && q.backward == p.backward)
          return true;
    for (unsigned u = stages_.first[p.stage]; u < stages_.first[p.stage + 1];
         ++u)
      for (const ir::Boundary &b : lowered.boundaries())
        if (b.to == passProgram(u, p.backward) &&
            pending(tickOf_[passOf(b.from)][p.microBatch]))
          return true;
  }
  return false;
}

// The trace scope of the steps of program \p prog (a pass of a unit) on
// micro-batch \p microBatch (Executable::stepScopes), as `tessera report`
// lists them per IPU.
std::string PipelineBuilder::passLabel(unsigned prog,
                                       unsigned microBatch) const {
  return fmt::format("{}, micro-batch {}, IPU {}", passName(prog), microBatch,
                     ipuOf(prog));
}

// Unit pass \p prog on micro-batch \p i: its stash pops, feeds, program,
// outfeeds and update copies; its transfers become pending. The units of
// a concurrent stage add theirs one after another, each on its own IPU
// (nothing in them syncs the IPUs), so they run side by side.
void PipelineBuilder::addPass(Sequence &passes, unsigned prog, unsigned i,
                              const ir::LoweredModule &lowered) {
  const auto &bounds = lowered.boundaries();
  Sequence pass{DebugContext(passLabel(prog, i))};
  std::vector<std::pair<Tensor, Tensor>> pops;
  for (std::size_t b = 0; b < bounds.size(); ++b) {
    if (bounds[b].to != prog)
      continue;
    const Tensor &at = destination(b, i, lowered);
    if (!slots_[b].empty())
      pops.emplace_back(at, bounds[b].tensor);
    for (std::size_t later : forwards_[b])
      pops.emplace_back(at, destination(later, i, lowered));
  }
  addMergedCopy(pass, pops);
  for (const auto &[stream, tensor] : feeds_[prog])
    pass.add(Copy(stream, tensor));
  pass.add(programs_[prog]);
  for (const auto &[tensor, stream] : outfeeds_[prog])
    pass.add(Copy(tensor, stream));
  for (const auto &[from, to] : updates_[prog])
    pass.add(Copy(from, to));
  passes.add(pass);
  for (std::size_t b = 0; b < bounds.size(); ++b) {
    if (bounds[b].from != prog || forwarded_[b] ||
        (bounds[b].to == U_ && i + 1 != N_))
      continue;
    pending_.emplace_back(lowered.tensor(bounds[b].value),
                          destination(b, i, lowered));
  }
}

Sequence PipelineBuilder::tick(std::size_t k,
                               const ir::LoweredModule &lowered) {
  const PipelineTick &t = ticks_[k];
  Sequence passes;
  pendingTicks_.push_back(k);
  for (const StagePass &p : t)
    for (unsigned u = stages_.first[p.stage]; u < stages_.first[p.stage + 1];
         ++u)
      addPass(passes, passProgram(u, p.backward), p.microBatch, lowered);
  if (needsPending(k + 1, lowered)) {
    addMergedCopy(passes, pending_);
    pending_.clear();
    pendingTicks_.clear();
  }
  // The accumulations belong to their backward passes: the same scope.
  for (const StagePass &p : t)
    for (unsigned u = stages_.first[p.stage];
         p.backward && u < stages_.first[p.stage + 1]; ++u) {
      const unsigned acc = U_ + 1 + u;
      Sequence tail{
          DebugContext(passLabel(passProgram(u, true), p.microBatch))};
      tail.add(programs_[acc]);
      for (const auto &[from, to] : updates_[acc])
        tail.add(Copy(from, to));
      passes.add(tail);
    }
  return passes;
}

Sequence PipelineBuilder::build(ir::LoweredModule &lowered) {
  checkModule();
  findAccumulations();
  timeTicks();
  checkOrder();
  checkUpdates();
  ir::Module m = module_;
  placeOps(m);
  ir::LoweringOptions lowering;
  const std::vector<ir::ValueId> offloaded = offloadedState(m, config_);
  lowering.uninitialised = offloaded;
  lowering.updateInPlace = passes::variableUpdates(m);
  lowering.layoutLike = passes::optimizerState(m);
  for (std::size_t i = 0; i < m.ops().size(); ++i)
    lowering.programOf.push_back(programOfOp(i));
  for (ir::ValueId in : m.inputs())
    lowering.inputProgram[in] = passProgram(stages_.ofValue[in], false);
  // The weight update of every stage reads the hyper-parameters (the
  // learning rate), which lie on one IPU: as boundaries, they go out with
  // the last micro-batch's transfers of their stage's forward pass, rather
  // than as one copy, and one sync, per IPU inside the update.
  for (const ir::HyperParameterRecord &h : m.hyperParameters())
    lowering.inputProgram[h.variable] =
        passProgram(stages_.ofValue[h.variable], false);
  lowering.boundary = [this](unsigned from, unsigned to, bool sameIpu) {
    return !sameIpu || depth(from, to) > 1 || overwrites(from, to);
  };
  programs_.resize(U_ + 1 + K_);
  std::vector<Sequence *> targets;
  for (Sequence &p : programs_)
    targets.push_back(&p);
  lowered = ir::lowerToGraph(m, graph_, targets, lowering);
  for (const ir::Boundary &b : lowered.boundaries()) {
    slots_.emplace_back();
    const std::size_t d = depth(b.from, b.to);
    for (std::size_t k = 0; d > 1 && k < d; ++k)
      slots_.back().push_back(graph_.clone(
          b.tensor, {fmt::format("stash {} of {}", k, m.describe(b.value))}));
  }
  planForwards(lowered);
  feeds_.resize(U_ + 1 + K_);
  outfeeds_.resize(U_ + 1 + K_);
  updates_.resize(U_ + 1 + K_);
  for (const std::string &f : spec_.feeds) {
    const ir::ValueId v = *m.findValue(f);
    const Tensor &t = lowered.tensor(v);
    if (!config_.syntheticData)
      feeds_[lowering.inputProgram.at(v)].emplace_back(
          graph_.addHostToDeviceFIFO(f, t.elementType(), t.numElements()), t);
  }
  for (const std::string &o : spec_.outfeeds) {
    const ir::ValueId v = m.output(o);
    const unsigned prog = m.value(v).kind == ir::ValueKind::OpResult
                              ? programOfOp(m.value(v).def)
                              : 0;
    if (prog == U_)
      throw UnsupportedError(fmt::format(
          "session: output \"{}\" is computed by the weight update, which a "
          "pipeline runs once per step, not per micro-batch; outfeed a value "
          "of the stages instead",
          o));
    const Tensor &t = lowered.tensor(v);
    if (!config_.syntheticData)
      outfeeds_[prog].emplace_back(
          t, graph_.addDeviceToHostFIFO(o, t.elementType(), t.numElements()));
  }
  for (const auto &[var, next] : lowering.updateInPlace) {
    const Tensor &from = lowered.tensor(next), &to = lowered.tensor(var);
    if (from.runs() != to.runs())
      updates_[m.value(next).kind == ir::ValueKind::OpResult
                   ? programOfOp(m.value(next).def)
                   : U_]
          .emplace_back(from, to);
  }
  Sequence step;
  for (std::size_t k = 0; k < ticks_.size(); ++k)
    step.add(tick(k, lowered));
  Sequence update({programs_[U_]});
  for (const auto &[from, to] : updates_[U_])
    update.add(Copy(from, to));
  for (ir::ValueId v : m.resets())
    ops::zero(graph_, lowered.tensor(v), update,
              {"weight_update/reset " + m.value(v).name});
  step.add(Sequence({withOffloadedState(graph_, m, offloaded, lowered, update)},
                    {"weight update"}));
  return step;
}

} // namespace

bool isPipelined(const ir::Module &module) {
  return std::any_of(module.ops().begin(), module.ops().end(),
                     [](const ir::Op &op) {
                       return op.annotations.pipelineStage.has_value();
                     });
}

Sequence pipelinedStep(const ir::Module &module, const Config &config,
                       const RunSpec &spec, Graph &graph,
                       ir::LoweredModule &lowered) {
  return PipelineBuilder(module, config, spec, graph).build(lowered);
}

} // namespace detail
} // namespace tessera::session
