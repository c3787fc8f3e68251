#include "CodeletCompiler.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/File.hpp"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>

#include <dlfcn.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

// Set by the build to the source tree's include/ and compat/include/; the
// environment variables of the same names override them.
#ifndef TESSERA_INCLUDE_DIR
#define TESSERA_INCLUDE_DIR ""
#endif
#ifndef TESSERA_COMPAT_INCLUDE_DIR
#define TESSERA_COMPAT_INCLUDE_DIR ""
#endif

namespace fs = std::filesystem;

namespace tessera::detail {
namespace {

std::atomic<std::uint64_t> compilerRuns{0};

const char *registrationSymbol = "tesseraRegisterCodelets";

std::string envOr(const char *name, const std::string &fallback) {
  const char *v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

std::vector<std::string> splitWords(const std::string &s) {
  std::vector<std::string> words;
  std::istringstream in(s);
  for (std::string w; in >> w;)
    words.push_back(w);
  return words;
}

std::string joinCommand(const std::vector<std::string> &argv) {
  std::string out;
  for (const std::string &a : argv) {
    if (!out.empty())
      out += ' ';
    bool quote = a.empty() || a.find_first_of(" \t'\"\\$") != std::string::npos;
    out += quote ? "'" + a + "'" : a;
  }
  return out;
}

/// Characters a C++ string literal (or #line / #include name) must escape.
std::string escapeForLiteral(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"')
      out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out;
}

std::string readFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct ProcessResult {
  int status = 0;     // exit status, or 128 + signal
  std::string output; // stdout and stderr interleaved
};

/// Runs argv[0] (looked up in PATH) with stdout and stderr captured.
/// Throws CodeletError if it cannot be started.
ProcessResult runProcess(const std::vector<std::string> &argv) {
  int fds[2];
  if (pipe(fds) != 0)
    throw CodeletError(std::string("cannot create a pipe to run the C++ "
                                   "compiler: ") +
                       std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw CodeletError("cannot run the C++ compiler '" + argv[0] +
                       "': " + std::strerror(rc) +
                       "; set CXX to a C++20 compiler (g++ or clang++)");
  }
  ProcessResult result;
  char buffer[4096];
  for (;;) {
    ssize_t n = read(fds[0], buffer, sizeof buffer);
    if (n > 0)
      result.output.append(buffer, static_cast<std::size_t>(n));
    else if (n == 0 || errno != EINTR)
      break;
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.status =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::vector<std::string> compilerCommand() {
  std::vector<std::string> words = splitWords(envOr("CXX", "c++"));
  return words.empty() ? std::vector<std::string>{"c++"} : words;
}

/// `$CXX --version`, once per compiler per process: part of the cache key,
/// so a compiler upgrade recompiles every codelet.
std::string compilerVersion(const std::vector<std::string> &compiler) {
  static std::mutex mutex;
  static std::map<std::vector<std::string>, std::string> versions;
  std::lock_guard lock(mutex);
  auto it = versions.find(compiler);
  if (it != versions.end())
    return it->second;
  std::vector<std::string> argv = compiler;
  argv.push_back("--version");
  ProcessResult r = runProcess(argv);
  if (r.status != 0)
    throw CodeletError("the C++ compiler failed to report its version (" +
                       joinCommand(argv) + " exited with status " +
                       std::to_string(r.status) + "):\n" + r.output +
                       "\nset CXX to a C++20 compiler (g++ or clang++)");
  return versions[compiler] = r.output;
}

struct IncludeDirs {
  std::string tessera, compat;
  std::string headers; // their codelet headers' text, for the cache key
};

/// <prefix>/include when this code runs from an installed prefix's
/// lib/libpoplar.so (cmake --install), where both header sets are; empty
/// otherwise.
std::string installedIncludeDir() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&installedIncludeDir), &info) ||
      !info.dli_fname)
    return {};
  fs::path dir =
      fs::path(info.dli_fname).parent_path().parent_path() / "include";
  std::error_code ec;
  return fs::is_regular_file(dir / "tessera" / "Vertex.hpp", ec) &&
                 fs::is_regular_file(dir / "poplar" / "Vertex.hpp", ec)
             ? dir.string()
             : std::string();
}

IncludeDirs includeDirs() {
  static const std::string installed = installedIncludeDir();
  IncludeDirs dirs{
      envOr("TESSERA_INCLUDE_DIR",
            installed.empty() ? TESSERA_INCLUDE_DIR : installed),
      envOr("TESSERA_COMPAT_INCLUDE_DIR",
            installed.empty() ? TESSERA_COMPAT_INCLUDE_DIR : installed),
      {}};
  const std::pair<const char *, const std::string *> required[] = {
      {"tessera/Vertex.hpp", &dirs.tessera},
      {"tessera/support/Type.hpp", &dirs.tessera},
      {"tessera/support/Half.hpp", &dirs.tessera},
      {"poplar/Vertex.hpp", &dirs.compat}};
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, std::string> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find({dirs.tessera, dirs.compat});
  if (it != cache.end()) {
    dirs.headers = it->second;
    return dirs;
  }
  for (const auto &[file, dir] : required) {
    fs::path path = fs::path(*dir) / file;
    std::error_code ec;
    if (dir->empty() || !fs::is_regular_file(path, ec))
      throw CodeletError("cannot compile codelets: Tessera's header '" +
                         path.string() + "' does not exist; set " +
                         (dir == &dirs.tessera
                              ? "TESSERA_INCLUDE_DIR to the directory "
                                "holding tessera/Vertex.hpp"
                              : "TESSERA_COMPAT_INCLUDE_DIR to the "
                                "directory holding poplar/Vertex.hpp"));
    std::string text = readFile(path);
    dirs.headers += std::to_string(text.size()) + ":" + text;
  }
  cache[{dirs.tessera, dirs.compat}] = dirs.headers;
  return dirs;
}

std::string hex64(std::uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4)
    s[static_cast<std::size_t>(i)] = digits[v & 15];
  return s;
}

