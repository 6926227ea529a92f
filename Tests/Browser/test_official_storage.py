"""The official Firebase web SDK's storage module (`firebase-storage.js`, 9.8.1 from
`firebase/firebase-bower`) in headless Chromium against the live hearth server, through
`connectStorageEmulator`: uploads (multipart, resumable with progress, strings), download URLs,
metadata, listing, deletion, and storage rules refusing with `storage/unauthorized`.

The SDK is never committed. As `scripts/compat/web-sdk` does, the tests take it from
`FIREBASE_BOWER_DIR` (a directory holding `firebase-app.js` and `firebase-storage.js`), serve it from
an in-process static server under `/firebasejs/<version>/`, and load it through an import map that
sends `https://www.gstatic.com/firebasejs/` there, so nothing is fetched from the internet:

    git clone --depth 1 https://github.com/firebase/firebase-bower /tmp/firebase-bower
    FIREBASE_BOWER_DIR=/tmp/firebase-bower Tests/Browser/run.sh -k official

The page is on another origin than Hearth, so every call also exercises Hearth's CORS answers.
Without FIREBASE_BOWER_DIR these tests are reported as skipped, with that reason (the SDK cannot be
fetched where CI runs); with it set but the files missing, they fail.
"""

import contextlib
import functools
import http.server
import os
import pathlib
import re
import shutil
import tempfile
import threading
import uuid

import pytest
from selenium.webdriver.support.ui import WebDriverWait

import hearth_process
from conftest import Page

SDK_DIR = os.environ.get('FIREBASE_BOWER_DIR', '')

if not SDK_DIR:
    # run.sh leaves this file out when FIREBASE_BOWER_DIR is unset (and says so); run directly, it fails.
    raise pytest.UsageError('FIREBASE_BOWER_DIR is not set: the official Firebase web SDK is needed (see this file\'s docstring)')

PAGE = '''<!doctype html>
<html><head><meta charset="utf-8"><title>official storage SDK</title><link rel="icon" href="data:,">
<script type="importmap">{ "imports": { "https://www.gstatic.com/firebasejs/": "/firebasejs/" } }</script>
</head><body><script type="module">
window.H = {};
window.results = {};
window.log = (name, value) => (window.results[name] ??= []).push(value);
const P = new URLSearchParams(location.search);
try {
  const base = `https://www.gstatic.com/firebasejs/${P.get("sdk")}/`;
  window.A = await import(base + "firebase-app.js");
  window.S = await import(base + "firebase-storage.js");
  window.hearthPort = Number(P.get("port"));
  window.ready = true;
} catch (e) {
  window.loadError = String((e && e.stack) || e);
}
</script></body></html>
'''

# An app of its own per call (a fresh storage instance), connected to Hearth, and small helpers.
JS_SETUP = '''
const {A, S} = window;
const app = A.initializeApp({apiKey: "fake-api-key", projectId: "demo-proj", storageBucket: "demo-proj.appspot.com"},
                            "app-" + Math.random().toString(36).slice(2));
const storage = S.getStorage(app);
S.connectStorageEmulator(storage, "127.0.0.1", window.hearthPort);
const pattern = (size, seed = 7) => { const b = new Uint8Array(size); for (let i = 0; i < size; i++) b[i] = (i * 31 + seed) & 255; return b; };
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const codeOf = async (work) => { try { await work(); return "ok"; } catch (e) { return e.code || String(e); } };
'''

OPEN_RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /{allPaths=**} { allow read, write: if true; }
  }
}
"""

LOCKED_RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /official/{folder}/open/{allPaths=**} { allow read, write: if true; }
    match /official/{folder}/users/{uid}/{allPaths=**} {
      allow read: if request.auth != null;
      allow write: if request.auth != null && request.auth.uid == uid;
    }
  }
}
"""


def _sdk_version(directory):
    """The version the modules import each other under (https://www.gstatic.com/firebasejs/<v>/…)."""
    source = (directory / 'firebase-storage.js').read_text(encoding='utf-8')
    match = re.search(r'https://www\.gstatic\.com/firebasejs/([0-9][0-9A-Za-z.-]*)/firebase-app\.js', source)
    if not match:
        pytest.fail(f'cannot find the SDK version in {directory / "firebase-storage.js"}', pytrace=False)
    return match.group(1)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


