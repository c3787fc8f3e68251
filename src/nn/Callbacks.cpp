// Callbacks that follow a learning-rate schedule through
// Model::setLearningRate, so the schedule needs no recompiling.
#include "tessera/nn/Model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace tessera::nn {

void LearningRateScheduler::onEpochBegin(unsigned epoch) {
  model_.setLearningRate(schedule_(epoch, model_.learningRate()));
}

ReduceLROnPlateau::ReduceLROnPlateau(Model &model, std::string monitor,
                                     double factor, unsigned patience,
                                     double minDelta, double minLr)
    : model_(model), monitor_(std::move(monitor)), factor_(factor),
      minDelta_(minDelta), minLr_(minLr), patience_(patience),
      best_(std::numeric_limits<double>::infinity()) {
  if (!(factor > 0 && factor < 1))
    throw OptionError(fmt::format(
        "ReduceLROnPlateau: factor must lie in (0, 1) to reduce the learning "
        "rate, not {}",
        factor));
}

void ReduceLROnPlateau::onEpochEnd(unsigned /*epoch*/, const Logs &logs) {
  const double value = logValue(logs, monitor_);
  if (value < best_ - minDelta_) {
    best_ = value;
    wait_ = 0;
    return;
  }
  if (++wait_ < patience_)
    return;
  wait_ = 0;
  const double lr = model_.learningRate();
  const double next = std::max(lr * factor_, minLr_);
  if (next < lr)
    model_.setLearningRate(next);
}

} // namespace tessera::nn
