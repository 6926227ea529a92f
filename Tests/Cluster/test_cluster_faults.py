"""Fault scenarios under the workload (decision 0010, scale-out.md §4): after each, every key's history
must be linearizable (this includes a final read, so an acknowledged write that vanished is a
violation), no reader may have seen a multi-path update half-applied, and the cluster must have taken
acknowledged writes again after the fault (else the run proved nothing).

Single mode (one SQLite node) runs the kill -9 + restart and the short pause scenarios; the rest need
the cluster.
"""
import time

import pytest
import urllib.request

from conftest import REPEAT
from workload import Workload

NS = "faults"
#: decision 0010: a node's lease lasts 2 s.
LEASE_SECONDS = 2.0


def create_database(rig):
    """Writes outside the checked keys so the database (and its owner) exists before the clients start."""
    url = f"{rig.url}/setup.json?ns={NS}&auth={rig.admin_secret}"
    request = urllib.request.Request(url, data=b"true", method="PUT")
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200


def targets(rig, only=None):
    """Clients on every node directly and through the proxy (so some sit on non-owners)."""
    names = only or list(rig.nodes)
    return [rig.url] + [rig.node_url(n) for n in names]


def run_scenario(rig, fault, before=2.0, after=3.0, recover=None, clients=None, seed=None):
    create_database(rig)
    workload = Workload(clients or targets(rig), rig.admin_secret, namespace=NS, clients=8, seed=seed)
    workload.watch([rig.node_url(n) for n in rig.nodes])
    workload.start()
    time.sleep(before)
    fault_started = workload.now()
    fault()
    fault_ended = workload.now()
    time.sleep(after)
    if recover:
        recover()
    time.sleep(1.0)
    workload.stop()
    workload.final_reads(rig.url)
    report = workload.analyse()
    print(report.describe())
    assert report.checked.ok, report.describe()
    assert not report.lost_writes, report.describe()
    assert not report.torn_reads, report.describe()
    assert not report.crashes, report.describe()
    before_fault = [op for op in workload.history if op.status == "ok" and op.f != "read" and op.complete < fault_started]
    after_fault = [op for op in workload.history if op.status == "ok" and op.f != "read" and op.process != -1
                   and op.invoke > fault_ended]
    assert len(before_fault) > 20, f"too few acknowledged writes before the fault: {report.counts}"
    assert len(after_fault) > 20, f"the cluster took too few writes after the fault: {report.counts}"
    assert report.counts["events checked"] > 20, f"the /mp listeners saw too few events: {report.counts}"
    return workload, report


@pytest.mark.parametrize("run", range(REPEAT))
def test_kill9_owner_then_restart_it(rig, run):
    """Runs in both modes: the owner dies mid-write and comes back on the same data / node name."""
    owner = {}

    def fault():
        owner["name"] = rig.owner(NS)
        rig.kill(owner["name"])
        time.sleep(1.0)
        rig.start_node(owner["name"])

    run_scenario(rig, fault, seed=run)


@pytest.mark.parametrize("run", range(REPEAT))
def test_pause_owner_within_its_lease(rig, run):
    """Runs in both modes: a short SIGSTOP (under the lease): requests stall, nothing fails over, and
    the stalled requests complete afterwards without breaking linearizability."""
    def fault():
        owner = rig.owner(NS)
        rig.pause(owner)
        time.sleep(LEASE_SECONDS / 2)
        rig.resume(owner)

    run_scenario(rig, fault, seed=run)


@pytest.mark.multinode
@pytest.mark.parametrize("run", range(REPEAT))
def test_kill9_owner_fails_over(rig, run):
    victim = {}

    def fault():
        victim["name"] = rig.owner(NS)
        rig.kill(victim["name"])
        new_owner = rig.owner(NS, timeout=10, other_than=victim["name"])
        assert new_owner != victim["name"]

    run_scenario(rig, fault, recover=lambda: rig.start_node(victim["name"]), seed=run)


@pytest.mark.multinode
@pytest.mark.parametrize("run", range(REPEAT))
def test_pause_owner_past_its_lease(rig, run):
    """SIGSTOP the owner past the lease: another node takes over; the old one, resumed, must step
    down (its in-flight writes may not commit after the new owner's: the checker sees that)."""
    victim = {}

    def fault():
        victim["name"] = rig.owner(NS)
        rig.pause(victim["name"])
        time.sleep(LEASE_SECONDS * 2)
        assert rig.owner(NS, timeout=10, other_than=victim["name"]) != victim["name"]
        rig.resume(victim["name"])

    run_scenario(rig, fault, after=4.0, seed=run)


@pytest.mark.multinode
@pytest.mark.parametrize("run", range(REPEAT))
def test_kill9_non_owner_holding_clients(rig, run):
    create_database(rig)
    owner = rig.owner(NS)
    follower = next(n for n in rig.nodes if n != owner)
    # Half the clients sit on the follower that dies.
    clients = [rig.node_url(follower), rig.node_url(owner)] + targets(rig)
    run_scenario(rig, lambda: rig.kill(follower), clients=clients,
                 recover=lambda: rig.start_node(follower), seed=run)


@pytest.mark.multinode
@pytest.mark.parametrize("run", range(REPEAT))
def test_postgres_immediate_restart(rig, run):
    run_scenario(rig, rig.restart_postgres, after=5.0, seed=run)


@pytest.mark.multinode
@pytest.mark.parametrize("run", range(REPEAT))
def test_proxy_drains_the_owner(rig, run):
    """HAProxy stops sending connections to the owner and closes the ones it has: clients through the
    proxy reconnect to the other nodes (their writes are forwarded) and nothing is lost."""
    drained = {}

    def fault():
        drained["name"] = rig.owner(NS)
        rig.drain(drained["name"])
        rig.shutdown_sessions(drained["name"])
        drained["sessions"] = rig.proxy_sessions_total()

    def recover():
        sessions = rig.proxy_sessions_total()
        # HAProxy's health checks are not sessions: the drained node got no client connection since.
        assert sessions[drained["name"]] == drained["sessions"][drained["name"]], (drained, sessions)
        assert sum(sessions.values()) > sum(drained["sessions"].values()), "clients did not reconnect"
        rig.undrain(drained["name"])

    run_scenario(rig, fault, clients=[rig.url] * 3, recover=recover, seed=run)
