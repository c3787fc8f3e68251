/// \file
/// Child processes for the tools tests: run a command to completion and
/// capture its output, or start one that keeps running (an IPU holder) and
/// read its lines as it prints them.
#pragma once

#include <chrono>
#include <csignal>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace tessera::testing {

/// Variables to set (or, with an empty value, to remove) in a child's
/// environment.
using EnvOverrides = std::map<std::string, std::string>;

struct ProcessResult {
  /// The exit status, or 128 + the signal that ended the process.
  int exitCode = -1;
  std::string out, err;
};

/// A started child with pipes to its stdin, stdout and stderr.
class ChildProcess {
public:
  ChildProcess(const std::vector<std::string> &argv, const EnvOverrides &env) {
    int in[2], out[2], err[2];
    if (::pipe2(in, O_CLOEXEC) || ::pipe2(out, O_CLOEXEC) ||
        ::pipe2(err, O_CLOEXEC))
      throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    std::vector<std::string> envStrings = environment(env);
    std::vector<char *> envp, args;
    for (auto &s : envStrings)
      envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> argvCopy = argv;
    for (auto &s : argvCopy)
      args.push_back(s.data());
    args.push_back(nullptr);
    const int rc = ::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(),
                                 envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    stdin_ = in[1];
    stdout_ = out[0];
    stderr_ = err[0];
    if (rc != 0)
      throw std::runtime_error("cannot start " + argv[0] + ": " +
                               std::strerror(rc));
  }
  ChildProcess(const ChildProcess &) = delete;
  ChildProcess &operator=(const ChildProcess &) = delete;
  ~ChildProcess() {
    if (pid_ > 0 && !waited_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
    closeFd(stdin_);
    closeFd(stdout_);
    closeFd(stderr_);
  }

  pid_t pid() const { return pid_; }

  /// The next line the child prints on stdout (without the newline), or
  /// what it printed before closing stdout or before \p timeoutSeconds.
  std::string readLine(double timeoutSeconds = 60) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration<double>(timeoutSeconds);
    while (true) {
      const auto nl = outBuffer_.find('\n');
      if (nl != std::string::npos) {
        std::string line = outBuffer_.substr(0, nl);
        outBuffer_.erase(0, nl + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !pump(static_cast<int>(left.count())))
        return std::exchange(outBuffer_, std::string());
    }
  }

  /// Closes the child's stdin (holders exit on end of input).
  void closeStdin() { closeFd(stdin_); }

  void kill(int signal) { ::kill(pid_, signal); }

  /// Waits for the child to end, collecting the rest of its output.
  ProcessResult wait(double timeoutSeconds = 120) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration<double>(timeoutSeconds);
    while (stdout_ >= 0 || stderr_ >= 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        ::kill(pid_, SIGKILL);
        break;
      }
      pump(static_cast<int>(left.count()));
    }
    int status = 0;
    if (!waited_) {
      ::waitpid(pid_, &status, 0);
      waited_ = true;
      exitCode_ =
          WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return ProcessResult{exitCode_, std::exchange(outBuffer_, std::string()),
                         std::exchange(errBuffer_, std::string())};
  }

private:
  static std::vector<std::string> environment(const EnvOverrides &env) {
    std::vector<std::string> out;
    for (char **e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      const std::string name = entry.substr(0, entry.find('='));
      if (!env.count(name))
        out.push_back(entry);
    }
    for (const auto &[name, value] : env)
      if (!value.empty())
        out.push_back(name + "=" + value);
    return out;
  }

  static void closeFd(int &fd) {
    if (fd >= 0)
      ::close(fd);
    fd = -1;
  }

  // Reads what is available on stdout and stderr; false when both are
  // closed or nothing came within the timeout.
  bool pump(int timeoutMs) {
    pollfd fds[2] = {{stdout_, POLLIN, 0}, {stderr_, POLLIN, 0}};
    if (stdout_ < 0 && stderr_ < 0)
      return false;
    const int n = ::poll(fds, 2, timeoutMs);
    if (n <= 0)
      return false;
    drain(fds[0], stdout_, outBuffer_);
    drain(fds[1], stderr_, errBuffer_);
    return true;
  }

  static void drain(const pollfd &p, int &fd, std::string &buffer) {
    if (fd < 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR)))
      return;
    char chunk[65536];
    const ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got > 0)
      buffer.append(chunk, static_cast<std::size_t>(got));
    else
      closeFd(fd);
  }

  pid_t pid_ = -1;
  int stdin_ = -1, stdout_ = -1, stderr_ = -1;
  std::string outBuffer_, errBuffer_;
  bool waited_ = false;
  int exitCode_ = -1;
};

/// Runs \p argv to completion with \p env applied; stdin is empty.
inline ProcessResult runProcess(const std::vector<std::string> &argv,
                                const EnvOverrides &env = {},
                                double timeoutSeconds = 120) {
  ChildProcess child(argv, env);
  child.closeStdin();
  return child.wait(timeoutSeconds);
}

} // namespace tessera::testing
