#!/usr/bin/env bash
# Runs the security suite (issue 25) against the real hearth binary in its default mode: attacks on
# the database's preconditions, the identity endpoints, files, request limits and the admin surfaces,
# over real HTTP, WebSocket, SMTP and headless Chromium.
#
#   Tests/Security/run.sh            (from anywhere; builds nothing)
#
# Needs Debian's chromium and chromium-driver (/usr/bin/chromium, /usr/bin/chromedriver):
#   apt-get install -y chromium chromium-driver
# The binary is $HEARTH_BIN (default <repo>/.build/debug/hearth). A missing binary, browser or
# driver FAILS the run; nothing is skipped. Extra arguments are passed to pytest (e.g. -k websocket -x).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"

PYTHON="${PYTHON:-python3}"
export PYTHONDONTWRITEBYTECODE=1

binary="${HEARTH_BIN:-$repo/.build/debug/hearth}"
problems=()
[[ -x "$binary" ]] || problems+=("hearth binary not found or not executable: $binary (swift build, or set HEARTH_BIN)")
[[ -x "${CHROMIUM:-/usr/bin/chromium}" ]] || problems+=("${CHROMIUM:-/usr/bin/chromium} not found: apt-get install -y chromium")
[[ -x "${CHROMEDRIVER:-/usr/bin/chromedriver}" ]] || problems+=("${CHROMEDRIVER:-/usr/bin/chromedriver} not found: apt-get install -y chromium-driver")
if (( ${#problems[@]} > 0 )); then
    printf 'Tests/Security: %s\n' "${problems[@]}" >&2
    exit 1
fi
export HEARTH_BIN="$binary"

"$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -r "$here/requirements.txt"

exec "$PYTHON" -m pytest -q "$here" "$@"
