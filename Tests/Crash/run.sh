#!/usr/bin/env bash
# kill -9 durability test (database, then files, then users, then `hearth import`), then the SIGTERM restart test (onDisconnect writes survive), then online backup and restore. Usage: Tests/Crash/run.sh [--cycles N] [--threads N] [--load-seconds S] [--keep]
# Server binary: $HEARTH_BIN (default <repo>/.build/debug/hearth). Exits non-zero on failure.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python3 "$here/kill9_test.py" "$@"
python3 "$here/files_kill9_test.py"
python3 "$here/users_kill9_test.py"
python3 "$here/import_kill9_test.py"
python3 "$here/graceful_restart_test.py"
python3 "$here/backup_test.py"
