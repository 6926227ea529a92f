#!/usr/bin/env python3
"""Seed records over keep-alive HTTP/1.1 and write the created ids, one per line.

Used by compare-rest.sh. Fails (exit 1) on any non-2xx response or timeout.
"""
import argparse
import http.client
import json
import sys
import threading


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--path", required=True, help="POST target, e.g. /bench/items.json")
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--id-field", required=True, help="response JSON field holding the new id")
    p.add_argument("--header", action="append", default=[], help="'Name: value'")
    p.add_argument("--out", help="file to write ids to")
    p.add_argument("--timeout", type=float, default=10.0)
    a = p.parse_args()

    headers = {"Content-Type": "application/json"}
    for h in a.header:
        k, v = h.split(":", 1)
        headers[k.strip()] = v.strip()

    ids: list[str] = []
    errors: list[str] = []
    lock = threading.Lock()
    next_n = iter(range(a.count))

    def worker() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=a.timeout)
        try:
            while True:
                with lock:
                    n = next(next_n, None)
                    if n is None or errors:
                        return
                body = json.dumps({"title": f"seed {n}", "n": n})
                conn.request("POST", a.path, body=body, headers=headers)
                r = conn.getresponse()
                data = r.read()
                if not 200 <= r.status < 300:
                    with lock:
                        errors.append(f"POST {a.path} -> {r.status} {data[:200]!r}")
                    return
                with lock:
                    ids.append(json.loads(data)[a.id_field])
        except Exception as e:  # noqa: BLE001 - report anything
            with lock:
                errors.append(f"POST {a.path}: {type(e).__name__}: {e}")
        finally:
            conn.close()

    ts = [threading.Thread(target=worker) for _ in range(max(1, a.concurrency))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        print("seed.py: " + errors[0], file=sys.stderr)
        return 1
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(ids) + "\n")
    print(f"seeded {len(ids)} records via POST {a.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
