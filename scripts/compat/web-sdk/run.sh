#!/usr/bin/env bash
# Runs the official Firebase web SDK (modular API) in headless Chromium against
# `hearth serve --emulator`, through connectDatabaseEmulator. See README.md.
#
#   FIREBASE_BOWER_DIR=/tmp/firebase-bower scripts/compat/web-sdk/run.sh [pytest args, e.g. -k query -x]
#
# FIREBASE_BOWER_DIR  (required) a directory holding the SDK's firebase-app.js and
#                     firebase-database.js ES modules (github.com/firebase/firebase-bower).
# HEARTH_BIN          the server binary (default <repo>/.build/debug/hearth); copied first,
#                     so a rebuild during the run does not disturb it. Missing: the tests FAIL.
# WEB_SDK_OUT         hearth.log, per-test WebSocket transcripts and console logs
#                     (default /tmp/hearth-web-sdk-out).
# conftest.py starts Hearth (Tests/Support/Python/hearth_process.py) and the static server.
# Needs: chromium + chromium-driver (Debian), python3; installs requirements.txt with pip.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${PYTHON:-python3}"
export WEB_SDK_OUT="${WEB_SDK_OUT:-/tmp/hearth-web-sdk-out}"
export PYTHONDONTWRITEBYTECODE=1

sdk="${FIREBASE_BOWER_DIR:-}"
if [[ -z "$sdk" || ! -f "$sdk/firebase-app.js" || ! -f "$sdk/firebase-database.js" || ! -f "$sdk/firebase-auth.js" ]]; then
    echo "FIREBASE_BOWER_DIR must name a directory with firebase-app.js, firebase-database.js and firebase-auth.js" >&2
    echo "(see $here/README.md for how to get them)" >&2
    exit 2
fi
sdk="$(cd "$sdk" && pwd)"
export FIREBASE_BOWER_DIR="$sdk"
for b in /usr/bin/chromium /usr/bin/chromedriver; do
    [[ -x "$b" ]] || { echo "missing $b: apt-get install -y chromium chromium-driver" >&2; exit 2; }
done

# The version the modules import each other under (https://www.gstatic.com/firebasejs/<v>/...).
SDK_VERSION="$(grep -o 'https://www.gstatic.com/firebasejs/[0-9][0-9A-Za-z.-]*/firebase-app.js' \
    "$sdk/firebase-database.js" | head -n1 | sed -E 's#.*/firebasejs/([^/]+)/.*#\1#')"
[[ -n "$SDK_VERSION" ]] || { echo "cannot find the SDK version in $sdk/firebase-database.js" >&2; exit 2; }
export SDK_VERSION

"$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -r "$here/requirements.txt"

echo "SDK $SDK_VERSION, transcripts in $WEB_SDK_OUT"
exec "$PYTHON" -m pytest -q -p no:cacheprovider --rootdir "$here" "$here/test_web_sdk.py" "$here/test_web_sdk_auth.py" "$@"
