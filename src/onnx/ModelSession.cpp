#include "tessera/onnx/ModelSession.hpp"

#include "ImporterInternal.hpp"

#include "tessera/data/Dataset.hpp"
#include "tessera/passes/GradientAccumulation.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>

namespace tessera::onnx {

struct ModelSession::Impl {
  ::onnx::ModelProto model;
  DataFlow flow;
  ModelSessionOptions options;
  ImportedModel imported;
  std::set<std::string> initializers;
  std::vector<std::string> anchorNames;
  unsigned accumulation = 1;
  std::unique_ptr<session::Session> session;
  std::map<std::string, data::HostTensor> hostWeights;

  unsigned replicas() const { return options.config.replicationFactor; }
  std::size_t elementsPerRun() const {
    return std::size_t{flow.batchesPerStep} * accumulation * replicas();
  }
  // [batches, accumulation, replicas] without the dimensions of size 1.
  ir::Shape lead(std::size_t batches) const {
    ir::Shape s;
    for (std::size_t d :
         {batches, std::size_t{accumulation}, std::size_t{replicas()}})
      if (d != 1)
        s.push_back(d);
    return s;
  }
  session::Session &device(const char *what) {
    if (!session)
      throw OptionError(std::string(what) +
                        ": the device is not ready; call prepareDevice() "
                        "first");
    return *session;
  }
  void addAnchors();
  void makeTraining(const TrainingSpec &t);
  void importStages(const std::string &modelProto);
};

void ModelSession::Impl::importStages(const std::string &modelProto) {
  const unsigned stages = imported.stages;
  if (stages == 1) {
    // One stage is the whole model: it runs as it would unpipelined.
    options.import.pipelining = false;
    imported = importModel(modelProto, options.import);
    return;
  }
  if (stages == 0)
    return;
  const unsigned n = options.training->accumulationFactor;
  if (n < stages)
    throw OptionError(
        "enablePipelining: the model has " + std::to_string(stages) +
        " pipeline stages, and pipelined training needs a gradient "
        "accumulation factor of at least the number of stages (PopART's "
        "rule: each weight update's batches fill the pipeline), but the "
        "accumulation factor is " +
        std::to_string(n) +
        "; set enableGradientAccumulation and an accumulationFactor of at "
        "least " +
        std::to_string(stages));
  options.config.pipeline.deviceMapping.assign(imported.stageIpus.begin(),
                                               imported.stageIpus.end());
}

void ModelSession::Impl::addAnchors() {
  ir::Module &m = imported.module;
  for (const auto &[name, anchor] : flow.anchors) {
    auto it = imported.tensors.find(name);
    if (it == imported.tensors.end())
      throw OptionError("DataFlow anchors '" + name +
                        "', which is no tensor computed by the model (or is "
                        "folded at import)");
    if (m.value(it->second).kind == ir::ValueKind::Input)
      throw OptionError("DataFlow anchors '" + name +
                        "', an input of the model: the host has it already");
    if (anchor.mode == AnchorMode::EVERY_N &&
        (anchor.period == 0 || flow.batchesPerStep % anchor.period != 0))
      throw OptionError("anchor '" + name + "': EVERY_N period " +
                        std::to_string(anchor.period) +
                        " must divide batchesPerStep (" +
                        std::to_string(flow.batchesPerStep) + ")");
    if (anchor.mode == AnchorMode::SUM && m.typeOf(it->second).dtype != FLOAT)
      throw OptionError("anchor '" + name +
                        "': SUM needs a float tensor, not " +
                        m.typeOf(it->second).toString());
    // A plain reference: clang 14 cannot capture a structured binding.
    const std::string &anchorName = name;
    if (std::none_of(m.outputs().begin(), m.outputs().end(),
                     [&anchorName](const ir::Output &o) {
                       return o.name == anchorName;
                     }))
      m.addOutput(name, it->second);
    anchorNames.push_back(name);
  }
}

void ModelSession::Impl::makeTraining(const TrainingSpec &t) {
  ir::Module &m = imported.module;
  auto it = imported.tensors.find(t.loss);
  if (it == imported.tensors.end())
    throw OptionError("the loss '" + t.loss +
                      "' is no tensor computed by the model");
  const ir::ValueType &type = m.typeOf(it->second);
  if (type.dtype != FLOAT || type.numElements() != 1)
    throw OptionError("the loss '" + t.loss + "' is " + type.toString() +
                      "; it must be a float scalar (reduce it with "
                      "ReduceMean or a loss's reduction)");
  if (t.accumulationFactor == 0)
    throw OptionError("the accumulation factor must be at least 1");
  ir::Value loss(m, it->second);
  if (type.rank() != 0)
    loss = ir::reshape(loss, {});
  passes::TrainingOptions o;
  o.optimizer = t.optimizer;
  o.crossReplicaMean = replicas() > 1;
  passes::makeTrainingStep(m, loss, o);
  accumulation = t.accumulationFactor;
  // Running statistics and dropout seeds move on every micro-batch, not
  // with the weight update once every N.
  ir::Builder b(m);
  passes::GradientAccumulationOptions a{.count = accumulation};
  for (const auto &[variable, next] : imported.stateUpdates) {
    b.update(ir::Value(m, variable), ir::Value(m, next));
    a.microBatchUpdates.push_back(variable);
  }
  passes::accumulateGradients(m, a);
}

ModelSession::ModelSession(const std::string &modelProto, DataFlow dataFlow,
                           ModelSessionOptions options)
    : impl_(new Impl) {
  Impl &s = *impl_;
  if (dataFlow.batchesPerStep == 0)
    throw OptionError("batchesPerStep must be at least 1");
  s.flow = std::move(dataFlow);
  s.options = std::move(options);
  // A training session runs training-mode operators as training does.
  if (s.options.training)
    s.options.import.training = true;
  // Stages pipeline training only; inference runs the nodes sharded.
  s.options.import.pipelining = s.options.pipelining && s.options.training;
  s.imported = importModel(modelProto, s.options.import);
  if (s.options.import.pipelining)
    s.importStages(modelProto);
  s.model.ParseFromString(modelProto); // importModel has checked it
  for (const auto &t : s.model.graph().initializer())
    s.initializers.insert(t.name());
  s.addAnchors();
  if (s.options.training)
    s.makeTraining(*s.options.training);
}

ModelSession::~ModelSession() = default;

void ModelSession::prepareDevice(std::ostream *progress) {
  Impl &s = *impl_;
  s.session = std::make_unique<session::Session>(
      s.imported.module, s.options.config,
      session::RunSpec{s.imported.inputs, s.anchorNames,
                       s.flow.batchesPerStep * s.accumulation});
  s.session->compile(progress);
}

void ModelSession::writeWeights(
    const std::map<std::string, data::HostTensor> &weights) {
  for (const auto &[name, t] : weights) {
    if (!impl_->initializers.count(name))
      throw OptionError("writeWeights: '" + name + "' is no initializer");
    impl_->hostWeights[name] = t;
  }
}

void ModelSession::weightsFromHost() {
  Impl &s = *impl_;
  session::Session &d = s.device("weightsFromHost");
  session::Checkpoint now = d.readVariables();
  for (auto &[name, t] : now.variables) {
    auto it = s.hostWeights.find(name);
    if (it == s.hostWeights.end())
      continue;
    if (it->second.type() != t.type() || it->second.shape() != t.shape())
      throw ShapeError(
          "weightsFromHost: weight '" + name + "' is " +
          ir::ValueType{t.type(), t.shape()}.toString() +
          " on the device but the host's is " +
          ir::ValueType{it->second.type(), it->second.shape()}.toString());
    t = it->second;
  }
  d.writeVariables(now, "the host's weights");
}

std::map<std::string, data::HostTensor> ModelSession::readWeights() {
  std::map<std::string, data::HostTensor> r;
  for (auto &[name, t] : impl_->device("readWeights").readVariables().variables)
    if (impl_->initializers.count(name))
      r[name] = std::move(t);
  return r;
}

std::map<std::string, data::HostTensor> ModelSession::readState() {
  std::map<std::string, data::HostTensor> r;
  for (auto &[name, t] : impl_->device("readState").readVariables().variables)
    r[name] = std::move(t);
  return r;
}

std::size_t
ModelSession::writeState(const std::map<std::string, data::HostTensor> &state) {
  session::Session &d = impl_->device("writeState");
  session::Checkpoint now = d.readVariables();
  std::size_t written = 0;
  for (auto &[name, t] : now.variables) {
    auto it = state.find(name);
    if (it == state.end() || it->second.type() != t.type() ||
        it->second.shape() != t.shape())
      continue;
    t = it->second;
    ++written;
  }
  d.writeVariables(now, "the state written");
  return written;
}

void ModelSession::updateOptimizer(const passes::Optimizer &optimizer) {
  Impl &s = *impl_;
  if (!s.options.training)
    throw OptionError("updateOptimizerFromHost: an inference session has no "
                      "optimizer; create a TrainingSession");
  std::string why;
  if (!passes::sameProgram(s.options.training->optimizer, optimizer, &why))
    throw OptionError(
        "updateOptimizerFromHost: the new optimizer differs from the "
        "session's in what is compiled in (" +
        why +
        "); only the learning rate and momentum change without "
        "recompiling, so create a new session for the others");
  session::Session &d = s.device("updateOptimizerFromHost");
  for (const auto &[name, value] : passes::runtimeHyperParameters(optimizer))
    d.setHyperParameter(name, value);
  s.options.training->optimizer = optimizer;
}

void ModelSession::setRandomSeed(std::uint64_t seed) {
  session::Session &d = impl_->device("setRandomSeed");
  session::Checkpoint now = d.readVariables();
  for (auto &[name, t] : now.variables)
    if (name == "tessera/dropout_seed") {
      auto *words = static_cast<std::uint32_t *>(t.data());
      words[0] = static_cast<std::uint32_t>(seed);
      words[1] = static_cast<std::uint32_t>(seed >> 32);
    }
  d.writeVariables(now, "the random seed");
}

std::map<std::string, data::HostTensor>
ModelSession::run(const std::map<std::string, data::HostTensor> &inputs) {
  Impl &s = *impl_;
  session::Session &d = s.device("run");
  const std::size_t n = s.elementsPerRun();
  std::vector<data::HostTensor> feeds;
  for (const std::string &name : s.imported.inputs) {
    auto it = inputs.find(name);
    if (it == inputs.end())
      throw StreamError("run: no data for input '" + name + "'");
    const ir::ValueType t = inputType(name);
    if (it->second.type() != t.dtype ||
        it->second.numElements() != n * t.numElements())
      throw StreamError(
          "run: input '" + name + "' is " +
          ir::ValueType{it->second.type(), it->second.shape()}.toString() +
          "; it must hold " + std::to_string(n) +
          " (batchesPerStep x "
          "accumulation x replicas) x " +
          t.toString());
    ir::Shape shape{n};
    shape.insert(shape.end(), t.shape.begin(), t.shape.end());
    data::HostTensor x(t.dtype, shape);
    std::memcpy(x.data(), it->second.data(), x.numBytes());
    feeds.push_back(std::move(x));
  }
  session::Infeed in(data::Dataset::fromTensors(std::move(feeds)));
  session::Outfeed out;
  d.connect(in, out);
  d.run();
  const std::vector<data::Element> steps = out.dequeueAll();
  TESSERA_INTERNAL_ASSERT(steps.size() == n, "one outfeed element per batch");
  const std::size_t perBatch = n / s.flow.batchesPerStep;
  std::map<std::string, data::HostTensor> result;
  for (std::size_t a = 0; a < s.anchorNames.size(); ++a) {
    const Anchor &anchor = s.flow.anchors.at(s.anchorNames[a]);
    const data::HostTensor &first = steps[0][a];
    std::vector<std::size_t> batches; // which batches the anchor returns
    for (std::size_t b = 0; b < s.flow.batchesPerStep; ++b)
      if (anchor.mode == AnchorMode::ALL || anchor.mode == AnchorMode::SUM ||
          (anchor.mode == AnchorMode::FINAL &&
           b + 1 == s.flow.batchesPerStep) ||
          (anchor.mode == AnchorMode::EVERY_N && (b + 1) % anchor.period == 0))
        batches.push_back(b);
    const bool sum = anchor.mode == AnchorMode::SUM;
    const bool perStep =
        anchor.mode == AnchorMode::ALL || anchor.mode == AnchorMode::EVERY_N;
    ir::Shape shape = s.lead(perStep ? batches.size() : 1);
    shape.insert(shape.end(), first.shape().begin(), first.shape().end());
    data::HostTensor t(first.type(), shape);
    auto *dst = static_cast<std::byte *>(t.data());
    const std::size_t bytes = first.numBytes();
    for (std::size_t i = 0; i < batches.size(); ++i)
      for (std::size_t j = 0; j < perBatch; ++j) {
        const data::HostTensor &e = steps[batches[i] * perBatch + j][a];
        if (!sum) {
          std::memcpy(dst + (i * perBatch + j) * bytes, e.data(), bytes);
          continue;
        }
        auto *acc = reinterpret_cast<float *>(dst + j * bytes);
        const auto *v = static_cast<const float *>(e.data());
        for (std::size_t k = 0; k < e.numElements(); ++k)
          acc[k] += v[k];
      }
    result.emplace(s.anchorNames[a], std::move(t));
  }
  return result;
}

std::string ModelSession::modelWithWeights() {
  ::onnx::ModelProto m = impl_->model;
  const auto weights = readWeights();
  for (auto &t : *m.mutable_graph()->mutable_initializer()) {
    auto it = weights.find(t.name());
    if (it == weights.end() || it->second.type() != FLOAT)
      continue;
    t.clear_raw_data();
    t.clear_float_data();
    t.set_data_type(::onnx::TensorProto::FLOAT);
    const auto *v = static_cast<const float *>(it->second.data());
    for (std::size_t i = 0; i < it->second.numElements(); ++i)
      t.add_float_data(v[i]);
  }
  return m.SerializeAsString();
}

void ModelSession::modelToHost(const std::string &path) {
  const std::string bytes = modelWithWeights();
  std::ofstream f(path, std::ios::binary);
  if (!f.write(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    throw SerializationError("modelToHost: cannot write '" + path + "'");
}

const std::vector<std::string> &ModelSession::inputs() const {
  return impl_->imported.inputs;
}

ir::ValueType ModelSession::inputType(const std::string &name) const {
  const ir::Module &m = impl_->imported.module;
  auto id = m.findValue(name);
  if (!id || m.value(*id).kind != ir::ValueKind::Input)
    throw OptionError("'" + name + "' is not an input of the model");
  return m.typeOf(*id);
}

ir::Shape ModelSession::anchorShape(const std::string &name) const {
  const Impl &s = *impl_;
  auto it = s.flow.anchors.find(name);
  if (it == s.flow.anchors.end())
    throw OptionError("'" + name + "' is not anchored");
  const std::size_t b = it->second.mode == AnchorMode::ALL
                            ? s.flow.batchesPerStep
                        : it->second.mode == AnchorMode::EVERY_N
                            ? s.flow.batchesPerStep / it->second.period
                            : 1;
  ir::Shape shape = s.lead(b);
  const ir::Shape &own =
      s.imported.module.typeOf(s.imported.module.output(name)).shape;
  shape.insert(shape.end(), own.begin(), own.end());
  return shape;
}

const ir::Module &ModelSession::module() const {
  return impl_->imported.module;
}

} // namespace tessera::onnx
