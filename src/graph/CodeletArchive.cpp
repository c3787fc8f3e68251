#include "tessera/graph/CodeletArchive.hpp"

#include "CodeletArchiveFormat.hpp"
#include "CodeletCompiler.hpp"
#include "CodeletParser.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/File.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <xxhash.h>

// Set by the build to the project's version.
#ifndef TESSERA_VERSION_STRING
#define TESSERA_VERSION_STRING "unknown"
#endif

namespace fs = std::filesystem;

namespace tessera {
namespace {

const std::string magic = "tessera-gp 1\n";

std::string readWhole(const std::string &path, const std::string &what) {
  try {
    checkRegularFile(path, what);
  } catch (const Error &e) {
    throw CodeletError(e.what());
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string hex64(std::uint64_t v) {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx",
                static_cast<unsigned long long>(v));
  return buffer;
}

void putField(std::string &out, const char *key, const std::string &value) {
  out += std::string(key) + " " + std::to_string(value.size()) + "\n" + value +
         "\n";
}

/// Reads one `key size\nbytes\n` field at \p pos; false if it is not there.
bool getField(const std::string &text, std::size_t &pos, const char *key,
              std::string &value) {
  std::string prefix = std::string(key) + " ";
  if (text.compare(pos, prefix.size(), prefix) != 0)
    return false;
  std::size_t eol = text.find('\n', pos);
  if (eol == std::string::npos)
    return false;
  std::size_t size = 0;
  try {
    size = std::stoull(text.substr(pos + prefix.size(), eol - pos));
  } catch (const std::exception &) {
    return false;
  }
  if (size > text.size() - eol - 1 || text.size() - eol - 1 - size < 1 ||
      text[eol + 1 + size] != '\n')
    return false;
  value = text.substr(eol + 1, size);
  pos = eol + 2 + size;
  return true;
}

} // namespace

const char *tesseraVersion() { return TESSERA_VERSION_STRING; }

bool isCodeletArchive(const std::string &path) {
  // Never open a FIFO or device here: addCodelets reports what they are.
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return false;
  std::ifstream in(path, std::ios::binary);
  std::string head(magic.size(), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  return in && head == magic;
}

void compileCodeletArchive(const std::string &sourcePath,
                           const std::string &compileFlags,
                           const std::string &outputPath) {
  std::string source = readWhole(sourcePath, "codelet file");
  std::vector<detail::ParsedVertexClass> parsed =
      detail::parseCodeletSource(source, sourcePath);
  if (parsed.empty())
    throw CodeletError("no vertex classes found in '" + sourcePath +
                       "': a vertex class derives from poplar::Vertex or "
                       "poplar::MultiVertex");
  std::string name = fs::absolute(sourcePath).lexically_normal().string();
  std::string library = detail::compileCodeletLibrary(
      {source, name, fs::path(name).parent_path().string(), compileFlags,
       parsed});
  std::string archive = magic;
  putField(archive, "tessera-version", tesseraVersion());
  putField(archive, "source-hash",
           hex64(XXH64(source.data(), source.size(), 0)));
  putField(archive, "name", name);
  putField(archive, "flags", compileFlags);
  putField(archive, "source", source);
  putField(archive, "library", readWhole(library, "compiled codelet"));
  std::string tmp = outputPath + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << archive;
    out.close();
    if (!out)
      throw CodeletError("cannot write the compiled codelet '" + outputPath +
                         "': check that its folder exists and is writable");
  }
  std::error_code ec;
  fs::rename(tmp, outputPath, ec);
  if (ec)
    throw CodeletError("cannot write the compiled codelet '" + outputPath +
                       "': " + ec.message());
}

namespace detail {

CodeletArchiveContents readCodeletArchive(const std::string &path) {
  std::string text = readWhole(path, "compiled codelet file");
  CodeletArchiveContents c;
  std::size_t pos = magic.size();
  std::string hash, version;
  bool ok = text.compare(0, magic.size(), magic) == 0 &&
            getField(text, pos, "tessera-version", version);
  if (ok && version != tesseraVersion())
    throw CodeletError("compiled codelet '" + path + "' was built by Tessera " +
                       version + "; this is Tessera " + tesseraVersion() +
                       ": compile it again with this version's popc");
  ok = ok && getField(text, pos, "source-hash", hash) &&
       getField(text, pos, "name", c.name) &&
       getField(text, pos, "flags", c.flags) &&
       getField(text, pos, "source", c.source) &&
       getField(text, pos, "library", c.library) && pos == text.size();
  if (!ok)
    throw CodeletError("'" + path +
                       "' is not a complete compiled codelet file (truncated "
                       "or damaged); compile it again with popc");
  if (hash != hex64(XXH64(c.source.data(), c.source.size(), 0)))
    throw CodeletError("compiled codelet '" + path +
                       "' does not match the source it records (source hash " +
                       hash + "); compile it again with popc");
  return c;
}

std::string installArchiveLibrary(const CodeletArchiveContents &contents) {
  fs::path dir = codeletCacheDir();
  checkFolderIsPrivate(dir.string(), "the codelet cache folder",
                       "set TESSERA_CACHE_DIR");
  createPrivateFolders(dir.string());
  fs::path library =
      dir / ("gp-" +
             hex64(XXH64(contents.library.data(), contents.library.size(), 0)) +
             ".so");
  std::error_code ec;
  if (fs::is_regular_file(library, ec) &&
      untrustedFileReason(library.string()).empty() &&
      fs::file_size(library, ec) == contents.library.size())
    return library.string();
  fs::path tmp = library.string() + "." + std::to_string(::getpid()) + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << contents.library;
    out.close();
    if (!out)
      throw CodeletError("cannot write '" + tmp.string() +
                         "' in the codelet cache; set TESSERA_CACHE_DIR to a "
                         "writable directory");
  }
  fs::rename(tmp, library, ec);
  if (ec)
    throw CodeletError("cannot move a compiled codelet into '" + dir.string() +
                       "': " + ec.message());
  return library.string();
}

} // namespace detail
} // namespace tessera
