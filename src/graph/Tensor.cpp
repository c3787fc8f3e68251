#include "tessera/graph/Tensor.hpp"

#include "TensorRuns.hpp"
#include "tessera/support/Error.hpp"

#include <algorithm>
#include <new>
#include <ostream>

namespace tessera {

using detail::AffineDim;
using detail::AffineDims;
using detail::mapAffine;
using detail::ShapeDims;
using detail::SmallVec;

namespace {

std::string shapeText(ArrayView<std::size_t> shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

template <typename T> std::string listText(const std::vector<T> &values) {
  std::vector<std::size_t> asSizes(values.begin(), values.end());
  return shapeText(asSizes);
}

std::size_t product(ArrayView<std::size_t> shape, std::size_t first,
                    std::size_t last) {
  std::size_t n = 1;
  for (std::size_t i = first; i < last; ++i)
    n *= shape[i];
  return n;
}

std::size_t product(ArrayView<std::size_t> shape) {
  return product(shape, 0, shape.size());
}

ArrayView<std::size_t> view(const ShapeDims &dims) {
  return {dims.data(), dims.size()};
}

// The view that shows the source as it is: dimension k moves
// product(shape[k+1..]) flat elements per index.
AffineDims rowMajorDims(ArrayView<std::size_t> shape) {
  AffineDims dims(shape.size(), AffineDim{});
  std::int64_t step = 1;
  for (std::size_t k = shape.size(); k-- > 0;) {
    dims[k] = {static_cast<std::int64_t>(shape[k]), step};
    step *= static_cast<std::int64_t>(shape[k]);
  }
  return dims;
}

std::string inTensor(ArrayView<std::size_t> shape) {
  return " in tensor of shape " + shapeText(shape);
}

} // namespace

namespace detail {
void destroyShapeBlock(const SharedHeader *block) {
  ::operator delete(const_cast<SharedHeader *>(block));
}
} // namespace detail

void Tensor::setShape(const std::size_t *dims, std::size_t rank) {
  TESSERA_INTERNAL_ASSERT(rank <= 255, "tensor of rank " +
                                           std::to_string(rank) +
                                           "; at most 255 dimensions");
  rank_ = static_cast<std::uint8_t>(rank);
  if (rank <= kInlineRank) {
    std::copy(dims, dims + rank, shape_.inline_);
    return;
  }
  // Long shapes live in a block that copies of this tensor share.
  void *mem =
      ::operator new(sizeof(detail::SharedHeader) + rank * sizeof(std::size_t));
  auto *block = new (mem) detail::SharedHeader;
  block->count = static_cast<std::uint32_t>(rank);
  std::copy(dims, dims + rank, reinterpret_cast<std::size_t *>(block + 1));
  shape_.block_ = block;
}

const detail::TensorRunList &Tensor::list() const {
  return *static_cast<const detail::TensorRunList *>(runs_);
}

Tensor::Tensor(Type type, const std::vector<std::size_t> &shape,
               const std::vector<Run> &runs)
    : type_(type) {
  setShape(shape.data(), shape.size());
  std::int64_t total = 0;
  for (const Run &r : runs) {
    TESSERA_INTERNAL_ASSERT(r.count >= 0, "run with a negative count");
    TESSERA_INTERNAL_ASSERT(
        r.count == 0 ||
            (r.start >= 0 && r.start + (r.count - 1) * r.stride >= 0),
        "run reaching a negative element index");
    total += r.count;
  }
  TESSERA_INTERNAL_ASSERT(total == static_cast<std::int64_t>(product(shape)),
                          "runs hold " + std::to_string(total) +
                              " elements but shape " + shapeText(shape) +
                              " has " + std::to_string(product(shape)));
  runs_ = detail::makeRunList(runs.data(), runs.size()).release();
}

Tensor::Tensor(Type type, ArrayView<Run> runs) : type_(type) {
  std::size_t total = 0;
  for (const Run &r : runs) {
    TESSERA_INTERNAL_ASSERT(
        r.count >= 0 &&
            (r.count == 0 ||
             (r.start >= 0 && r.start + (r.count - 1) * r.stride >= 0)),
        "run with a negative count or element index");
    total += static_cast<std::size_t>(r.count);
  }
  setShape(&total, 1);
  runs_ = detail::makeRunList(runs.data(), runs.size()).release();
}

Tensor::Tensor(Type type, const std::size_t *shape, std::size_t rank,
               const detail::TensorRunList *runs)
    : type_(type), runs_(runs) {
  setShape(shape, rank);
  TESSERA_INTERNAL_ASSERT(list().numElements() ==
                              static_cast<std::int64_t>(numElements()),
                          "view built with the wrong number of elements");
}

Tensor::Tensor(Type type, const std::size_t *shape, std::size_t rank,
               const Tensor &like)
    : type_(type), runs_(like.runs_) {
  retain(runs_);
  setShape(shape, rank);
  TESSERA_INTERNAL_ASSERT(list().numElements() ==
                              static_cast<std::int64_t>(numElements()),
                          "view built with the wrong number of elements");
}

std::size_t Tensor::dim(unsigned i) const {
  if (i >= rank())
    throw ShapeError("dim: dimension " + std::to_string(i) +
                     " is out of range for tensor of shape " + shapeToString() +
                     " of rank " + std::to_string(rank()));
  return shapeData()[i];
}

std::vector<std::uint32_t> Tensor::variables() const {
  std::vector<std::uint32_t> vars;
  for (const Run &r : runs())
    if (vars.empty() || vars.back() != r.var)
      vars.push_back(r.var);
  std::sort(vars.begin(), vars.end());
  vars.erase(std::unique(vars.begin(), vars.end()), vars.end());
  return vars;
}

std::string Tensor::shapeToString() const { return shapeText(shape()); }

namespace {

void requireValid(const Tensor &t, const char *op) {
  if (!t.valid())
    throw GraphError(std::string(op) +
                     ": the tensor is default-constructed and views no "
                     "variable; make tensors with Graph::addVariable or "
                     "Graph::addConstant");
}

void requireDim(const Tensor &t, const char *op, unsigned dim) {
  requireValid(t, op);
  if (dim >= t.rank())
    throw ShapeError(std::string(op) + ": dimension " + std::to_string(dim) +
                     " is out of range for tensor of shape " +
                     t.shapeToString() + " of rank " +
                     std::to_string(t.rank()));
}

} // namespace

Tensor Tensor::operator[](std::size_t i) const {
  requireValid(*this, "operator[]");
  if (rank() == 0)
    throw ShapeError("operator[]: cannot index a rank-0 tensor (shape []); "
                     "indexing drops the outermost dimension, so the tensor "
                     "needs at least one");
  return index({i});
}

Tensor Tensor::index(const std::vector<std::size_t> &indices) const {
  requireValid(*this, "index");
  if (indices.size() > rank())
    throw ShapeError("index: " + std::to_string(indices.size()) +
                     " indices given for tensor of shape " + shapeToString() +
                     " of rank " + std::to_string(rank()) +
                     "; give at most one per dimension");
  const ArrayView<std::size_t> shape = this->shape();
  AffineDims dims = rowMajorDims(shape);
  std::int64_t base = 0;
  for (std::size_t k = 0; k < indices.size(); ++k) {
    if (indices[k] >= shape[k])
      throw ShapeError("index: index " + std::to_string(indices[k]) +
                       " is out of range for dimension " + std::to_string(k) +
                       " of size " + std::to_string(shape[k]) +
                       inTensor(shape));
    base += static_cast<std::int64_t>(indices[k]) * dims[k].step;
  }
  const std::size_t n = indices.size();
  return Tensor(
      type_, shape.data() + n, rank() - n,
      mapAffine(list(), base, dims.data() + n, dims.size() - n).release());
}

Tensor Tensor::slice(std::size_t begin, std::size_t end, unsigned dim) const {
  requireDim(*this, "slice", dim);
  // The common one-dimension slice, without index vectors.
  const ArrayView<std::size_t> shape = this->shape();
  if (end > shape[dim])
    throw ShapeError("slice: end " + std::to_string(end) +
                     " is beyond dimension " + std::to_string(dim) +
                     " of size " + std::to_string(shape[dim]) +
                     inTensor(shape));
  if (begin > end)
    throw ShapeError("slice: begin " + std::to_string(begin) +
                     " is after end " + std::to_string(end) + " on dimension " +
                     std::to_string(dim) + inTensor(shape));
  ShapeDims out(shape.begin(), shape.end());
  out[dim] = end - begin;
  AffineDims dims = rowMajorDims(shape);
  const std::int64_t base = static_cast<std::int64_t>(begin) * dims[dim].step;
  dims[dim].size = static_cast<std::int64_t>(out[dim]);
  if (product(view(out)) == 0)
    return Tensor(type_, out.data(), out.size(), detail::emptyRunList());
  return Tensor(type_, out.data(), out.size(),
                mapAffine(list(), base, dims.data(), dims.size()).release());
}

Tensor Tensor::slice(const Interval &region, unsigned dim) const {
  return slice(region.begin(), region.end(), dim);
}

Tensor Tensor::slice(const std::vector<std::size_t> &begin,
                     const std::vector<std::size_t> &end) const {
  requireValid(*this, "slice");
  if (begin.size() != rank() || end.size() != rank())
    throw ShapeError("slice: " + std::to_string(begin.size()) + " begin and " +
                     std::to_string(end.size()) +
                     " end indices given for tensor of shape " +
                     shapeToString() + " of rank " + std::to_string(rank()) +
                     "; give one of each per dimension");
  const ArrayView<std::size_t> shape = this->shape();
  AffineDims dims = rowMajorDims(shape);
  ShapeDims out(rank(), 0);
  std::int64_t base = 0;
  for (unsigned k = 0; k < rank(); ++k) {
    if (end[k] > shape[k])
      throw ShapeError("slice: end " + std::to_string(end[k]) +
                       " is beyond dimension " + std::to_string(k) +
                       " of size " + std::to_string(shape[k]) +
                       inTensor(shape));
    if (begin[k] > end[k])
      throw ShapeError("slice: begin " + std::to_string(begin[k]) +
                       " is after end " + std::to_string(end[k]) +
                       " on dimension " + std::to_string(k) + inTensor(shape));
    out[k] = end[k] - begin[k];
    base += static_cast<std::int64_t>(begin[k]) * dims[k].step;
    dims[k].size = static_cast<std::int64_t>(out[k]);
  }
  if (product(view(out)) == 0)
    return Tensor(type_, out.data(), out.size(), detail::emptyRunList());
  return Tensor(type_, out.data(), out.size(),
                mapAffine(list(), base, dims.data(), dims.size()).release());
}

void Tensor::flatRuns(std::size_t begin, std::size_t end,
                      std::vector<Run> &out) const {
  requireValid(*this, "flatRuns");
  const std::size_t n = numElements();
  if (begin > end || end > n)
    throw ShapeError("flatRuns: elements [" + std::to_string(begin) + ", " +
                     std::to_string(end) + ") are not within the " +
                     std::to_string(n) + " elements" + inTensor(shape()));
  out.clear();
  if (begin == end)
    return;
  detail::RunBuilder builder(out);
  builder.pushProgression(list(), static_cast<std::int64_t>(begin), 1,
                          static_cast<std::int64_t>(end - begin));
}

std::vector<Tensor> Tensor::slices(const std::vector<Interval> &intervals,
                                   unsigned dim) const {
  std::vector<Tensor> result;
  result.reserve(intervals.size());
  for (const Interval &region : intervals)
    result.push_back(slice(region, dim));
  return result;
}

Tensor Tensor::flatten() const {
  requireValid(*this, "flatten");
  const std::size_t n = numElements();
  return Tensor(type_, &n, 1, *this);
}

Tensor Tensor::flatten(unsigned dimBegin, unsigned dimEnd) const {
  requireValid(*this, "flatten");
  if (dimBegin >= dimEnd || dimEnd > rank())
    throw ShapeError("flatten: dimensions [" + std::to_string(dimBegin) + ", " +
                     std::to_string(dimEnd) +
                     ") are not a non-empty range of the dimensions of "
                     "tensor of shape " +
                     shapeToString() + " of rank " + std::to_string(rank()));
  const ArrayView<std::size_t> shape = this->shape();
  ShapeDims out(shape.begin(), shape.begin() + dimBegin);
  out.push_back(product(shape, dimBegin, dimEnd));
  for (std::size_t k = dimEnd; k < shape.size(); ++k)
    out.push_back(shape[k]);
  return Tensor(type_, out.data(), out.size(), *this);
}

Tensor Tensor::reshape(const std::vector<std::size_t> &shape) const {
  requireValid(*this, "reshape");
  if (product(shape) != numElements())
    throw ShapeError("reshape: " + shapeToString() + " has " +
                     std::to_string(numElements()) +
                     " elements but the new shape " + shapeText(shape) +
                     " has " + std::to_string(product(shape)));
  return Tensor(type_, shape.data(), shape.size(), *this);
}

Tensor Tensor::dimShuffle(const std::vector<unsigned> &permutation) const {
  requireValid(*this, "dimShuffle");
  if (permutation.size() != rank())
    throw ShapeError("dimShuffle: permutation " + listText(permutation) +
                     " has " + std::to_string(permutation.size()) +
                     " entries but the tensor of shape " + shapeToString() +
                     " has rank " + std::to_string(rank()));
  SmallVec<std::uint8_t, 8> seen(rank(), false);
  for (unsigned p : permutation) {
    if (p >= rank() || seen[p])
      throw ShapeError("dimShuffle: " + listText(permutation) +
                       " is not a permutation of 0.." +
                       std::to_string(rank() - 1) +
                       "; each dimension of the tensor of shape " +
                       shapeToString() + " must appear exactly once");
    seen[p] = true;
  }
  const ArrayView<std::size_t> shape = this->shape();
  const AffineDims source = rowMajorDims(shape);
  AffineDims dims(rank(), AffineDim{});
  ShapeDims out(rank(), 0);
  for (unsigned k = 0; k < rank(); ++k) {
    dims[k] = source[permutation[k]];
    out[k] = shape[permutation[k]];
  }
  return Tensor(type_, out.data(), out.size(),
                mapAffine(list(), 0, dims.data(), dims.size()).release());
}

Tensor Tensor::dimRoll(unsigned dimIdx, unsigned newIdx) const {
  requireDim(*this, "dimRoll", dimIdx);
  requireDim(*this, "dimRoll", newIdx);
  std::vector<unsigned> permutation;
  for (unsigned k = 0; k < rank(); ++k)
    if (k != dimIdx)
      permutation.push_back(k);
  permutation.insert(permutation.begin() + newIdx, dimIdx);
  return dimShuffle(permutation);
}

Tensor Tensor::transpose() const {
  requireValid(*this, "transpose");
  if (rank() != 2)
    throw ShapeError("transpose: tensor of shape " + shapeToString() +
                     " has rank " + std::to_string(rank()) +
                     " but transpose needs rank 2; use dimShuffle to permute "
                     "the dimensions of other ranks");
  return dimShuffle({1, 0});
}

Tensor Tensor::broadcast(std::size_t n, unsigned dim) const {
  requireDim(*this, "broadcast", dim);
  // Repeating the whole dimension n times is a new outer dimension of step
  // 0 in front of it; the result shows the two as one.
  const ArrayView<std::size_t> shape = this->shape();
  AffineDims dims = rowMajorDims(shape);
  dims.insert(dims.begin() + dim, AffineDim{static_cast<std::int64_t>(n), 0});
  ShapeDims out(shape.begin(), shape.end());
  out[dim] *= n;
  return Tensor(type_, out.data(), out.size(),
                mapAffine(list(), 0, dims.data(), dims.size()).release());
}

Tensor Tensor::expand(const std::vector<std::size_t> &indices) const {
  requireValid(*this, "expand");
  ShapeDims inserts(rank() + 1, 0);
  for (std::size_t position : indices) {
    if (position > rank())
      throw ShapeError("expand: position " + std::to_string(position) +
                       " is beyond rank " + std::to_string(rank()) +
                       " of tensor of shape " + shapeToString() +
                       "; positions go from 0 to the rank");
    ++inserts[position];
  }
  const ArrayView<std::size_t> shape = this->shape();
  ShapeDims out;
  out.reserve(rank() + indices.size());
  for (unsigned k = 0; k <= rank(); ++k) {
    for (std::size_t i = 0; i < inserts[k]; ++i)
      out.push_back(1);
    if (k < rank())
      out.push_back(shape[k]);
  }
  return Tensor(type_, out.data(), out.size(), *this);
}

Tensor Tensor::squeeze(const std::vector<std::size_t> &dims) const {
  requireValid(*this, "squeeze");
  const ArrayView<std::size_t> shape = this->shape();
  SmallVec<std::uint8_t, 8> remove(rank(), false);
  for (std::size_t d : dims) {
    if (d >= rank())
      throw ShapeError("squeeze: dimension " + std::to_string(d) +
                       " is out of range for tensor of shape " +
                       shapeToString() + " of rank " + std::to_string(rank()));
    if (remove[d])
      throw ShapeError("squeeze: dimension " + std::to_string(d) +
                       " is listed twice in " + listText(dims));
    if (shape[d] != 1)
      throw ShapeError("squeeze: dimension " + std::to_string(d) +
                       " has size " + std::to_string(shape[d]) + ", not 1," +
                       inTensor(shape) +
                       "; only dimensions of size 1 can be removed");
    remove[d] = true;
  }
  ShapeDims out;
  for (unsigned k = 0; k < rank(); ++k)
    if (!remove[k])
      out.push_back(shape[k]);
  return Tensor(type_, out.data(), out.size(), *this);
}

Tensor Tensor::reverse(unsigned dim) const {
  requireDim(*this, "reverse", dim);
  if (numElements() == 0)
    return *this;
  const ArrayView<std::size_t> shape = this->shape();
  AffineDims dims = rowMajorDims(shape);
  std::int64_t base = (dims[dim].size - 1) * dims[dim].step;
  dims[dim].step = -dims[dim].step;
  return Tensor(type_, shape.data(), shape.size(),
                mapAffine(list(), base, dims.data(), dims.size()).release());
}

Tensor Tensor::subSample(std::size_t stride, unsigned dim) const {
  requireDim(*this, "subSample", dim);
  const ArrayView<std::size_t> shape = this->shape();
  if (stride == 0)
    throw ShapeError("subSample: stride 0 on dimension " + std::to_string(dim) +
                     inTensor(shape) +
                     " is not allowed; the stride must be at least 1");
  AffineDims dims = rowMajorDims(shape);
  ShapeDims out(shape.begin(), shape.end());
  out[dim] = (shape[dim] + stride - 1) / stride;
  dims[dim] = {static_cast<std::int64_t>(out[dim]),
               dims[dim].step * static_cast<std::int64_t>(stride)};
  return Tensor(type_, out.data(), out.size(),
                mapAffine(list(), 0, dims.data(), dims.size()).release());
}

Tensor Tensor::reinterpret(Type type) const {
  requireValid(*this, "reinterpret");
  if (typeSize(type) != typeSize(type_))
    throw TypeError("reinterpret: " + std::string(typeName(type_)) + " has " +
                    std::to_string(typeSize(type_)) +
                    " bytes per element but " + std::string(typeName(type)) +
                    " has " + std::to_string(typeSize(type)) +
                    "; reinterpret needs types of the same size");
  return Tensor(type, shapeData(), rank(), *this);
}

namespace {

void checkConcat(const std::vector<Tensor> &tensors, unsigned dim) {
  if (tensors.empty())
    throw ShapeError("concat: no tensors to join; pass at least one");
  for (const Tensor &t : tensors)
    requireValid(t, "concat");
  const Tensor &first = tensors.front();
  if (dim >= first.rank())
    throw ShapeError("concat: dimension " + std::to_string(dim) +
                     " is out of range for tensors of shape " +
                     first.shapeToString() + " of rank " +
                     std::to_string(first.rank()));
  for (std::size_t i = 1; i < tensors.size(); ++i) {
    const Tensor &t = tensors[i];
    std::string which = "concat: tensor " + std::to_string(i) + " has ";
    if (t.elementType() != first.elementType())
      throw TypeError(which + "type " + std::string(typeName(t.elementType())) +
                      " but tensor 0 has type " +
                      std::string(typeName(first.elementType())));
    if (t.rank() != first.rank())
      throw ShapeError(which + "shape " + t.shapeToString() + " of rank " +
                       std::to_string(t.rank()) + " but tensor 0 has shape " +
                       first.shapeToString() + " of rank " +
                       std::to_string(first.rank()));
    for (unsigned k = 0; k < t.rank(); ++k)
      if (k != dim && t.shape()[k] != first.shape()[k])
        throw ShapeError(
            which + "shape " + t.shapeToString() + " but tensor 0 has shape " +
            first.shapeToString() + "; they differ on dimension " +
            std::to_string(k) + " (" + std::to_string(t.shape()[k]) + " vs " +
            std::to_string(first.shape()[k]) + ") and only dimension " +
            std::to_string(dim) + " may differ");
  }
}

} // namespace

Tensor concat(const std::vector<Tensor> &tensors, unsigned dim) {
  checkConcat(tensors, dim);
  const Tensor &first = tensors.front();
  if (tensors.size() == 1)
    return first;
  ShapeDims shape(first.shape().begin(), first.shape().end());
  shape[dim] = 0;
  for (const Tensor &t : tensors)
    shape[dim] += t.shape()[dim];
  detail::RunBuilder builder;
  if (dim == 0) {
    for (const Tensor &t : tensors)
      for (const Run &r : t.runs())
        builder.push(r);
    return Tensor(first.elementType(), shape.data(), shape.size(),
                  builder.finish().release());
  }
  // Each tensor is [outer, inner] with the same outer extent: the result
  // takes row o of every tensor in turn.
  const std::size_t outer = product(first.shape(), 0, dim);
  for (std::size_t o = 0; o < outer; ++o)
    for (const Tensor &t : tensors) {
      auto inner = static_cast<std::int64_t>(product(t.shape(), dim, t.rank()));
      builder.pushProgression(t.list(), static_cast<std::int64_t>(o) * inner, 1,
                              inner);
    }
  return Tensor(first.elementType(), shape.data(), shape.size(),
                builder.finish().release());
}

Tensor concat(const Tensor &a, const Tensor &b, unsigned dim) {
  return concat(std::vector<Tensor>{a, b}, dim);
}

Tensor append(const Tensor &a, const Tensor &b, unsigned dim) {
  requireValid(a, "append");
  requireValid(b, "append");
  if (b.rank() + 1 != a.rank())
    throw ShapeError("append: b has shape " + b.shapeToString() + " of rank " +
                     std::to_string(b.rank()) + " but a has shape " +
                     a.shapeToString() + " of rank " +
                     std::to_string(a.rank()) +
                     "; b needs one dimension fewer than a");
  if (dim >= a.rank())
    throw ShapeError("append: dimension " + std::to_string(dim) +
                     " is out of range for tensor a of shape " +
                     a.shapeToString() + " of rank " +
                     std::to_string(a.rank()));
  return concat(a, b.expand({dim}), dim);
}

std::ostream &operator<<(std::ostream &os, const Run &run) {
  return os << "{var " << run.var << ", start " << run.start << ", stride "
            << run.stride << ", count " << run.count << "}";
}

std::ostream &operator<<(std::ostream &os, const Tensor &tensor) {
  if (!tensor.valid())
    return os << "Tensor(invalid)";
  os << typeName(tensor.elementType()) << tensor.shapeToString() << "{";
  // Long run lists are cut short: the head is what a reader needs.
  constexpr std::size_t shown = 16;
  const ArrayView<Run> runs = tensor.runs();
  for (std::size_t i = 0; i < runs.size() && i < shown; ++i)
    os << (i ? ", " : "") << runs[i];
  if (runs.size() > shown)
    os << ", ... " << runs.size() - shown << " more runs";
  return os << "}";
}

} // namespace tessera
