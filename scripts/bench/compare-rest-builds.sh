#!/usr/bin/env bash
# Two builds of hearth serve on the REST benchmark of ceiling.sh (creates, then reads by id), side by
# side: both servers run at once and take turns in short slices (SLICE_SECONDS of `wrk -t2 -c64` each,
# A then B, SLICES times per operation), so both see the same mix of the host's fast and slow spells,
# and both trees grow alike. Prints each build's requests over all its slices, its server CPU per
# request (user + system from /proc/<pid>/stat), and B / A.
#
#   scripts/bench/compare-rest-builds.sh A/hearth B/hearth         (SLICES=12 SLICE_SECONDS=2)
#   B_ENV="GLIBC_TUNABLES=glibc.malloc.hugetlb=1" scripts/bench/compare-rest-builds.sh X/hearth X/hearth
#
# B_ENV: environment for B alone (one binary against itself with a setting). Run it in both orders:
# the server measured first in each turn can fare differently.
set -euo pipefail
A="${1:?usage: compare-rest-builds.sh A/hearth B/hearth}"
B="${2:?usage: compare-rest-builds.sh A/hearth B/hearth}"
SLICES="${SLICES:-12}"; SLICE_SECONDS="${SLICE_SECONDS:-2}"; B_ENV="${B_ENV:-}"
for bin in "$A" "$B"; do [[ -x "$bin" ]] || { echo "error: $bin not found; build it with swift build -c release --product hearth" >&2; exit 1; }; done
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/../../Tests/Examples/lib.sh"
SECRET=benchsecret
TMP=$(mktemp -d /tmp/hearth-compare-rest.XXXXXX)
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT

declare -A PORT PID
for label in A B; do
    PORT[$label]=$(free_port)
    bin=$A; settings=()
    if [[ $label == B ]]; then bin=$B; [[ -n $B_ENV ]] && read -ra settings <<<"$B_ENV"; fi
    env "${settings[@]}" HEARTH_ADMIN_SECRET=$SECRET "$bin" serve --host 127.0.0.1 --port "${PORT[$label]}" --data "$TMP/$label" \
        --log-level warning >"$TMP/$label.log" 2>&1 &
    PID[$label]=$!; PIDS+=("${PID[$label]}")
    wait_for_server "http://127.0.0.1:${PORT[$label]}/.json?shallow=true" "${PID[$label]}" "$TMP/$label.log" -H "Authorization: Bearer $SECRET"
    python3 "$HERE/seed.py" --port "${PORT[$label]}" --path /bench/items.json --count 1000 --id-field name \
        --header "Authorization: Bearer $SECRET" --out "$TMP/ids-$label.txt" >/dev/null
done
TICKS=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

declare -A REQUESTS TICKS_USED
for op in create view; do
    for slice in $(seq 1 "$SLICES"); do
        for label in A B; do
            port=${PORT[$label]}
            cmd=(wrk -t2 -c64 "-d${SLICE_SECONDS}s" --timeout 10s -H "Authorization: Bearer $SECRET")
            if [[ $op == create ]]; then
                cmd+=(-s "$HERE/create.lua" "http://127.0.0.1:$port/bench/items.json")
            else
                cmd+=(-s "$HERE/view.lua" "http://127.0.0.1:$port" -- "$TMP/ids-$label.txt" /bench/items/ .json)
            fi
            before=$(cpu_ticks "${PID[$label]}")
            out=$("${cmd[@]}" 2>&1)
            after=$(cpu_ticks "${PID[$label]}")
            grep -q "HARNESS non2xx=0" <<<"$out" || { echo "non-2xx answers from $label $op: $out" >&2; exit 1; }
            count=$(sed -nE 's/^ *([0-9]+) requests in.*/\1/p' <<<"$out")
            REQUESTS[$op-$label]=$(( ${REQUESTS[$op-$label]:-0} + count ))
            TICKS_USED[$op-$label]=$(( ${TICKS_USED[$op-$label]:-0} + after - before ))
        done
        echo "$op slice $slice/$SLICES done" >&2
    done
done

echo "| operation ($SLICES slices of ${SLICE_SECONDS} s each, alternating) | A: requests, server CPU each | B: requests, server CPU each | B / A |"
echo "| --- | --- | --- | --- |"
for op in create view; do
    a=${REQUESTS[$op-A]}; b=${REQUESTS[$op-B]}
    python3 -c "
a, b, ta, tb, hz = $a, $b, ${TICKS_USED[$op-A]}, ${TICKS_USED[$op-B]}, $TICKS
print(f'| $op | {a:,}, {ta / hz / a * 1e6:.2f} µs | {b:,}, {tb / hz / b * 1e6:.2f} µs | {b / a:.3f}× |')"
done
