// Pipelining and gradient accumulation options of a model (TensorFlow for
// the IPU's Keras set_pipeline_stage_assignment, set_pipelining_options and
// set_gradient_accumulation_options), and the checks that they go together
// with each other and with compile()'s options before a session is built.
#include "ModelInternal.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tessera::nn {

void Model::dropTrainingSession() {
  if (!compiled_ || !compiled_->train)
    return;
  if (fitting_)
    throw ModelError("model \"" + name_ +
                     "\": its pipelining or gradient accumulation options "
                     "changed while fit() runs (from a callback); change "
                     "them before fit() or after it returns");
  compiled_->pending = compiled_->train->readVariables();
  compiled_->train.reset();
}

void Model::setPipelineStageAssignment(std::vector<unsigned> stages) {
  const std::size_t layers = layers_.empty() ? 0 : layers_.size() - 1;
  if (!stages.empty() && stages.size() != layers)
    throw OptionError(fmt::format(
        "setPipelineStageAssignment: model \"{}\" has {} layers after its "
        "Input but the assignment lists {} stages; give one stage per layer",
        name_, layers, stages.size()));
  if (!stages.empty() && stages[0] != 0)
    throw OptionError(fmt::format(
        "setPipelineStageAssignment: the first layer (\"{}\") is on stage "
        "{}; stages start at 0",
        layers_[1]->name(), stages[0]));
  for (std::size_t i = 1; i < stages.size(); ++i)
    if (stages[i] < stages[i - 1] || stages[i] > stages[i - 1] + 1)
      throw OptionError(fmt::format(
          "setPipelineStageAssignment: layer {} (\"{}\") is on stage {} "
          "after a layer on stage {}; each layer's stage must be its "
          "predecessor's or the next ({} or {})",
          i + 1, layers_[i + 1]->name(), stages[i], stages[i - 1],
          stages[i - 1], stages[i - 1] + 1));
  dropTrainingSession();
  stages_ = std::move(stages);
}

void Model::setPipeliningOptions(PipeliningOptions options) {
  dropTrainingSession();
  pipelining_ = std::move(options);
}

void Model::setGradientAccumulationOptions(
    passes::GradientAccumulationOptions options) {
  if (options.count == 0)
    throw OptionError("setGradientAccumulationOptions: the gradient "
                      "accumulation count must be at least 1");
  dropTrainingSession();
  accumulation_ = options;
}

std::pair<passes::GradientAccumulationOptions, unsigned>
Model::trainingLayout(const CompileOptions &options) const {
  if (stages_.empty()) {
    if (pipelining_)
      throw ModelError(fmt::format(
          "fit: model \"{}\" has pipelining options but no pipeline stage "
          "assignment; call setPipelineStageAssignment with a stage per "
          "layer, or setGradientAccumulationOptions to accumulate without "
          "pipelining",
          name_));
    return {accumulation_, 0};
  }
  if (inputIndices().size() > 1)
    throw UnsupportedError(fmt::format(
        "fit: model \"{}\" has {} inputs; Tessera pipelines models of one "
        "input only, so remove the pipeline stage assignment",
        name_, inputIndices().size()));
  if (stages_.size() + 1 != layers_.size())
    throw OptionError(fmt::format(
        "fit: the pipeline stage assignment lists {} stages but model \"{}\" "
        "now has {} layers after its Input; call setPipelineStageAssignment "
        "again after adding layers",
        stages_.size(), name_, layers_.size() - 1));
  if (!pipelining_)
    throw ModelError(fmt::format(
        "fit: model \"{}\" has a pipeline stage assignment but was compiled "
        "without pipelining options; call setPipeliningOptions (with a "
        "gradient accumulation count of at least {}, the stages) before fit",
        name_, stages_.back() + 1));
  const unsigned S = stages_.back() + 1;
  const PipeliningOptions &p = *pipelining_;
  const unsigned N = p.accumulation.count;
  if (N == 0 || (p.schedule != session::PipelineSchedule::Sequential && N < S))
    throw OptionError(fmt::format(
        "fit: the {} schedule needs a gradient accumulation count of at least "
        "the {} pipeline stages, got {}; set PipeliningOptions::accumulation."
        "count to {} or more (or use the Sequential schedule)",
        session::scheduleName(p.schedule), S, N, S));
  if (!p.deviceMapping.empty() && p.deviceMapping.size() != S)
    throw OptionError(fmt::format(
        "fit: the device mapping lists {} IPUs for {} pipeline stages; give "
        "one IPU per stage",
        p.deviceMapping.size(), S));
  const unsigned ipus =
      p.deviceMapping.empty()
          ? S
          : *std::max_element(p.deviceMapping.begin(), p.deviceMapping.end()) +
                1;
  if (options.config.autoSelectIpus < ipus)
    throw OptionError(fmt::format(
        "fit: the {} pipeline stages of model \"{}\" need {} IPUs but it is "
        "compiled for {} (config.autoSelectIpus); set autoSelectIpus to at "
        "least {}{}",
        S, name_, ipus, options.config.autoSelectIpus, ipus,
        p.deviceMapping.empty() ? " or map several stages to one IPU" : ""));
  return {p.accumulation, S};
}

} // namespace tessera::nn
