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

// Program indices: F_s = 2s, B_s = 2s + 1, the weight update 2S, and
// A_s = 2S + 1 + s: B_s's gradient accumulation, run after its tick's
// transfers.
unsigned passProgram(unsigned stage, bool backward) {
  return 2 * stage + (backward ? 1 : 0);
}

std::string passName(unsigned program) {
  return fmt::format("stage {} {}", program / 2,
                     program % 2 ? "backward" : "forward");
}

bool isUpdateOp(const ir::Module &m, ir::ValueId v) {
  return m.value(v).kind == ir::ValueKind::OpResult &&
         m.producer(v).annotations.weightUpdate;
}

// Every op's stage and every value's: annotated ops keep theirs; ops the
// passes made without one take their operands' latest stage (forward) or
// earliest (backward); an input or variable belongs to its first reader's
// stage; the weight update's ops take their operands' latest stage, so
// each variable's update runs on its stage's IPU.
struct Stages {
  unsigned count = 0;
  std::vector<unsigned> ofOp, ofValue;
};

Stages assignStages(const ir::Module &m) {
  Stages st;
  const auto &ops = m.ops();
  for (const ir::Op &op : ops)
    if (op.annotations.pipelineStage)
      st.count = std::max(st.count, *op.annotations.pipelineStage + 1);
  std::vector<std::optional<unsigned>> value(m.numValues());
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
    std::optional<unsigned> s = op.annotations.pipelineStage;
    if (!s) {
      const auto [lo, hi] = span(op);
      s = op.annotations.backward ? lo.value_or(st.count - 1) : hi.value_or(0);
    }
    st.ofOp[i] = *s;
    for (ir::ValueId r : op.results)
      value[r] = *s;
    for (ir::ValueId v : op.operands)
      if (m.value(v).kind != ir::ValueKind::OpResult)
        value[v] = std::min(value[v].value_or(*s), *s);
  }
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
        stages_(assignStages(module)), S_(stages_.count), U_(2 * S_) {}

  Sequence build(ir::LoweredModule &lowered);

private:
  void checkModule();
  void placeOps(ir::Module &m) const;
  void timeTicks();
  void checkOrder() const;
  std::size_t depthOf(unsigned from, unsigned to) const;
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
  std::string passLabel(const StagePass &p) const;
  bool needsPending(std::size_t k, const ir::LoweredModule &lowered) const;
  Sequence tick(std::size_t k, const ir::LoweredModule &lowered);

  const ir::Module &module_;
  const Config &config_;
  const RunSpec &spec_;
  Graph &graph_;
  Stages stages_;
  unsigned S_, U_, N_ = 1;
  std::vector<unsigned> mapping_;
  /// Per op: whether it runs in its backward pass's accumulation A_s.
  std::vector<bool> accumulation_;
  std::vector<PipelineTick> ticks_;
  /// [program][micro-batch] -> tick.
  std::vector<std::vector<std::size_t>> tickOf_;
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
  mapping_ = config_.pipeline.deviceMapping;
  if (mapping_.empty()) {
    mapping_.resize(S_);
    std::iota(mapping_.begin(), mapping_.end(), 0u);
  }
  if (mapping_.size() != S_)
    throw OptionError(fmt::format(
        "session: the device mapping lists {} IPUs for {} pipeline stages; "
        "give one IPU per stage",
        mapping_.size(), S_));
  for (unsigned s = 0; s < S_; ++s)
    if (mapping_[s] >= config_.autoSelectIpus)
      throw OptionError(fmt::format(
          "session: the device mapping puts stage {} on IPU {}, but the model "
          "has {} IPU{} (autoSelectIpus); select at least {} IPUs or map the "
          "stage to IPU 0 to {}",
          s, mapping_[s], config_.autoSelectIpus,
          config_.autoSelectIpus == 1 ? "" : "s", mapping_[s] + 1,
          config_.autoSelectIpus - 1));
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

void PipelineBuilder::placeOps(ir::Module &m) const {
  for (std::size_t i = 0; i < m.ops().size(); ++i)
    m.mutableOps()[i].annotations.ipu = mapping_[stages_.ofOp[i]];
}

