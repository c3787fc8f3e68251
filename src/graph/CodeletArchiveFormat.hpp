/// \file
/// Reading compiled codelet files (`.gp`) for VertexRegistry.
#pragma once

#include <string>

namespace tessera::detail {

/// What a compiled codelet file holds.
struct CodeletArchiveContents {
  std::string name;    // the source file's absolute path when compiled
  std::string flags;   // the extra compile flags
  std::string source;  // the codelet's source text
  std::string library; // the compiled shared object's bytes
};

/// Reads and checks the file at \p path. Throws CodeletError for a file
/// written by another Tessera version (naming both), a damaged file, or a
/// source that does not match its recorded hash.
CodeletArchiveContents readCodeletArchive(const std::string &path);

/// Writes the archive's library into the codelet cache (once per content)
/// and returns its path.
std::string installArchiveLibrary(const CodeletArchiveContents &contents);

} // namespace tessera::detail
