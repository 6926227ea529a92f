#!/usr/bin/env bash
# ceiling.sh [HEARTH_BIN]
#
# Hearth's REST figures as ratios to the HTTP framework's ceiling on this machine: `hearth serve`
# (durable, SQLite, its defaults) and `hearth bench ceiling` (a Hummingbird handler that only answers,
# the same binary and build) under the same wrk load, rounds alternating between them. For writes a
# third server, the durable ceiling (`hearth bench ceiling --durable DIR`: the same handler, which also
# stores each body as one SQLite row, group-committed and synced before the answer as Hearth's writes
# are), shows what durability itself costs here. Prints a markdown table of medians with the ratio
# hearth/ceiling (and the median of each round's own ratio, hearth's run against the ceiling's right
# after it: steadier when the machine drifts), and each server's CPU time per request (user + system,
# from /proc/<pid>/stat over the run: what a request costs, whatever the load generator leaves of the
# cores).
#
#   create  POST /bench/items.json {"title":"hello","n":1}   (ceiling: reads the body, answers a name;
#                                                              durable ceiling: stores it first)
#   view    GET /bench/items/<seeded push id>.json            (ceiling: answers a small object)
#
# Knobs: DURATION [10s] WARMUP [3s; 0s for none] THREADS [2] CONNS [64] ROUNDS [3] SEED_COUNT [1000]
#        On a host whose speed moves between levels for seconds at a time, many short rounds
#        (ROUNDS=15 DURATION=2s WARMUP=0s) give each server the same mix of levels.
#        PROFILE [0]: 1 records `perf record -g` of hearth during its last run of each operation
#                     (perf-create.data, perf-view.data in the repository's root; gitignored)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
HEARTH_BIN=${1:-$ROOT/.build/release/hearth}
DURATION=${DURATION:-10s}; WARMUP=${WARMUP:-3s}; THREADS=${THREADS:-2}; CONNS=${CONNS:-64}
ROUNDS=${ROUNDS:-3}; SEED_COUNT=${SEED_COUNT:-1000}; PROFILE=${PROFILE:-0}
SECRET=benchsecret
[[ -x "$HEARTH_BIN" ]] || { echo "no $HEARTH_BIN: swift build -c release --product hearth" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }

source "$ROOT/Tests/Examples/lib.sh"
TMP=$(mktemp -d /tmp/hearth-ceiling.XXXXXX)
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT

H_PORT=$(free_port)
HEARTH_ADMIN_SECRET=$SECRET "$HEARTH_BIN" serve --host 127.0.0.1 --port "$H_PORT" --data "$TMP/data" >"$TMP/hearth.log" 2>&1 &
H_PID=$!; PIDS+=("$H_PID")
C_PORT=$(free_port)
"$HEARTH_BIN" bench ceiling --port "$C_PORT" >"$TMP/ceiling.log" 2>&1 &
C_PID=$!; PIDS+=("$C_PID")
D_PORT=$(free_port)
"$HEARTH_BIN" bench ceiling --port "$D_PORT" --durable "$TMP/durable" >"$TMP/durable.log" 2>&1 &
D_PID=$!; PIDS+=("$D_PID")
wait_for_server "http://127.0.0.1:$H_PORT/.json?shallow=true" "$H_PID" "$TMP/hearth.log" -H "Authorization: Bearer $SECRET"
wait_for_server "http://127.0.0.1:$C_PORT/bench/items/x.json" "$C_PID" "$TMP/ceiling.log"
wait_for_server "http://127.0.0.1:$D_PORT/bench/items/x.json" "$D_PID" "$TMP/durable.log"
python3 "$HERE/seed.py" --port "$H_PORT" --path /bench/items.json --count "$SEED_COUNT" --id-field name \
    --header "Authorization: Bearer $SECRET" --out "$TMP/ids.txt" >&2

# cpu_ticks <pid>: the process's user + system time so far, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICKS=$(getconf CLK_TCK)

# run <server> <op> <duration>: prints requests/s.
run() {
    local server=$1 op=$2 duration=$3 port
    case $server in
        hearth) port=$H_PORT ;;
        ceiling) port=$C_PORT ;;
        durable) port=$D_PORT ;;
    esac
    # The same requests to every server, the admin's Authorization header included: the ceilings parse
    # it as any HTTP server must, and ignore it (before 2026-11-29 only Hearth was sent it).
    local cmd=(wrk "-t$THREADS" "-c$CONNS" "-d$duration" --timeout 10s -H "Authorization: Bearer $SECRET")
    if [[ $op == create ]]; then
        cmd+=(-s "$HERE/create.lua" "http://127.0.0.1:$port/bench/items.json")
    else
        cmd+=(-s "$HERE/view.lua" "http://127.0.0.1:$port" -- "$TMP/ids.txt" /bench/items/ .json)
    fi
    local out
    out=$("${cmd[@]}" 2>&1)
    grep -q "HARNESS non2xx=0" <<<"$out" || { echo "non-2xx answers from $server $op: $out" >&2; exit 1; }
    sed -nE 's/^Requests\/sec: *([0-9.]+).*/\1/p' <<<"$out"
}

