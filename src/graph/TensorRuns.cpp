#include "TensorRuns.hpp"

#include "tessera/support/Error.hpp"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace tessera::detail {

namespace {

// Bytes of a list of n runs: the header, the runs, and for n > 1 the ends
// and an affine block (its dimension count, 0 when the list has no affine
// form, then var, base and the dimensions).
std::size_t listBytes(std::size_t n, std::size_t affineDims) {
  std::size_t bytes = sizeof(TensorRunList) + n * sizeof(Run);
  if (n > 1)
    bytes +=
        n * sizeof(std::int64_t) + sizeof(std::int64_t) +
        (affineDims ? 2 * sizeof(std::int64_t) + affineDims * sizeof(AffineDim)
                    : 0);
  return bytes;
}

} // namespace

const TensorRunList *TensorRunList::create(const Run *runs, std::size_t n,
                                           const AffineForm *affine) {
  if (n == 0)
    return emptyRunList();
  TESSERA_INTERNAL_ASSERT(n < (std::size_t{1} << 32), "too many runs");
  const std::size_t affineDims = n > 1 && affine ? affine->dims.size() : 0;
  TESSERA_INTERNAL_ASSERT(n == 1 || !affine || affineDims > 1,
                          "a list of several runs has several dimensions");
  void *mem = ::operator new(listBytes(n, affineDims));
  auto *list = new (mem) TensorRunList;
  list->count = static_cast<std::uint32_t>(n);
  Run *out = reinterpret_cast<Run *>(list + 1);
  std::copy(runs, runs + n, out);
  if (n == 1)
    return list;
  auto *ends = reinterpret_cast<std::int64_t *>(out + n);
  std::int64_t total = 0;
  for (std::size_t i = 0; i < n; ++i)
    ends[i] = total += runs[i].count;
  std::int64_t *tail = ends + n;
  tail[0] = static_cast<std::int64_t>(affineDims);
  if (affineDims) {
    tail[1] = affine->var;
    tail[2] = affine->base;
    std::copy(affine->dims.begin(), affine->dims.end(),
              reinterpret_cast<AffineDim *>(tail + 3));
  }
  return list;
}

void destroyRunList(const SharedHeader *list) {
  ::operator delete(const_cast<SharedHeader *>(list));
}

