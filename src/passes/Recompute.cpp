#include "tessera/passes/Recompute.hpp"

#include "Rewrite.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

namespace tessera::passes {
namespace {

class Recomputer {
public:
  explicit Recomputer(ir::Module &m) : m_(m) {}

  bool run(bool stages) {
    std::vector<ir::Op> &ops = m_.mutableOps();
    if (stages) {
      std::optional<unsigned> last;
      for (const ir::Op &op : ops)
        if (op.annotations.pipelineStage)
          last = std::max(last.value_or(0), *op.annotations.pipelineStage);
      for (ir::Op &op : ops)
        if (op.annotations.pipelineStage && !op.annotations.backward &&
            !op.annotations.weightUpdate &&
            op.annotations.pipelineStage != last)
          op.annotations.recompute = true;
    }
    marked_.assign(m_.numValues(), false);
    for (const ir::Op &op : ops)
      if (op.annotations.recompute && !op.annotations.backward)
        for (ir::ValueId r : op.results)
          marked_[r] = true;
    // Indices: cloning appends ops, so each backward op is found again.
    const std::size_t n = ops.size();
    bool changed = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (!m_.ops()[i].annotations.backward)
        continue;
      for (std::size_t k = 0; k < m_.ops()[i].operands.size(); ++k) {
        const ir::ValueId v = m_.ops()[i].operands[k];
        // Another stage's value is that stage's output: kept, not redone.
        if (v < marked_.size() && marked_[v] &&
            m_.producer(v).annotations.pipelineStage ==
                m_.ops()[i].annotations.pipelineStage) {
          const ir::ValueId c = cloneOf(v);
          m_.mutableOps()[i].operands[k] = c;
          changed = true;
        }
      }
    }
    for (ir::Op &op : m_.mutableOps())
      op.annotations.recompute = false;
    if (changed)
      detail::sortTopologically(m_);
    return changed;
  }

private:
  // The backward pass's copy of recomputed value \p v (made once).
  ir::ValueId cloneOf(ir::ValueId v) {
    if (auto it = clones_.find(v); it != clones_.end())
      return it->second;
    // A copy: adding ops below may move the module's table.
    const ir::Op op = m_.producer(v);
    std::vector<ir::ValueId> operands;
    for (ir::ValueId o : op.operands) {
      const bool sameStage = m_.value(o).kind == ir::ValueKind::OpResult &&
                             m_.producer(o).annotations.pipelineStage ==
                                 op.annotations.pipelineStage;
      operands.push_back(
          o < marked_.size() && marked_[o] && sameStage ? cloneOf(o) : o);
    }
    ir::Annotations a = op.annotations;
    a.recompute = false;
    a.backward = true;
    const std::vector<ir::ValueId> results =
        m_.addOp(op.kind, operands, op.attrs, a);
    for (std::size_t r = 0; r < results.size(); ++r)
      clones_[op.results[r]] = results[r];
    return clones_.at(v);
  }

  ir::Module &m_;
  std::vector<bool> marked_;
  std::map<ir::ValueId, ir::ValueId> clones_;
};

} // namespace

bool recompute(ir::Module &module, const RecomputeOptions &options) {
  return Recomputer(module).run(options.stages);
}

} // namespace tessera::passes
