"""The official Firebase web SDK (9.8.1 from `firebase/firebase-bower`: app, auth, database, storage)
in headless Chromium against `hearth serve --tls-cert … --tls-key …`: everything over https and wss,
with the certificate verified by the browser (issue 27).

A throwaway CA is made with openssl (Tests/Serving/serving_support.py's PKI: a root, an intermediate,
a leaf for localhost and 127.0.0.1); the server is given the full chain and the browser trusts the
root alone, so a page that works shows the server sent the intermediate too. The root is trusted the
way a user would on Linux: in a fresh NSS database, `certutil -A -t "C,," -i root.pem` into
`$HOME/.pki/nssdb`, with HOME pointed at a temporary directory for that Chromium only (no
`--ignore-certificate-errors*` flag). A second Chromium, with an empty HOME, must fail to connect.

The page is served over https too (the same certificate, from an in-process static server on another
port), so it is a secure context calling Hearth cross-origin; the SDK files are taken from
FIREBASE_BOWER_DIR and mapped by an import map as in test_official_storage.py. The SDK is pointed at
Hearth without any emulator call that would force plain http:

    initializeApp({databaseURL: "https://localhost:PORT?ns=…", …})   the database, over wss
    connectAuthEmulator(auth, "https://localhost:PORT")              the Auth API, over https
    getStorage(app).host = "localhost:PORT"                           storage, over https (9.8.1's
                                                                      connectStorageEmulator forces http)

Needs `certutil` (Debian's libnss3-tools) and openssl: missing, the test FAILS. Like
test_official_storage.py, it runs only with FIREBASE_BOWER_DIR (run.sh leaves it out, saying so):

    FIREBASE_BOWER_DIR=/tmp/firebase-bower HEARTH_BIN=.build/debug/hearth Tests/Browser/run.sh -k tls
"""

import functools
import http.server
import json
import os
import pathlib
import shutil
import ssl
import sys
import tempfile
import threading
import uuid

import pytest
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.support.ui import WebDriverWait

import tls_browser
from conftest import REPO_ROOT, Page
from test_official_storage import SDK_DIR, _Quiet, _sdk_version

sys.path.insert(0, str(REPO_ROOT / 'Tests' / 'Serving'))
import serving_support as serving  # noqa: E402  (the throwaway CA and the TLS server of the serving suite)

NAMESPACE = 'tls-browser'
BUCKET = f'{serving.PROJECT}.appspot.com'

PAGE = '''<!doctype html>
<html><head><meta charset="utf-8"><title>official SDK over TLS</title><link rel="icon" href="data:,">
<script type="importmap">{ "imports": { "https://www.gstatic.com/firebasejs/": "/firebasejs/" } }</script>
</head><body><script type="module">
window.H = {};
window.results = {};
window.log = (name, value) => (window.results[name] ??= []).push(value);
const P = new URLSearchParams(location.search);
try {
  const base = `https://www.gstatic.com/firebasejs/${P.get("sdk")}/`;
  window.A = await import(base + "firebase-app.js");
  window.Au = await import(base + "firebase-auth.js");
  window.D = await import(base + "firebase-database.js");
  window.S = await import(base + "firebase-storage.js");
  window.ready = true;
} catch (e) {
  window.loadError = String((e && e.stack) || e);
}
</script></body></html>
'''

# An app of its own (its own auth, database connection and storage) pointed at Hearth over TLS.
JS_APP = '''
const {A, Au, D, S} = window;
const [port, ns, bucket, project] = args;
const origin = `https://localhost:${port}`;
const newApp = (name) => {
    const app = A.initializeApp({apiKey: "fake-api-key", projectId: project, storageBucket: bucket,
                                 databaseURL: `${origin}?ns=${ns}`}, `${name}-${Math.random().toString(36).slice(2)}`);
    const auth = Au.getAuth(app);
    Au.connectAuthEmulator(auth, origin, {disableWarnings: true});
    return {app, auth};
};
const codeOf = async (work) => { try { await work(); return "ok"; } catch (e) { return e.code || String(e); } };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
'''


def _open_page(driver, url, name):
    driver.get(url)
    try:
        WebDriverWait(driver, 30, poll_frequency=0.05).until(
            lambda d: d.execute_script('return window.ready === true || !!window.loadError'))
    except TimeoutException:  # e.g. Chromium's certificate error page instead of ours
        pytest.fail(f'{name}: {url} did not load within 30 s; the window shows {driver.title!r}', pytrace=False)
    error = driver.execute_script('return window.loadError || null')
    if error:
        pytest.fail(f'{name}: the official SDK did not load: {error}', pytrace=False)
    return Page(driver, driver.current_window_handle, name)


