// Host reference of the slicing ops: each slice element located from its
// coordinates, straight from the definitions (clamped offsets for the
// dynamic ops; out-of-range indices give zeros or are skipped for the multi
// ops).
#include "tessera/ops/Reference.hpp"

#include <algorithm>

namespace tessera::ops::reference {
namespace {

// For each element of one slice (row-major over the slice's shape), its
// flat index in t, given the slice's start coordinate in every dimension.
std::vector<std::size_t> sliceIndices(const std::vector<std::size_t> &shape,
                                      const std::vector<std::size_t> &start,
                                      const std::vector<std::size_t> &extent) {
  std::size_t count = 1;
  for (std::size_t e : extent)
    count *= e;
  std::vector<std::size_t> idx(count);
  std::vector<std::size_t> coord(shape.size(), 0);
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t flat = 0;
    for (std::size_t d = 0; d < shape.size(); ++d)
      flat = flat * shape[d] + start[d] + coord[d];
    idx[i] = flat;
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (++coord[d] < extent[d])
        break;
      coord[d] = 0;
    }
  }
  return idx;
}

// The start coordinates and extents of slice m, or false when an offset is
// out of range and `clamp` is off.
bool sliceAt(const std::vector<std::size_t> &shape,
             const std::vector<std::size_t> &offsets, std::size_t m,
             const std::vector<std::size_t> &dims,
             const std::vector<std::size_t> &sizes, bool clamp,
             std::vector<std::size_t> &start,
             std::vector<std::size_t> &extent) {
  start.assign(shape.size(), 0);
  extent = shape;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    const std::size_t d = dims[k];
    std::size_t o = offsets[m * dims.size() + k];
    if (o + sizes[k] > shape[d]) {
      if (!clamp)
        return false;
      o = shape[d] - sizes[k];
    }
    start[d] = o;
    extent[d] = sizes[k];
  }
  return true;
}

std::size_t sliceSize(const std::vector<std::size_t> &shape,
                      const std::vector<std::size_t> &dims,
                      const std::vector<std::size_t> &sizes) {
  std::vector<std::size_t> extent = shape;
  for (std::size_t k = 0; k < dims.size(); ++k)
    extent[dims[k]] = sizes[k];
  std::size_t n = 1;
  for (std::size_t e : extent)
    n *= e;
  return n;
}

// Visits the elements of every slice: f(position in the result, index in
// t), skipping out-of-range slices when not clamping.
template <typename F>
void forEachSliceElement(const std::vector<std::size_t> &shape,
                         const std::vector<std::size_t> &offsets,
                         const std::vector<std::size_t> &dims,
                         const std::vector<std::size_t> &sizes, bool clamp,
                         F &&f) {
  const std::size_t numIndices = offsets.size() / dims.size();
  const std::size_t per = sliceSize(shape, dims, sizes);
  std::vector<std::size_t> start, extent;
  for (std::size_t m = 0; m < numIndices; ++m) {
    if (!sliceAt(shape, offsets, m, dims, sizes, clamp, start, extent))
      continue;
    const std::vector<std::size_t> idx = sliceIndices(shape, start, extent);
    for (std::size_t i = 0; i < idx.size(); ++i)
      f(m * per + i, idx[i]);
  }
}

} // namespace

std::vector<double> dynamicSlice(const std::vector<double> &t,
                                 const std::vector<std::size_t> &shape,
                                 const std::vector<std::size_t> &offsets,
                                 const std::vector<std::size_t> &dims,
                                 const std::vector<std::size_t> &sizes) {
  std::vector<double> out(sliceSize(shape, dims, sizes));
  forEachSliceElement(shape, offsets, dims, sizes, true,
                      [&](std::size_t i, std::size_t j) { out[i] = t[j]; });
  return out;
}

void dynamicUpdate(std::vector<double> &t,
                   const std::vector<std::size_t> &shape,
                   const std::vector<double> &s,
                   const std::vector<std::size_t> &offsets,
                   const std::vector<std::size_t> &dims,
                   const std::vector<std::size_t> &sizes) {
  forEachSliceElement(shape, offsets, dims, sizes, true,
                      [&](std::size_t i, std::size_t j) { t[j] = s[i]; });
}

std::vector<double> multiSlice(const std::vector<double> &t,
                               const std::vector<std::size_t> &shape,
                               const std::vector<std::size_t> &offsets,
                               const std::vector<std::size_t> &dims,
                               const std::vector<std::size_t> &sizes) {
  std::vector<double> out(
      sliceSize(shape, dims, sizes) * (offsets.size() / dims.size()), 0.0);
  forEachSliceElement(shape, offsets, dims, sizes, false,
                      [&](std::size_t i, std::size_t j) { out[i] = t[j]; });
  return out;
}

void multiUpdate(std::vector<double> &t, const std::vector<std::size_t> &shape,
                 const std::vector<double> &s,
                 const std::vector<std::size_t> &offsets,
                 const std::vector<std::size_t> &dims,
                 const std::vector<std::size_t> &sizes) {
  forEachSliceElement(shape, offsets, dims, sizes, false,
                      [&](std::size_t i, std::size_t j) { t[j] = s[i]; });
}

void multiUpdateAdd(std::vector<double> &t,
                    const std::vector<std::size_t> &shape,
                    const std::vector<double> &s,
                    const std::vector<std::size_t> &offsets,
                    const std::vector<std::size_t> &dims,
                    const std::vector<std::size_t> &sizes, double scale) {
  forEachSliceElement(
      shape, offsets, dims, sizes, false,
      [&](std::size_t i, std::size_t j) { t[j] += scale * s[i]; });
}

} // namespace tessera::ops::reference
