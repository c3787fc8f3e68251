// popdist:: forwards to the environment dist reads (DistError there when
// the variables are inconsistent).
#include "popdist/popdist.hpp"

#include "tessera/dist/Instances.hpp"

namespace popdist {

bool isPopdistEnvSet() { return tessera::dist::isPopdistEnvSet(); }
unsigned getInstanceIndex() {
  return tessera::dist::instanceFromEnvironment().instanceIndex;
}
unsigned getNumInstances() {
  return tessera::dist::instanceFromEnvironment().numInstances;
}
unsigned getReplicaIndexOffset() {
  return tessera::dist::instanceFromEnvironment().replicaOffset;
}
unsigned getNumLocalReplicas() {
  return tessera::dist::instanceFromEnvironment().localReplicas;
}
unsigned getNumTotalReplicas() {
  return tessera::dist::instanceFromEnvironment().totalReplicas;
}
unsigned getNumIpusPerReplica() {
  return tessera::dist::instanceFromEnvironment().ipusPerReplica;
}

} // namespace popdist