declare -A RESULTS=() COSTS=() RATIOS=() LAST=()
for round in $(seq 1 "$ROUNDS"); do
    for op in create view; do
        servers=(hearth ceiling); [[ $op == create ]] && servers+=(durable)
        for server in "${servers[@]}"; do
            [[ ${WARMUP%s} == 0 ]] || run "$server" "$op" "$WARMUP" >/dev/null
            if [[ $PROFILE == 1 && $server == hearth && $round == "$ROUNDS" ]]; then
                perf record -g -F 499 -o "$ROOT/perf-$op.data" -p "$H_PID" -- sleep "${DURATION%s}" >/dev/null 2>&1 &
                profiler=$!
            fi
            case $server in hearth) pid=$H_PID ;; ceiling) pid=$C_PID ;; durable) pid=$D_PID ;; esac
            before=$(cpu_ticks "$pid")
            rate=$(run "$server" "$op" "$DURATION")
            after=$(cpu_ticks "$pid")
            [[ -n "${profiler:-}" ]] && { wait "$profiler" || true; profiler=""; }
            RESULTS[$server-$op]+="$rate "
            LAST[$server]=$rate
            [[ $server == ceiling ]] && RATIOS[$op]+="$(python3 -c "print(${LAST[hearth]} / $rate)") "
            if [[ $server == durable ]]; then
                RATIOS[durable-ceiling]+="$(python3 -c "print($rate / ${LAST[ceiling]})") "
                RATIOS[hearth-durable]+="$(python3 -c "print(${LAST[hearth]} / $rate)") "
            fi
            # Microseconds of server CPU per request: ticks / TICKS seconds over rate * duration requests.
            cost=$(python3 -c "print(round(($after - $before) / $TICKS / ($rate * ${DURATION%s}) * 1e6, 1))")
            COSTS[$server-$op]+="$cost "
            echo "round $round: $server $op ${rate}/s, ${cost} us of server CPU per request" >&2
        done
    done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
# range <ratios>: "low–high" of the rounds' ratios.
range() { tr ' ' '\n' <<<"$1" | grep . | sort -n | sed -n '1p;$p' | xargs printf '%.2f–' | sed 's/–$//'; }
echo
echo "| operation (wrk -t$THREADS -c$CONNS -d$DURATION, medians of $ROUNDS) | hearth | ceiling | hearth / ceiling | median of the rounds' ratios (range) |"
echo "| --- | --- | --- | --- | --- |"
for op in create view; do
    h=$(median <<<"${RESULTS[hearth-$op]}"); c=$(median <<<"${RESULTS[ceiling-$op]}")
    r=$(median <<<"${RATIOS[$op]}")
    printf '| %s | %.0f/s | %.0f/s | %.2f× | %.2f× (%s) |\n' "$op" "$h" "$c" "$(python3 -c "print($h / $c)")" "$r" "$(range "${RATIOS[$op]}")"
done
echo
d=$(median <<<"${RESULTS[durable-create]}")
echo "| create, the durable ceiling (medians of $ROUNDS) | durable ceiling | durable ceiling / ceiling (rounds) | hearth / durable ceiling (rounds) |"
echo "| --- | --- | --- | --- |"
printf '| create | %.0f/s | %.2f× (%s) | %.2f× (%s) |\n' "$d" \
    "$(median <<<"${RATIOS[durable-ceiling]}")" "$(range "${RATIOS[durable-ceiling]}")" \
    "$(median <<<"${RATIOS[hearth-durable]}")" "$(range "${RATIOS[hearth-durable]}")"
echo
echo "| operation (medians of $ROUNDS) | hearth: server CPU per request | ceiling: server CPU per request | hearth − ceiling | durable ceiling: server CPU per request |"
echo "| --- | --- | --- | --- | --- |"
for op in create view; do
    h=$(median <<<"${COSTS[hearth-$op]}"); c=$(median <<<"${COSTS[ceiling-$op]}")
    dc="—"; [[ $op == create ]] && dc="$(printf '%.1f µs' "$(median <<<"${COSTS[durable-create]}")")"
    printf '| %s | %.1f µs | %.1f µs | %.1f µs | %s |\n' "$op" "$h" "$c" "$(python3 -c "print($h - $c)")" "$dc"
done