/// xxhash64 of length-prefixed parts, so no two part lists hash the same
/// text.
std::string hashParts(const std::vector<std::string_view> &parts) {
  XXH64_state_t *state = XXH64_createState();
  TESSERA_INTERNAL_ASSERT(state, "XXH64_createState failed");
  XXH64_reset(state, 0);
  for (std::string_view part : parts) {
    std::uint64_t size = part.size();
    XXH64_update(state, &size, sizeof size);
    XXH64_update(state, part.data(), part.size());
  }
  std::uint64_t h = XXH64_digest(state);
  XXH64_freeState(state);
  return hex64(h);
}

/// A name no other thread or process uses at the same time.
std::string uniqueSuffix() {
  static std::atomic<std::uint64_t> counter{0};
  static const std::uint64_t seed = std::random_device{}();
  return std::to_string(getpid()) + "-" + hex64(seed).substr(8) + "-" +
         std::to_string(counter.fetch_add(1));
}

void writeFile(const fs::path &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out)
    throw CodeletError("cannot write '" + path.string() +
                       "' in the codelet cache; set TESSERA_CACHE_DIR to a "
                       "writable directory");
}

/// Removes the temporary files of one compile however it ends.
struct TempFiles {
  std::vector<fs::path> paths;
  ~TempFiles() {
    std::error_code ec;
    for (const fs::path &p : paths)
      fs::remove(p, ec);
  }
};

struct CompileJob {
  std::vector<std::string> argv; // without input, output and dependency file
  std::string userText;          // the user's source behind a #line
  std::string registration;
  std::string key;
  fs::path dir;      // the cache directory
  fs::path manifest; // <key>.deps: the headers the compile read
};

CompileJob planCompile(const CodeletBuildRequest &request) {
  CompileJob job;
  IncludeDirs dirs = includeDirs();
  job.argv = compilerCommand();
  std::string version = compilerVersion(job.argv);
  for (const char *flag :
       {"-std=c++20", "-O2", "-fPIC", "-shared", "-mavx2", "-mfma", "-mf16c",
        "-fvisibility=hidden", "-fvisibility-inlines-hidden",
        // Poplar's popc defines it: a file holding host code and codelets
        // (the addCodelets(__FILE__) idiom) hides its host part behind it.
        "-D__POPC__"})
    job.argv.push_back(flag);
  job.argv.push_back("-I" + dirs.tessera);
  job.argv.push_back("-I" + dirs.compat);
  if (!request.quoteIncludeDir.empty())
    job.argv.push_back("-iquote" + request.quoteIncludeDir);
  for (std::string &flag : splitWords(request.extraFlags))
    job.argv.push_back(std::move(flag));
  // Diagnostics name the user's file, not the cache copy.
  job.userText = "#line 1 \"" + escapeForLiteral(request.displayName) + "\"\n" +
                 request.source + "\n";
  job.registration = generateCodeletRegistration(request.classes);
  std::string command = joinCommand(job.argv);
  job.key = hashParts({"tessera-codelet-1", job.userText, job.registration,
                       command, version, dirs.headers});
  job.dir = codeletCacheDir();
  job.manifest = job.dir / (job.key + ".deps");
  return job;
}

const std::string manifestHeader = "tessera-codelet-deps 1\n";

