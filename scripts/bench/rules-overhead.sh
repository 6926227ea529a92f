#!/usr/bin/env bash
# REST write throughput with rules evaluated (a user's ID token) versus bypassed (the admin secret),
# same server, same wrk settings. Usage: scripts/bench/rules-overhead.sh [HEARTH_BIN]
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=${1:-$HERE/../../.build/release/hearth}
DURATION=${DURATION:-10s}
DATA=$(mktemp -d)
PORT=9482
SECRET=benchsecret
HEARTH_ADMIN_SECRET=$SECRET "$BIN" serve --port "$PORT" --data "$DATA" --log-level warning > "$DATA/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true; rm -rf "$DATA"' EXIT
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/.json?auth=$SECRET" > /dev/null && break; sleep 0.1; done
# A Posts-style rule set: a .write on the user's own location and two .validate rules.
curl -sf -X PUT -H "Authorization: Bearer $SECRET" "http://127.0.0.1:$PORT/.settings/rules.json" -d '{
  "rules": {"bench": {"$uid": {"items": {
    ".write": "$uid === auth.uid",
    "$item": {".validate": "newData.hasChildren([\"title\", \"n\"]) && newData.child(\"title\").isString()",
              "n": {".validate": "newData.isNumber() && newData.val() >= 0"}}}}}}}' > /dev/null
TOKEN=$("$BIN" token --uid bench --expires-in 3600 --data "$DATA")
run() { # label auth-header path
    wrk -t2 -c64 -d3s -H "Authorization: Bearer $2" -s "$HERE/create.lua" "http://127.0.0.1:$PORT$3" > /dev/null
    wrk -t2 -c64 -d"$DURATION" -H "Authorization: Bearer $2" -s "$HERE/create.lua" "http://127.0.0.1:$PORT$3" > "$DATA/$1.txt"
    grep -q "HARNESS non2xx=0 " "$DATA/$1.txt" || { echo "error: $1 had non-2xx answers: $(grep HARNESS "$DATA/$1.txt")"; exit 1; }
    awk '/^Requests\/sec:/{print $2}' "$DATA/$1.txt"
}
# Alternate the order over the rounds (the database grows as it runs) and report medians.
ROUNDS="${ROUNDS:-5}"
OFFS=(); ONS=()
for round in $(seq 1 "$ROUNDS"); do
    if (( round % 2 == 1 )); then
        OFFS+=("$(run rules-off "$SECRET" /bench/admin/items.json)"); ONS+=("$(run rules-on "$TOKEN" /bench/bench/items.json)")
    else
        ONS+=("$(run rules-on "$TOKEN" /bench/bench/items.json)"); OFFS+=("$(run rules-off "$SECRET" /bench/admin/items.json)")
    fi
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
OFF=$(median "${OFFS[@]}")
ON=$(median "${ONS[@]}")
echo "| rules | creates/s (median of $ROUNDS, alternating) | rounds |"
echo "| --- | ---: | --- |"
echo "| bypassed (admin) | $OFF | ${OFFS[*]} |"
echo "| evaluated (user token: .write + 2 .validate) | $ON | ${ONS[*]} |"
# Each round's two runs are neighbours in time (same database size): their ratio is the paired measure.
python3 - "${OFFS[*]}" "${ONS[*]}" <<'PY'
import statistics, sys
offs = [float(x) for x in sys.argv[1].split()]
ons = [float(x) for x in sys.argv[2].split()]
ratios = [on / off for on, off in zip(ons, offs)]
print("per-round rules on / rules off: " + ", ".join(f"{r:.2f}" for r in ratios))
print(f"rules on / rules off: median of rounds {statistics.median(ratios):.2f} (ratio of medians {statistics.median(ons) / statistics.median(offs):.2f})")
PY
