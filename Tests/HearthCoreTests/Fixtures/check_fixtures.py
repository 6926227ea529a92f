#!/usr/bin/env python3
"""Independent reference evaluator for ordering.json and queries.json (not run in CI).

Implements Firebase Realtime Database ordering and query semantics as described in
docs/specs/rest-and-rules.md sections 1.7 and 3, following the Firebase JS SDK
(util.ts nameCompare/tryParseInt, snap/indexes/*, view/filter/RangedFilter.ts,
LimitedFilter.ts, QueryParams.ts):

* every index sorts by (index value, key); keys use nameCompare (32-bit integer keys
  first, numerically, equal values tie-broken by string length; then UTF-16 code-unit order);
* value order: null < false < true < numbers < strings (UTF-16) < objects (objects all equal);
* priority order: no priority < numbers < strings;
* startAt(v[,k]) keeps entries >= (v, k or MIN_NAME); endAt(v[,k]) keeps entries <= (v, k or MAX_NAME);
  startAfter(v[,k]) keeps entries > (v, k or MAX_NAME); endBefore(v[,k]) keeps < (v, k or MIN_NAME);
  equalTo(v[,k]) = startAt(v[,k]) + endAt(v[,k]);
* for orderBy "$key" the bound value is the key itself;
* limitToFirst/limitToLast apply after the range.

Usage: python3 check_fixtures.py  (exits 1 on any disagreement)
"""
import functools
import json
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MIN_NAME = object()  # sentinel below every key
MAX_NAME = object()  # sentinel above every key
_INT_RE = re.compile(r"^-?(0*)[0-9]{1,10}$")


def utf16_cmp(a, b):
    ea, eb = a.encode("utf-16-be"), b.encode("utf-16-be")
    return (ea > eb) - (ea < eb)


def try_parse_int(s):
    if _INT_RE.match(s):
        v = int(s)
        if -2147483648 <= v <= 2147483647:
            return v
    return None


def key_cmp(a, b):
    if a is b or (isinstance(a, str) and isinstance(b, str) and a == b):
        return 0
    if a is MIN_NAME or b is MAX_NAME:
        return -1
    if b is MIN_NAME or a is MAX_NAME:
        return 1
    ia, ib = try_parse_int(a), try_parse_int(b)
    if ia is not None and ib is not None:
        if ia != ib:
            return -1 if ia < ib else 1
        d = len(a) - len(b)
        if d == 0:
            raise ValueError("keys %r and %r compare equal" % (a, b))
        return -1 if d < 0 else 1
    if ia is not None:
        return -1
    if ib is not None:
        return 1
    return utf16_cmp(a, b)


def type_rank(v):
    if v is None:
        return 0
    if v is False:
        return 1
    if v is True:
        return 2
    if isinstance(v, (int, float)):
        return 3
    if isinstance(v, str):
        return 4
    if isinstance(v, dict):
        return 5
    raise TypeError("unexpected value %r" % (v,))


def value_cmp(a, b):
    ra, rb = type_rank(a), type_rank(b)
    if ra != rb:
        return -1 if ra < rb else 1
    if ra == 3:
        return (a > b) - (a < b)
    if ra == 4:
        return utf16_cmp(a, b)
    return 0  # null/null, same boolean, object/object


def priority_cmp(a, b):
    # a priority is None (no priority), a number or a string
    ra = 0 if a is None else (1 if isinstance(a, (int, float)) and not isinstance(a, bool) else 2)
    rb = 0 if b is None else (1 if isinstance(b, (int, float)) and not isinstance(b, bool) else 2)
    if ra != rb:
        return -1 if ra < rb else 1
    if ra == 1:
        return (a > b) - (a < b)
    if ra == 2:
        return utf16_cmp(a, b)
    return 0


# ---------------------------------------------------------------- data import (export format)

def import_node(v):
    """Return (value, priority): value with .value/.priority metadata resolved, empty -> None."""
    if isinstance(v, dict):
        prio = v.get(".priority")
        if ".value" in v:
            return v[".value"], prio
        out = {}
        for k, c in v.items():
            if k == ".priority":
                continue
            cv, _ = import_node(c)
            if cv is not None:
                out[k] = cv
        return (out if out else None), (prio if out else None)
    if isinstance(v, list):
        return import_node({str(i): c for i, c in enumerate(v) if c is not None})
    return v, None


def child_at(value, path):
    for seg in [s for s in path.split("/") if s]:
        if not isinstance(value, dict) or seg not in value:
            return None
        value = value[seg]
    return value


# ---------------------------------------------------------------- query evaluation