/// The files named in a make-style dependency file (`-MMD` output) after
/// its target, absolute.
std::vector<fs::path> parseDependencyFile(const std::string &text) {
  std::vector<fs::path> files;
  std::size_t i = text.find(": ");
  if (i == std::string::npos)
    return files;
  std::string word;
  auto flush = [&] {
    if (!word.empty())
      files.push_back(fs::absolute(word).lexically_normal());
    word.clear();
  };
  for (++i; i < text.size(); ++i) {
    char c = text[i];
    char next = i + 1 < text.size() ? text[i + 1] : '\0';
    if (c == '\\' && (next == '\n' || next == '\r')) {
      flush();
      ++i;
    } else if (c == '\\' && next == ' ') {
      word += ' ';
      ++i;
    } else if (c == '$' && next == '$') {
      word += '$';
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      flush();
    } else {
      word += c;
    }
  }
  flush();
  return files;
}

/// Whether the cache may use \p path: a regular file this user (or root)
/// wrote that no one else can change. A sticky shared cache folder lets
/// other users add files, and a planted shared object would run as this
/// user; it is compiled afresh instead (and replaced).
bool ownRegularFile(const fs::path &path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) &&
         untrustedFileReason(path.string()).empty();
}

/// The shared object a cached compile left, if every header it read (the
/// user's own included files among them, which the key does not cover) is
/// unchanged. The library's name hashes the manifest, so a manifest always
/// names the library built from the headers it lists.
std::optional<fs::path> findCached(const CompileJob &job) {
  if (!ownRegularFile(job.manifest))
    return std::nullopt;
  std::string manifest = readFile(job.manifest);
  if (manifest.compare(0, manifestHeader.size(), manifestHeader) != 0)
    return std::nullopt;
  std::istringstream lines(manifest.substr(manifestHeader.size()));
  for (std::string line; std::getline(lines, line);) {
    std::size_t space = line.find(' ');
    if (space == std::string::npos)
      return std::nullopt;
    std::error_code ec;
    fs::path file = line.substr(space + 1);
    if (!fs::is_regular_file(file, ec) ||
        hashParts({readFile(file)}) != line.substr(0, space))
      return std::nullopt;
  }
  fs::path library = job.dir / (job.key + "-" + hashParts({manifest}) + ".so");
  if (!ownRegularFile(library))
    return std::nullopt;
  return library;
}

/// Runs the compiler; returns the shared object's path in the cache, where
/// it appears atomically, followed by the manifest that names it.
fs::path compile(const CompileJob &job, const CodeletBuildRequest &request) {
  std::string stem = job.key + "." + uniqueSuffix();
  TempFiles temps;
  fs::path userCopy = job.dir / (stem + ".codelet.cpp");
  fs::path shim = job.dir / (stem + ".cpp");
  fs::path output = job.dir / (stem + ".so.tmp");
  fs::path depFile = job.dir / (stem + ".d");
  fs::path manifestTmp = job.dir / (stem + ".deps.tmp");
  temps.paths = {userCopy, shim, output, depFile, manifestTmp};
  writeFile(userCopy, job.userText);
  writeFile(shim, "#include \"" + escapeForLiteral(userCopy.string()) + "\"\n" +
                      job.registration);
  std::vector<std::string> argv = job.argv;
  argv.insert(argv.end(), {"-MMD", "-MF", depFile.string(), "-o",
                           output.string(), shim.string()});
  ++compilerRuns;
  ProcessResult r = runProcess(argv);
  if (r.status != 0)
    throw CodeletError(
        "cannot compile codelet file '" + request.displayName +
        "': the C++ compiler exited with status " + std::to_string(r.status) +
        ".\nCommand: " + joinCommand(argv) + "\nCompiler output:\n" + r.output);
  std::string manifest = manifestHeader;
  for (const fs::path &file : parseDependencyFile(readFile(depFile)))
    if (file != userCopy && file != shim)
      manifest += hashParts({readFile(file)}) + " " + file.string() + "\n";
  fs::path library = job.dir / (job.key + "-" + hashParts({manifest}) + ".so");
  std::error_code ec;
  fs::rename(output, library, ec);
  if (!ec) {
    writeFile(manifestTmp, manifest);
    fs::rename(manifestTmp, job.manifest, ec);
  }
  if (ec)
    throw CodeletError("cannot move the compiled codelet into '" +
                       job.dir.string() + "': " + ec.message() +
                       "; set TESSERA_CACHE_DIR to a writable directory");
  return library;
}

using RegisterFn = void (*)(codelet::CodeletSink *);

