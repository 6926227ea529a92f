"""Session fixtures for the hearth.js browser tests.

The tests drive Debian's headless Chromium with Selenium against the real `hearth` binary:

    hearth serve --host 127.0.0.1 --port PORT --data DIR --emulator

Each test gets two browser windows ("pages") on the server's origin. Each page imports the
module the server serves at `/hearth.js` and connects its own database (its own WebSocket).

Environment:
    HEARTH_BIN               path of the binary (default: <repo>/.build/debug/hearth).
                             A missing binary, browser or driver FAILS the session; nothing is skipped.
    HEARTH_URL               use an already running server (emulator mode) instead of starting one.
    HEARTH_WEB_DIR           passed on to the server: with Sources/HearthWeb/Web it serves hearth.js
                             and its modules from the working tree, so client edits need no rebuild.
    CHROMIUM, CHROMEDRIVER   browser and driver paths (default /usr/bin/chromium, /usr/bin/chromedriver).
    HEARTH_STARTUP_TIMEOUT   seconds to wait for readiness (default 60).
    HEARTH_KEEP_TMP          if set, keep the temporary data dir and server log.
"""

import json
import os
import pathlib
import re
import sys
import urllib.error
import urllib.request
import uuid

import pytest
from selenium import webdriver
from selenium.common.exceptions import NoSuchWindowException, TimeoutException
from selenium.webdriver.support.ui import WebDriverWait

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'Support' / 'Python'))
import hearth_process  # noqa: E402  (shared with Tests/Conformance and scripts/compat/web-sdk)
from chromium import Chromium  # noqa: E402

REPO_ROOT = hearth_process.REPO_ROOT
SOURCE_JS = REPO_ROOT / 'Sources' / 'HearthWeb' / 'Web' / 'hearth.js'
NAMESPACE = 'hearth-browser'
WAIT_SECONDS = 30  # generous: only matters when something is really broken

# ───────────────────────────── the server ─────────────────────────────

