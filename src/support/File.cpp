#include "tessera/support/File.hpp"

#include "tessera/support/Error.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tessera {

namespace {

[[noreturn]] void throwSystemError(const std::string &what,
                                   const std::string &path, int err) {
  throw Error(what + " \"" + path + "\": " + std::strerror(err));
}

// Retries on EINTR and short writes; returns 0 or an errno value.
int writeAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return errno;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

void createParentFolders(const std::filesystem::path &file) {
  std::filesystem::path parent = file.parent_path();
  if (parent.empty())
    return;
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec)
    throw Error("cannot create folder \"" + parent.string() + "\" for \"" +
                file.string() + "\": " + ec.message());
}

// A name no other writer (thread or process) picks at the same time.
std::string temporaryName(const std::string &path) {
  static std::atomic<unsigned long> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(counter.fetch_add(1));
}

} // namespace

void writeFileAtomically(const std::string &path, std::string_view bytes) {
  const std::filesystem::path target(path);
  createParentFolders(target);
  const std::string tmp = temporaryName(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    throwSystemError("cannot create a temporary file to write", path, errno);
  int err = writeAll(fd, bytes);
  if (err == 0 && ::fsync(fd) != 0)
    err = errno;
  if (::close(fd) != 0 && err == 0)
    err = errno;
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0)
    err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    throwSystemError("cannot write file", path, err);
  }
  // Make the rename itself durable; a failure here loses nothing a reader
  // could see, so it is not an error.
  std::filesystem::path parent = target.parent_path();
  int dirFd = ::open(parent.empty() ? "." : parent.c_str(),
                     O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd >= 0) {
    ::fsync(dirFd);
    ::close(dirFd);
  }
}

std::string readFile(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throwSystemError("cannot read file", path, errno);
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throwSystemError("cannot read file", path, EISDIR);
  }
  std::string content;
  if (st.st_size > 0)
    content.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      int err = errno;
      ::close(fd);
      throwSystemError("cannot read file", path, err);
    }
    if (n == 0)
      break;
    content.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return content;
}

} // namespace tessera
