// tessera_onnx_run: imports an ONNX file and runs it once on the IPU Model
// (or the host interpreter), for the equivalence tests that export models
// from PyTorch at test time (torchvision_equivalence.py).
//
//   tessera_onnx_run MODEL OUTDIR [--interpret] [--tiles N] NAME=FILE...
//   tessera_onnx_run MODEL OUTDIR --train LOSS --steps N (--sgd LR | --adam LR)
//                    NAME=FILE...
//
// Each input is read from FILE as raw float32 (int32 for integer inputs);
// output i is written to OUTDIR/<i>.bin as raw float32, and its name and
// shape printed. Training runs N steps (FILE holds N batches) through
// ModelSession and writes the N losses to OUTDIR/0.bin.
#include "tessera/data/Dataset.hpp"
#include "tessera/ir/Interpreter.hpp"
#include "tessera/onnx/Importer.hpp"
#include "tessera/onnx/ModelSession.hpp"
#include "tessera/session/Session.hpp"

#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>

using namespace tessera;

namespace {

std::vector<char> readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw Error("cannot read '" + path + "'");
  return {std::istreambuf_iterator<char>(f), {}};
}

void writeFloats(const std::string &path, const std::vector<float> &v) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char *>(v.data()),
          static_cast<std::streamsize>(v.size() * sizeof(float)));
}

// One input's bytes, checked against the module's input.
data::HostTensor inputTensor(const ir::ValueType &t, const std::string &file) {
  const std::vector<char> bytes = readFile(file);
  const std::size_t elemSize = 4;
  if (bytes.size() != t.numElements() * elemSize)
    throw ShapeError("'" + file + "' holds " + std::to_string(bytes.size()) +
                     " bytes; the input " + t.toString() + " needs " +
                     std::to_string(t.numElements() * elemSize));
  ir::Shape shape{1}; // one step
  shape.insert(shape.end(), t.shape.begin(), t.shape.end());
  data::HostTensor x(t.dtype == FLOAT ? FLOAT : INT, shape);
  std::memcpy(x.data(), bytes.data(), bytes.size());
  return x;
}

std::vector<std::vector<float>>
runSession(onnx::ImportedModel &im,
           const std::map<std::string, std::string> &files, unsigned tiles) {
  std::vector<data::HostTensor> tensors;
  for (const std::string &name : im.inputs)
    tensors.push_back(inputTensor(im.module.typeOf(*im.module.findValue(name)),
                                  files.at(name)));
  session::Config config;
  config.ipuModel.tilesPerIpu = tiles;
  session::Session s(std::move(im.module), config, {im.inputs, im.outputs, 1});
  s.compile();
  session::Infeed in(data::Dataset::fromTensors(std::move(tensors)));
  session::Outfeed out;
  s.connect(in, out);
  s.run();
  std::vector<std::vector<float>> results;
  const data::Element e = *out.dequeue(true);
  for (std::size_t i = 0; i < im.outputs.size(); ++i) {
    const auto *p = static_cast<const float *>(e[i].data());
    results.emplace_back(p, p + e[i].numElements());
  }
  return results;
}

std::vector<std::vector<float>>
runInterpreter(const onnx::ImportedModel &im,
               const std::map<std::string, std::string> &files) {
  ir::Feeds feeds;
  for (const std::string &name : im.inputs) {
    const ir::ValueType &t = im.module.typeOf(*im.module.findValue(name));
    const std::vector<char> bytes = readFile(files.at(name));
    std::vector<double> v(t.numElements());
    for (std::size_t i = 0; i < v.size() && (i + 1) * 4 <= bytes.size(); ++i) {
      float f;
      std::int32_t k;
      std::memcpy(&f, bytes.data() + 4 * i, 4);
      std::memcpy(&k, bytes.data() + 4 * i, 4);
      v[i] = t.dtype == FLOAT ? double(f) : double(k);
    }
    feeds[name] = ir::HostValue{t.dtype, t.shape, std::move(v)};
  }
  const ir::Evaluation e = ir::interpret(im.module, feeds);
  std::vector<std::vector<float>> results;
  for (const std::string &name : im.outputs) {
    const auto &v = e.output(name).values;
    results.emplace_back(v.begin(), v.end());
  }
  return results;
}

