#!/usr/bin/env bash
# Builds nothing: runs the Profiles terminal client (`profiles`, Examples/Profiles/ProfilesCLI) against a
# fresh `hearth serve --emulator` on a temporary data folder and checks what it prints: sample, list with
# filter and sort, a refused add, delete, and a `watch` in the background that sees another process's add.
# Exits non-zero on failure.
#
#   Tests/Examples/profiles-cli.sh     (binaries: $HEARTH_BIN and $PROFILES_BIN, default .build/debug/…)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
hearth="${HEARTH_BIN:-$repo/.build/debug/hearth}"
profiles="${PROFILES_BIN:-$repo/.build/debug/profiles}"
for binary in "$hearth" "$profiles"; do
    [[ -x "$binary" ]] || { echo "FAIL: $binary is missing: run 'swift build' first" >&2; exit 1; }
done

source "$repo/Tests/Examples/lib.sh"
port=$(free_port)
data=$(mktemp -d)
log="$data/server.log"
watch_out="$data/watch.out"
"$hearth" serve --emulator --data "$data/db" --port "$port" >"$log" 2>&1 &
server=$!
watcher=""
cleanup() {
    [[ -n "$watcher" ]] && { kill "$watcher" 2>/dev/null || true; wait "$watcher" 2>/dev/null || true; }
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    rm -rf "$data"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE   # so that cleanup runs when the script is stopped too

# profiles/ is readable under the app's rules; / is not.
wait_for_server "http://127.0.0.1:$port/profiles.json?ns=profiles&shallow=true" "$server" "$log"

url="http://127.0.0.1:$port"
passed=0
fail() { echo "FAIL: $*"; exit 1; }
pass() { echo "ok: $*"; passed=$((passed + 1)); }
# Runs the client; its output (stdout and stderr) goes to $output, its status to $status.
run() {
    set +e
    output=$(timeout 60 "$profiles" "$@" --url "$url" 2>&1)
    status=$?
    set -e
}

# sample: the web app's eight people, ids 1–8.
run sample
[[ $status -eq 0 && "$output" == "Added 8 sample profiles (#1–#8)." ]] || fail "sample printed ($status): $output"
pass "sample"

# list --gender female --sort -age: only women, oldest first, and the count.
run list --gender female --sort -age
[[ $status -eq 0 ]] || fail "list exited with $status: $output"
names=$(sed -nE 's/^#[0-9]+ +(.+[^ ]) +[0-9]+ +(male|female) .*$/\1/p' <<<"$output" | paste -sd '|' -)
[[ "$names" == "Grace Hopper|Barbara Liskov|Margaret Hamilton|Ada Lovelace" ]] || fail "list order was '$names':"$'\n'"$output"
grep -qE '^#3 +Grace Hopper +85 +female +compilers, teaching$' <<<"$output" || fail "no row for Grace Hopper:"$'\n'"$output"
grep -qx '4 of 8 profiles (female, oldest first)' <<<"$output" || fail "no summary line:"$'\n'"$output"
pass "list --gender female --sort -age"

# add with a bad age: the web form's message, status 1, nothing stored.
run add --name "Too Old" --age 151 --gender male
[[ $status -eq 1 ]] || fail "a bad add exited with $status: $output"
[[ "$output" == "error: Age is a whole number from 0 to 150." ]] || fail "a bad add printed: $output"
run add --name "" --age "" --gender robot
[[ $status -eq 1 && "$output" == $'error: Enter a name.\nerror: Enter an age.\nerror: Choose female or male.' ]] \
    || fail "an empty add printed ($status): $output"
run list
grep -qx '8 profiles' <<<"$output" || fail "a refused add stored something:"$'\n'"$output"
pass "add refuses a bad age"

# watch in the background sees an add and a delete made by other processes.
timeout 120 "$profiles" watch --url "$url" >"$watch_out" 2>&1 &
watcher=$!
wait_for() {  # a line matching $1 in the watch output, within 30 s
    for _ in $(seq 300); do
        grep -qE "$1" "$watch_out" && return 0
        kill -0 "$watcher" 2>/dev/null || fail "watch exited:"$'\n'"$(cat "$watch_out")"
        sleep 0.1
    done
    fail "watch did not print a line matching '$1':"$'\n'"$(cat "$watch_out")"
}
wait_for '^Watching 8 profiles at '
run add --name "Wanda Watcher" --age 29 --gender female --hobby chess --hobby "go, Chess"
[[ $status -eq 0 && "$output" == "Added #9 Wanda Watcher, 29, female — chess, go." ]] || fail "add printed ($status): $output"
wait_for '^added   #9 Wanda Watcher, 29, female — chess, go$'
pass "add, seen by watch"
run hobbies 9 add sailing
[[ $status -eq 0 && "$output" == "#9 Wanda Watcher's hobbies: chess, go, sailing" ]] || fail "hobbies add printed ($status): $output"
wait_for '^changed #9 Wanda Watcher: hobbies chess, go → chess, go, sailing$'
pass "hobbies add, seen by watch"

# show and delete, and the errors for an id that is not there.
run show 9
grep -qx '  hobbies  chess, go, sailing' <<<"$output" || fail "show printed ($status): $output"
run delete 9
[[ $status -eq 0 && "$output" == "Deleted #9 Wanda Watcher." ]] || fail "delete printed ($status): $output"
wait_for '^removed #9 Wanda Watcher$'
run delete 9
[[ $status -eq 1 && "$output" == "error: no profile with id 9" ]] || fail "a second delete printed ($status): $output"
run show 9
[[ $status -eq 1 && "$output" == "error: no profile with id 9" ]] || fail "show of a deleted id printed ($status): $output"
pass "delete, seen by watch"

# Ctrl-C ends watch normally.
kill -INT "$watcher"
set +e; wait "$watcher"; watch_status=$?; set -e
watcher=""
[[ $watch_status -eq 0 ]] || fail "watch exited with $watch_status after SIGINT"
pass "watch stops on Ctrl-C"

# An unreachable server: the error says what to do.
set +e
output=$(timeout 60 "$profiles" list --url "http://127.0.0.1:1" --timeout 1 2>&1)
status=$?
set -e
[[ $status -eq 1 ]] || fail "an unreachable server exited with $status: $output"
grep -qx "error: cannot reach a Hearth server at http://127.0.0.1:1 (waited 1 s)." <<<"$output" || fail "unreachable printed: $output"
grep -q "^hint: start one with 'swift run hearth serve --emulator'" <<<"$output" || fail "no hint: $output"
pass "an unreachable server"

echo "$passed passed, 0 failed"
