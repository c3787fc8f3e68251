// Shared by the libFuzzer harnesses: what counts as an expected rejection,
// a per-process scratch folder for loaders that only read paths, and the
// property check that turns a wrong result into a crash the fuzzer keeps.
#pragma once

#include "tessera/compiler/ExecutableFormat.hpp"
#include "tessera/support/Error.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

namespace tessera::fuzz {

/// Runs \p body on one input. A tessera::Error is the loader rejecting bad
/// input, which is what it should do; anything else (a standard exception,
/// a crash, a sanitizer report, an internal assertion) escapes and is a
/// finding.
template <class Body> int runOne(Body &&body) {
  try {
    body();
  } catch (const Error &) {
  }
  return 0;
}

/// The input as a string.
inline std::string bytes(const std::uint8_t *data, std::size_t size) {
  return std::string(reinterpret_cast<const char *>(data), size);
}

/// Aborts with \p what when a property of the loader does not hold, so
/// libFuzzer saves the input as a crash.
inline void require(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "tessera fuzz: property violated: %s\n", what);
    std::abort();
  }
}

/// An executable payload as one input: the first part's size (4 bytes,
/// little-endian), the first part, then the second.
inline std::string joinPayload(const detail::ExecutablePayload &payload) {
  static_assert(kExecutablePayloadParts == 2);
  const auto n = static_cast<std::uint32_t>(payload[0].size());
  std::string out;
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>(n >> (8 * i)));
  for (const auto &part : payload)
    out.append(reinterpret_cast<const char *>(part.data()), part.size());
  return out;
}

/// An input split as joinPayload joins; a first part's size past the end
/// takes what there is.
inline detail::ExecutablePayload splitPayload(std::span<const std::byte> in) {
  std::uint32_t n = 0;
  for (std::size_t i = 0; i < 4 && i < in.size(); ++i)
    n |= std::to_integer<std::uint32_t>(in[i]) << (8 * i);
  in = in.subspan(std::min<std::size_t>(4, in.size()));
  const std::size_t first = std::min<std::size_t>(n, in.size());
  return {std::vector<std::byte>(in.begin(), in.begin() + first),
          std::vector<std::byte>(in.begin() + first, in.end())};
}

/// A folder of this process's own (under $TMPDIR) for loaders that take a
/// path: created on first use, reused by every input so that an execution
/// costs one small write, removed at normal exit.
const std::string &scratchDir();

/// Writes \p content to scratchDir()/\p name, replacing what was there, and
/// returns the path.
std::string writeScratch(std::string_view name, std::string_view content);

} // namespace tessera::fuzz
