/// \file
/// EngineOptions: the typed form of the option flags an Engine (and the
/// compiler it calls) accepts, with Poplar's key names where Poplar has one.
/// TESSERA_ENGINE_OPTIONS (JSON) overrides them, as POPLAR_ENGINE_OPTIONS
/// does.
#pragma once

#include "tessera/support/OptionFlags.hpp"

#include <string>

namespace tessera {

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

  bool profileGraph() const { return autoReportAll || autoReportGraph; }
  /// The options that change what is compiled (not how it runs), as text
  /// for executable cache keys.
  std::string compileKey() const;
  bool profileExecution() const {
    return autoReportAll || autoReportExecution || instrument;
  }

  /// Parses \p flags, then TESSERA_ENGINE_OPTIONS over them. Unknown keys
  /// and bad values are OptionErrors.
  static EngineOptions parse(const OptionFlags &flags);
};

} // namespace tessera
