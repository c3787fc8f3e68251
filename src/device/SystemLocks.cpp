#include "SystemLocks.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/File.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <thread>

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

namespace tessera::detail {

namespace {

std::string lockPath(const std::string &dir, unsigned ipu) {
  return dir + "/ipu" + std::to_string(ipu) + ".lock";
}

std::string recordPath(const std::string &dir, unsigned ipu) {
  return dir + "/ipu" + std::to_string(ipu) + ".holder.json";
}

// 0 on success, else errno (EWOULDBLOCK when another open file holds it).
int flockNoWait(int fd, int operation) {
  while (::flock(fd, operation | LOCK_NB) != 0) {
    if (errno != EINTR)
      return errno;
  }
  return 0;
}

std::string currentUser() {
  const uid_t uid = ::geteuid();
  long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::string buffer(size > 0 ? static_cast<std::size_t>(size) : 16384, '\0');
  struct passwd pw {};
  struct passwd *result = nullptr;
  if (::getpwuid_r(uid, &pw, buffer.data(), buffer.size(), &result) == 0 &&
      result != nullptr)
    return result->pw_name;
  return "uid " + std::to_string(uid);
}

std::string currentCommand() {
  try {
    std::string cmd = readFile("/proc/self/cmdline");
    for (char &c : cmd)
      if (c == '\0')
        c = ' ';
    while (!cmd.empty() && cmd.back() == ' ')
      cmd.pop_back();
    return cmd.empty() ? "unknown" : cmd;
  } catch (const Error &) {
    return "unknown";
  }
}

std::string isoTimeNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

} // namespace

std::string systemDirectoryFromEnvironment() {
  const char *dir = std::getenv("TESSERA_SYSTEM_DIR");
  if (dir != nullptr && *dir != '\0')
    return dir;
  return "/tmp/tessera-system-" + std::to_string(::getuid());
}

void ensureSystemDirectory(const std::string &dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw DeviceError("cannot create the IPU system folder \"" + dir +
                      "\": " + ec.message() +
                      "; set TESSERA_SYSTEM_DIR to a folder you can write");
}

int tryLockIpu(const std::string &dir, unsigned ipu) {
  const std::string path = lockPath(dir, ipu);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0)
    throw DeviceError("cannot open the lock file \"" + path + "\" of IPU " +
                      std::to_string(ipu) + ": " + std::strerror(errno) +
                      "; set TESSERA_SYSTEM_DIR to a folder you can write");
  // isIpuHeld takes the lock for a moment to test it, so a brief conflict
  // may be a monitor looking, not a holder: try a few times before giving
  // up.
  for (int attempt = 0;; ++attempt) {
    const int err = flockNoWait(fd, LOCK_EX);
    if (err == 0)
      return fd;
    if (err != EWOULDBLOCK || attempt == 4) {
      ::close(fd);
      if (err != EWOULDBLOCK)
        throw DeviceError("cannot lock \"" + path + "\" of IPU " +
                          std::to_string(ipu) + ": " + std::strerror(err));
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void unlockIpu(int fd) {
  if (fd >= 0)
    ::close(fd); // closing the last descriptor releases the flock
}

bool isIpuHeld(const std::string &dir, unsigned ipu) {
  int fd = ::open(lockPath(dir, ipu).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false; // never attached since the folder was made
  const int err = flockNoWait(fd, LOCK_SH);
  if (err == 0)
    ::flock(fd, LOCK_UN);
  ::close(fd);
  return err == EWOULDBLOCK;
}

void writeHolderRecord(const std::string &dir, unsigned ipu,
                       unsigned deviceId) {
  nlohmann::ordered_json j;
  j["ipu"] = ipu;
  j["deviceId"] = deviceId;
  j["pid"] = static_cast<long>(::getpid());
  j["command"] = currentCommand();
  j["user"] = currentUser();
  j["attachTime"] = isoTimeNow();
  // A command line need not be UTF-8 (a Latin-1 file name): its other
  // bytes become U+FFFD instead of failing the attach.
  writeFileAtomically(
      recordPath(dir, ipu),
      j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
          "\n");
}

void removeHolderRecord(const std::string &dir, unsigned ipu) {
  ::unlink(recordPath(dir, ipu).c_str());
}

std::optional<AttachRecord> readHolderRecord(const std::string &dir,
                                             unsigned ipu) {
  try {
    auto j = nlohmann::json::parse(readFile(recordPath(dir, ipu)));
    AttachRecord r;
    r.ipu = ipu;
    r.deviceId = j.at("deviceId").get<unsigned>();
    r.pid = j.at("pid").get<long>();
    r.command = j.at("command").get<std::string>();
    r.user = j.at("user").get<std::string>();
    r.attachTime = j.at("attachTime").get<std::string>();
    if (!processExists(r.pid))
      return std::nullopt;
    return r;
  } catch (const Error &) {
    return std::nullopt;
  } catch (const nlohmann::json::exception &) {
    return std::nullopt;
  }
}

bool processExists(long pid) {
  if (pid <= 0)
    return false;
  // Signal 0 checks for existence only; EPERM means it exists under
  // another user.
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

} // namespace tessera::detail
