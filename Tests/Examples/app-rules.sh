#!/usr/bin/env bash
# The reference apps' rules, tested with the CLI as an app author would: `hearth rules test` for each
# app's database rules and `hearth storage rules test` for Timeline's storage rules, against the
# scenario files in Tests/Examples/rules/. Exits non-zero when any scenario fails.
#
#   Tests/Examples/app-rules.sh        (binary: $HEARTH_BIN, default .build/debug/hearth)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
hearth="${HEARTH_BIN:-$repo/.build/debug/hearth}"
[[ -x "$hearth" ]] || { echo "FAIL: $hearth is missing: run 'swift build' first" >&2; exit 1; }
apps="$repo/Sources/HearthWeb/Web/apps"
scenarios="$repo/Tests/Examples/rules"

status=0
for app in profiles posts timeline; do
    echo "== $app: database rules"
    "$hearth" rules test "$apps/$app/database.rules.json" "$scenarios/$app.database.json" || status=1
done
echo "== timeline: storage rules"
"$hearth" storage rules test "$apps/timeline/storage.rules" "$scenarios/timeline.storage.json" || status=1
# Every app with rules has scenarios (a new app's rules are not left untested).
for rules in "$apps"/*/database.rules.json "$apps"/*/storage.rules; do
    app=$(basename "$(dirname "$rules")")
    kind=$([[ "$rules" == *storage.rules ]] && echo storage || echo database)
    [[ -f "$scenarios/$app.$kind.json" ]] || { echo "FAIL: $rules has no scenarios ($scenarios/$app.$kind.json)"; status=1; }
done
exit $status
