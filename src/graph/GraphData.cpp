#include "tessera/graph/GraphData.hpp"

#include "tessera/support/Error.hpp"

#include <algorithm>
#include <cstring>
#include <new>

namespace tessera {

// FieldTensors: one tensor lives in place (cap_ == 0), more in an array of
// cap_ tensors whose tail past size_ holds invalid tensors.

FieldTensors::FieldTensors(const FieldTensors &o) : one_() {
  if (o.size_ <= 1) {
    if (o.size_ == 1)
      one_ = o[0];
    size_ = o.size_;
    return;
  }
  grow(o.size_);
  std::copy(o.begin(), o.end(), many_);
  size_ = o.size_;
}

FieldTensors::FieldTensors(FieldTensors &&o) noexcept
    : size_(o.size_), cap_(o.cap_) {
  if (o.cap_) {
    many_ = o.many_;
    new (&o.one_) Tensor();
    o.cap_ = 0;
  } else {
    new (&one_) Tensor(std::move(o.one_));
  }
  o.size_ = 0;
}

FieldTensors &FieldTensors::operator=(const FieldTensors &o) {
  if (this != &o)
    *this = FieldTensors(o);
  return *this;
}

FieldTensors &FieldTensors::operator=(FieldTensors &&o) noexcept {
  if (this != &o) {
    destroy();
    new (this) FieldTensors(std::move(o));
  }
  return *this;
}

void FieldTensors::destroy() noexcept {
  if (cap_)
    delete[] many_;
  else
    one_.~Tensor();
}

void FieldTensors::grow(std::size_t n) {
  TESSERA_INTERNAL_ASSERT(n < 0xffffffffu, "a field of 2^32 tensors");
  Tensor *p = new Tensor[n];
  std::move(data(), data() + size_, p);
  destroy();
  many_ = p;
  cap_ = static_cast<std::uint32_t>(n);
}

void FieldTensors::reserve(std::size_t n) {
  if (n > capacity())
    grow(n);
}

void FieldTensors::resize(std::size_t n) {
  if (n > capacity())
    grow(std::max(n, 2 * capacity()));
  for (std::size_t i = n; i < size_; ++i)
    data()[i] = Tensor();
  size_ = static_cast<std::uint32_t>(n);
}

void FieldTensors::push_back(const Tensor &t) {
  if (size_ == capacity()) {
    Tensor copy(t); // t may be one of ours
    grow(2 * capacity());
    data()[size_++] = std::move(copy);
    return;
  }
  data()[size_++] = t;
}

void FieldTensors::assignOne(const Tensor &t) {
  Tensor copy(t);
  resize(1);
  data()[0] = std::move(copy);
}

FieldState::FieldState(const FieldState &o) {
  if (o.block_)
    std::memcpy(assign(o.size(), o.count()), o.data(), o.size());
}

FieldState::~FieldState() { delete[] block_; }

std::byte *FieldState::assign(std::size_t bytes, std::size_t count) {
  auto *block = new std::byte[kHeader + bytes]();
  new (block) Header{bytes, count};
  delete[] block_;
  block_ = block;
  return block_ + kHeader;
}

FieldSize &FieldSize::operator=(std::size_t n) {
  TESSERA_INTERNAL_ASSERT(n <= kMax, "a field size of 2^32 - 1 or more");
  n_ = static_cast<std::uint32_t>(n);
  return *this;
}

static_assert(sizeof(FieldTensors) == sizeof(Tensor) + 8);
static_assert(sizeof(FieldBinding) <= 72);

} // namespace tessera
