"""Fixtures of the security suite: the real `hearth` binary in its DEFAULT mode, attacked as an
outsider would (issue 25).

The session's server:

    HEARTH_ADMIN_SECRET=… hearth serve --host 127.0.0.1 --port PORT --data DIR --project security-project

with database rules on the namespace `security` (each user reads and writes only `users/<uid>`;
`dropbox/<uid>` is writable by any signed-in user but readable only by its owner), storage rules
(`users/<uid>/…`: read by the owner, written by the owner with an `image/*` content type) and three
accounts made through the client API: A (the victim), B (the attacker) and C (whose sign-ins are
raced). Tests that need other options (a public URL, a short read timeout, a public interface) or
that lock an address out start their own servers.

Environment:
    HEARTH_BIN               the binary (default: <repo>/.build/debug/hearth). Missing: the run FAILS.
    CHROMIUM, CHROMEDRIVER   browser and driver (default /usr/bin/chromium, /usr/bin/chromedriver);
                             missing: the browser tests FAIL, never skip.
    HEARTH_STARTUP_TIMEOUT   seconds to wait for a server (default 60).
    HEARTH_SERVE_ARGS        more `hearth serve` options for every server started.
    HEARTH_KEEP_TMP          keep the servers' data directories and logs.
"""

import os
import pathlib
import shutil
import sys
import tempfile
import uuid

import pytest
from selenium import webdriver

import security_support as support

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'Support' / 'Python'))
from chromium import Chromium  # noqa: E402

STORAGE_RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /users/{uid}/{file=**} {
      allow read: if request.auth != null && request.auth.uid == uid;
      allow write: if request.auth != null && request.auth.uid == uid
                   && request.resource.contentType.matches('image/.*');
    }
  }
}
"""

DATABASE_RULES = {
    'users': {
        '$uid': {'.read': 'auth != null && auth.uid == $uid', '.write': 'auth != null && auth.uid == $uid'},
    },
    # Anyone signed in may drop a note for a user; only that user may read it.
    'dropbox': {
        '$uid': {'.read': 'auth != null && auth.uid == $uid', '.write': 'auth != null'},
    },
}


class Deployment:
    """The session's server with its rules and its users A, B and C."""

    def __init__(self, server, a, b, c):
        self.server = server
        self.a = a
        self.b = b
        self.c = c


@pytest.fixture(scope='session')
def deployment():
    with support.running_server(name='main') as server:
        support.put_database_rules(server, DATABASE_RULES)
        support.put_storage_rules(server, STORAGE_RULES)
        run = uuid.uuid4().hex[:6]
        a = support.sign_up(server, f'alice-{run}@example.com', 'alice-password-1')
        b = support.sign_up(server, f'bob-{run}@example.com', 'bob-password-1')
        c = support.sign_up(server, f'carol-{run}@example.com', 'carol-password-1')
        yield Deployment(server, a, b, c)


@pytest.fixture(scope='session')
def server(deployment):
    return deployment.server


@pytest.fixture(scope='session')
def browser():
    """One headless Chromium. `evil.example` resolves to 127.0.0.1, so a redirect there is seen."""
    chromium = os.environ.get('CHROMIUM', '/usr/bin/chromium')
    chromedriver = os.environ.get('CHROMEDRIVER', '/usr/bin/chromedriver')
    for path, package in ((chromium, 'chromium'), (chromedriver, 'chromium-driver')):
        if not os.access(path, os.X_OK):
            pytest.fail(f'{path} not found: install it with `apt-get install -y {package}`', pytrace=False)
    downloads = tempfile.mkdtemp(prefix='hearth-security-downloads-')
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ('--headless=new', '--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--window-size=800,600',
                '--host-resolver-rules=MAP evil.example 127.0.0.1'):
        options.add_argument(arg)
    options.add_experimental_option('prefs', {'download.default_directory': downloads, 'download.prompt_for_download': False})
    driver = Chromium(chromedriver, options)
    driver.set_page_load_timeout(20)
    driver.set_script_timeout(20)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(downloads, ignore_errors=True)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    del config
    if exitstatus != 0 and support.SERVER_LOGS:
        terminalreporter.section('hearth server logs (tails)')
        for command, tail in support.SERVER_LOGS:
            terminalreporter.write_line(f'$ hearth {command}')
            terminalreporter.write_line(tail)
    if support.hearth_process.STATE['sigterm_ignored']:
        terminalreporter.write_line('NOTE: a hearth server did not exit within 10 s of SIGTERM and was killed.')
