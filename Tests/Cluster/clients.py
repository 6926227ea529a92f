"""Small protocol clients for the cluster tests and the benchmark: REST calls, an SSE listener that keeps
a local copy of what it listens to, and a raw Firebase WebSocket (v5) connection.

Why hand-made: the tests must talk to one specific node (not a load-balanced SDK connection) and see
every event with its arrival time; plain http.client and websocket-client keep that explicit.
"""
from __future__ import annotations

import http.client
import json
import queue
import threading
import time
import urllib.parse

import websocket  # websocket-client


def rest(base_url: str, method: str, path: str, secret: str, namespace: str, body=None, headers=None,
         query: dict | None = None, timeout: float = 10.0):
    """One REST request; returns (status, headers, decoded body)."""
    parts = urllib.parse.urlsplit(base_url)
    params = {"ns": namespace, "auth": secret, **(query or {})}
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        data = None if body is None else json.dumps(body).encode()
        conn.request(method, f"{path}.json?{urllib.parse.urlencode(params)}", body=data, headers=headers or {})
        response = conn.getresponse()
        raw = response.read()
        head = {k.lower(): v for k, v in response.getheaders()}
        return response.status, head, (json.loads(raw) if raw else None)
    finally:
        conn.close()


def _set(tree, segments, value):
    """The tree after setting `segments` to `value` (None deletes, and empty parents vanish)."""
    if not segments:
        return value
    tree = dict(tree) if isinstance(tree, dict) else {}
    child = _set(tree.get(segments[0]), segments[1:], value)
    if child is None:
        tree.pop(segments[0], None)
    else:
        tree[segments[0]] = child
    return tree or None


class SSEListener:
    """Listens to one path on one node over SSE; ``events`` holds (arrival monotonic time, event,
    data) and ``value`` the listened data as the events say it is now."""

    def __init__(self, base_url: str, path: str, secret: str, namespace: str, query: dict | None = None,
                 on_event=None):
        self.on_event = on_event  # called with the value after each event, in the reader thread
        parts = urllib.parse.urlsplit(base_url)
        params = {"ns": namespace, "auth": secret, **(query or {})}
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=None)
        self.conn.request("GET", f"{path}.json?{urllib.parse.urlencode(params)}", headers={"Accept": "text/event-stream"})
        self.sock = self.conn.sock  # http.client lets go of it once the response owns the stream
        self.response = self.conn.getresponse()
        if self.response.status != 200:
            raise RuntimeError(f"SSE listen on {base_url}{path} refused: {self.response.status} {self.response.read()!r}")
        self.events: list[tuple[float, str, object]] = []
        self.arrivals: "queue.Queue[tuple[float, str, object]]" = queue.Queue()
        self.value = None
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.error: str | None = None
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self):
        event, data = None, []
        try:
            while not self.closed.is_set():
                line = self.response.fp.readline()
                if not line:
                    self.error = "stream ended"
                    return
                line = line.decode().rstrip("\r\n")
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].strip())
                elif line == "" and event is not None:
                    self.deliver(event, json.loads("\n".join(data)) if data else None)
                    event, data = None, []
        except (OSError, ValueError, http.client.HTTPException) as error:
            if not self.closed.is_set():
                self.error = f"{type(error).__name__}: {error}"

    def deliver(self, event, payload):
        now = time.monotonic()
        with self.lock:
            if event in ("put", "patch"):
                segments = [s for s in payload["path"].split("/") if s]
                if event == "put":
                    self.value = _set(self.value, segments, payload["data"])
                else:
                    for relative, child in payload["data"].items():
                        self.value = _set(self.value, segments + [s for s in relative.split("/") if s], child)
            self.events.append((now, event, payload))
            value = self.value
        self.arrivals.put((now, event, payload))
        if self.on_event and event in ("put", "patch"):
            self.on_event(value)

    def wait_for(self, predicate, timeout: float = 10.0) -> bool:
        """Waits until predicate(value) holds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if predicate(self.value):
                    return True
            time.sleep(0.02)
        return False

    def close(self):
        self.closed.set()
        try:
            self.sock.shutdown(2)
        except OSError:
            pass
        self.conn.close()


class RealtimeConnection:
    """A raw Firebase WebSocket v5 connection (wire-protocol.md): handshake, then requests by number."""

    def __init__(self, base_url: str, namespace: str, secret: str | None = None, timeout: float = 10.0):
        ws_url = base_url.replace("http://", "ws://") + f"/.ws?v=5&ns={urllib.parse.quote(namespace)}"
        self.ws = websocket.create_connection(ws_url, timeout=timeout)
        self.number = 0
        handshake = json.loads(self.ws.recv())
        if handshake.get("t") != "c" or handshake["d"].get("t") != "h":
            raise RuntimeError(f"no handshake: {handshake}")
        if secret:
            self.call("gauth", {"cred": secret})

    def call(self, action: str, body: dict) -> dict:
        """Sends a request and returns its reply's body ({"s": "ok", "d": ...}); skips pushed data."""
        self.number += 1
        self.ws.send(json.dumps({"t": "d", "d": {"r": self.number, "a": action, "b": body}}))
        while True:
            frame = self.ws.recv()
            if frame.isdigit():  # a fragmented message: count, then the parts
                frame = "".join(self.ws.recv() for _ in range(int(frame)))
            message = json.loads(frame)
            if message.get("t") == "d" and message["d"].get("r") == self.number:
                reply = message["d"]["b"]
                if reply.get("s") != "ok":
                    raise RuntimeError(f"{action} refused: {reply}")
                return reply

    def put(self, path: str, value):
        return self.call("p", {"p": path, "d": value})

    def on_disconnect_put(self, path: str, value):
        return self.call("o", {"p": path, "d": value})

    def close(self):
        self.ws.close()
