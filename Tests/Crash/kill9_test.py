#!/usr/bin/env python3
"""kill -9 durability test for the Hearth server.

Starts `hearth serve` on a fresh data directory, runs concurrent writers against it, kills the
server with SIGKILL while writes are in flight, restarts it on the same data directory and checks:

  * every acknowledged (HTTP 200) PUT is present with exactly the value that was sent;
  * no torn multi-path PATCH: for every pair present, left == right (and both sides exist);
  * every acknowledged pair is present with the value that was sent;
  * writes whose outcome is unknown (in flight at kill time) are either absent or exactly right;
  * nothing is present that was never written.

The kill/restart cycle repeats (default 3 times) on accumulated state. Exit status 0 means pass,
1 means a durability or consistency failure, a valid write answered with a non-200 status before
the kill, or too few acknowledged writes (the test must be able to fail); 2 a setup problem.
Connection errors before the kill are reported as warnings and their writes treated as unknown.

Only 127.0.0.1 is contacted. Every loop is bounded in time and count.

Environment: HEARTH_BIN (default <repo>/.build/debug/hearth).
"""
import argparse
import http.client
import json
import os
import random
import shutil
import signal
import socket
import string
import subprocess
import sys
import tempfile
import threading
import time

SECRET = "s3cret"
HOST = "127.0.0.1"
DEFAULT_BIN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), ".build", "debug", "hearth")


