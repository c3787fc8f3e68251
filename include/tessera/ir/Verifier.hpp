/// \file
/// The verifier: checks that a module is well formed, as every pass must
/// leave it. Run in tests and after each pass.
///
/// Checks: every value's definition agrees with the module's lists (inputs,
/// variables, constants, ops); every operand is defined before its op and
/// belongs to the module; operand and result counts fit the kind; result
/// types equal what shape inference gives for the operands and attributes;
/// constants and explicit initial values have one value or one per
/// element; names are unique; outputs name defined values, once each;
/// annotations are valid: IPUs below VerifyOptions::numIpus when given, and
/// pipeline stages never decrease along forward data flow (a forward op
/// cannot use a value of a later stage) nor increase along backward data
/// flow between backward ops.
#pragma once

#include "tessera/ir/Module.hpp"

namespace tessera::ir {

struct VerifyOptions {
  /// IPUs available (0: do not check IPU annotations against a count).
  unsigned numIpus = 0;
};

/// Throws IrError (or the ShapeError / TypeError of shape inference)
/// describing the first problem found, naming the op by its index and kind
/// and the values involved.
void verify(const Module &module, const VerifyOptions &options = {});

} // namespace tessera::ir
