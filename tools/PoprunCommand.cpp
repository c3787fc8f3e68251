// `tessera poprun`: PopRun's launcher over Open MPI. Starts one instance
// of COMMAND per --num-instances through `mpirun`, each told by the
// POPDIST_ variables which instance it is and which replicas and IPUs it
// drives, and names the instance that was lost when the run fails.
#include "Commands.hpp"

#include "tessera/dist/Instances.hpp"
#include "tessera/support/Error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <ostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace tessera::tools {
namespace {

struct PoprunOptions {
  unsigned numInstances = 1;
  unsigned numReplicas = 1;
  unsigned ipusPerReplica = 1;
  std::string mpiGlobalArgs;
  std::string host;
  std::vector<std::string> command;
};

std::vector<std::string> words(const std::string &s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;)
    out.push_back(w);
  return out;
}

// `tessera` in the command is this very binary, so a build tree runs its
// own instances without being on PATH.
std::string resolveTessera(const std::string &program) {
  if (program != "tessera")
    return program;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? program : self.string();
}

std::vector<std::string> mpirunArgs(const PoprunOptions &o) {
  const char *mpirun = std::getenv("TESSERA_MPIRUN");
  std::vector<std::string> a{mpirun && *mpirun ? mpirun : "mpirun"};
  // Instances may outnumber this host's cores (tests, a laptop); each
  // instance's engine has its own thread pool, so no binding to one core.
  a.insert(a.end(), {"--oversubscribe", "--bind-to", "none"});
  // Open MPI refuses to run as root unless told; containers often are.
  if (::geteuid() == 0)
    a.push_back("--allow-run-as-root");
  if (!o.host.empty())
    a.insert(a.end(), {"--host", o.host});
  for (std::string &w : words(o.mpiGlobalArgs))
    a.push_back(std::move(w));
  for (unsigned i = 0; i < o.numInstances; ++i) {
    if (i > 0)
      a.push_back(":");
    a.insert(a.end(), {"-np", "1", "env"});
    for (const auto &[name, value] : dist::popdistEnvironment(
             o.numInstances, i, o.numReplicas, o.ipusPerReplica))
      a.push_back(name + "=" + value);
    a.push_back(resolveTessera(o.command[0]));
    a.insert(a.end(), o.command.begin() + 1, o.command.end());
  }
  return a;
}

void checkOptions(const PoprunOptions &o) {
  if (o.numInstances == 0 || o.numReplicas == 0 || o.ipusPerReplica == 0)
    throw OptionError("--num-instances, --num-replicas and "
                      "--ipus-per-replica must be at least 1");
  if (o.numReplicas % o.numInstances != 0)
    throw OptionError(
        fmt::format("{} replicas do not split evenly over {} instances; give "
                    "--num-replicas a multiple of --num-instances (such as {})",
                    o.numReplicas, o.numInstances,
                    (o.numReplicas / o.numInstances + 1) * o.numInstances));
  if (o.command.empty())
    throw OptionError("no command to run; put it after `--`, as in "
                      "`tessera poprun --num-instances 2 --num-replicas 2 -- "
                      "tessera train`");
}

// Runs argv with its stderr through a pipe, copied to \p err as it comes
// and kept, for the lost-instance message. Returns the wait status.
int runForwardingStderr(const std::vector<std::string> &argv, std::ostream &err,
                        std::string &kept) {
  int pipeFd[2];
  if (::pipe(pipeFd) != 0)
    throw Error(std::string("pipe failed: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0)
    throw Error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(pipeFd[1], 2);
    ::close(pipeFd[0]);
    ::close(pipeFd[1]);
    std::vector<char *> args;
    for (const std::string &s : argv)
      args.push_back(const_cast<char *>(s.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    const std::string msg = "tessera poprun: error: cannot run " + argv[0] +
                            ": " + std::strerror(errno) +
                            "; install Open MPI (openmpi-bin) or set "
                            "TESSERA_MPIRUN\n";
    [[maybe_unused]] auto n = ::write(2, msg.data(), msg.size());
    ::_exit(127);
  }
  ::close(pipeFd[1]);
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(pipeFd[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    err.write(buf, n);
    err.flush();
    kept.append(buf, std::size_t(n));
  }
  ::close(pipeFd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Open MPI names the failed process by its rank, which is the instance.
std::string lostInstance(const std::string &log, unsigned instances) {
  static const std::regex signalled(
      R"(process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+) \(([^)]*)\))");
  static const std::regex exited(
      R"(Process name: \[\[\d+,\d+\],(\d+)\]\s+Exit code:\s+(\d+))");
  std::smatch m;
  if (std::regex_search(log, m, signalled)) {
    // mpirun may not know the pid of a process it started through `env`.
    const std::string where = m[2].str() == "0"
                                  ? "on " + m[3].str()
                                  : "pid " + m[2].str() + " on " + m[3].str();
    return fmt::format(
        "instance {} of {} ({}) was lost: killed by signal {} ({})", m[1].str(),
        instances, where, m[4].str(), m[5].str());
  }
  if (std::regex_search(log, m, exited))
    return fmt::format("instance {} of {} failed first, with exit status {}",
                       m[1].str(), instances, m[2].str());
  return "";
}

void runPoprun(const PoprunOptions &o, const CommandStreams &streams) {
  checkOptions(o);
  std::string log;
  const int status = runForwardingStderr(mpirunArgs(o), streams.err, log);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return;
  const std::string lost = lostInstance(log, o.numInstances);
  const std::string how =
      WIFEXITED(status)
          ? fmt::format("mpirun exited with status {}", WEXITSTATUS(status))
          : fmt::format("mpirun was killed by signal {}", WTERMSIG(status));
  throw Error(lost.empty()
                  ? "the run failed: " + how
                  : lost + "; the other instances were stopped (" + how + ")");
}

} // namespace

void addPoprunCommand(CLI::App &app, const CommandStreams &streams) {
  auto o = std::make_shared<PoprunOptions>();
  CLI::App *sub = app.add_subcommand(
      "poprun", "Run COMMAND as several instances over MPI (as PopRun)");
  sub->footer(
      "Each instance runs --num-replicas / --num-instances replicas; "
      "`tessera train` and programs using the popdist API read which from "
      "the POPDIST_ variables set here. Cross-replica reductions between "
      "instances go through MPI. Instances start through Open MPI's mpirun "
      "(TESSERA_MPIRUN overrides it); give a host file with "
      "--mpi-global-args=\"--hostfile FILE\" to spread them over hosts.");
  sub->add_option("--num-instances", o->numInstances, "Host processes")
      ->capture_default_str();
  sub->add_option("--num-replicas", o->numReplicas,
                  "Replicas in all, a multiple of --num-instances")
      ->capture_default_str();
  sub->add_option("--ipus-per-replica", o->ipusPerReplica, "IPUs per replica")
      ->capture_default_str();
  sub->add_option("--mpi-global-args", o->mpiGlobalArgs,
                  "Further mpirun options, as one string");
  sub->add_option("--host", o->host, "mpirun's --host list (host:slots,...)");
  sub->add_option("command", o->command, "The command each instance runs")
      ->required();
  sub->callback([o, streams] { runPoprun(*o, streams); });
}

} // namespace tessera::tools
