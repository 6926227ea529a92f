#!/usr/bin/env bash
# Builds nothing: runs the README's Swift SDK example (Examples/QuickStart, `hearth-quickstart`) against a
# fresh `hearth serve --emulator --in-memory` and checks what it printed, then the Profiles terminal client
# (profiles-cli.sh, on its own server), then the reference apps' rules scenarios (app-rules.sh). Exits
# non-zero on failure.
#
#   Tests/Examples/run.sh          (binaries: $HEARTH_BIN, $QUICKSTART_BIN, $PROFILES_BIN and $FIREBASE_PORT_BIN, default .build/debug/…)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
hearth="${HEARTH_BIN:-$repo/.build/debug/hearth}"
quickstart="${QUICKSTART_BIN:-$repo/.build/debug/hearth-quickstart}"
for binary in "$hearth" "$quickstart"; do
    [[ -x "$binary" ]] || { echo "FAIL: $binary is missing: run 'swift build' first" >&2; exit 1; }
done

source "$repo/Tests/Examples/lib.sh"
port=$(free_port)
log=$(mktemp)
"$hearth" serve --emulator --in-memory --port "$port" >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -f "$log"' EXIT

wait_for_server "http://127.0.0.1:$port/.json?ns=quickstart&shallow=true" "$server" "$log"

output=$(timeout 60 "$quickstart" "http://127.0.0.1:$port?ns=quickstart") || {
    echo "FAIL: hearth-quickstart exited with $?:"; echo "$output"; exit 1
}
echo "$output"
expect() {
    grep -qE "$1" <<<"$output" || { echo "FAIL: expected a line matching: $1"; exit 1; }
}
expect '^added   -[A-Za-z0-9_-]{19}: \{likes: 0, text: hello\}$'
expect '^changed -[A-Za-z0-9_-]{19}: \{likes: 0, text: hello, world\}$'
expect '^like committed: true, likes now 1$'
expect '^stored  -[A-Za-z0-9_-]{19}: \{likes: 1, text: hello, world\}$'
# The server holds what the example wrote.
stored=$(curl -sf "http://127.0.0.1:$port/messages.json?ns=quickstart")
python3 -c 'import json, sys; [m] = json.loads(sys.argv[1]).values(); assert m == {"likes": 1, "text": "hello, world"}, m' "$stored" \
    || { echo "FAIL: the server holds $stored"; exit 1; }
echo "quickstart: 1 passed, 0 failed"

# The Profiles terminal client: its own server and checks (it reads $HEARTH_BIN and $PROFILES_BIN too).
"$repo/Tests/Examples/profiles-cli.sh"

# The reference apps' rules: `hearth rules test` and `hearth storage rules test` on their scenario files.
"$repo/Tests/Examples/app-rules.sh"

# hearth import/export --url against a running server.
"$repo/Tests/Examples/import-export-url.sh"

# A port, end to end: the Timeline app's Firebase-era Swift core against a live server.
"$repo/Tests/Examples/firebase-port.sh"
