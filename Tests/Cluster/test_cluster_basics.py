"""Multi-node functional tests (issue #15): each talks to specific nodes, so it shows that what one node
does, the others see — in order, exactly, and also when a node dies. They need CLUSTER_MODE=multi (in
single mode they fail; run.sh deselects them there)."""
import random
import threading
import time

import pytest

from clients import RealtimeConnection, SSEListener, rest

pytestmark = pytest.mark.multinode

NS = "basics"


def call(rig, node, method, path, body=None, **kwargs):
    status, head, payload = rest(rig.node_url(node), method, path, rig.admin_secret, NS, body, **kwargs)
    assert status == 200, f"{method} {path} on {node}: {status} {payload}"
    return head, payload


def listen(rig, node, path, query=None):
    return SSEListener(rig.node_url(node), path, rig.admin_secret, NS, query)


def test_write_on_one_node_reaches_listeners_on_the_others_in_order(rig):
    call(rig, "node1", "PUT", "/order", {"start": True})
    listeners = [listen(rig, node, "/order") for node in ("node2", "node3")]
    try:
        count = 60
        for i in range(count):
            call(rig, "node1", "PUT", f"/order/n{i:03d}", i)
        expected = [f"n{i:03d}" for i in range(count)]
        for listener in listeners:
            assert listener.wait_for(lambda v: v and len(v) == count + 1, timeout=15), (listener.value, listener.error)
            added = [e[2]["path"].strip("/") for e in listener.events if e[1] == "put" and e[2]["path"] != "/"]
            assert added == expected, f"events out of order or missing: {added}"
    finally:
        for listener in listeners:
            listener.close()


def test_limited_query_on_another_node_stays_exact_under_writes_and_deletes(rig):
    rng = random.Random(15)
    present = set()
    for i in range(10):
        call(rig, "node1", "PUT", f"/window/k{i:03d}", i)
        present.add(f"k{i:03d}")
    view = listen(rig, "node2", "/window", {"orderBy": '"$key"', "limitToLast": "3"})
    try:
        def expected():
            return {k: int(k[1:]) for k in sorted(present)[-3:]} or None

        assert view.wait_for(lambda v: v == expected(), timeout=10), (view.value, expected())
        for step in range(80):
            if present and rng.random() < 0.4:
                # Deleting from the top of the window forces a key from below into it.
                key = max(present) if rng.random() < 0.5 else rng.choice(sorted(present))
                call(rig, "node1", "DELETE", f"/window/{key}")
                present.discard(key)
            else:
                i = rng.randrange(200)
                call(rig, "node1", "PUT", f"/window/k{i:03d}", i)
                present.add(f"k{i:03d}")
            if step % 10 == 9:
                assert view.wait_for(lambda v: v == expected(), timeout=10), (step, view.value, expected())
        assert view.wait_for(lambda v: v == expected(), timeout=10), (view.value, expected())
        _, stored = call(rig, "node3", "GET", "/window")
        assert set(stored or {}) == present
    finally:
        view.close()


def test_cas_loops_from_every_node_count_exactly(rig):
    """A transaction is a read with its ETag, then a conditional PUT retried on 412: increments from
    clients on different nodes must all count, none twice."""
    call(rig, "node1", "PUT", "/counter", 0)
    per_client, clients = 25, 6
    failures = []

    def increment(node):
        try:
            for _ in range(per_client):
                head, value = call(rig, node, "GET", "/counter", headers={"X-Firebase-ETag": "true"})
                while True:
                    status, head, current = rest(rig.node_url(node), "PUT", "/counter", rig.admin_secret, NS, value + 1,
                                                 headers={"if-match": head["etag"], "X-Firebase-ETag": "true"})
                    if status == 200:
                        break
                    assert status == 412, f"CAS on {node}: {status} {current}"
                    value = current
        except Exception as error:  # reported by the main thread
            failures.append(f"{node}: {error!r}")

    nodes = list(rig.nodes)
    threads = [threading.Thread(target=increment, args=(nodes[i % len(nodes)],)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not failures, failures
    for node in nodes:
        _, total = call(rig, node, "GET", "/counter")
        assert total == per_client * clients, f"{node} counts {total}"


def test_on_disconnect_fires_when_the_node_holding_the_connection_dies(rig):
    holder, watcher = "node2", "node1"
    connection = RealtimeConnection(rig.node_url(holder), NS, rig.admin_secret)
    try:
        connection.put("/presence/x", "online")
        connection.on_disconnect_put("/presence/x", "offline")
        _, seen = call(rig, watcher, "GET", "/presence/x")
        assert seen == "online"
        listener = listen(rig, "node3", "/presence/x")
        rig.kill(holder)
        # decision 0010: a killed node's PostgreSQL session ends at once, so well within the lease.
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            _, seen = call(rig, watcher, "GET", "/presence/x")
            if seen == "offline":
                break
            time.sleep(0.1)
        assert seen == "offline", "onDisconnect did not fire after its node was killed"
        assert listener.wait_for(lambda v: v == "offline", timeout=10), listener.value
        listener.close()
    finally:
        try:
            connection.close()
        except Exception:
            pass
