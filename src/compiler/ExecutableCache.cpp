// Entry layout: "TSXENTRY", the key's length (u32, little-endian), the key,
// then the executable exactly as Executable::save writes it. The key makes a
// file copied or renamed over another key's entry a miss, not a silent run
// of the other program.
#include "tessera/compiler/ExecutableCache.hpp"

#include "tessera/compiler/ExecutableFormat.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/File.hpp"
#include "tessera/support/Hash.hpp"
#include "tessera/support/Logging.hpp"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

namespace tessera {

ExecutableCache::ExecutableCache(std::string directory)
    : directory_(std::move(directory)) {}

std::string ExecutableCache::pathFor(const std::string &key) const {
  return (std::filesystem::path(directory_) / (key + ".tsx")).string();
}

namespace {

constexpr char kEntryMagic[8] = {'T', 'S', 'X', 'E', 'N', 'T', 'R', 'Y'};

// The hash of this process's executable, read once (0 where /proc is not
// there: keys then depend on the text alone).
std::uint64_t programIdentity() {
  static const std::uint64_t id = [] {
    std::ifstream in("/proc/self/exe", std::ios::binary);
    if (!in)
      return std::uint64_t{0};
    Hasher h;
    std::vector<char> buf(1 << 20);
    while (in.read(buf.data(), std::streamsize(buf.size())) || in.gcount() > 0)
      h.update(buf.data(), static_cast<std::size_t>(in.gcount()));
    return h.digest();
  }();
  return id;
}

Executable loadEntry(const std::string &path, const std::string &key) {
  const std::string what = "executable cache entry \"" + path + "\"";
  checkRegularFile(path, "executable cache entry");
  // Loading an entry compiles and runs the codelet sources inside it: only
  // entries this user wrote are trusted (see checkFolderIsPrivate).
  if (const std::string why = untrustedFileReason(path); !why.empty())
    throw SerializationError(what + " " + why +
                             "; only entries this user wrote are loaded");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw SerializationError(what + " cannot be opened (" +
                             std::strerror(errno) + ")");
  char magic[sizeof kEntryMagic] = {};
  unsigned char length[4] = {};
  in.read(magic, sizeof magic);
  in.read(reinterpret_cast<char *>(length), sizeof length);
  const std::uint32_t n = length[0] | (length[1] << 8) | (length[2] << 16) |
                          (std::uint32_t(length[3]) << 24);
  if (!in || std::memcmp(magic, kEntryMagic, sizeof magic) != 0 ||
      n > kMaxCacheKeyBytes)
    throw SerializationError(what + " is not a cache entry of this Tessera "
                                    "(no entry header)");
  std::string stored(n, '\0');
  in.read(stored.data(), n);
  if (!in || stored != key)
    throw SerializationError(what + " holds the executable of key \"" +
                             stored.substr(0, 64) + "\", not \"" + key +
                             "\" (copied over another entry?)");
  const auto offset = static_cast<std::uint64_t>(std::streamoff(in.tellg()));
  in.close();
  std::uint64_t end = 0;
  Executable exe = detail::readExecutableFile(path, offset, what, end);
  std::error_code ec;
  if (end != std::filesystem::file_size(path, ec) && !ec)
    throw SerializationError(what + " has bytes after its executable");
  return exe;
}

// Writes the entry atomically; folders it creates are private to the user
// (see checkFolderIsPrivate in tessera/support/File.hpp).
void storeEntry(const std::string &directory, const std::string &path,
                const std::string &key, const Executable &exe) {
  try {
    createPrivateFolders(directory);
  } catch (const Error &e) {
    throw Error(std::string("cannot create the folder: ") + e.what());
  }
  // Every entry's leftovers, not only this key's: the folder is the cache's.
  removeStaleTemporaries(directory);
  std::ostringstream out;
  out.write(kEntryMagic, sizeof kEntryMagic);
  const auto n = static_cast<std::uint32_t>(key.size());
  const char length[4] = {char(n), char(n >> 8), char(n >> 16), char(n >> 24)};
  out.write(length, sizeof length);
  out << key;
  exe.serialize(out);
  writeFileAtomically(path, out.view());
}

} // namespace

std::string ExecutableCache::keyOf(const std::string &text) {
  char buf[17];
  std::snprintf(
      buf, sizeof buf, "%016llx",
      static_cast<unsigned long long>(hash64(text, programIdentity())));
  return buf;
}

Executable
ExecutableCache::getOrCompile(const std::string &key,
                              const std::function<Executable()> &compile,
                              Outcome *outcome) const {
  if (key.size() > kMaxCacheKeyBytes)
    throw OptionError("executable cache key of " + std::to_string(key.size()) +
                      " bytes is longer than the " +
                      std::to_string(kMaxCacheKeyBytes) +
                      " allowed; use ExecutableCache::keyOf");
  checkFolderIsPrivate(directory_, "the executable cache folder",
                       "set executableCachePath (TESSERA_CACHE_DIR)");
  const std::string path = pathFor(key);
  Outcome result = Outcome::Miss;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    try {
      Executable exe = loadEntry(path, key);
      if (outcome)
        *outcome = Outcome::Hit;
      return exe;
    } catch (const SerializationError &e) {
      // A torn, stale, foreign or misplaced entry must not stop a run:
      // compile afresh and replace it.
      logging::warn("executable cache entry {} is unusable ({}); "
                    "recompiling and replacing it",
                    path, e.what());
      result = Outcome::Corrupt;
    }
  }
  Executable exe = compile();
  // The compile succeeded: a full disk or a read-only cache must not throw
  // its result away, only the next run's shortcut.
  try {
    storeEntry(directory_, path, key, exe);
  } catch (const std::exception &e) {
    logging::warn("cannot store the executable in the cache as \"{}\" ({}); "
                  "running without caching it. Set executableCachePath "
                  "(TESSERA_CACHE_DIR) to a writable folder to cache it",
                  path, e.what());
    result = Outcome::NotStored;
  }
  if (outcome)
    *outcome = result;
  return exe;
}

} // namespace tessera
