"""PopDist's Python API over the variables `tessera poprun` sets.

Which instance of a `tessera poprun` launch this process is, and which
replicas it runs; outside a launch, instance 0 of 1 running 1 replica. The
variables are those src/dist reads (tessera/dist/Instances.hpp).
"""

import os

__all__ = [
    "isPopdistEnvSet", "getInstanceIndex", "getNumInstances",
    "getReplicaIndexOffset", "getNumLocalReplicas", "getNumTotalReplicas",
    "getNumIpusPerReplica",
]


def _variable(name, default):
    value = os.environ.get(name, "")
    if value == "":
        if isPopdistEnvSet():
            raise RuntimeError(
                f"{name} is not set though POPDIST_NUM_INSTANCES is; start "
                "the instances with `tessera poprun`, which sets both")
        return default
    if not value.isdigit():
        raise RuntimeError(
            f"{name}={value} is not a whole number; start the instances "
            "with `tessera poprun`, which sets it")
    return int(value)


def isPopdistEnvSet():
    """Whether the process was started by `tessera poprun`."""
    return os.environ.get("POPDIST_NUM_INSTANCES", "") != ""


def getInstanceIndex():
    return _variable("POPDIST_INSTANCE_INDEX", 0)


def getNumInstances():
    return _variable("POPDIST_NUM_INSTANCES", 1)


def getReplicaIndexOffset():
    """The index of this instance's first replica among the run's."""
    return _variable("POPDIST_REPLICA_INDEX_OFFSET", 0)


def getNumLocalReplicas():
    return _variable("POPDIST_NUM_LOCAL_REPLICAS", 1)


def getNumTotalReplicas():
    return _variable("POPDIST_NUM_TOTAL_REPLICAS", 1)


def getNumIpusPerReplica():
    if os.environ.get("POPDIST_NUM_IPUS_PER_REPLICA", "") == "":
        return 1
    return _variable("POPDIST_NUM_IPUS_PER_REPLICA", 1)
