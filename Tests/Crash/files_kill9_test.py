#!/usr/bin/env python3
"""kill -9 durability test for hearth's files.

Starts `hearth serve` on a fresh data directory, uploads files from several threads (multipart,
media and chunked resumable uploads, with overwrites), kills the server with SIGKILL while uploads
are in flight, restarts it on the same data directory and checks:

  * every acknowledged upload (HTTP 200) reads back byte for byte (SHA-256), unless a later upload
    of the same name was in flight at the kill, in which case it is one of the two versions;
  * no object exists that was never acknowledged or in flight;
  * no file is left behind: one blob file per object, no temporary files.

Some uploads are larger than 8 MiB, so the part of a blob written with direct I/O (decision 0021) is
killed mid-flight too; at least one of them must be acknowledged.

The cycle repeats (default 2 times) on accumulated state. Exit status 0 means pass, 1 a failure or
too few acknowledged uploads (the test must be able to fail), 2 a setup problem.
Environment: HEARTH_BIN (default <repo>/.build/debug/hearth).
"""
import argparse
import hashlib
import http.client
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kill9_test import DEFAULT_BIN, HOST, SECRET, Server  # noqa: E402

BUCKET = "hearth.appspot.com"
# Past the 8 MiB a new blob writes through the page cache: the rest goes with direct I/O.
LARGE = 9_500_000
AUTH = {"Authorization": "Bearer " + SECRET}


def quote(name):
    return urllib.parse.quote(name, safe="")


def upload(conn, name, data, how):
    """One upload; returns the HTTP status of the request that acknowledges it."""
    path = "/v0/b/%s/o?name=%s" % (BUCKET, quote(name))
    if how == "multipart":
        boundary = "b%08x" % random.getrandbits(32)
        meta = json.dumps({"name": name, "contentType": "application/octet-stream"}).encode()
        body = (b"--" + boundary.encode() + b"\r\nContent-Type: application/json; charset=utf-8\r\n\r\n" + meta
                + b"\r\n--" + boundary.encode() + b"\r\nContent-Type: application/octet-stream\r\n\r\n" + data
                + b"\r\n--" + boundary.encode() + b"--")
        headers = dict(AUTH, **{"Content-Type": "multipart/related; boundary=" + boundary, "X-Goog-Upload-Protocol": "multipart"})
        conn.request("POST", path, body=body, headers=headers)
        resp = conn.getresponse()
        resp.read()
        return resp.status
    if how == "media":
        conn.request("POST", path, body=data, headers=dict(AUTH, **{"Content-Type": "application/octet-stream"}))
        resp = conn.getresponse()
        resp.read()
        return resp.status
    # Resumable, in 256 KiB chunks.
    conn.request("POST", path, body=b"{}", headers=dict(AUTH, **{"X-Goog-Upload-Command": "start", "X-Goog-Upload-Protocol": "resumable"}))
    resp = conn.getresponse()
    resp.read()
    if resp.status != 200:
        return resp.status
    url = resp.getheader("X-Goog-Upload-URL")
    chunk_path = url[url.index("/v0/"):]
    offset = 0
    step = 256 * 1024
    while True:
        chunk = data[offset:offset + step]
        last = offset + len(chunk) >= len(data)
        command = "upload, finalize" if last else "upload"
        conn.request("POST", chunk_path, body=chunk, headers=dict(AUTH, **{"X-Goog-Upload-Command": command, "X-Goog-Upload-Offset": str(offset)}))
        resp = conn.getresponse()
        resp.read()
        if resp.status != 200 or last:
            return resp.status
        offset += len(chunk)


class Uploader(threading.Thread):
    def __init__(self, port, index, cycle, stop, ledger, lock):
        super().__init__(daemon=True)
        self.port, self.index, self.cycle, self.stop, self.ledger, self.lock = port, index, cycle, stop, ledger, lock
        self.errors = []

    def run(self):
        rng = random.Random(self.index * 1000 + self.cycle)
        conn = http.client.HTTPConnection(HOST, self.port, timeout=60)
        n = 0
        while not self.stop.is_set():
            n += 1
            # A few names per thread, so some uploads overwrite earlier ones.
            name = "crash/t%d/f%d.bin" % (self.index, rng.randrange(6))
            size = rng.choice([1, 1000, 70_000, 300_000, 1_200_000, 2_500_000, LARGE])
            data = rng.randbytes(size)
            digest = hashlib.sha256(data).hexdigest()
            how = rng.choice(["multipart", "media", "resumable"])
            with self.lock:
                self.ledger.setdefault(name, {"acked": None, "unknown": []})["unknown"].append(digest)
            try:
                status = upload(conn, name, data, how)
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection(HOST, self.port, timeout=60)
                continue  # outcome unknown: stays in "unknown"
            with self.lock:
                entry = self.ledger[name]
                entry["unknown"].remove(digest)
                if status == 200:
                    entry["acked"] = digest
                    # Earlier in-flight versions of this name were superseded by this acknowledged one.
                    entry["unknown"] = []
                    entry["count"] = entry.get("count", 0) + 1
                    if size == LARGE and how != "resumable":
                        entry["large"] = entry.get("large", 0) + 1
                elif not self.stop.is_set():
                    self.errors.append("%s %s answered %d before the kill" % (how, name, status))