def _access_log(server):
    entries = []
    for line in server.stderr().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get('label') == 'hearth.access':
            entries.append(entry)
    return entries


@pytest.fixture(scope='module')
def tls():
    """The CA, the TLS server, the static servers of the page (https and plain http) and two homes:
    `trusted` (an NSS database that trusts the CA's root) and `untrusted` (empty)."""
    directory = pathlib.Path(SDK_DIR)
    for name in ('firebase-app.js', 'firebase-auth.js', 'firebase-database.js', 'firebase-storage.js'):
        if not (directory / name).is_file():
            pytest.fail(f'FIREBASE_BOWER_DIR={SDK_DIR} has no {name}', pytrace=False)
    version = _sdk_version(directory)
    root = pathlib.Path(tempfile.mkdtemp(prefix='hearth-official-tls-'))
    webs, server = [], None
    try:
        pki = serving.PKI(root / 'pki', 'ecdsa')
        leaf = pki.issue('localhost')
        trusted, untrusted = tls_browser.homes(root, pki.root)

        server = serving.start_server('--emulator', '--log-format', 'json', '--access-log', name='browser-tls',
                                      tls=leaf, ca=pki.root)

        www = root / 'www'
        (www / 'firebasejs').mkdir(parents=True)
        os.symlink(directory.resolve(), www / 'firebasejs' / version)
        (www / 'page.html').write_text(PAGE, encoding='utf-8')
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(leaf.fullchain), str(leaf.key))
        ports = {}
        for scheme in ('https', 'http'):
            port = serving.hearth_process.free_port()
            web = http.server.ThreadingHTTPServer(('127.0.0.1', port), functools.partial(_Quiet, directory=str(www)))
            if scheme == 'https':
                web.socket = context.wrap_socket(web.socket, server_side=True)
            threading.Thread(target=web.serve_forever, daemon=True).start()
            webs.append(web)
            ports[scheme] = port
        yield {'server': server, 'version': version, 'trusted': trusted, 'untrusted': untrusted,
               'https_page': f'https://localhost:{ports["https"]}/page.html?sdk={version}',
               'http_page': f'http://127.0.0.1:{ports["http"]}/page.html?sdk={version}'}
    finally:
        for web in webs:
            web.shutdown()
            web.server_close()
        if server is not None:
            serving.stop_server(server)
        if not os.environ.get('HEARTH_KEEP_TMP'):
            shutil.rmtree(root, ignore_errors=True)


def _app_args(tls):
    return tls['server'].port, NAMESPACE, BUCKET, serving.PROJECT


