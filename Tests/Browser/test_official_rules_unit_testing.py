"""What `@firebase/rules-unit-testing` does (docs/specs/emulator-suite.md §3.5), with the official
Firebase web SDK (`firebase-app.js`, `firebase-database.js`, `firebase-storage.js`, 9.8.1 from
`firebase/firebase-bower`) in headless Chromium, against a `hearth serve --emulator --in-memory
--project demo-app` this module starts for itself (the shared `hearth_server` is not given a project):

* rules loaded over HTTP, as `initializeTestEnvironment` does: `PUT /.settings/rules.json?ns=…` as
  `Bearer owner` with a text/plain body, and `PUT /internal/setRules` with the storage rules file;
* an authenticated context (`connectDatabaseEmulator` / `connectStorageEmulator` with
  `mockUserToken`, so the SDK sends unsigned JWTs) and an unauthenticated one, checked with
  assertSucceeds / assertFails semantics (a failure counts only if it is a permission denial);
* clearing between tests (`PUT /.json` of null as owner, `POST /internal/reset`), checked over REST;
* invalid rules refused with 400 and diagnostics, the previous rules staying in force.

The SDK is never committed. As `scripts/compat/web-sdk` and test_official_storage.py do, the test
takes it from `FIREBASE_BOWER_DIR` (a directory holding `firebase-app.js`, `firebase-database.js`
and `firebase-storage.js`), serves it from an in-process static server under `/firebasejs/<version>/`
and loads it through an import map that sends `https://www.gstatic.com/firebasejs/` there, so
nothing is fetched from the internet. The page is on another origin than Hearth, so every call also
exercises Hearth's CORS answers. run.sh leaves this file out when FIREBASE_BOWER_DIR is unset (and
says so); run directly without it, it fails:

    git clone --depth 1 https://github.com/firebase/firebase-bower /tmp/firebase-bower
    FIREBASE_BOWER_DIR=/tmp/firebase-bower Tests/Browser/run.sh -k rules_unit_testing
"""

import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

import hearth_process
from test_official_storage import official_page  # importing it fails without FIREBASE_BOWER_DIR

PROJECT = 'demo-app'
NAMESPACE = f'{PROJECT}-default-rtdb'
BUCKET = f'{PROJECT}.appspot.com'

DATABASE_RULES = {
    'rules': {
        'users': {'$uid': {'.read': 'auth != null && auth.uid === $uid', '.write': 'auth != null && auth.uid === $uid'}},
        'public': {'.read': True, '.write': False},
    },
}

STORAGE_RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /users/{uid}/{f=**} {
      allow read, write: if request.auth != null && request.auth.uid == uid;
    }
  }
}
"""

# Both would open everything, were they applied; each has its error on line 4.
BAD_STORAGE_RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /{all=**} { allow read, write: if true &&; }
  }
}
"""
BAD_DATABASE_RULES = """{
  "rules": {
    ".read": true, ".write": true,
    "x": {".validate": "newData.isString() &&"}
  }
}
"""

PAGE = '''<!doctype html>
<html><head><meta charset="utf-8"><title>rules-unit-testing with the official SDK</title><link rel="icon" href="data:,">
<script type="importmap">{ "imports": { "https://www.gstatic.com/firebasejs/": "/firebasejs/" } }</script>
</head><body><script type="module">
window.H = {};
window.results = {};
window.log = (name, value) => (window.results[name] ??= []).push(value);
const P = new URLSearchParams(location.search);
try {
  const base = `https://www.gstatic.com/firebasejs/${P.get("sdk")}/`;
  window.A = await import(base + "firebase-app.js");
  window.D = await import(base + "firebase-database.js");
  window.S = await import(base + "firebase-storage.js");
  window.hearthPort = Number(P.get("port"));
  window.ready = true;
} catch (e) {
  window.loadError = String((e && e.stack) || e);
}
</script></body></html>
'''

