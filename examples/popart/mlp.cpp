// A PopART program on Tessera: builds a two-layer classifier with the
// Builder, trains it with a TrainingSession (SGD, 10 batches per run),
// writes the trained model to an ONNX file, imports that file into an
// InferenceSession and measures its accuracy.
//
//   popart_mlp [OUT.onnx]
#include <popart/builder.hpp>
#include <popart/dataflow.hpp>
#include <popart/devicemanager.hpp>
#include <popart/ndarraywrapper.hpp>
#include <popart/optimizer.hpp>
#include <popart/session.hpp>
#include <popart/stepio.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

constexpr int kBatch = 16, kFeatures = 4, kHidden = 16, kClasses = 3;
constexpr int kBatchesPerStep = 10;

// A small deterministic generator, so the program prints the same numbers
// on every run.
struct Lcg {
  std::uint64_t s = 12345;
  float uniform() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return float((s >> 40) & 0xffffff) / float(1 << 24);
  }
  float normal() {
    const float u = std::max(uniform(), 1e-7f), v = uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(6.2831853f * v);
  }
};

// Three classes: points around three centres.
void makeBatch(Lcg &g, float *x, std::int32_t *labels) {
  static const float centres[kClasses][kFeatures] = {
      {2, 0, 0, 1}, {0, 2, 0, -1}, {0, 0, 2, 0}};
  for (int i = 0; i < kBatch; ++i) {
    labels[i] = std::int32_t(g.uniform() * kClasses) % kClasses;
    for (int f = 0; f < kFeatures; ++f)
      x[i * kFeatures + f] = centres[labels[i]][f] + 0.7f * g.normal();
  }
}

std::vector<float> weights(Lcg &g, int rows, int cols) {
  std::vector<float> w(std::size_t(rows) * cols);
  for (float &v : w)
    v = g.normal() * std::sqrt(2.0f / float(rows));
  return w;
}

// The classifier's tensors and its serialised ONNX model.
struct Model {
  popart::TensorId x, labels, probs, loss;
  std::string proto;
};

Model buildModel(Lcg &g) {
  auto builder = popart::Builder::create();
  auto aiOnnx = builder->aiOnnxOpset11();
  auto aiGraphcore = builder->aiGraphcoreOpset1();
  Model m;
  m.x = builder->addInputTensor(
      popart::TensorInfo{"FLOAT", {kBatch, kFeatures}}, "x");
  m.labels =
      builder->addInputTensor(popart::TensorInfo{"INT32", {kBatch}}, "labels");
  std::vector<float> w1 = weights(g, kFeatures, kHidden), b1(kHidden, 0.0f);
  std::vector<float> w2 = weights(g, kHidden, kClasses), b2(kClasses, 0.0f);
  auto W1 = builder->addInitializedInputTensor(
      {w1.data(), {"FLOAT", {kFeatures, kHidden}}}, "w1");
  auto B1 = builder->addInitializedInputTensor(
      {b1.data(), {"FLOAT", {kHidden}}}, "b1");
  auto W2 = builder->addInitializedInputTensor(
      {w2.data(), {"FLOAT", {kHidden, kClasses}}}, "w2");
  auto B2 = builder->addInitializedInputTensor(
      {b2.data(), {"FLOAT", {kClasses}}}, "b2");
  auto h = aiOnnx.relu({aiOnnx.add({aiOnnx.matmul({m.x, W1}), B1})});
  auto logits = aiOnnx.add({aiOnnx.matmul({h, W2}), B2});
  m.probs = aiOnnx.softmax({logits}, 1, "probs");
  m.loss = aiGraphcore.nllloss({m.probs, m.labels}, popart::ReductionType::Mean,
                               "loss");
  builder->addOutputTensor(m.probs);
  builder->addOutputTensor(m.loss);
  m.proto = builder->getModelProto();
  return m;
}

// Eight runs of kBatchesPerStep batches with SGD, printing each run's mean
// loss; writes the trained model to outPath.
void train(const Model &m, Lcg &g,
           const std::shared_ptr<popart::DeviceInfo> &device,
           const std::string &outPath) {
  popart::DataFlow flow(kBatchesPerStep,
                        {{m.loss, popart::AnchorReturnType("All")}});
  auto session = popart::TrainingSession::createFromOnnxModel(
      m.proto, flow, m.loss, popart::ConstSGD(0.1f), device);
  session->prepareDevice();
  session->weightsFromHost();
  std::vector<float> xs(kBatchesPerStep * kBatch * kFeatures);
  std::vector<std::int32_t> ys(kBatchesPerStep * kBatch);
  std::vector<float> losses(kBatchesPerStep);
  popart::NDArrayWrapper<float> xArray(xs.data(),
                                       {kBatchesPerStep, kBatch, kFeatures});
  popart::NDArrayWrapper<std::int32_t> yArray(ys.data(),
                                              {kBatchesPerStep, kBatch});
  popart::NDArrayWrapper<float> lossArray(losses.data(), {kBatchesPerStep});
  popart::StepIO io({{m.x, xArray}, {m.labels, yArray}}, {{m.loss, lossArray}});
  for (int run = 0; run < 8; ++run) {
    for (int b = 0; b < kBatchesPerStep; ++b)
      makeBatch(g, &xs[std::size_t(b) * kBatch * kFeatures],
                &ys[std::size_t(b) * kBatch]);
    session->run(io);
    float mean = 0;
    for (float l : losses)
      mean += l / kBatchesPerStep;
    std::printf("run %d: mean loss %.3f\n", run + 1, mean);
  }
  session->modelToHost(outPath);
}

// The accuracy of the model in the ONNX file at path on 20 new batches.
double evaluate(const Model &m, Lcg &g,
                const std::shared_ptr<popart::DeviceInfo> &device,
                const std::string &path, int &total) {
  popart::DataFlow flow(1, {{m.probs, popart::AnchorReturnType("All")}});
  auto session =
      popart::InferenceSession::createFromOnnxModel(path, flow, device);
  session->prepareDevice();
  session->weightsFromHost();
  std::vector<float> xs(kBatch * kFeatures), p(kBatch * kClasses);
  std::vector<std::int32_t> ys(kBatch);
  popart::NDArrayWrapper<float> xArray(xs.data(), {kBatch, kFeatures});
  popart::NDArrayWrapper<std::int32_t> yArray(ys.data(), {kBatch});
  popart::NDArrayWrapper<float> pArray(p.data(), {kBatch, kClasses});
  popart::StepIO io({{m.x, xArray}, {m.labels, yArray}}, {{m.probs, pArray}});
  int correct = 0;
  total = 0;
  for (int batch = 0; batch < 20; ++batch) {
    makeBatch(g, xs.data(), ys.data());
    session->run(io);
    for (int i = 0; i < kBatch; ++i, ++total) {
      const float *row = &p[std::size_t(i) * kClasses];
      const int best = int(std::max_element(row, row + kClasses) - row);
      correct += best == ys[std::size_t(i)];
    }
  }
  return double(correct) / total;
}

} // namespace

int main(int argc, char **argv) {
  const std::string outPath = argc > 1 ? argv[1] : "popart_mlp.onnx";
  Lcg g;
  const Model m = buildModel(g);
  auto device =
      popart::DeviceManager::createDeviceManager().createIpuModelDevice(
          {{"numIPUs", "1"}, {"tilesPerIPU", "16"}});
  train(m, g, device, outPath);
  int total = 0;
  const double accuracy = evaluate(m, g, device, outPath, total);
  std::printf("accuracy of %s on %d new examples: %.3f\n", outPath.c_str(),
              total, accuracy);
  return 0;
}
