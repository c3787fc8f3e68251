/// \file
/// Config and Session: compile an IR module for the IPU Model and run it in
/// device loops, as TensorFlow-for-IPU's IPUConfig and on-device training
/// loops do.
///
///     session::Config config;                 // ipu2, 1472 tiles, 1 IPU
///     config.executableCachePath = "cache";
///     session::Session s(module, config, {.feeds = {"x", "y"},
///                                         .outfeeds = {"loss"},
///                                         .stepsPerExecution = 100});
///     s.compile(&std::cerr);                  // progress bar on stderr
///     session::Infeed in(dataset);  session::Outfeed out;
///     s.connect(in, out);
///     s.run();                                // 100 steps on the device
///
/// One run is a Repeat of stepsPerExecution steps; each step copies the
/// next element of each feed in, runs the module, writes each variable's
/// "update/<variable>" output back to it (passes/Optimizer.hpp), and copies
/// the outfeed outputs out. Variables start at their initialisers' values
/// on the device; readVariables / writeVariables move them to and from the
/// host, for checkpoints, and setHyperParameter changes the learning rate
/// between runs.
#pragma once

#include "tessera/compiler/ExecutableCache.hpp"
#include "tessera/device/Device.hpp"
#include "tessera/engine/Engine.hpp"
#include "tessera/engine/Profile.hpp"
#include "tessera/ir/Module.hpp"
#include "tessera/session/Checkpoint.hpp"
#include "tessera/session/Feeds.hpp"
#include "tessera/session/Pipeline.hpp"

#include <future>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tessera::session {

/// The IPU Model to run on (IPUConfig.ipu_model).
struct IpuModelConfig {
  unsigned tilesPerIpu = 1472;
  std::string version = "ipu2";
  /// Accepted for compatibility; the IPU Model always runs host code.
  bool compileIpuCode = true;
};

/// IPUConfig.floating_point_behaviour: which exceptions stop a run.
struct FloatingPointBehaviour {
  bool inv = false, div0 = false, oflo = false, nanoo = false;
};

/// IPUConfig.device_connection.type: when the session needs a device.
enum class DeviceConnectionType {
  ALWAYS,      ///< attach when compiling (the default)
  ON_DEMAND,   ///< the IPU Model attaches when compiling too: same as ALWAYS
  PRE_COMPILE, ///< compile into the executable cache only; nothing runs
  NEVER        ///< neither compile nor run (an error if asked to)
};

/// This process as one of several instances of one run (PopDist's
/// instances, started by `tessera poprun`): instance \p index of \p count
/// runs replicas [index * R / count, (index + 1) * R / count) of the R
/// replicas and reaches the others' through \p exchange (src/dist makes
/// one on MPI).
struct InstanceConfig {
  unsigned count = 1;
  unsigned index = 0;
  std::shared_ptr<ReplicaExchange> exchange;
};

/// Mirrors IPUConfig.
struct Config {
  /// auto_select_ipus: how many IPUs the model uses.
  unsigned autoSelectIpus = 1;
  /// Copies of the model, each on its own autoSelectIpus IPUs and taking
  /// its own elements of the infeed (consecutive ones, in replica order).
  /// Build the module with TrainingOptions::crossReplicaMean so replicas
  /// share their gradients.
  unsigned replicationFactor = 1;
  /// The replicas this process runs, when it is one of several instances;
  /// the infeed then feeds only those (consecutive elements, as the
  /// dataset's shard for this instance lists them).
  InstanceConfig instances;
  IpuModelConfig ipuModel;
  FloatingPointBehaviour floatingPointBehaviour;
  /// Where compiled executables are cached (empty: no cache).
  std::string executableCachePath;
  /// PRE_COMPILE fills executableCachePath without a device, for a later
  /// ALWAYS session (here, or where the cache folder is copied to, with the
  /// same Tessera build) to load.
  DeviceConnectionType deviceConnectionType = DeviceConnectionType::ALWAYS;
  /// Run without host I/O: inputs keep their last values, so the device's
  /// speed is measured alone.
  bool syntheticData = false;
  /// Host threads that run the model (0: engineOptions' engine.hostThreads
  /// if set, else all cores).
  unsigned hostThreads = 0;
  /// Further engine options ("autoReport.all", "autoReport.directory", ...;
  /// TESSERA_ENGINE_OPTIONS still overrides them).
  OptionFlags engineOptions;
  /// How a module with pipeline stages (@stage annotations) runs
  /// (session/Pipeline.hpp); one run then takes whole steps of the
  /// module's gradient accumulation count of micro-batches.
  PipelineConfig pipeline;
};

/// What a session runs: which inputs are fed, which outputs are outfed,
/// and how many steps one run takes.
struct RunSpec {
  std::vector<std::string> feeds;
  std::vector<std::string> outfeeds;
  unsigned stepsPerExecution = 1;
};

