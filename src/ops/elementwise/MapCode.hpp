// Private to ops/: the bytecode a fused map compiles to. An instruction is
// two words: [opcode | dst << 8 | a << 16 | b << 24] and an extra word (input
// index, constant index, operation, type or third register). Registers hold
// one chunk of elements; the last instruction's register is the result.
#pragma once

#include "tessera/ops/Expr.hpp"

#include <algorithm>
#include <cstddef>
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
  /// Instructions that compute (not loads of inputs, constants or the
  /// index): what the per-vector cost of a map scales with.
  unsigned numOperations() const {
    unsigned n = 0;
    for (std::size_t i = 0; i < code.size(); i += 2) {
      const std::uint32_t op = code[i] & 0xff;
      n += op != Load && op != Constant && op != Index;
    }
    return n;
  }
  /// Whether a result may depend on its element's index (Index loads).
  bool usesIndex() const {
    for (std::size_t i = 0; i < code.size(); i += 2)
      if ((code[i] & 0xff) == Index)
        return true;
    return false;
  }
};

/// Worker cycles of a map vertex writing \p n elements, \p width to a
/// 64-bit vector, running \p operations computing instructions: Poplar's
/// figures for a binary op (a fixed cost, then ~3 worker cycles per vector
/// for two loads and one op+store) per operation, at least one.
inline std::uint64_t mapWorkerCycles(unsigned fixed, unsigned perVector,
                                     unsigned operations, std::uint64_t n,
                                     unsigned width) {
  const std::uint64_t ops = std::max(operations, 1u);
  return fixed + ops * perVector * ((n + width - 1) / width);
}
/// The same for a worker that runs several regions (a 2-D vertex): each
/// region rounds up to whole vectors, and each after the first costs one
/// vector's worth more to set up its pointers and loop count.
template <typename Sizes>
std::uint64_t mapWorkerCycles(unsigned fixed, unsigned perVector,
                              unsigned operations, const Sizes &regionSizes,
                              unsigned width) {
  const std::uint64_t ops = std::max(operations, 1u);
  std::uint64_t cycles = fixed;
  for (const auto n : regionSizes)
    cycles += ops * perVector * ((std::uint64_t(n) + width - 1) / width);
  if (!regionSizes.empty())
    cycles += perVector * (regionSizes.size() - 1);
  return cycles;
}

inline std::uint32_t word(Opcode op, unsigned dst, unsigned a = 0,
                          unsigned b = 0) {
  return op | (dst << 8) | (a << 16) | (b << 24);
}

/// Compiles \p e. Placeholder k reads input slot inputSlot[k-1] of the
/// non-BOOL list, or of the BOOL list when isBool[k-1].
Program compile(const expr::Expr &e, const std::vector<unsigned> &inputSlot,
                const std::vector<bool> &isBool);

} // namespace tessera::ops::mapcode
