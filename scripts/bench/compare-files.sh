#!/usr/bin/env bash
# Two builds of hearth serve on the files benchmark, alternating A and B in each round so both see the
# same machine: a fresh server in a new data directory each run, then B's `hearth bench files` (16
# clients, SECONDS_PER_RUN of uploads then downloads). Prints each run's upload and download rates, and
# the server's CPU time for the run (user + system from /proc/<pid>/stat).
#
#   scripts/bench/compare-files.sh A/hearth B/hearth        (ROUNDS=3 SIZE_KB=1024 SECONDS_PER_RUN=6)
#
# Leave a couple of minutes after deleting many files before a run (see files.sh): each run deletes
# its data directory, which this script waits PAUSE seconds [2] after.
set -euo pipefail
A="${1:?usage: compare-files.sh A/hearth B/hearth}"
B="${2:?usage: compare-files.sh A/hearth B/hearth}"
ROUNDS="${ROUNDS:-3}"; SIZE_KB="${SIZE_KB:-1024}"; RUN_SECONDS="${SECONDS_PER_RUN:-6}"; PAUSE="${PAUSE:-2}"
for bin in "$A" "$B"; do [[ -x "$bin" ]] || { echo "error: $bin not found; build it with swift build -c release" >&2; exit 1; }; done
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/../../Tests/Examples/lib.sh"
SERVER=""; DATA=""
stop_server() {
    [[ -n $SERVER ]] && { kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; }
    [[ -n $DATA ]] && rm -rf "$DATA"
    SERVER=""; DATA=""
}
trap stop_server EXIT
TICKS=$(getconf CLK_TCK)
for round in $(seq 1 "$ROUNDS"); do
    for label in A B; do
        if [[ $label == A ]]; then bin=$A; else bin=$B; fi
        DATA=$(mktemp -d /tmp/hearth-compare-files.XXXXXX)
        port=$(free_port)
        HEARTH_ADMIN_SECRET=benchsecret "$bin" serve --host 127.0.0.1 --port "$port" --data "$DATA/data" --log-level warning >"$DATA/server.log" 2>&1 &
        SERVER=$!
        wait_for_server "http://127.0.0.1:$port/.json?shallow=true" "$SERVER" "$DATA/server.log" -H "Authorization: Bearer benchsecret"
        before=$(awk '{print $14 + $15}' "/proc/$SERVER/stat")
        out=$("$B" bench files --url "http://127.0.0.1:$port" --secret benchsecret --size-kb "$SIZE_KB" --clients 16 --seconds "$RUN_SECONDS")
        after=$(awk '{print $14 + $15}' "/proc/$SERVER/stat")
        echo "round $round/$ROUNDS $label ($bin), ${SIZE_KB} KiB:"
        grep -E "upload:|download:" <<<"$out" | sed 's/^/  /'
        echo "  server CPU for the run: $(( (after - before) * 1000 / TICKS )) ms"
        stop_server
        sleep "$PAUSE"
    done
done
