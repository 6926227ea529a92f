#!/usr/bin/env bash
# Hunts flaky tests: builds the tests once, runs the whole `swift test` suite many times in a row on
# an idle machine, then as many times again with every core saturated by a background load, and
# reports every test that failed even once (with the run and the log that show it).
#
#   scripts/flake-hunt.sh                      30 idle runs, then 30 under load
#   scripts/flake-hunt.sh --runs 5 --mode load 5 runs under load only
#   scripts/flake-hunt.sh --filter Realtime    only the suites matching (passed to swift test)
#
# Options:
#   --runs N        runs per mode (default 30)
#   --mode M        idle | load | both (default both)
#   --filter F      passed to `swift test --filter`
#   --logs DIR      where each run's output goes (default .build/flake-hunt)
#
# The load is Debian's stress-ng when installed (apt-get install stress-ng), else one busy loop per
# core. Exits 1 if any run failed, 0 if every run passed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs=30
mode=both
filter=()
logs=.build/flake-hunt
while (( $# > 0 )); do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --mode) mode="$2"; shift 2 ;;
        --filter) filter=(--filter "$2"); shift 2 ;;
        --logs) logs="$2"; shift 2 ;;
        -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "flake-hunt: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
case "$mode" in
    idle) modes=(idle) ;;
    load) modes=(load) ;;
    both) modes=(idle load) ;;
    *) echo "flake-hunt: --mode is idle, load or both, not $mode" >&2; exit 2 ;;
esac
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "flake-hunt: --runs needs a positive number, not $runs" >&2; exit 2; }

mkdir -p "$logs"
rm -f "$logs"/*.log
echo "Building the tests once…"
swift build --build-tests >"$logs/build.txt" 2>&1 || { cat "$logs/build.txt"; echo "flake-hunt: the build failed" >&2; exit 1; }

load_pids=()
start_load() {
    local cores
    cores=$(nproc)
    if command -v stress-ng >/dev/null; then
        stress-ng --cpu "$cores" --cpu-method matrixprod --quiet >/dev/null 2>&1 &
        load_pids+=($!)
        echo "Load: stress-ng --cpu $cores"
    else
        for _ in $(seq "$cores"); do
            ( while :; do :; done ) &
            load_pids+=($!)
        done
        echo "Load: $cores busy loops (install stress-ng for a heavier one)"
    fi
}
stop_load() {
    for pid in "${load_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${load_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    load_pids=()
}
trap stop_load EXIT

failed_runs=0
total_runs=0
declare -A failures=()   # test name -> "mode#run mode#run …"
for current in "${modes[@]}"; do
    [[ "$current" == load ]] && start_load
    echo "== $runs runs, $current"
    for run in $(seq "$runs"); do
        log="$logs/$current-$run.log"
        started=$EPOCHREALTIME
        status=0
        swift test --skip-build "${filter[@]}" >"$log" 2>&1 || status=$?
        seconds=$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
        total_runs=$((total_runs + 1))
        summary=$(grep -E '^(✔|✘) Test run with' "$log" | tail -1 || true)
        if (( status != 0 )); then
            failed_runs=$((failed_runs + 1))
            # Swift Testing marks failed tests with ✘; XCTest prints "Test Case '…' failed".
            names=$(grep -E "^✘ Test [^ ]+.* failed" "$log" | grep -v "^✘ Test run with" | sed -E 's/^✘ Test ([^ ]+).*/\1/' | sort -u || true)
            names+=$'\n'$(grep -Eo "Test Case '[^']+' failed" "$log" | sed -E "s/Test Case '([^']+)' failed/\1/" | sort -u || true)
            names=$(echo "$names" | sed '/^$/d')
            [[ -z "$names" ]] && names="(no test named: crash or build problem, see $log)"
            while IFS= read -r name; do failures["$name"]+="$current#$run "; done <<<"$names"
            printf '%s run %2d: FAILED in %ss — %s\n' "$current" "$run" "$seconds" "$(echo "$names" | paste -sd, -)"
        else
            printf '%s run %2d: passed in %ss — %s\n' "$current" "$run" "$seconds" "${summary#* }"
        fi
    done
    [[ "$current" == load ]] && stop_load
done

echo
echo "== Flake hunt: $total_runs runs (${modes[*]}), $failed_runs failed"
if (( failed_runs == 0 )); then
    echo "No test failed."
    exit 0
fi
echo "Tests that failed at least once (mode#run; logs in $logs):"
for name in "${!failures[@]}"; do
    printf '  %s: %s\n' "$name" "${failures[$name]}"
done
exit 1
