/// \file
/// ExecutableCache: compiled executables kept in a folder under a key, so a
/// second run with the same model and options skips compilation (as
/// TensorFlow-for-IPU's executable cache does). Entries are written
/// atomically and carry their key; an entry that fails its checksum, cannot
/// be read, is not a regular file, belongs to another user or holds another
/// key's executable is reported as a warning, recompiled and replaced. A
/// failure to store an entry (a full disk, a read-only folder) is a warning:
/// the compiled executable is still returned.
///
/// Loading an entry compiles and loads the codelet sources inside it, so a
/// cache folder is as sensitive as code: a folder another user owns, or
/// one writable by group or others, is refused unless it is sticky and
/// owned by this user, and folders the cache creates have mode 0700 (the
/// rule of checkFolderIsPrivate, tessera/support/File.hpp, which the codelet
/// cache shares).
#pragma once

#include "tessera/compiler/Executable.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace tessera {

/// The longest key an entry may have: 200 bytes. A key is part of the
/// entry's file name, and the name of its temporary file (key + ".tsx.tmp."
/// + PID + counter) must stay under the 255 bytes Linux file systems allow.
inline constexpr std::size_t kMaxCacheKeyBytes = 200;

class ExecutableCache {
public:
  /// A cache in \p directory (created on first store).
  explicit ExecutableCache(std::string directory);

  /// How an executable was obtained: loaded (Hit); compiled and stored
  /// because there was no entry (Miss) or it was unusable (Corrupt);
  /// compiled but not stored (NotStored, a warning says why).
  enum class Outcome { Hit, Miss, Corrupt, NotStored };

  /// The executable stored under \p key, or the one \p compile returns,
  /// which is then stored. \p outcome (if given) says which happened.
  /// Throws OptionError when the folder is another user's or writable by
  /// other users, or \p key is longer than kMaxCacheKeyBytes.
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
