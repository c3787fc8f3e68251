// Logistic regression on Fashion-MNIST, in the shape of the workshop's
// fifth Poplar tutorial: on a 4-tile IPU Model, a loop on the device
// streams batches in, computes softmax(x W + b), the cross-entropy loss and
// its gradients, and updates W and b by gradient descent. Then a second
// program counts correct predictions on the test set.
// Usage: mnist_logistic [epochs] [batch size] [learning rate]
#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <poplin/MatMul.hpp>
#include <poplin/codelets.hpp>
#include <popnn/Loss.hpp>
#include <popnn/NonLinearity.hpp>
#include <popnn/codelets.hpp>
#include <popops/ElementWise.hpp>
#include <popops/Reduce.hpp>
#include <popops/ScaledAdd.hpp>
#include <popops/Zero.hpp>
#include <popops/codelets.hpp>
#include <poputil/TileMapping.hpp>
#include <tessera/data/Idx.hpp>

#include <chrono>
#include <cstdio>

using namespace poplar;
using namespace poplar::program;

int main(int argc, char **argv) {
  const unsigned epochs = argc > 1 ? std::atoi(argv[1]) : 2;
  const unsigned batch = argc > 2 ? std::atoi(argv[2]) : 16;
  const float rate = argc > 3 ? std::atof(argv[3]) : 0.05f;
  const unsigned pixels = 28 * 28, classes = 10;

  tessera::data::Mnist data = tessera::data::loadFashionMnist();
  const unsigned trainBatches = 60000 / batch, testBatches = 10000 / batch;
  std::vector<unsigned> trainLabels(data.trainLabels.values.begin(),
                                    data.trainLabels.values.end());
  std::vector<unsigned> testLabels(data.testLabels.values.begin(),
                                   data.testLabels.values.end());

  IPUModel ipuModel;
  ipuModel.tilesPerIPU = 4;
  Device device = ipuModel.createDevice();
  Graph graph(device.getTarget());
  popops::addCodelets(graph);
  poplin::addCodelets(graph);
  popnn::addCodelets(graph);

  Tensor x = poplin::createMatMulInputLHS(graph, FLOAT, {batch, pixels},
                                          {pixels, classes}, "x");
  Tensor w = poplin::createMatMulInputRHS(graph, FLOAT, {batch, pixels},
                                          {pixels, classes}, "weights");
  Tensor b = graph.addVariable(FLOAT, {classes}, "biases");
  Tensor labels = graph.addVariable(UNSIGNED_INT, {batch}, "labels");
  Tensor numCorrect = graph.addVariable(UNSIGNED_INT, {}, "numCorrect");
  poputil::mapTensorLinearly(graph, b);
  poputil::mapTensorLinearly(graph, labels);
  graph.setTileMapping(numCorrect, 0);
  graph.setInitialValue(w, 0.0f);
  graph.setInitialValue(b, 0.0f);
  graph.createHostWrite("numCorrect-write", numCorrect);
  graph.createHostRead("numCorrect", numCorrect);
  DataStream trainImages =
      graph.addHostToDeviceFIFO("trainImages", FLOAT, batch * pixels);
  DataStream trainLabelStream =
      graph.addHostToDeviceFIFO("trainLabels", UNSIGNED_INT, batch);
  DataStream testImages =
      graph.addHostToDeviceFIFO("testImages", FLOAT, batch * pixels);
  DataStream testLabelStream =
      graph.addHostToDeviceFIFO("testLabels", UNSIGNED_INT, batch);

  // The forward pass: probabilities of each class.
  auto forward = [&](Sequence &s) {
    Tensor logits = poplin::matMul(graph, x, w, s, "logits");
    popops::addInPlace(graph, logits, b, s, "addBias");
    return popnn::nonLinearity(graph, popnn::NonLinearityType::SOFTMAX_STABLE,
                               logits, s, "softmax");
  };

  Sequence step;
  step.add(Copy(trainImages, x));
  step.add(Copy(trainLabelStream, labels));
  Tensor probs = forward(step);
  Tensor loss = graph.addVariable(FLOAT, {batch}, "loss");
  poputil::mapTensorLinearly(graph, loss);
  Tensor deltas = graph.clone(probs, "deltas");
  popnn::calcLoss(graph, probs, labels, loss, deltas, numCorrect,
                  popnn::CROSS_ENTROPY_LOSS, step, "loss");
  Tensor dw = poplin::matMul(graph, x.transpose(), deltas, step, "dW");
  Tensor db = popops::reduce(graph, deltas, {0},
                             popops::ReduceParams(popops::Operation::ADD),
                             step, "dB");
  popops::scaledAddTo(graph, w, dw, -rate / batch, step, "updateW");
  popops::scaledAddTo(graph, b, db, -rate / batch, step, "updateB");
  Repeat train(trainBatches, step);

  Sequence testStep;
  testStep.add(Copy(testImages, x));
  testStep.add(Copy(testLabelStream, labels));
  popnn::calcAccuracy(graph, forward(testStep), labels, numCorrect, testStep,
                      "accuracy");
  Repeat test(testBatches, testStep);

  Engine engine(graph, {train, test});
  engine.load(device);
  engine.connectStream("trainImages", data.trainImages.values.data(),
                       data.trainImages.values.data() +
                           std::size_t(trainBatches) * batch * pixels);
  engine.connectStream("trainLabels", trainLabels.data(),
                       trainLabels.data() + trainBatches * batch);
  engine.connectStream("testImages", data.testImages.values.data(),
                       data.testImages.values.data() +
                           std::size_t(testBatches) * batch * pixels);
  engine.connectStream("testLabels", testLabels.data(),
                       testLabels.data() + testBatches * batch);

  auto countRun = [&](unsigned prog) {
    unsigned zero = 0, correct = 0;
    engine.writeTensor("numCorrect-write", &zero, &zero + 1);
    engine.run(prog);
    engine.readTensor("numCorrect", &correct, &correct + 1);
    return correct;
  };
  const auto start = std::chrono::steady_clock::now();
  for (unsigned e = 1; e <= epochs; ++e) {
    const unsigned correct = countRun(0);
    std::printf("epoch %u/%u: training accuracy %.4f\n", e, epochs,
                double(correct) / (trainBatches * batch));
  }
  const double seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
  const unsigned correct = countRun(1);
  std::printf("test accuracy: %.4f\n", double(correct) / (testBatches * batch));
  std::fflush(stdout);
  std::fprintf(stderr, "host time %.2f s for %u training steps\n", seconds,
               epochs * trainBatches);
  return 0;
}
