// The `pva` Python module's classes (python/pva re-exports them): each
// C++ getter becomes a read-only attribute, as PopVision's Python API
// spells them (report.compilation.target.numTiles).
#include "Bindings.hpp"

#include <pva/pva.hpp>

namespace tessera::python {

namespace {

// Binds getters of C as read-only properties; keep_alive is not needed:
// returned references point into the Report, which pybind11 copies into
// the Python object that owns the parent (reference_internal).
template <typename C> class Props {
public:
  Props(py::module_ &m, const char *name, const char *doc)
      : cls_(m, name, doc) {}
  template <typename Getter> Props &add(const char *name, Getter getter) {
    cls_.def_property_readonly(name, getter,
                               py::return_value_policy::reference_internal);
    return *this;
  }
  py::class_<C> &cls() { return cls_; }

private:
  py::class_<C> cls_;
};

} // namespace

void bindPva(py::module_ &parent) {
  py::module_ m = parent.def_submodule(
      "pva", "PopVision-analysis-shaped reader of Tessera's reports.");
  py::register_exception<pva::ReportError>(m, "ReportError",
                                           PyExc_RuntimeError);
  Props<pva::Version>(m, "Version", "The software that wrote the report.")
      .add("string", &pva::Version::string);
  Props<pva::Target>(m, "Target", "The device compiled for.")
      .add("numIPUs", &pva::Target::numIPUs)
      .add("tilesPerIpu", &pva::Target::tilesPerIpu)
      .add("numTiles", &pva::Target::numTiles)
      .add("bytesPerTile", &pva::Target::bytesPerTile)
      .add("bytesPerIPU", &pva::Target::bytesPerIPU)
      .add("clockFrequency", &pva::Target::clockFrequency)
      .add("numReplicas", &pva::Target::numReplicas)
      .add("type", &pva::Target::type);
  Props<pva::Graph>(m, "Graph", "Sizes of the compiled graph.")
      .add("numComputeSets", &pva::Graph::numComputeSets)
      .add("numVertices", &pva::Graph::numVertices)
      .add("numVars", &pva::Graph::numVars);
  Props<pva::MemorySize>(m, "MemorySize", "Bytes with and without gaps.")
      .add("includingGaps", &pva::MemorySize::includingGaps)
      .add("excludingGaps", &pva::MemorySize::excludingGaps);
  Props<pva::TileMemory>(m, "TileMemory", "A tile's memory by category.")
      .add("total", &pva::TileMemory::total)
      .add("alwaysLiveBytes", &pva::TileMemory::alwaysLiveBytes)
      .add("notAlwaysLiveBytes", &pva::TileMemory::notAlwaysLiveBytes)
      .add("constantBytes", &pva::TileMemory::constantBytes)
      .add("temporaryBytes", &pva::TileMemory::temporaryBytes)
      .add("vertexStateBytes", &pva::TileMemory::vertexStateBytes)
      .add("codeBytes", &pva::TileMemory::codeBytes);
  Props<pva::Tile>(m, "Tile", "One tile.")
      .add("number", &pva::Tile::number)
      .add("ipu", &pva::Tile::ipu)
      .add("memory", &pva::Tile::memory)
      .add("numVertices", &pva::Tile::numVertices);
  Props<pva::ComputeSet>(m, "ComputeSet", "A compute set.")
      .add("name", &pva::ComputeSet::name)
      .add("numVertices", &pva::ComputeSet::numVertices);
  Props<pva::Variable>(m, "Variable", "A variable.")
      .add("name", &pva::Variable::name)
      .add("type", &pva::Variable::type)
      .add("shape", &pva::Variable::shape)
      .add("bytes", &pva::Variable::bytes)
      .add("alwaysLive", &pva::Variable::alwaysLive);
  Props<pva::Program>(m, "Program", "The program step a trace entry ran.")
      .add("name", &pva::Program::name)
      .add("type", &pva::Program::type)
      .add("index", &pva::Program::index);
  Props<pva::ExecutionStep>(m, "ExecutionStep", "One executed step.")
      .add("program", &pva::ExecutionStep::program)
      .add("cyclesFrom", &pva::ExecutionStep::cyclesFrom)
      .add("cyclesTo", &pva::ExecutionStep::cyclesTo)
      .add("cycles", &pva::ExecutionStep::cycles)
      .add("ipuCyclesFrom", &pva::ExecutionStep::ipuCyclesFrom)
      .add("ipuCycles", &pva::ExecutionStep::ipuCycles)
      .add("cyclesByTile", &pva::ExecutionStep::cyclesByTile);
  Props<pva::Compilation>(m, "Compilation", "The compiled program.")
      .add("target", &pva::Compilation::target)
      .add("graph", &pva::Compilation::graph)
      .add("tiles", &pva::Compilation::tiles)
      .add("computeSets", &pva::Compilation::computeSets)
      .add("variables", &pva::Compilation::variables)
      .add("totalMemory", &pva::Compilation::totalMemory);
  Props<pva::Execution>(m, "Execution", "The runs the profile recorded.")
      .add("available", &pva::Execution::available)
      .add("runs", &pva::Execution::runs)
      .add("stepsExecuted", &pva::Execution::stepsExecuted)
      .add("complete", &pva::Execution::complete)
      .add("steps", &pva::Execution::steps)
      .add("totalCycles", &pva::Execution::totalCycles);
  Props<pva::DebugContext>(m, "DebugContext", "A level of debug names.")
      .add("path", &pva::DebugContext::path)
      .add("name", &pva::DebugContext::name)
      .add("parent", &pva::DebugContext::parent)
      .add("computeSets", &pva::DebugContext::computeSets)
      .add("variables", &pva::DebugContext::variables)
      .add("steps", &pva::DebugContext::steps);
  Props<pva::Report>(m, "Report", "A report: compilation and execution.")
      .add("poplarVersion", &pva::Report::poplarVersion)
      .add("compilation", &pva::Report::compilation)
      .add("execution", &pva::Report::execution)
      .add("debugContexts", &pva::Report::debugContexts);
  m.def("openReport", &pva::openReport, py::arg("filename"),
        py::arg("debugFilename") = std::string(),
        "Reads a report: its folder, profile.json or profile.pop path; "
        "debugFilename: its debug.cbor.");
}

} // namespace tessera::python
