// Helpers of the passes that rewrite a module's operations in place.
// Internal to the passes library.
#pragma once

#include "tessera/ir/Module.hpp"

#include <cstddef>
#include <functional>

namespace tessera::passes::detail {

/// New operations get \p annotations until this is destroyed (the
/// Builder's scopes only set one annotation each; these copy all of them).
class WithAnnotations {
public:
  WithAnnotations(ir::Module &m, const ir::Annotations &annotations)
      : m_(m), saved_(m.currentAnnotations()) {
    m_.currentAnnotations() = annotations;
  }
  WithAnnotations(const WithAnnotations &) = delete;
  WithAnnotations &operator=(const WithAnnotations &) = delete;
  ~WithAnnotations() { m_.currentAnnotations() = saved_; }

private:
  ir::Module &m_;
  ir::Annotations saved_;
};

/// Replaces operand \p from by \p to in every op except those \p skip
/// accepts (by index).
void replaceUses(ir::Module &m, ir::ValueId from, ir::ValueId to,
                 const std::function<bool(std::size_t)> &skip);

/// Reorders the ops so each comes after the producers of its operands,
/// keeping the existing order wherever the data flow allows (for passes
/// that append ops which earlier ops then read).
void sortTopologically(ir::Module &m);

} // namespace tessera::passes::detail
