#!/usr/bin/env bash
# Runs the Emulator Suite suite (issue 28) against the real hearth binary: `hearth serve --emulator`
# started from a Firebase project directory (firebase.json, .firebaserc, rules files) on every port it
# names, rules files watched, `--import` / `--export-on-exit` / `hearth emulators export` in the
# firebase emulators:export layout (round trips with firebase-tools' own format), and the control
# endpoints @firebase/rules-unit-testing calls.
#
#   Tests/Emulator/run.sh            (from anywhere; builds nothing)
#
# The binary is $HEARTH_BIN (default <repo>/.build/debug/hearth). A missing binary FAILS the run;
# nothing is skipped. Extra arguments are passed to pytest (e.g. -k import -x).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"

PYTHON="${PYTHON:-python3}"
export PYTHONDONTWRITEBYTECODE=1

binary="${HEARTH_BIN:-$repo/.build/debug/hearth}"
if [[ ! -x "$binary" ]]; then
    echo "Tests/Emulator: hearth binary not found or not executable: $binary (swift build, or set HEARTH_BIN)" >&2
    exit 1
fi
export HEARTH_BIN="$binary"

"$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -r "$here/requirements.txt"

exec "$PYTHON" -m pytest -q "$here" "$@"
