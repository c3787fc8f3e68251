/// \file
/// PopART's StepIO: the host arrays of one run, inputs and anchors by
/// tensor id.
#pragma once

#include <popart/ndarraywrapper.hpp>

#include <map>

namespace popart {

class IStepIO {
public:
  virtual ~IStepIO() = default;
  virtual IArray *input(const TensorId &id) = 0;
  virtual IArray *output(const TensorId &id) = 0;
};

class StepIO : public IStepIO {
public:
  StepIO(std::map<TensorId, IArray &> inputs,
         std::map<TensorId, IArray &> outputs)
      : inputs_(std::move(inputs)), outputs_(std::move(outputs)) {}
  IArray *input(const TensorId &id) override {
    auto it = inputs_.find(id);
    return it == inputs_.end() ? nullptr : &it->second;
  }
  IArray *output(const TensorId &id) override {
    auto it = outputs_.find(id);
    return it == outputs_.end() ? nullptr : &it->second;
  }

private:
  std::map<TensorId, IArray &> inputs_;
  std::map<TensorId, IArray &> outputs_;
};

} // namespace popart
