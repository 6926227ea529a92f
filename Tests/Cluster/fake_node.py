#!/usr/bin/env python3
"""A stand-in for `hearth serve --postgres URL --node-name NAME --port P --admin-secret S`, so the rig's
multi-node mode (PostgreSQL, several nodes, HAProxy, owner lookup, failover) can be exercised before
the real nodes exist:

    pip install "psycopg[binary]"
    HEARTH_BIN=Tests/Cluster/fake_node.py CLUSTER_MODE=multi python3 -m pytest Tests/Cluster/test_rig.py \
        Tests/Cluster/test_cluster_faults.py

It is NOT a model of Hearth's cluster: every request is one PostgreSQL transaction on a per-database
JSON tree (row-locked for writes), so it is linearizable by construction, and it speaks only REST
(GET, PUT with if-match, PATCH, DELETE) plus a polling event stream that sends the whole value as one
`put` whenever it changed (no WebSocket). Ownership is only bookkeeping in the
tables decision 0010 names (`hearth_databases.owner`/`epoch`, `hearth_members.heartbeat_at`): the
first node to write a database owns it, and a node whose heartbeat is older than 2 s loses its
databases to another — which is what the rig's `owner()` and the failover scenarios look at.

FAKE_NODE_FAULT=stale-reads makes every node answer reads from a copy of the tree refreshed every
0.5 s: the fault tests must then fail (the check that they can).
"""
from __future__ import annotations

import argparse
import os
import base64
import hashlib
import http.server
import json
import sys
import threading
import time
import urllib.parse

import psycopg

LEASE = 2.0
SCHEMA = """
CREATE TABLE IF NOT EXISTS fake_trees (db text PRIMARY KEY, tree jsonb);
CREATE TABLE IF NOT EXISTS hearth_databases (db text PRIMARY KEY, owner text, epoch bigint);
CREATE TABLE IF NOT EXISTS hearth_members (name text PRIMARY KEY, heartbeat_at timestamptz);
"""


def etag(value) -> str:
    if value is None:
        return "null_etag"
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return base64.b64encode(hashlib.sha1(text.encode()).digest()).decode()


def child(tree, segments):
    for s in segments:
        tree = tree.get(s) if isinstance(tree, dict) else None
    return tree


def with_child(tree, segments, value):
    if not segments:
        return value
    tree = dict(tree) if isinstance(tree, dict) else {}
    new = with_child(tree.get(segments[0]), segments[1:], value)
    if new is None:
        tree.pop(segments[0], None)
    else:
        tree[segments[0]] = new
    return tree or None


