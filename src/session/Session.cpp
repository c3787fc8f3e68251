#include "tessera/session/Session.hpp"

#include "Steps.hpp"

#include "tessera/compiler/Compiler.hpp"
#include "tessera/device/IPUModel.hpp"
#include "tessera/graph/VertexRegistry.hpp"
#include "tessera/ir/Lowering.hpp"
#include "tessera/ir/Text.hpp"
#include "tessera/ops/Codelets.hpp"
#include "tessera/ops/Elementwise.hpp"
#include "tessera/passes/Optimizer.hpp"
#include "tessera/session/Progress.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/Hash.hpp"
#include "tessera/support/Memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <future>
#include <ostream>
#include <set>

namespace tessera::session {
namespace {

using namespace tessera::program;

const std::string kReadPrefix = "variable-read/";
const std::string kWritePrefix = "variable-write/";

IPUModel modelFor(const Config &c) {
  IPUModel m(c.ipuModel.version.c_str());
  // The product could wrap around; the target checks the ceiling itself.
  const std::uint64_t ipus =
      std::uint64_t(c.autoSelectIpus) * c.replicationFactor;
  if (ipus > Target::kMaxIPUs)
    throw OptionError(fmt::format(
        "autoSelectIpus {} x replicationFactor {} is {} IPUs; a model may "
        "use 1 to {}",
        c.autoSelectIpus, c.replicationFactor, ipus, Target::kMaxIPUs));
  m.numIPUs = static_cast<unsigned>(ipus);
  m.tilesPerIPU = c.ipuModel.tilesPerIpu;
  m.compileIPUCode = c.ipuModel.compileIpuCode;
  return m;
}

bool isInput(const ir::Module &m, const std::string &name) {
  const auto id = m.findValue(name);
  return id && m.value(*id).kind == ir::ValueKind::Input;
}

// Annotations the session does not implement are errors, not silently
// ignored: a user who asked for recomputation would otherwise get a
// different program than they think.
void checkAnnotations(const ir::Module &module) {
  for (std::size_t i = 0; i < module.ops().size(); ++i) {
    const ir::Op &op = module.ops()[i];
    if (op.annotations.recompute)
      throw UnsupportedError(
          "session: op " + std::to_string(i) + " (" +
          std::string(ir::opKindName(op.kind)) + " " +
          module.describe(op.results.at(0)) +
          ") is annotated @recompute, but no recomputation pass ran on the "
          "module; run the training passes with recomputation on, or remove "
          "the annotation");
  }
}

bool isWeightUpdate(const ir::Module &m, ir::ValueId v) {
  return m.value(v).kind == ir::ValueKind::OpResult &&
         m.producer(v).annotations.weightUpdate;
}

// The copies that give each variable its new value, where lowering could
// not update it in place; the weight update's into \p update, the others
// into \p step.
void addUpdateCopies(const ir::Module &m, const ir::LoweringOptions &lowering,
                     const ir::LoweredModule &lowered, Sequence &step,
                     Sequence &update) {
  for (const auto &[var, next] : lowering.updateInPlace) {
    const Tensor &from = lowered.tensor(next), &to = lowered.tensor(var);
    if (from.runs() != to.runs()) // else updated in place
      (isWeightUpdate(m, next) ? update : step).add(Copy(from, to));
  }
}

// One run is one micro-batch: its ops, then, in a module that accumulates
// gradients, the weight update under an If on the update condition, so
// the optimizer runs once per step rather than gated in every micro-batch.
Sequence stepProgram(const ir::Module &module, const Config &config,
                     const RunSpec &spec, Graph &graph,
                     ir::LoweredModule &lowered) {
  ir::LoweringOptions lowering;
  lowering.updateInPlace = passes::variableUpdates(module);
  lowering.layoutLike = passes::optimizerState(module);
  const auto condition = module.updateCondition();
  if (condition)
    lowering.keep.push_back(*condition);
  for (const ir::Op &op : module.ops())
    lowering.programOf.push_back(op.annotations.weightUpdate ? 1 : 0);
  const std::vector<ir::ValueId> offloaded =
      detail::offloadedState(module, config);
  lowering.uninitialised = offloaded;
  Sequence micro, update;
  lowered = ir::lowerToGraph(module, graph, {&micro, &update}, lowering);
  Sequence body;
  for (const auto &f : spec.feeds) {
    const Tensor &t = lowered.tensor(*module.findValue(f));
    if (!config.syntheticData)
      body.add(Copy(
          graph.addHostToDeviceFIFO(f, t.elementType(), t.numElements()), t));
  }
  body.add(micro);
  addUpdateCopies(module, lowering, lowered, body, update);
  if (condition) {
    for (ir::ValueId v : module.resets())
      ops::zero(graph, lowered.tensor(v), update,
                {"weight_update/reset " + module.value(v).name});
    body.add(If(
        lowered.tensor(*condition),
        detail::withOffloadedState(graph, module, offloaded, lowered, update),
        Sequence(), {"weight_update"}));
  } else {
    body.add(update);
  }
  for (const auto &o : spec.outfeeds) {
    const Tensor &t = lowered.tensor(module.output(o));
    if (!config.syntheticData)
      body.add(Copy(
          t, graph.addDeviceToHostFIFO(o, t.elementType(), t.numElements())));
  }
  return body;
}

} // namespace

namespace detail {

std::vector<ir::ValueId> offloadedState(const ir::Module &module,
                                        const Config &config) {
  std::vector<ir::ValueId> out;
  if (!config.pipeline.offloadOptimizerState || !module.updateCondition())
    return out;
  for (const ir::VariableRecord &r : module.states())
    if (module.variableOf(r.variable).init.kind == ir::InitKind::Zeros)
      out.push_back(r.variable);
  return out;
}

std::string remoteHandle(const std::string &name) { return "remote/" + name; }

Sequence withOffloadedState(Graph &graph, const ir::Module &module,
                            const std::vector<ir::ValueId> &state,
                            const ir::LoweredModule &lowered, Sequence update) {
  if (state.empty())
    return update;
  Sequence load({}, {"weight_update/load offloaded state"}),
      store({}, {"weight_update/store offloaded state"});
  for (ir::ValueId v : state) {
    const Tensor &t = lowered.tensor(v);
    const RemoteBuffer buffer = graph.addRemoteBuffer(
        remoteHandle(module.value(v).name), t.elementType(), t.numElements());
    load.add(Copy(buffer, t.flatten()));
    store.add(Copy(t.flatten(), buffer));
  }
  return Sequence({load, update, store});
}

} // namespace detail

OptionFlags engineFlags(const Config &c) {
  auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  const FloatingPointBehaviour &fp = c.floatingPointBehaviour;
  OptionFlags flags = c.engineOptions;
  // hostThreads 0 means "not chosen": an engine.hostThreads the user put
  // in engineOptions then stands; two different choices are an error
  // rather than one silently winning.
  const std::string threads = std::to_string(c.hostThreads);
  if (flags.contains("engine.hostThreads") && c.hostThreads != 0 &&
      flags.at("engine.hostThreads") != threads)
    throw OptionError(
        fmt::format("session: hostThreads is {} but engineOptions sets "
                    "engine.hostThreads to {}; set only one of them",
                    c.hostThreads, flags.at("engine.hostThreads")));
  if (!flags.contains("engine.hostThreads"))
    flags.set("engine.hostThreads", threads);
  flags.set({{"debug.floatingPointBehaviour.inv", flag(fp.inv)},
             {"debug.floatingPointBehaviour.div0", flag(fp.div0)},
             {"debug.floatingPointBehaviour.oflo", flag(fp.oflo)},
             {"debug.floatingPointBehaviour.nanoo", flag(fp.nanoo)}});
  return flags;
}

std::string cacheKey(const ir::Module &module, const Config &config,
                     const RunSpec &spec) {
  // Hyper-parameters are written after loading, so their first values are
  // no part of the executable: a new learning rate finds the same entry.
  ir::Module keyed = module;
  for (const ir::HyperParameterRecord &r : module.hyperParameters())
    keyed.setInitialiser(r.variable, ir::init::zeros());
  std::string text = ir::print(keyed);
  text += "\nipus=" + std::to_string(config.autoSelectIpus) +
          " replicas=" + std::to_string(config.replicationFactor) +
          " tiles=" + std::to_string(config.ipuModel.tilesPerIpu) +
          " arch=" + config.ipuModel.version +
          " synthetic=" + std::to_string(config.syntheticData) +
          " steps=" + std::to_string(spec.stepsPerExecution) +
          " schedule=" + std::string(scheduleName(config.pipeline.schedule)) +
          " mapping=";
  for (const StageIpus &stage : config.pipeline.deviceMapping) {
    for (unsigned ipu : stage.ipus)
      text += std::to_string(ipu) + " ";
    text += ",";
  }
  text += " " + EngineOptions::parse(engineFlags(config)).compileKey();
  for (const auto &f : spec.feeds)
    text += " feed=" + f;
  for (const auto &o : spec.outfeeds)
    text += " outfeed=" + o;
  return ExecutableCache::keyOf(text);
}

Session::Session(ir::Module module, Config config, RunSpec spec)
    : module_(std::move(module)), config_(std::move(config)),
      spec_(std::move(spec)) {
  checkAnnotations(module_);
  for (const auto &f : spec_.feeds)
    if (!isInput(module_, f))
      throw ir::IrError("session: feed \"" + f +
                        "\" is not an input of "
                        "module \"" +
                        module_.name() + "\"");
  for (const auto &o : spec_.outfeeds)
    (void)module_.output(o); // IrError names a missing output
  if (!config_.syntheticData)
    for (ir::ValueId in : module_.inputs()) {
      const std::string &name = module_.value(in).name;
      if (std::find(spec_.feeds.begin(), spec_.feeds.end(), name) ==
          spec_.feeds.end())
        throw ir::IrError("session: input \"" + name +
                          "\" is not fed; add it to the feeds or set "
                          "syntheticData");
    }
  if (config_.replicationFactor == 0)
    throw OptionError("session: replicationFactor must be at least 1");
  if (spec_.stepsPerExecution == 0)
    throw OptionError("session: stepsPerExecution must be at least 1");
  const InstanceConfig &in = config_.instances;
  if (in.count == 0 || in.index >= in.count ||
      config_.replicationFactor % in.count != 0)
    throw OptionError(fmt::format(
        "session: instance {} of {} cannot own an equal share of {} "
        "replicas; make the replication factor a multiple of the instance "
        "count and the index smaller than the count",
        in.index, in.count, config_.replicationFactor));
  if (in.count > 1 && !in.exchange)
    throw OptionError(fmt::format(
        "session: {} instances need a ReplicaExchange to reach each other's "
        "replicas; set config.instances.exchange (dist::mpiReplicaExchange)",
        in.count));
}

Session::~Session() {
  if (released_.valid())
    released_.wait();
}

// What a build made that the executable does not need. A ResNet-50 graph
// holds millions of small blocks, and freeing them took about a fifth of a
// CNN's compile: they are freed on another thread while the engine loads.
struct BuildScratch {
  IPUModel model;
  std::unique_ptr<Graph> graph;
  ir::LoweredModule lowered;
};

Executable Session::build(std::ostream *progress) {
  if (released_.valid())
    released_.get();
  // Lowering and compiling touch gigabytes of fresh heap (README, "Host
  // memory").
  const HeapPrefaulter prefaulter;
  auto scratch = std::make_unique<BuildScratch>(
      BuildScratch{modelFor(config_), nullptr, ir::LoweredModule()});
  scratch->graph =
      std::make_unique<Graph>(scratch->model.getTarget(),
                              replication_factor(config_.replicationFactor));
  Graph &graph = *scratch->graph;
  ir::LoweredModule &lowered = scratch->lowered;
  const CompilePhaseTimer lowering("lowering (ir -> graph)");
  const bool pipelined = detail::isPipelined(module_);
  const Sequence body =
      pipelined ? detail::pipelinedStep(module_, config_, spec_, graph, lowered)
                : stepProgram(module_, config_, spec_, graph, lowered);
  lowering.finish();
  // A pipelined body runs a whole step of micro-batches.
  const unsigned runsPerBody = pipelined ? module_.updatePeriod() : 1;
  // Offloaded state lives in its remote buffer, which the host reads.
  const std::vector<ir::ValueId> offloaded =
      detail::offloadedState(module_, config_);
  for (const ir::Variable &v : module_.variables()) {
    if (std::find(offloaded.begin(), offloaded.end(), v.value) !=
        offloaded.end())
      continue;
    const std::string &name = module_.value(v.value).name;
    graph.createHostRead(kReadPrefix + name, lowered.tensor(v.value));
    graph.createHostWrite(kWritePrefix + name, lowered.tensor(v.value));
  }
  std::optional<CompileProgressBar> bar;
  if (progress)
    bar.emplace(*progress);
  Executable exe =
      compileGraph(graph, {Repeat(spec_.stepsPerExecution / runsPerBody, body)},
                   {}, [&](const char *phase, double done) {
                     if (bar)
                       (*bar)(phase, done);
                   });
  if (bar)
    bar->finish();
  released_ =
      std::async(std::launch::async, [scratch = std::move(scratch)]() mutable {
        scratch.reset();
        // Otherwise the freed graph (about 5 GB for ResNet-50 at
        // 224x224) stays resident while the engine runs.
        returnFreedMemory();
      });
  return exe;
}

bool Session::compile(std::ostream *progress) {
  const DeviceConnectionType connection = config_.deviceConnectionType;
  if (connection == DeviceConnectionType::NEVER)
    throw OptionError("session: the device connection type is NEVER, so "
                      "nothing is compiled or run; use PRE_COMPILE to fill "
                      "the executable cache without a device, or ALWAYS");
  if (connection == DeviceConnectionType::PRE_COMPILE &&
      config_.executableCachePath.empty())
    throw OptionError("session: PRE_COMPILE keeps the executable in the "
                      "executable cache, but executableCachePath is empty; "
                      "set it to a folder");
  Executable exe;
  bool hit = false;
  if (config_.executableCachePath.empty()) {
    exe = build(progress);
  } else {
    // A cached executable names the ops library's vertices; a fresh
    // process has registered them only once a graph was lowered, so
    // register them here or the engine cannot load a cache hit.
    VertexRegistry::registerBuiltinLibrary("ops", &ops::registerVertices);
    ExecutableCache cache(config_.executableCachePath);
    ExecutableCache::Outcome outcome;
    exe = cache.getOrCompile(
        cacheKey(module_, config_, spec_), [&] { return build(progress); },
        &outcome);
    hit = outcome == ExecutableCache::Outcome::Hit;
    // A run goes on without its cache entry; a pre-compile exists only to
    // leave one.
    if (connection == DeviceConnectionType::PRE_COMPILE &&
        outcome == ExecutableCache::Outcome::NotStored)
      throw RuntimeError("session: PRE_COMPILE could not store the "
                         "executable in \"" +
                         config_.executableCachePath +
                         "\" (run with TESSERA_LOG_LEVEL=WARN to see why); "
                         "set executableCachePath to a writable folder");
  }
  if (connection == DeviceConnectionType::PRE_COMPILE)
    return hit; // in the cache now; no device, no engine
  device_ = std::make_unique<Device>(modelFor(config_).createDevice());
  engine_ = std::make_unique<Engine>(std::move(exe), engineFlags(config_));
  // The engine's memory comes after the graph's is given back, or the two
  // add up: ResNet-50 at 224x224 would peak 0.7 GB higher than its compile.
  if (released_.valid())
    released_.wait();
  engine_->load(*device_);
  if (config_.instances.count > 1) {
    const unsigned local = config_.replicationFactor / config_.instances.count;
    engine_->setLocalReplicas(config_.instances.index * local, local,
                              config_.instances.exchange);
  }
  // A cached executable holds the values of the module it was compiled
  // from; this module's may differ.
  for (const ir::HyperParameterRecord &r : module_.hyperParameters())
    setHyperParameter(
        r.name,
        ir::materialise(module_.variableOf(r.variable).init, FLOAT, {}).at(0));
  return hit;
}

ir::ValueId Session::hyperParameterVariable(const std::string &name) const {
  if (const auto v = module_.hyperParameter(name))
    return *v;
  std::string known;
  for (const ir::HyperParameterRecord &r : module_.hyperParameters())
    known += (known.empty() ? "\"" : ", \"") + r.name + "\"";
  throw OptionError(
      "session: module \"" + module_.name() + "\" has no hyper-parameter \"" +
      name + "\"; " +
      (known.empty() ? std::string("it has none (build it with the optimizer "
                                   "pass to get its learning rate)")
                     : "it has " + known));
}

void Session::setHyperParameter(const std::string &name, double value) {
  const ir::ValueId v = hyperParameterVariable(name);
  if (!std::isfinite(value))
    throw OptionError(fmt::format(
        "session: hyper-parameter \"{}\" must be finite, not {}", name, value));
  const float f = static_cast<float>(value);
  engine().writeTensor(kWritePrefix + module_.value(v).name, &f, &f + 1);
}

double Session::hyperParameter(const std::string &name) {
  const ir::ValueId v = hyperParameterVariable(name);
  float f = 0;
  engine().readTensor(kReadPrefix + module_.value(v).name, &f, &f + 1);
  return f;
}

Engine &Session::engine() {
  if (config_.deviceConnectionType == DeviceConnectionType::PRE_COMPILE)
    throw RuntimeError("session: this session pre-compiles (device "
                       "connection PRE_COMPILE): its executable is in \"" +
                       config_.executableCachePath +
                       "\"; run it from a session with device connection "
                       "ALWAYS and the same executableCachePath");
  if (!engine_)
    throw RuntimeError("session: call compile() before running it");
  return *engine_;
}

void Session::connect(Infeed &infeed, Outfeed &outfeed) {
  infeed.connect(engine(), spec_.feeds);
  outfeed.connect(engine(), spec_.outfeeds);
  infeed_ = &infeed;
}

void Session::run() {
  Engine &e = engine();
  const std::uint64_t takenBefore = infeed_ ? infeed_->elementsTaken() : 0;
  try {
    e.run(0);
  } catch (const FloatingPointError &err) {
    // The engine names the op; the user also wants the training step. Each
    // step starts by taking its element from the infeed, so the elements
    // taken during this run count the steps begun.
    std::string where = "in run " + std::to_string(runs_ + 1) + " of " +
                        std::to_string(spec_.stepsPerExecution) + " steps";
    if (infeed_ && !spec_.feeds.empty()) {
      const std::uint64_t begun = infeed_->elementsTaken() - takenBefore;
      where = "at training step " +
              std::to_string(runs_ * spec_.stepsPerExecution + begun) +
              " (step " + std::to_string(begun) + " of run " +
              std::to_string(runs_ + 1) + ")";
    }
    throw FloatingPointError("session: " + where + ": " + err.what());
  }
  ++runs_;
}

Checkpoint Session::readVariables(std::uint64_t step,
                                  std::optional<unsigned> replica) {
  Checkpoint c;
  c.model = module_.name();
  c.step = step;
  for (const ir::Variable &v : module_.variables()) {
    // Settings, not state: the program restoring the checkpoint sets them.
    if (module_.isHyperParameter(v.value))
      continue;
    const std::string &name = module_.value(v.value).name;
    c.variables.emplace_back(name, readVariable(name, replica));
  }
  return c;
}

data::HostTensor Session::readVariable(const std::string &name,
                                       std::optional<unsigned> replica) {
  const unsigned r = replica ? *replica : engine().getLocalReplicas().first;
  const auto id = module_.findValue(name);
  if (!id || module_.value(*id).kind != ir::ValueKind::Variable)
    throw ir::IrError("session: module \"" + module_.name() +
                      "\" has no variable \"" + name + "\"");
  const ir::ValueInfo &info = module_.value(*id);
  data::HostTensor t(info.type.dtype, info.type.shape);
  auto *p = static_cast<std::byte *>(t.data());
  const std::vector<ir::ValueId> offloaded =
      detail::offloadedState(module_, config_);
  if (std::find(offloaded.begin(), offloaded.end(), *id) != offloaded.end())
    engine().copyFromRemoteBuffer(detail::remoteHandle(name), p, 0, r);
  else
    engine().readTensor(kReadPrefix + name, r, p, p + t.numBytes());
  return t;
}

std::vector<VariableSpec> Session::variableSpecs() const {
  std::vector<VariableSpec> specs;
  for (const ir::Variable &v : module_.variables()) {
    const ir::ValueInfo &info = module_.value(v.value);
    if (!module_.isHyperParameter(v.value))
      specs.push_back({info.name, info.type.dtype, info.type.shape});
  }
  return specs;
}

void Session::writeVariables(const Checkpoint &ckpt, const std::string &path) {
  // Callers that list every variable of the module (the TF1 binding) give
  // the hyper-parameters too; setHyperParameter alone writes those.
  std::vector<VariableSpec> expected = variableSpecs();
  std::set<std::string> hyper;
  for (const ir::HyperParameterRecord &r : module_.hyperParameters()) {
    const ir::ValueInfo &info = module_.value(r.variable);
    for (const auto &[name, t] : ckpt.variables)
      if (name == info.name) {
        expected.push_back({info.name, info.type.dtype, info.type.shape});
        hyper.insert(name);
      }
  }
  checkCheckpointMatches(ckpt, path, module_.name(), expected);
  std::set<std::string> offloaded;
  for (ir::ValueId v : detail::offloadedState(module_, config_))
    offloaded.insert(module_.value(v).name);
  const auto [first, count] = engine().getLocalReplicas();
  for (const auto &[name, t] : ckpt.variables) {
    if (hyper.count(name))
      continue;
    const auto *p = static_cast<const std::byte *>(t.data());
    if (!offloaded.count(name)) {
      engine().writeTensor(kWritePrefix + name, p, p + t.numBytes());
      continue;
    }
    for (unsigned r = first; r < first + count; ++r)
      engine().copyToRemoteBuffer(p, detail::remoteHandle(name), 0, r);
  }
}

std::uint64_t Session::estimatedCyclesPerRun() const {
  if (!engine_ || engine_->getExecutionCounts().runs == 0)
    return 0;
  return engine_->getElapsedCycles() / engine_->getExecutionCounts().runs;
}

CycleBreakdown Session::estimatedCyclesByKindPerRun() const {
  if (!engine_)
    return {};
  return cyclesPerRun(engine_->getExecutable(), engine_->getExecutionCounts());
}

HostCycles Session::estimatedHostCyclesPerRun() const {
  if (!engine_ || engine_->getExecutionCounts().runs == 0)
    return {};
  const std::uint64_t runs = engine_->getExecutionCounts().runs;
  const HostCycles h = engine_->getHostCycles();
  return {h.runs / runs, h.streamSetups / runs, h.callbacks / runs};
}

std::uint64_t Session::estimatedHostInclusiveCyclesPerRun() const {
  if (!engine_ || engine_->getExecutionCounts().runs == 0)
    return 0;
  return engine_->getHostInclusiveCycles() / engine_->getExecutionCounts().runs;
}

MemorySummary Session::memorySummary() const {
  return engine_ ? tessera::memorySummary(engine_->getExecutable())
                 : MemorySummary{};
}

double Session::clockHz() const {
  return engine_ ? engine_->getExecutable().clockHz : 0.0;
}

} // namespace tessera::session