def read_back(port, name):
    conn = http.client.HTTPConnection(HOST, port, timeout=60)
    try:
        conn.request("GET", "/v0/b/%s/o/%s?alt=media" % (BUCKET, quote(name)), headers=AUTH)
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, hashlib.sha256(body).hexdigest()
    finally:
        conn.close()


def list_all(port):
    conn = http.client.HTTPConnection(HOST, port, timeout=60)
    names, token = [], None
    try:
        while True:
            path = "/storage/v1/b/%s/o?prefix=crash%%2F" % BUCKET + ("&pageToken=" + quote(token) if token else "")
            conn.request("GET", path, headers=AUTH)
            resp = conn.getresponse()
            page = json.loads(resp.read())
            names += [item["name"] for item in page.get("items", [])]
            token = page.get("nextPageToken")
            if not token:
                return names
    finally:
        conn.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cycles", type=int, default=2)
    parser.add_argument("--threads", type=int, default=6)
    parser.add_argument("--load-seconds", type=float, default=6.0)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    binary = os.environ.get("HEARTH_BIN", DEFAULT_BIN)
    if not os.access(binary, os.X_OK):
        print("FAIL: no hearth binary at %s (build it or set HEARTH_BIN)" % binary)
        return 2
    work = tempfile.mkdtemp(prefix="hearth-files-kill9-")
    data_dir = os.path.join(work, "data")
    server = Server(binary, data_dir, work)
    ledger, lock = {}, threading.Lock()
    failures = []
    acknowledged = 0
    try:
        for cycle in range(args.cycles):
            server.start()
            stop = threading.Event()
            threads = [Uploader(server.port, i, cycle, stop, ledger, lock) for i in range(args.threads)]
            for thread in threads:
                thread.start()
            time.sleep(args.load_seconds)
            server.kill9()
            stop.set()
            for thread in threads:
                thread.join(timeout=60)
                failures += thread.errors
            acknowledged = sum(entry.get("count", 0) for entry in ledger.values())
            print("cycle %d: killed with uploads in flight; %d uploads acknowledged so far" % (cycle + 1, acknowledged))

            server.start()
            present = set(list_all(server.port))
            for name, entry in sorted(ledger.items()):
                allowed = set(entry["unknown"]) | ({entry["acked"]} if entry["acked"] else set())
                if name not in present:
                    if entry["acked"]:
                        failures.append("%s: acknowledged upload lost" % name)
                    continue
                status, digest = read_back(server.port, name)
                if status != 200 or digest not in allowed:
                    failures.append("%s: read back %d %s, expected one of %s" % (name, status, digest[:12], sorted(d[:12] for d in allowed)))
                else:
                    # What is stored is now the version to expect.
                    entry["acked"], entry["unknown"] = digest, []
            for name in present - set(ledger):
                failures.append("%s: present but never uploaded" % name)
            files_root = os.path.join(data_dir, "files")
            blobs = [f for _, _, files in os.walk(os.path.join(files_root, "blobs")) for f in files]
            leftovers = os.listdir(os.path.join(files_root, "tmp"))
            if len(blobs) != len(present):
                failures.append("%d blob files for %d objects after restart (orphans not cleaned)" % (len(blobs), len(present)))
            if leftovers:
                failures.append("temporary files left after restart: %s" % leftovers[:5])
            server.kill9()
        if acknowledged < 20:
            failures.append("only %d uploads acknowledged: too few for the test to mean anything" % acknowledged)
        large = sum(entry.get("large", 0) for entry in ledger.values())
        if large < 1:
            failures.append("no upload past 8 MiB was acknowledged: the direct-I/O path went untested")
    except RuntimeError as error:
        print("SETUP FAILURE: %s" % error)
        return 2
    finally:
        server.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures[:30]))
        return 1
    print("PASS: %d acknowledged uploads (%d past 8 MiB in one request) over %d kill -9 cycles, all read back byte for byte; no orphans"
          % (acknowledged, large, args.cycles))
    return 0


if __name__ == "__main__":
    sys.exit(main())
