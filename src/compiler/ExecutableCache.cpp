#include "tessera/compiler/ExecutableCache.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/Hash.hpp"
#include "tessera/support/Logging.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>
#include <system_error>

namespace tessera {

ExecutableCache::ExecutableCache(std::string directory)
    : directory_(std::move(directory)) {}

std::string ExecutableCache::pathFor(const std::string &key) const {
  return (std::filesystem::path(directory_) / (key + ".tsx")).string();
}

namespace {

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
  const std::string path = pathFor(key);
  Outcome result = Outcome::Miss;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    try {
      Executable exe = Executable::load(path);
      if (outcome)
        *outcome = Outcome::Hit;
      return exe;
    } catch (const SerializationError &e) {
      // A torn or stale entry must not stop a run: compile afresh and
      // replace it.
      logging::warn("executable cache entry {} is unusable ({}); "
                    "recompiling and replacing it",
                    path, e.what());
      result = Outcome::Corrupt;
    }
  }
  Executable exe = compile();
  std::filesystem::create_directories(directory_, ec);
  if (ec)
    throw Error("cannot create the executable cache folder \"" + directory_ +
                "\": " + ec.message() +
                "; set executableCachePath to a writable folder");
  exe.save(path);
  if (outcome)
    *outcome = result;
  return exe;
}

} // namespace tessera
