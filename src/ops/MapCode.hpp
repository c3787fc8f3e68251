// Private to ops/: the bytecode a fused map compiles to. An instruction is
// two words: [opcode | dst << 8 | a << 16 | b << 24] and an extra word (input
// index, constant index, operation, type or third register). Registers hold
// one chunk of elements; the last instruction's register is the result.
#pragma once

#include "tessera/ops/Expr.hpp"

#include <cstdint>
#include <vector>

namespace tessera::ops::mapcode {

enum Opcode : std::uint32_t {
  Load = 0,   ///< extra: input index; bit 31 set: the BOOL input list
  Constant,   ///< extra: constant index
  Unary,      ///< extra: UnaryOpType
  Binary,     ///< extra: BinaryOpType
  Select,     ///< dst = c ? a : b, extra: c register
  Clamp,      ///< dst = clamp(a, b, c), extra: c register
  Cast,       ///< extra: Type
  Index,      ///< dst = index base + element index
};

constexpr unsigned kMaxRegisters = 24;
constexpr std::uint32_t kBoolInput = 1u << 31;

/// A compiled map: code words and constants (as doubles).
struct Program {
  std::vector<std::uint32_t> code;
  std::vector<double> constants;
  unsigned numInstructions() const {
    return static_cast<unsigned>(code.size() / 2);
  }
};

inline std::uint32_t word(Opcode op, unsigned dst, unsigned a = 0,
                          unsigned b = 0) {
  return op | (dst << 8) | (a << 16) | (b << 24);
}

/// Compiles \p e. Placeholder k reads input slot inputSlot[k-1] of the
/// non-BOOL list, or of the BOOL list when isBool[k-1].
Program compile(const expr::Expr &e, const std::vector<unsigned> &inputSlot,
                const std::vector<bool> &isBool);

} // namespace tessera::ops::mapcode
