/// \file
/// The vertex classes a graph can instantiate: built-in vertices (registered
/// explicitly by the ops library, each with its cycle estimator) and user
/// codelets (C++ files compiled with the host compiler into cached shared
/// objects, the way Poplar's IPU Model runs user vertices).
///
/// User codelets: addCodelets("file.cpp") finds the vertex classes of the
/// file and their public data members (see CodeletParser in src/graph),
/// generates a translation unit that includes the file and describes each
/// class with codelet::VertexDescriber, compiles it with $CXX (default
/// "c++") and loads the result. Compiled libraries are cached under
/// $TESSERA_CACHE_DIR/codelets (default $XDG_CACHE_HOME/tessera/codelets or
/// ~/.cache/tessera/codelets), keyed by a hash of everything that can change
/// the result: the source, the generated code, the compiler and its version,
/// the flags, Tessera's codelet headers and the headers the codelet includes
/// (found next to the codelet file). A cache hit runs no compiler. The
/// cache holds code this process loads, so it follows the executable
/// cache's rule (checkFolderIsPrivate in tessera/support/File.hpp): a
/// folder another user owns or can write is an OptionError (unless sticky
/// and this user's), folders it creates have mode 0700, and an entry
/// another user owns is compiled afresh instead of loaded.
///
/// The include directories given to the compiler come from the build
/// (TESSERA_INCLUDE_DIR, TESSERA_COMPAT_INCLUDE_DIR) and may be overridden by
/// environment variables of the same names.
#pragma once

#include "tessera/Vertex.hpp"
#include "tessera/device/Target.hpp"

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

/// Per-field element counts of one vertex instance, in the order of
/// VertexClassInfo::fields: a scalar field {1}; a vector {n}; a list of
/// vectors {n0, n1, ...}; a list of scalars {1, 1, ...}; plain state {} or,
/// for a plain-state vector, {n}.
struct VertexInstanceShape {
  const codelet::VertexClassInfo *vertexClass = nullptr;
  std::vector<std::vector<std::uint32_t>> fieldSizes;
};

/// Cycles one vertex instance takes on its worker (for a MultiVertex: on
/// each of its workers) on the target the graph is compiled for, as
/// PopLibs' estimators take the target: every figure comes from the target
/// (Target::costs()), so an overridden figure moves the estimate.
using CycleEstimator =
    std::function<std::uint64_t(const VertexInstanceShape &, const Target &)>;

/// A vertex class the registry knows, with where it came from.
struct RegisteredVertex {
  codelet::VertexClassInfo info;
  /// Empty for a user codelet: estimateCycles then uses the default.
  CycleEstimator estimator;
  /// Keeps the codelet's shared object loaded; null for built-ins.
  std::shared_ptr<void> library;
  /// The full text of the user codelet file (for executables to rebuild it).
  std::string codeletSource;
  /// Extra compiler flags the codelet was compiled with.
  std::string compileFlags;
  /// The path or name the user gave; "built-in" for built-ins.
  std::string codeletName;
  bool builtin = false;
};

/// Spells a vertex class name canonically: no whitespace except one space
/// between two words ("Foo< unsigned  int , 4 >" -> "Foo<unsigned int,4>").
std::string normalizeVertexName(std::string_view name);

/// The vertex classes of a graph. Entries never move once added (compiled
/// graphs point at them) and are never removed. Thread-safe: graphs may
/// share one registry through a std::shared_ptr.
class VertexRegistry {
public:
  /// A library of built-in vertices: the function that adds its classes.
  using BuiltinLibrary = void (*)(VertexRegistry &);
  /// Makes \p library known to the whole process, so that an engine loading
  /// a saved executable finds the built-in classes it uses. Idempotent.
  static void registerBuiltinLibrary(const std::string &name,
                                     BuiltinLibrary library);
  /// Adds the classes of every library registered so far.
  void addBuiltinLibraries();

  VertexRegistry() = default;
  VertexRegistry(const VertexRegistry &) = delete;
  VertexRegistry &operator=(const VertexRegistry &) = delete;

  /// Registers a vertex class compiled into the program. Registering the
  /// same class (same functions and fields) again is a no-op; a different
  /// class under a registered name throws CodeletError.
  void addBuiltin(codelet::VertexClassInfo info, CycleEstimator estimator);

  /// Compiles the codelet file at \p path with the host C++ compiler (or
  /// loads it from the cache) and registers every vertex class in it. A
  /// compiled codelet file (`.gp`, written by popc) is loaded without
  /// compiling; one written by another Tessera version throws CodeletError
  /// naming both versions.
  /// \p extraCompileFlags are appended to the compiler's command line, split
  /// at whitespace. Returns the registered class names in file order.
  /// Adding the same source with the same flags again is a no-op that
  /// returns the same names. Throws CodeletError for a missing file, a
  /// path that is not a regular file (saying what it is: a FIFO, a folder,
  /// a device), a file without vertex classes, a class name already registered
  /// with another definition, a private vertex field and a compile failure (the
  /// message holds the compiler's diagnostics verbatim and its command line).
  std::vector<std::string>
  addCodelets(const std::string &path,
              const std::string &extraCompileFlags = "");

  /// As addCodelets, for codelet source text; \p displayName stands for the
  /// file in messages and compiler diagnostics. If \p displayName is the
  /// path of an existing file (an executable rebuilding the codelets it was
  /// compiled with), the codelet is compiled exactly as addCodelets of that
  /// path compiles it: its directory is searched for `#include "..."`
  /// headers, and an earlier compile of the file is a cache hit.
  std::vector<std::string>
  addCodeletSource(const std::string &source, const std::string &displayName,
                   const std::string &extraCompileFlags = "");

  /// The class registered as \p name (whitespace in template arguments does
  /// not matter), or nullptr.
  const RegisteredVertex *find(std::string_view name) const;
  /// All registered names, sorted.
  std::vector<std::string> names() const;
  std::size_t size() const;

  /// Cycles of one instance on \p target: the class's estimator, or, if it
  /// has none, defaultCycleEstimate; \p usedDefault (if given) says which,
  /// so the caller can warn once per class.
  std::uint64_t estimateCycles(const RegisteredVertex &vertex,
                               const VertexInstanceShape &shape,
                               const Target &target,
                               bool *usedDefault = nullptr) const;

  /// The estimate for a vertex without an estimator:
  /// CostFigures::defaultVertexWorkerCycles plus one cycle per element of
  /// its Input, Output and InOut fields (plain state is free); for a
  /// MultiVertex the elements are shared by its six workers (rounded up).
  static std::uint64_t defaultCycleEstimate(const VertexInstanceShape &shape,
                                            const Target &target);

  /// How many times this process has run the C++ compiler on a codelet
  /// (cache misses); for tests and diagnostics.
  static std::uint64_t codeletCompilerRuns();

private:
  std::vector<std::string> addSource(const std::string &source,
                                     const std::string &codeletName,
                                     const std::string &quoteIncludeDir,
                                     const std::string &extraCompileFlags,
                                     const std::string &prebuiltLibrary = "");
  const RegisteredVertex *findLocked(std::string_view name) const;
  bool alreadyRegistered(const std::vector<std::string> &names,
                         const std::string &source, const std::string &flags,
                         const std::string &codeletName) const;

  mutable std::shared_mutex mutex_;
  std::deque<RegisteredVertex> entries_;
  std::map<std::string, RegisteredVertex *, std::less<>> byName_;
};

} // namespace tessera
