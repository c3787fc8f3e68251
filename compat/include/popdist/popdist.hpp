// PopDist's C++ API over Tessera's instances (tessera/dist/Instances.hpp):
// which instance of a `tessera poprun` launch this process is, and which
// replicas it runs. Outside a launch: instance 0 of 1, running 1 replica.
// Link libtessera_dist. Kept to C++11 so Graphcore-style projects build
// with their own flags.
#ifndef POPDIST_POPDIST_HPP
#define POPDIST_POPDIST_HPP

namespace popdist {

/// Whether the process was started by `tessera poprun`.
bool isPopdistEnvSet();
/// This instance's index, 0 .. getNumInstances() - 1.
unsigned getInstanceIndex();
unsigned getNumInstances();
/// The index of this instance's first replica among all of the run's.
unsigned getReplicaIndexOffset();
/// The replicas this instance runs.
unsigned getNumLocalReplicas();
/// The replicas of the whole run.
unsigned getNumTotalReplicas();
unsigned getNumIpusPerReplica();

} // namespace popdist

#endif
