/// \file
/// Instances: one training run spread over several host processes (PopRun
/// and PopDist's "instances"), each running a contiguous block of the
/// run's replicas. `tessera poprun` starts them through Open MPI's
/// `mpirun` and tells each which it is through the environment:
///
///     POPDIST_NUM_INSTANCES        N
///     POPDIST_INSTANCE_INDEX       i (0 .. N-1, the MPI rank too)
///     POPDIST_NUM_TOTAL_REPLICAS   R
///     POPDIST_NUM_LOCAL_REPLICAS   R / N
///     POPDIST_REPLICA_INDEX_OFFSET i * R / N
///     POPDIST_NUM_IPUS_PER_REPLICA K
///     POPDIST_IPU_OFFSET           i * R / N * K  (first IPU it drives)
///
///     dist::InstanceInfo me = dist::instanceFromEnvironment();
///     dist::Instances run(me);                 // joins MPI when N > 1
///     run.checkSameOptions({{"model", "mlp"}, {"batch", "32"}});
///     config.replicationFactor = me.totalReplicas;
///     config.instances = run.sessionInstances();
///
/// Cross-replica copies between instances then go through MPI on the host
/// (src/engine's ReplicaExchange), byte for byte as they go between
/// replicas in one process, so the weights are bit-identical to a single
/// process running all R replicas.
#pragma once

#include "tessera/session/Checkpoint.hpp"
#include "tessera/session/Session.hpp"
#include "tessera/support/Error.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tessera::dist {

/// A distributed run went wrong: an instance was lost, or instances were
/// started with different options.
class DistError : public Error {
public:
  using Error::Error;
};

/// Which instance this process is, and what it runs.
struct InstanceInfo {
  unsigned numInstances = 1;
  unsigned instanceIndex = 0;
  unsigned totalReplicas = 1;
  unsigned localReplicas = 1;
  unsigned replicaOffset = 0;
  unsigned ipusPerReplica = 1;
  unsigned ipuOffset = 0;
};

/// Whether POPDIST_NUM_INSTANCES is set (the process was started by
/// `tessera poprun`).
bool isPopdistEnvSet();
/// The instance the POPDIST_ variables describe; one instance running one
/// replica when they are not set. DistError for values that are not
/// numbers or do not fit together (the local replicas times the instances
/// must be the total, the index below the count, ...).
InstanceInfo instanceFromEnvironment();
/// The variables `tessera poprun` sets for instance \p index of
/// \p numInstances running \p totalReplicas replicas of \p ipusPerReplica
/// IPUs: the inverse of instanceFromEnvironment.
std::vector<std::pair<std::string, std::string>>
popdistEnvironment(unsigned numInstances, unsigned index,
                   unsigned totalReplicas, unsigned ipusPerReplica);

/// Host time spent in MPI since the run joined.
struct MpiStats {
  std::uint64_t calls = 0;
  std::uint64_t bytes = 0; ///< received by this instance
  double seconds = 0;
  /// The part of seconds spent waiting for the slowest instance to reach
  /// the collective, measured (with a barrier before each collective)
  /// only when TESSERA_MPI_SPLIT_WAIT=1; the rest is the transfer itself.
  double waitSeconds = 0;
};

class Communicator;

/// This process's place in a distributed run.
class Instances {
public:
  /// Joins the other instances through MPI when \p info has more than one
  /// (DistError when MPI's rank or size disagrees with \p info).
  explicit Instances(InstanceInfo info);
  ~Instances();
  Instances(const Instances &) = delete;
  Instances &operator=(const Instances &) = delete;

  const InstanceInfo &info() const { return info_; }
  /// For session::Config::instances.
  session::InstanceConfig sessionInstances() const;
  /// Compares \p options (name, value) with instance 0's; DistError naming
  /// the first option and instance that differ. Every instance throws the
  /// same error, so none waits for the others.
  void checkSameOptions(
      const std::vector<std::pair<std::string, std::string>> &options) const;
  /// Overwrites \p ckpt's variables with instance 0's (every instance must
  /// pass a checkpoint of the same variables and shapes).
  void broadcastFromFirst(session::Checkpoint &ckpt) const;
  /// Whether this instance writes the run's files (checkpoints): instance 0.
  bool writesFiles() const { return info_.instanceIndex == 0; }
  MpiStats mpiStats() const;

private:
  InstanceInfo info_;
  std::shared_ptr<Communicator> comm_;
};

} // namespace tessera::dist
