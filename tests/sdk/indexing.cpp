// PopLibs' index operations as a Poplar program (C++11) calls them, each
// checked against the same computation on the host: popops::gather along a
// middle and the last axis (repeated indices, indices of rank 2),
// popops::encodeOneHot with 1/0 and with on/off values (MASKED_LABEL_CODE
// and out-of-range indices give rows all off), popops::selectScalarFromRows
// (MASKED_LABEL_CODE gives 0, an index past the row gives NaN).
#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <popops/Encoding.hpp>
#include <popops/Gather.hpp>
#include <popops/SelectScalarFromRows.hpp>
#include <popops/codelets.hpp>
#include <poputil/TileMapping.hpp>

#include <cmath>
#include <iostream>
#include <string>
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

std::string str(float v) { return std::to_string(v); }

} // namespace

int main() {
  IPUModel ipuModel;
  ipuModel.tilesPerIPU = 4;
  Device device = ipuModel.createDevice();
  Graph graph(device.getTarget());
  popops::addCodelets(graph);
  Sequence prog;

  // gather from a [3, 4, 2] input: along axis 1 with [2, 2] indices (one
  // repeated, one the axis's last), along axis 2 with [3] indices.
  Tensor input =
      popops::createGatherInput(graph, FLOAT, {3, 4, 2}, 1, {}, "gatherInput");
  Tensor idx1 = graph.addVariable(UNSIGNED_INT, {2, 2}, "idx1");
  Tensor idx2 = graph.addVariable(UNSIGNED_INT, {3}, "idx2");
  poputil::mapTensorLinearly(graph, idx1);
  poputil::mapTensorLinearly(graph, idx2);
  Tensor g1 = popops::gather(graph, input, idx1, 1, prog, {}, "gather1");
  Tensor g2 = popops::gather(graph, input, idx2, 2, prog,
                             popops::GatherParams(1024), "gather2");
  check(g1.shape() == std::vector<std::size_t>({3, 2, 2, 2}),
        "gather along axis 1 has shape " + g1.shapeToString());
  check(g2.shape() == std::vector<std::size_t>({3, 4, 3}),
        "gather along axis 2 has shape " + g2.shapeToString());

  // encodeOneHot of 5 indices into 4 classes, and with on/off into INT.
  Tensor labels = graph.addVariable(UNSIGNED_INT, {5}, "labels");
  Tensor encoded = graph.addVariable(FLOAT, {5, 4}, "encoded");
  Tensor intLabels = graph.addVariable(INT, {5}, "intLabels");
  Tensor encodedInt = graph.addVariable(INT, {5, 4}, "encodedInt");
  poputil::mapTensorLinearly(graph, labels);
  poputil::mapTensorLinearly(graph, encoded);
  poputil::mapTensorLinearly(graph, intLabels);
  poputil::mapTensorLinearly(graph, encodedInt);
  popops::encodeOneHot(graph, labels, encoded, prog, "oneHot");
  Tensor on = graph.addConstant(INT, {}, {7});
  Tensor off = graph.addConstant(INT, {1}, {-2});
  graph.setTileMapping(on, 0);
  graph.setTileMapping(off, 1);
  popops::encodeOneHot(graph, intLabels, encodedInt, prog, on, off, "onOff");

  // selectScalarFromRows of a [4, 3] tensor.
  Tensor params = graph.addVariable(FLOAT, {4, 3}, "params");
  Tensor picks = graph.addVariable(UNSIGNED_INT, {4}, "picks");
  poputil::mapTensorLinearly(graph, params);
  poputil::mapTensorLinearly(graph, picks);
  Tensor selected =
      popops::selectScalarFromRows(graph, params, picks, prog, "select");

  // The checks PopLibs makes on the arguments throw its error class.
  try {
    popops::encodeOneHot(graph, idx2, encoded, prog);
    check(false, "3 indices for 5 one-hot rows did not throw");
  } catch (const poputil::poplibs_error &e) {
    check(std::string(e.what()).find("3 indices") != std::string::npos,
          std::string("the one-hot error does not count the indices: ") +
              e.what());
  }
  try {
    popops::gather(graph, input, idx2, 3, prog, {});
    check(false, "gathering along axis 3 of a rank-3 tensor did not throw");
  } catch (const poputil::poplibs_error &) {
  }

  const char *writes[] = {"gatherInput", "idx1",   "idx2", "labels",
                          "intLabels",   "params", "picks"};
  const Tensor written[] = {input,     idx1,   idx2, labels,
                            intLabels, params, picks};
  for (unsigned i = 0; i < 7; ++i)
    graph.createHostWrite(writes[i], written[i]);
  graph.createHostRead("g1", g1);
  graph.createHostRead("g2", g2);
  graph.createHostRead("encoded", encoded);
  graph.createHostRead("encodedInt", encodedInt);
  graph.createHostRead("selected", selected);

  Engine engine(graph, prog);
  engine.load(device);
  std::vector<float> hIn(24), hParams(12);
  for (unsigned i = 0; i < 24; ++i)
    hIn[i] = 0.5f + static_cast<float>(i);
  for (unsigned i = 0; i < 12; ++i)
    hParams[i] = static_cast<float>(i) * 1.25f - 3.0f;
  const unsigned hIdx1[4] = {3, 0, 3, 1}, hIdx2[3] = {1, 1, 0};
  const unsigned masked = popops::MASKED_LABEL_CODE;
  const unsigned hLabels[5] = {2, 0, masked, 9, 3};
  const int hIntLabels[5] = {1, -1, 3, 4, 0};
  const unsigned hPicks[4] = {2, masked, 5, 0};
  engine.writeTensor("gatherInput", hIn.data(), hIn.data() + 24);
  engine.writeTensor("idx1", hIdx1, hIdx1 + 4);
  engine.writeTensor("idx2", hIdx2, hIdx2 + 3);
  engine.writeTensor("labels", hLabels, hLabels + 5);
  engine.writeTensor("intLabels", hIntLabels, hIntLabels + 5);
  engine.writeTensor("params", hParams.data(), hParams.data() + 12);
  engine.writeTensor("picks", hPicks, hPicks + 4);
  engine.run(0);

  float hG1[24], hG2[36], hEncoded[20], hSelected[4];
  int hEncodedInt[20];
  engine.readTensor("g1", hG1, hG1 + 24);
  engine.readTensor("g2", hG2, hG2 + 36);
  engine.readTensor("encoded", hEncoded, hEncoded + 20);
  engine.readTensor("encodedInt", hEncodedInt, hEncodedInt + 20);
  engine.readTensor("selected", hSelected, hSelected + 4);

  // g1[a][i][j][c] = in[a][idx1[i][j]][c]; g2[a][b][k] = in[a][b][idx2[k]].
  for (unsigned a = 0; a < 3; ++a)
    for (unsigned k = 0; k < 4; ++k)
      for (unsigned c = 0; c < 2; ++c) {
        const float got = hG1[(a * 4 + k) * 2 + c];
        const float want = hIn[(a * 4 + hIdx1[k]) * 2 + c];
        check(got == want, "gather axis 1 [" + std::to_string(a) + "][" +
                               std::to_string(k) + "][" + std::to_string(c) +
                               "] = " + str(got) + ", expected " + str(want));
      }
  for (unsigned a = 0; a < 3; ++a)
    for (unsigned b = 0; b < 4; ++b)
      for (unsigned k = 0; k < 3; ++k) {
        const float got = hG2[(a * 4 + b) * 3 + k];
        const float want = hIn[(a * 4 + b) * 2 + hIdx2[k]];
        check(got == want, "gather axis 2 [" + std::to_string(a) + "][" +
                               std::to_string(b) + "][" + std::to_string(k) +
                               "] = " + str(got) + ", expected " + str(want));
      }
  for (unsigned r = 0; r < 5; ++r)
    for (unsigned c = 0; c < 4; ++c) {
      const float want = hLabels[r] == c ? 1.0f : 0.0f;
      check(hEncoded[r * 4 + c] == want, "oneHot[" + std::to_string(r) + "][" +
                                             std::to_string(c) +
                                             "] = " + str(hEncoded[r * 4 + c]));
      const int wantInt = hIntLabels[r] == static_cast<int>(c) ? 7 : -2;
      check(hEncodedInt[r * 4 + c] == wantInt,
            "oneHot on/off [" + std::to_string(r) + "][" + std::to_string(c) +
                "] = " + std::to_string(hEncodedInt[r * 4 + c]));
    }
  for (unsigned r = 0; r < 4; ++r) {
    const float got = hSelected[r];
    if (hPicks[r] == masked)
      check(got == 0.0f, "masked row's scalar = " + str(got) + ", not 0");
    else if (hPicks[r] >= 3)
      check(std::isnan(got),
            "out-of-range row's scalar = " + str(got) + ", not NaN");
    else
      check(got == hParams[r * 3 + hPicks[r]],
            "selectScalarFromRows[" + std::to_string(r) + "] = " + str(got) +
                ", expected " + str(hParams[r * 3 + hPicks[r]]));
  }
  std::cout << (failures ? "FAILED" : "PASSED") << ": indexing\n";
  return failures ? 1 : 0;
}