void PipelineBuilder::timeTicks() {
  tickOf_.assign(U_, std::vector<std::size_t>(N_, 0));
  for (std::size_t t = 0; t < ticks_.size(); ++t)
    for (const StagePass &p : ticks_[t])
      tickOf_[passProgram(p.stage, p.backward)][p.microBatch] = t;
  depths_.assign(U_, std::vector<std::size_t>(U_, 1));
  for (unsigned from = 0; from < U_; ++from)
    for (unsigned to = 0; to < U_; ++to)
      depths_[from][to] = depthOf(from, to);
}

// A pass reads values of passes that run before it on the same
// micro-batch; a stage reading a later stage's value cannot be scheduled.
void PipelineBuilder::checkOrder() const {
  const auto &ops = module_.ops();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const unsigned to = programOfOp(i);
    if (to == U_)
      continue;
    for (ir::ValueId v : ops[i].operands) {
      if (module_.value(v).kind != ir::ValueKind::OpResult)
        continue;
      const unsigned from = programOfOp(module_.value(v).def);
      if (passOf(from) != passOf(to) &&
          tickOf_[passOf(to)][0] <= tickOf_[passOf(from)][0])
        throw ir::IrError(fmt::format(
            "session: op {} ({}) in {} reads {} from {}, which runs after it "
            "in the pipeline; a forward stage can only use values of itself "
            "or earlier stages: move the op to stage {} or later",
            i, ir::opKindName(ops[i].kind), passName(passOf(to)),
            module_.describe(v), passName(passOf(from)), passOf(from) / 2));
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
    if (l.to == U_ || lowered.ipu(l.value) == mapping_[l.to / 2])
      continue;
    std::optional<std::size_t> first;
    for (std::size_t e = 0; e < bounds.size(); ++e) {
      const ir::Boundary &f = bounds[e];
      if (e == later || f.value != l.value || f.from != l.from || f.to == U_ ||
          mapping_[f.to / 2] != mapping_[l.to / 2] || !before(f.to, l.to))
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
    const unsigned prog = passProgram(p.stage, p.backward);
    for (std::size_t t : pendingTicks_)
      for (const StagePass &q : ticks_[t])
        if (q.stage == p.stage && q.backward == p.backward)
          return true;
    for (const ir::Boundary &b : lowered.boundaries())
      if (b.to == prog && pending(tickOf_[passOf(b.from)][p.microBatch]))
        return true;
  }
  return false;
}

// The trace scope of a pass's steps (Executable::stepScopes), as `tessera
// report` lists them per IPU.
std::string PipelineBuilder::passLabel(const StagePass &p) const {
  return fmt::format("{}, micro-batch {}, IPU {}",
                     passName(passProgram(p.stage, p.backward)), p.microBatch,
                     mapping_[p.stage]);
}

Sequence PipelineBuilder::tick(std::size_t k,
                               const ir::LoweredModule &lowered) {
  const PipelineTick &t = ticks_[k];
  Sequence passes;
  std::vector<std::pair<Tensor, Tensor>> &transfers = pending_;
  pendingTicks_.push_back(k);
  const auto &bounds = lowered.boundaries();
  for (const StagePass &p : t) {
    const unsigned prog = passProgram(p.stage, p.backward);
    const unsigned i = p.microBatch;
    Sequence pass{DebugContext(passLabel(p))};
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
      transfers.emplace_back(lowered.tensor(bounds[b].value),
                             destination(b, i, lowered));
    }
  }
  if (needsPending(k + 1, lowered)) {
    addMergedCopy(passes, transfers);
    transfers.clear();
    pendingTicks_.clear();
  }
  // The accumulations belong to their backward passes: the same scope.
  for (const StagePass &p : t)
    if (p.backward) {
      const unsigned acc = U_ + 1 + p.stage;
      Sequence tail{DebugContext(passLabel(p))};
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
  lowering.boundary = [this](unsigned from, unsigned to, bool sameIpu) {
    return !sameIpu || depth(from, to) > 1;
  };
  programs_.resize(U_ + 1 + S_);
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
  feeds_.resize(U_ + 1 + S_);
  outfeeds_.resize(U_ + 1 + S_);
  updates_.resize(U_ + 1 + S_);
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
