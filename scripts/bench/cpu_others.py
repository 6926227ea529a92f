#!/usr/bin/env python3
"""CPU used by other processes during a benchmark (to spot a contaminated run).

  cpu_others.py snapshot FILE          record utime+stime of every process
  cpu_others.py report FILE PID...     print "<total>s total: comm[pid] <s>, ..." for processes
                                       (other than PIDs and wrk/strace/...) that used >= 0.5 s
                                       CPU since the snapshot, or "none"
"""
import json
import os
import sys

HZ = os.sysconf("SC_CLK_TCK")


def sample() -> dict[str, list]:
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                s = f.read()
            comm = s[s.index("(") + 1 : s.rindex(")")]
            fields = s[s.rindex(")") + 2 :].split()
            # utime + stime + cutime + cstime: reaped children (short-lived test or
            # compiler processes) are charged to their still-running parent.
            out[pid] = [comm, sum(int(x) for x in fields[11:15])]
        except (OSError, ValueError, IndexError):
            pass
    return out


def main() -> int:
    cmd, path = sys.argv[1], sys.argv[2]
    if cmd == "snapshot":
        with open(path, "w") as f:
            json.dump(sample(), f)
        return 0
    ours = set(sys.argv[3:]) | {str(os.getpid()), str(os.getppid())}
    with open(path) as f:
        before = json.load(f)
    rows = []
    for pid, (comm, ticks) in sample().items():
        if pid in ours or comm in ("wrk", "strace", "python3", "curl", "timeout", "sleep"):
            continue
        used = (ticks - before.get(pid, [comm, 0])[1]) / HZ
        if used >= 0.5:
            rows.append((used, f"{comm}[{pid}] {used:.1f}s"))
    rows.sort(reverse=True)
    total = sum(u for u, _ in rows)
    print(f"{total:.1f}s total: " + ", ".join(r for _, r in rows[:6]) if rows else "none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
