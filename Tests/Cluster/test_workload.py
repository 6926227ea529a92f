"""The workload and checker together, against a fake server that is correct or broken in one known
way: the pipeline the fault tests rely on must pass a correct server and catch each anomaly."""
import pytest

from fake_hearth import FakeHearth
from workload import Workload


def run_against(fault, seconds=3.0):
    with FakeHearth(fault) as fake:
        workload = Workload([fake.url], secret="x", clients=6, seed=7)
        workload.run(seconds)
        workload.final_reads(fake.url)
        return workload.analyse(timeout=120)


def test_correct_server_passes():
    report = run_against(None)
    assert report.ok and not report.crashes, report.describe()
    assert report.counts.get("write:ok", 0) > 100 and report.counts.get("cas:ok", 0) > 10, report.counts


def test_stale_reads_are_caught():
    report = run_against("stale")
    assert not report.checked.ok, report.describe()


def test_torn_events_are_caught():
    """What a /mp listener's copy shows after each event is checked like a read (fed by hand here:
    the fake server has no event streams)."""
    workload = Workload(["http://127.0.0.1:1"], secret="x", pairs=2)
    workload.check_event({"a": {"x0": "v1", "x1": "w"}, "b": {"x0": "v1", "x1": "w"}}, "node2")
    workload.check_event(None, "node2")
    assert workload.torn == [] and workload.events_checked == 2
    workload.check_event({"a": {"x0": "v2"}, "b": {"x0": "v1"}}, "node3")
    assert [t["pair"] for t in workload.torn] == [0] and workload.torn[0]["event on"] == "node3"


def test_torn_multi_path_updates_are_caught():
    report = run_against("torn")
    assert report.torn_reads, report.describe()
    assert not report.ok


def test_lost_acknowledged_writes_are_caught():
    report = run_against("lossy")
    assert not report.checked.ok, report.describe()
