#include "tessera/graph/Tensor.hpp"

#include "TensorRuns.hpp"
#include "tessera/support/Error.hpp"

#include <algorithm>
#include <ostream>

namespace tessera {

using detail::AffineDim;
using detail::mapAffine;

namespace {

std::string shapeText(const std::vector<std::size_t> &shape) {
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

std::size_t product(const std::vector<std::size_t> &shape, std::size_t first,
                    std::size_t last) {
  std::size_t n = 1;
  for (std::size_t i = first; i < last; ++i)
    n *= shape[i];
  return n;
}

std::size_t product(const std::vector<std::size_t> &shape) {
  return product(shape, 0, shape.size());
}

// The view that shows the source as it is: dimension k moves
// product(shape[k+1..]) flat elements per index.
std::vector<AffineDim> rowMajorDims(const std::vector<std::size_t> &shape) {
  std::vector<AffineDim> dims(shape.size());
  std::int64_t step = 1;
  for (std::size_t k = shape.size(); k-- > 0;) {
    dims[k] = {static_cast<std::int64_t>(shape[k]), step};
    step *= static_cast<std::int64_t>(shape[k]);
  }
  return dims;
}

std::string inTensor(const std::vector<std::size_t> &shape) {
  return " in tensor of shape " + shapeText(shape);
}

} // namespace

Tensor::Tensor(Type type, std::vector<std::size_t> shape,
               const std::vector<Run> &runs)
    : type_(type), shape_(std::move(shape)) {
  std::int64_t total = 0;
  for (const Run &r : runs) {
    TESSERA_INTERNAL_ASSERT(r.count >= 0, "run with a negative count");
    TESSERA_INTERNAL_ASSERT(
        r.count == 0 ||
            (r.start >= 0 && r.start + (r.count - 1) * r.stride >= 0),
        "run reaching a negative element index");
    total += r.count;
  }
  TESSERA_INTERNAL_ASSERT(total == static_cast<std::int64_t>(product(shape_)),
                          "runs hold " + std::to_string(total) +
                              " elements but shape " + shapeText(shape_) +
                              " has " + std::to_string(product(shape_)));
  runs_ = detail::makeRunList(runs);
}

Tensor::Tensor(Type type, std::vector<std::size_t> shape,
               std::shared_ptr<const detail::TensorRunList> runs)
    : type_(type), shape_(std::move(shape)), runs_(std::move(runs)) {
  TESSERA_INTERNAL_ASSERT(runs_->numElements() ==
                              static_cast<std::int64_t>(product(shape_)),
                          "view built with the wrong number of elements");
}

std::size_t Tensor::dim(unsigned i) const {
  if (i >= rank())
    throw ShapeError("dim: dimension " + std::to_string(i) +
                     " is out of range for tensor of shape " + shapeToString() +
                     " of rank " + std::to_string(rank()));
  return shape_[i];
}

std::size_t Tensor::numElements() const { return runs_ ? product(shape_) : 0; }

bool Tensor::isContiguous() const {
  // Merging guarantees consecutive elements form one run of stride 1.
  return runs_ && runs_->runs.size() == 1 && runs_->runs.front().stride == 1;
}

const std::vector<Run> &Tensor::runs() const {
  static const std::vector<Run> none;
  return runs_ ? runs_->runs : none;
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

std::string Tensor::shapeToString() const { return shapeText(shape_); }

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
  std::vector<AffineDim> dims = rowMajorDims(shape_);
  std::int64_t base = 0;
  for (std::size_t k = 0; k < indices.size(); ++k) {
    if (indices[k] >= shape_[k])
      throw ShapeError("index: index " + std::to_string(indices[k]) +
                       " is out of range for dimension " + std::to_string(k) +
                       " of size " + std::to_string(shape_[k]) +
                       inTensor(shape_));
    base += static_cast<std::int64_t>(indices[k]) * dims[k].step;
  }
  dims.erase(dims.begin(), dims.begin() + indices.size());
  std::vector<std::size_t> shape(shape_.begin() + indices.size(), shape_.end());
  return Tensor(type_, std::move(shape), mapAffine(runs_, base, dims));
}

Tensor Tensor::slice(std::size_t begin, std::size_t end, unsigned dim) const {
  requireDim(*this, "slice", dim);
  std::vector<std::size_t> begins(rank(), 0), ends = shape_;
  begins[dim] = begin;
  ends[dim] = end;
  return slice(begins, ends);
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
  std::vector<AffineDim> dims = rowMajorDims(shape_);
  std::vector<std::size_t> shape(rank());
  std::int64_t base = 0;
  for (unsigned k = 0; k < rank(); ++k) {
    if (end[k] > shape_[k])
      throw ShapeError("slice: end " + std::to_string(end[k]) +
                       " is beyond dimension " + std::to_string(k) +
                       " of size " + std::to_string(shape_[k]) +
                       inTensor(shape_));
    if (begin[k] > end[k])
      throw ShapeError("slice: begin " + std::to_string(begin[k]) +
                       " is after end " + std::to_string(end[k]) +
                       " on dimension " + std::to_string(k) + inTensor(shape_));
    shape[k] = end[k] - begin[k];
    base += static_cast<std::int64_t>(begin[k]) * dims[k].step;
    dims[k].size = static_cast<std::int64_t>(shape[k]);
  }
  if (product(shape) == 0)
    return Tensor(type_, std::move(shape), detail::emptyRunList());
  return Tensor(type_, std::move(shape), mapAffine(runs_, base, dims));
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
  return Tensor(type_, {numElements()}, runs_);
}

Tensor Tensor::flatten(unsigned dimBegin, unsigned dimEnd) const {
  requireValid(*this, "flatten");
  if (dimBegin >= dimEnd || dimEnd > rank())
    throw ShapeError("flatten: dimensions [" + std::to_string(dimBegin) + ", " +
                     std::to_string(dimEnd) +
                     ") are not a non-empty range of the dimensions of "
                     "tensor of shape " +
                     shapeToString() + " of rank " + std::to_string(rank()));
  std::vector<std::size_t> shape(shape_.begin(), shape_.begin() + dimBegin);
  shape.push_back(product(shape_, dimBegin, dimEnd));
  shape.insert(shape.end(), shape_.begin() + dimEnd, shape_.end());
  return Tensor(type_, std::move(shape), runs_);
}

Tensor Tensor::reshape(const std::vector<std::size_t> &shape) const {
  requireValid(*this, "reshape");
  if (product(shape) != numElements())
    throw ShapeError("reshape: " + shapeToString() + " has " +
                     std::to_string(numElements()) +
                     " elements but the new shape " + shapeText(shape) +
                     " has " + std::to_string(product(shape)));
  return Tensor(type_, shape, runs_);
}

Tensor Tensor::dimShuffle(const std::vector<unsigned> &permutation) const {
  requireValid(*this, "dimShuffle");
  if (permutation.size() != rank())
    throw ShapeError("dimShuffle: permutation " + listText(permutation) +
                     " has " + std::to_string(permutation.size()) +
                     " entries but the tensor of shape " + shapeToString() +
                     " has rank " + std::to_string(rank()));
  std::vector<bool> seen(rank(), false);
  for (unsigned p : permutation) {
    if (p >= rank() || seen[p])
      throw ShapeError("dimShuffle: " + listText(permutation) +
                       " is not a permutation of 0.." +
                       std::to_string(rank() - 1) +
                       "; each dimension of the tensor of shape " +
                       shapeToString() + " must appear exactly once");
    seen[p] = true;
  }
  const std::vector<AffineDim> source = rowMajorDims(shape_);
  std::vector<AffineDim> dims(rank());
  std::vector<std::size_t> shape(rank());
  for (unsigned k = 0; k < rank(); ++k) {
    dims[k] = source[permutation[k]];
    shape[k] = shape_[permutation[k]];
  }
  return Tensor(type_, std::move(shape), mapAffine(runs_, 0, dims));
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
  std::vector<AffineDim> dims = rowMajorDims(shape_);
  dims.insert(dims.begin() + dim, AffineDim{static_cast<std::int64_t>(n), 0});
  std::vector<std::size_t> shape = shape_;
  shape[dim] *= n;
  return Tensor(type_, std::move(shape), mapAffine(runs_, 0, dims));
}

Tensor Tensor::expand(const std::vector<std::size_t> &indices) const {
  requireValid(*this, "expand");
  std::vector<std::size_t> inserts(rank() + 1, 0);
  for (std::size_t position : indices) {
    if (position > rank())
      throw ShapeError("expand: position " + std::to_string(position) +
                       " is beyond rank " + std::to_string(rank()) +
                       " of tensor of shape " + shapeToString() +
                       "; positions go from 0 to the rank");
    ++inserts[position];
  }
  std::vector<std::size_t> shape;
  shape.reserve(rank() + indices.size());
  for (unsigned k = 0; k <= rank(); ++k) {
    shape.insert(shape.end(), inserts[k], 1);
    if (k < rank())
      shape.push_back(shape_[k]);
  }
  return Tensor(type_, std::move(shape), runs_);
}

Tensor Tensor::squeeze(const std::vector<std::size_t> &dims) const {
  requireValid(*this, "squeeze");
  std::vector<bool> remove(rank(), false);
  for (std::size_t d : dims) {
    if (d >= rank())
      throw ShapeError("squeeze: dimension " + std::to_string(d) +
                       " is out of range for tensor of shape " +
                       shapeToString() + " of rank " + std::to_string(rank()));
    if (remove[d])
      throw ShapeError("squeeze: dimension " + std::to_string(d) +
                       " is listed twice in " + listText(dims));
    if (shape_[d] != 1)
      throw ShapeError("squeeze: dimension " + std::to_string(d) +
                       " has size " + std::to_string(shape_[d]) + ", not 1," +
                       inTensor(shape_) +
                       "; only dimensions of size 1 can be removed");
    remove[d] = true;
  }
  std::vector<std::size_t> shape;
  for (unsigned k = 0; k < rank(); ++k)
    if (!remove[k])
      shape.push_back(shape_[k]);
  return Tensor(type_, std::move(shape), runs_);
}

Tensor Tensor::reverse(unsigned dim) const {
  requireDim(*this, "reverse", dim);
  if (numElements() == 0)
    return *this;
  std::vector<AffineDim> dims = rowMajorDims(shape_);
  std::int64_t base = (dims[dim].size - 1) * dims[dim].step;
  dims[dim].step = -dims[dim].step;
  return Tensor(type_, shape_, mapAffine(runs_, base, dims));
}

Tensor Tensor::subSample(std::size_t stride, unsigned dim) const {
  requireDim(*this, "subSample", dim);
  if (stride == 0)
    throw ShapeError("subSample: stride 0 on dimension " + std::to_string(dim) +
                     inTensor(shape_) +
                     " is not allowed; the stride must be at least 1");
  std::vector<AffineDim> dims = rowMajorDims(shape_);
  std::vector<std::size_t> shape = shape_;
  shape[dim] = (shape_[dim] + stride - 1) / stride;
  dims[dim] = {static_cast<std::int64_t>(shape[dim]),
               dims[dim].step * static_cast<std::int64_t>(stride)};
  return Tensor(type_, std::move(shape), mapAffine(runs_, 0, dims));
}

Tensor Tensor::reinterpret(Type type) const {
  requireValid(*this, "reinterpret");
  if (typeSize(type) != typeSize(type_))
    throw TypeError("reinterpret: " + std::string(typeName(type_)) + " has " +
                    std::to_string(typeSize(type_)) +
                    " bytes per element but " + std::string(typeName(type)) +
                    " has " + std::to_string(typeSize(type)) +
                    "; reinterpret needs types of the same size");
  return Tensor(type, shape_, runs_);
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
  std::vector<std::size_t> shape = first.shape();
  shape[dim] = 0;
  for (const Tensor &t : tensors)
    shape[dim] += t.shape()[dim];
  detail::RunBuilder builder;
  if (dim == 0) {
    for (const Tensor &t : tensors)
      for (const Run &r : t.runs())
        builder.push(r);
    return Tensor(first.elementType(), std::move(shape), builder.finish());
  }
  // Each tensor is [outer, inner] with the same outer extent: the result
  // takes row o of every tensor in turn.
  const std::size_t outer = product(first.shape(), 0, dim);
  for (std::size_t o = 0; o < outer; ++o)
    for (const Tensor &t : tensors) {
      auto inner = static_cast<std::int64_t>(product(t.shape(), dim, t.rank()));
      builder.pushProgression(*t.runs_, static_cast<std::int64_t>(o) * inner, 1,
                              inner);
    }
  return Tensor(first.elementType(), std::move(shape), builder.finish());
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
  const std::vector<Run> &runs = tensor.runs();
  for (std::size_t i = 0; i < runs.size() && i < shown; ++i)
    os << (i ? ", " : "") << runs[i];
  if (runs.size() > shown)
    os << ", ... " << runs.size() - shown << " more runs";
  return os << "}";
}

} // namespace tessera
