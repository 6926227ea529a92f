#!/usr/bin/env bash
# Runs every Hearth benchmark on this machine in one go, with a release build, and writes the results
# to bench-results/all-<timestamp>.md (gitignored). docs/benchmarks.md records the figures and this command.
#
#   scripts/bench/run-all.sh
#
# 1. REST writes and reads, Hearth vs PocketBase side by side (compare-rest.sh: wrk -t2 -c64).
# 2. SSE fan-out: 1,000 listeners on one path, 100 durable writes/s (hearth bench sse).
# 3. Import of a 100 MB JSON file, then restart with that data (hearth bench import).
# 4. Rules evaluation: time per write check with a Posts-style rules file (hearth bench rules), and
#    REST writes with rules evaluated versus bypassed (rules-overhead.sh).
# 5. WebSockets: idle connections' memory, fan-out, write-to-listener latency (websocket.sh).
# 6. Files: uploads and downloads beside PocketBase, one large upload against the disk (files.sh).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$ROOT"

echo "== Building hearth (release)"
swift build -c release --product hearth
BIN="$ROOT/.build/release/hearth"
OUT_DIR="$ROOT/bench-results"
mkdir -p "$OUT_DIR"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT="$OUT_DIR/all-$STAMP.md"
echo "# Hearth benchmarks ($STAMP)" > "$REPORT"

echo "== 1/6 REST: Hearth vs PocketBase"
OUT_DIR="$OUT_DIR" ROUNDS="${ROUNDS:-3}" "$HERE/compare-rest.sh" "$BIN" | tee -a "$REPORT"

echo "== 2/6 SSE fan-out"
DATA=$(mktemp -d)
PORT=9481
HEARTH_ADMIN_SECRET=benchsecret "$BIN" serve --port "$PORT" --data "$DATA" --log-level warning > "$DATA/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$DATA"' EXIT
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/.json?auth=benchsecret" > /dev/null && break; sleep 0.1; done
{
    echo
    echo '```'
    "$BIN" bench sse --url "http://127.0.0.1:$PORT" --secret benchsecret --listeners 1000 --rate 100 --seconds 10
    echo '```'
} | tee -a "$REPORT"
kill "$SERVER"; wait "$SERVER" 2>/dev/null || true

echo "== 3/6 Import and restart"
{
    echo
    echo '```'
    "$BIN" bench import --size-mb 100
    echo '```'
} | tee -a "$REPORT"

echo "== 4/6 Rules evaluation"
{
    echo
    echo '```'
    "$BIN" bench rules
    echo '```'
    echo
    "$HERE/rules-overhead.sh" "$BIN"
} | tee -a "$REPORT"

echo "== 5/6 WebSockets"
{
    echo
    echo '```'
    "$HERE/websocket.sh" "$BIN"
    echo '```'
} | tee -a "$REPORT"

echo "== 6/6 Files"
{
    echo
    echo '```'
    "$HERE/files.sh" "$BIN"
    echo '```'
} | tee -a "$REPORT"

echo
echo "Report: $REPORT"
