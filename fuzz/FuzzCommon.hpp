// Shared by the libFuzzer harnesses: what counts as an expected rejection,
// a per-process scratch folder for loaders that only read paths, and the
// property check that turns a wrong result into a crash the fuzzer keeps.
#pragma once

#include "tessera/support/Error.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

/// A folder of this process's own (under $TMPDIR) for loaders that take a
/// path: created on first use, reused by every input so that an execution
/// costs one small write, removed at normal exit.
const std::string &scratchDir();

/// Writes \p content to scratchDir()/\p name, replacing what was there, and
/// returns the path.
std::string writeScratch(std::string_view name, std::string_view content);

} // namespace tessera::fuzz
