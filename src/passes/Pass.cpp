#include "tessera/passes/Pass.hpp"

#include "tessera/ir/Text.hpp"

#include <ostream>

namespace tessera::passes {

bool PassManager::run(ir::Module &module) {
  bool changed = false;
  for (const auto &pass : passes_) {
    changed |= pass->run(module);
    if (options_.dump)
      *options_.dump << "# after " << pass->name() << "\n" << ir::print(module);
    if (!options_.verifyEachPass)
      continue;
    try {
      ir::verify(module, options_.verify);
    } catch (const Error &e) {
      throw ir::IrError("the module does not verify after pass '" +
                        std::string(pass->name()) + "': " + e.what());
    }
  }
  return changed;
}

} // namespace tessera::passes