# The contexts of rules-unit-testing: an app each (named as it names them), its database and storage
# connected to Hearth's port, authenticatedContext(uid) with mockUserToken {sub, user_id},
# unauthenticatedContext() with none. `attempt` runs one operation and reports what assertSucceeds
# and assertFails would see: {ok: true, value} or {ok: false, denied (assertFails's test), code, message}.
# `contexts(body)` deletes the apps afterwards, as cleanup() does.
JS_SETUP = '''
const {A, D, S} = window;
const port = window.hearthPort;
const [project, ns, bucket] = ["demo-app", "demo-app-default-rtdb", "demo-app.appspot.com"];
const apps = [];
const context = (uid) => {
    const app = A.initializeApp({projectId: project, databaseURL: `http://127.0.0.1:${port}?ns=${ns}`, storageBucket: bucket},
                                `_Firebase_RulesUnitTesting_${Date.now()}_${Math.random().toString(36).slice(2)}`);
    apps.push(app);
    const db = D.getDatabase(app), storage = S.getStorage(app);
    const options = uid ? {mockUserToken: {sub: uid, user_id: uid}} : undefined;
    D.connectDatabaseEmulator(db, "127.0.0.1", port, options);
    S.connectStorageEmulator(storage, "127.0.0.1", port, options);
    return {db, storage, dbRef: (path) => D.ref(db, path), fileRef: (path) => S.ref(storage, path)};
};
const attempt = async (work) => {
    try {
        const value = await work();
        return {ok: true, value: value === undefined ? null : value};
    } catch (e) {
        const code = String((e && e.code) || "").toLowerCase(), message = String((e && e.message) || "").toLowerCase();
        const denied = code === "permission-denied" || code === "permission_denied" || message.includes("permission_denied")
            || message.includes("permission denied") || message.includes("unauthorized");
        return {ok: false, denied, code: (e && e.code) || null, message: String((e && e.message) || e)};
    }
};
const read = (r) => D.get(r).then((snapshot) => snapshot.val());
const text = async (r) => new TextDecoder().decode(await S.getBytes(r));
const contexts = async (body) => {
    try { return await body({alice: context("alice"), anon: context(null)}); }
    finally { await Promise.all(apps.map((app) => A.deleteApp(app))); }
};
'''


def request(server, method, path, body=None, headers=None):
    """(status, parsed JSON body or text) of one HTTP request to the emulator; errors are answers too."""
    data = body.encode() if isinstance(body, str) else body
    req = urllib.request.Request(server['url'] + path, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode('utf-8', 'replace')


def load_database_rules(server, source):
    # As initializeTestEnvironment: the rules string as the body, so fetch's default text/plain.
    return request(server, 'PUT', f'/.settings/rules.json?ns={NAMESPACE}', source,
                   {'Authorization': 'Bearer owner', 'Content-Type': 'text/plain;charset=UTF-8'})


def load_storage_rules(server, source):
    body = json.dumps({'rules': {'files': [{'name': 'storage.rules', 'content': source}]}})
    return request(server, 'PUT', '/internal/setRules', body, {'Content-Type': 'application/json'})


def load_rules(server):
    assert load_database_rules(server, json.dumps(DATABASE_RULES)) == (200, {'status': 'ok'})
    status, body = load_storage_rules(server, STORAGE_RULES)
    assert status == 200, body


def owner_get(server, path):
    return request(server, 'GET', f'{path}.json?ns={NAMESPACE}', headers={'Authorization': 'Bearer owner'})


def owner_object(server, name):
    """The object's bytes as the owner reads them (rules do not apply), or the error status."""
    quoted = urllib.parse.quote(name, safe='')
    return request(server, 'GET', f'/v0/b/{BUCKET}/o/{quoted}?alt=media', headers={'Authorization': 'Firebase owner'})


def _ready(url):
    try:
        with urllib.request.urlopen(f'{url}/readyz', timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


@pytest.fixture(scope='module')
def emulator():
    """`hearth serve --emulator --in-memory --project demo-app` on a free port, for this module alone."""
    binary = hearth_process.required_binary()
    root = tempfile.mkdtemp(prefix='hearth-rules-unit-testing-')
    port = hearth_process.free_port()
    url = f'http://127.0.0.1:{port}'
    log_path = os.path.join(root, 'server.log')
    cmd = [str(binary), 'serve', '--host', '127.0.0.1', '--port', str(port), '--emulator', '--in-memory', '--project', PROJECT]
    with open(log_path, 'wb') as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=root)

    def log_tail():
        return pathlib.Path(log_path).read_text(encoding='utf-8', errors='replace')[-6000:]
    try:
        deadline = time.time() + float(os.environ.get('HEARTH_STARTUP_TIMEOUT', '60'))
        while not _ready(url):
            if proc.poll() is not None:
                pytest.fail(f'hearth exited with status {proc.returncode}: {" ".join(cmd)}\n{log_tail()}', pytrace=False)
            if time.time() > deadline:
                pytest.fail(f'hearth was not ready in time: {" ".join(cmd)}\n{log_tail()}', pytrace=False)
            time.sleep(0.1)
        yield {'url': url, 'port': port, 'log': log_tail}
    finally:
        hearth_process.stop(proc)
        if not os.environ.get('HEARTH_KEEP_TMP'):
            shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope='module')
