#include "tessera/support/File.hpp"

#include "tessera/support/Error.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include <signal.h>

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

// What a non-regular file is, for errors that say why it cannot be read.
std::string kindOf(mode_t mode) {
  if (S_ISDIR(mode))
    return "a folder";
  if (S_ISFIFO(mode))
    return "a FIFO (named pipe)";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a plain file";
}

[[noreturn]] void throwNotRegular(const std::string &what,
                                  const std::string &path, mode_t mode) {
  throw SerializationError(what + " \"" + path + "\" is " + kindOf(mode) +
                           ", not a regular file; give the path of a file");
}

[[noreturn]] void throwOpenError(const std::string &what,
                                 const std::string &path, int err) {
  if (err == ENOENT)
    throw SerializationError(what + " \"" + path + "\" does not exist (" +
                             std::strerror(err) + "); check the path");
  throw SerializationError("cannot read " + what + " \"" + path +
                           "\": " + std::strerror(err));
}

// The writer's PID in "NAME.tmp.PID.N", or 0 when the name is not one.
pid_t temporaryOwner(const std::string &name) {
  const std::size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot == 0)
    return 0;
  const std::size_t pidDot = name.rfind('.', dot - 1);
  if (pidDot == std::string::npos || pidDot < 4 ||
      name.compare(pidDot - 4, 4, ".tmp") != 0)
    return 0;
  const std::string pid = name.substr(pidDot + 1, dot - pidDot - 1);
  const std::string n = name.substr(dot + 1);
  auto digits = [](const std::string &t) {
    return !t.empty() && t.size() < 10 &&
           t.find_first_not_of("0123456789") == std::string::npos;
  };
  if (!digits(pid) || !digits(n))
    return 0;
  return static_cast<pid_t>(std::stol(pid));
}

} // namespace

std::string temporaryFileName(const std::string &path) {
  static std::atomic<unsigned long> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(counter.fetch_add(1));
}

std::size_t removeStaleTemporaries(const std::string &folder,
                                   const std::string &prefix) {
  std::error_code ec;
  std::filesystem::directory_iterator it(folder.empty() ? "." : folder, ec);
  std::size_t removed = 0;
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0)
      continue;
    const pid_t pid = temporaryOwner(name);
    // kill(pid, 0) fails with ESRCH only when no such process exists; EPERM
    // means it runs under another user and its file is left alone.
    if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH)
      continue;
    // A writer in another PID namespace (a container sharing the folder)
    // looks dead from here but keeps its file's time fresh while it writes.
    std::error_code ignored;
    const auto written = std::filesystem::last_write_time(it->path(), ignored);
    if (ignored || std::filesystem::file_time_type::clock::now() - written <
                       kStaleTemporaryAge)
      continue;
    if (std::filesystem::remove(it->path(), ignored))
      ++removed;
  }
  return removed;
}

int openRegularFile(const std::string &path, const std::string &what) {
  // O_NONBLOCK: opening a FIFO with no writer would wait forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    throwOpenError(what, path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throwOpenError(what, path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throwNotRegular(what, path, st.st_mode);
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0)
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

void checkRegularFile(const std::string &path, const std::string &what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throwOpenError(what, path, errno);
  if (!S_ISREG(st.st_mode))
    throwNotRegular(what, path, st.st_mode);
}

void writeFileAtomically(const std::string &path, std::string_view bytes) {
  const std::filesystem::path target(path);
  createParentFolders(target);
  removeStaleTemporaries(target.parent_path().string(),
                         target.filename().string() + ".tmp.");
  const std::string tmp = temporaryFileName(path);
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
  const int fd = openRegularFile(path, "file");
  struct stat st {};
  ::fstat(fd, &st);
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

namespace {

bool othersCanWrite(const struct stat &st) {
  return (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
}

bool trustedOwner(const struct stat &st) {
  return st.st_uid == ::geteuid() || st.st_uid == 0;
}

std::string octalMode(const struct stat &st) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", unsigned(st.st_mode & 07777));
  return buf;
}

std::string ownerAndMode(const struct stat &st) {
  return "belongs to user " + std::to_string(st.st_uid) + " with mode " +
         octalMode(st);
}

} // namespace

// Whoever can write the folder can plant what the cache later loads and
// runs as this user. In a sticky folder of this user others can only add
// files of their own, which untrustedFileReason refuses one by one.
void checkFolderIsPrivate(const std::string &folder, const std::string &what,
                          const std::string &setting) {
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return;
  const bool sticky = (st.st_mode & S_ISVTX) != 0;
  const bool own = st.st_uid == ::geteuid();
  if (!trustedOwner(st))
    throw OptionError(what + " \"" + folder + "\" " + ownerAndMode(st) +
                      ", who could plant files that this process would load "
                      "and run; " +
                      setting + " to a folder of your own");
  if (othersCanWrite(st) && !(sticky && own))
    throw OptionError(what + " \"" + folder + "\" (mode " + octalMode(st) +
                      ") is writable by other users, who could plant files "
                      "that this process would load and run; run `chmod "
                      "go-w " +
                      folder + "` or " + setting +
                      " to a folder only you can write");
}

void createPrivateFolders(const std::string &folder) {
  namespace fs = std::filesystem;
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path p = fs::path(folder).lexically_normal();
       !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path())
      break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it)
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST)
      throwSystemError("cannot create the folder", it->string(), errno);
}

std::string untrustedFileReason(const std::string &path) {
  struct stat link {
  }, st{};
  if (::lstat(path.c_str(), &link) != 0 || ::stat(path.c_str(), &st) != 0)
    return "does not exist";
  if (S_ISLNK(link.st_mode) && !trustedOwner(link))
    return "is a symbolic link that " + ownerAndMode(link);
  if (!trustedOwner(st) || othersCanWrite(st))
    return ownerAndMode(st);
  return {};
}

} // namespace tessera