class Session {
public:
  /// Checks that every feed names an input and every outfeed an output of
  /// \p module (IrError naming the missing one) and that the module's
  /// inputs are all fed unless syntheticData is set.
  Session(ir::Module module, Config config, RunSpec spec);
  ~Session();

  /// Compiles (or takes from the cache) and loads onto the IPU Model,
  /// drawing the compile bar on \p progress when given. Returns whether
  /// the executable came from the cache. With PRE_COMPILE it only fills
  /// the cache (OptionError without executableCachePath); with NEVER it
  /// throws OptionError.
  bool compile(std::ostream *progress = nullptr);

  /// Connects the feeds (in RunSpec order) and outfeeds. Not needed with
  /// syntheticData. Both must outlive every run() that follows: the infeed
  /// produces the elements, and run() asks it how many a failed run took.
  void connect(Infeed &infeed, Outfeed &outfeed);

  /// Runs stepsPerExecution steps. With floatingPointBehaviour flags set,
  /// a NaN or infinity they forbid stops the run with FloatingPointError
  /// naming the op that made it and the training step (counted from 1 over
  /// this session's runs).
  void run();

  /// The module's variables as they are on the device now (on the first
  /// replica this process runs, unless \p replica says), but for the
  /// hyper-parameters.
  Checkpoint readVariables(std::uint64_t step = 0,
                           std::optional<unsigned> replica = std::nullopt);
  /// One variable, \p name, as readVariables reads it; IrError when the
  /// module has no such variable.
  data::HostTensor readVariable(const std::string &name,
                                std::optional<unsigned> replica = std::nullopt);
  /// Sets the device's variables from \p ckpt (read from \p path, for
  /// messages); SerializationError when it is of another model.
  /// Checkpoints leave the hyper-parameters out (they are settings, not
  /// state: the program that restores one sets them); entries for them,
  /// which a caller listing every variable of the module gives, are
  /// ignored.
  void writeVariables(const Checkpoint &ckpt, const std::string &path);

  /// Writes \p value to the module's hyper-parameter \p name (on every
  /// replica this process runs) for the runs that follow, without
  /// recompiling: the optimizer pass records "learning_rate" (and
  /// "momentum" for SGD and RMSprop with momentum). compile() writes the
  /// module's own values, so the executable cache ignores them. Throws
  /// OptionError for a name the module lacks (listing those it has) or a
  /// value that is not finite, RuntimeError before compile().
  void setHyperParameter(const std::string &name, double value);
  /// The hyper-parameter \p name as the device holds it (a float).
  double hyperParameter(const std::string &name);

  /// The estimated IPU cycles of one run, from the executable's estimates
  /// (Engine::getElapsedCycles over the runs: IPUs run side by side between
  /// syncs and wait for each other at them).
  std::uint64_t estimatedCyclesPerRun() const;
  /// estimatedCyclesPerRun by kind of step (compute, exchange, sync, host
  /// streams, control); all zero before the first run.
  CycleBreakdown estimatedCyclesByKindPerRun() const;
  /// The estimated host-side cycles of one run (Engine::getHostCycles over
  /// the runs: its round trip, stream set-ups and callbacks), which
  /// estimatedCyclesPerRun (device time) leaves out; zero before the first
  /// run.
  HostCycles estimatedHostCyclesPerRun() const;
  /// estimatedCyclesPerRun plus estimatedHostCyclesPerRun().total(): one
  /// run as the host sees it.
  std::uint64_t estimatedHostInclusiveCyclesPerRun() const;
  /// The compiled program's tile memory; empty before compile().
  MemorySummary memorySummary() const;
  /// The IPU clock in Hz, to turn cycles into time.
  double clockHz() const;
  const ir::Module &module() const { return module_; }
  Engine &engine();

private:
  Executable build(std::ostream *progress);
  std::vector<VariableSpec> variableSpecs() const;
  ir::ValueId hyperParameterVariable(const std::string &name) const;

  ir::Module module_;
  Config config_;
  RunSpec spec_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<Engine> engine_;
  Infeed *infeed_ = nullptr;
  std::uint64_t runs_ = 0;
  /// The last build's graph, being freed on another thread (build()).
  std::future<void> released_;
};

/// The executable-cache key of a module and config: a hash of the
/// module's text and every setting that changes the executable.
std::string cacheKey(const ir::Module &module, const Config &config,
                     const RunSpec &spec);

/// The options a session gives its engine: config.engineOptions with
/// engine.hostThreads from config.hostThreads (unless hostThreads is 0 and
/// engineOptions sets it) and the floating-point behaviour. Throws
/// OptionError when hostThreads and engineOptions ask for different
/// thread counts.
OptionFlags engineFlags(const Config &config);

} // namespace tessera::session
