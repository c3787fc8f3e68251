/// \file
/// The IR's text form: print() writes a module, parse() reads one back, and
/// print(parse(print(m))) == print(m). Example:
///
///     module "mlp" {
///       %x = input : float[32, 784]
///       %w = variable : float[784, 256] init glorotUniform(seed = 1)
///       %b = variable : float[256] init zeros
///       %3 = matmul(%x, %w) : float[32, 256] @ipu(0)
///       %4 = add(%3, %b) : float[32, 256] @ipu(0)
///       %y = relu(%4) : float[32, 256] @ipu(1) @stage(1) @recompute
///       %6 = constant : float[] 0.5
///       %7, %8, %9 = batchNorm(%y, %g, %b2) {eps = 0.001} : float[...], ...
///       output "y" = %y
///       update %w = %w2
///       gradient %w = %gw
///       state %m of %w
///     }
///
/// Values are written %name when they have a name that is an identifier
/// (a letter or _ and then letters, digits, _ . /), %"any text" for other
/// names, and %N (their position in the printed module) when unnamed.
/// Leaves: `input`, `variable` (`variable nontrainable` for a non-trainable
/// one) with `init <initialiser>` (Initialiser::toString's form), and
/// `constant` with one value (every element) or a list. Attributes are
/// {name = value, ...} with integers, floats (always written with a '.' or
/// an exponent: 1.0, 1e-05), strings and integer lists [1, 2]. Annotations
/// follow the types: @ipu(k), @stage(s), @recompute, @backward. After the
/// outputs come the training records (Module::setUpdate, setGradient,
/// setStateOf, setHyperParameter): `update %var = %new`, `gradient %var =
/// %grad`, `state %state of %owner` and `hyper %var "name"`. Comments run from
/// '#' to the end of the line.
#pragma once

#include "tessera/ir/Module.hpp"

#include <iosfwd>
#include <string>
#include <string_view>

namespace tessera::ir {

/// Text that is not a module: the message starts "line L, column C: "
/// and says what was expected and what was found.
class ParseError : public Error {
public:
  ParseError(unsigned line, unsigned column, const std::string &message);
  unsigned line() const { return line_; }
  unsigned column() const { return column_; }

private:
  unsigned line_, column_;
};

/// The text form of \p module.
std::string print(const Module &module);
void print(const Module &module, std::ostream &os);

/// The module \p text describes. Every operation's result types are
/// inferred and must equal the declared ones. Throws ParseError (shape and
/// type errors too, with their position).
Module parse(std::string_view text);

} // namespace tessera::ir
