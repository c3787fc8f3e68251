#include "tessera/data/HostTensor.hpp"

#include "tessera/support/Convert.hpp"

#include <cstdlib>
#include <utility>

namespace tessera::data {
namespace {

// 64 bytes: a cache line, and enough for any vector load the ops use.
constexpr std::size_t storageAlignment = 64;

} // namespace

std::size_t numElements(const Shape &shape) {
  std::size_t n = 1;
  for (std::size_t d : shape)
    n *= d;
  return n;
}

std::string shapeString(const Shape &shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ',';
    s += shape[i] == anyDim ? "?" : std::to_string(shape[i]);
  }
  return s + "]";
}

std::string typeAndShapeString(Type type, const Shape &shape) {
  return std::string(typeName(type)) + " " + shapeString(shape);
}

void HostTensor::FreeStorage::operator()(std::byte *p) const { std::free(p); }

HostTensor::HostTensor() = default;

HostTensor::HostTensor(Type type, Shape shape)
    : type_(type), shape_(std::move(shape)),
      numElements_(data::numElements(shape_)) {
  allocate(numBytes());
  if (numBytes())
    std::memset(data(), 0, numBytes());
}

HostTensor::HostTensor(const HostTensor &other)
    : type_(other.type_), shape_(other.shape_),
      numElements_(other.numElements_) {
  allocate(numBytes());
  if (numBytes())
    std::memcpy(data(), other.data(), numBytes());
}

HostTensor &HostTensor::operator=(const HostTensor &other) {
  if (this != &other) {
    reset(other.type_, other.shape_);
    if (numBytes())
      std::memcpy(data(), other.data(), numBytes());
  }
  return *this;
}

HostTensor::HostTensor(HostTensor &&other) noexcept
    : type_(other.type_), shape_(std::move(other.shape_)),
      numElements_(other.numElements_), capacity_(other.capacity_),
      storage_(std::move(other.storage_)) {
  other.shape_ = {0};
  other.numElements_ = 0;
  other.capacity_ = 0;
}

HostTensor &HostTensor::operator=(HostTensor &&other) noexcept {
  if (this != &other) {
    type_ = other.type_;
    shape_ = std::move(other.shape_);
    numElements_ = other.numElements_;
    capacity_ = other.capacity_;
    storage_ = std::move(other.storage_);
    other.shape_ = {0};
    other.numElements_ = 0;
    other.capacity_ = 0;
  }
  return *this;
}

HostTensor::~HostTensor() = default;

void HostTensor::allocate(std::size_t bytes) {
  if (bytes == 0) {
    storage_.reset();
    capacity_ = 0;
    return;
  }
  // aligned_alloc wants a multiple of the alignment.
  const std::size_t rounded =
      (bytes + storageAlignment - 1) / storageAlignment * storageAlignment;
  auto *p =
      static_cast<std::byte *>(std::aligned_alloc(storageAlignment, rounded));
  if (!p)
    throw MemoryError("HostTensor: cannot allocate " + std::to_string(bytes) +
                      " bytes of host memory for " +
                      typeAndShapeString(type_, shape_));
  storage_.reset(p);
  capacity_ = rounded;
}

void HostTensor::reset(Type type, const Shape &shape) {
  type_ = type;
  if (shape_ != shape)
    shape_ = shape; // reuses the vector's own storage when it can
  numElements_ = data::numElements(shape_);
  if (numBytes() > capacity_)
    allocate(numBytes());
}

void HostTensor::shrinkLeadingDim(std::size_t size) {
  TESSERA_INTERNAL_ASSERT(!shape_.empty() && size <= shape_[0],
                          "shrinkLeadingDim past the tensor's size");
  shape_[0] = size;
  numElements_ = data::numElements(shape_);
}

std::size_t HostTensor::dim(std::size_t d) const {
  if (d >= shape_.size())
    throw ShapeError("HostTensor: dimension " + std::to_string(d) +
                     " was asked of a tensor of rank " +
                     std::to_string(shape_.size()) + " (" +
                     typeAndShapeString(type_, shape_) + ")");
  return shape_[d];
}

void HostTensor::checkType(Type requested) const {
  if (requested != type_)
    throw TypeError("HostTensor: the elements are " +
                    std::string(typeName(type_)) + " but were read as " +
                    std::string(typeName(requested)) + "; ask for values<" +
                    std::string(typeName(type_)) + ">() or cast() first");
}

void HostTensor::checkValueCount(std::size_t count) const {
  if (count != numElements_)
    throw ShapeError("HostTensor: shape " + shapeString(shape_) + " holds " +
                     std::to_string(numElements_) + " elements but " +
                     std::to_string(count) + " values were given");
}

void HostTensor::checkSingleElement() const {
  if (numElements_ != 1)
    throw ShapeError("HostTensor: item() needs a tensor of one element but "
                     "this one is " +
                     typeAndShapeString(type_, shape_) + " with " +
                     std::to_string(numElements_) + " elements");
}

HostTensor HostTensor::slice(std::size_t i) const {
  if (shape_.empty())
    throw ShapeError("HostTensor: a scalar has no dimension 0 to slice");
  if (i >= shape_[0])
    throw ShapeError("HostTensor: slice " + std::to_string(i) +
                     " is past dimension 0 of size " +
                     std::to_string(shape_[0]));
  HostTensor out;
  out.reset(type_, Shape(shape_.begin() + 1, shape_.end()));
  if (out.numBytes())
    std::memcpy(out.data(),
                static_cast<const std::byte *>(data()) + i * out.numBytes(),
                out.numBytes());
  return out;
}

HostTensor HostTensor::cast(Type type) const {
  HostTensor out;
  out.reset(type, shape_);
  convertElements(type_, data(), type, out.data(), numElements_);
  return out;
}

HostTensor HostTensor::reshaped(Shape shape) const {
  HostTensor out = *this;
  out.reshape(std::move(shape));
  return out;
}

void HostTensor::reshape(Shape shape) {
  if (data::numElements(shape) != numElements_)
    throw ShapeError("HostTensor: cannot reshape " +
                     typeAndShapeString(type_, shape_) + " (" +
                     std::to_string(numElements_) + " elements) to " +
                     shapeString(shape) + " (" +
                     std::to_string(data::numElements(shape)) + " elements)");
  shape_ = std::move(shape);
}

bool HostTensor::operator==(const HostTensor &other) const {
  return type_ == other.type_ && shape_ == other.shape_ &&
         (numBytes() == 0 ||
          std::memcmp(data(), other.data(), numBytes()) == 0);
}

} // namespace tessera::data
