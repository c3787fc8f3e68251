#include "FuzzCommon.hpp"

#include <filesystem>
#include <memory>
#include <unistd.h>

namespace tessera::fuzz {
namespace {

std::string makeScratchDir() {
  // In memory (/dev/shm) unless TMPDIR says otherwise: a write to a disk
  // folder costs about ten times as much, more than most loaders take.
  const char *tmp = std::getenv("TMPDIR");
  std::string base = tmp && *tmp ? tmp : "/tmp";
  if (!(tmp && *tmp) && access("/dev/shm", W_OK) == 0)
    base = "/dev/shm";
  std::string pattern = base + "/tessera-fuzz-XXXXXX";
  if (!mkdtemp(pattern.data())) {
    std::perror("tessera fuzz: cannot create a scratch folder (mkdtemp)");
    std::abort();
  }
  return pattern;
}

void removeScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(scratchDir(), ec);
}

} // namespace

const std::string &scratchDir() {
  // Never destroyed, so that removeScratchDir can still use it at exit.
  static const std::string *dir = [] {
    auto *d = new std::string(makeScratchDir());
    std::atexit(removeScratchDir);
    return d;
  }();
  return *dir;
}

std::string writeScratch(std::string_view name, std::string_view content) {
  std::string path = scratchDir() + "/" + std::string(name);
  // stdio rather than writeFileAtomically: no rename, no fsync, so an
  // execution stays in the microseconds.
  std::unique_ptr<FILE, int (*)(FILE *)> f(std::fopen(path.c_str(), "wb"),
                                           std::fclose);
  if (!f || std::fwrite(content.data(), 1, content.size(), f.get()) !=
                content.size()) {
    std::perror(("tessera fuzz: cannot write " + path).c_str());
    std::abort();
  }
  return path;
}

} // namespace tessera::fuzz