def test_the_official_sdk_over_https_and_wss_with_the_ca_trusted(tls):
    server = tls['server']
    driver = tls_browser.chromium(tls['trusted'])
    try:
        page = _open_page(driver, tls['https_page'], 'trusted Chromium')
        email = f'tls-{uuid.uuid4().hex[:10]}@example.com'
        outcome = page.call(JS_APP + '''
            // Auth: an email sign-up and an anonymous sign-in, through the Auth API over https.
            const writer = newApp("writer"), reader = newApp("reader");
            const signedUp = (await Au.createUserWithEmailAndPassword(writer.auth, args[4], "tls-secret-1")).user;
            const claims = (await signedUp.getIdTokenResult()).claims;
            const anonymous = (await Au.signInAnonymously(reader.auth)).user;

            // The database: the reader listens on its own connection, the writer sets; the value
            // reaches the reader through the server. The writer connects once the reader's WebSocket
            // is healthy: until then the SDK keeps `previous_websocket_failure` in localStorage, and a
            // connection opened meanwhile starts with long polling (whose upgrade Hearth declines,
            // docs/decisions/0009-long-polling.md) instead of a WebSocket.
            const path = `tls/${signedUp.uid}`;
            const readerDb = D.getDatabase(reader.app);
            await new Promise((resolve) => D.onValue(D.ref(readerDb, ".info/connected"),
                                                     (s) => { if (s.val() === true) resolve(); }));
            while (localStorage.getItem("firebase:previous_websocket_failure") !== null) await sleep(20);
            const seen = new Promise((resolve) => {
                const off = D.onValue(D.ref(readerDb, path), (s) => {
                    if (s.val() && s.val().hello === "wss") { off(); resolve(s.val()); }
                });
            });
            const writerDb = D.getDatabase(writer.app);
            await D.set(D.ref(writerDb, path), {hello: "wss", by: signedUp.uid});
            const value = await seen;

            // Storage over https, with the signed-in user's token; the download URL fetched as is.
            const storage = S.getStorage(writer.app);
            storage.host = `localhost:${port}`;
            const file = S.ref(storage, `${path}/hello.txt`);
            const uploaded = await S.uploadString(file, "hello over https ✓", "raw", {contentType: "text/plain"});
            const url = await S.getDownloadURL(file);
            const response = await fetch(url, {credentials: "omit"});
            return {email: signedUp.email, provider: claims.firebase.sign_in_provider, aud: claims.aud,
                    anonymous: anonymous.isAnonymous, value, uid: signedUp.uid,
                    uploaded: {size: uploaded.metadata.size, type: uploaded.metadata.contentType, bucket: uploaded.metadata.bucket},
                    url, status: response.status, body: await response.text(), secure: window.isSecureContext,
                    pageOrigin: location.origin};
        ''', *_app_args(tls), email)
        network = tls_browser.network(driver)
    finally:
        driver.quit()

    port = server.port
    assert outcome['secure'] is True and outcome['pageOrigin'].startswith('https://localhost:')
    assert outcome['email'] == email and outcome['provider'] == 'password' and outcome['aud'] == serving.PROJECT
    assert outcome['anonymous'] is True
    assert outcome['value'] == {'hello': 'wss', 'by': outcome['uid']}
    assert outcome['uploaded'] == {'size': len('hello over https ✓'.encode()), 'type': 'text/plain', 'bucket': BUCKET}
    assert outcome['url'].startswith(f'https://localhost:{port}/v0/b/{BUCKET}/o/'), outcome['url']
    assert (outcome['status'], outcome['body']) == (200, 'hello over https ✓')

    # What the browser did on the network: every WebSocket was wss to Hearth and was upgraded, and
    # every request to Hearth's port was https.
    sockets = [params['url'] for method, params in network if method == 'Network.webSocketCreated']
    assert len(sockets) >= 2, sockets
    assert all(url.startswith(f'wss://localhost:{port}/.ws?') and f'ns={NAMESPACE}' in url for url in sockets), sockets
    upgraded = [params['response']['status'] for method, params in network
                if method == 'Network.webSocketHandshakeResponseReceived']
    assert upgraded.count(101) >= 2, upgraded
    requests = [params['request']['url'] for method, params in network if method == 'Network.requestWillBeSent']
    to_hearth = [url for url in requests if f':{port}/' in url]
    assert to_hearth and all(url.startswith(f'https://localhost:{port}/') for url in to_hearth), to_hearth
    assert not any('/.lp?' in url for url in to_hearth), to_hearth  # no long polling: both connections were wss
    for part in ('/identitytoolkit.googleapis.com/v1/accounts:signUp', f'/v0/b/{BUCKET}/o'):
        assert any(part in url for url in to_hearth), (part, to_hearth)

    # ... and the server saw them: its access log has the WebSocket upgrades, the sign-up and the upload.
    access = _access_log(server)
    seen = {(entry['method'], entry['path'], str(entry['status'])) for entry in access}
    assert sum(1 for entry in access if entry['path'] == '/.ws' and str(entry['status']) == '101') >= 2, access
    assert ('POST', '/identitytoolkit.googleapis.com/v1/accounts:signUp', '200') in seen, seen
    assert any(method == 'POST' and path.startswith(f'/v0/b/{BUCKET}/o') and status == '200'
               for method, path, status in seen), seen


def test_a_browser_that_does_not_trust_the_ca_cannot_connect(tls):
    server = tls['server']
    before = len(_access_log(server))
    driver = tls_browser.chromium(tls['untrusted'])
    try:
        # The page itself comes over plain http here: over https it would not load at all.
        page = _open_page(driver, tls['http_page'], 'untrusted Chromium')
        outcome = page.call(JS_APP + '''
            const {app, auth} = newApp("untrusted");
            const states = [];
            D.onValue(D.ref(D.getDatabase(app), ".info/connected"), (s) => states.push(s.val()));
            let fetched;
            try { fetched = (await fetch(`${origin}/healthz`)).status; } catch (e) { fetched = e.name; }
            const signIn = await codeOf(() => Au.signInAnonymously(auth));
            await sleep(3000);  // the trusted browser is connected in well under a second
            return {states, fetched, signIn};
        ''', *_app_args(tls))
        network = tls_browser.network(driver)
    finally:
        driver.quit()
    assert outcome['fetched'] == 'TypeError', outcome
    assert outcome['signIn'] == 'auth/network-request-failed', outcome
    assert True not in outcome['states'], outcome
    failures = {params.get('errorText') for method, params in network if method == 'Network.loadingFailed'}
    assert 'net::ERR_CERT_AUTHORITY_INVALID' in failures, failures
    upgraded = [params for method, params in network if method == 'Network.webSocketHandshakeResponseReceived']
    assert upgraded == [], upgraded
    # No request of that browser reached the server past the handshake.
    assert _access_log(server)[before:] == []
