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
import shutil
import socket
import subprocess
import tempfile
import time
import uuid

import pytest
import requests

import firebase_admin

from harness import NAMESPACE, Rest, make_app

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
DEFAULT_BIN = REPO_ROOT / '.build' / 'debug' / 'hearth'

_STATE = {'log_path': None, 'log_tail': None}


class HearthServer:
    """A running hearth server (started by this session or given by HEARTH_URL)."""

    def __init__(self, base_url, process=None, log_path=None, data_dir=None):
        self.base_url = base_url.rstrip('/')
        self.process = process
        self.log_path = log_path
        self.data_dir = data_dir
        hostport = re.sub(r'^https?://', '', self.base_url)
        self.emulator_host = hostport
        self.banner_seen = None

    def log_tail(self, lines=80):
        if not self.log_path or not os.path.exists(self.log_path):
            return ''
        with open(self.log_path, 'rb') as f:
            text = f.read().decode('utf-8', 'replace')
        return '\n'.join(text.splitlines()[-lines:])


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _http_ready(base_url):
    try:
        requests.get(f'{base_url}/.json', params={'ns': NAMESPACE, 'shallow': 'true'},
                     headers={'Authorization': 'Bearer owner'}, timeout=2)
        return True
    except requests.RequestException:
        return False


def _start_server(tmp_root):
    binary = pathlib.Path(os.environ.get('HEARTH_BIN') or DEFAULT_BIN)
    if not binary.is_file() or not os.access(binary, os.X_OK):
        pytest.fail(f'hearth binary not found or not executable: {binary} '
                    '(build it with `swift build` or set HEARTH_BIN)', pytrace=False)
    data_dir = os.path.join(tmp_root, 'data')
    os.makedirs(data_dir)
    log_path = os.path.join(tmp_root, 'server.log')
    _STATE['log_path'] = log_path
    port = _free_port()
    base_url = f'http://127.0.0.1:{port}'
    cmd = [str(binary), 'serve', '--host', '127.0.0.1', '--port', str(port),
           '--data', data_dir, '--emulator']
    log = open(log_path, 'wb')
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            cwd=tmp_root)
    log.close()
    server = HearthServer(base_url, proc, log_path, data_dir)
    banner = f'listening on http://127.0.0.1:{port}'
    deadline = time.time() + float(os.environ.get('HEARTH_STARTUP_TIMEOUT', '60'))
    while True:
        if proc.poll() is not None:
            pytest.fail(f'hearth exited with status {proc.returncode} before it was ready.\n'
                        f'command: {" ".join(cmd)}\nlog:\n{server.log_tail()}', pytrace=False)
        # Ready once the banner is printed and HTTP answers. stdout may be
        # block-buffered when redirected to a file, so an answering port alone counts too.
        with open(log_path, 'rb') as f:
            seen_banner = banner.encode() in f.read()
        if _http_ready(base_url):
            server.banner_seen = seen_banner
            break
        if time.time() > deadline:
            _stop(proc)
            pytest.fail(f'hearth did not become ready within the timeout.\n'
                        f'command: {" ".join(cmd)}\nlog:\n{server.log_tail()}', pytrace=False)
        time.sleep(0.1)
    return server


def _stop(proc):
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        _STATE['sigterm_ignored'] = True
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture(scope='session', autouse=True)
def hearth_server():
    """Starts `hearth serve --emulator` once per session (or uses HEARTH_URL)."""
    external = os.environ.get('HEARTH_URL')
    saved_env = os.environ.get('FIREBASE_DATABASE_EMULATOR_HOST')
    tmp_root = None
    if external:
        server = HearthServer(external)
        if not _http_ready(server.base_url):
            pytest.fail(f'HEARTH_URL={external} does not answer', pytrace=False)
    else:
        tmp_root = tempfile.mkdtemp(prefix='hearth-conformance-')
        server = _start_server(tmp_root)
    os.environ['FIREBASE_DATABASE_EMULATOR_HOST'] = server.emulator_host
    try:
        yield server
    finally:
        if saved_env is None:
            os.environ.pop('FIREBASE_DATABASE_EMULATOR_HOST', None)
        else:
            os.environ['FIREBASE_DATABASE_EMULATOR_HOST'] = saved_env
        if server.process is not None:
            _stop(server.process)
            _STATE['log_tail'] = server.log_tail()
        if tmp_root and not os.environ.get('HEARTH_KEEP_TMP'):
            shutil.rmtree(tmp_root, ignore_errors=True)


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
    if _STATE.get('sigterm_ignored'):
        terminalreporter.write_line(
            'NOTE: hearth did not exit within 10 s of SIGTERM and was killed with SIGKILL.')
    if exitstatus != 0 and _STATE.get('log_tail'):
        terminalreporter.section('hearth server log (tail)')
        terminalreporter.write_line(_STATE['log_tail'])