@contextlib.contextmanager
def official_page(browser, modules, page, query, prefix):
    """A window on a static server's `page` (served beside the official SDK's `modules`, under
    /firebasejs/<version>/), opened with `query` plus `sdk=<version>`, once its script sets
    `window.ready` (or fails the test with its `window.loadError`). Shared by the official SDK's tests."""
    directory = pathlib.Path(SDK_DIR)
    for name in modules:
        if not (directory / name).is_file():
            pytest.fail(f'FIREBASE_BOWER_DIR={SDK_DIR} has no {name}', pytrace=False)
    version = _sdk_version(directory)
    www = tempfile.mkdtemp(prefix=prefix)
    os.makedirs(os.path.join(www, 'firebasejs'))
    os.symlink(directory.resolve(), os.path.join(www, 'firebasejs', version))
    pathlib.Path(www, 'page.html').write_text(page, encoding='utf-8')
    port = hearth_process.free_port()
    web = http.server.ThreadingHTTPServer(('127.0.0.1', port), functools.partial(_Quiet, directory=www))
    threading.Thread(target=web.serve_forever, daemon=True).start()
    home = browser.current_window_handle
    browser.switch_to.new_window('window')
    handle = browser.current_window_handle
    try:
        browser.get(f'http://127.0.0.1:{port}/page.html?sdk={version}&{query}')
        WebDriverWait(browser, 30, poll_frequency=0.05).until(
            lambda d: d.execute_script('return window.ready === true || !!window.loadError'))
        error = browser.execute_script('return window.loadError || null')
        if error:
            pytest.fail(f'the official SDK did not load: {error}', pytrace=False)
        opened = Page(browser, handle, f'official SDK {version}')
        opened.version = version
        yield opened
    finally:
        if handle in browser.window_handles:
            browser.switch_to.window(handle)
            browser.close()
        browser.switch_to.window(home)
        web.shutdown()
        web.server_close()
        shutil.rmtree(www, ignore_errors=True)


@pytest.fixture(scope='module')
def official(browser, hearth_server):
    """A window on a static server's page that has loaded the official SDK's app and storage modules."""
    with official_page(browser, ('firebase-app.js', 'firebase-storage.js'), PAGE, f'port={hearth_server.port}',
                       'hearth-official-storage-') as page:
        yield page


@pytest.fixture
def folder():
    return f'official/{uuid.uuid4().hex[:10]}'


def test_the_sdk_is_9_8_1_and_upload_bytes_round_trips_with_metadata(official, folder):
    assert official.version == '9.8.1'
    outcome = official.call(JS_SETUP + '''
        const r = S.ref(storage, `${args[0]}/hello.txt`);
        const bytes = new TextEncoder().encode("Hello from the official SDK ✓");
        const result = await S.uploadBytes(r, bytes, {contentType: "text/plain", customMetadata: {owner: "ada"}});
        const m = await S.getMetadata(r);
        const back = new Uint8Array(await S.getBytes(r));
        const limited = new Uint8Array(await S.getBytes(r, 5));
        const empty = S.ref(storage, `${args[0]}/empty.bin`);
        await S.uploadBytes(empty, new Uint8Array(0));
        return {uploaded: {size: result.metadata.size, type: result.metadata.contentType, path: result.ref.fullPath},
                metadata: {size: m.size, contentType: m.contentType, custom: m.customMetadata, bucket: m.bucket, fullPath: m.fullPath,
                           name: m.name, md5: typeof m.md5Hash, generation: typeof m.generation, timeCreated: typeof m.timeCreated},
                same: same(back, bytes), limited: new TextDecoder().decode(limited),
                emptyBytes: (await S.getBytes(empty)).byteLength,
                blobType: (await S.getBlob(r)).type};
    ''', folder)
    size = len('Hello from the official SDK ✓'.encode())
    assert outcome['uploaded'] == {'size': size, 'type': 'text/plain', 'path': f'{folder}/hello.txt'}
    assert outcome['metadata'] == {'size': size, 'contentType': 'text/plain', 'custom': {'owner': 'ada'},
                                   'bucket': 'demo-proj.appspot.com', 'fullPath': f'{folder}/hello.txt', 'name': 'hello.txt',
                                   'md5': 'string', 'generation': 'string', 'timeCreated': 'string'}
    assert outcome['same'] is True
    assert outcome['limited'] == 'Hello'
    assert outcome['emptyBytes'] == 0
    assert outcome['blobType'] == 'text/plain'


