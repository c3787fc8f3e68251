/// \file
/// Whole-file reads and crash-safe writes: a reader sees either the old file
/// or the complete new one, never a torn one (executable caches, profiles,
/// device holder records shared between processes).
#pragma once

#include <string>
#include <string_view>

namespace tessera {

/// Writes \p bytes to \p path atomically: into a temporary file in the same
/// folder, flushed to disk with fsync, then renamed over \p path. Creates
/// missing parent folders. Throws Error naming the path and the system's
/// reason.
void writeFileAtomically(const std::string &path, std::string_view bytes);

/// The whole content of \p path. Throws Error naming the path and the
/// system's reason (a missing file, a folder, no permission).
std::string readFile(const std::string &path);

} // namespace tessera