/// dlopen + dlsym; returns false (with the loader's message) on failure.
bool load(const fs::path &library, LoadedCodelet &out, std::string &error) {
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *e = dlerror();
    error = e ? e : "unknown dlopen error";
    return false;
  }
  out.library = std::shared_ptr<void>(handle, [](void *h) { dlclose(h); });
  auto fn = reinterpret_cast<RegisterFn>(dlsym(handle, registrationSymbol));
  if (!fn) {
    error = std::string("the library has no ") + registrationSymbol;
    out.library.reset();
    return false;
  }
  codelet::CodeletSink sink;
  fn(&sink);
  out.classes = std::move(sink.classes);
  out.libraryPath = library.string();
  return true;
}

} // namespace

std::string
generateCodeletRegistration(const std::vector<ParsedVertexClass> &classes) {
  std::string s =
      "\n// Generated by Tessera: describes the vertex classes "
      "of a codelet file.\n#include <tessera/Vertex.hpp>\n\n"
      "extern \"C\" __attribute__((visibility(\"default\"))) void\n" +
      std::string(registrationSymbol) +
      "(::tessera::codelet::CodeletSink *tesseraSink_) {\n";
  for (const ParsedVertexClass &c : classes) {
    std::string name = escapeForLiteral(c.name);
    s += "  {\n    using TesseraV_ = " + c.cppName + ";\n";
    s += "    ::tessera::codelet::VertexDescriber<TesseraV_> tesseraD_(\"" +
         name + "\");\n";
    for (const std::string &f : c.fields) {
      std::string type = "decltype(TesseraV_::" + f + ")";
      s += "    static_assert(::tessera::codelet::FieldTraits<" + type +
           ">::supported, \"vertex '" + name + "': field '" + f +
           "' has a type Tessera cannot connect; use Input<T>, Output<T>, "
           "InOut<T> (T a scalar, Vector<T> or VectorList<T>), "
           "Vector<Input<Vector<T>>>, or plain state (a scalar or "
           "Vector<T>)\");\n";
      s += "    tesseraD_.field<" + type + ">(\"" + f + "\", &TesseraV_::" + f +
           ");\n";
    }
    s += "    tesseraSink_->classes.push_back(tesseraD_.take());\n  }\n";
  }
  return s + "}\n";
}

std::string codeletCacheDir() {
  if (const char *d = std::getenv("TESSERA_CACHE_DIR"); d && *d)
    return (fs::path(d) / "codelets").string();
  if (const char *d = std::getenv("XDG_CACHE_HOME"); d && *d)
    return (fs::path(d) / "tessera" / "codelets").string();
  if (const char *d = std::getenv("HOME"); d && *d)
    return (fs::path(d) / ".cache" / "tessera" / "codelets").string();
  return (fs::temp_directory_path() / "tessera-cache" / "codelets").string();
}

std::string compileCodeletLibrary(const CodeletBuildRequest &request,
                                  bool *compiled) {
  CompileJob job = planCompile(request);
  // The cache holds shared objects this process loads: the executable
  // cache's rule, for the same reason.
  checkFolderIsPrivate(job.dir.string(), "the codelet cache folder",
                       "set TESSERA_CACHE_DIR");
  try {
    createPrivateFolders(job.dir.string());
  } catch (const Error &e) {
    throw CodeletError("cannot create the codelet cache directory '" +
                       job.dir.string() + "': " + e.what() +
                       "; set TESSERA_CACHE_DIR to a writable directory");
  }
  if (compiled)
    *compiled = false;
  if (std::optional<fs::path> cached = findCached(job))
    return cached->string();
  if (compiled)
    *compiled = true;
  return compile(job, request).string();
}

bool loadCodeletLibrary(const std::string &library, LoadedCodelet &out,
                        std::string &error) {
  return load(library, out, error);
}

LoadedCodelet buildCodelet(const CodeletBuildRequest &request) {
  bool compiled = false;
  std::string library = compileCodeletLibrary(request, &compiled);
  LoadedCodelet loaded;
  std::string error;
  if (!compiled && !load(library, loaded, error)) {
    // A damaged cache entry is built again rather than reported.
    std::error_code ec;
    fs::remove(library, ec);
    library = compileCodeletLibrary(request, &compiled);
  }
  if (compiled) {
    loaded.compiled = true;
    if (!load(library, loaded, error))
      throw CodeletError("cannot load the compiled codelet '" + library +
                         "' of '" + request.displayName + "': " + error);
  }
  TESSERA_INTERNAL_ASSERT(
      loaded.classes.size() == request.classes.size(),
      "codelet library described " + std::to_string(loaded.classes.size()) +
          " classes, expected " + std::to_string(request.classes.size()));
  return loaded;
}

std::uint64_t codeletCompilerRuns() { return compilerRuns.load(); }

} // namespace tessera::detail
