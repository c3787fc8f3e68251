#include "tessera/graph/VertexRegistry.hpp"
#include "tessera/graph/CodeletArchive.hpp"

#include "CodeletArchiveFormat.hpp"
#include "CodeletCompiler.hpp"
#include "CodeletParser.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/File.hpp"

#include <filesystem>
#include <mutex>

namespace fs = std::filesystem;

namespace tessera {
namespace {

bool sameFields(const std::vector<codelet::FieldInfo> &a,
                const std::vector<codelet::FieldInfo> &b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].offset != b[i].offset ||
        a[i].direction != b[i].direction || a[i].shape != b[i].shape ||
        a[i].elementType != b[i].elementType || a[i].shared != b[i].shared)
      return false;
  return true;
}

// Built-ins are the same class when they run the same code on the same
// layout (registerBuiltinVertices called twice on one registry).
bool sameClass(const codelet::VertexClassInfo &a,
               const codelet::VertexClassInfo &b) {
  return a.size == b.size && a.align == b.align &&
         a.multiVertex == b.multiVertex && a.construct == b.construct &&
         a.destroy == b.destroy && a.compute == b.compute &&
         sameFields(a.fields, b.fields);
}

std::string describeOrigin(const RegisteredVertex &v) {
  if (v.builtin)
    return "a built-in vertex";
  std::string s = "codelet '" + v.codeletName + "'";
  if (!v.compileFlags.empty())
    s += " (compile flags '" + v.compileFlags + "')";
  return s;
}

std::string readCodeletFile(const std::string &path) {
  std::error_code ec;
  fs::path p(path);
  if (!fs::exists(p, ec)) {
    std::string where;
    if (p.is_relative())
      where = " (relative to the current directory '" +
              fs::current_path(ec).string() + "')";
    throw CodeletError("codelet file '" + path + "' not found" + where +
                       "; check the path given to addCodelets");
  }
  // A FIFO, a folder or a device is an error naming it, not a hang or an
  // endless read; readFile checks the descriptor it reads from.
  try {
    checkRegularFile(path, "codelet file");
    return readFile(path);
  } catch (const Error &e) {
    throw CodeletError(e.what());
  }
}

/// The directory `#include "..."` in the codelet file at \p path searches.
std::string includeDirOf(const std::string &path) {
  return fs::absolute(path).lexically_normal().parent_path().string();
}

} // namespace

namespace {
struct BuiltinLibraries {
  std::mutex mutex;
  std::map<std::string, VertexRegistry::BuiltinLibrary> byName;
};
BuiltinLibraries &builtinLibraries() {
  static BuiltinLibraries libraries;
  return libraries;
}
} // namespace

void VertexRegistry::registerBuiltinLibrary(const std::string &name,
                                            BuiltinLibrary library) {
  BuiltinLibraries &l = builtinLibraries();
  std::lock_guard lock(l.mutex);
  l.byName[name] = library;
}

void VertexRegistry::addBuiltinLibraries() {
  std::vector<BuiltinLibrary> libraries;
  {
    BuiltinLibraries &l = builtinLibraries();
    std::lock_guard lock(l.mutex);
    for (const auto &[name, library] : l.byName)
      libraries.push_back(library);
  }
  for (BuiltinLibrary library : libraries)
    library(*this);
}

void VertexRegistry::addBuiltin(codelet::VertexClassInfo info,
                                CycleEstimator estimator) {
  TESSERA_INTERNAL_ASSERT(!info.name.empty() && info.construct &&
                              info.destroy && info.compute,
                          "incomplete VertexClassInfo for '" + info.name + "'");
  info.name = normalizeVertexName(info.name);
  std::unique_lock lock(mutex_);
  if (const RegisteredVertex *existing = findLocked(info.name)) {
    if (existing->builtin && sameClass(existing->info, info))
      return;
    if (existing->builtin)
      throw CodeletError("built-in vertex class '" + info.name +
                         "' is registered twice with different definitions; "
                         "give one of them another name");
    throw CodeletError("vertex class '" + info.name +
                       "' is registered twice: as " +
                       describeOrigin(*existing) +
                       " and as a built-in vertex; give one of them another "
                       "name");
  }
  RegisteredVertex &entry = entries_.emplace_back();
  entry.info = std::move(info);
  entry.estimator = std::move(estimator);
  entry.codeletName = "built-in";
  entry.builtin = true;
  byName_.emplace(entry.info.name, &entry);
}

std::vector<std::string>
VertexRegistry::addCodelets(const std::string &path,
                            const std::string &extraCompileFlags) {
  if (isCodeletArchive(path)) {
    detail::CodeletArchiveContents gp = detail::readCodeletArchive(path);
    // The flags it was compiled with are fixed; extra ones cannot apply.
    return addSource(gp.source, gp.name, includeDirOf(gp.name), gp.flags,
                     detail::installArchiveLibrary(gp));
  }
  std::string source = readCodeletFile(path);
  return addSource(source, path, includeDirOf(path), extraCompileFlags);
}

std::vector<std::string>
VertexRegistry::addCodeletSource(const std::string &source,
                                 const std::string &displayName,
                                 const std::string &extraCompileFlags) {
  // An executable rebuilding a codelet passes the file's path: compile it as
  // addCodelets did, so headers next to it are found and the cache hits.
  std::error_code ec;
  std::string dir =
      fs::is_regular_file(displayName, ec) ? includeDirOf(displayName) : "";
  return addSource(source, displayName, dir, extraCompileFlags);
}

