/// \file
/// Turns a parsed codelet file into loaded vertex classes: generates the
/// registration code, compiles source plus registration into a shared
/// object with the host C++ compiler (or finds it in the on-disk cache),
/// loads it and calls its registration function.
///
/// Cache layout, in the cache directory: <key>.deps lists the files the last
/// compile of a codelet read besides its own source (its `#include "..."`
/// headers and Tessera's headers) with a hash of each; <key>-<hash of that
/// list>.so is the library. <key> is an xxhash64 of the source, the
/// generated code, the compiler and its version, the flags and Tessera's
/// codelet headers. A lookup checks that the listed files are unchanged, so
/// editing a header a codelet includes recompiles it. Each compile writes
/// under unique temporary names and renames the library, then the list, into
/// place, so processes compiling the same codelet at once do not interfere.
#pragma once

#include "CodeletParser.hpp"

#include "tessera/Vertex.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessera::detail {

/// Everything one codelet compile depends on.
struct CodeletBuildRequest {
  /// The user's source text.
  std::string source;
  /// The file name compiler diagnostics and messages show.
  std::string displayName;
  /// The directory of the user's file, searched for its `#include "..."`
  /// headers; empty for source text.
  std::string quoteIncludeDir;
  /// Extra compiler flags, split at whitespace.
  std::string extraFlags;
  /// The vertex classes found in the source.
  std::vector<ParsedVertexClass> classes;
};

/// A loaded codelet library and the classes it described.
struct LoadedCodelet {
  /// dlopen handle; dlclose runs when the last copy goes.
  std::shared_ptr<void> library;
  /// In the order of CodeletBuildRequest::classes.
  std::vector<codelet::VertexClassInfo> classes;
  /// The shared object's path in the cache.
  std::string libraryPath;
  /// Whether this call ran the compiler (false: cache hit).
  bool compiled = false;
};

/// The registration function a codelet library exports, for \p classes.
std::string
generateCodeletRegistration(const std::vector<ParsedVertexClass> &classes);

/// Compiles (or finds in the cache) and loads a codelet. Throws CodeletError
/// with the compiler's output verbatim and its command line if the compile
/// fails, and for cache, compiler and loader failures.
LoadedCodelet buildCodelet(const CodeletBuildRequest &request);

/// Compiles \p request (or finds it in the cache) without loading it;
/// returns the shared object's path. Sets \p compiled to whether the
/// compiler ran. Throws as buildCodelet.
std::string compileCodeletLibrary(const CodeletBuildRequest &request,
                                  bool *compiled = nullptr);

/// dlopens \p library and calls its registration function; false (with the
/// loader's message in \p error) if it cannot.
bool loadCodeletLibrary(const std::string &library, LoadedCodelet &out,
                        std::string &error);

/// The directory compiled codelets are cached in: $TESSERA_CACHE_DIR/codelets,
/// $XDG_CACHE_HOME/tessera/codelets or ~/.cache/tessera/codelets.
std::string codeletCacheDir();

/// Compiler runs on codelets in this process.
std::uint64_t codeletCompilerRuns();

} // namespace tessera::detail
