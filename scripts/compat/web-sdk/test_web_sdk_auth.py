"""The official Firebase web SDK's auth module (headless Chromium) against `hearth serve --emulator`.

page.html with auth=1 also loads firebase-auth.js and calls
connectAuthEmulator(auth, "http://127.0.0.1:<HEARTH_PORT>"), so the SDK talks to Hearth's Identity
Toolkit API exactly as to Firebase's Auth emulator; its database connection then sends the signed-in
user's ID token over the WebSocket. Run through run.sh.
"""

import json
import os
import time
import urllib.request

import pytest

from conftest import HEARTH_PORT, OpError

NAMESPACE = "demo-auth-rtdb"
DBURL = f"https://{NAMESPACE}.firebaseio.com"


def unique_email(tag):
    return f"{tag}-{int(time.time() * 1000) % 10_000_000}@example.com"


def fails_with(page, code, op, *args):
    try:
        page.op(op, *args)
    except OpError as e:
        assert code in str(e), f"{op}{args}: expected {code}, got {e}"
        return
    pytest.fail(f"{op}{args} succeeded; expected {code}")


def put_rules(rules):
    req = urllib.request.Request(
        f"http://127.0.0.1:{HEARTH_PORT}/.settings/rules.json?ns={NAMESPACE}",
        data=json.dumps(rules).encode(), method="PUT",
        headers={"Authorization": "Bearer owner", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200, r.status


def test_sign_up_sign_in_and_the_sdks_error_codes(open_page):
    page = open_page("auth", connect=False, auth=True, dburl=DBURL)
    email = unique_email("ada")
    user = page.op("authSignUp", email, "first-password")
    assert user["email"] == email and user["isAnonymous"] is False
    assert user["providers"] == ["password"]
    page.wait(lambda: page.js("return H.authStates.some(s => s && s.email === arguments[0])", email), 10,
              "onAuthStateChanged with the new user")
    token = page.op("authTokenResult", False)
    assert token["signInProvider"] == "password"
    assert token["claims"]["email"] == email and token["claims"]["user_id"] == user["uid"]

    fails_with(page, "auth/email-already-in-use", "authSignUp", email, "another-password")
    fails_with(page, "auth/weak-password", "authSignUp", unique_email("weak"), "12345")
    fails_with(page, "auth/invalid-email", "authSignUp", "not-an-email", "secret-password")

    page.op("authSignOut")
    page.wait(lambda: page.js("return H.authStates.length > 0 && H.authStates[H.authStates.length - 1] === null"), 10,
              "onAuthStateChanged(null) after signOut")
    fails_with(page, "auth/wrong-password", "authSignIn", email, "wrong-password")
    fails_with(page, "auth/user-not-found", "authSignIn", unique_email("ghost"), "whatever-password")
    again = page.op("authSignIn", email, "first-password")
    assert again["uid"] == user["uid"]

    # A password change keeps the user signed in; the new password works, the old one does not.
    page.op("authUpdatePassword", "second-password")
    assert page.op("authCurrentUser")["uid"] == user["uid"]
    assert page.op("authTokenResult", True)["claims"]["user_id"] == user["uid"]
    page.op("authSignOut")
    fails_with(page, "auth/wrong-password", "authSignIn", email, "first-password")
    assert page.op("authSignIn", email, "second-password")["uid"] == user["uid"]

    named = page.op("authUpdateProfile", "Ada L.")
    assert named["displayName"] == "Ada L."
    page.op("authDeleteUser")
    assert page.op("authCurrentUser") is None
    fails_with(page, "auth/user-not-found", "authSignIn", email, "second-password")


def test_anonymous_sign_in(open_page):
    page = open_page("anon", connect=False, auth=True, dburl=DBURL)
    user = page.op("authSignInAnonymously")
    assert user["isAnonymous"] is True and user["email"] is None
    assert page.op("authTokenResult", False)["signInProvider"] == "anonymous"


def test_the_users_token_reaches_database_rules_over_the_websocket(open_page):
    put_rules({"rules": {"profiles": {"$uid": {
        ".read": "auth != null && auth.uid == $uid",
        ".write": "auth != null && auth.uid == $uid && auth.token.firebase.sign_in_provider == 'password'"}}}})
    page = open_page("rules", connect=False, auth=True, dburl=DBURL)
    user = page.op("authSignUp", unique_email("rules"), "secret-password")
    page.wait_connected()
    page.op("set", f"profiles/{user['uid']}/name", "me")
    assert page.op("get", f"profiles/{user['uid']}/name")["val"] == "me"
    try:
        page.op("set", "profiles/someone-else/name", "x")
        denied = None
    except OpError as e:
        denied = str(e)
    assert denied and "permission_denied" in denied.lower(), denied
    page.drain_logs()
    auth_frames = [json.loads(p) for _, d, p in page.frames if d == "C->S" and '"a":"auth"' in p]
    assert auth_frames, "the SDK sent no auth request"
    cred = auth_frames[-1]["d"]["b"]["cred"]
    assert cred.count(".") == 2 and not cred.endswith("."), "expected Hearth's signed ID token"


def oob_codes(project):
    """The emulator hook's list of codes sent (as the Auth emulator's REST API gives it)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{HEARTH_PORT}/emulator/v1/projects/{project}/oobCodes", timeout=10) as r:
        return json.loads(r.read())["oobCodes"]


def test_password_reset_through_the_oob_code(open_page):
    # Client calls name no project: they act on the server's (HEARTH_PROJECT, else 'hearth').
    project = os.environ.get("HEARTH_PROJECT") or "hearth"
    page = open_page("reset", connect=False, auth=True, dburl=DBURL)
    email = unique_email("reset")
    user = page.op("authSignUp", email, "forgotten-password")
    page.op("authSignOut")
    page.op("authSendPasswordReset", email)
    codes = [c for c in oob_codes(project) if c["email"] == email and c["requestType"] == "PASSWORD_RESET"]
    assert len(codes) == 1, codes
    code = codes[0]["oobCode"]
    assert f"oobCode={code}" in codes[0]["oobLink"] and "mode=resetPassword" in codes[0]["oobLink"]
    assert page.op("authVerifyPasswordResetCode", code) == email
    fails_with(page, "auth/invalid-action-code", "authConfirmPasswordReset", "not-a-code", "new-password-1")
    fails_with(page, "auth/weak-password", "authConfirmPasswordReset", code, "123")
    page.op("authConfirmPasswordReset", code, "new-password-1")
    # The code is used up; the old password is refused and the new one signs the same user in.
    fails_with(page, "auth/invalid-action-code", "authConfirmPasswordReset", code, "new-password-2")
    fails_with(page, "auth/wrong-password", "authSignIn", email, "forgotten-password")
    assert page.op("authSignIn", email, "new-password-1")["uid"] == user["uid"]
    # An unknown email: the SDK maps Firebase's answer to its own error.
    fails_with(page, "auth/user-not-found", "authSendPasswordReset", unique_email("nobody"))
