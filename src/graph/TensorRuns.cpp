#include "TensorRuns.hpp"

#include "tessera/support/Error.hpp"

#include <algorithm>

namespace tessera::detail {

std::size_t TensorRunList::findRun(std::int64_t flat) const {
  TESSERA_INTERNAL_ASSERT(flat >= 0 && flat < numElements(),
                          "flat index outside the run list");
  return static_cast<std::size_t>(
      std::upper_bound(ends.begin(), ends.end(), flat) - ends.begin());
}

std::int64_t TensorRunList::elementAt(std::size_t run,
                                      std::int64_t flat) const {
  const Run &r = runs[run];
  std::int64_t offset = flat - (ends[run] - r.count);
  return r.start + offset * r.stride;
}

namespace {

// Folds `next` into `prev` when prev's elements followed by next's form one
// arithmetic progression. A one-element run has no stride of its own, so it
// takes whatever stride continues it; that keeps every run of consecutive
// elements (and every repeated element) a single run however it was built.
bool tryMerge(Run &prev, const Run &next) {
  if (prev.var != next.var)
    return false;
  if (prev.count == 1) {
    std::int64_t gap = next.start - prev.start;
    if (next.count != 1 && gap != next.stride)
      return false;
    prev.stride = gap;
    prev.count += next.count;
    return true;
  }
  std::int64_t after = prev.start + prev.count * prev.stride;
  if (next.start != after || (next.count != 1 && next.stride != prev.stride))
    return false;
  prev.count += next.count;
  return true;
}

// The run holding `flat`, which lies after run `idx`. The next element is
// usually in a nearby run, so the search gallops out from idx before it
// bisects; a long step that skips runs then costs a few probes, not log n.
std::size_t findRunAfter(const std::vector<std::int64_t> &ends, std::size_t idx,
                         std::int64_t flat) {
  std::size_t lo = idx + 1, width = 1;
  while (lo + width < ends.size() && ends[lo + width - 1] <= flat) {
    lo += width;
    width *= 2;
  }
  std::size_t hi = std::min(lo + width, ends.size());
  return static_cast<std::size_t>(
      std::upper_bound(ends.begin() + lo, ends.begin() + hi, flat) -
      ends.begin());
}

// The run holding `flat`, which lies before run `idx`.
std::size_t findRunBefore(const std::vector<std::int64_t> &ends,
                          std::size_t idx, std::int64_t flat) {
  std::size_t hi = idx, width = 1;
  for (;;) {
    std::size_t lo = hi > width ? hi - width : 0;
    if (lo == 0 || ends[lo - 1] <= flat)
      return static_cast<std::size_t>(
          std::upper_bound(ends.begin() + lo, ends.begin() + hi, flat) -
          ends.begin());
    hi = lo;
    width *= 2;
  }
}

} // namespace

void RunBuilder::push(const Run &run) {
  TESSERA_INTERNAL_ASSERT(run.count >= 0, "run with a negative count");
  if (run.count == 0)
    return;
  if (!runs_.empty() && tryMerge(runs_.back(), run))
    return;
  runs_.push_back(run);
  if (run.count == 1)
    runs_.back().stride = 1;
}

void RunBuilder::pushProgression(const TensorRunList &source, std::int64_t flat,
                                 std::int64_t step, std::int64_t count) {
  if (count <= 0)
    return;
  TESSERA_INTERNAL_ASSERT(flat >= 0 && flat < source.numElements() &&
                              flat + (count - 1) * step >= 0 &&
                              flat + (count - 1) * step < source.numElements(),
                          "progression outside the run list");
  if (source.runs.size() == 1) {
    const Run &r = source.runs.front();
    push({r.var, r.start + flat * r.stride, r.stride * step, count});
    return;
  }
  std::size_t idx = source.findRun(flat);
  if (step == 0) {
    push({source.runs[idx].var, source.elementAt(idx, flat), 0, count});
    return;
  }
  const std::vector<std::int64_t> &ends = source.ends;
  for (;;) {
    const Run &r = source.runs[idx];
    std::int64_t runBegin = ends[idx] - r.count;
    // How many of the remaining elements fall inside this run.
    std::int64_t inRun = step > 0 ? (ends[idx] - 1 - flat) / step + 1
                                  : (flat - runBegin) / -step + 1;
    std::int64_t taken = std::min(count, inRun);
    push({r.var, r.start + (flat - runBegin) * r.stride, r.stride * step,
          taken});
    count -= taken;
    if (count == 0)
      return;
    flat += taken * step;
    idx = step > 0 ? findRunAfter(ends, idx, flat)
                   : findRunBefore(ends, idx, flat);
  }
}

std::shared_ptr<const TensorRunList>
RunBuilder::finish(std::optional<AffineForm> affine) {
  auto list = std::make_shared<TensorRunList>();
  if (runs_.capacity() > 2 * runs_.size() + 16)
    runs_.shrink_to_fit();
  list->runs = std::move(runs_);
  runs_ = {};
  list->ends.reserve(list->runs.size());
  std::int64_t total = 0;
  for (const Run &r : list->runs) {
    total += r.count;
    list->ends.push_back(total);
  }
  if (!affine && list->runs.size() == 1) {
    const Run &r = list->runs.front();
    affine = AffineForm{r.var, r.start, {}};
    if (r.count > 1)
      affine->dims.push_back({r.count, r.stride});
  }
  list->affine = std::move(affine);
  return list;
}

namespace {

// Size-1 dimensions move nothing, and a dimension whose step spans the whole
// next dimension continues it, so the two walk as one. After this the
// innermost dimension is as long as it can be. False when a dimension is
// empty.
bool normaliseDims(const std::vector<AffineDim> &dims,
                   std::vector<AffineDim> &merged) {
  merged.clear();
  merged.reserve(dims.size());
  for (const AffineDim &d : dims) {
    if (d.size == 0)
      return false;
    if (d.size == 1)
      continue;
    if (!merged.empty() && merged.back().step == d.step * d.size)
      merged.back() = {merged.back().size * d.size, d.step};
    else
      merged.push_back(d);
  }
  return true;
}

// Calls rowFn(rowStart) for every row of the map base + sum(i_k * step_k)
// over all dimensions but the innermost, in row-major order.
template <typename RowFn>
void forEachRow(std::int64_t base, const std::vector<AffineDim> &dims,
                std::size_t numOuter, RowFn &&rowFn) {
  std::int64_t numRows = 1;
  for (std::size_t k = 0; k < numOuter; ++k)
    numRows *= dims[k].size;
  std::vector<std::int64_t> index(numOuter, 0);
  std::int64_t rowStart = base;
  for (std::int64_t r = 0; r < numRows; ++r) {
    rowFn(rowStart);
    for (std::size_t k = numOuter; k-- > 0;) {
      rowStart += dims[k].step;
      if (++index[k] < dims[k].size)
        break;
      rowStart -= dims[k].step * dims[k].size;
      index[k] = 0;
    }
  }
}

// The view (base, dims) of a source that is itself an affine map of one
// variable, as an affine map of that variable, when no index of the view
// carries from one source dimension into the next: then the source
// multi-index is the mixed-radix digits of the flat index, each an affine
// function of the view's indices. Otherwise nullopt, and the caller walks
// the source runs instead.
std::optional<AffineForm> compose(const AffineForm &source, std::int64_t base,
                                  const std::vector<AffineDim> &dims) {
  const std::vector<AffineDim> &chunks = source.dims;
  std::vector<std::int64_t> flatStep(chunks.size()), low(chunks.size()),
      high(chunks.size());
  std::int64_t step = 1;
  for (std::size_t j = chunks.size(); j-- > 0;) {
    flatStep[j] = step;
    low[j] = high[j] = (base / step) % chunks[j].size;
    step *= chunks[j].size;
  }
  AffineForm form{source.var, source.base, {}};
  for (std::size_t j = 0; j < chunks.size(); ++j)
    form.base += low[j] * chunks[j].step;
  for (const AffineDim &d : dims) {
    if (d.step == 0) {
      form.dims.push_back({d.size, 0});
      continue;
    }
    std::int64_t magnitude = d.step < 0 ? -d.step : d.step;
    std::size_t j = 0;
    while (j < chunks.size() && flatStep[j] > magnitude)
      ++j;
    if (j == chunks.size() || d.step % flatStep[j] != 0)
      return std::nullopt;
    std::int64_t digitStep = d.step / flatStep[j];
    (digitStep > 0 ? high[j] : low[j]) += (d.size - 1) * digitStep;
    form.dims.push_back({d.size, digitStep * chunks[j].step});
  }
  for (std::size_t j = 0; j < chunks.size(); ++j)
    if (low[j] < 0 || high[j] >= chunks[j].size)
      return std::nullopt;
  std::vector<AffineDim> merged;
  normaliseDims(form.dims, merged);
  form.dims = std::move(merged);
  return form;
}

} // namespace

std::shared_ptr<const TensorRunList>
mapAffine(const std::shared_ptr<const TensorRunList> &source, std::int64_t base,
          const std::vector<AffineDim> &dims) {
  std::vector<AffineDim> merged;
  if (!normaliseDims(dims, merged))
    return emptyRunList();
  if (merged.size() == 1 && base == 0 && merged[0].step == 1 &&
      merged[0].size == source->numElements())
    return source;
  RunBuilder builder;
  if (source->affine) {
    if (std::optional<AffineForm> form =
            compose(*source->affine, base, merged)) {
      // One run per row of the composed map: the cost is the output runs.
      if (form->dims.empty()) {
        builder.push({form->var, form->base, 1, 1});
        return builder.finish(std::move(form));
      }
      const AffineDim row = form->dims.back();
      const std::uint32_t var = form->var;
      forEachRow(form->base, form->dims, form->dims.size() - 1,
                 [&](std::int64_t rowStart) {
                   builder.push({var, rowStart, row.step, row.size});
                 });
      return builder.finish(std::move(form));
    }
  }
  // Each row is one arithmetic progression through the source's flat
  // elements; it is split where it crosses from one source run to another.
  if (merged.empty()) {
    builder.pushProgression(*source, base, 1, 1);
    return builder.finish();
  }
  const AffineDim row = merged.back();
  forEachRow(base, merged, merged.size() - 1, [&](std::int64_t rowStart) {
    builder.pushProgression(*source, rowStart, row.step, row.size);
  });
  return builder.finish();
}

std::shared_ptr<const TensorRunList> makeRunList(const std::vector<Run> &runs) {
  RunBuilder builder;
  builder.reserve(runs.size());
  for (const Run &r : runs)
    builder.push(r);
  return builder.finish();
}

const std::shared_ptr<const TensorRunList> &emptyRunList() {
  static const std::shared_ptr<const TensorRunList> empty =
      std::make_shared<const TensorRunList>();
  return empty;
}

} // namespace tessera::detail
