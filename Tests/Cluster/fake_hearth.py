"""A tiny in-process REST server with Hearth's read/write/CAS/PATCH semantics, correct or deliberately
broken, so the workload + checker pipeline is shown to catch real anomalies (and not only the
hand-made histories of test_linearizability.py).

Faults: ``stale`` serves reads from a copy refreshed every 0.3 s; ``torn`` applies a multi-path
update one path at a time; ``lossy`` acknowledges every 5th PUT without applying it.
"""
from __future__ import annotations

import base64
import hashlib
import http.server
import json
import threading
import time
import urllib.parse


def etag(value) -> str:
    if value is None:
        return "null_etag"
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return base64.b64encode(hashlib.sha1(text.encode()).digest()).decode()


class FakeHearth:
    def __init__(self, fault: str | None = None):
        assert fault in (None, "stale", "torn", "lossy")
        self.fault = fault
        self.tree: dict = {}
        self.snapshot: dict = {}
        self.lock = threading.Lock()
        self.puts = 0
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                fake.handle(self, "GET")

            def do_PUT(self):
                fake.handle(self, "PUT")

            def do_PATCH(self):
                fake.handle(self, "PATCH")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.stopping = threading.Event()

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        threading.Thread(target=self.refresh, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

    def refresh(self):
        while not self.stopping.wait(0.3):
            with self.lock:
                self.snapshot = json.loads(json.dumps(self.tree))

    def get(self, tree, segments):
        node = tree
        for s in segments:
            node = node.get(s) if isinstance(node, dict) else None
        return node

    def set(self, segments, value):
        node = self.tree
        for s in segments[:-1]:
            node = node.setdefault(s, {})
        if value is None:
            node.pop(segments[-1], None)
        else:
            node[segments[-1]] = value

    def handle(self, request, method):
        path = urllib.parse.urlsplit(request.path).path.removesuffix(".json")
        segments = [s for s in path.split("/") if s]
        length = int(request.headers.get("Content-Length") or 0)
        body = json.loads(request.rfile.read(length)) if length else None
        status, answer = 200, None
        if method == "GET":
            with self.lock:
                answer = self.get(self.snapshot if self.fault == "stale" else self.tree, segments)
        elif method == "PUT":
            with self.lock:
                current = self.get(self.tree, segments)
                match = request.headers.get("if-match")
                if match is not None and match != etag(current):
                    status, answer = 412, current
                else:
                    self.puts += 1
                    if not (self.fault == "lossy" and self.puts % 5 == 0):
                        self.set(segments, body)
                    answer = body
        else:  # PATCH: every path of the update, atomically (unless torn)
            updates = [(segments + [s for s in relative.split("/") if s], value) for relative, value in body.items()]
            if self.fault == "torn":
                for where, value in updates:
                    with self.lock:
                        self.set(where, value)
                    time.sleep(0.02)  # wide enough that a 3 s workload reads inside it even on a busy machine
            else:
                with self.lock:
                    for where, value in updates:
                        self.set(where, value)
            answer = body
        with self.lock:
            tag = etag(self.get(self.tree, segments))
        data = json.dumps(answer).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        request.send_header("ETag", tag)
        request.end_headers()
        request.wfile.write(data)
