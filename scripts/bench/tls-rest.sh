#!/usr/bin/env bash
# tls-rest.sh [HEARTH_BIN]
#
# REST over TLS against plain HTTP, one binary, one run (issue 27: TLS may cost at most 25% of
# requests/s with keep-alive). Two servers side by side — `hearth serve` and `hearth serve --tls-cert
# … --tls-key …` with a throwaway CA's certificate — then, alternating between them for ROUNDS rounds:
#   create  durable small-record POSTs   POST /bench/items.json  {"title":"hello","n":1}
#   view    small reads of seeded records GET /bench/items/<id>.json
# each a warm-up then `wrk -t$THREADS -c$CONNS -d$DURATION` (keep-alive: wrk reuses its connections,
# so the handshake cost is paid once per connection). Prints a markdown table of medians and the
# ratio TLS ÷ plain; any non-2xx answer or socket error fails the run (exit 1).
#
# Environment knobs (defaults in brackets):
#   DURATION [10s]  WARMUP [3s]  THREADS [2]  CONNS [64]  SEED_COUNT [1000]  ROUNDS [3]
#   KEY [ecdsa]     ecdsa (P-256) | rsa (2048 bits): the server's key
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
HEARTH_BIN=${1:-$ROOT/.build/release/hearth}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-3s}
THREADS=${THREADS:-2}
CONNS=${CONNS:-64}
SEED_COUNT=${SEED_COUNT:-1000}
ROUNDS=${ROUNDS:-3}
KEY=${KEY:-ecdsa}
SECRET=benchsecret

log() { printf '[tls-bench] %s\n' "$*" >&2; }
die() { printf '[tls-bench] ERROR: %s\n' "$*" >&2; exit 1; }

[[ -x "$HEARTH_BIN" ]] || die "no hearth binary at $HEARTH_BIN (swift build -c release --product hearth)"
command -v wrk >/dev/null || die "wrk missing: apt-get install -y wrk"
command -v openssl >/dev/null || die "openssl missing: apt-get install -y openssl"

TMP=$(mktemp -d /tmp/hearth-tls-bench.XXXXXX)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

# ---------------------------------------------------------------- a throwaway CA and a certificate
cd "$TMP" || die "cannot enter $TMP"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
case "$KEY" in
    ecdsa) server_key=("${ec[@]}") ;;
    rsa) server_key=(-newkey rsa:2048 -nodes) ;;
    *) die "KEY must be ecdsa or rsa" ;;
esac
openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem -days 2 -subj "/CN=Bench CA" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null || die "openssl: CA"
openssl req "${server_key[@]}" -keyout server.key -out server.csr -subj /CN=localhost 2>/dev/null || die "openssl: key"
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 \
    -extfile server.ext 2>/dev/null || die "openssl: certificate"
cat server.pem ca.pem > chain.pem

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# ---------------------------------------------------------------- the two servers
declare -A URL
start() { # name extra-args...
    local name=$1; shift
    local port; port=$(free_port)
    mkdir -p "$TMP/$name"
    HEARTH_ADMIN_SECRET=$SECRET "$HEARTH_BIN" serve --host 127.0.0.1 --port "$port" --data "$TMP/$name" \
        --no-reference-apps "$@" >"$TMP/$name.log" 2>&1 &
    PIDS+=($!)
    local scheme=http; [[ $# -gt 0 ]] && scheme=https
    URL[$name]="$scheme://127.0.0.1:$port"
    for _ in $(seq 1 300); do
        curl -fsS --cacert ca.pem -o /dev/null "${URL[$name]}/readyz" 2>/dev/null && break
        sleep 0.1
    done
    curl -fsS --cacert ca.pem -o /dev/null "${URL[$name]}/readyz" || { cat "$TMP/$name.log" >&2; die "$name did not become ready"; }
    # Seed SEED_COUNT records in one write, and list their ids for view.lua.
    python3 - "$SEED_COUNT" > "$TMP/$name-seed.json" <<'EOF'
import json, sys
print(json.dumps({f"i{n}": {"title": "hello", "n": n} for n in range(int(sys.argv[1]))}))
EOF
    curl -fsS --cacert ca.pem -o /dev/null -X PUT -H "Authorization: Bearer $SECRET" \
        --data-binary @"$TMP/$name-seed.json" "${URL[$name]}/bench/items.json" || die "$name: seeding failed"
    log "$name: ${URL[$name]} (data $TMP/$name)"
}
start plain
start tls --tls-cert "$TMP/chain.pem" --tls-key "$TMP/server.key"
seq 0 $((SEED_COUNT - 1)) | sed 's/^/i/' > "$TMP/ids.txt"

# ---------------------------------------------------------------- wrk
FAILURES=()
declare -A RATES
run() { # server op duration -> prints requests/s
    local server=$1 op=$2 duration=$3 out="$TMP/wrk-$1-$2-$RANDOM.txt"
    local cmd=(wrk "-t$THREADS" "-c$CONNS" "-d$duration" --timeout 10s -H "Authorization: Bearer $SECRET")
    if [[ $op == create ]]; then
        cmd+=(-s "$HERE/create.lua" "${URL[$server]}/bench/items.json")
    else
        cmd+=(-s "$HERE/view.lua" "${URL[$server]}" -- "$TMP/ids.txt" /bench/items/ .json)
    fi
    "${cmd[@]}" > "$out" 2>&1 || FAILURES+=("$server $op: wrk exited $?: $(tail -2 "$out" | tr '\n' ' ')")
    local non2xx sockets
    non2xx=$(sed -nE 's/^HARNESS non2xx=([0-9]+).*/\1/p' "$out")
    sockets=$(grep -E '^ *Socket errors:' "$out")
    [[ -n "$non2xx" && "$non2xx" != 0 ]] && FAILURES+=("$server $op: $non2xx non-2xx answers")
    [[ -n "$sockets" ]] && FAILURES+=("$server $op:$sockets")
    sed -nE 's/^Requests\/sec: *([0-9.]+).*/\1/p' "$out"
}
for round in $(seq 1 "$ROUNDS"); do
    for op in create view; do
        # Alternate which goes first, so neither always runs on a machine warmed by the other.
        if (( round % 2 )); then order=(plain tls); else order=(tls plain); fi
        for server in "${order[@]}"; do
            run "$server" "$op" "$WARMUP" >/dev/null
            rate=$(run "$server" "$op" "$DURATION")
            RATES[$server-$op]+="$rate "
            log "round $round: $server $op $rate req/s"
        done
    done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {if (NR == 0) print 0; else print a[int((NR + 1) / 2)]}'; }
echo
echo "REST over TLS ($KEY key) against plain HTTP: wrk -t$THREADS -c$CONNS -d$DURATION (keep-alive, after a $WARMUP warm-up), medians of $ROUNDS rounds, $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "| operation | plain req/s | TLS req/s | TLS ÷ plain | TLS cost |"
echo "| --- | --- | --- | --- | --- |"
for op in create view; do
    plain=$(median <<<"${RATES[plain-$op]}")
    tls=$(median <<<"${RATES[tls-$op]}")
    python3 -c "p, t = $plain, $tls; print(f'| $op | {p:,.0f} | {t:,.0f} | {t / p:.2f} | {(1 - t / p) * 100:.0f}% |')"
done
echo
echo "Each round: $(for op in create view; do printf '%s plain [%s] tls [%s]  ' "$op" "${RATES[plain-$op]% }" "${RATES[tls-$op]% }"; done)"
if (( ${#FAILURES[@]} > 0 )); then
    printf 'FAILED: %s\n' "${FAILURES[@]}" >&2
    exit 1
fi
