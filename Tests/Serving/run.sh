#!/usr/bin/env bash
# Runs the serving suite (issue 27) against the real hearth binary: TLS on every transport with
# certificates made by a throwaway CA (ECDSA and RSA, full chains), certificate renewal by SIGHUP
# with an open WebSocket, bad certificate files, /healthz and /readyz with a drain, and the JSON and
# access logs, which must never hold a secret, token, password or value.
#
#   Tests/Serving/run.sh            (from anywhere; builds nothing)
#
# Needs the openssl command (apt-get install -y openssl). The binary is $HEARTH_BIN (default
# <repo>/.build/debug/hearth). A missing binary or openssl FAILS the run; nothing is skipped.
# Extra arguments are passed to pytest (e.g. -k reload -x).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"

PYTHON="${PYTHON:-python3}"
export PYTHONDONTWRITEBYTECODE=1

binary="${HEARTH_BIN:-$repo/.build/debug/hearth}"
problems=()
[[ -x "$binary" ]] || problems+=("hearth binary not found or not executable: $binary (swift build, or set HEARTH_BIN)")
command -v openssl >/dev/null || problems+=("openssl not found: apt-get install -y openssl")
if (( ${#problems[@]} > 0 )); then
    printf 'Tests/Serving: %s\n' "${problems[@]}" >&2
    exit 1
fi
export HEARTH_BIN="$binary"

"$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -r "$here/requirements.txt"

exec "$PYTHON" -m pytest -q "$here" "$@"
