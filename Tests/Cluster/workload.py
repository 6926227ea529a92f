"""Concurrent REST clients whose history the linearizability checker judges.

Why this shape: the fault tests must catch the three ways a cluster loses correctness — a stale or
lost value (linearizability of read/write/CAS per key), a multi-path update seen half-applied (torn
read), and an acknowledged write gone after recovery (the final read, checked with the rest). Every
request is logged Jepsen style (invoke, complete, ok/fail/info) so the checker can reason about
requests whose outcome is unknown.

    workload = Workload([rig.url], secret=rig.admin_secret, namespace="faults")
    workload.start(); ...hurt the cluster...; workload.stop()
    workload.final_reads(rig.url)
    report = workload.analyse()
    assert report.ok, report.describe()

Each client thread keeps one keep-alive connection (plain http.client: no dependency, and one
request at a time per client, as a process in a Jepsen history).

Registers are ``/reg/k<i>`` (values unique per write: ``"c<client>-<n>"``). Multi-path updates are
``PATCH /mp.json {"a/x<i>": v, "b/x<i>": v}``; a reader's ``GET /mp.json`` must show ``a/x<i> == b/x<i>``.

``watch(urls)`` adds SSE listeners on ``/mp``: no event may leave a listener's copy with
``a/x<i> != b/x<i>`` either.

Outcomes: 200 → ok; 412 on CAS → fail with the current value (the body); other 4xx, a refused TCP
connection, or HAProxy's own 503 (no server took the request) → fail (did not happen); any other 5xx,
a timeout or a broken connection → info (may or may not have happened).
"""
from __future__ import annotations

import dataclasses
import http.client
import json
import random
import threading
import time
import urllib.parse

from clients import SSEListener
from linearizability import Op, Result, canonical, check


class Outcome(Exception):
    """A request that did not return 200/412: ``status`` is fail or info."""

    def __init__(self, status: str, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


class Client:
    """One process of the history: a keep-alive connection to one base URL."""

    def __init__(self, base_url: str, secret: str, namespace: str, timeout: float):
        parts = urllib.parse.urlsplit(base_url)
        self.host, self.port = parts.hostname, parts.port
        self.query = urllib.parse.urlencode({"ns": namespace, "auth": secret})
        self.timeout = timeout
        self.conn: http.client.HTTPConnection | None = None

    def close(self):
        if self.conn:
            self.conn.close()
            self.conn = None

    def request(self, method: str, path: str, body=None, headers=None) -> tuple[int, dict, object]:
        """Returns (status, headers, decoded JSON body) for 200 and 412, raises Outcome otherwise."""
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                self.conn.connect()
            except OSError as error:  # nothing was sent
                self.close()
                raise Outcome("fail", f"connect: {error}") from None
        data = None if body is None else json.dumps(body).encode()
        try:
            self.conn.request(method, f"{path}?{self.query}", body=data, headers=headers or {})
            response = self.conn.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException) as error:
            self.close()
            raise Outcome("info", f"{type(error).__name__}: {error}") from None
        status, head = response.status, {k.lower(): v for k, v in response.getheaders()}
        if status in (200, 412):
            return status, head, json.loads(raw)
        if status == 503 and "hearth" not in head.get("server", "").lower() and b"No server is available" in raw:
            raise Outcome("fail", "haproxy: no server available")
        raise Outcome("info" if status >= 500 else "fail", f"HTTP {status}: {raw[:200]!r}")


@dataclasses.dataclass
class Report:
    """What the fault tests assert on."""
    checked: Result
    lost_writes: list[str]
    torn_reads: list[dict]
    counts: dict[str, int]
    errors: list[str]
    crashes: list[str]

    @property
    def ok(self) -> bool:
        return self.checked.ok and not self.torn_reads and not self.crashes

    def describe(self) -> str:
        lines = [f"ops: {self.counts}"]
        if not self.checked.ok:
            lines.append(self.checked.describe())
        if self.lost_writes:
            lines.append(f"lost acknowledged writes on keys: {self.lost_writes}")
        if self.torn_reads:
            lines.append(f"{len(self.torn_reads)} torn reads, first: {self.torn_reads[0]}")
        if self.crashes:
            lines.append(f"client threads that crashed: {self.crashes}")
        if self.errors:
            lines.append(f"first errors: {self.errors[:5]}")
        return "\n".join(lines)