def test_get_bytes_with_a_limit_reads_an_empty_object(official, folder):
    """getBytes(ref, max) sends `Range: bytes=0-max`; for an empty object the SDK accepts only 200
    or 206 (GCS answers 200: it does not honour ranges on small objects)."""
    outcome = official.call(JS_SETUP + '''
        const empty = S.ref(storage, `${args[0]}/empty.bin`);
        await S.uploadBytes(empty, new Uint8Array(0));
        const limited = await codeOf(() => S.getBytes(empty, 100));
        const blob = await codeOf(() => S.getBlob(empty, 100));
        const nonEmpty = S.ref(storage, `${args[0]}/ten.bin`);
        await S.uploadBytes(nonEmpty, pattern(10));
        return {limited, blob, beyondEnd: (await S.getBytes(nonEmpty, 100)).byteLength};
    ''', folder)
    assert outcome == {'limited': 'ok', 'blob': 'ok', 'beyondEnd': 10}


def test_upload_bytes_resumable_reports_progress_and_can_be_paused_and_canceled(official, folder):
    outcome = official.call(JS_SETUP + '''
        const size = 1536 * 1024 + 99;
        const bytes = pattern(size);
        const r = S.ref(storage, `${args[0]}/big.bin`);
        const task = S.uploadBytesResumable(r, bytes, {contentType: "application/x-test"});
        const events = [];
        let paused = false, completed = 0;
        task.on("state_changed", (s) => {
            events.push([s.state, s.bytesTransferred, s.totalBytes]);
            if (!paused && s.bytesTransferred > 0) { paused = true; task.pause(); setTimeout(() => task.resume(), 300); }
        }, (e) => events.push(["error", e.code]), () => { completed++; });
        const snap = await task;
        await new Promise((resolve) => setTimeout(resolve, 0));
        const roundTrip = same(new Uint8Array(await S.getBytes(r)), bytes);

        const doomed = S.ref(storage, `${args[0]}/canceled.bin`);
        const second = S.uploadBytesResumable(doomed, pattern(3 * 1024 * 1024, 5));
        second.on("state_changed", (s) => { if (s.bytesTransferred > 0) second.cancel(); }, () => {});
        const canceled = await codeOf(() => second);
        return {events, completed, state: snap.state, transferred: snap.bytesTransferred, total: snap.totalBytes,
                size: snap.metadata.size, type: snap.metadata.contentType, roundTrip, canceled,
                canceledState: second.snapshot.state, gone: await codeOf(() => S.getMetadata(doomed))};
    ''', folder)
    size = 1536 * 1024 + 99
    events = outcome['events']
    assert outcome['completed'] == 1
    assert outcome['state'] == 'success'
    assert outcome['transferred'] == outcome['total'] == size
    assert ['paused'] == sorted({e[0] for e in events} - {'running'}), events
    transferred = [e[1] for e in events if e[0] == 'running']
    assert transferred[-1] == size
    assert len(set(transferred)) >= 3, transferred
    assert outcome['size'] == size and outcome['type'] == 'application/x-test'
    assert outcome['roundTrip'] is True
    assert outcome['canceled'] == 'storage/canceled'
    assert outcome['canceledState'] == 'canceled'
    assert outcome['gone'] == 'storage/object-not-found'


