#include "tessera/support/Hash.hpp"

#include "tessera/support/Error.hpp"

#include <xxhash.h>

#include <new>

namespace tessera {

std::uint64_t hash64(const void *data, std::size_t size, std::uint64_t seed) {
  return XXH64(data, size, seed);
}

void Hasher::StateDeleter::operator()(XXH64_state_s *state) const {
  XXH64_freeState(state);
}

namespace {
XXH64_state_s *newState() {
  XXH64_state_s *state = XXH64_createState();
  if (state == nullptr)
    throw std::bad_alloc();
  return state;
}
} // namespace

Hasher::Hasher(std::uint64_t seed) : state_(newState()) {
  XXH64_reset(state_.get(), seed);
}

Hasher::Hasher(const Hasher &other) : state_(newState()) {
  TESSERA_INTERNAL_ASSERT(other.state_, "copy of a moved-from Hasher");
  XXH64_copyState(state_.get(), other.state_.get());
}

Hasher &Hasher::operator=(const Hasher &other) {
  if (this != &other)
    *this = Hasher(other);
  return *this;
}

Hasher::Hasher(Hasher &&) noexcept = default;
Hasher &Hasher::operator=(Hasher &&) noexcept = default;
Hasher::~Hasher() = default;

Hasher &Hasher::update(const void *data, std::size_t size) {
  TESSERA_INTERNAL_ASSERT(state_, "update of a moved-from Hasher");
  XXH64_update(state_.get(), data, size);
  return *this;
}

std::uint64_t Hasher::digest() const {
  TESSERA_INTERNAL_ASSERT(state_, "digest of a moved-from Hasher");
  return XXH64_digest(state_.get());
}

std::string toHex(std::uint64_t value) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4)
    s[static_cast<std::size_t>(i)] = digits[value & 0xf];
  return s;
}

} // namespace tessera
