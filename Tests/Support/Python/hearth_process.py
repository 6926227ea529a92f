"""Starts and stops the real `hearth` binary for the pytest harnesses
(Tests/Conformance, Tests/Browser, scripts/compat/web-sdk).

    hearth serve --host 127.0.0.1 --port PORT --data DIR --emulator

A plain module: each conftest puts this directory on sys.path. Each suite passes its own
readiness check (a callable taking the base URL and returning True once the server answers).

Environment:
    HEARTH_BIN               path of the binary (default: <repo>/.build/debug/hearth).
                             A missing binary FAILS the session, it is never skipped.
    HEARTH_URL               (suites that allow it) use an already running server instead.
    HEARTH_STARTUP_TIMEOUT   seconds to wait for readiness (default 60).
    HEARTH_SERVE_ARGS        more `hearth serve` options for every server started (e.g. --memory-limit 1MB).
    HEARTH_KEEP_TMP          if set, keep the temporary data dir and server log.
"""

import contextlib
import os
import pathlib
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[3]
DEFAULT_BIN = REPO_ROOT / '.build' / 'debug' / 'hearth'

# Read by report_summary() at the end of the session, after the server is gone.
STATE = {'log_tail': None, 'sigterm_ignored': False}


class HearthServer:
    """A running hearth server (started by this session or given by HEARTH_URL)."""

    def __init__(self, base_url, process=None, log_path=None, data_dir=None):
        self.base_url = base_url.rstrip('/')
        self.process = process
        self.log_path = log_path
        self.data_dir = data_dir
        url = urllib.parse.urlsplit(self.base_url)
        self.port = url.port
        self.emulator_host = url.netloc  # host:port, as FIREBASE_DATABASE_EMULATOR_HOST wants it

    def log_tail(self, lines=80):
        if not self.log_path or not os.path.exists(self.log_path):
            return ''
        with open(self.log_path, 'rb') as f:
            text = f.read().decode('utf-8', 'replace')
        return '\n'.join(text.splitlines()[-lines:])


def required_binary():
    """The hearth binary ($HEARTH_BIN, else the debug build); a missing one fails the test, never skips it."""
    path = pathlib.Path(os.environ.get('HEARTH_BIN') or DEFAULT_BIN)
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.fail(f'hearth binary not found or not executable: {path} '
                    '(build it with `swift build` or set HEARTH_BIN)', pytrace=False)
    return path


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def stop(proc):
    """SIGTERM, then SIGKILL if hearth has not exited within 10 s (noted in the summary)."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        STATE['sigterm_ignored'] = True
        proc.kill()
        proc.wait(timeout=10)


def start(tmp_root, ready, port=None, log_path=None, copy_binary=False, emulator=True):
    """Starts hearth with its data dir (and by default its log) in tmp_root; fails the session
    if the binary is missing, exits early or is not ready in time. copy_binary runs a copy,
    so a rebuild during the session cannot replace the binary under it. emulator=False starts it
    in the default mode (locked rules, the admin secret from HEARTH_ADMIN_SECRET)."""
    binary = pathlib.Path(os.environ.get('HEARTH_BIN') or DEFAULT_BIN)
    if not binary.is_file() or not os.access(binary, os.X_OK):
        pytest.fail(f'hearth binary not found or not executable: {binary} '
                    '(build it with `swift build` or set HEARTH_BIN)', pytrace=False)
    if copy_binary:
        binary = pathlib.Path(shutil.copy2(binary, os.path.join(tmp_root, 'hearth')))
    data_dir = os.path.join(tmp_root, 'data')
    os.makedirs(data_dir)
    log_path = log_path or os.path.join(tmp_root, 'server.log')
    port = port or free_port()
    base_url = f'http://127.0.0.1:{port}'
    cmd = [str(binary), 'serve', '--host', '127.0.0.1', '--port', str(port), '--data', data_dir] + (['--emulator'] if emulator else [])
    # HEARTH_SERVE_ARGS: more options for every server a suite starts (CI: '--memory-limit 1MB', to run
    # a suite against databases served from their files).
    cmd += shlex.split(os.environ.get('HEARTH_SERVE_ARGS', ''))
    with open(log_path, 'wb') as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=tmp_root)
    server = HearthServer(base_url, proc, log_path, data_dir)
    deadline = time.time() + float(os.environ.get('HEARTH_STARTUP_TIMEOUT', '60'))
    while not ready(base_url):
        if proc.poll() is not None:
            pytest.fail(f'hearth exited with status {proc.returncode} before it was ready.\n'
                        f'command: {" ".join(cmd)}\nlog:\n{server.log_tail()}', pytrace=False)
        if time.time() > deadline:
            stop(proc)
            pytest.fail(f'hearth did not become ready within the timeout.\n'
                        f'command: {" ".join(cmd)}\nlog:\n{server.log_tail()}', pytrace=False)
        time.sleep(0.1)
    return server


@contextlib.contextmanager
def running_server(prefix, ready, allow_external=False, external_check='answer', **start_args):
    """The body of a session fixture: yields a HearthServer (HEARTH_URL's when allowed, else
    a fresh one from start()), then stops it and removes its temporary directory."""
    external = os.environ.get('HEARTH_URL') if allow_external else None
    server = tmp_root = None
    try:
        if external:
            server = HearthServer(external)
            if not ready(server.base_url):
                pytest.fail(f'HEARTH_URL={external} does not {external_check}', pytrace=False)
        else:
            tmp_root = tempfile.mkdtemp(prefix=prefix)
            server = start(tmp_root, ready, **start_args)
        yield server
    finally:
        if server is not None and server.process is not None:
            stop(server.process)
            STATE['log_tail'] = server.log_tail()
        if tmp_root and not os.environ.get('HEARTH_KEEP_TMP'):
            shutil.rmtree(tmp_root, ignore_errors=True)


def report_summary(terminalreporter, exitstatus):
    """For pytest_terminal_summary: the SIGKILL note, and the server log's tail on failure."""
    if STATE['sigterm_ignored']:
        terminalreporter.write_line('NOTE: hearth did not exit within 10 s of SIGTERM and was killed with SIGKILL.')
    if exitstatus != 0 and STATE['log_tail']:
        terminalreporter.section('hearth server log (tail)')
        terminalreporter.write_line(STATE['log_tail'])