def test_upload_string_base64_and_data_url(official, folder):
    outcome = official.call(JS_SETUP + '''
        const text = async (r) => new TextDecoder().decode(await S.getBytes(r));
        const b64 = S.ref(storage, `${args[0]}/b64.txt`);
        const first = await S.uploadString(b64, "SGVsbG8sIGJhc2U2NA==", "base64");
        const data = S.ref(storage, `${args[0]}/data.txt`);
        const second = await S.uploadString(data, "data:text/plain;base64,SGVsbG8sIGRhdGEgVVJM", S.StringFormat.DATA_URL);
        const raw = S.ref(storage, `${args[0]}/raw.txt`);
        await S.uploadString(raw, "raw ✓");
        return {b64: await text(b64), b64Size: first.metadata.size, data: await text(data), dataType: second.metadata.contentType,
                raw: await text(raw)};
    ''', folder)
    assert outcome == {'b64': 'Hello, base64', 'b64Size': 13, 'data': 'Hello, data URL', 'dataType': 'text/plain', 'raw': 'raw ✓'}


def test_get_download_url_then_fetch(official, folder):
    outcome = official.call(JS_SETUP + '''
        const r = S.ref(storage, `${args[0]}/photo 1+2.png`);
        const bytes = pattern(4000, 3);
        await S.uploadBytes(r, bytes, {contentType: "image/png"});
        const url = await S.getDownloadURL(r);
        const response = await fetch(url, {credentials: "omit"});
        return {url, status: response.status, type: response.headers.get("Content-Type"),
                same: same(new Uint8Array(await response.arrayBuffer()), bytes), fromUrl: S.ref(storage, url).fullPath};
    ''', folder)
    assert outcome['status'] == 200
    assert outcome['type'] == 'image/png'
    assert outcome['same'] is True
    assert outcome['fromUrl'] == f'{folder}/photo 1+2.png'
    assert outcome['url'].startswith('http://127.0.0.1:')
    assert '/v0/b/demo-proj.appspot.com/o/' in outcome['url'] and '?alt=media&token=' in outcome['url']


def test_get_metadata_and_update_metadata(official, folder):
    outcome = official.call(JS_SETUP + '''
        const r = S.ref(storage, `${args[0]}/doc.json`);
        await S.uploadString(r, "{}", "raw", {contentType: "application/json", customMetadata: {a: "1", b: "2"}});
        const before = await S.getMetadata(r);
        const updated = await S.updateMetadata(r, {cacheControl: "public, max-age=60", contentLanguage: "en", customMetadata: {b: null, c: "3"}});
        const cleared = await S.updateMetadata(r, {contentLanguage: null});
        const after = await S.getMetadata(r);
        return {before: {type: before.contentType, custom: before.customMetadata, metageneration: before.metageneration},
                updated: {cacheControl: updated.cacheControl, language: updated.contentLanguage, custom: updated.customMetadata,
                          metageneration: updated.metageneration, type: updated.contentType},
                cleared: cleared.contentLanguage ?? null,
                after: {cacheControl: after.cacheControl, custom: after.customMetadata, metageneration: after.metageneration},
                missing: await codeOf(() => S.updateMetadata(S.ref(storage, `${args[0]}/none`), {cacheControl: "x"}))};
    ''', folder)
    assert outcome['before'] == {'type': 'application/json', 'custom': {'a': '1', 'b': '2'}, 'metageneration': '1'}
    assert outcome['updated'] == {'cacheControl': 'public, max-age=60', 'language': 'en', 'custom': {'a': '1', 'c': '3'},
                                  'metageneration': '2', 'type': 'application/json'}
    assert outcome['cleared'] is None
    assert outcome['after'] == {'cacheControl': 'public, max-age=60', 'custom': {'a': '1', 'c': '3'}, 'metageneration': '3'}
    assert outcome['missing'] == 'storage/object-not-found'


