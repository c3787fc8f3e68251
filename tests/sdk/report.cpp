// A PopVision-analysis-style script in C++ (C++11, linked with -lpva as
// the SDK's libpva): profile a run with autoReport, then read the report
// back and check what it says about the program.
#include <poplar/Engine.hpp>
#include <poplar/IPUModel.hpp>
#include <popops/ElementWise.hpp>
#include <popops/codelets.hpp>
#include <pva/pva.hpp>

#include <iostream>

using namespace poplar;
using namespace poplar::program;

int main() {
  IPUModel ipuModel;
  ipuModel.tilesPerIPU = 4;
  Device device = ipuModel.createDevice();
  Graph graph(device.getTarget());
  popops::addCodelets(graph);
  Tensor x = graph.addVariable(FLOAT, {8}, "x");
  graph.setTileMapping(x, 1);
  Sequence prog;
  popops::addInPlace(graph, x, x, prog, "double");
  {
    Engine engine(graph, prog,
                  OptionFlags{{"autoReport.all", "true"},
                              {"autoReport.directory", "profile-report"}});
    engine.load(device);
    engine.run(0);
    engine.run(0);
  }
  pva::Report report = pva::openReport("profile-report/profile.pop");
  const pva::Compilation &c = report.compilation();
  int failures = 0;
  if (c.target().numTiles() != 4) {
    std::cout << "FAILED: the report has " << c.target().numTiles()
              << " tiles, not 4\n";
    ++failures;
  }
  if (c.graph().numComputeSets() < 1 || c.tiles().size() != 4 ||
      c.tiles()[1].memory().total().excludingGaps() == 0) {
    std::cout << "FAILED: no compute set, or tile 1 holds nothing\n";
    ++failures;
  }
  if (report.execution().runs() != 2 || report.execution().steps().empty()) {
    std::cout << "FAILED: the report has " << report.execution().runs()
              << " runs, not 2\n";
    ++failures;
  }
  std::cout << (failures ? "FAILED" : "PASSED") << ": report, "
            << c.graph().numComputeSets() << " compute sets, "
            << report.execution().steps().size() << " steps\n";
  return failures ? 1 : 0;
}
