#!/usr/bin/env bash
# Builds nothing: runs the Firebase port (`firebase-port`, Examples/FirebasePort: the Timeline app's Swift
# core as written against firebase-ios-sdk, imports changed to Hearth) against a fresh
# `hearth serve --emulator --in-memory` — database, accounts and files on one port, the Timeline
# namespace under the app's own rules — checks that every step passed, then checks on the server what
# the app left behind. Exits non-zero on failure.
#
#   Tests/Examples/firebase-port.sh     (binaries: $HEARTH_BIN and $FIREBASE_PORT_BIN, default .build/debug/…)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
hearth="${HEARTH_BIN:-$repo/.build/debug/hearth}"
port_bin="${FIREBASE_PORT_BIN:-$repo/.build/debug/firebase-port}"
for binary in "$hearth" "$port_bin"; do
    [[ -x "$binary" ]] || { echo "FAIL: $binary is missing: run 'swift build' first" >&2; exit 1; }
done

source "$repo/Tests/Examples/lib.sh"
port=$(free_port)
log=$(mktemp)
"$hearth" serve --emulator --in-memory --port "$port" >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -f "$log"' EXIT

# As the emulator's admin: the Timeline rules want a user.
wait_for_server "http://127.0.0.1:$port/.json?ns=timeline&shallow=true" "$server" "$log" -H "Authorization: Bearer owner"

set +e
output=$(timeout 120 "$port_bin" "http://127.0.0.1:$port?ns=timeline" 2>&1)
status=$?
set -e
echo "$output"
[[ $status -eq 0 ]] || { echo "FAIL: firebase-port exited with $status"; echo "--- server log:"; cat "$log"; exit 1; }
grep -qE '^firebase-port: [0-9]+ passed, 0 failed$' <<<"$output" || { echo "FAIL: firebase-port did not print its summary"; exit 1; }
! grep -q '^FAIL ' <<<"$output" || { echo "FAIL: a step failed"; exit 1; }

# The server holds what the app left: bob's post alone (alice deleted hers), with alice's remaining
# comment and no likes, and both profiles, alice following bob.
posts=$(curl -sf -H "Authorization: Bearer owner" "http://127.0.0.1:$port/posts.json?ns=timeline")
users=$(curl -sf -H "Authorization: Bearer owner" "http://127.0.0.1:$port/users.json?ns=timeline")
python3 - "$posts" "$users" <<'PY' || { echo "FAIL: the server holds posts $posts and users $users"; exit 1; }
import json, sys
posts, users = json.loads(sys.argv[1]), json.loads(sys.argv[2])
[(post_id, post)] = posts.items()
assert post["username"] == "bob" and post["caption"] == "bob's first", post
assert post["image"] == f"images/{post_id}.jpg", post
[comment] = post["comments"].values()
assert comment["text"] == "nice photo" and comment["username"] == "alice" and comment["post"] == post_id, comment
assert "likes" not in post, post
by_name = {user["username"]: (uid, user) for uid, user in users.items()}
assert set(by_name) == {"alice", "bob"}, users
alice_uid, alice = by_name["alice"]
bob_uid, _ = by_name["bob"]
assert post["uid"] == bob_uid and comment["uid"] == alice_uid, (post, users)
assert alice["follows"] == {bob_uid: True}, alice
assert alice["url"] == "https://alice.example/codable", alice
PY
# And the photo's bytes: bob's image is still in the bucket, alice's is gone.
post_id=$(python3 -c 'import json, sys; print(next(iter(json.loads(sys.argv[1]))))' "$posts")
curl -sf -o /dev/null -H "Authorization: Bearer owner" \
    "http://127.0.0.1:$port/v0/b/timeline.appspot.com/o/images%2F$post_id.jpg?alt=media" \
    || { echo "FAIL: bob's image is not in storage"; exit 1; }
echo "firebase-port (server side): 1 passed, 0 failed"
