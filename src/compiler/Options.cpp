#include "tessera/compiler/Options.hpp"

#include "tessera/support/OptionParser.hpp"

namespace tessera {

EngineOptions EngineOptions::parse(const OptionFlags &flags) {
  EngineOptions o;
  OptionParser p("engine");
  p.add("autoReport.all", o.autoReportAll);
  p.add("autoReport.outputGraphProfile", o.autoReportGraph);
  p.add("autoReport.outputExecutionProfile", o.autoReportExecution);
  p.add("autoReport.directory", o.autoReportDirectory);
  p.add("debug.allowOutOfMemory", o.allowOutOfMemory);
  p.add("debug.instrument", o.instrument);
  p.add("engine.hostThreads", o.hostThreads, 0, kMaxHostThreads);
  p.add("engine.hostKernels", o.hostKernels);
  p.add("debug.floatingPointBehaviour.inv", o.fpInv);
  p.add("debug.floatingPointBehaviour.div0", o.fpDiv0);
  p.add("debug.floatingPointBehaviour.oflo", o.fpOflo);
  p.add("debug.floatingPointBehaviour.nanoo", o.fpNanoo);
  p.parse(merged(flags, optionsFromEnvironment("TESSERA_ENGINE_OPTIONS")));
  return o;
}

std::string EngineOptions::compileKey() const {
  return "hostKernels=" + std::to_string(hostKernels) +
         " allowOutOfMemory=" + std::to_string(allowOutOfMemory);
}

} // namespace tessera
