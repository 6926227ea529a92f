#!/usr/bin/env python3
"""kill -9 during `hearth import`: the database holds the old data or the new, never a mix.

Imports a small document into a fresh data directory, then repeatedly starts `hearth import` of a
larger document (a whole-database import: the bulk load that builds a new file and renames it over
the old one) and kills it with SIGKILL at a different moment each cycle, from process start to
twice the time a full import takes. After each kill it checks with `hearth export`:

  * the database is exactly the old document or exactly the new one;
  * after a kill before the rename, the next import still succeeds and removes the half-built file.

The test fails unless at least one kill landed while a new file was being built (a half-built file
was left), so it cannot pass without testing that case. Exit status 0 means pass, 1 a failure.
Environment: HEARTH_BIN (default <repo>/.build/debug/hearth).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("HEARTH_BIN", os.path.join(REPO, ".build", "debug", "hearth"))
CYCLES = 10


def hearth(*args):
    result = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        sys.exit("FAIL: hearth %s exited %d:\n%s%s" % (" ".join(args), result.returncode, result.stdout, result.stderr))
    return result.stdout


def export(data):
    return json.loads(hearth("export", "--data", data))


def leftovers(data):
    return [name for name in os.listdir(os.path.join(data, "databases")) if ".import-" in name]


def main():
    if not os.access(BIN, os.X_OK):
        sys.exit("FAIL: no hearth binary at %s (build it or set HEARTH_BIN)" % BIN)
    root = tempfile.mkdtemp(prefix="hearth-import-kill9-")
    try:
        old_file = os.path.join(root, "old.json")
        new_file = os.path.join(root, "new.json")
        with open(old_file, "w") as f:
            json.dump({"old": {"a": 1, "b": "two"}, "shared": {"x": True}}, f)
        # Members deliberately out of key order; about 8 MB.
        users = {"u%06d" % i: {"name": "User %d" % i, "age": i % 90, "tags": {"t%d" % (i % 7): True}, "bio": "word " * 20}
                 for i in range(60000, 0, -1)}
        with open(new_file, "w") as f:
            json.dump({"users": users, "shared": {"y": False}}, f)
        expected_old = json.load(open(old_file))
        expected_new = json.load(open(new_file))

        data = os.path.join(root, "data")
        hearth("import", old_file, "--data", data)
        if export(data) != expected_old:
            sys.exit("FAIL: the first import did not store the old document")
        # Time a full import over the same old data (a copy), to spread the kills over it.
        timing = os.path.join(root, "timing")
        shutil.copytree(data, timing)
        start = time.monotonic()
        hearth("import", new_file, "--data", timing)
        duration = time.monotonic() - start
        print("a full import takes %.2f s" % duration)

        outcomes = {"old": 0, "new": 0}
        mid_build = 0
        for cycle in range(CYCLES):
            # From just after the start to twice the measured time (a killed run is often slower
            # than the timed one): the last kills find the import done or catch it near the rename.
            delay = duration * (0.05 + 1.95 * cycle / (CYCLES - 1))
            process = subprocess.Popen([BIN, "import", new_file, "--data", data], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(delay)
            finished = process.poll() is not None
            process.send_signal(signal.SIGKILL)
            process.wait()
            print("cycle %d: kill at %.2f s%s" % (cycle, delay, " (the import had finished)" if finished else ""))
            if leftovers(data):
                mid_build += 1
            stored = export(data)
            if stored == expected_old:
                outcomes["old"] += 1
            elif stored == expected_new:
                outcomes["new"] += 1
                hearth("import", old_file, "--data", data)
                if export(data) != expected_old or leftovers(data):
                    sys.exit("FAIL: re-importing the old document after cycle %d did not restore it cleanly" % cycle)
            else:
                sys.exit("FAIL: after a kill at %.2f s the database is neither the old nor the new document" % delay)
        # A kill before the rename leaves a half-built file; the next import removes it and succeeds.
        hearth("import", new_file, "--data", data)
        if export(data) != expected_new or leftovers(data):
            sys.exit("FAIL: an import after the kills did not store the new document cleanly")
        print("kills: %d left the old data, %d the new; %d landed mid-build" % (outcomes["old"], outcomes["new"], mid_build))
        if mid_build == 0:
            sys.exit("FAIL: no kill landed while the new file was being built; the test proved nothing")
        print("PASS")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