bool VertexRegistry::alreadyRegistered(const std::vector<std::string> &names,
                                       const std::string &source,
                                       const std::string &flags,
                                       const std::string &codeletName) const {
  bool all = true;
  for (const std::string &name : names) {
    const RegisteredVertex *existing = findLocked(name);
    if (!existing) {
      all = false;
      continue;
    }
    if (!existing->builtin && existing->codeletSource == source &&
        existing->compileFlags == flags)
      continue;
    std::string self = "codelet '" + codeletName + "'";
    if (!flags.empty())
      self += " (compile flags '" + flags + "')";
    throw CodeletError("vertex class '" + name + "' is defined twice: in " +
                       describeOrigin(*existing) + " and in " + self +
                       "; vertex class names must be unique in a graph, so "
                       "rename one of them");
  }
  return all;
}

std::vector<std::string> VertexRegistry::addSource(
    const std::string &source, const std::string &codeletName,
    const std::string &quoteIncludeDir, const std::string &extraCompileFlags,
    const std::string &prebuiltLibrary) {
  std::vector<detail::ParsedVertexClass> parsed =
      detail::parseCodeletSource(source, codeletName);
  if (parsed.empty())
    throw CodeletError("no vertex classes found in '" + codeletName +
                       "': a vertex class derives from poplar::Vertex or "
                       "poplar::MultiVertex, as in 'class MyVertex : public "
                       "poplar::Vertex { ... };'");
  std::vector<std::string> names;
  for (const detail::ParsedVertexClass &c : parsed)
    names.push_back(c.name);
  {
    std::shared_lock lock(mutex_);
    if (alreadyRegistered(names, source, extraCompileFlags, codeletName))
      return names; // the same codelet again: nothing to compile
  }
  detail::LoadedCodelet loaded;
  if (prebuiltLibrary.empty()) {
    loaded = detail::buildCodelet(
        {source, codeletName, quoteIncludeDir, extraCompileFlags, parsed});
  } else {
    std::string error;
    if (!detail::loadCodeletLibrary(prebuiltLibrary, loaded, error))
      throw CodeletError("cannot load the compiled codelet of '" + codeletName +
                         "' (" + prebuiltLibrary + "): " + error +
                         "; compile it again with popc");
    if (loaded.classes.size() != parsed.size())
      throw CodeletError(
          "the compiled codelet of '" + codeletName + "' describes " +
          std::to_string(loaded.classes.size()) +
          " vertex classes, its source " + std::to_string(parsed.size()) +
          "; compile it again with popc");
  }
  std::unique_lock lock(mutex_);
  // Another thread may have added the same codelet while this one compiled.
  alreadyRegistered(names, source, extraCompileFlags, codeletName);
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (findLocked(names[i]))
      continue;
    TESSERA_INTERNAL_ASSERT(loaded.classes[i].name == names[i],
                            "codelet library described '" +
                                loaded.classes[i].name + "', expected '" +
                                names[i] + "'");
    RegisteredVertex &entry = entries_.emplace_back();
    entry.info = std::move(loaded.classes[i]);
    entry.library = loaded.library;
    entry.codeletSource = source;
    entry.compileFlags = extraCompileFlags;
    entry.codeletName = codeletName;
    byName_.emplace(names[i], &entry);
  }
  return names;
}

const RegisteredVertex *
VertexRegistry::findLocked(std::string_view name) const {
  auto it = byName_.find(name);
  if (it != byName_.end())
    return it->second;
  std::string normal = normalizeVertexName(name);
  if (normal == name)
    return nullptr;
  it = byName_.find(normal);
  return it == byName_.end() ? nullptr : it->second;
}

const RegisteredVertex *VertexRegistry::find(std::string_view name) const {
  std::shared_lock lock(mutex_);
  return findLocked(name);
}

std::vector<std::string> VertexRegistry::names() const {
  std::shared_lock lock(mutex_);
  std::vector<std::string> out;
  out.reserve(byName_.size());
  for (const auto &entry : byName_)
    out.push_back(entry.first);
  return out;
}

std::size_t VertexRegistry::size() const {
  std::shared_lock lock(mutex_);
  return entries_.size();
}

std::uint64_t VertexRegistry::estimateCycles(const RegisteredVertex &vertex,
                                             const VertexInstanceShape &shape,
                                             const Target &target,
                                             bool *usedDefault) const {
  if (usedDefault)
    *usedDefault = !vertex.estimator;
  return vertex.estimator ? vertex.estimator(shape, target)
                          : defaultCycleEstimate(shape, target);
}

std::uint64_t
VertexRegistry::defaultCycleEstimate(const VertexInstanceShape &shape,
                                     const Target &target) {
  const codelet::VertexClassInfo *cls = shape.vertexClass;
  TESSERA_INTERNAL_ASSERT(cls && cls->fields.size() == shape.fieldSizes.size(),
                          "VertexInstanceShape does not match its class");
  std::uint64_t elements = 0;
  for (std::size_t i = 0; i < cls->fields.size(); ++i) {
    if (cls->fields[i].direction == codelet::Direction::State)
      continue;
    for (std::uint32_t n : shape.fieldSizes[i])
      elements += n;
  }
  if (cls->multiVertex)
    elements =
        (elements + MultiVertex::numWorkers() - 1) / MultiVertex::numWorkers();
  return target.costs().defaultVertexWorkerCycles + elements;
}

std::uint64_t VertexRegistry::codeletCompilerRuns() {
  return detail::codeletCompilerRuns();
}

} // namespace tessera
