/// \file
/// ExecutableCache: compiled executables kept in a folder under a key, so a
/// second run with the same model and options skips compilation (as
/// TensorFlow-for-IPU's executable cache does). Entries are written
/// atomically; an entry that fails its checksum or cannot be read is
/// reported as a warning, recompiled and replaced.
#pragma once

#include "tessera/compiler/Executable.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace tessera {

class ExecutableCache {
public:
  /// A cache in \p directory (created on first store).
  explicit ExecutableCache(std::string directory);

  /// How an executable was obtained.
  enum class Outcome { Hit, Miss, Corrupt };

  /// The executable stored under \p key, or the one \p compile returns,
  /// which is then stored. \p outcome (if given) says which happened.
  Executable getOrCompile(const std::string &key,
                          const std::function<Executable()> &compile,
                          Outcome *outcome = nullptr) const;

  /// The file an entry of \p key lives in.
  std::string pathFor(const std::string &key) const;

  /// A key of \p text (a module's printed form and its options): 16 hex
  /// digits of its 64-bit hash, seeded with a hash of the running
  /// program's own binary, so a rebuilt Tessera (whose lowering or ops may
  /// have changed) never takes an executable an older build cached.
  static std::string keyOf(const std::string &text);

private:
  std::string directory_;
};

} // namespace tessera
