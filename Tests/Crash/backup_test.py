#!/usr/bin/env python3
"""Online backup and restore, end to end, with the real binary.

Starts `hearth serve` on a fresh data directory with a user and a stored file, runs concurrent
writers (single writes and two-place multi-path updates), takes `hearth backup` of the running server
in the middle of the load (twice, through scripts/backup-rotate.sh, the documented recipe for
continuous backups, keeping one), stops the load and the server, `hearth restore`s the newest backup
into a new directory, serves it and checks:

  * every write acknowledged before the backup began is there with its value;
  * no multi-path update is torn (both places or neither);
  * nothing is there that was never written;
  * the user signs in with their password and the stored file reads back byte for byte;
  * restore refuses a directory a running server holds, and needs --replace over data.

Exit status 0 means pass, 1 a failure. Environment: HEARTH_BIN (default <repo>/.build/debug/hearth).
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

SECRET = "backup-secret"
HOST = "127.0.0.1"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("HEARTH_BIN", os.path.join(REPO, ".build", "debug", "hearth"))


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def serve(data, log_path):
    port = free_port()
    env = dict(os.environ, HEARTH_ADMIN_SECRET=SECRET)
    log = open(log_path, "wb")
    proc = subprocess.Popen([BIN, "serve", "--host", HOST, "--port", str(port), "--data", data],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    log.close()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        with open(log_path, "rb") as f:
            if b"listening on http://" in f.read():
                return proc, "http://%s:%d" % (HOST, port)
        if proc.poll() is not None:
            sys.exit("FAIL: the server exited early; log:\n" + open(log_path).read()[-3000:])
        time.sleep(0.05)
    proc.kill()
    sys.exit("FAIL: the server did not start")


def call(method, url, body=None, headers=None, raw=False):
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    kind = {} if isinstance(body, (bytes, type(None))) else {"Content-Type": "application/json"}
    request = urllib.request.Request(url, data=data, method=method, headers={"Authorization": "Bearer " + SECRET, **kind, **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            payload = response.read()
            return response.status, payload if raw else (json.loads(payload) if payload else None)
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def hearth(*args, expect=0):
    result = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=300)
    if result.returncode != expect:
        sys.exit("FAIL: hearth %s exited %d (expected %d):\n%s%s" % (" ".join(args), result.returncode, expect, result.stdout, result.stderr))
    return result


def main():
    failures = []
    root = tempfile.mkdtemp(prefix="hearth-backup-")
    data, backups = os.path.join(root, "data"), os.path.join(root, "backups")
    proc, base = serve(data, os.path.join(root, "server.log"))
    try:
        # A user and a stored file.
        identity = base + "/identitytoolkit.googleapis.com/v1"
        status, user = call("POST", identity + "/accounts:signUp?key=k", {"email": "ada@example.com", "password": "analytical-1843", "returnSecureToken": True})
        assert status == 200, user
        blob = os.urandom(300_000)
        status, _ = call("POST", base + "/upload/storage/v1/b/hearth.appspot.com/o?uploadType=media&name=notes/engine.bin", blob,
                         {"Content-Type": "application/octet-stream"})
        assert status == 200, status

        acked, lock = {}, threading.Lock()
        stop = threading.Event()

        def writer(number):
            sequence = 0
            while not stop.is_set():
                sequence += 1
                key = "w%d-%d" % (number, sequence)
                if sequence % 2:
                    status, _ = call("PUT", base + "/single/%s.json?ns=live" % key, sequence)
                else:
                    status, _ = call("PATCH", base + "/.json?ns=live", {"left/" + key: sequence, "right/" + key: sequence})
                if status == 200:
                    with lock:
                        acked[key] = (sequence, time.monotonic())

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        time.sleep(1.5)
        # Two backups of the running server through the rotation script, keeping the newest one.
        started = time.monotonic()
        env = dict(os.environ, HEARTH_BIN=BIN)
        for _ in range(2):
            result = subprocess.run([os.path.join(REPO, "scripts", "backup-rotate.sh"), "--data", data, "--keep", "1", backups],
                                    capture_output=True, text=True, env=env, timeout=300)
            if result.returncode != 0:
                sys.exit("FAIL: backup-rotate.sh: %s%s" % (result.stdout, result.stderr))
            newest_started = started
            started = time.monotonic()
        time.sleep(0.5)
        stop.set()
        for thread in threads:
            thread.join()
        kept = sorted(os.listdir(backups))
        if len(kept) != 1:
            failures.append("the rotation kept %s, expected one backup" % kept)
        backup = os.path.join(backups, kept[-1])
        before = {key: value for key, (value, at) in acked.items() if at < newest_started}
        print("acknowledged writes: %d in all, %d before the kept backup began" % (len(acked), len(before)))
        if len(before) < 20:
            failures.append("too few writes before the backup (%d): the test could not fail" % len(before))

        # Restore refuses the running server's directory.
        refused = hearth("restore", backup, "--data", data, "--replace", expect=1)
        if "stop it first" not in refused.stderr:
            failures.append("restore over a running server: %s" % refused.stderr.strip())
    finally:
        proc.terminate()
        proc.wait(timeout=60)

    restored = os.path.join(root, "restored")
    hearth("restore", backup, "--data", restored)
    proc, base = serve(restored, os.path.join(root, "restored.log"))
    try:
        status, tree = call("GET", base + "/.json?ns=live")
        assert status == 200, tree
        single, left, right = tree.get("single", {}), tree.get("left", {}), tree.get("right", {})
        for key, value in before.items():
            where = single if int(key.split("-")[1]) % 2 else left
            if where.get(key) != value:
                failures.append("acknowledged before the backup, missing or wrong: %s = %r" % (key, where.get(key)))
        if left != right:
            failures.append("torn multi-path updates: %d keys differ" % len(set(left.items()) ^ set(right.items())))
        # Writes in flight during the backup may be there or not, but only as they were sent.
        for key, value in list(single.items()) + list(left.items()):
            writer_number, _, sequence = key[1:].partition("-")
            if not (key.startswith("w") and writer_number.isdigit() and sequence.isdigit() and int(sequence) == value):
                failures.append("never written: %s = %r" % (key, value))
        status, signed_in = call("POST", base + "/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword?key=k",
                                 {"email": "ada@example.com", "password": "analytical-1843", "returnSecureToken": True})
        if status != 200:
            failures.append("the user cannot sign in after the restore: %s" % signed_in)
        status, body = call("GET", base + "/storage/v1/b/hearth.appspot.com/o/notes%2Fengine.bin?alt=media", raw=True)
        if status != 200 or body != blob:
            failures.append("the stored file did not come back (status %s, %d bytes)" % (status, len(body or b"")))
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    needs_replace = hearth("restore", backup, "--data", restored, expect=1)
    if "--replace" not in needs_replace.stderr:
        failures.append("restore over data without --replace: %s" % needs_replace.stderr.strip())

    if failures:
        print("FAIL:\n  " + "\n  ".join(failures[:20]))
        print("(kept %s)" % root)
        return 1
    shutil.rmtree(root, ignore_errors=True)
    print("PASS: online backup and restore")
    return 0


if __name__ == "__main__":
    sys.exit(main())