def test_list_all_list_pages_and_delete_object(official, folder):
    outcome = official.call(JS_SETUP + '''
        const base = args[0];
        for (const name of ["a.txt", "b.txt", "c.txt", "sub/x.txt", "sub/deeper/y.txt", "other/z.txt"]) {
            await S.uploadString(S.ref(storage, `${base}/${name}`), name);
        }
        const all = await S.listAll(S.ref(storage, base));
        const pages = [];
        let page = await S.list(S.ref(storage, base), {maxResults: 2});
        pages.push([...page.prefixes, ...page.items].map((r) => r.fullPath));
        while (page.nextPageToken) {
            page = await S.list(S.ref(storage, base), {maxResults: 2, pageToken: page.nextPageToken});
            pages.push([...page.prefixes, ...page.items].map((r) => r.fullPath));
        }
        const victim = S.ref(storage, `${base}/a.txt`);
        await S.deleteObject(victim);
        return {prefixes: all.prefixes.map((r) => r.fullPath), items: all.items.map((r) => r.fullPath), pages,
                gone: await codeOf(() => S.getMetadata(victim)), deleteAgain: await codeOf(() => S.deleteObject(victim)),
                after: (await S.listAll(S.ref(storage, base))).items.map((r) => r.name)};
    ''', folder)
    assert outcome['prefixes'] == [f'{folder}/other', f'{folder}/sub']
    assert outcome['items'] == [f'{folder}/a.txt', f'{folder}/b.txt', f'{folder}/c.txt']
    assert [len(p) for p in outcome['pages']] == [2, 2, 1]
    assert sorted(n for p in outcome['pages'] for n in p) == sorted(outcome['prefixes'] + outcome['items'])
    assert outcome['gone'] == 'storage/object-not-found'
    assert outcome['deleteAgain'] == 'storage/object-not-found'
    assert outcome['after'] == ['b.txt', 'c.txt']


def test_rules_refuse_with_storage_unauthorized(official, folder, hearth_server):
    from test_hearth_storage import put_storage_rules
    put_storage_rules(hearth_server.base_url, LOCKED_RULES)
    try:
        outcome = official.call(JS_SETUP + '''
            const base = args[0];
            const signedIn = A.initializeApp({apiKey: "fake-api-key", projectId: "demo-proj", storageBucket: "demo-proj.appspot.com"},
                                             "ada-" + Math.random().toString(36).slice(2));
            const adaStorage = S.getStorage(signedIn);
            S.connectStorageEmulator(adaStorage, "127.0.0.1", window.hearthPort, {mockUserToken: {sub: "ada"}});
            const codes = {};
            codes.openWrite = await codeOf(() => S.uploadString(S.ref(storage, `${base}/open/x.txt`), "x"));
            codes.anonymousWrite = await codeOf(() => S.uploadString(S.ref(storage, `${base}/users/ada/x.txt`), "x"));
            codes.anonymousResumable = await codeOf(() => S.uploadBytesResumable(S.ref(storage, `${base}/users/ada/big.bin`), pattern(400000)));
            codes.adaWrite = await codeOf(() => S.uploadString(S.ref(adaStorage, `${base}/users/ada/x.txt`), "ada's"));
            codes.adaElsewhere = await codeOf(() => S.uploadString(S.ref(adaStorage, `${base}/users/bob/x.txt`), "x"));
            codes.anonymousRead = await codeOf(() => S.getBytes(S.ref(storage, `${base}/users/ada/x.txt`)));
            codes.anonymousMetadata = await codeOf(() => S.getMetadata(S.ref(storage, `${base}/users/ada/x.txt`)));
            codes.anonymousDelete = await codeOf(() => S.deleteObject(S.ref(storage, `${base}/users/ada/x.txt`)));
            codes.anonymousList = await codeOf(() => S.listAll(S.ref(storage, `${base}/users/ada`)));
            codes.adaRead = await codeOf(() => S.getBytes(S.ref(adaStorage, `${base}/users/ada/x.txt`)));
            const url = await S.getDownloadURL(S.ref(adaStorage, `${base}/users/ada/x.txt`));
            const viaUrl = await (await fetch(url, {credentials: "omit"})).text();
            return {codes, viaUrl};
        ''', folder)
    finally:
        put_storage_rules(hearth_server.base_url, OPEN_RULES)
    assert outcome['codes'] == {
        'openWrite': 'ok', 'anonymousWrite': 'storage/unauthorized', 'anonymousResumable': 'storage/unauthorized',
        'adaWrite': 'ok', 'adaElsewhere': 'storage/unauthorized', 'anonymousRead': 'storage/unauthorized',
        'anonymousMetadata': 'storage/unauthorized', 'anonymousDelete': 'storage/unauthorized',
        'anonymousList': 'storage/unauthorized', 'adaRead': 'ok',
    }
    assert outcome['viaUrl'] == "ada's"
