// Test helpers for readers given a path that is not a regular file. A FIFO
// with no writer makes a reader that opens it blocking wait forever, so the
// read runs on a thread with a deadline: a reader that blocks fails the test
// instead of hanging it.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <unistd.h>

namespace tessera::test {

/// A FIFO (named pipe) in a fresh temporary folder, removed with it.
class Fifo {
public:
  explicit Fifo(const std::string &name) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "tessera-fifo-XXXXXX")
            .string();
    if (::mkdtemp(pattern.data()))
      dir_ = pattern;
    path_ = dir_ + "/" + name;
    ::mkfifo(path_.c_str(), 0600);
  }
  ~Fifo() { std::filesystem::remove_all(dir_); }
  const std::string &path() const { return path_; }

private:
  std::string dir_, path_;
};

/// The what() of the exception \p read throws, "no error" when it returns,
/// or "blocked" when it has not finished within 10 s. A blocked read is then
/// released by opening \p fifo for writing and closing it (the reader sees
/// an end of file), so the thread can be joined.
inline std::string errorOrBlocked(const std::string &fifo,
                                  const std::function<void()> &read) {
  std::promise<std::string> result;
  std::future<std::string> done = result.get_future();
  std::thread reader([&] {
    try {
      read();
      result.set_value("no error");
    } catch (const std::exception &e) {
      result.set_value(e.what());
    }
  });
  if (done.wait_for(std::chrono::seconds(10)) == std::future_status::ready) {
    reader.join();
    return done.get();
  }
  const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
  if (fd >= 0)
    ::close(fd);
  reader.join();
  return "blocked";
}

} // namespace tessera::test
