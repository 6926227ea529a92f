#!/usr/bin/env bash
# Runs the official Firebase web SDK (modular API) in headless Chromium against
# `hearth serve --emulator`, through connectDatabaseEmulator. See README.md.
#
#   FIREBASE_BOWER_DIR=/tmp/firebase-bower scripts/compat/web-sdk/run.sh [pytest args, e.g. -k query -x]
#
# FIREBASE_BOWER_DIR  (required) a directory holding the SDK's firebase-app.js and
#                     firebase-database.js ES modules (github.com/firebase/firebase-bower).
# HEARTH_BIN          the server binary (default <repo>/.build/debug/hearth); copied first,
#                     so a rebuild during the run does not disturb it.
# WEB_SDK_OUT         per-test WebSocket transcripts and console logs
#                     (default /tmp/hearth-web-sdk-out).
# Needs: chromium + chromium-driver (Debian), python3; installs requirements.txt with pip.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
PYTHON="${PYTHON:-python3}"
HEARTH_BIN="${HEARTH_BIN:-$repo/.build/debug/hearth}"
export WEB_SDK_OUT="${WEB_SDK_OUT:-/tmp/hearth-web-sdk-out}"
export PYTHONDONTWRITEBYTECODE=1

sdk="${FIREBASE_BOWER_DIR:-}"
if [[ -z "$sdk" || ! -f "$sdk/firebase-app.js" || ! -f "$sdk/firebase-database.js" ]]; then
    echo "FIREBASE_BOWER_DIR must name a directory with firebase-app.js and firebase-database.js" >&2
    echo "(see $here/README.md for how to get them)" >&2
    exit 2
fi
sdk="$(cd "$sdk" && pwd)"
[[ -x "$HEARTH_BIN" ]] || { echo "no hearth binary at $HEARTH_BIN (set HEARTH_BIN)" >&2; exit 2; }
for b in /usr/bin/chromium /usr/bin/chromedriver; do
    [[ -x "$b" ]] || { echo "missing $b: apt-get install -y chromium chromium-driver" >&2; exit 2; }
done

# The version the modules import each other under (https://www.gstatic.com/firebasejs/<v>/...).
SDK_VERSION="$(grep -o 'https://www.gstatic.com/firebasejs/[0-9][0-9A-Za-z.-]*/firebase-app.js' \
    "$sdk/firebase-database.js" | head -n1 | sed -E 's#.*/firebasejs/([^/]+)/.*#\1#')"
[[ -n "$SDK_VERSION" ]] || { echo "cannot find the SDK version in $sdk/firebase-database.js" >&2; exit 2; }
export SDK_VERSION

"$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -r "$here/requirements.txt"

mkdir -p "$WEB_SDK_OUT"
work="$(mktemp -d /tmp/hearth-web-sdk.XXXXXX)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Hearth, emulator mode, fresh data directory.
cp "$HEARTH_BIN" "$work/hearth"
export HEARTH_PORT="$(free_port)"
"$work/hearth" serve --emulator --host 127.0.0.1 --port "$HEARTH_PORT" --data "$work/data" \
    >"$WEB_SDK_OUT/hearth.log" 2>&1 &
pids+=($!)

# Static files: page.html, and the SDK under /firebasejs/<version>/ (see the import map in page.html).
mkdir -p "$work/www/firebasejs"
ln -s "$sdk" "$work/www/firebasejs/$SDK_VERSION"
ln -s "$here/page.html" "$work/www/page.html"
export WEB_PORT="$(free_port)"
"$PYTHON" -m http.server "$WEB_PORT" --bind 127.0.0.1 --directory "$work/www" \
    >"$WEB_SDK_OUT/http.log" 2>&1 &
pids+=($!)

# Ready when a v5 WebSocket gets the handshake frame, and the static server answers.
"$PYTHON" - <<PY
import json, sys, time, urllib.request
import websocket  # comes with selenium
deadline, err = time.time() + 30, None
while time.time() < deadline:
    try:
        ws = websocket.create_connection(
            "ws://127.0.0.1:$HEARTH_PORT/.ws?v=5&ns=demo-proj-default-rtdb", timeout=3)
        m = json.loads(ws.recv()); ws.close()
        assert m["t"] == "c" and m["d"]["t"] == "h", m
        urllib.request.urlopen("http://127.0.0.1:$WEB_PORT/page.html", timeout=3).read()
        sys.exit(0)
    except Exception as e:
        err = e; time.sleep(0.3)
sys.exit(f"hearth (port $HEARTH_PORT) or the static server (port $WEB_PORT) not ready: {err}")
PY

echo "hearth on :$HEARTH_PORT, SDK $SDK_VERSION on :$WEB_PORT, transcripts in $WEB_SDK_OUT"
status=0
"$PYTHON" -m pytest -q -p no:cacheprovider --rootdir "$here" "$here/test_web_sdk.py" "$@" || status=$?
exit "$status"
