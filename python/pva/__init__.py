"""pva: read Tessera's profile reports the way PopVision's analysis library
reads Poplar's.

    import pva
    report = pva.openReport("reports/profile.pop")
    print(report.compilation.target.numTiles)
    for step in report.execution.steps:
        print(step.program.name, step.cyclesFrom, step.cyclesTo)

openReport takes the autoReport.directory folder, its profile.json, or a
profile.pop path in it (Tessera writes profile.json and debug.cbor; the
.pop name is accepted so scripts run unchanged). Cycles are the IPU
Model's estimates. See compat/include/pva/pva.hpp for every attribute.
"""

from tessera._tessera.pva import (  # noqa: F401
    Compilation, ComputeSet, DebugContext, Execution, ExecutionStep, Graph,
    MemorySize, Program, Report, ReportError, Target, Tile, TileMemory,
    Variable, Version, openReport)

__all__ = ["openReport", "ReportError", "Report", "Compilation", "Execution",
           "ExecutionStep", "Program", "Target", "Graph", "Tile",
           "TileMemory", "MemorySize", "ComputeSet", "Variable",
           "DebugContext", "Version"]
