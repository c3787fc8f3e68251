/// \file
/// PopART's optimizers: SGD (with momentum, dampening, weight decay),
/// ConstSGD and Adam, given as maps of "default..." values as PopART takes
/// them. They become Tessera's passes::SGD / passes::Adam.
#pragma once

#include <popart/names.hpp>

#include <tessera/passes/Optimizer.hpp>

#include <map>
#include <string>
#include <utility>

namespace popart {

/// A value and whether it stays constant. Tessera ignores the flag: the
/// learning rate and momentum may change through updateOptimizerFromHost,
/// the other values are compiled in.
using OptimizerValue = std::pair<float, bool>;

class Optimizer {
public:
  virtual ~Optimizer() = default;
  virtual tessera::passes::Optimizer toTessera() const = 0;

protected:
  static float get(const std::map<std::string, OptimizerValue> &m,
                   const std::string &key, float dflt,
                   std::initializer_list<const char *> known) {
    for (const auto &[k, v] : m) {
      bool ok = k == "lossScaling";
      for (const char *n : known)
        ok = ok || k == n;
      if (!ok)
        throw tessera::OptionError("optimizer: unknown parameter '" + k + "'");
    }
    auto it = m.find(key);
    return it == m.end() ? dflt : it->second.first;
  }
};

class SGD : public Optimizer {
public:
  explicit SGD(const std::map<std::string, OptimizerValue> &params) {
    static constexpr std::initializer_list<const char *> known = {
        "defaultLearningRate", "defaultMomentum", "defaultDampening",
        "defaultWeightDecay"};
    sgd_.learningRate = get(params, "defaultLearningRate", 0.1f, known);
    sgd_.momentum = get(params, "defaultMomentum", 0, known);
    sgd_.dampening = get(params, "defaultDampening", 0, known);
    sgd_.weightDecay = get(params, "defaultWeightDecay", 0, known);
  }
  tessera::passes::Optimizer toTessera() const override { return sgd_; }

private:
  tessera::passes::SGD sgd_;
};

class ConstSGD : public Optimizer {
public:
  explicit ConstSGD(float learningRate, float weightDecay = 0,
                    float lossScaling = 1) {
    (void)lossScaling;
    sgd_.learningRate = learningRate;
    sgd_.weightDecay = weightDecay;
  }
  tessera::passes::Optimizer toTessera() const override { return sgd_; }

private:
  tessera::passes::SGD sgd_;
};

class Adam : public Optimizer {
public:
  explicit Adam(const std::map<std::string, OptimizerValue> &params) {
    static constexpr std::initializer_list<const char *> known = {
        "defaultLearningRate", "defaultBeta1", "defaultBeta2", "defaultEps",
        "defaultWeightDecay"};
    adam_.learningRate = get(params, "defaultLearningRate", 0.001f, known);
    adam_.beta1 = get(params, "defaultBeta1", 0.9f, known);
    adam_.beta2 = get(params, "defaultBeta2", 0.999f, known);
    adam_.epsilon = get(params, "defaultEps", 1e-8f, known);
    adam_.weightDecay = get(params, "defaultWeightDecay", 0, known);
  }
  tessera::passes::Optimizer toTessera() const override { return adam_; }

private:
  tessera::passes::Adam adam_;
};

} // namespace popart
