#!/usr/bin/env python3
"""The multi-node test rig: a throwaway PostgreSQL, N Hearth nodes and HAProxy in front, on loopback.

Why: the scale-out design (docs/decisions/0010-scale-out.md) must be tested against real failures —
kill -9, SIGSTOP past the lease, a crashed PostgreSQL, a drained proxy backend — and all of those need
processes we own and can hurt. The rig starts them on free ports in a temporary directory, hands out
each node's URL and pid, and does the hurting.

    with Rig(nodes=3) as rig:          # or Rig(single=True): one `hearth serve --data DIR` node
        rig.url                        # HAProxy: clients of a database land on one node (ns hash)
        rig.node_url("node2")
        rig.kill("node1"); rig.start_node("node1")
        rig.pause("node1"); rig.resume("node1")
        rig.restart_postgres(); rig.drain("node3")

CLI: ``python3 Tests/Cluster/rig.py up --nodes 3 [--single]`` prints the URLs and stays up until
Ctrl-C; ``python3 Tests/Cluster/rig.py down DIR`` stops what a rig left running in DIR.

Modes. ``single``: one node on SQLite, for proving the harness before the cluster exists.
``multi``: ``hearth serve --postgres URL --node-name nodeN --port P --data DIR`` (HEARTH_ADMIN_SECRET set).

Environment: HEARTH_BIN (default <repo>/.build/debug/hearth); HEARTH_NODE_ARGS (extra arguments for
every node, shell-split; ``{data}`` and ``{name}`` become the node's own directory and name, e.g.
``--data {data}``); RIG_HEALTH_PATH (see HEALTH_PATH); RIG_KEEP (keep the directory and logs).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[2]
THROWAWAY_PG = REPO / "scripts" / "postgres" / "throwaway.sh"
HOST = "127.0.0.1"
ADMIN_SECRET = "rig-admin-secret"
#: A cheap endpoint every node answers with 200 once it serves requests (no database work); HAProxy's
#: health check and the rig's readiness wait. RIG_HEALTH_PATH overrides it (e.g. a cluster endpoint
#: that answers 200 only once the node has joined).
HEALTH_PATH = os.environ.get("RIG_HEALTH_PATH", "/.well-known/jwks.json")


class RigError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def hearth_bin() -> str:
    path = os.environ.get("HEARTH_BIN") or str(REPO / ".build" / "debug" / "hearth")
    if not os.access(path, os.X_OK):
        raise RigError(f"no hearth binary at {path} (build it or set HEARTH_BIN)")
    return path


def http_status(url: str, timeout: float = 1.0) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except (OSError, ValueError):
        return None


class Node:
    """One `hearth serve` process; keeps its name, port and data directory across restarts."""

    def __init__(self, rig: "Rig", name: str):
        self.rig, self.name = rig, name
        self.port = free_port()
        self.data = rig.dir / name
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc and self.proc.poll() is None else None

    @property
    def log_path(self) -> pathlib.Path:
        return self.rig.dir / f"{self.name}-{self.starts}.log"

    def command(self) -> list[str]:
        common = ["serve", "--host", HOST, "--port", str(self.port)]
        if self.rig.single:
            args = common + ["--data", str(self.data)]
        else:
            args = common + ["--postgres", self.rig.postgres_url, "--node-name", self.name,
                             "--data", str(self.data)]
        extra = os.environ.get("HEARTH_NODE_ARGS", "").replace("{data}", str(self.data)).replace("{name}", self.name)
        return [self.rig.binary] + args + shlex.split(extra)

    def start(self, timeout: float = 90.0):
        if self.pid:
            raise RigError(f"{self.name} is already running (pid {self.pid})")
        self.starts += 1
        self.data.mkdir(exist_ok=True)
        env = dict(os.environ, HEARTH_ADMIN_SECRET=self.rig.admin_secret)
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RigError(f"{self.name} exited with {self.proc.returncode}:\n{self.log_tail()}")
            if http_status(self.url + HEALTH_PATH) == 200:
                return
            time.sleep(0.1)
        raise RigError(f"{self.name} did not answer {HEALTH_PATH} within {timeout}s:\n{self.log_tail()}")

    def signal(self, number: int):
        if not self.pid:
            raise RigError(f"{self.name} is not running")
        os.kill(self.pid, number)

    def kill(self):
        """kill -9 and reap (a SIGSTOPped process dies too)."""
        if self.pid:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def stop(self):
        if self.pid:
            os.kill(self.pid, signal.SIGCONT)  # a paused node cannot handle SIGTERM
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class Rig:
    def __init__(self, nodes: int = 3, single: bool = False, directory: str | None = None,
                 admin_secret: str = ADMIN_SECRET):
        self.single = single
        self.count = 1 if single else nodes
        self.admin_secret = admin_secret
        self.binary = hearth_bin()
        self.dir = pathlib.Path(directory or tempfile.mkdtemp(prefix="hearth-rig-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o755)  # the postgres user must reach its directory inside
        self.nodes = {f"node{i}": Node(self, f"node{i}") for i in range(1, self.count + 1)}
        self.postgres_dir = self.dir / "postgres"
        self.postgres_url: str | None = None
        self.proxy_port = free_port()
        self.proxy: subprocess.Popen | None = None
        #: Keep the directory (logs, data) when stopping.
        self.keep = bool(os.environ.get("RIG_KEEP"))

    # ---------------------------------------------------------------- lifecycle

    def __enter__(self) -> "Rig":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        if not self.single:
            self.start_postgres()
        for node in self.nodes.values():
            node.start()
        self.start_proxy()
        self.save_state()

    def stop(self):
        if self.proxy and self.proxy.poll() is None:
            self.proxy.terminate()
            self.proxy.wait(timeout=10)
        for node in self.nodes.values():
            node.stop()
        if self.postgres_url:
            subprocess.run([str(THROWAWAY_PG), "stop", str(self.postgres_dir)], check=False)
            self.postgres_url = None
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)

    def save_state(self):
        """What `rig.py down DIR` needs to stop a rig whose Python process is gone."""
        state = {"proxy_pid": self.proxy.pid if self.proxy else None, "postgres": bool(self.postgres_url),
                 "nodes": {n.name: {"pid": n.pid, "url": n.url} for n in self.nodes.values()}}
        (self.dir / "rig.json").write_text(json.dumps(state, indent=2))

    # ---------------------------------------------------------------- PostgreSQL

    def start_postgres(self):
        done = subprocess.run([str(THROWAWAY_PG), "start", str(self.postgres_dir)], capture_output=True, text=True)
        if done.returncode != 0:
            raise RigError(f"PostgreSQL did not start: {done.stderr.strip()}")
        self.postgres_url = done.stdout.strip().splitlines()[-1]

    def restart_postgres(self):
        """A crash-like restart (pg_ctl stop -m immediate, then start)."""
        if self.single:
            raise RigError("single mode has no PostgreSQL")
        subprocess.run([str(THROWAWAY_PG), "restart-immediate", str(self.postgres_dir)], check=True)

    def sql(self, query: str) -> str:
        """A query on the cluster's PostgreSQL (psql, unaligned), e.g. to see who owns a database."""
        done = subprocess.run(["psql", self.postgres_url, "-qAtX", "-c", query], capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise RigError(f"psql failed: {done.stderr.strip()}")
        return done.stdout.strip()

    def owner(self, namespace: str, timeout: float = 15.0, other_than: str | None = None) -> str:
        """The node holding the database's lease (the `hearth_databases` row of decision 0010),
        waiting until there is one that is running (and, with `other_than`, a different one)."""
        if self.single:
            return "node1"
        quoted = namespace.replace("'", "''")
        deadline = time.monotonic() + timeout
        while True:
            owner = self.sql(f"SELECT owner FROM hearth_databases WHERE db = '{quoted}'")
            if owner in self.nodes and self.nodes[owner].pid and owner != other_than:
                return owner
            if time.monotonic() > deadline:
                raise RigError(f"no live owner of {namespace} (row says {owner!r})")
            time.sleep(0.05)

    # ---------------------------------------------------------------- HAProxy

    def haproxy_config(self) -> str:
        servers = "\n".join(f"    server {n.name} {HOST}:{n.port} check" for n in self.nodes.values())
        return f"""global
    stats socket {self.dir}/haproxy.sock mode 600 level admin
    nbthread 1
    maxconn {self.proxy_maxconn()}

defaults
    mode http
    timeout connect 2s
    timeout client 1h
    timeout server 1h
    timeout tunnel 1h
    timeout http-keep-alive 10s
    # A refused connection (a dead node) is retried on another node, not after a 1 s pause on it.
    retries 2
    option redispatch 1

frontend hearth_in
    bind {HOST}:{self.proxy_port}
    default_backend hearth

backend hearth
    # A database's clients go to one node (its owner, ideally); without ?ns=, round robin.
    balance url_param ns
    hash-type consistent
    option httpchk GET {HEALTH_PATH}
    http-check expect status 200
    default-server inter 500ms fall 2 rise 1
{servers}
"""

    @staticmethod
    def proxy_maxconn() -> int:
        """HAProxy needs two descriptors per proxied connection and refuses to start above the limit."""
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        return max(256, min(20000, (soft - 200) // 2))

    def start_proxy(self, timeout: float = 15.0):
        binary = shutil.which("haproxy")
        if not binary:
            raise RigError("haproxy is not installed (apt-get install -y haproxy)")
        config = self.dir / "haproxy.cfg"
        config.write_text(self.haproxy_config())
        log = open(self.dir / "haproxy.log", "wb")
        self.proxy = subprocess.Popen([binary, "-db", "-f", str(config)], stdout=log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proxy.poll() is not None:
                raise RigError("haproxy exited: " + (self.dir / "haproxy.log").read_text(errors="replace"))
            if http_status(self.url + HEALTH_PATH) == 200:
                return
            time.sleep(0.1)
        raise RigError("haproxy did not answer in time")

    def proxy_command(self, command: str) -> str:
        """A command on HAProxy's admin socket, e.g. `show servers state`."""
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(5)
            s.connect(str(self.dir / "haproxy.sock"))
            s.sendall(command.encode() + b"\n")
            chunks = []
            while chunk := s.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def drain(self, name: str):
        """No new connections to `name` through the proxy; existing ones stay."""
        self.proxy_command(f"set server hearth/{name} state drain")

    def shutdown_sessions(self, name: str):
        """Closes the proxied connections to `name` now (after a drain, clients reconnect elsewhere)."""
        self.proxy_command(f"shutdown sessions server hearth/{name}")

    def proxy_sessions_total(self) -> dict[str, int]:
        """name → connections HAProxy has sent to that node so far (`show stat`, column stot)."""
        lines = self.proxy_command("show stat").splitlines()
        header = lines[0].lstrip("# ").split(",")
        rows = [dict(zip(header, line.split(","))) for line in lines[1:] if line.startswith("hearth,")]
        return {r["svname"]: int(r["stot"]) for r in rows if r["svname"] in self.nodes}

    def undrain(self, name: str):
        self.proxy_command(f"set server hearth/{name} state ready")

    def proxy_server_states(self) -> dict[str, str]:
        """name → HAProxy's operational state (2 = up, 0 = down) and admin state, from the socket."""
        lines = self.proxy_command("show servers state hearth").splitlines()
        header = next(l for l in lines if l.startswith("# be_id")).lstrip("# ").split()
        rows = [dict(zip(header, l.split())) for l in lines if l and not l.startswith("#") and len(l.split()) > 5]
        return {r["srv_name"]: f"op={r['srv_op_state']} admin={r['srv_admin_state']}" for r in rows}

    # ---------------------------------------------------------------- nodes

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.proxy_port}"

    def node(self, name: str) -> Node:
        return self.nodes[name]

    def node_url(self, name: str) -> str:
        return self.nodes[name].url

    def pid(self, name: str) -> int | None:
        return self.nodes[name].pid

    def kill(self, name: str):
        self.nodes[name].kill()

    def pause(self, name: str):
        self.nodes[name].signal(signal.SIGSTOP)

    def resume(self, name: str):
        self.nodes[name].signal(signal.SIGCONT)

    def start_node(self, name: str):
        self.nodes[name].start()
        self.save_state()

    def restart(self, name: str):
        """kill -9, then start again on the same port (and data / node name)."""
        self.kill(name)
        self.start_node(name)

    def wait_proxy_sees(self, name: str, up: bool, timeout: float = 10.0):
        """Waits until HAProxy's health checks agree that `name` is up (or down)."""
        want = "op=2" if up else "op=0"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proxy_server_states().get(name, "").startswith(want):
                return
            time.sleep(0.1)
        raise RigError(f"haproxy does not see {name} {'up' if up else 'down'}: {self.proxy_server_states()}")

    def describe(self) -> str:
        lines = [f"proxy     {self.url}  (admin socket {self.dir}/haproxy.sock)"]
        if self.postgres_url:
            lines.append(f"postgres  {self.postgres_url}")
        for n in self.nodes.values():
            lines.append(f"{n.name:9} {n.url}  pid {n.pid}")
        lines.append(f"admin secret: {self.admin_secret}   directory: {self.dir}")
        return "\n".join(lines)


def down(directory: str):
    """Stops the processes a rig recorded in DIR/rig.json (its Python process died)."""
    path = pathlib.Path(directory)
    state = json.loads((path / "rig.json").read_text())
    pids = [state.get("proxy_pid")] + [n["pid"] for n in state["nodes"].values()]
    for pid in filter(None, pids):
        try:
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    if state.get("postgres"):
        subprocess.run([str(THROWAWAY_PG), "stop", str(path / "postgres")], check=False)
    print(f"stopped the rig in {path}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start a rig and keep it up until Ctrl-C")
    up.add_argument("--nodes", type=int, default=3)
    up.add_argument("--single", action="store_true", help="one `hearth serve --data` node (no PostgreSQL)")
    up.add_argument("--dir", help="directory for the rig (default: a new temporary one)")
    stop = sub.add_parser("down", help="stop a rig left running in DIR")
    stop.add_argument("dir")
    args = parser.parse_args(argv)
    if args.command == "down":
        return down(args.dir)
    # Ctrl-C and SIGTERM both stop the rig cleanly (SIGINT too when started in the background).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    rig = Rig(nodes=args.nodes, single=args.single, directory=args.dir)
    rig.keep = rig.keep or bool(args.dir)  # a directory you named is yours
    try:
        with rig:
            print(rig.describe(), flush=True)
            signal.pause()
    except KeyboardInterrupt:
        pass


def _interrupt(*_):
    raise KeyboardInterrupt


if __name__ == "__main__":
    try:
        main()
    except RigError as error:
        sys.exit(f"rig: {error}")