RunListRef::~RunListRef() {
  if (list_ && list_->count &&
      list_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
    destroyRunList(list_);
}

bool TensorRunList::affine(AffineForm &form) const {
  if (count == 0)
    return false;
  if (count == 1) {
    const Run &r = run(0);
    form.var = r.var;
    form.base = r.start;
    form.dims.clear();
    if (r.count > 1)
      form.dims.push_back({r.count, r.stride});
    return true;
  }
  const std::int64_t *tail = ends() + count;
  if (tail[0] == 0)
    return false;
  form.var = static_cast<std::uint32_t>(tail[1]);
  form.base = tail[2];
  const auto *dims = reinterpret_cast<const AffineDim *>(tail + 3);
  form.dims.assign(dims, dims + tail[0]);
  return true;
}

std::size_t TensorRunList::findRun(std::int64_t flat) const {
  TESSERA_INTERNAL_ASSERT(flat >= 0 && flat < numElements(),
                          "flat index outside the run list");
  if (count == 1)
    return 0;
  return static_cast<std::size_t>(
      std::upper_bound(ends(), ends() + count, flat) - ends());
}

std::int64_t TensorRunList::elementAt(std::size_t idx,
                                      std::int64_t flat) const {
  const Run &r = run(idx);
  std::int64_t offset = count == 1 ? flat : flat - (ends()[idx] - r.count);
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
std::size_t findRunAfter(ArrayView<std::int64_t> ends, std::size_t idx,
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
std::size_t findRunBefore(ArrayView<std::int64_t> ends, std::size_t idx,
                          std::int64_t flat) {
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

// The thread's last run found by findRunNear in each of the last few
// lists, for the next search: views of one tensor are often cut from it in
// order (a map's regions, a convolution's rows), each a binary search over
// a list of up to millions of runs otherwise, and a map cuts each region
// from all its operands in turn. The hint only picks where the search
// starts, so a stale one (another list since at the same address) costs a
// longer gallop, never a wrong run.
struct RunHint {
  const TensorRunList *list = nullptr;
  std::size_t run = 0;
};
constexpr unsigned kHints = 8;
thread_local RunHint hints[kHints];
thread_local unsigned nextHint = 0;

// source.findRun(flat), searched from the thread's hint for source.
std::size_t findRunNear(const TensorRunList &source, std::int64_t flat) {
  RunHint *hint = nullptr;
  for (RunHint &h : hints)
    if (h.list == &source)
      hint = &h;
  if (!hint || hint->run >= source.count) {
    if (!hint) {
      hint = &hints[nextHint];
      nextHint = (nextHint + 1) % kHints;
      hint->list = &source;
    }
    return hint->run = source.findRun(flat);
  }
  std::size_t &hintRun = hint->run;
  TESSERA_INTERNAL_ASSERT(flat >= 0 && flat < source.numElements(),
                          "flat index outside the run list");
  const ArrayView<std::int64_t> ends(source.ends(), source.count);
  if (flat >= ends[hintRun])
    hintRun = findRunAfter(ends, hintRun, flat);
  else if (hintRun > 0 && flat < ends[hintRun - 1])
    hintRun = findRunBefore(ends, hintRun, flat);
  return hintRun;
}

} // namespace

namespace {

// The buffer builders reuse, and whether a live builder holds it.
thread_local std::vector<Run> scratchRuns;
thread_local bool scratchBusy = false;
// Beyond this many runs the buffer is given back after use, so that one
// huge list does not pin its memory for the thread's lifetime.
constexpr std::size_t kScratchKeep = 4096;

} // namespace

RunBuilder::RunBuilder() : runs_(&own_) {
  if (!scratchBusy) {
    scratchBusy = borrowed_ = true;
    runs_ = &scratchRuns;
    runs_->clear();
  }
}

RunBuilder::~RunBuilder() {
  if (!borrowed_)
    return;
  runs_->clear();
  if (runs_->capacity() > kScratchKeep)
    std::vector<Run>().swap(*runs_);
  scratchBusy = false;
}

void RunBuilder::push(const Run &run) {
  TESSERA_INTERNAL_ASSERT(run.count >= 0, "run with a negative count");
  if (run.count == 0)
    return;
  std::vector<Run> &runs = *runs_;
  if (!runs.empty() && tryMerge(runs.back(), run))
    return;
  runs.push_back(run);
  if (run.count == 1)
    runs.back().stride = 1;
}

void RunBuilder::pushProgression(const TensorRunList &source, std::int64_t flat,
                                 std::int64_t step, std::int64_t count) {
  if (count <= 0)
    return;
  TESSERA_INTERNAL_ASSERT(flat >= 0 && flat < source.numElements() &&
                              flat + (count - 1) * step >= 0 &&
                              flat + (count - 1) * step < source.numElements(),
                          "progression outside the run list");
  if (source.count == 1) {
    const Run &r = source.run(0);
    push({r.var, r.start + flat * r.stride, r.stride * step, count});
    return;
  }
  std::size_t idx = findRunNear(source, flat);
  if (step == 0) {
    push({source.run(idx).var, source.elementAt(idx, flat), 0, count});
    return;
  }
  const ArrayView<std::int64_t> ends(source.ends(), source.count);
  for (;;) {
    const Run &r = source.run(idx);
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

RunListRef RunBuilder::finish(const AffineForm *affine) {
  RunListRef list(TensorRunList::create(runs_->data(), runs_->size(), affine));
  runs_->clear();
  return list;
}

namespace {

// Size-1 dimensions move nothing, and a dimension whose step spans the whole
// next dimension continues it, so the two walk as one. After this the
// innermost dimension is as long as it can be. False when a dimension is
// empty.
bool normaliseDims(const AffineDim *dims, std::size_t numDims,
                   AffineDims &merged) {
  merged.clear();
  for (std::size_t i = 0; i < numDims; ++i) {
    const AffineDim &d = dims[i];
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
void forEachRow(std::int64_t base, const AffineDims &dims, std::size_t numOuter,
                RowFn &&rowFn) {
  std::int64_t numRows = 1;
  for (std::size_t k = 0; k < numOuter; ++k)
    numRows *= dims[k].size;
  SmallVec<std::int64_t, 6> index(numOuter, 0);
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
// variable, as an affine map of that variable (in `form`), when no index of
// the view carries from one source dimension into the next: then the source
// multi-index is the mixed-radix digits of the flat index, each an affine
// function of the view's indices. Otherwise false, and the caller walks the
// source runs instead.
bool compose(const AffineForm &source, std::int64_t base,
             const AffineDims &dims, AffineForm &form) {
  const AffineDims &chunks = source.dims;
  SmallVec<std::int64_t, 6> flatStep(chunks.size(), 0), low(chunks.size(), 0),
      high(chunks.size(), 0);
  std::int64_t step = 1;
  for (std::size_t j = chunks.size(); j-- > 0;) {
    flatStep[j] = step;
    low[j] = high[j] = (base / step) % chunks[j].size;
    step *= chunks[j].size;
  }
  form.var = source.var;
  form.base = source.base;
  AffineDims composed;
  for (std::size_t j = 0; j < chunks.size(); ++j)
    form.base += low[j] * chunks[j].step;
  for (const AffineDim &d : dims) {
    if (d.step == 0) {
      composed.push_back({d.size, 0});
      continue;
    }
    std::int64_t magnitude = d.step < 0 ? -d.step : d.step;
    std::size_t j = 0;
    while (j < chunks.size() && flatStep[j] > magnitude)
      ++j;
    if (j == chunks.size() || d.step % flatStep[j] != 0)
      return false;
    std::int64_t digitStep = d.step / flatStep[j];
    (digitStep > 0 ? high[j] : low[j]) += (d.size - 1) * digitStep;
    composed.push_back({d.size, digitStep * chunks[j].step});
  }
  for (std::size_t j = 0; j < chunks.size(); ++j)
    if (low[j] < 0 || high[j] >= chunks[j].size)
      return false;
  normaliseDims(composed.data(), composed.size(), form.dims);
  return true;
}

} // namespace

RunListRef mapAffine(const TensorRunList &source, std::int64_t base,
                     const AffineDim *dims, std::size_t numDims) {
  AffineDims merged;
  if (!normaliseDims(dims, numDims, merged))
    return RunListRef(emptyRunList());
  if (merged.size() == 1 && base == 0 && merged[0].step == 1 &&
      merged[0].size == source.numElements()) {
    if (source.count)
      source.refs.fetch_add(1, std::memory_order_relaxed);
    return RunListRef(&source);
  }
  RunBuilder builder;
  AffineForm sourceForm, form;
  if (source.affine(sourceForm) && compose(sourceForm, base, merged, form)) {
    // One run per row of the composed map: the cost is the output runs.
    if (form.dims.empty()) {
      builder.push({form.var, form.base, 1, 1});
      return builder.finish(&form);
    }
    const AffineDim row = form.dims.back();
    const std::uint32_t var = form.var;
    forEachRow(form.base, form.dims, form.dims.size() - 1,
               [&](std::int64_t rowStart) {
                 builder.push({var, rowStart, row.step, row.size});
               });
    return builder.finish(&form);
  }
  // Each row is one arithmetic progression through the source's flat
  // elements; it is split where it crosses from one source run to another.
  if (merged.empty()) {
    builder.pushProgression(source, base, 1, 1);
    return builder.finish();
  }
  const AffineDim row = merged.back();
  forEachRow(base, merged, merged.size() - 1, [&](std::int64_t rowStart) {
    builder.pushProgression(source, rowStart, row.step, row.size);
  });
  return builder.finish();
}

RunListRef makeRunList(const Run *runs, std::size_t numRuns) {
  RunBuilder builder;
  builder.reserve(numRuns);
  for (std::size_t i = 0; i < numRuns; ++i)
    builder.push(runs[i]);
  return builder.finish();
}

const TensorRunList *emptyRunList() {
  static const TensorRunList empty;
  return &empty;
}

} // namespace tessera::detail
