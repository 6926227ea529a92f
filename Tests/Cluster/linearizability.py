"""A linearizability checker for histories of operations on independent registers with compare-and-set.

Why our own: PyPI has no checker, and Porcupine (Go) / Knossos (Clojure) would add a toolchain to the
test machine. This is the same algorithm as Porcupine's: Wing & Gong's search as improved by Lowe, with
memoization of (set of linearized operations, model state), applied to each key on its own
(P-compositionality: a history is linearizable iff each key's sub-history is).

A history is a list of `Op`s, Jepsen style. Each op has an invoke time and, when it completed, a
complete time and a status:

* ``ok``   — it took effect (reads and successful CAS return what they saw);
* ``fail`` — it definitely did not take effect. For a CAS this is Hearth's 412: the precondition did
             not hold, and the server tells the value it found (``result``), so the op still constrains
             the history; failed reads and writes are dropped;
* ``info`` — outcome unknown (timeout, 503, connection reset): it may have taken effect at any time
             after its invoke, or never. It gets an infinite complete time, so "never" is the same as
             "at the very end", where it changes nothing anyone saw.

The model is a register holding a JSON value. Hearth's ETag is a hash of the value, so an ETag stands
for a value: a CAS carries the value its ETag was read with (``expected``). Values are compared as
given, so callers pass a canonical form (see ``canonical``).

    ops = [Op(0, "k", "write", value="1", invoke=0, complete=1, status="ok"),
           Op(1, "k", "read", result="1", invoke=2, complete=3, status="ok")]
    assert check(ops).ok
"""
from __future__ import annotations

import dataclasses
import json
import math
import time
from typing import Any, Hashable, Iterable

#: The register's value before the first write (Hearth: a missing path reads as null).
INITIAL = None
#: A 412 whose body could not be read: the CAS failed, the current value is unknown.
UNKNOWN = object()


def canonical(value: Any) -> Hashable:
    """A JSON value in a hashable, comparable form (None for null/absent)."""
    if value is None:
        return None
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclasses.dataclass
class Op:
    """One operation. ``f`` is read, write or cas.

    read:  ``result`` is the value returned.
    write: ``value`` is the value written.
    cas:   ``expected`` the value the ETag was read with, ``value`` the new value; on ``fail``,
           ``result`` is the current value the server answered with (or UNKNOWN).
    """
    process: int
    key: str
    f: str
    value: Any = None
    expected: Any = None
    result: Any = None
    invoke: float = 0.0
    complete: float | None = None
    status: str = "ok"

    def __post_init__(self):
        assert self.f in ("read", "write", "cas"), self.f
        assert self.status in ("ok", "fail", "info"), self.status


def step(state: Hashable, op: Op) -> tuple[bool, Hashable]:
    """The CAS register: whether ``op`` can happen in ``state``, and the state after it."""
    if op.f == "read":
        return state == op.result, state
    if op.f == "write":
        return True, op.value
    # cas
    if op.status == "ok":
        return (True, op.value) if state == op.expected else (False, state)
    if op.status == "fail":
        if state == op.expected:
            return False, state
        return (op.result is UNKNOWN or state == op.result), state
    # info: had it been applied here, it applied iff the precondition held; "never" is the end.
    return True, (op.value if state == op.expected else state)


def relevant(op: Op) -> bool:
    """Ops that constrain the history: failed reads/writes did nothing and said nothing; a read
    with an unknown outcome says nothing either."""
    if op.f in ("read", "write") and op.status == "fail":
        return False
    if op.f == "read" and op.status == "info":
        return False
    return True


def prune_unobserved(ops: list[Op]) -> list[Op]:
    """Drops info writes and info CAS whose value nobody observed (no read returned it, no CAS
    expected it or was refused with it). Such an op can always be placed at the very end, where it
    changes nothing anyone saw; and wherever a linearization placed it, removing it leaves a valid
    one, since every op between it and the next write would have observed its value. Without this,
    each unknown outcome stays pending to the end of the history and the search grows with 2^infos.
    Not applied when a refused CAS has an unknown current value (it "observes" anything)."""
    if any(op.f == "cas" and op.status == "fail" and op.result is UNKNOWN for op in ops):
        return ops
    observed = set()
    for op in ops:
        if op.f == "read" and op.status == "ok":
            observed.add(op.result)
        elif op.f == "cas":
            observed.add(op.expected)
            if op.status == "fail":
                observed.add(op.result)
    return [op for op in ops if not (op.status == "info" and op.f in ("write", "cas") and op.value not in observed)]


@dataclasses.dataclass
class KeyResult:
    key: str
    ok: bool
    ops: int
    #: When not ok: the op the search could not get past (the one whose completion came before it
    #: could be placed, in the deepest partial linearization found), and that linearization's order.
    stuck_at: Op | None = None
    linearized_prefix: list[Op] = dataclasses.field(default_factory=list)
    #: The search was abandoned (time or memory limit): not known to be linearizable.
    timed_out: bool = False