def evaluate(data, query):
    order_by = query["orderBy"]
    entries = []  # (key, index value)
    for k, raw in data.items():
        v, prio = import_node(raw)
        if v is None:
            continue
        if order_by == "$key":
            iv = k
        elif order_by == "$value":
            iv = v
        elif order_by == "$priority":
            iv = prio
        else:
            iv = child_at(v, order_by)
        entries.append((k, iv))

    if order_by == "$key":
        def post_cmp(a, b):  # posts are (index value, key); only the key counts
            return key_cmp(a[1], b[1])
    else:
        icmp = priority_cmp if order_by == "$priority" else value_cmp

        def post_cmp(a, b):
            c = icmp(a[0], b[0])
            return c if c != 0 else key_cmp(a[1], b[1])

    def post(bound, default_name):
        if order_by == "$key":
            assert isinstance(bound["value"], str), "$key bounds must be strings"
            return (None, bound["value"])
        return (bound["value"], bound["key"] if "key" in bound else default_name)

    lower = upper = None  # (post, inclusive)
    if "equalTo" in query:
        assert not any(x in query for x in ("startAt", "startAfter", "endAt", "endBefore"))
        lower = (post(query["equalTo"], MIN_NAME), True)
        upper = (post(query["equalTo"], MAX_NAME), True)
    if "startAt" in query:
        lower = (post(query["startAt"], MIN_NAME), True)
    if "startAfter" in query:
        assert "startAt" not in query
        lower = (post(query["startAfter"], MAX_NAME), False)
    if "endAt" in query:
        upper = (post(query["endAt"], MAX_NAME), True)
    if "endBefore" in query:
        assert "endAt" not in query
        upper = (post(query["endBefore"], MIN_NAME), False)

    ordered = sorted(((iv, k) for k, iv in entries), key=functools.cmp_to_key(post_cmp))
    result = []
    for p in ordered:
        if lower is not None:
            c = post_cmp(lower[0], p)
            if c > 0 or (c == 0 and not lower[1]):
                continue
        if upper is not None:
            c = post_cmp(p, upper[0])
            if c > 0 or (c == 0 and not upper[1]):
                continue
        result.append(p[1])

    assert not ("limitToFirst" in query and "limitToLast" in query)
    if "limitToFirst" in query:
        result = result[: query["limitToFirst"]]
    if "limitToLast" in query:
        n = query["limitToLast"]
        result = result[len(result) - n:] if n > 0 else []
    return result


# ---------------------------------------------------------------- checks

def check_sorted(name, items, cmp):
    errors = []
    for i in range(len(items) - 1):
        try:
            c = cmp(items[i], items[i + 1])
        except ValueError as e:
            errors.append("%s: %s" % (name, e))
            continue
        if c >= 0:
            errors.append("%s: item %d %r is not < item %d %r" % (name, i, items[i], i + 1, items[i + 1]))
    rng = random.Random(name)
    for _ in range(20):
        shuffled = list(items)
        rng.shuffle(shuffled)
        if sorted(shuffled, key=functools.cmp_to_key(cmp)) != items:
            errors.append("%s: re-sorting a shuffled copy does not give the list back" % name)
            break
    return errors


def main():
    errors = []
    with open(os.path.join(HERE, "ordering.json"), encoding="utf-8") as f:
        ordering = json.load(f)
    n_lists = 0
    for case in ordering["keyOrder"]:
        n_lists += 1
        for k in case["sorted"]:
            if k in ("[MIN_NAME]", "[MAX_NAME]") or re.search(r"[\[\].#$/\x00-\x1f\x7f]", k) or not k:
                errors.append("keyOrder %s: invalid key %r" % (case["name"], k))
        errors += check_sorted("keyOrder/" + case["name"], case["sorted"], key_cmp)
    for case in ordering["valueOrder"]:
        n_lists += 1
        errors += check_sorted("valueOrder/" + case["name"], case["sorted"], value_cmp)
    for case in ordering["priorityOrder"]:
        n_lists += 1
        keys = [e["key"] for e in case["sorted"]]
        if len(set(keys)) != len(keys):
            errors.append("priorityOrder %s: duplicate keys" % case["name"])

        def pcmp(a, b):
            c = priority_cmp(a["priority"], b["priority"])
            return c if c != 0 else key_cmp(a["key"], b["key"])
        errors += check_sorted("priorityOrder/" + case["name"], case["sorted"], pcmp)

    with open(os.path.join(HERE, "queries.json"), encoding="utf-8") as f:
        queries = json.load(f)
    names = set()
    for sc in queries:
        if sc["name"] in names:
            errors.append("duplicate scenario name %r" % sc["name"])
        names.add(sc["name"])
        try:
            got = evaluate(sc["data"], sc["query"])
        except Exception as e:  # noqa: BLE001
            errors.append("%s: evaluator error %r" % (sc["name"], e))
            continue
        if got != sc["expectedKeys"]:
            errors.append("%s: fixture says %r, evaluator says %r" % (sc["name"], sc["expectedKeys"], got))

    print("ordering lists: %d, query scenarios: %d" % (n_lists, len(queries)))
    for e in errors:
        print("MISMATCH", e)
    if errors:
        print("%d problem(s)" % len(errors))
        return 1
    print("all fixtures agree with the reference evaluator")
    return 0


if __name__ == "__main__":
    sys.exit(main())