class Workload:
    def __init__(self, targets: list[str], secret: str, namespace: str = "faults", clients: int = 6,
                 keys: int = 3, pairs: int = 2, timeout: float = 5.0, seed: int | None = None,
                 pause_after_error: float = 0.2):
        self.targets, self.secret, self.namespace = targets, secret, namespace
        self.clients, self.keys, self.pairs = clients, keys, pairs
        self.timeout, self.pause_after_error = timeout, pause_after_error
        self.rng = random.Random(seed)
        self.history: list[Op] = []
        self.torn: list[dict] = []
        self.errors: list[str] = []
        self.refused = 0  # requests that certainly did not take effect (not in the history)
        self.crashes: list[str] = []
        self.lock = threading.Lock()
        self.running = threading.Event()
        self.threads: list[threading.Thread] = []
        self.listeners: list[SSEListener] = []
        self.events_checked = 0
        self.t0 = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self.t0

    def record(self, *ops: Op):
        with self.lock:
            self.history.extend(ops)

    # ---------------------------------------------------------------- running

    def start(self):
        self.running.set()
        for i in range(self.clients):
            client = Client(self.targets[i % len(self.targets)], self.secret, self.namespace, self.timeout)
            thread = threading.Thread(target=self.loop, args=(i, client, random.Random(self.rng.random())),
                                      name=f"client-{i}", daemon=True)
            self.threads.append(thread)
            thread.start()

    def stop(self):
        self.running.clear()
        for thread in self.threads:
            thread.join(timeout=self.timeout + 5)
        self.threads = []
        for listener in self.listeners:
            listener.close()

    def watch(self, urls: list[str]):
        """SSE listeners on /mp (one per URL) whose every event is checked for a torn pair."""
        for url in urls:
            self.listeners.append(SSEListener(url, "/mp", self.secret, self.namespace,
                                              on_event=lambda tree, url=url: self.check_event(tree, url)))

    def check_event(self, tree, source: str):
        """A listener's copy of /mp after an event must not show a multi-path update half-applied."""
        tree = tree if isinstance(tree, dict) else {}
        with self.lock:
            self.events_checked += 1
            for i in range(self.pairs):
                a, b = ((tree.get(side) or {}).get(f"x{i}") for side in "ab")
                if a != b:
                    self.torn.append({"pair": i, "a": a, "b": b, "event on": source, "at": self.now()})

    def run(self, seconds: float):
        self.start()
        time.sleep(seconds)
        self.stop()

    def loop(self, process: int, client: Client, rng: random.Random):
        etags: dict[str, tuple[str, object]] = {}  # key → (ETag, canonical value it was read with)
        n = errors = 0
        try:
            while self.running.is_set():
                n += 1
                value = f"c{process}-{n}"
                roll = rng.random()
                key = f"reg/k{rng.randrange(self.keys)}"
                if roll < 0.3:
                    ok = self.read(process, client, key, etags)
                elif roll < 0.5:
                    ok = self.write(process, client, key, value)
                elif roll < 0.75:
                    ok = self.cas(process, client, key, value, etags) if key in etags else self.read(process, client, key, etags)
                elif roll < 0.87:
                    ok = self.update_pair(process, client, rng.randrange(self.pairs), value)
                else:
                    ok = self.read_pairs(process, client)
                # Back off while the cluster is unavailable: every unknown outcome makes the check harder.
                errors = 0 if ok else errors + 1
                if errors:
                    time.sleep(min(2.0, self.pause_after_error * 2 ** (errors - 1)))
        except Exception as error:  # a bug or an answer we cannot read: fails the run, never hides
            with self.lock:
                self.crashes.append(f"client {process}: {type(error).__name__}: {error}")
        finally:
            client.close()

    def attempt(self, process: int, client: Client, ops: list[Op], method: str, path: str, body=None, headers=None):
        """Sends one request for `ops` (one per key it touches); fills in outcome and timing."""
        for op in ops:
            op.invoke = self.now()
        try:
            status, head, payload = client.request(method, path, body, headers)
        except Outcome as outcome:
            with self.lock:
                self.errors.append(f"{method} {path}: {outcome.status} {outcome.detail}")
            if outcome.status == "info":
                for op in ops:
                    op.status, op.complete = "info", None
                self.record(*ops)
            else:
                # Did not happen and told nothing (a CAS "fail" in the history means a 412 instead).
                with self.lock:
                    self.refused += 1
            return None
        done = self.now()
        for op in ops:
            op.complete = done
        return status, head, payload

    # ---------------------------------------------------------------- operations

    def read(self, process, client, key, etags) -> bool:
        op = Op(process, key, "read")
        answer = self.attempt(process, client, [op], "GET", f"/{key}.json", headers={"X-Firebase-ETag": "true"})
        if answer is None:
            return False
        _, head, payload = answer
        op.result = canonical(payload)
        etags[key] = (head.get("etag"), op.result)
        self.record(op)
        return True

    def write(self, process, client, key, value) -> bool:
        op = Op(process, key, "write", value=canonical(value))
        answer = self.attempt(process, client, [op], "PUT", f"/{key}.json", body=value)
        if answer is not None:
            self.record(op)
        return answer is not None

    def cas(self, process, client, key, value, etags) -> bool:
        etag, seen = etags.pop(key)
        op = Op(process, key, "cas", value=canonical(value), expected=seen)
        answer = self.attempt(process, client, [op], "PUT", f"/{key}.json", body=value,
                              headers={"if-match": etag, "X-Firebase-ETag": "true"})
        if answer is None:
            return False
        status, head, payload = answer
        if status == 412:
            op.status, op.result = "fail", canonical(payload)
        etags[key] = (head.get("etag"), canonical(payload) if status == 412 else op.value)
        self.record(op)
        return True

    def update_pair(self, process, client, index, value) -> bool:
        ops = [Op(process, f"mp/{side}/x{index}", "write", value=canonical(value)) for side in "ab"]
        answer = self.attempt(process, client, ops, "PATCH", "/mp.json", body={f"a/x{index}": value, f"b/x{index}": value})
        if answer is not None:
            self.record(*ops)
        return answer is not None

    def read_pairs(self, process, client) -> bool:
        ops = [Op(process, f"mp/{side}/x{i}", "read") for i in range(self.pairs) for side in "ab"]
        answer = self.attempt(process, client, ops, "GET", "/mp.json")
        if answer is None:
            return False
        tree = answer[2] or {}
        for op in ops:
            _, side, leaf = op.key.split("/")
            op.result = canonical((tree.get(side) or {}).get(leaf))
        for i in range(self.pairs):
            a, b = ((tree.get(side) or {}).get(f"x{i}") for side in "ab")
            if a != b:
                with self.lock:
                    self.torn.append({"pair": i, "a": a, "b": b, "at": ops[0].invoke})
        self.record(*ops)
        return True

    def final_reads(self, target: str, deadline: float = 60.0):
        """After recovery: one successful read of every key, invoked after everything else ended.
        Retries until the cluster answers (a failed attempt is not part of the history)."""
        client = Client(target, self.secret, self.namespace, self.timeout)
        keys = [f"reg/k{i}" for i in range(self.keys)]
        end = time.monotonic() + deadline
        try:
            for key in keys:
                while True:
                    op = Op(-1, key, "read", invoke=self.now())
                    try:
                        _, _, payload = client.request("GET", f"/{key}.json")
                        op.complete, op.result = self.now(), canonical(payload)
                        self.record(op)
                        break
                    except Outcome as outcome:
                        if time.monotonic() > end:
                            raise RuntimeError(f"final read of {key} failed: {outcome.detail}") from None
                        time.sleep(0.2)
            while True:
                if self.read_pairs(-1, client):
                    break
                if time.monotonic() > end:
                    raise RuntimeError("final read of /mp failed")
                time.sleep(0.2)
        finally:
            client.close()

    # ---------------------------------------------------------------- judging

    def analyse(self, timeout: float = 300.0) -> Report:
        with self.lock:
            history = list(self.history)
        counts: dict[str, int] = {}
        for op in history:
            name = f"{op.f}:{op.status}"
            counts[name] = counts.get(name, 0) + 1
        counts["refused"] = self.refused
        counts["events checked"] = self.events_checked
        checked = check(history, timeout=timeout)
        lost = []
        if not checked.ok:
            # A key whose history is fine without the final read lost an acknowledged write.
            without_final = [op for op in history if op.process != -1]
            again = check(without_final, timeout=timeout)
            lost = [k for k in (v.key for v in checked.violations) if again.keys.get(k) and again.keys[k].ok]
        return Report(checked, lost, list(self.torn), counts, list(self.errors), list(self.crashes))
