/// \file
/// Recomputation as an IR pass: forward operations marked @recompute whose
/// results the backward pass reads are computed again in the backward
/// pass, from the values they read, so their results need not be kept
/// from the forward pass to the backward one (the activations a pipeline
/// stage stashes per micro-batch shrink to the stage's inputs).
///
///     passes::AutodiffPass ... ;               // the backward pass exists
///     passes::recompute(module, {.stages = true});
///
/// Each such operation gets a clone, annotated as part of the backward pass
/// on the same stage and IPU, that the backward operations read instead;
/// clones read clones of recomputed operands of the same stage and the
/// original values otherwise (a stage's inputs, weights, and what other
/// stages computed). The originals lose the annotation. With stages set,
/// every forward operation of a pipeline stage except the last is
/// recomputed (the last stage's backward pass follows its forward pass
/// directly, so keeping its activations costs nothing: TensorFlow for the
/// IPU's pipelined recomputation does the same).
#pragma once

#include "tessera/passes/Pass.hpp"

namespace tessera::passes {

struct RecomputeOptions {
  /// Recompute every forward operation of the pipeline stages but the last.
  bool stages = false;
};

/// Rewrites \p module as the file comment says; returns whether anything
/// was recomputed.
bool recompute(ir::Module &module, const RecomputeOptions &options = {});

/// recompute as a pass.
class RecomputePass : public Pass {
public:
  explicit RecomputePass(RecomputeOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "recompute"; }
  bool run(ir::Module &module) override { return recompute(module, options_); }

private:
  RecomputeOptions options_;
};

} // namespace tessera::passes