@dataclasses.dataclass
class Result:
    ok: bool
    keys: dict[str, KeyResult]

    @property
    def violations(self) -> list[KeyResult]:
        return [r for r in self.keys.values() if not r.ok]

    def describe(self) -> str:
        lines = []
        for r in self.violations:
            what = "search abandoned (time or state limit)" if r.timed_out else "NOT linearizable"
            lines.append(f"key {r.key}: {what} ({r.ops} ops)")
            if r.stuck_at is not None:
                lines.append(f"  stuck at: {r.stuck_at}")
                for op in r.linearized_prefix[-8:]:
                    lines.append(f"  after:    {op}")
        return "\n".join(lines) if lines else "linearizable"


class _Entry:
    """A call or return event in the doubly-linked event list the search lifts ops out of."""
    __slots__ = ("op", "id", "is_call", "time", "match", "prev", "next")

    def __init__(self, op, ident, is_call, at):
        self.op, self.id, self.is_call, self.time = op, ident, is_call, at
        self.match = self.prev = self.next = None


def _events(ops: list[Op]) -> _Entry:
    entries = []
    for ident, op in enumerate(ops):
        done = math.inf if op.status == "info" or op.complete is None else op.complete
        call, ret = _Entry(op, ident, True, op.invoke), _Entry(op, ident, False, done)
        call.match = ret
        entries += [call, ret]
    # On equal times calls come first: ops that touch at an instant are taken as concurrent.
    entries.sort(key=lambda e: (e.time, 0 if e.is_call else 1))
    head = _Entry(None, -1, False, -math.inf)
    prev = head
    for e in entries:
        prev.next, e.prev = e, prev
        prev = e
    return head


def _lift(call: _Entry):
    call.prev.next = call.next
    call.next.prev = call.prev
    ret = call.match
    ret.prev.next = ret.next
    if ret.next is not None:
        ret.next.prev = ret.prev


def _unlift(call: _Entry):
    ret = call.match
    ret.prev.next = ret
    if ret.next is not None:
        ret.next.prev = ret
    call.prev.next = call
    call.next.prev = call


#: Memoized (linearized set, state) pairs kept at most (each costs about a bit per op of the key):
#: past this the search gives up instead of exhausting a machine shared with others.
MAX_STATES = 3_000_000


def check_key(key: str, ops: list[Op], initial: Hashable = INITIAL, deadline: float | None = None,
              max_states: int = MAX_STATES) -> KeyResult:
    """Wing–Gong–Lowe search over one key's ops."""
    ops = prune_unobserved([op for op in ops if relevant(op)])
    head = _events(ops)
    state, linearized = initial, 0
    calls: list[tuple[_Entry, Hashable]] = []
    seen: set[tuple[int, Hashable]] = set()
    best: tuple[int, Op | None, list[Op]] = (-1, None, [])
    entry = head.next
    steps = 0
    while head.next is not None:
        if entry.is_call:
            allowed, after = step(state, entry.op)
            if allowed:
                marked = linearized | (1 << entry.id)
                if (marked, after) not in seen:
                    if len(seen) >= max_states:
                        return KeyResult(key, False, len(ops), best[1], best[2], timed_out=True)
                    seen.add((marked, after))
                    calls.append((entry, state))
                    state, linearized = after, marked
                    _lift(entry)
                    entry = head.next
                    continue
            entry = entry.next
        else:
            # A return reached with its call still pending: no placement of it works from here.
            if len(calls) > best[0]:
                best = (len(calls), entry.op, [c.op for c, _ in calls])
            if not calls:
                return KeyResult(key, False, len(ops), best[1], best[2])
            call, state = calls.pop()
            linearized &= ~(1 << call.id)
            _unlift(call)
            entry = call.next
        steps += 1
        if deadline is not None and steps % 4096 == 0 and time.monotonic() > deadline:
            return KeyResult(key, False, len(ops), best[1], best[2], timed_out=True)
    return KeyResult(key, True, len(ops))


def check(ops: Iterable[Op], initial: Hashable = INITIAL, timeout: float | None = 120.0) -> Result:
    """Checks every key's sub-history; ``timeout`` (seconds, for the whole history) turns a search
    that takes too long into a failure rather than a hang."""
    by_key: dict[str, list[Op]] = {}
    for op in ops:
        by_key.setdefault(op.key, []).append(op)
    deadline = None if timeout is None else time.monotonic() + timeout
    results = {key: check_key(key, key_ops, initial, deadline) for key, key_ops in sorted(by_key.items())}
    return Result(all(r.ok for r in results.values()), results)
