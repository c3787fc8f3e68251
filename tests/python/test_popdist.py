"""popdist's Python API reads what `tessera poprun` sets, as the C++ one."""

import pytest

import popdist

VARIABLES = {
    "POPDIST_NUM_INSTANCES": "4", "POPDIST_INSTANCE_INDEX": "2",
    "POPDIST_NUM_TOTAL_REPLICAS": "8", "POPDIST_NUM_LOCAL_REPLICAS": "2",
    "POPDIST_REPLICA_INDEX_OFFSET": "4", "POPDIST_NUM_IPUS_PER_REPLICA": "2",
}


def test_outside_a_launch_there_is_one_instance_of_one_replica(monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert not popdist.isPopdistEnvSet()
    assert popdist.getNumInstances() == 1
    assert popdist.getInstanceIndex() == 0
    assert popdist.getNumLocalReplicas() == 1


def test_each_instance_reads_its_replicas(monkeypatch):
    for name, value in VARIABLES.items():
        monkeypatch.setenv(name, value)
    assert popdist.isPopdistEnvSet()
    assert popdist.getInstanceIndex() == 2
    assert popdist.getNumInstances() == 4
    assert popdist.getReplicaIndexOffset() == 4
    assert popdist.getNumLocalReplicas() == 2
    assert popdist.getNumTotalReplicas() == 8
    assert popdist.getNumIpusPerReplica() == 2


def test_a_variable_that_is_not_a_number_is_an_error(monkeypatch):
    for name, value in VARIABLES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("POPDIST_NUM_LOCAL_REPLICAS", "two")
    with pytest.raises(RuntimeError, match="not a whole number"):
        popdist.getNumLocalReplicas()