struct TrainArgs {
  std::string loss;
  unsigned steps = 1;
  passes::Optimizer optimizer = passes::SGD{};
};

std::vector<float> train(const std::string &modelPath, const TrainArgs &t,
                         const std::map<std::string, std::string> &files,
                         unsigned tiles) {
  const std::vector<char> bytes = readFile(modelPath);
  onnx::ModelSessionOptions o;
  o.config.ipuModel.tilesPerIpu = tiles;
  o.training = onnx::TrainingSpec{t.loss, t.optimizer};
  onnx::ModelSession s(std::string(bytes.begin(), bytes.end()),
                       {.batchesPerStep = t.steps, .anchors = {{t.loss, {}}}},
                       o);
  s.prepareDevice();
  std::map<std::string, data::HostTensor> inputs;
  for (const std::string &name : s.inputs()) {
    const std::vector<char> data = readFile(files.at(name));
    const Type type = s.inputType(name).dtype == FLOAT ? FLOAT : INT;
    data::HostTensor x(type, {data.size() / 4});
    std::memcpy(x.data(), data.data(), x.numBytes());
    inputs.emplace(name, std::move(x));
  }
  const auto r = s.run(inputs);
  const auto *p = static_cast<const float *>(r.at(t.loss).data());
  return {p, p + t.steps};
}

} // namespace

int main(int argc, char **argv) try {
  if (argc < 3) {
    std::cerr << "usage: tessera_onnx_run MODEL OUTDIR [--interpret] "
                 "[--tiles N] NAME=FILE...\n";
    return 2;
  }
  bool interpret = false;
  unsigned tiles = 1472;
  std::map<std::string, std::string> files;
  std::optional<TrainArgs> training;
  auto tr = [&]() -> TrainArgs & {
    return training ? *training : training.emplace();
  };
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    const bool value = i + 1 < argc;
    if (a == "--interpret")
      interpret = true;
    else if (a == "--train" && value)
      tr().loss = argv[++i];
    else if (a == "--steps" && value)
      tr().steps = static_cast<unsigned>(std::stoul(argv[++i]));
    else if (a == "--sgd" && value)
      tr().optimizer = passes::SGD{.learningRate = std::stod(argv[++i])};
    else if (a == "--adam" && value)
      tr().optimizer = passes::Adam{.learningRate = std::stod(argv[++i])};
    else if (a == "--tiles" && i + 1 < argc)
      tiles = static_cast<unsigned>(std::stoul(argv[++i]));
    else if (auto eq = a.find('='); eq != std::string::npos)
      files[a.substr(0, eq)] = a.substr(eq + 1);
    else
      throw Error("unexpected argument '" + a + "'");
  }
  if (training) {
    const std::vector<float> losses = train(argv[1], *training, files, tiles);
    writeFloats(std::string(argv[2]) + "/0.bin", losses);
    std::cout << training->loss << " [" << losses.size() << "]\n";
    return 0;
  }
  onnx::ImportedModel im = onnx::importModelFile(argv[1]);
  for (const std::string &name : im.inputs)
    if (!files.count(name))
      throw Error("no file given for input '" + name + "'");
  std::vector<std::string> names = im.outputs;
  std::vector<ir::Shape> shapes;
  for (const std::string &name : names)
    shapes.push_back(im.module.typeOf(im.module.output(name)).shape);
  const auto results =
      interpret ? runInterpreter(im, files) : runSession(im, files, tiles);
  for (std::size_t i = 0; i < results.size(); ++i) {
    writeFloats(std::string(argv[2]) + "/" + std::to_string(i) + ".bin",
                results[i]);
    std::cout << names[i] << " " << ir::shapeToString(shapes[i]) << "\n";
  }
  return 0;
} catch (const std::exception &e) {
  std::cerr << "tessera_onnx_run: " << e.what() << "\n";
  return 1;
}
