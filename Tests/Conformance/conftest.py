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

from harness import NAMESPACE, Rest, make_app

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'support'))
import hearth_process  # noqa: E402  (shared with Tests/Browser and scripts/compat/web-sdk)


def _http_ready(base_url):
    try:
        requests.get(f'{base_url}/.json', params={'ns': NAMESPACE, 'shallow': 'true'},
                     headers={'Authorization': 'Bearer owner'}, timeout=2)
        return True
    except requests.RequestException:
        return False


@pytest.fixture(scope='session', autouse=True)
def hearth_server():
    """Starts `hearth serve --emulator` once per session (or uses HEARTH_URL)."""
    saved_env = os.environ.get('FIREBASE_DATABASE_EMULATOR_HOST')
    with hearth_process.running_server('hearth-conformance-', _http_ready, allow_external=True) as server:
        os.environ['FIREBASE_DATABASE_EMULATOR_HOST'] = server.emulator_host
        try:
            yield server
        finally:
            if saved_env is None:
                os.environ.pop('FIREBASE_DATABASE_EMULATOR_HOST', None)
            else:
                os.environ['FIREBASE_DATABASE_EMULATOR_HOST'] = saved_env


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
