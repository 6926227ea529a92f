"""Shared fixtures: the rig in the mode run.sh selects, and the rule that multi-node tests never pass in
single mode (they fail there; run.sh deselects them explicitly with -m 'not multinode')."""
import os
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from rig import Rig  # noqa: E402

MODE = os.environ.get("CLUSTER_MODE", "multi")
NODES = int(os.environ.get("CLUSTER_NODES", "3"))
#: How often each fault scenario runs (the design asks for 20 per failure in a full run).
REPEAT = int(os.environ.get("CLUSTER_REPEAT", "3"))

if MODE not in ("single", "multi"):
    raise pytest.UsageError(f"CLUSTER_MODE must be single or multi, not {MODE!r}")


def pytest_runtest_setup(item):
    if "multinode" in item.keywords and MODE == "single":
        pytest.fail("multi-node test in CLUSTER_MODE=single: it cannot run here (deselect with -m 'not multinode')")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.failed_call = report.failed
    return report


@pytest.fixture
def rig(request):
    """A fresh rig per test; on failure its directory (logs) is kept and named."""
    instance = Rig(nodes=NODES, single=(MODE == "single"))
    with instance:
        yield instance
        if getattr(request.node, "failed_call", False):
            instance.keep = True
            print(f"\nrig kept for inspection: {instance.dir}\n{instance.describe()}")
            for node in instance.nodes.values():
                print(f"--- {node.name} log tail\n{node.log_tail()}")
