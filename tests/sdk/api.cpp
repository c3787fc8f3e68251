// PopLibs and Poplar API that Poplar programs use, written as such a
// program writes it (C++11): popnn::calcLoss and calcAccuracy returning
// their Program, popops::reduce / reduceWithOutput into a vector of compute
// sets, poplin::matMul with a PlanningCache, Poplar's and PopLibs'
// exception classes, compileGraph with a progress callback, a virtual
// graph, a rearrangeOnHost stream copy.
#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <poplin/MatMul.hpp>
#include <poplin/codelets.hpp>
#include <popnn/Loss.hpp>
#include <popnn/codelets.hpp>
#include <popops/ElementWise.hpp>
#include <popops/Reduce.hpp>
#include <popops/codelets.hpp>

#include <cmath>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

using namespace poplar;
using namespace poplar::program;

namespace {

int failures = 0;

void check(bool ok, const std::string &what) {
  if (!ok) {
    std::cout << "FAILED: " << what << "\n";
    ++failures;
  }
}

bool near(float a, float b) { return std::fabs(a - b) < 1e-4f; }

} // namespace

int main() {
  IPUModel ipuModel;
  ipuModel.tilesPerIPU = 4;
  Device device = ipuModel.createDevice();
  Graph graph(device.getTarget());
  popops::addCodelets(graph);
  popnn::addCodelets(graph);
  poplin::addCodelets(graph);

  // Four rows of softmax outputs over three classes, and their labels.
  const float probs[4][3] = {{0.7f, 0.2f, 0.1f},
                             {0.1f, 0.8f, 0.1f},
                             {0.3f, 0.3f, 0.4f},
                             {0.2f, 0.5f, 0.3f}};
  const unsigned labels[4] = {0, 2, 2, 1};
  Tensor out = graph.addVariable(FLOAT, {4, 3}, "out");
  Tensor lab = graph.addVariable(UNSIGNED_INT, {4}, "labels");
  Tensor loss = graph.addVariable(FLOAT, {4}, "loss");
  Tensor deltas = graph.addVariable(FLOAT, {4, 3}, "deltas");
  Tensor numCorrect = graph.addVariable(UNSIGNED_INT, {}, "numCorrect");
  Tensor colSum = graph.addVariable(FLOAT, {3}, "colSum");
  graph.setTileMapping(out, 0);
  graph.setTileMapping(lab, 1);
  graph.setTileMapping(loss, 2);
  graph.setTileMapping(deltas, 3);
  graph.setTileMapping(numCorrect, 0);
  graph.setTileMapping(colSum, 1);
  graph.createHostWrite("out", out);
  graph.createHostWrite("labels", lab);
  graph.createHostWrite("numCorrect-write", numCorrect);
  graph.createHostRead("numCorrect", numCorrect);
  graph.createHostRead("loss", loss);
  graph.createHostRead("deltas", deltas);
  graph.createHostRead("colSum", colSum);

  Sequence prog;
  prog.add(popnn::calcLoss(graph, out, lab, loss, deltas, numCorrect,
                           popnn::CROSS_ENTROPY_LOSS, "loss"));
  prog.add(popnn::calcAccuracy(graph, out, lab, numCorrect, "accuracy"));

  // Two reductions sharing their compute sets, run after the loss.
  std::vector<ComputeSet> css;
  popops::reduceWithOutput(graph, out, colSum, {0}, {popops::Operation::ADD},
                           css, "colSum");
  Tensor colMax =
      popops::reduce(graph, out, {0}, popops::Operation::MAX, css, "colMax");
  for (unsigned i = 0; i < css.size(); ++i)
    prog.add(Execute(css[i]));
  graph.createHostRead("colMax", colMax);
  check(!css.empty(), "reduceWithOutput added no compute set");

  // A product planned with a PlanningCache.
  poplin::matmul::PlanningCache cache;
  Tensor a = poplin::createMatMulInputLHS(graph, FLOAT, FLOAT, {2, 3}, {3, 2},
                                          "a", {}, &cache);
  Tensor b = poplin::createMatMulInputRHS(graph, FLOAT, FLOAT, {2, 3}, {3, 2},
                                          "b", {}, &cache);
  Tensor product = poplin::matMul(graph, a, b, prog, FLOAT, "ab", {}, &cache);
  graph.createHostWrite("a", a);
  graph.createHostWrite("b", b);
  graph.createHostRead("product", product);

  // A stream copied with rearrangeOnHost, into a virtual graph's variable.
  Graph upper = graph.createVirtualGraph(2, 4);
  check(upper.getTarget().getNumTiles() == 2,
        "createVirtualGraph(2, 4) has " +
            std::to_string(upper.getTarget().getNumTiles()) + " tiles");
  Tensor scale = upper.addVariable(FLOAT, {1}, "scale");
  upper.setTileMapping(scale, 1);
  DataStream scaleIn = graph.addHostToDeviceFIFO("scale", FLOAT, 1);
  prog.add(Copy(scaleIn, scale, /*rearrangeOnHost=*/true));
  popops::mulInPlace(graph, loss, scale.reshape({}), prog, "scaled");

  // PopLibs' errors come through the headers of the functions that throw.
  try {
    popops::add(graph, loss, colSum, prog, "mismatched");
    check(false, "adding [4] to [3] did not throw");
  } catch (const poputil::poplibs_error &e) {
    check(std::string(e.what()).find("4") != std::string::npos,
          std::string("poplibs_error without the shapes: ") + e.what());
  }

  std::vector<std::pair<int, int>> progress;
  Executable exe = compileGraph(graph, {prog}, {}, [&](int done, int total) {
    progress.push_back(std::make_pair(done, total));
  });
  check(progress.size() >= 2 && progress.back().first == 100 &&
            progress.back().second == 100,
        "compileGraph's progress did not end at 100 of 100");
  for (std::size_t i = 1; i < progress.size(); ++i)
    check(progress[i].first >= progress[i - 1].first,
          "compileGraph's progress went backwards");

  try {
    Engine bad(graph, prog, OptionFlags{{"exchange.enablePrefech", "true"}});
    check(false, "a misspelt engine option was accepted");
  } catch (const poplar::invalid_option &e) {
    check(std::string(e.what()).find("exchange.enablePrefetch") !=
              std::string::npos,
          std::string("no \"did you mean\" in: ") + e.what());
  }

  Engine engine(std::move(exe));
  engine.load(device);
  engine.writeTensor("out", &probs[0][0], &probs[0][0] + 12);
  engine.writeTensor("labels", labels, labels + 4);
  const unsigned zero = 0;
  engine.writeTensor("numCorrect-write", &zero, &zero + 1);
  try {
    engine.run(0);
    check(false, "running with the stream \"scale\" unconnected worked");
  } catch (const poplar::stream_connection_error &) {
  }
  const float hA[6] = {1, 2, 3, 4, 5, 6}, hB[6] = {1, 0, 0, 1, 1, 1};
  engine.writeTensor("a", hA, hA + 6);
  engine.writeTensor("b", hB, hB + 6);
  float scaleValue = 2.0f;
  engine.connectStream(scaleIn, &scaleValue);
  engine.run(0);

  unsigned correct = 0;
  float hLoss[4], hDeltas[12], hSum[3], hMax[3];
  engine.readTensor("numCorrect", &correct, &correct + 1);
  engine.readTensor("loss", hLoss, hLoss + 4);
  engine.readTensor("deltas", hDeltas, hDeltas + 12);
  engine.readTensor("colSum", hSum, hSum + 3);
  engine.readTensor("colMax", hMax, hMax + 3);
  // calcLoss counts 3 correct rows, calcAccuracy adds them again.
  check(correct == 6, "numCorrect = " + std::to_string(correct) + ", not 6");
  for (unsigned r = 0; r < 4; ++r) {
    const float expectLoss = -2.0f * std::log(probs[r][labels[r]]);
    check(near(hLoss[r], expectLoss),
          "loss[" + std::to_string(r) + "] = " + std::to_string(hLoss[r]) +
              ", expected " + std::to_string(expectLoss));
    for (unsigned c = 0; c < 3; ++c) {
      const float expect = probs[r][c] - (c == labels[r] ? 1.0f : 0.0f);
      check(near(hDeltas[r * 3 + c], expect),
            "deltas[" + std::to_string(r) + "][" + std::to_string(c) + "]");
    }
  }
  for (unsigned c = 0; c < 3; ++c) {
    float sum = 0, max = 0;
    for (unsigned r = 0; r < 4; ++r) {
      sum += probs[r][c];
      max = std::max(max, probs[r][c]);
    }
    check(near(hSum[c], sum), "colSum[" + std::to_string(c) + "]");
    check(near(hMax[c], max), "colMax[" + std::to_string(c) + "]");
  }
  float hProduct[4];
  engine.readTensor("product", hProduct, hProduct + 4);
  const float expectProduct[4] = {4, 5, 10, 11};
  for (unsigned i = 0; i < 4; ++i)
    check(near(hProduct[i], expectProduct[i]),
          "product[" + std::to_string(i) +
              "] = " + std::to_string(hProduct[i]));
  std::cout << (failures ? "FAILED" : "PASSED") << ": api, " << correct
            << " correct\n";
  return failures ? 1 : 0;
}
