"""hearth.js in headless Chromium against `hearth serve --tls-cert … --tls-key …` (issue 27): the page,
the module and the database all over https and wss, the certificate verified by the browser with the
test CA trusted in an NSS database (tls_browser.py), and refused by a Chromium that does not trust it.

The CA is Tests/Serving/serving_support.py's PKI (a root, an intermediate, a leaf for localhost and
127.0.0.1); the server is given the full chain, the browser trusts the root alone. Runs in CI (the
official web SDK's TLS test, test_official_tls.py, needs FIREBASE_BOWER_DIR).
"""

import json
import pathlib
import shutil
import sys
import tempfile
import time

import pytest
from selenium.common.exceptions import WebDriverException

import tls_browser
from conftest import REPO_ROOT, Page

sys.path.insert(0, str(REPO_ROOT / 'Tests' / 'Serving'))
import serving_support as serving  # noqa: E402  (the throwaway CA and the TLS server of the serving suite)

NAMESPACE = 'tls-hearth-js'


@pytest.fixture(scope='module')
def tls():
    root = pathlib.Path(tempfile.mkdtemp(prefix='hearth-js-tls-'))
    server = None
    try:
        pki = serving.PKI(root / 'pki', 'ecdsa')
        leaf = pki.issue('localhost')
        trusted, untrusted = tls_browser.homes(root, pki.root)
        server = serving.start_server('--emulator', '--log-format', 'json', '--access-log', name='hearth-js-tls',
                                      tls=leaf, ca=pki.root)
        yield {'server': server, 'trusted': trusted, 'untrusted': untrusted,
               'origin': f'https://localhost:{server.port}'}
    finally:
        if server is not None:
            serving.stop_server(server)
        shutil.rmtree(root, ignore_errors=True)


def _open(driver, origin, name):
    """A window on the server's own https origin with hearth.js imported from it and `db` connected."""
    driver.get(f'{origin}/healthz')
    names = driver.execute_async_script('''
        const done = arguments[arguments.length - 1];
        import("/hearth.js").then((H) => {
            window.H = H;
            window.results = {};
            window.log = (name, value) => (window.results[name] ??= []).push(value);
            window.db = H.initializeDatabase({url: location.origin, namespace: arguments[0]});
            done(Object.keys(H));
        }, (e) => done({error: String(e)}));
    ''', NAMESPACE)
    if isinstance(names, dict):
        pytest.fail(f'{name}: cannot import hearth.js over https: {names["error"]}', pytrace=False)
    page = Page(driver, driver.current_window_handle, name)
    page.names = names
    return page


def _websockets(driver):
    """The URLs of the WebSockets the page opened, and how many were upgraded (101)."""
    urls, upgraded = [], 0
    for method, params in tls_browser.network(driver):
        if method == 'Network.webSocketCreated':
            urls.append(params['url'])
        elif method == 'Network.webSocketHandshakeResponseReceived' and params['response']['status'] == 101:
            upgraded += 1
    return urls, upgraded


def test_hearth_js_syncs_over_wss_with_the_ca_trusted(tls):
    origin, port = tls['origin'], tls['server'].port
    writer_driver = tls_browser.chromium(tls['trusted'])
    reader_driver = tls_browser.chromium(tls['trusted'])
    try:
        writer = _open(writer_driver, origin, 'writer')
        reader = _open(reader_driver, origin, 'reader')
        reader.call('onValue(ref(db, "greeting"), (s) => log("greeting", s.val()));')
        reader.wait_for('greeting', lambda r: len(r) >= 1, message='the first value')
        writer.call('await set(ref(db, "greeting"), {text: "over wss", at: 1});')
        seen = reader.wait_for('greeting', lambda r: r[-1] == {'text': 'over wss', 'at': 1})
        assert seen[-1] == {'text': 'over wss', 'at': 1}
        # A read over REST from the page too (fetch, https, same origin).
        rest = writer.call('const r = await fetch("/greeting.json?ns=" + args[0]); return [r.status, await r.json()];',
                           NAMESPACE)
        assert rest == [200, {'text': 'over wss', 'at': 1}]
        secure = writer.run('return window.isSecureContext && location.protocol;')
        sockets = [_websockets(d) for d in (writer_driver, reader_driver)]
    finally:
        writer_driver.quit()
        reader_driver.quit()
    assert secure == 'https:'
    for urls, upgraded in sockets:
        assert urls and all(url.startswith(f'wss://localhost:{port}/.ws') for url in urls), urls
        assert upgraded >= 1, urls
    # The server saw the WebSockets (logged as they closed) and the REST read, all in its access log.
    deadline = time.monotonic() + 10
    while True:
        lines = [json.loads(line) for line in tls['server'].stderr().splitlines() if line.startswith('{')]
        access = [entry for entry in lines if entry.get('label') == 'hearth.access']
        websockets = [entry for entry in access if entry.get('path') == '/.ws' and entry.get('status') == '101']
        if len(websockets) >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert len(websockets) >= 2, access
    assert any(entry.get('path') == '/greeting.json' and entry.get('status') == '200' for entry in access), access


def test_a_chromium_without_the_ca_cannot_reach_the_server(tls):
    driver = tls_browser.chromium(tls['untrusted'])
    try:
        try:
            driver.get(f"{tls['origin']}/healthz")
        except WebDriverException:
            pass  # some Chromium versions raise on the certificate error page
        body = driver.execute_script('return document.body ? document.body.innerText : ""')
        errors = [params.get('errorText', '') for method, params in tls_browser.network(driver)
                  if method == 'Network.loadingFailed']
    finally:
        driver.quit()
    assert body.strip() != 'ok', 'an untrusting Chromium loaded /healthz'
    assert any('CERT' in error for error in errors), errors
