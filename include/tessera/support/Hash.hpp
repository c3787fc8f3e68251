/// \file
/// 64-bit xxHash (XXH64) for content hashes: executable cache keys, graph
/// fingerprints, checksums in serialised files. Not for security.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

struct XXH64_state_s;

namespace tessera {

/// XXH64 of \p size bytes at \p data.
std::uint64_t hash64(const void *data, std::size_t size,
                     std::uint64_t seed = 0);
/// XXH64 of the bytes of \p bytes.
inline std::uint64_t hash64(std::string_view bytes, std::uint64_t seed = 0) {
  return hash64(bytes.data(), bytes.size(), seed);
}

/// Incremental XXH64: the digest of a sequence of updates equals hash64 of
/// their bytes concatenated.
class Hasher {
public:
  explicit Hasher(std::uint64_t seed = 0);
  Hasher(const Hasher &other);
  Hasher &operator=(const Hasher &other);
  Hasher(Hasher &&) noexcept;
  Hasher &operator=(Hasher &&) noexcept;
  ~Hasher();

  Hasher &update(const void *data, std::size_t size);
  /// The bytes of \p bytes, without their length.
  Hasher &update(std::string_view bytes) {
    return update(bytes.data(), bytes.size());
  }
  /// The object representation of \p value (an integer, a float, an enum, a
  /// struct without padding). Pointers and arrays are rejected: hash what
  /// they point to instead.
  template <typename T>
  requires(std::is_trivially_copyable_v<T> && !std::is_pointer_v<T> &&
           !std::is_array_v<T>) Hasher &update(const T &value) {
    return update(static_cast<const void *>(&value), sizeof(T));
  }
  /// The length of \p bytes, then the bytes: a sequence of these updates is
  /// unambiguous ("ab","c" and "a","bc" differ), as cache keys need.
  Hasher &updateDelimited(std::string_view bytes) {
    update(static_cast<std::uint64_t>(bytes.size()));
    return update(bytes);
  }

  /// The hash of everything so far; more updates may follow.
  std::uint64_t digest() const;

private:
  struct StateDeleter {
    void operator()(XXH64_state_s *state) const;
  };
  std::unique_ptr<XXH64_state_s, StateDeleter> state_;
};

/// \p value as 16 lowercase hexadecimal digits.
std::string toHex(std::uint64_t value);

} // namespace tessera
