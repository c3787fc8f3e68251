/// \file
/// Passes over IR modules and the manager that runs them in order. Each
/// pass has a name and a run(Module&) that reports whether it changed the
/// module; the manager verifies the module after every pass (so a broken
/// pass is caught where it broke things) and can print the module after
/// each one.
#pragma once

#include "tessera/ir/Module.hpp"
#include "tessera/ir/Verifier.hpp"

#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::passes {

/// A transform of a module.
class Pass {
public:
  virtual ~Pass() = default;
  /// A short name ("autodiff"), for logs and dumps.
  virtual std::string_view name() const = 0;
  /// Transforms \p module; returns whether anything changed.
  virtual bool run(ir::Module &module) = 0;
};

struct PassManagerOptions {
  /// Verify the module after each pass (an IrError names the pass).
  bool verifyEachPass = true;
  /// What the verifier checks annotations against.
  ir::VerifyOptions verify;
  /// When set, the module's text after each pass is written here, headed
  /// "# after <name>".
  std::ostream *dump = nullptr;
  /// When not empty, the module's text before the passes and after each
  /// one is written into this folder (created when missing) as
  /// "<module>.<NN>.<pass>.ir" (NN = 00 before the first pass), each file
  /// atomically.
  std::string dumpDirectory;

  /// Defaults, with dumpDirectory from the environment variable
  /// TESSERA_DUMP_IR when it is set.
  static PassManagerOptions fromEnvironment();
};

/// Runs passes in the order they were added.
class PassManager {
public:
  explicit PassManager(PassManagerOptions options = {})
      : options_(std::move(options)) {}
  void add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  /// Runs every pass; returns whether any changed the module. Errors from
  /// the verifier are IrErrors saying which pass left the module broken.
  bool run(ir::Module &module);

private:
  PassManagerOptions options_;
  std::vector<std::unique_ptr<Pass>> passes_;
};

} // namespace tessera::passes