class Node:
    def __init__(self, args):
        self.args, self.name = args, args.node_name
        self.local = threading.local()
        self.stale = os.environ.get("FAKE_NODE_FAULT") == "stale-reads"
        self.copies: dict[str, tuple[float, object]] = {}
        with psycopg.connect(args.postgres, autocommit=True) as conn:
            conn.execute("SELECT pg_advisory_lock(42)")
            conn.execute(SCHEMA)
            conn.execute("SELECT pg_advisory_unlock(42)")

    def conn(self) -> psycopg.Connection:
        conn = getattr(self.local, "conn", None)
        if conn is None or conn.closed:
            conn = self.local.conn = psycopg.connect(self.args.postgres, connect_timeout=3)
        return conn

    def heartbeat(self):
        while True:
            try:
                with psycopg.connect(self.args.postgres, autocommit=True, connect_timeout=3) as conn:
                    while True:
                        conn.execute("INSERT INTO hearth_members VALUES (%s, now()) ON CONFLICT (name) "
                                     "DO UPDATE SET heartbeat_at = now()", (self.name,))
                        conn.execute("UPDATE hearth_databases d SET owner = %s, epoch = epoch + 1 WHERE NOT EXISTS "
                                     "(SELECT 1 FROM hearth_members m WHERE m.name = d.owner AND "
                                     "m.heartbeat_at > now() - make_interval(secs => %s))", (self.name, LEASE))
                        time.sleep(LEASE / 6)
            except psycopg.Error:
                time.sleep(0.2)

    def transact(self, db, method, segments, body, if_match):
        """(status, answer body, ETag of the path afterwards) in one transaction."""
        conn = self.conn()
        try:
            with conn.transaction():
                if method == "GET":
                    copy = self.copies.get(db)
                    if self.stale and copy and time.monotonic() - copy[0] < 0.5:
                        value = child(copy[1], segments)
                        return 200, value, etag(value)
                    row = conn.execute("SELECT tree FROM fake_trees WHERE db = %s", (db,)).fetchone()
                    self.copies[db] = (time.monotonic(), row[0] if row else None)
                    value = child(row[0] if row else None, segments)
                    return 200, value, etag(value)
                conn.execute("INSERT INTO fake_trees VALUES (%s, NULL) ON CONFLICT DO NOTHING", (db,))
                conn.execute("INSERT INTO hearth_databases VALUES (%s, %s, 1) ON CONFLICT DO NOTHING", (db, self.name))
                tree = conn.execute("SELECT tree FROM fake_trees WHERE db = %s FOR UPDATE", (db,)).fetchone()[0]
                current = child(tree, segments)
                if if_match is not None and if_match != etag(current):
                    return 412, current, etag(current)
                if method == "PUT":
                    tree, answer = with_child(tree, segments, body), body
                elif method == "DELETE":
                    tree, answer = with_child(tree, segments, None), None
                else:  # PATCH
                    for relative, value in body.items():
                        tree = with_child(tree, segments + [s for s in relative.split("/") if s], value)
                    answer = body
                conn.execute("UPDATE fake_trees SET tree = %s WHERE db = %s", (psycopg.types.json.Jsonb(tree), db))
                return 200, answer, etag(child(tree, segments))
        except psycopg.Error as error:
            conn.close()
            return 503, {"error": f"database unavailable: {type(error).__name__}"}, None

    def handler(self):
        node = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def answer(self, status, payload, tag=None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Server", "Hearth (fake node)")
                if tag:
                    self.send_header("ETag", tag)
                self.end_headers()
                self.wfile.write(data)

            def respond(self, method):
                url = urllib.parse.urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                if url.path == "/.well-known/jwks.json":
                    return self.answer(200, {"keys": []})
                query = dict(urllib.parse.parse_qsl(url.query))
                if query.get("auth") != node.args.admin_secret:
                    return self.answer(401, {"error": "Permission denied"})
                if not url.path.endswith(".json"):
                    return self.answer(404, {"error": "Not found"})
                segments = [s for s in url.path.removesuffix(".json").split("/") if s]
                if method == "GET" and self.headers.get("Accept") == "text/event-stream":
                    return self.stream(query.get("ns", "default"), segments)
                status, payload, tag = node.transact(query.get("ns", "default"), method, segments, body,
                                                     self.headers.get("if-match"))
                self.answer(status, payload, tag)

            def stream(self, db, segments):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                last = object()
                while True:
                    status, value, _ = node.transact(db, "GET", segments, None, None)
                    if status == 200 and value != last:
                        event = json.dumps({"path": "/", "data": value})
                        self.wfile.write(f"event: put\ndata: {event}\n\n".encode())
                        self.wfile.flush()
                        last = value
                    time.sleep(0.05)

            def do_GET(self):
                self.respond("GET")

            def do_PUT(self):
                self.respond("PUT")

            def do_PATCH(self):
                self.respond("PATCH")

            def do_DELETE(self):
                self.respond("DELETE")

        return Handler


class QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        """Clients that hang up (killed workloads, closed listeners) are normal here."""
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["serve"])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--postgres", required=True)
    parser.add_argument("--node-name", required=True)
    parser.add_argument("--admin-secret", required=True)
    args = parser.parse_args()
    node = Node(args)
    threading.Thread(target=node.heartbeat, daemon=True).start()
    server = QuietServer((args.host, args.port), node.handler())
    server.daemon_threads = True
    print(f"fake node {args.node_name} listening on http://{args.host}:{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
