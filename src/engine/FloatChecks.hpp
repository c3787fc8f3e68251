// Private to the engine: the floating-point behaviour checks. The IPU traps
// on an invalid operation, a division by zero or an overflow when its
// exception flags are set; the IPU Model finds the same first offending
// compute step by scanning the float outputs of each step's vertices.
#pragma once

#include "tessera/compiler/Executable.hpp"
#include "tessera/compiler/Options.hpp"
#include "tessera/graph/VertexRegistry.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tessera::engine {

class FloatChecker {
public:
  /// Collects the float and half outputs of every vertex of \p exe.
  FloatChecker(const Executable &exe,
               const std::vector<const RegisteredVertex *> &classes,
               const EngineOptions &options);

  /// Whether any flag is set.
  bool enabled() const { return nan_ || inf_; }

  /// Throws FloatingPointError naming compute step \p pc, its compute set,
  /// the vertex, tile, field and element of the first forbidden value the
  /// step wrote in the memory \p mem of replica \p replica.
  void check(const Step &st, std::size_t pc, const std::byte *mem,
             unsigned replica) const;

private:
  struct Output {
    std::uint64_t addr;
    std::uint32_t count;
    Type type;
    std::uint32_t field; ///< index into the class's fields
  };
  /// A forbidden value: vertex, index into outputs_, element, value.
  struct Found {
    std::uint32_t vertex = 0, output = 0, element = 0;
    double value = 0;
  };
  /// Byte ranges [first, second) of device memory, in order, disjoint.
  using Ranges = std::vector<std::pair<std::uint64_t, std::uint64_t>>;
  /// Whether the outputs of vertices [begin, end) hold a forbidden value;
  /// if so, \p found is the first. With \p within, only elements inside
  /// those ranges count.
  bool firstForbidden(std::uint32_t begin, std::uint32_t end,
                      const std::byte *mem, Found &found,
                      const Ranges *within = nullptr) const;
  /// The bytes that the outputs of vertices [begin, end) cover.
  Ranges covered(std::uint32_t begin, std::uint32_t end) const;
  void throwFor(const Step &st, std::size_t pc, std::uint32_t vertex,
                const Output &o, std::size_t element, double value,
                unsigned replica) const;

  const Executable &exe_;
  const std::vector<const RegisteredVertex *> &classes_;
  bool nan_ = false, inf_ = false;
  std::vector<std::uint32_t> first_; ///< per vertex into outputs_, + end
  std::vector<Output> outputs_;
};

} // namespace tessera::engine