def official(browser, emulator):
    """A window on a static server's page that has loaded the official SDK's app, database and storage."""
    with official_page(browser, ('firebase-app.js', 'firebase-database.js', 'firebase-storage.js'), PAGE,
                       f'port={emulator["port"]}', 'hearth-official-rut-') as page:
        yield page


def denied(outcome, code=None):
    """assertFails: it failed, with a permission denial (and this code, if given)."""
    return outcome['ok'] is False and outcome['denied'] is True and (code is None or outcome['code'] == code)


def test_rules_contexts_and_clearing_as_rules_unit_testing_does(official, emulator):
    assert official.version == '9.8.1'
    load_rules(emulator)
    assert request(emulator, 'PUT', f'/public/motd.json?ns={NAMESPACE}', '"hello"',
                   {'Authorization': 'Bearer owner'}) == (200, 'hello')

    outcome = official.call(JS_SETUP + '''
        return await contexts(async ({alice, anon}) => ({
            aliceWrites: await attempt(() => D.set(alice.dbRef("users/alice/name"), "Alice")),
            aliceReads: await attempt(() => read(alice.dbRef("users/alice/name"))),
            aliceWritesBob: await attempt(() => D.set(alice.dbRef("users/bob/name"), "Mallory")),
            anonReadsAlice: await attempt(() => read(anon.dbRef("users/alice"))),
            anonWritesAlice: await attempt(() => D.set(anon.dbRef("users/alice/name"), "Eve")),
            anonReadsPublic: await attempt(() => read(anon.dbRef("public"))),
            aliceReadsPublic: await attempt(() => read(alice.dbRef("public/motd"))),
            aliceWritesPublic: await attempt(() => D.set(alice.dbRef("public/motd"), "defaced")),
            anonWritesPublic: await attempt(() => D.update(anon.dbRef("public"), {motd: "defaced"})),

            aliceUploads: await attempt(async () => {
                const result = await S.uploadString(alice.fileRef("users/alice/a.txt"), "hello from alice", "raw",
                                                    {contentType: "text/plain"});
                return {path: result.ref.fullPath, size: result.metadata.size, bucket: result.metadata.bucket};
            }),
            aliceGetsBytes: await attempt(() => text(alice.fileRef("users/alice/a.txt"))),
            aliceGetsMetadata: await attempt(async () => {
                const m = await S.getMetadata(alice.fileRef("users/alice/a.txt"));
                return {size: m.size, contentType: m.contentType, fullPath: m.fullPath};
            }),
            aliceFetchesDownloadURL: await attempt(async () =>
                (await fetch(await S.getDownloadURL(alice.fileRef("users/alice/a.txt")), {credentials: "omit"})).text()),
            anonUploads: await attempt(() => S.uploadString(anon.fileRef("users/alice/b.txt"), "from nobody")),
            anonGetsBytes: await attempt(() => text(anon.fileRef("users/alice/a.txt"))),
            aliceUploadsToBob: await attempt(() => S.uploadString(alice.fileRef("users/bob/x.txt"), "from alice")),
        }));
    ''')
    assert outcome['aliceWrites'] == {'ok': True, 'value': None}
    assert outcome['aliceReads'] == {'ok': True, 'value': 'Alice'}
    assert denied(outcome['aliceWritesBob'], 'PERMISSION_DENIED'), outcome['aliceWritesBob']
    assert denied(outcome['anonReadsAlice']), outcome['anonReadsAlice']
    assert denied(outcome['anonWritesAlice'], 'PERMISSION_DENIED'), outcome['anonWritesAlice']
    assert outcome['anonReadsPublic'] == {'ok': True, 'value': {'motd': 'hello'}}
    assert outcome['aliceReadsPublic'] == {'ok': True, 'value': 'hello'}
    assert denied(outcome['aliceWritesPublic'], 'PERMISSION_DENIED'), outcome['aliceWritesPublic']
    assert denied(outcome['anonWritesPublic'], 'PERMISSION_DENIED'), outcome['anonWritesPublic']

    assert outcome['aliceUploads'] == {'ok': True, 'value': {'path': 'users/alice/a.txt', 'size': 16, 'bucket': BUCKET}}
    assert outcome['aliceGetsBytes'] == {'ok': True, 'value': 'hello from alice'}
    assert outcome['aliceGetsMetadata'] == {'ok': True, 'value': {'size': 16, 'contentType': 'text/plain',
                                                                   'fullPath': 'users/alice/a.txt'}}
    assert outcome['aliceFetchesDownloadURL'] == {'ok': True, 'value': 'hello from alice'}
    for name in ('anonUploads', 'anonGetsBytes', 'aliceUploadsToBob'):
        assert denied(outcome[name], 'storage/unauthorized'), (name, outcome[name])

    # What the server holds: the allowed writes only.
    assert owner_get(emulator, '/') == (200, {'users': {'alice': {'name': 'Alice'}}, 'public': {'motd': 'hello'}})
    assert owner_object(emulator, 'users/alice/a.txt') == (200, 'hello from alice')
    assert owner_object(emulator, 'users/alice/b.txt')[0] == 404
    assert owner_object(emulator, 'users/bob/x.txt')[0] == 404

    # Between tests: clearDatabase() and a clean bucket.
    assert request(emulator, 'PUT', f'/.json?ns={NAMESPACE}', 'null', {'Authorization': 'Bearer owner'}) == (200, None)
    status, _ = request(emulator, 'POST', '/internal/reset')
    assert status == 200
    assert owner_get(emulator, '/') == (200, None)
    assert request(emulator, 'GET', f'/.json?ns={NAMESPACE}&auth=owner') == (200, None)
    assert owner_object(emulator, 'users/alice/a.txt')[0] == 404
    assert request(emulator, 'GET', f'/v0/b/{BUCKET}/o?prefix=users%2Falice%2F',
                   headers={'Authorization': 'Firebase owner'}) == (200, {'prefixes': [], 'items': []})

    # Fresh contexts see the cleared state, and the rules are still those loaded (clearing is not a reset of rules).
    after = official.call(JS_SETUP + '''
        return await contexts(async ({alice, anon}) => ({
            aliceReads: await attempt(() => read(alice.dbRef("users/alice/name"))),
            aliceGetsMetadata: await attempt(() => S.getMetadata(alice.fileRef("users/alice/a.txt"))),
            aliceLists: await attempt(async () => (await S.listAll(alice.fileRef("users/alice"))).items.map((r) => r.fullPath)),
            anonReadsAlice: await attempt(() => read(anon.dbRef("users/alice"))),
            anonUploads: await attempt(() => S.uploadString(anon.fileRef("users/alice/b.txt"), "from nobody")),
        }));
    ''')
    assert after['aliceReads'] == {'ok': True, 'value': None}
    assert after['aliceGetsMetadata']['ok'] is False and after['aliceGetsMetadata']['code'] == 'storage/object-not-found'
    assert after['aliceLists'] == {'ok': True, 'value': []}
    assert denied(after['anonReadsAlice']), after['anonReadsAlice']
    assert denied(after['anonUploads'], 'storage/unauthorized'), after['anonUploads']


