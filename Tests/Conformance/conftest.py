"""Session fixtures for the hearth conformance suites.

The suites run against the real `hearth` binary started in Firebase-emulator
compatibility mode:

    hearth serve --host 127.0.0.1 --port PORT --data DIR --emulator

Environment:
    HEARTH_BIN               path of the binary (default: <repo>/.build/debug/hearth).
                             A missing binary FAILS the session, it is never skipped.
    HEARTH_URL               use an already running server (e.g. http://127.0.0.1:9000)
                             instead of starting one. Its rules must start open.
    HEARTH_STARTUP_TIMEOUT   seconds to wait for readiness (default 60).
    HEARTH_KEEP_TMP          if set, keep the temporary data dir and server log.
"""

import os
import pathlib
import re
import sys
import uuid

import pytest
import requests

import firebase_admin

from harness import NAMESPACE, PROJECT_ID, Rest, make_app

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'Support' / 'Python'))
import hearth_process  # noqa: E402  (shared with Tests/Browser and scripts/compat/web-sdk)


def _http_ready(base_url):
    try:
        # Ready, not merely answering: while it starts, the port answers 503 "starting".
        return requests.get(f'{base_url}/readyz', timeout=2).status_code == 200
    except requests.RequestException:
        return False


@pytest.fixture(scope='session', autouse=True)
def hearth_server():
    """Starts `hearth serve --emulator` once per session (or uses HEARTH_URL)."""
    names = ('FIREBASE_DATABASE_EMULATOR_HOST', 'FIREBASE_AUTH_EMULATOR_HOST', 'HEARTH_PROJECT')
    saved_env = {name: os.environ.get(name) for name in names}
    # The project of API-key requests to the Authentication API (as the Auth emulator's default project).
    os.environ['HEARTH_PROJECT'] = PROJECT_ID
    with hearth_process.running_server('hearth-conformance-', _http_ready, allow_external=True) as server:
        os.environ['FIREBASE_DATABASE_EMULATOR_HOST'] = server.emulator_host
        os.environ['FIREBASE_AUTH_EMULATOR_HOST'] = server.emulator_host
        try:
            yield server
        finally:
            for name, value in saved_env.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


@pytest.fixture(scope='session')
def fb_app(hearth_server):
    """The firebase_admin app of the hearth suites (namespace `hearth-conformance`)."""
    del hearth_server
    app = make_app('hearth-conformance')
    yield app
    firebase_admin.delete_app(app)


@pytest.fixture(scope='session')
def rest(hearth_server):
    """Raw REST client for namespace `hearth-conformance`, authorised as owner."""
    client = Rest(hearth_server.base_url, NAMESPACE)
    yield client
    client.session.close()


@pytest.fixture
def unique_path(request):
    """A fresh database path for one test, so tests never share data."""
    name = re.sub(r'[^A-Za-z0-9_-]', '_', request.node.name)[:60]
    return f't/{name}-{uuid.uuid4().hex[:8]}'


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    del config
    hearth_process.report_summary(terminalreporter, exitstatus)
