/// \file
/// PopART's sessions: InferenceSession and TrainingSession, created from an
/// ONNX model (a serialised ModelProto or the path of a .onnx file), run
/// on Tessera's IPU Model through tessera::onnx::ModelSession.
///
///     auto s = popart::InferenceSession::createFromOnnxModel(
///         proto, popart::DataFlow(1, {{y, popart::AnchorReturnType("All")}}),
///         device);
///     s->prepareDevice();
///     s->weightsFromHost();
///     popart::StepIO io(inputs, anchors);
///     s->run(io);
#pragma once

#include <popart/dataflow.hpp>
#include <popart/devicemanager.hpp>
#include <popart/optimizer.hpp>
#include <popart/sessionoptions.hpp>
#include <popart/stepio.hpp>

#include <tessera/onnx/ModelSession.hpp>

#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

namespace popart {

/// Accepted for compatibility: input shapes come from the model.
struct InputShapeInfo {};
/// Accepted for compatibility: Tessera applies no PopART patterns.
struct Patterns {};

class Session {
public:
  virtual ~Session() = default;
  void prepareDevice() { impl_->prepareDevice(); }
  void weightsFromHost() { impl_->weightsFromHost(); }
  /// Runs batchesPerStep batches: reads every model input from \p io and
  /// writes every anchor to it.
  void run(IStepIO &io) {
    std::map<std::string, tessera::data::HostTensor> in;
    for (const std::string &id : impl_->inputs()) {
      IArray *a = io.input(id);
      if (!a)
        throw tessera::StreamError("run: the StepIO has no input '" + id + "'");
      in.emplace(id, toHost(*a, impl_->inputType(id).dtype, id));
    }
    auto out = impl_->run(in);
    for (auto &[id, t] : out) {
      IArray *a = io.output(id);
      if (!a)
        throw tessera::StreamError("run: the StepIO has no array for anchor '" +
                                   id + "'");
      fromHost(t, *a, id);
    }
  }
  /// Writes the model with the trained weights to \p path.
  void modelToHost(const std::string &path) { impl_->modelToHost(path); }
  tessera::onnx::ModelSession &tessera() { return *impl_; }

protected:
  static std::string readModel(const std::string &model) {
    if (model.size() < 4096 && model.find('\0') == std::string::npos) {
      std::ifstream f(model, std::ios::binary);
      if (f) {
        std::ostringstream ss;
        ss << f.rdbuf();
        return ss.str();
      }
    }
    return model;
  }
  static tessera::onnx::ModelSessionOptions options(const DeviceInfo &device,
                                                    const SessionOptions &o) {
    tessera::onnx::ModelSessionOptions t;
    t.pipelining = o.enablePipelining;
    const unsigned replicas =
        o.enableReplicatedGraphs ? unsigned(o.replicatedGraphCount) : 1;
    t.config.replicationFactor = replicas;
    t.config.autoSelectIpus = std::max(1u, device.getNumIpus() / replicas);
    t.config.ipuModel.tilesPerIpu = device.getTilesPerIPU();
    if (o.enableEngineCaching)
      t.config.executableCachePath = o.cachePath;
    return t;
  }
  std::unique_ptr<tessera::onnx::ModelSession> impl_;

private:
  static tessera::data::HostTensor toHost(IArray &a, tessera::Type type,
                                          const std::string &id) {
    tessera::data::HostTensor t(type, {a.nelms()});
    const DataType from = a.dataType();
    if (type == tessera::FLOAT && from == DataType::FLOAT) {
      std::memcpy(t.data(), a.data(), t.numBytes());
    } else if (type == tessera::INT && from == DataType::INT32) {
      std::memcpy(t.data(), a.data(), t.numBytes());
    } else if (type == tessera::INT && from == DataType::INT64) {
      auto *dst = static_cast<std::int32_t *>(t.data());
      const auto *src = static_cast<const std::int64_t *>(a.data());
      for (std::size_t i = 0; i < a.nelms(); ++i)
        dst[i] = static_cast<std::int32_t>(src[i]);
    } else {
      throw tessera::TypeError("run: input '" + id +
                               "' has the wrong element type for the "
                               "model's " +
                               std::string(tessera::ir::dtypeName(type)));
    }
    return t;
  }
  static void fromHost(const tessera::data::HostTensor &t, IArray &a,
                       const std::string &id) {
    if (a.nelms() != t.numElements())
      throw tessera::StreamError(
          "run: anchor '" + id + "' has " + std::to_string(t.numElements()) +
          " elements but its array holds " + std::to_string(a.nelms()));
    const bool same =
        (t.type() == tessera::FLOAT && a.dataType() == DataType::FLOAT) ||
        (t.type() == tessera::INT && a.dataType() == DataType::INT32);
    if (!same)
      throw tessera::TypeError("run: anchor '" + id +
                               "' does not have its array's element type");
    std::memcpy(a.data(), t.data(), t.numBytes());
  }
};

class InferenceSession : public Session {
public:
  static std::unique_ptr<InferenceSession> createFromOnnxModel(
      const std::string &model, const DataFlow &dataFlow,
      std::shared_ptr<DeviceInfo> device, const InputShapeInfo & = {},
      const SessionOptions &userOptions = {}, const Patterns & = {}) {
    std::unique_ptr<InferenceSession> s(new InferenceSession);
    s->impl_ = std::make_unique<tessera::onnx::ModelSession>(
        readModel(model), dataFlow.toTessera(), options(*device, userOptions));
    return s;
  }
};

class TrainingSession : public Session {
public:
  /// Minimises the scalar \p loss with \p optimizer.
  static std::unique_ptr<TrainingSession> createFromOnnxModel(
      const std::string &model, const DataFlow &dataFlow, const TensorId &loss,
      const Optimizer &optimizer, std::shared_ptr<DeviceInfo> device,
      const InputShapeInfo & = {}, const SessionOptions &userOptions = {},
      const Patterns & = {}) {
    std::unique_ptr<TrainingSession> s(new TrainingSession);
    auto o = options(*device, userOptions);
    tessera::onnx::TrainingSpec t;
    t.loss = loss;
    t.optimizer = optimizer.toTessera();
    if (userOptions.enableGradientAccumulation)
      t.accumulationFactor = unsigned(userOptions.accumulationFactor);
    o.training = t;
    s->impl_ = std::make_unique<tessera::onnx::ModelSession>(
        readModel(model), dataFlow.toTessera(), std::move(o));
    return s;
  }
  /// Trains the following runs with \p optimizer's learning rate and
  /// momentum, written to the device without recompiling; the optimizer
  /// must otherwise match the session's (OptionError naming what differs).
  void updateOptimizerFromHost(const Optimizer *optimizer) {
    impl_->updateOptimizer(optimizer->toTessera());
  }
};

} // namespace popart