def test_invalid_rules_are_refused_with_diagnostics_and_the_old_rules_stay(official, emulator):
    load_rules(emulator)

    status, body = load_storage_rules(emulator, BAD_STORAGE_RULES)
    assert status == 400, body
    issues = body.get('issues') if isinstance(body, dict) else None
    assert issues, body
    assert issues[0]['file'] == 'storage.rules' and issues[0]['line'] == 4 and issues[0]['message'], body

    status, body = load_database_rules(emulator, BAD_DATABASE_RULES)
    assert status == 400, body
    assert isinstance(body, dict) and re.search(r'\b4:\d+: ', body.get('error', '')), body

    outcome = official.call(JS_SETUP + '''
        return await contexts(async ({alice, anon}) => ({
            aliceUploads: await attempt(async () => (await S.uploadString(alice.fileRef("users/alice/c.txt"), "still mine")).metadata.size),
            aliceReadsBack: await attempt(() => text(alice.fileRef("users/alice/c.txt"))),
            aliceUploadsToBob: await attempt(() => S.uploadString(alice.fileRef("users/bob/c.txt"), "x")),
            anonUploads: await attempt(() => S.uploadString(anon.fileRef("elsewhere/c.txt"), "x")),
            aliceWrites: await attempt(() => D.set(alice.dbRef("users/alice/name"), "Alice")),
            aliceWritesPublic: await attempt(() => D.set(alice.dbRef("public/x"), 1)),
            anonReadsAlice: await attempt(() => read(anon.dbRef("users/alice"))),
        }));
    ''')
    assert outcome['aliceUploads'] == {'ok': True, 'value': 10}
    assert outcome['aliceReadsBack'] == {'ok': True, 'value': 'still mine'}
    assert denied(outcome['aliceUploadsToBob'], 'storage/unauthorized'), outcome['aliceUploadsToBob']
    assert denied(outcome['anonUploads'], 'storage/unauthorized'), outcome['anonUploads']
    assert outcome['aliceWrites'] == {'ok': True, 'value': None}
    assert denied(outcome['aliceWritesPublic'], 'PERMISSION_DENIED'), outcome['aliceWritesPublic']
    assert denied(outcome['anonReadsAlice']), outcome['anonReadsAlice']
    assert owner_get(emulator, '/public') == (200, None)
