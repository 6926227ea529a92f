#!/usr/bin/env bash
# Builds nothing: `hearth import --url` and `hearth export --url` against a running `hearth serve` in its
# default mode (admin secret required): a file with priorities imported and exported back exactly, a
# merge that keeps what the file does not name, progress on stderr, and the refusals (no secret, a file
# that is not JSON: nothing changes). Exits non-zero on failure.
#
#   Tests/Examples/import-export-url.sh     (binary: $HEARTH_BIN, default .build/debug/hearth)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
hearth="${HEARTH_BIN:-$repo/.build/debug/hearth}"
[[ -x "$hearth" ]] || { echo "FAIL: $hearth is missing: run 'swift build' first" >&2; exit 1; }

source "$repo/Tests/Examples/lib.sh"
port=$(free_port)
work=$(mktemp -d)
secret="transfer-secret"
HEARTH_ADMIN_SECRET="$secret" "$hearth" serve --data "$work/data" --port "$port" >"$work/server.log" 2>&1 &
server=$!
cleanup() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE
url="http://127.0.0.1:$port"
wait_for_server "$url/" "$server" "$work/server.log"
fail() { echo "FAIL: $*"; exit 1; }
same_json() { python3 -c 'import json, sys; a, b = (json.load(open(p)) for p in sys.argv[1:3]); sys.exit(0 if a == b else 1)' "$1" "$2"; }

# A file with priorities, numbers, unicode and a few thousand children.
python3 - "$work/in.json" <<'PY'
import json, sys
doc = {"users": {"u%04d" % i: {"name": "Zoë %d" % i, "age": i % 90, ".priority": i} for i in range(3000)},
       "meta": {"version": 2, "ok": True}}
json.dump(doc, open(sys.argv[1], "w"))
PY
HEARTH_ADMIN_SECRET="$secret" "$hearth" import "$work/in.json" --url "$url" --namespace shop 2>"$work/import.err" || fail "import --url: $(cat "$work/import.err")"
grep -q "Importing" "$work/import.err" || fail "no progress on stderr: $(cat "$work/import.err")"
grep -q "Imported .* into shop/ on $url" "$work/import.err" || fail "no summary: $(cat "$work/import.err")"
"$hearth" export --url "$url" --secret "$secret" --namespace shop -o "$work/out.json" 2>"$work/export.err" || fail "export --url: $(cat "$work/export.err")"
same_json "$work/in.json" "$work/out.json" || fail "the export differs from the import"
grep -q "Exported .* bytes of shop/ from $url" "$work/export.err" || fail "no export summary: $(cat "$work/export.err")"

# Merge at a path: the children the file names are replaced, the others stay.
echo '{"version": 3, "added": "yes"}' >"$work/merge.json"
"$hearth" import "$work/merge.json" --url "$url" --secret "$secret" --namespace shop --path /meta --merge 2>/dev/null || fail "merge"
meta=$("$hearth" export --url "$url" --secret "$secret" --namespace shop --path /meta 2>/dev/null)
python3 -c 'import json, sys; assert json.loads(sys.argv[1]) == {"version": 3, "ok": True, "added": "yes"}, sys.argv[1]' "$meta" || fail "merge result: $meta"

# Refusals: no secret; not JSON. Nothing changes.
if "$hearth" import "$work/merge.json" --url "$url" --namespace shop 2>"$work/refused.err"; then fail "an import without the secret was accepted"; fi
grep -q "admin secret" "$work/refused.err" || fail "the refusal does not say what to do: $(cat "$work/refused.err")"
echo '{"broken": ' >"$work/bad.json"
if "$hearth" import "$work/bad.json" --url "$url" --secret "$secret" --namespace shop 2>"$work/bad.err"; then fail "a broken file was accepted"; fi
grep -q "Nothing was changed" "$work/bad.err" || fail "the refusal of a broken file: $(cat "$work/bad.err")"
users=$(curl -sf "$url/users.json?ns=shop&shallow=true&auth=$secret" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
[[ "$users" == 3000 ]] || fail "after the refusals the data changed: $users users"
echo "import/export --url: 1 passed, 0 failed"
