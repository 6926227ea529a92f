#!/usr/bin/env python3
"""kill -9 durability test for hearth's users (the Authentication API).

Starts `hearth serve` (default mode, production scrypt cost) on a fresh data directory, runs
concurrent clients that sign up with email and password, change their passwords and display names,
kills the server with SIGKILL while requests are in flight, restarts it on the same data directory
and checks:

  * every acknowledged sign-up (HTTP 200) exists with its uid and signs in with its password;
  * every acknowledged password change holds: the new password signs in, the one before it does not;
  * every acknowledged display-name change is what lookup shows;
  * the latest acknowledged refresh token of every account still refreshes;
  * requests in flight at the kill took effect entirely or not at all (a sign-up is absent or signs
    in; a password change left the old or the new password, exactly one of them working);
  * the number of users is between the acknowledged and the acknowledged plus in-flight sign-ups.

The cycle repeats (default 2 times) on accumulated state. Exit status 0 means pass, 1 a failure or
too few acknowledged operations (the test must be able to fail), 2 a setup problem.
Only 127.0.0.1 is contacted. Environment: HEARTH_BIN (default <repo>/.build/debug/hearth).
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kill9_test import DEFAULT_BIN, HOST, SECRET, Server  # noqa: E402

PROJECT = "crash-users"
KEY = "crash-key"
V1 = "/identitytoolkit.googleapis.com/v1/"
# The per-address limits are for the internet: here every client is 127.0.0.1.
SERVE_ARGS = ["--project", PROJECT, "--sign-ups-per-address", "0", "--failed-sign-ins-per-address", "0"]


def call(conn, path, body, admin=False):
    headers = {"Content-Type": "application/json"}
    if admin:
        headers["Authorization"] = "Bearer " + SECRET
    else:
        path += ("&" if "?" in path else "?") + "key=" + KEY
    conn.request("POST", path, body=json.dumps(body).encode(), headers=headers)
    resp = conn.getresponse()
    payload = resp.read()
    try:
        return resp.status, json.loads(payload.decode() or "null")
    except ValueError:
        return resp.status, {"raw": payload[:200].decode("utf-8", "replace")}


class Account:
    """One account as the clients know it: what the server acknowledged, and what is in doubt."""

    def __init__(self, email, password):
        self.email = email
        self.uid = None
        self.password = password          # the last acknowledged password
        self.old_passwords = []           # passwords acknowledged as replaced
        self.pending_password = None      # a change in flight at the kill
        self.display_name = None          # the last acknowledged display name
        self.pending_name = None
        self.id_token = None
        self.refresh_token = None
        self.created = False              # sign-up acknowledged
        self.creation_unknown = False     # sign-up in flight at the kill


class Ledger:
    def __init__(self):
        self.lock = threading.Lock()
        self.accounts = []
        self.errors_before_kill = []
        self.counts = {"signup": 0, "password": 0, "name": 0}


class Client(threading.Thread):
    def __init__(self, idx, cycle, port, ledger, kill_started, deadline):
        super().__init__(name="client-%d" % idx, daemon=True)
        self.idx, self.cycle, self.port, self.ledger = idx, cycle, port, ledger
        self.kill_started, self.deadline = kill_started, deadline
        self.rng = random.Random("%d-%d" % (cycle, idx))
        self.mine = []
        self.seq = 0

    def run(self):
        conn = None
        while not self.kill_started.is_set() and time.monotonic() < self.deadline:
            if conn is None:
                conn = http.client.HTTPConnection(HOST, self.port, timeout=30)
            ready = [a for a in self.mine if a.created]
            roll = self.rng.random()
            try:
                if not ready or roll < 0.5:
                    self.sign_up(conn)
                elif roll < 0.8:
                    self.change_password(conn, self.rng.choice(ready))
                else:
                    self.change_name(conn, self.rng.choice(ready))
            except (OSError, http.client.HTTPException) as e:
                if conn is not None:
                    conn.close()
                conn = None
                if not self.kill_started.is_set():
                    with self.ledger.lock:
                        self.ledger.errors_before_kill.append("connection error: %s: %s" % (type(e).__name__, e))
                break
        if conn is not None:
            conn.close()

    def failed(self, what, status, body):
        if not self.kill_started.is_set():
            with self.ledger.lock:
                self.ledger.errors_before_kill.append("%s -> HTTP %d %s" % (what, status, json.dumps(body)[:200]))

    def sign_up(self, conn):
        self.seq += 1
        account = Account("c%d-t%d-%d@example.com" % (self.cycle, self.idx, self.seq), "pw-%08x" % self.rng.getrandbits(32))
        account.creation_unknown = True
        self.mine.append(account)
        with self.ledger.lock:
            self.ledger.accounts.append(account)
        status, body = call(conn, V1 + "accounts:signUp",
                            {"email": account.email, "password": account.password, "returnSecureToken": True})
        if status == 200:
            account.uid, account.id_token, account.refresh_token = body["localId"], body["idToken"], body["refreshToken"]
            account.created, account.creation_unknown = True, False
            with self.ledger.lock:
                self.ledger.counts["signup"] += 1
        else:
            account.creation_unknown = False
            self.failed("sign-up " + account.email, status, body)

    def change_password(self, conn, account):
        new = "pw-%08x" % self.rng.getrandbits(32)
        account.pending_password = new
        status, body = call(conn, V1 + "accounts:update", {"idToken": account.id_token, "password": new, "returnSecureToken": True})
        if status == 200:
            account.old_passwords.append(account.password)
            account.password, account.pending_password = new, None
            account.id_token, account.refresh_token = body["idToken"], body["refreshToken"]
            with self.ledger.lock:
                self.ledger.counts["password"] += 1
        else:
            account.pending_password = None
            self.failed("password change " + account.email, status, body)

    def change_name(self, conn, account):
        name = "Name %08x" % self.rng.getrandbits(32)
        account.pending_name = name
        status, body = call(conn, V1 + "accounts:update", {"idToken": account.id_token, "displayName": name})
        if status == 200:
            account.display_name, account.pending_name = name, None
            with self.ledger.lock:
                self.ledger.counts["name"] += 1
        else:
            account.pending_name = None
            self.failed("name change " + account.email, status, body)


def signs_in(port, email, password):
    """The uid when the password signs in, None when it is refused."""
    body = sign_in(port, email, password)
    return body["localId"] if body else None


def sign_in(port, email, password):
    """The sign-in response when the password signs in, None when it is refused."""
    conn = http.client.HTTPConnection(HOST, port, timeout=60)
    try:
        status, body = call(conn, V1 + "accounts:signInWithPassword", {"email": email, "password": password, "returnSecureToken": True})
    finally:
        conn.close()
    if status == 200:
        return body
    message = (body.get("error") or {}).get("message", "")
    if status == 400 and message in ("INVALID_LOGIN_CREDENTIALS", "INVALID_PASSWORD", "EMAIL_NOT_FOUND"):
        return None
    raise RuntimeError("sign-in of %s: HTTP %d %s" % (email, status, json.dumps(body)[:200]))


def check(port, account):
    """The problems with one account after a restart (empty when it is as acknowledged)."""
    problems = []
    if not account.created:
        if not account.creation_unknown:
            if signs_in(port, account.email, account.password):
                problems.append("REFUSED sign-up %s exists" % account.email)
            return problems
        return []  # in flight at the kill: present (and signing in) or absent are both right; see settle
    works_now = signs_in(port, account.email, account.password)
    pending_works = signs_in(port, account.email, account.pending_password) if account.pending_password else None
    if works_now is None and pending_works is None:
        problems.append("LOST account or password: %s does not sign in with its acknowledged password" % account.email)
    elif (works_now or pending_works) != account.uid:
        problems.append("WRONG uid for %s: %s, want %s" % (account.email, works_now or pending_works, account.uid))
    if works_now and pending_works:
        problems.append("BOTH the old and the in-flight password of %s sign in" % account.email)
    if account.old_passwords and signs_in(port, account.email, account.old_passwords[-1]):
        problems.append("LOST password change: %s still signs in with its replaced password" % account.email)
    conn = http.client.HTTPConnection(HOST, port, timeout=60)
    try:
        status, body = call(conn, V1 + "projects/%s/accounts:lookup" % PROJECT, {"localId": [account.uid]}, admin=True)
        users = body.get("users") or [] if status == 200 else []
        name = users[0].get("displayName") if users else None
        if status != 200 or not users:
            problems.append("lookup of %s: HTTP %d %s" % (account.uid, status, json.dumps(body)[:200]))
        elif name != account.display_name and not (account.pending_name and name == account.pending_name):
            problems.append("WRONG display name of %s: %r, want %r" % (account.email, name, account.display_name))
        # The newest acknowledged refresh token survives, unless a password change in flight replaced it.
        if not account.pending_password:
            status, body = call(conn, "/securetoken.googleapis.com/v1/token", {"grant_type": "refresh_token", "refresh_token": account.refresh_token})
            if status != 200:
                problems.append("LOST refresh token of %s: HTTP %d %s" % (account.email, status, json.dumps(body)[:200]))
    finally:
        conn.close()
    return problems


def settle(port, account):
    """After the checks, learns how the operations in flight at the kill ended, so the next cycle
    starts from what is stored. Returns False for a sign-up that did not happen."""
    if account.creation_unknown:
        account.creation_unknown = False
        body = sign_in(port, account.email, account.password)
        if not body:
            return False
        account.created, account.uid = True, body["localId"]
        account.id_token, account.refresh_token = body["idToken"], body["refreshToken"]
    if account.pending_password:
        body = sign_in(port, account.email, account.pending_password)
        if body:
            account.old_passwords.append(account.password)
            account.password = account.pending_password
            account.id_token, account.refresh_token = body["idToken"], body["refreshToken"]
        account.pending_password = None
    if account.pending_name:
        conn = http.client.HTTPConnection(HOST, port, timeout=60)
        try:
            status, body = call(conn, V1 + "projects/%s/accounts:lookup" % PROJECT, {"localId": [account.uid]}, admin=True)
        finally:
            conn.close()
        account.display_name = ((body.get("users") or [{}])[0]).get("displayName")
        account.pending_name = None
    return account.created


def user_count(port):
    conn = http.client.HTTPConnection(HOST, port, timeout=60)
    try:
        status, body = call(conn, V1 + "projects/%s/accounts:query" % PROJECT, {"returnUserInfo": False}, admin=True)
    finally:
        conn.close()
    if status != 200:
        raise RuntimeError("accounts:query: HTTP %d %s" % (status, json.dumps(body)[:200]))
    return int(body["recordsCount"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("HEARTH_BIN", DEFAULT_BIN))
    ap.add_argument("--clients", type=int, default=8)
    # Each sign-up and password change is a production-cost scrypt hash (~45 ms of a core), so a few
    # dozen per cycle is what a busy 2-core machine manages.
    ap.add_argument("--load-seconds", type=float, default=8.0)
    ap.add_argument("--cycles", type=int, default=2)
    ap.add_argument("--min-acked", type=int, default=10, help="sign-ups per cycle; fewer is a failure")
    ap.add_argument("--max-load-seconds", type=float, default=120.0, help="the longest a cycle waits for --min-acked")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    if not (os.path.isfile(args.bin) and os.access(args.bin, os.X_OK)):
        print("SETUP ERROR: server binary %s not found or not executable (set HEARTH_BIN)" % args.bin)
        return 2
    root = tempfile.mkdtemp(prefix="hearth-users-kill9-")
    data_dir = os.path.join(root, "data")
    os.makedirs(data_dir)
    server = Server(args.bin, data_dir, root, extra_args=SERVE_ARGS)
    ledger = Ledger()
    failed = False
    rng = random.Random()
    print("users kill9: binary %s, data dir %s, %d clients, %.1f s load, %d cycles"
          % (args.bin, data_dir, args.clients, args.load_seconds, args.cycles))
    try:
        try:
            server.start()
        except RuntimeError as e:
            print("SETUP ERROR:", e)
            return 2
        for cycle in range(1, args.cycles + 1):
            before = dict(ledger.counts)
            kill_started = threading.Event()
            load = args.load_seconds + rng.uniform(0, 0.5)
            clients = [Client(i, cycle, server.port, ledger, kill_started, time.monotonic() + args.max_load_seconds + 30)
                       for i in range(args.clients)]
            for i, account in enumerate(ledger.accounts):
                clients[i % args.clients].mine.append(account)  # one client per account: its changes are ordered
            for c in clients:
                c.start()
            # Load for at least `load` seconds and until enough was acknowledged to mean something (on a
            # loaded machine the low-priority hashing threads get little CPU), at most max_load_seconds.
            started = time.monotonic()
            while True:
                time.sleep(0.1)
                elapsed = time.monotonic() - started
                with ledger.lock:
                    enough = (ledger.counts["signup"] - before["signup"] >= args.min_acked
                              and ledger.counts["password"] - before["password"] >= max(1, args.min_acked // 4))
                if (elapsed >= load and enough) or elapsed >= args.max_load_seconds:
                    break
            time.sleep(rng.uniform(0, 0.3))  # so the kill does not always follow an acknowledgement
            kill_started.set()
            server.kill9()
            for c in clients:
                c.join(timeout=60)
            if any(c.is_alive() for c in clients):
                print("FAIL: client threads did not finish")
                failed = True
                break
            done = {k: ledger.counts[k] - before[k] for k in ledger.counts}
            unknown = sum(1 for a in ledger.accounts if a.creation_unknown)
            print("cycle %d: acknowledged %d sign-ups, %d password changes, %d name changes; "
                  "in flight at the kill: %d sign-ups, %d password changes"
                  % (cycle, done["signup"], done["password"], done["name"], unknown,
                     sum(1 for a in ledger.accounts if a.pending_password)))
            server.start()
            with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
                problems = [p for found in pool.map(lambda a: check(server.port, a), list(ledger.accounts)) for p in found]
            acked = sum(1 for a in ledger.accounts if a.created)
            count = user_count(server.port)
            if not acked <= count <= acked + unknown:
                problems.append("user count %d outside [%d, %d]" % (count, acked, acked + unknown))
            print("cycle %d: restarted; checked %d accounts (%d acknowledged, %d in doubt), %d users stored"
                  % (cycle, len(ledger.accounts), acked, unknown, count))
            if problems:
                failed = True
                print("FAIL: %d problem(s):" % len(problems))
                for p in problems[:15]:
                    print("  " + p)
            if ledger.errors_before_kill:
                failed = True
                print("FAIL: %d request(s) failed before the kill, e.g.:" % len(ledger.errors_before_kill))
                for e in ledger.errors_before_kill[:5]:
                    print("  " + e)
            if done["signup"] < args.min_acked or done["password"] < max(1, args.min_acked // 4):
                failed = True
                print("FAIL: too few acknowledged operations in cycle %d (want >= %d sign-ups, >= %d password changes)"
                      % (cycle, args.min_acked, max(1, args.min_acked // 4)))
            # What was in doubt is settled now: the next cycle starts from what is stored.
            with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
                kept = list(pool.map(lambda a: settle(server.port, a), list(ledger.accounts)))
            ledger.accounts = [a for a, keep in zip(ledger.accounts, kept) if keep]
            if failed:
                break
    except Exception as e:  # noqa: BLE001 - any unexpected error is a failure
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
    print("SUMMARY: %s - %d sign-ups, %d password changes, %d name changes acknowledged, %d server start(s)"
          % ("FAIL" if failed else "PASS", ledger.counts["signup"], ledger.counts["password"], ledger.counts["name"], server.starts))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
