/// \file
/// Compiled codelet files (`.gp`, what popc writes): a codelet compiled
/// ahead of time into a file that Graph::addCodelets loads without running
/// the C++ compiler. The file records the Tessera version that wrote it, the
/// codelet's name, source and compile flags (so executables that use it can
/// carry the source), a hash of the source, and the compiled shared object.
#pragma once

#include <string>

namespace tessera {

/// The Tessera version this library is ("0.1.0"), recorded in `.gp` files.
const char *tesseraVersion();

/// Compiles the codelet file \p sourcePath with \p compileFlags (split at
/// whitespace, appended to the compiler's command line as addCodelets does)
/// and writes the compiled codelet to \p outputPath. Throws CodeletError as
/// addCodelets does, and for an output file that cannot be written.
void compileCodeletArchive(const std::string &sourcePath,
                           const std::string &compileFlags,
                           const std::string &outputPath);

/// Whether the file at \p path starts as a compiled codelet file does.
bool isCodeletArchive(const std::string &path);

} // namespace tessera