def _http_ready(base_url):
    try:
        with urllib.request.urlopen(f'{base_url}/hearth.js', timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


@pytest.fixture(scope='session')
def hearth_server():
    """Starts `hearth serve --emulator` once per session (or uses HEARTH_URL)."""
    with hearth_process.running_server('hearth-browser-', _http_ready, allow_external=True,
                                       external_check='serve /hearth.js') as server:
        yield server


# ───────────────────────────── the browser ─────────────────────────────

@pytest.fixture(scope='session')
def browser(hearth_server):
    """One headless Chromium; each test opens its pages as windows of it."""
    del hearth_server  # start the server first, so its failures are reported as such
    chromium = os.environ.get('CHROMIUM', '/usr/bin/chromium')
    chromedriver = os.environ.get('CHROMEDRIVER', '/usr/bin/chromedriver')
    for path, package in ((chromium, 'chromium'), (chromedriver, 'chromium-driver')):
        if not os.access(path, os.X_OK):
            pytest.fail(f'{path} not found: install it with `apt-get install -y {package}`', pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ('--headless=new', '--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu',
                '--window-size=800,600', '--disable-background-timer-throttling',
                '--disable-renderer-backgrounding', '--disable-backgrounding-occluded-windows'):
        options.add_argument(arg)
    options.set_capability('goog:loggingPrefs', {'browser': 'ALL'})
    driver = Chromium(chromedriver, options)
    driver.set_script_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


class Page:
    """One browser window with hearth.js imported and a database connected (`window.db`).

    `call(body, *args)` runs `body` as an async function where every hearth.js export, `db`,
    `results` (window.results) and `log(name, value)` (appends to results[name]) are in scope;
    `args` is `arguments`. `wait_for(name, predicate)` polls `results[name]` until it holds.
    """

    def __init__(self, driver, handle, name):
        self.driver = driver
        self.handle = handle
        self.name = name
        self.names = []

    def _focus(self):
        try:
            if self.driver.current_window_handle == self.handle:
                return
        except NoSuchWindowException:  # the current window was closed
            pass
        self.driver.switch_to.window(self.handle)

    def run(self, script, *args):
        self._focus()
        return self.driver.execute_script(script, *args)

    def call(self, body, *args):
        self._focus()
        prelude = 'const {' + ', '.join(self.names) + '} = window.H; const {db, results, log} = window;'
        script = ('const done = arguments[arguments.length - 1];'
                  'const args = Array.prototype.slice.call(arguments, 0, -1);'
                  '(async (...args) => {' + prelude + body + '\n})(...args).then('
                  '(v) => done({ok: v === undefined ? null : v}),'
                  '(e) => done({error: String((e && e.stack) || e), code: (e && e.code) || null}));')
        outcome = self.driver.execute_async_script(script, *args)
        if 'error' in outcome:
            raise PageError(f'{self.name}: {outcome["error"]}', outcome.get('code'))
        return outcome['ok']

    def results(self, name):
        return self.run('return window.results[arguments[0]] || [];', name)

    def wait_for(self, name, predicate, timeout=WAIT_SECONDS, message=None):
        """Polls results[name] until predicate(list) is true; returns the list."""
        last = []

        def check(_):
            nonlocal last
            last = self.results(name)
            return predicate(last)
        try:
            WebDriverWait(self.driver, timeout, poll_frequency=0.05).until(check)
        except TimeoutException:
            raise AssertionError(f'{self.name}: timed out waiting for {message or name}; '
                                 f'results[{name!r}] = {json.dumps(last)[:2000]}') from None
        return last

    def console(self):
        self._focus()
        try:
            return [f'{e["level"]} {e["message"]}' for e in self.driver.get_log('browser')]
        except Exception:  # noqa: BLE001 - logs are diagnostics only
            return []


class PageError(Exception):
    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


def open_page(driver, base_url, name, auth_token=None):
    """Opens a window on the server's origin, imports hearth.js and connects `window.db`."""
    driver.switch_to.new_window('window')
    handle = driver.current_window_handle
    driver.get(f'{base_url}/hearth.js')  # any document on the server's origin will do
    page = Page(driver, handle, name)
    url = '/hearth.js'
    page.names = driver.execute_async_script('''
        const done = arguments[arguments.length - 1];
        const [url, ns, token] = arguments;
        import(url).then((H) => {
            window.H = H;
            window.results = {};
            window.log = (name, value) => (window.results[name] ??= []).push(value);
            const options = {url: location.origin, namespace: ns};
            if (token) options.authToken = token;
            window.db = H.initializeDatabase(options);
            done(Object.keys(H));
        }, (e) => done({error: String(e)}));
    ''', url, NAMESPACE, auth_token)
    if isinstance(page.names, dict):
        pytest.fail(f'{name}: cannot import hearth.js: {page.names["error"]}', pytrace=False)
    return page


@pytest.fixture
def pages(browser, hearth_server, request):
    """Two fresh pages, A (authenticated as the emulator's `owner`) and B (anonymous)."""
    home = browser.current_window_handle
    opened = [open_page(browser, hearth_server.base_url, 'page A', auth_token='owner'),
              open_page(browser, hearth_server.base_url, 'page B')]
    extra = []

    def new_page(name):
        page = open_page(browser, hearth_server.base_url, name)
        extra.append(page)
        return page

    try:
        yield opened[0], opened[1], new_page
    finally:
        failed = getattr(request.node, 'rep_call', None)
        for page in opened + extra:
            if page.handle not in browser.window_handles:
                continue
            if failed is not None and failed.failed:
                logs = page.console()
                if logs:
                    print(f'--- {page.name} console ---\n' + '\n'.join(logs[-40:]))
            browser.switch_to.window(page.handle)
            browser.close()
        browser.switch_to.window(home)


@pytest.fixture
def unique_path(request):
    """A fresh database path for one test, so tests never share data."""
    name = re.sub(r'[^A-Za-z0-9_-]', '_', request.node.name)[:60]
    return f't/{name}-{uuid.uuid4().hex[:8]}'


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    del call
    outcome = yield
    report = outcome.get_result()
    setattr(item, 'rep_' + report.when, report)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    del config
    hearth_process.report_summary(terminalreporter, exitstatus)


# ───────────────────────────── screenshots ─────────────────────────────

SCREENSHOTS = REPO_ROOT / 'docs' / 'screenshots'
# Window sizes; headless Chromium's viewport is about 140 px shorter.
DESKTOP = (1100, 900)
PHONE = (390, 950)


@pytest.fixture
def screenshot(browser):
    """`screenshot(name, phone=False)`: saves the focused window, at a desktop (or phone) width, as
    docs/screenshots/<name>.png — the pictures docs/apps.md shows — then restores the window's size."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(name, phone=False):
        original = browser.get_window_size()
        browser.set_window_size(*(PHONE if phone else DESKTOP))
        # Two frames after the resize: the layout and any transition have settled; images are decoded.
        browser.execute_async_script(
            'const done = arguments[arguments.length - 1];'
            'Promise.all([...document.images].filter(i => i.src && i.offsetParent).map(i => i.decode().catch(() => {})))'
            '.then(() => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 250))));')
        path = SCREENSHOTS / f'{name}.png'
        assert browser.save_screenshot(str(path)), f'could not save {path}'
        browser.set_window_size(original['width'], original['height'])
        return path

    return take
