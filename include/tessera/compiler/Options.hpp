/// \file
/// EngineOptions: the typed form of the option flags an Engine (and the
/// compiler it calls) accepts, with Poplar's key names where Poplar has one.
/// POPLAR_ENGINE_OPTIONS (JSON) overrides them, and TESSERA_ENGINE_OPTIONS
/// overrides both.
#pragma once

#include "tessera/support/OptionFlags.hpp"

#include <string>
#include <vector>

namespace tessera {

/// An engine option Poplar programs set that has no effect on the IPU
/// Model, and why.
struct InertEngineOption {
  const char *key;
  const char *reason;
};

/// The options EngineOptions::parse accepts (any value) but ignores;
/// `tessera info --options` lists them.
const std::vector<InertEngineOption> &inertEngineOptions();

struct EngineOptions {
  /// autoReport.all: write the graph and execution profile (the graph
  /// profile at load, the execution profile when the engine is destroyed).
  bool autoReportAll = false;
  bool autoReportGraph = false;     ///< autoReport.outputGraphProfile
  bool autoReportExecution = false; ///< autoReport.outputExecutionProfile
  /// autoReport.directory: where profile.json goes.
  std::string autoReportDirectory = ".";
  /// debug.allowOutOfMemory: compile even when a tile overflows.
  bool allowOutOfMemory = false;
  /// engine.hostThreads: host threads that run the model (0: all cores),
  /// at most kMaxHostThreads.
  unsigned hostThreads = 0;
  static constexpr unsigned kMaxHostThreads = 1024;
  /// debug.instrument: record every step's estimated cycles while running.
  bool instrument = false;
  /// debug.floatingPointBehaviour.{inv,div0,oflo,nanoo}: stop a run at the
  /// first compute step whose outputs hold a NaN (inv, nanoo) or an
  /// infinity (div0, oflo), as the IPU's floating-point exception flags do.
  bool fpInv = false, fpDiv0 = false, fpOflo = false, fpNanoo = false;
  /// engine.hostKernels: run the host kernels ops give their compute sets
  /// (Graph::setHostKernel); false runs every tile's vertices.
  bool hostKernels = true;
  /// exchange.enablePrefetch: after each transfer of a host-to-device
  /// stream connected to a StreamCallback, ask its prefetch() for the next
  /// one (see Engine::connectStreamToCallback).
  bool enablePrefetch = true;

  bool profileGraph() const { return autoReportAll || autoReportGraph; }
  /// The options that change what is compiled (not how it runs), as text
  /// for executable cache keys.
  std::string compileKey() const;
  bool profileExecution() const {
    return autoReportAll || autoReportExecution || instrument;
  }

  /// Parses \p flags, then POPLAR_ENGINE_OPTIONS and TESSERA_ENGINE_OPTIONS
  /// over them. Unknown keys (with a "did you mean" hint) and bad values are
  /// OptionErrors; inertEngineOptions() are accepted and logged once each
  /// at INFO.
  static EngineOptions parse(const OptionFlags &flags);
  /// Every key parse accepts, the inert ones among them, in declaration
  /// order.
  static std::vector<std::string> keys();
};

} // namespace tessera
