#!/usr/bin/env python3
"""Cluster benchmark driver (scale-out.md §4 "Report"): prints a markdown table for docs/benchmarks.md.

    python3 Tests/Cluster/bench.py [--single] [--nodes 3] [--seconds 10] [--rate 200] [--writers 8]

Measures, on a fresh rig:
  * durable writes/s to one database, writers spread over every node (each PUT acknowledged = durable);
  * cross-node write→listener latency at a fixed rate: the writer on node1, SSE listeners on the other
    nodes (on node1 in single mode), the write time carried in the value (one process, one clock);
  * failover: kill -9 of the owner → next acknowledged write through the proxy, and → an SSE listener
    on a surviving node receiving a write made after the kill (multi mode; in single mode the node is
    restarted, so it is kill → restart → ack);
  * CPU-seconds of the Hearth processes per 1k writes (from /proc/<pid>/stat), since the load generator
    shares the 2 cores.

Why Python: it runs next to the fault tests on the same rig; its own overhead is the same for every
configuration compared, and the table says which machine and command produced it.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import threading
import time

from clients import SSEListener, rest
from rig import Rig
from workload import Client, Outcome

NS = "bench"


def cpu_seconds(pid: int | None) -> float:
    if not pid:
        return 0.0
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def nodes_cpu(rig: Rig) -> float:
    return sum(cpu_seconds(n.pid) for n in rig.nodes.values())


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def throughput(rig: Rig, writers: int, seconds: float) -> dict:
    """Back-to-back PUTs from `writers` clients, each on a node (round robin)."""
    names = list(rig.nodes)
    counts, errors = [0] * writers, [0] * writers
    stop = threading.Event()

    def write(i):
        client = Client(rig.node_url(names[i % len(names)]), rig.admin_secret, NS, timeout=10)
        n = 0
        while not stop.is_set():
            n += 1
            try:
                status, _, _ = client.request("PUT", f"/tput/w{i}/{n % 100}.json", {"n": n})
                counts[i] += status == 200
            except Outcome:
                errors[i] += 1
        client.close()

    cpu0 = nodes_cpu(rig)
    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    start = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    total = sum(counts)
    cpu = nodes_cpu(rig) - cpu0
    if not total:
        raise SystemExit(f"no write was acknowledged ({sum(errors)} errors)")
    return {"writes/s": total / elapsed, "writes": total, "errors": sum(errors),
            "cpu s / 1k writes": 1000 * cpu / max(total, 1)}


def latency(rig: Rig, rate: float, seconds: float) -> dict:
    """Writer on node1 at `rate`/s; listeners elsewhere record arrival − write time per event."""
    names = list(rig.nodes)
    listen_on = names[1:] or names
    rest(rig.node_url(names[0]), "PUT", "/lat", rig.admin_secret, NS, {"start": {"t": 0}})
    listeners = [SSEListener(rig.node_url(n), "/lat", rig.admin_secret, NS) for n in listen_on]
    client = Client(rig.node_url(names[0]), rig.admin_secret, NS, timeout=10)
    sent, late = 0, 0
    start = time.monotonic()
    while (now := time.monotonic()) - start < seconds:
        due = start + sent / rate
        if now < due:
            time.sleep(due - now)
        elif now - due > 1.0:
            late += 1  # the writer itself fell behind; the rate is not what was asked
        client.request("PUT", f"/lat/e{sent}.json", {"t": time.monotonic()})
        sent += 1
    client.close()
    time.sleep(2.0)
    samples = []
    for listener in listeners:
        seen = set()
        for arrived, event, payload in listener.events:
            # A write arrives as its own event (path /eN) or inside a larger one (path /): the first
            # event that carries a key is its delivery.
            path, data = payload["path"].strip("/"), payload["data"]
            carried = {path: data} if path else (data if isinstance(data, dict) else {})
            for key, value in carried.items():
                if key.startswith("e") and isinstance(value, dict) and key not in seen:
                    seen.add(key)
                    samples.append((arrived - value["t"]) * 1000)
        listener.close()
    expected = sent * len(listeners)
    if not samples:
        raise SystemExit("no listener received an event")
    return {"events": len(samples), "expected": expected, "p50 ms": percentile(samples, 50),
            "p99 ms": percentile(samples, 99), "p99.9 ms": percentile(samples, 99.9),
            "max ms": max(samples), "mean ms": statistics.mean(samples), "writer behind": late}


def failover(rig: Rig) -> dict:
    """kill -9 of the owner; time to the next acknowledged write (through the proxy) and, in multi
    mode, to a listener on a surviving node seeing a write made after the kill."""
    owner = rig.owner(NS)
    survivor = next((n for n in rig.nodes if n != owner), None)
    listener = SSEListener(rig.node_url(survivor), "/fo", rig.admin_secret, NS) if survivor else None
    client = Client(rig.url, rig.admin_secret, NS, timeout=5)
    killed = time.monotonic()
    rig.kill(owner)
    if rig.single:
        threading.Thread(target=rig.start_node, args=(owner,), daemon=True).start()
    acked, n = None, 0
    while acked is None and time.monotonic() - killed < 120:
        n += 1
        try:
            status, _, _ = client.request("PUT", "/fo/after.json", {"n": n, "t": time.monotonic()})
            if status == 200:
                acked = time.monotonic()
        except Outcome:
            time.sleep(0.01)
    result = {"kill → ack ms": (acked - killed) * 1000 if acked else None, "attempts": n}
    if listener:
        ok = listener.wait_for(lambda v: isinstance(v, dict) and "after" in v, timeout=30)
        arrivals = [t for t, e, p in listener.events if "after" in str(p)]
        result["kill → listener ms"] = (arrivals[0] - killed) * 1000 if ok and arrivals else None
        listener.close()
    client.close()
    if not rig.single:
        rig.start_node(owner)
    return result


def table(title: str, rows: dict) -> str:
    lines = [f"**{title}**", "", "| metric | value |", "|---|---|"]
    for key, value in rows.items():
        shown = f"{value:.2f}" if isinstance(value, float) else str(value)
        lines.append(f"| {key} | {shown} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description="Cluster benchmark (markdown table on stdout).")
    parser.add_argument("--single", action="store_true", help="one SQLite node (to try the driver)")
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rate", type=float, default=200, help="writes/s for the latency run")
    parser.add_argument("--writers", type=int, default=8)
    args = parser.parse_args()
    with Rig(nodes=args.nodes, single=args.single) as rig:
        rest(rig.url, "PUT", "/setup", rig.admin_secret, NS, True)
        mode = "single node (SQLite)" if rig.single else f"{len(rig.nodes)} nodes on PostgreSQL"
        print(f"## Cluster benchmark: {mode}\n")
        print(f"{platform.node()}, {os.cpu_count()} cores; load generator in the same machine; "
              f"`python3 Tests/Cluster/bench.py {'--single ' if args.single else ''}--nodes {args.nodes} "
              f"--seconds {args.seconds:g} --rate {args.rate:g} --writers {args.writers}`\n")
        print(table(f"Durable writes to one database, {args.writers} writers over every node", throughput(rig, args.writers, args.seconds)))
        print(table(f"Write on node1 → SSE listener on {'node1' if rig.single else 'the other nodes'}, {args.rate:g} writes/s", latency(rig, args.rate, args.seconds)))
        print(table("Failover after kill -9 of the owner" + (" (restarted: single mode)" if rig.single else ""), failover(rig)))


if __name__ == "__main__":
    main()
