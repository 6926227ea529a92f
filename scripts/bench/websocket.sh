#!/usr/bin/env bash
# WebSocket benchmarks against a release build of hearth serve (default mode, SQLite on disk):
#   1. idle connections: server memory per connection (RSS growth / N), each with one listen;
#   2. fan-out: event deliveries per second to 1,000 listeners of one location;
#   3. latency: 1,000 durable writes/s, 10 listeners each, write-to-listener percentiles.
#
#   scripts/bench/websocket.sh [path/to/hearth]        (CONNECTIONS=19000 by default)
#
# The load generator (hearth bench) runs on the same machine; connections come from 127.0.0.1-4.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN="${1:-$ROOT/.build/release/hearth}"
CONNECTIONS="${CONNECTIONS:-19000}"
[[ -x "$BIN" ]] || { echo "error: $BIN not found; run swift build -c release first" >&2; exit 1; }

run_server() {
    DATA=$(mktemp -d)
    PORT=$1
    # A low soft limit, as on many systems: the server raises it to the hard limit itself and says so.
    (ulimit -Sn 1024; exec env HEARTH_ADMIN_SECRET=benchsecret "$BIN" serve --port "$PORT" --data "$DATA" > "$DATA/server.log" 2>&1) &
    SERVER=$!
    for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/.json?auth=benchsecret&ns=bench" > /dev/null && break; sleep 0.1; done
    grep -h "open-file limit" "$DATA/server.log" || true
}
stop_server() { kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; rm -rf "$DATA"; }
trap 'stop_server' EXIT

echo "== 1/3 idle connections ($CONNECTIONS)"
run_server 9491
"$BIN" bench ws-idle --port 9491 --secret benchsecret --connections "$CONNECTIONS" --server-pid "$SERVER"
stop_server

echo "== 2/3 fan-out (1,000 listeners)"
run_server 9492
"$BIN" bench ws-fanout --port 9492 --secret benchsecret --listeners 1000 --writes 500
stop_server

echo "== 3/3 latency (1,000 writes/s, 10 listeners)"
run_server 9493
"$BIN" bench ws-latency --port 9493 --secret benchsecret --listeners 10 --rate 1000 --seconds 10
stop_server
