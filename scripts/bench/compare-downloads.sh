#!/usr/bin/env bash
# Two builds of hearth serve and the ceiling (`hearth bench ceiling`: the same bytes from memory) on
# downloads, side by side: all three run at once and take turns, `wrk -t2 -c$CONN -d$DURATION` GETs of
# one object of each size. Prints each run's requests/s and the server's and the client's (wrk's) CPU per
# download (user + system, /proc/<pid>/stat and time(1)): on loopback the client shares the cores, so
# work moved between them shows here, not in the rate.
#
#   scripts/bench/compare-downloads.sh A/hearth B/hearth        (SIZES="64 1024" ROUNDS=3 DURATION=3s CONN=16)
#
# Needs wrk and curl. Each server gets a fresh data directory, removed at the end.
set -euo pipefail
A="${1:?usage: compare-downloads.sh A/hearth B/hearth}"
B="${2:?usage: compare-downloads.sh A/hearth B/hearth}"
SIZES="${SIZES:-64 1024}"; ROUNDS="${ROUNDS:-3}"; DURATION="${DURATION:-3s}"; CONN="${CONN:-16}"
for bin in "$A" "$B"; do [[ -x "$bin" ]] || { echo "error: $bin not found; build it with swift build -c release" >&2; exit 1; }; done
command -v wrk >/dev/null || { echo "error: wrk is missing; install it with apt-get install wrk" >&2; exit 1; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/../../Tests/Examples/lib.sh"
TMP=$(mktemp -d /tmp/hearth-compare-downloads.XXXXXX)
declare -A PID PORT
cleanup() {
    for label in A B C; do [[ -n ${PID[$label]:-} ]] && kill "${PID[$label]}" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
for label in A B; do
    bin=$A; [[ $label == B ]] && bin=$B
    PORT[$label]=$(free_port)
    HEARTH_ADMIN_SECRET=benchsecret "$bin" serve --host 127.0.0.1 --port "${PORT[$label]}" --data "$TMP/data-$label" --log-level warning >"$TMP/$label.log" 2>&1 &
    PID[$label]=$!
    wait_for_server "http://127.0.0.1:${PORT[$label]}/.json?shallow=true" "${PID[$label]}" "$TMP/$label.log" -H "Authorization: Bearer benchsecret"
done
PORT[C]=$(free_port)
"$A" bench ceiling --port "${PORT[C]}" >"$TMP/C.log" 2>&1 &
PID[C]=$!
for _ in $(seq 1 100); do grep -q "listening" "$TMP/C.log" && break; sleep 0.1; done
for size in $SIZES; do
    head -c $((size * 1024)) /dev/urandom >"$TMP/o$size"
    for label in A B; do
        curl -sf -o /dev/null -H "Authorization: Bearer benchsecret" -H "Content-Type: application/octet-stream" \
            --data-binary @"$TMP/o$size" "http://127.0.0.1:${PORT[$label]}/v0/b/hearth.appspot.com/o?name=o$size"
    done
done
printf 'wrk.headers["Authorization"] = "Bearer benchsecret"\n' >"$TMP/auth.lua"
TICKS=$(getconf CLK_TCK)
echo "| round | KiB | server | requests/s | server CPU a download | client CPU a download |"
echo "| --- | --- | --- | --- | --- | --- |"
for round in $(seq 1 "$ROUNDS"); do
    for size in $SIZES; do
        for label in A B C; do
            url="http://127.0.0.1:${PORT[$label]}/v0/b/hearth.appspot.com/o/o$size?alt=media"
            [[ $label == C ]] && url="http://127.0.0.1:${PORT[C]}/blob/$size"
            before=$(awk '{print $14 + $15}' "/proc/${PID[$label]}/stat")
            out=$(/usr/bin/time -f "CLIENT-CPU %U %S" wrk -t2 -c"$CONN" -d"$DURATION" -s "$TMP/auth.lua" "$url" 2>&1)
            after=$(awk '{print $14 + $15}' "/proc/${PID[$label]}/stat")
            grep -q "Non-2xx" <<<"$out" && { echo "error: $label answered errors: $out" >&2; exit 1; }
            requests=$(awk '/ requests in /{print $1}' <<<"$out")
            rate=$(awk '/Requests\/sec/{print $2}' <<<"$out")
            client=$(awk -v n="$requests" '/CLIENT-CPU/{printf "%.1f", ($2 + $3) * 1e6 / n}' <<<"$out")
            server=$(awk -v t="$((after - before))" -v k="$TICKS" -v n="$requests" 'BEGIN{printf "%.1f", t * 1e6 / k / n}')
            name=$A; [[ $label == B ]] && name=$B; [[ $label == C ]] && name=ceiling
            echo "| $round | $size | $label ($name) | $rate | $server µs | $client µs |"
        done
    done
done
