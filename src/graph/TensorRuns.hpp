/// \file
/// Private machinery behind tessera::Tensor views: the shared run list with
/// its prefix sums, a builder that merges runs as they arrive, and the one
/// routine that turns an affine view of a run list into a new run list.
#pragma once

#include "tessera/graph/Tensor.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace tessera::detail {

/// One dimension of an affine map: \p size indices, each \p step elements
/// (of the source, or of a variable) from the previous one.
struct AffineDim {
  std::int64_t size = 0;
  std::int64_t step = 0;
};

/// A run list that is one affine map of one variable: the element at
/// row-major multi-index (i_0, ..., i_k) over dims is element
/// base + sum(i_j * dims[j].step) of variable var. Dims have sizes above 1
/// and no dimension continues the next one.
struct AffineForm {
  std::uint32_t var = 0;
  std::int64_t base = 0;
  std::vector<AffineDim> dims;
};

/// The runs of a tensor, merged and free of empty runs, with ends[i] the
/// number of elements in runs[0..i] so that the run holding a flat index is
/// found by binary search. Lists made by views of one variable also keep
/// their affine form, so that a view of a view costs its output runs and
/// not a walk over its elements.
struct TensorRunList {
  std::vector<Run> runs;
  std::vector<std::int64_t> ends;
  std::optional<AffineForm> affine;

  std::int64_t numElements() const { return ends.empty() ? 0 : ends.back(); }
  /// The index of the run that holds flat element \p flat.
  std::size_t findRun(std::int64_t flat) const;
  /// Where flat element \p flat lives: runs[run].start + offset * stride.
  std::int64_t elementAt(std::size_t run, std::int64_t flat) const;
};

/// Collects runs in order, merging each with the previous one when it
/// continues it, and drops empty runs.
class RunBuilder {
public:
  void reserve(std::size_t n) { runs_.reserve(n); }
  void push(const Run &run);
  /// Appends the elements flat, flat+step, ..., flat+(count-1)*step of
  /// \p source.
  void pushProgression(const TensorRunList &source, std::int64_t flat,
                       std::int64_t step, std::int64_t count);
  /// The finished list; the builder is left empty. \p affine describes the
  /// pushed elements when known; a single run describes itself.
  std::shared_ptr<const TensorRunList>
  finish(std::optional<AffineForm> affine = std::nullopt);

private:
  std::vector<Run> runs_;
};

/// The run list of the view whose element at multi-index (i_0, ..., i_k),
/// in row-major order over \p dims, is source flat element
/// base + sum(i_j * dims[j].step). Returns \p source itself when the view is
/// the identity.
std::shared_ptr<const TensorRunList>
mapAffine(const std::shared_ptr<const TensorRunList> &source, std::int64_t base,
          const std::vector<AffineDim> &dims);

/// A run list made of \p runs (merged and cleaned on the way).
std::shared_ptr<const TensorRunList> makeRunList(const std::vector<Run> &runs);

/// The shared empty run list.
const std::shared_ptr<const TensorRunList> &emptyRunList();

} // namespace tessera::detail
