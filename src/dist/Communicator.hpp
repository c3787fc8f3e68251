// Private to dist: the one MPI communicator of a distributed run
// (MPI_COMM_WORLD), with errors returned as DistError instead of aborting,
// and the host time spent in MPI counted.
#pragma once

#include "tessera/dist/Instances.hpp"

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace tessera::dist {

class Communicator {
public:
  /// MPI_COMM_WORLD, initialised on first use and finalised at exit (or
  /// aborted then, when a run failed, so no instance waits for it).
  static std::shared_ptr<Communicator> world();
  ~Communicator();

  unsigned rank() const { return rank_; }
  unsigned size() const { return size_; }
  /// Instance i sends bytes[i] bytes; recv gets them all in rank order.
  void allGatherV(const std::byte *send, const std::vector<std::size_t> &bytes,
                  std::byte *recv);
  void broadcast(void *data, std::size_t bytes, unsigned root);
  /// Every instance's \p s, in rank order.
  std::vector<std::string> allGatherStrings(const std::string &s);
  /// Marks the run failed: at exit the instances are aborted, not waited
  /// for.
  void markFailed() { failed_ = true; }
  const MpiStats &stats() const { return stats_; }

private:
  Communicator();
  void check(int code, const char *what) const;
  /// Completes \p request without holding a core while it waits.
  void wait(MPI_Request &request);
  /// With splitWait_, waits for every instance, counting waitSeconds.
  void waitForAll();

  unsigned rank_ = 0, size_ = 1;
  bool failed_ = false;
  bool splitWait_ = false;
  MpiStats stats_;
};

} // namespace tessera::dist
