// MPI_COMM_WORLD for dist. Every call is timed so `bench/dist` and
// `tessera train` can report the host time a step spends in MPI.
#include "Communicator.hpp"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <string>
#include <thread>

namespace tessera::dist {
namespace {

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Timer {
  MpiStats &stats;
  double start = now();
  ~Timer() {
    stats.seconds += now() - start;
    ++stats.calls;
  }
};

int toInt(std::size_t n, const char *what) {
  if (n > std::size_t(INT_MAX))
    throw DistError(std::string(what) + ": " + std::to_string(n) +
                    " bytes is more than MPI's limit of " +
                    std::to_string(INT_MAX) +
                    " for one transfer; use more instances or a smaller "
                    "model");
  return static_cast<int>(n);
}

} // namespace

std::shared_ptr<Communicator> Communicator::world() {
  static std::shared_ptr<Communicator> comm(new Communicator());
  return comm;
}

Communicator::Communicator() {
  int provided = 0;
  // Only the thread that runs the engine calls MPI, one call at a time.
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) !=
      MPI_SUCCESS)
    throw DistError("dist: MPI_Init failed; start the instances with "
                    "`tessera poprun` (Open MPI's mpirun)");
  // Errors come back as codes (DistError), not as an abort of the job
  // from inside MPI with no word on what the run was doing.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  rank_ = unsigned(rank);
  size_ = unsigned(size);
  const char *split = std::getenv("TESSERA_MPI_SPLIT_WAIT");
  splitWait_ = split && std::string(split) == "1";
}

void Communicator::waitForAll() {
  if (!splitWait_)
    return;
  const double start = now();
  {
    Timer t{stats_};
    MPI_Request request;
    check(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier");
    wait(request);
  }
  stats_.waitSeconds += now() - start;
  --stats_.calls; // part of the collective it precedes
}

Communicator::~Communicator() {
  // MPI_Finalize synchronises with the other instances: after a failure
  // they may never get there, so abort instead of waiting for them.
  if (failed_)
    MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Finalize();
}

void Communicator::check(int code, const char *what) const {
  if (code == MPI_SUCCESS)
    return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw DistError("instance " + std::to_string(rank_) + ": " + what +
                  " failed (" + std::string(text, std::size_t(length)) +
                  "); another instance was probably lost");
}

void Communicator::allGatherV(const std::byte *send,
                              const std::vector<std::size_t> &bytes,
                              std::byte *recv) {
  std::vector<int> counts(size_), displs(size_);
  std::size_t at = 0;
  for (unsigned i = 0; i < size_; ++i) {
    counts[i] = toInt(bytes[i], "allGather");
    displs[i] = toInt(at, "allGather");
    at += bytes[i];
  }
  waitForAll();
  Timer t{stats_};
  stats_.bytes += at;
  MPI_Request request;
  check(MPI_Iallgatherv(send, counts[rank_], MPI_BYTE, recv, counts.data(),
                        displs.data(), MPI_BYTE, MPI_COMM_WORLD, &request),
        "MPI_Iallgatherv");
  wait(request);
}

void Communicator::wait(MPI_Request &request) {
  // A blocking collective spins on shared memory. With more instances
  // than free cores (this host's tests, a busy node) the spinning waiter
  // takes the core the instance it waits for needs. So: poll without
  // pause for a moment (a transfer in progress needs the polls to move
  // its fragments), then yield the core between polls, then sleep.
  const double start = now();
  for (;;) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done)
      return;
    const double waited = now() - start;
    if (waited < 100e-6)
      continue;
    if (waited < 2e-3)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void Communicator::broadcast(void *data, std::size_t bytes, unsigned root) {
  Timer t{stats_};
  stats_.bytes += bytes;
  MPI_Request request;
  check(MPI_Ibcast(data, toInt(bytes, "broadcast"), MPI_BYTE, int(root),
                   MPI_COMM_WORLD, &request),
        "MPI_Ibcast");
  wait(request);
}

std::vector<std::string> Communicator::allGatherStrings(const std::string &s) {
  std::vector<std::size_t> sizes(size_);
  {
    std::vector<unsigned long long> all(size_);
    unsigned long long mine = s.size();
    Timer t{stats_};
    check(MPI_Allgather(&mine, 1, MPI_UNSIGNED_LONG_LONG, all.data(), 1,
                        MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD),
          "MPI_Allgather");
    for (unsigned i = 0; i < size_; ++i)
      sizes[i] = std::size_t(all[i]);
  }
  std::size_t total = 0;
  for (std::size_t n : sizes)
    total += n;
  std::string joined(total, '\0');
  allGatherV(reinterpret_cast<const std::byte *>(s.data()), sizes,
             reinterpret_cast<std::byte *>(joined.data()));
  std::vector<std::string> out;
  std::size_t at = 0;
  for (std::size_t n : sizes) {
    out.push_back(joined.substr(at, n));
    at += n;
  }
  return out;
}

} // namespace tessera::dist