# --------------------------------------------------------------------------- server handling

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, binary, data_dir, log_dir, extra_args=()):
        self.binary = binary
        self.extra_args = list(extra_args)
        self.data_dir = data_dir
        self.log_dir = log_dir
        self.proc = None
        self.port = None
        self.log_path = None
        self.starts = 0

    def start(self, timeout=90.0):
        self.starts += 1
        self.port = free_port()
        self.log_path = os.path.join(self.log_dir, "server-%d.log" % self.starts)
        env = dict(os.environ)
        env["HEARTH_ADMIN_SECRET"] = SECRET
        log = open(self.log_path, "wb")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--host", HOST, "--port", str(self.port), "--data", self.data_dir] + self.extra_args,
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            start_new_session=True)
        log.close()
        needle = ("listening on http://%s:%d" % (HOST, self.port)).encode()
        deadline = t0 + timeout
        while time.monotonic() < deadline:
            with open(self.log_path, "rb") as f:
                if needle in f.read():
                    return time.monotonic() - t0
            if self.proc.poll() is not None:
                raise RuntimeError("server exited with status %s before listening; log tail:\n%s"
                                   % (self.proc.returncode, self.log_tail()))
            time.sleep(0.05)
        raise RuntimeError("server did not print %r within %.0f s; log tail:\n%s"
                           % (needle.decode(), timeout, self.log_tail()))

    def kill9(self):
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self):
        """Graceful stop at the end of the test (SIGTERM, then SIGKILL after 10 s)."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)

    def log_tail(self, n=40):
        try:
            with open(self.log_path, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
            return "\n".join(lines[-n:])
        except OSError:
            return "(no log)"


def request(conn, method, path, body=None):
    headers = {"Authorization": "Bearer " + SECRET}
    data = None
    if body is not None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers["Content-Type"] = "application/json; charset=utf-8"
    conn.request(method, path, body=data, headers=headers)
    resp = conn.getresponse()
    payload = resp.read()
    return resp.status, payload


def get_json(port, path, timeout=60.0):
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        status, payload = request(conn, "GET", path)
    finally:
        conn.close()
    if status != 200:
        raise RuntimeError("GET %s -> HTTP %d: %s" % (path, status, payload[:300]))
    return json.loads(payload.decode("utf-8"))


def as_children(v):
    """Normalise a GET result to a dict of children (arrays are rendered for integer keys)."""
    if v is None:
        return {}
    if isinstance(v, list):
        return {str(i): c for i, c in enumerate(v) if c is not None}
    if isinstance(v, dict):
        return v
    raise ValueError("expected an object, got %r" % (v,))


# --------------------------------------------------------------------------- load generation

class Ledger:
    """What the writers sent and what the server answered, accumulated over all cycles."""

    def __init__(self, threads):
        self.lock = threading.Lock()
        self.leaf_acked = [dict() for _ in range(threads)]    # thread -> {seq: value}
        self.leaf_unknown = [dict() for _ in range(threads)]  # outcome unknown (in flight at kill)
        self.leaf_rejected = [dict() for _ in range(threads)]
        self.pair_acked = {}                                   # "t_seq" -> value
        self.pair_unknown = {}
        self.pair_rejected = {}
        self.errors_before_kill = []                           # non-200 answers before the kill
        self.transport_errors_before_kill = []                 # connection errors before the kill


class Writer(threading.Thread):
    def __init__(self, idx, port, ledger, stop, kill_started, seq_start, cycle, deadline, max_ops):
        super().__init__(name="writer-%d" % idx, daemon=True)
        self.idx = idx
        self.port = port
        self.ledger = ledger
        self.stop_event = stop
        self.kill_started = kill_started
        self.seq = seq_start
        self.cycle = cycle
        self.deadline = deadline
        self.max_ops = max_ops
        self.rng = random.Random("%d-%d" % (cycle, idx))
        self.in_flight = None  # description of the current request, or None
        self.acked = 0
        self.acked_leaf = 0
        self.sent = 0

    def payload(self):
        n = self.rng.choice((0, 8, 40, 200, 1000)) if self.rng.random() < 0.97 else 16000
        s = "".join(self.rng.choice(string.ascii_letters) for _ in range(min(n, 64)))
        s = (s * (n // max(len(s), 1) + 1))[:n]
        if self.rng.random() < 0.1:
            s += "\u00e9\U0001F600"
        return s

    def run(self):
        conn = None
        ops = 0
        while ops < self.max_ops and not self.stop_event.is_set() and time.monotonic() < self.deadline:
            if self.kill_started.is_set():
                break
            ops += 1
            self.seq += 1
            seq = self.seq
            tag = "c%d-t%d-s%d-%08x" % (self.cycle, self.idx, seq, self.rng.getrandbits(32))
            if self.rng.random() < 0.5:
                kind, key = "leaf", str(seq)
                value = {"tag": tag, "n": seq, "p": self.payload()}
                method, path = "PUT", "/crash/w%d/%d.json" % (self.idx, seq)
                body = value
            else:
                kind, key = "pair", "%d_%d" % (self.idx, seq)
                value = tag + "-" + self.payload()
                method, path = "PATCH", "/crash/pairs.json"
                body = {key + "/left": value, key + "/right": value}
            self.in_flight = (kind, key)
            self.sent += 1
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(HOST, self.port, timeout=15)
                status, resp = request(conn, method, path, body)
            except ConnectionRefusedError as e:
                # Nothing was sent: the write must not appear.
                self.record_refused(kind, key, value, e)
                conn = None
                self.in_flight = None
                if self.kill_started.is_set():
                    break
                time.sleep(0.05)
                continue
            except (OSError, http.client.HTTPException) as e:
                self.record_unknown(kind, key, value, e)
                if conn is not None:
                    conn.close()
                conn = None
                self.in_flight = None
                if self.kill_started.is_set():
                    break
                time.sleep(0.05)
                continue
            self.in_flight = None
            with self.ledger.lock:
                if status == 200:
                    self.acked += 1
                    self.acked_leaf += kind == "leaf"
                    if kind == "leaf":
                        self.ledger.leaf_acked[self.idx][key] = value
                    else:
                        self.ledger.pair_acked[key] = value
                else:
                    # A non-200 answer means "not written"; the value must not appear.
                    if kind == "leaf":
                        self.ledger.leaf_rejected[self.idx][key] = value
                    else:
                        self.ledger.pair_rejected[key] = value
                    if not self.kill_started.is_set():
                        self.ledger.errors_before_kill.append(
                            ("%s %s" % (method, path), "HTTP %d: %s" % (status, resp[:200])))
        if conn is not None:
            conn.close()

    def record_refused(self, kind, key, value, exc):
        self._record(self.ledger.leaf_rejected, self.ledger.pair_rejected, kind, key, value, exc)

    def record_unknown(self, kind, key, value, exc):
        self._record(self.ledger.leaf_unknown, self.ledger.pair_unknown, kind, key, value, exc)

    def _record(self, leaf_table, pair_table, kind, key, value, exc):
        """Files a write whose outcome was a transport error; before the kill, such errors are failures."""
        with self.ledger.lock:
            if kind == "leaf":
                leaf_table[self.idx][key] = value
            else:
                pair_table[key] = value
            if not self.kill_started.is_set():
                self.ledger.transport_errors_before_kill.append(
                    (kind + " " + key, "%s: %s" % (type(exc).__name__, exc)))


# --------------------------------------------------------------------------- verification

def verify(port, ledger, threads, max_report=15):
    failures = []
    checked = {"leaf_acked": 0, "leaf_unknown_present": 0, "leaf_unknown_absent": 0,
               "pair_acked": 0, "pair_unknown_present": 0, "pair_unknown_absent": 0}

    def fail(msg):
        failures.append(msg)

    for t in range(threads):
        got = as_children(get_json(port, "/crash/w%d.json" % t))
        acked, unknown, rejected = ledger.leaf_acked[t], ledger.leaf_unknown[t], ledger.leaf_rejected[t]
        for key, value in acked.items():
            if key not in got:
                fail("LOST acknowledged PUT /crash/w%d/%s" % (t, key))
            elif got[key] != value:
                fail("WRONG value at acknowledged /crash/w%d/%s: got %.200r, want %.200r" % (t, key, got[key], value))
            else:
                checked["leaf_acked"] += 1
        for key, value in unknown.items():
            if key not in got:
                checked["leaf_unknown_absent"] += 1
            elif got[key] != value:
                fail("TORN/WRONG value at in-flight /crash/w%d/%s: got %.200r, want %.200r" % (t, key, got[key], value))
            else:
                checked["leaf_unknown_present"] += 1
        for key in got:
            if key not in acked and key not in unknown:
                if key in rejected:
                    fail("REJECTED (non-200) PUT /crash/w%d/%s is present" % (t, key))
                else:
                    fail("UNEXPECTED key /crash/w%d/%s (never written)" % (t, key))

    pairs = as_children(get_json(port, "/crash/pairs.json"))
    for key, node in pairs.items():
        if not isinstance(node, dict) or set(node.keys()) != {"left", "right"} or node["left"] != node["right"]:
            fail("TORN multi-path update /crash/pairs/%s: %.300r" % (key, node))
            continue
        if key in ledger.pair_acked:
            if node["left"] != ledger.pair_acked[key]:
                fail("WRONG value at acknowledged pair %s" % key)
        elif key in ledger.pair_unknown:
            if node["left"] != ledger.pair_unknown[key]:
                fail("WRONG value at in-flight pair %s" % key)
            else:
                checked["pair_unknown_present"] += 1
        elif key in ledger.pair_rejected:
            fail("REJECTED (non-200) pair %s is present" % key)
        else:
            fail("UNEXPECTED pair %s (never written)" % key)
    for key, value in ledger.pair_acked.items():
        node = pairs.get(key)
        if node is None:
            fail("LOST acknowledged pair /crash/pairs/%s" % key)
        elif isinstance(node, dict) and node.get("left") == value and node.get("right") == value:
            checked["pair_acked"] += 1
    checked["pair_unknown_absent"] = sum(1 for k in ledger.pair_unknown if k not in pairs)

    if len(failures) > max_report:
        shown = failures[:max_report] + ["... and %d more" % (len(failures) - max_report)]
    else:
        shown = failures
    return failures, shown, checked


# --------------------------------------------------------------------------- preloaded data

BULK_CHUNK_RECORDS = 2000


def bulk_record(chunk, index):
    """The record preloaded at /bulk/c<chunk>/r<index> (about 250 bytes of JSON)."""
    return {"name": "user %d-%d" % (chunk, index), "email": "u%d.%d@example.com" % (chunk, index),
            "age": (chunk * 7 + index) % 90, "bio": "x" * 150, "tags": {"a": True, "n": index}}


def bulk_chunks(megabytes):
    return max(1, megabytes * 1024 * 1024 // (250 * BULK_CHUNK_RECORDS))


def preload(port, megabytes):
    """Writes about `megabytes` MB of records under /bulk, a chunk per PUT, so the data is far larger
    than a small memory limit."""
    chunks = bulk_chunks(megabytes)
    t0 = time.monotonic()
    for chunk in range(chunks):
        body = {"r%d" % i: bulk_record(chunk, i) for i in range(BULK_CHUNK_RECORDS)}
        conn = http.client.HTTPConnection(HOST, port, timeout=120)
        try:
            status, payload = request(conn, "PUT", "/bulk/c%d.json" % chunk, body)
        finally:
            conn.close()
        if status != 200:
            raise RuntimeError("preload PUT /bulk/c%d -> HTTP %d: %s" % (chunk, status, payload[:300]))
    print("preloaded %d records (~%d MB) under /bulk in %.1f s"
          % (chunks * BULK_CHUNK_RECORDS, megabytes, time.monotonic() - t0))


def verify_preload(port, megabytes, rng):
    """The preloaded records are all there: their count, and 200 of them read back exactly."""
    chunks = bulk_chunks(megabytes)
    failures = []
    shallow = get_json(port, "/bulk.json?shallow=true")
    if not isinstance(shallow, dict) or len(shallow) != chunks:
        failures.append("PRELOAD: /bulk has %r chunks, want %d" % (len(shallow or {}), chunks))
    for _ in range(200):
        chunk, index = rng.randrange(chunks), rng.randrange(BULK_CHUNK_RECORDS)
        got = get_json(port, "/bulk/c%d/r%d.json" % (chunk, index))
        if got != bulk_record(chunk, index):
            failures.append("PRELOAD: /bulk/c%d/r%d is %.200r" % (chunk, index, got))
    return failures


# --------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("HEARTH_BIN", DEFAULT_BIN))
    ap.add_argument("--threads", type=int, default=32)
    ap.add_argument("--load-seconds", type=float, default=3.0, help="load before each kill")
    ap.add_argument("--cycles", type=int, default=3)
    ap.add_argument("--min-acked", type=int, default=100, help="per cycle; fewer is a failure")
    ap.add_argument("--max-ops-per-thread", type=int, default=100000, help="per cycle")
    ap.add_argument("--startup-timeout", type=float, default=90.0)
    ap.add_argument("--keep", action="store_true", help="keep the temp dir even on success")
    ap.add_argument("--seed", type=int, default=None, help="random seed for the kill jitter")
    ap.add_argument("--memory-limit", default=None,
                    help="serve with --memory-limit SIZE (the database stays in its file; docs/decisions/0012)")
    ap.add_argument("--preload-mb", type=int, default=0,
                    help="first write this many MB of records under /bulk, checked after every restart")
    args = ap.parse_args()

    if not (os.path.isfile(args.bin) and os.access(args.bin, os.X_OK)):
        print("SETUP ERROR: server binary %s not found or not executable (set HEARTH_BIN)" % args.bin)
        return 2
    rng = random.Random(args.seed)
    root = tempfile.mkdtemp(prefix="hearth-kill9-")
    data_dir = os.path.join(root, "data")
    os.makedirs(data_dir)
    extra = ["--memory-limit", args.memory_limit] if args.memory_limit else []
    server = Server(args.bin, data_dir, root, extra)
    ledger = Ledger(args.threads)
    seqs = [0] * args.threads
    failed = False
    print("kill9: binary %s, data dir %s, %d threads, %.1f s load, %d cycles"
          % (args.bin, data_dir, args.threads, args.load_seconds, args.cycles))
    try:
        try:
            took = server.start(args.startup_timeout)
        except RuntimeError as e:
            print("SETUP ERROR:", e)
            return 2
        print("server up on port %d after %.2f s" % (server.port, took))
        if args.preload_mb:
            preload(server.port, args.preload_mb)
        for cycle in range(1, args.cycles + 1):
            stop = threading.Event()
            kill_started = threading.Event()
            load = args.load_seconds + rng.uniform(0, 0.5)
            deadline = time.monotonic() + load + 30  # hard bound; the kill normally ends the load
            writers = [Writer(i, server.port, ledger, stop, kill_started, seqs[i], cycle, deadline,
                              args.max_ops_per_thread) for i in range(args.threads)]
            acked_before = (sum(len(a) for a in ledger.leaf_acked) + len(ledger.pair_acked))
            t0 = time.monotonic()
            for w in writers:
                w.start()
            time.sleep(load)
            in_flight = sum(1 for w in writers if w.in_flight is not None)
            kill_started.set()
            server.kill9()
            stop.set()
            for w in writers:
                w.join(timeout=30)
            stuck = [w.name for w in writers if w.is_alive()]
            elapsed = time.monotonic() - t0
            for w in writers:
                seqs[w.idx] = w.seq
            sent = sum(w.sent for w in writers)
            acked_cycle = sum(w.acked for w in writers)
            unknown_total = sum(len(u) for u in ledger.leaf_unknown) + len(ledger.pair_unknown)
            print("cycle %d: sent %d, acknowledged %d (%.0f/s), in flight at kill %d, "
                  "outcome unknown so far %d, errors before kill %d"
                  % (cycle, sent, acked_cycle, acked_cycle / max(elapsed, 1e-9), in_flight,
                     unknown_total, len(ledger.errors_before_kill)))
            if stuck:
                print("FAIL: writer threads did not finish: %s" % ", ".join(stuck))
                failed = True
                break
            try:
                took = server.start(args.startup_timeout)
            except RuntimeError as e:
                print("FAIL: restart after kill -9 failed:", e)
                failed = True
                break
            print("cycle %d: restarted on port %d after %.2f s" % (cycle, server.port, took))
            failures, shown, checked = verify(server.port, ledger, args.threads)
            if args.preload_mb:
                bulk_failures = verify_preload(server.port, args.preload_mb, rng)
                failures += bulk_failures
                shown += bulk_failures[:10]
            total_acked = sum(len(a) for a in ledger.leaf_acked) + len(ledger.pair_acked)
            print("cycle %d: verified %d/%d acknowledged PUTs, %d/%d acknowledged pairs "
                  "(all cycles, %d new this cycle); in-flight PUTs present %d / absent %d, "
                  "in-flight pairs present %d / absent %d"
                  % (cycle, checked["leaf_acked"], sum(len(a) for a in ledger.leaf_acked),
                     checked["pair_acked"], len(ledger.pair_acked), total_acked - acked_before,
                     checked["leaf_unknown_present"], checked["leaf_unknown_absent"],
                     checked["pair_unknown_present"], checked["pair_unknown_absent"]))
            if failures:
                failed = True
                print("FAIL: %d consistency problem(s) after cycle %d:" % (len(failures), cycle))
                for line in shown:
                    print("  " + line)
            if acked_cycle < args.min_acked:
                failed = True
                print("FAIL: only %d writes acknowledged in cycle %d (minimum %d)"
                      % (acked_cycle, cycle, args.min_acked))
            acked_leaf_cycle = sum(w.acked_leaf for w in writers)
            if min(acked_leaf_cycle, acked_cycle - acked_leaf_cycle) < args.min_acked // 4:
                failed = True
                print("FAIL: cycle %d acknowledged %d PUTs and %d multi-path PATCHes; each kind needs >= %d"
                      % (cycle, acked_leaf_cycle, acked_cycle - acked_leaf_cycle, args.min_acked // 4))
            if ledger.errors_before_kill:
                failed = True
                print("FAIL: %d valid write(s) got a non-200 answer before the kill, e.g.:"
                      % len(ledger.errors_before_kill))
                for op, what in ledger.errors_before_kill[:5]:
                    print("  %s -> %s" % (op, what))
                ledger.errors_before_kill.clear()
            if ledger.transport_errors_before_kill:
                print("WARNING: %d connection error(s) before the kill (outcome treated as unknown), e.g.:"
                      % len(ledger.transport_errors_before_kill))
                for op, what in ledger.transport_errors_before_kill[:3]:
                    print("  %s -> %s" % (op, what))
                ledger.transport_errors_before_kill.clear()
            if failed:
                break
    except Exception as e:  # noqa: BLE001 - report any unexpected error as a failure
        failed = True
        print("FAIL: unexpected error: %s: %s" % (type(e).__name__, e))
    finally:
        server.stop()
        if failed:
            print("server log tail (%s):\n%s" % (server.log_path, server.log_tail()))
    if failed or args.keep:
        print("data and logs kept in %s" % root)
    else:
        shutil.rmtree(root, ignore_errors=True)
    total_leaf = sum(len(a) for a in ledger.leaf_acked)
    print("SUMMARY: %s - %d acknowledged PUTs, %d acknowledged pairs, %d writes with unknown outcome, "
          "%d server start(s)"
          % ("FAIL" if failed else "PASS", total_leaf, len(ledger.pair_acked),
             sum(len(u) for u in ledger.leaf_unknown) + len(ledger.pair_unknown), server.starts))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
