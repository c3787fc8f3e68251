#include "tessera/compiler/Options.hpp"

#include "tessera/support/OptionParser.hpp"

namespace tessera {

const std::vector<InertEngineOption> &inertEngineOptions() {
  static const std::vector<InertEngineOption> options = {
      {"debug.retainDebugInformation",
       "the IPU Model always keeps names and debug contexts"},
      {"debug.instrumentCompute",
       "per-step cycles come from debug.instrument; the model has no "
       "on-device cycle counters"},
      {"debug.instrumentControlFlow",
       "per-step cycles come from debug.instrument; the model has no "
       "on-device cycle counters"},
      {"debug.instrumentExternalExchange",
       "per-step cycles come from debug.instrument; the model has no "
       "on-device cycle counters"},
      {"debug.computeInstrumentationLevel",
       "the model instruments every step when debug.instrument is on"},
      {"debug.outputAllSymbols", "the IPU Model writes no IPU object code"},
      {"exchange.streamBufferOverlap",
       "stream buffers live in host memory, not in tile memory"},
      {"exchange.maxStreamBufferSize",
       "stream buffers live in host memory, not in tile memory"},
      {"opt.maxCopyMergeSize", "the model merges copies by its own rule"},
      {"opt.enableSwSyncs", "the model has no hardware sync to replace"},
      {"profiler.format", "profiles are written as profile.json"},
      {"profiler.includeFlopEstimates",
       "the cost model estimates cycles, not flops"},
      {"profiler.perExecutionStreamCopyCycles",
       "stream copies are timed by the cost model"},
      {"profiler.replicaToProfile", "every replica runs the same steps"},
      {"target.syncReplicasIndependently",
       "replicas of the model run in lock step"},
      {"target.hostSyncTimeout", "the model never waits for a host sync"},
      {"target.deterministicWorkers",
       "the model's workers are always deterministic"},
      {"autoReport.outputArchive", "profiles are written as profile.json"},
      {"autoReport.outputDebugInfo", "profile.json holds the debug names"},
      {"autoReport.outputSerializedGraph",
       "the model does not serialise graphs into profiles"},
      {"autoReport.executionProfileProgramRunCount",
       "the execution profile sums every run"},
  };
  return options;
}

namespace {

/// The parser of every engine option, storing into \p o.
OptionParser engineParser(EngineOptions &o) {
  OptionParser p("engine");
  p.add("autoReport.all", o.autoReportAll);
  p.add("autoReport.outputGraphProfile", o.autoReportGraph);
  p.add("autoReport.outputExecutionProfile", o.autoReportExecution);
  p.add("autoReport.directory", o.autoReportDirectory);
  p.add("debug.allowOutOfMemory", o.allowOutOfMemory);
  p.add("debug.instrument", o.instrument);
  p.add("engine.hostThreads", o.hostThreads, 0, EngineOptions::kMaxHostThreads);
  p.add("engine.hostKernels", o.hostKernels);
  p.add("exchange.enablePrefetch", o.enablePrefetch);
  p.add("debug.floatingPointBehaviour.inv", o.fpInv);
  p.add("debug.floatingPointBehaviour.div0", o.fpDiv0);
  p.add("debug.floatingPointBehaviour.oflo", o.fpOflo);
  p.add("debug.floatingPointBehaviour.nanoo", o.fpNanoo);
  for (const InertEngineOption &io : inertEngineOptions())
    p.addIgnored(io.key, io.reason);
  return p;
}

} // namespace

EngineOptions EngineOptions::parse(const OptionFlags &flags) {
  EngineOptions o;
  OptionParser p = engineParser(o);
  // Poplar's variable, then Tessera's own name over it.
  OptionFlags all =
      merged(merged(flags, optionsFromEnvironment("POPLAR_ENGINE_OPTIONS")),
             optionsFromEnvironment("TESSERA_ENGINE_OPTIONS"));
  p.parse(all);
  return o;
}

std::vector<std::string> EngineOptions::keys() {
  EngineOptions o;
  return engineParser(o).keys();
}

std::string EngineOptions::compileKey() const {
  return "hostKernels=" + std::to_string(hostKernels) +
         " allowOutOfMemory=" + std::to_string(allowOutOfMemory);
}

} // namespace tessera
