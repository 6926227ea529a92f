#!/usr/bin/env bash
# Two builds of hearth serve side by side on the realtime paths: WebSocket fan-out, WebSocket
# write-to-listener latency and SSE write-to-delivery, alternating A and B in each round so both
# see the same machine. The load generator is B's `hearth bench` for both.
#
#   scripts/bench/compare-builds.sh A/hearth B/hearth        (ROUNDS=3 by default)
#
# For example, a change against main: build main's release binary in a git worktree, then
#   scripts/bench/compare-builds.sh ../main-worktree/.build/release/hearth .build/release/hearth
set -euo pipefail
A="${1:?usage: compare-builds.sh A/hearth B/hearth}"
B="${2:?usage: compare-builds.sh A/hearth B/hearth}"
ROUNDS="${ROUNDS:-3}"
for bin in "$A" "$B"; do [[ -x "$bin" ]] || { echo "error: $bin not found; build it with swift build -c release" >&2; exit 1; }; done

run_server() {
    DATA=$(mktemp -d)
    (exec env HEARTH_ADMIN_SECRET=benchsecret "$1" serve --port "$2" --data "$DATA" > "$DATA/server.log" 2>&1) &
    SERVER=$!
    for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$2/.json?auth=benchsecret&ns=bench" > /dev/null && break; sleep 0.1; done
}
stop_server() { kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; rm -rf "$DATA"; }
trap 'stop_server 2>/dev/null || true' EXIT

for round in $(seq 1 "$ROUNDS"); do
    for label in A B; do
        if [[ $label == A ]]; then bin=$A; else bin=$B; fi
        echo "== round $round/$ROUNDS, $label ($bin): ws-fanout"
        run_server "$bin" 9581; "$B" bench ws-fanout --port 9581 --secret benchsecret --listeners 1000 --writes 500 | tail -1; stop_server
        echo "== round $round/$ROUNDS, $label: ws-latency"
        run_server "$bin" 9582; "$B" bench ws-latency --port 9582 --secret benchsecret --listeners 10 --rate 1000 --seconds 10 | tail -1; stop_server
        echo "== round $round/$ROUNDS, $label: sse"
        run_server "$bin" 9583; "$B" bench sse --url http://127.0.0.1:9583 --secret benchsecret --listeners 1000 --rate 100 --seconds 10 | tail -2 | sed "s/.*write-to-delivery/  write-to-delivery/"; stop_server
    done
done
