// Private to ops/: what the matmul planner, the op and the vertex
// registration share — the partition of one dimension, the cost formulas of
// the vertices (so the planner predicts exactly what the compiler will
// estimate), and the plan search with its options.
#pragma once

#include "tessera/device/Target.hpp"
#include "tessera/ops/MatMul.hpp"

#include <cstddef>
#include <cstdint>

namespace tessera::ops::matmul {

/// [begin, end) of one dimension.
struct Range {
  std::size_t begin = 0, end = 0;
  std::size_t size() const { return end - begin; }
};

/// [0, length) cut into \p parts balanced pieces whose sizes are multiples
/// of \p grain (except where the last one meets the end): part p covers
/// units [p*U/parts, (p+1)*U/parts) of U = ceil(length / grain) units.
struct Partition {
  std::size_t length = 0, grain = 1;
  unsigned parts = 1;
  Range operator()(unsigned p) const;
  /// The largest part.
  std::size_t maxSize() const;
  /// The smallest part.
  std::size_t minSize() const;
};

/// The element types of one product.
struct Types {
  Type input = FLOAT, partials = FLOAT, output = FLOAT;
};

/// The matmul options, parsed and checked (MatMul.hpp lists them).
struct Options {
  Type partialsType = FLOAT;
  double availableMemoryProportion = 0.6;
};
/// Parses \p flags for inputs of \p inputType; OptionError for unknown keys
/// and bad values, TypeError for half partials with float inputs.
Options parseOptions(const OptionFlags &flags, Type inputType);

/// MACs per tile cycle of the AMP unit, and the grains it works in: it
/// consumes K one 64-bit vector at a time (kGrain elements) and produces
/// macs / kGrain output columns per cycle (nGrain).
struct AmpShape {
  unsigned macs = 16, kGrain = 2, nGrain = 8;
};
AmpShape ampShape(const Target &target, Type input, Type partials);
/// The figures the vertex estimators need, captured from a target.
struct CostInputs {
  AmpShape amp;
  unsigned matMulWorkerCycles = 50;
  unsigned reduceWorkerCycles = 20, reduceWorkerCyclesPerVector = 1;
  unsigned workers = 6;
  /// Bytes of the tile's data path (TargetFigures::dataPathWidth / 8).
  unsigned dataPathBytes = 8;
};
CostInputs costInputs(const Target &target, Type input, Type partials);

/// Worker cycles of a MatMulBlock vertex of an m x k by k x n block: the
/// AMP's MACs (dimensions rounded up to its grains) shared by the six
/// workers, plus a fixed cost for loading weights and draining partials.
std::uint64_t blockWorkerCycles(const CostInputs &c, std::size_t m,
                                std::size_t k, std::size_t n);
/// Worker cycles of a MatMulReduce vertex summing \p numPartials vectors of
/// \p n elements (of \p partialsType) into its output; \p accumulate adds
/// the output's old value (MatMulReduceAcc).
std::uint64_t reduceWorkerCycles(const CostInputs &c, Type partialsType,
                                 std::size_t n, std::size_t numPartials,
                                 bool accumulate);

/// Which split runs fastest over consecutive tiles. Tiles 2t and 2t+1 share
/// an exchange bus, so with N innermost (and an even N-split) the two tiles
/// of a pair need the same A block and receive it at once; with M innermost,
/// the same B block.
enum class Innermost { K, N, M };

/// Block coordinates of one tile.
struct BlockIndex {
  unsigned gi = 0, i = 0, j = 0, kk = 0;
};

/// The full plan: the public summary plus the partitions the op builds from.
struct Plan {
  MatMulPlan summary;
  Types types;
  Partition g, m, n, k;
  Innermost innermost = Innermost::K;
  bool accumulate = false;
  /// Whether the block vertices write partials that a second compute set
  /// reduces (kSplit > 1, or matMulAcc).
  bool reduces() const { return k.parts > 1 || accumulate; }
  unsigned numTiles() const { return g.parts * m.parts * n.parts * k.parts; }
  /// The tile of block (gi, i, j, kk).
  unsigned tile(unsigned gi, unsigned i, unsigned j, unsigned kk) const {
    switch (innermost) {
    case Innermost::N:
      return ((gi * m.parts + i) * k.parts + kk) * n.parts + j;
    case Innermost::M:
      return ((gi * n.parts + j) * k.parts + kk) * m.parts + i;
    default:
      return ((gi * m.parts + i) * n.parts + j) * k.parts + kk;
    }
  }
  /// The index of K-slice kk of block (i, j) of group q among the pieces of
  /// the output and of the partials (group, then M, N and K order).
  std::size_t piece(std::size_t q, unsigned i, unsigned j, unsigned kk) const {
    return ((q * m.parts + i) * n.parts + j) * k.parts + kk;
  }
  /// The block of \p tile (below numTiles()): tile's inverse.
  BlockIndex block(unsigned tile) const;
};

/// Chooses the splits of a product of \p groups [m x k] by [k x n] matrices
/// that minimise the estimated cycles on \p target within the memory the
/// options allow.
Plan makePlan(const Target &target, const Types &types, std::size_t groups,
              std::size_t m, std::size_t k, std::size_t n,
              const Options &options, bool accumulate);

} // namespace tessera::ops::matmul
