#!/usr/bin/env bash
# Runs the Python conformance suites against the real hearth binary.
#
#   Tests/Conformance/run.sh            (from anywhere; builds nothing)
#
# The binary is $HEARTH_BIN (default <repo>/.build/debug/hearth); the suites FAIL
# if it is missing. Extra arguments are passed to pytest (e.g. -k listen -x).
# Exits non-zero if any suite fails.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"

PYTHON="${PYTHON:-python3}"
export PYTHONDONTWRITEBYTECODE=1

"$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -r "$here/requirements.txt"

status=0
"$PYTHON" -m pytest -q "$here" --ignore="$here/official" "$@" || status=$?

# The official firebase-admin-python integration suite, when it can be obtained
# (it is not in the PyPI sdist today, see test_official_equivalent.py).
if [[ -x "$here/official/run.sh" ]]; then
    "$here/official/run.sh" || status=$?
fi

exit "$status"
