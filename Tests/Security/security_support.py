"""Helpers of the security suite: starting `hearth serve` in its default mode, accounts, rules,
Firebase's node hash, raw sockets and a client from another loopback address.

A plain module (the tests and conftest.py import it). Every server is started with the admin secret
from HEARTH_ADMIN_SECRET and stopped by the fixture or test that started it; every request and socket
has a timeout, so a server that hangs fails a test instead of stalling the run.
"""

import base64
import contextlib
import hashlib
import json
import os
import pathlib
import select
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest
import requests
from requests.adapters import HTTPAdapter

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / 'Tests' / 'Support' / 'Python'))
import hearth_process  # noqa: E402  (free_port, stop: shared with the other Python suites)

ADMIN_SECRET = 'security-suite-admin-secret-7f3a9c'
PROJECT = 'security-project'
BUCKET = f'{PROJECT}.appspot.com'
NAMESPACE = 'security'
V1 = '/identitytoolkit.googleapis.com/v1/'
TIMEOUT = 15  # seconds, for every HTTP request of the suite
ANOTHER_ADDRESS = '127.0.0.2'  # a second client address on loopback (Linux routes all of 127/8 to lo)

# Logs of the servers this session started, for the summary when something failed.
SERVER_LOGS = []


binary = hearth_process.required_binary


_SERVE_HELP = {}


def serve_help():
    """`hearth serve --help`, to learn which options this binary has."""
    if 'text' not in _SERVE_HELP:
        done = subprocess.run([str(binary()), 'serve', '--help'], capture_output=True, text=True, timeout=30)
        _SERVE_HELP['text'] = done.stdout + done.stderr
    return _SERVE_HELP['text']


class Server:
    """A running `hearth serve`, reached at 127.0.0.1:<port> whatever address it listens on."""

    def __init__(self, process, port, data_dir, log_path, tmp_root, command):
        self.process = process
        self.port = port
        self.base_url = f'http://127.0.0.1:{port}'
        self.data_dir = pathlib.Path(data_dir)
        self.log_path = pathlib.Path(log_path)
        self.tmp_root = tmp_root
        self.command = command

    def url(self, path):
        return self.base_url + path

    def log_tail(self, lines=40):
        try:
            text = self.log_path.read_text(errors='replace')
        except OSError:
            return ''
        return '\n'.join(text.splitlines()[-lines:])

    def status_kib(self, field):
        """A field of /proc/<pid>/status in KiB (VmRSS, VmHWM)."""
        with open(f'/proc/{self.process.pid}/status', encoding='ascii') as status:
            for line in status:
                if line.startswith(field + ':'):
                    return int(line.split()[1])
        raise AssertionError(f'no {field} in /proc/{self.process.pid}/status')

    def reset_peak_rss(self):
        """Resets VmHWM (Linux: `5` to clear_refs); False if the kernel does not let us."""
        try:
            with open(f'/proc/{self.process.pid}/clear_refs', 'w', encoding='ascii') as refs:
                refs.write('5')
            return True
        except OSError:
            return False


def start_server(*args, host='127.0.0.1', env=None, name='server'):
    """Starts `hearth serve` in its default mode (admin secret set, not --emulator) with `args`."""
    hearth = binary()
    tmp_root = tempfile.mkdtemp(prefix=f'hearth-security-{name}-')
    data_dir = os.path.join(tmp_root, 'data')
    log_path = os.path.join(tmp_root, 'server.log')
    port = hearth_process.free_port()
    command = [str(hearth), 'serve', '--host', host, '--port', str(port), '--data', data_dir, '--project', PROJECT,
               *args, *shlex.split(os.environ.get('HEARTH_SERVE_ARGS', ''))]
    environment = dict(os.environ, HEARTH_ADMIN_SECRET=ADMIN_SECRET)
    for inherited in ('HEARTH_PUBLIC_URL', 'HEARTH_SMTP_URL', 'HEARTH_PROJECT'):
        environment.pop(inherited, None)
    environment.update(env or {})
    with open(log_path, 'wb') as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=environment, cwd=tmp_root)
    server = Server(process, port, data_dir, log_path, tmp_root, command)
    deadline = time.time() + float(os.environ.get('HEARTH_STARTUP_TIMEOUT', '60'))
    while True:
        try:
            # Ready, not merely answering: while it starts, the port answers 503 "starting".
            if requests.get(server.url('/readyz'), timeout=2).status_code == 200:
                return server
        except requests.RequestException:
            pass
        if process.poll() is not None or time.time() > deadline:
            hearth_process.stop(process)
            log = server.log_tail()
            if not os.environ.get('HEARTH_KEEP_TMP'):
                shutil.rmtree(tmp_root, ignore_errors=True)
            pytest.fail(f'hearth did not start (status {process.returncode}).\ncommand: {" ".join(command)}\n'
                        f'log:\n{log}', pytrace=False)
        time.sleep(0.1)


def stop_server(server):
    hearth_process.stop(server.process)
    SERVER_LOGS.append((" ".join(server.command[1:]), server.log_tail(15)))
    if not os.environ.get('HEARTH_KEEP_TMP'):
        shutil.rmtree(server.tmp_root, ignore_errors=True)


@contextlib.contextmanager
def running_server(*args, **kwargs):
    server = start_server(*args, **kwargs)
    try:
        yield server
    finally:
        stop_server(server)


# ───────────────────────────── credentials, rules ─────────────────────────────

def admin_headers():
    return {'Authorization': f'Bearer {ADMIN_SECRET}'}


def bearer(user):
    return {'Authorization': f'Bearer {user["token"]}'}


def sign_up(server, email, password):
    """An account made through the client API, as an app would; returns uid, token, email, password."""
    response = requests.post(server.url(V1 + 'accounts:signUp'), params={'key': 'any'}, timeout=TIMEOUT,
                             json={'email': email, 'password': password, 'returnSecureToken': True})
    assert response.status_code == 200, response.text
    body = response.json()
    return {'uid': body['localId'], 'token': body['idToken'], 'email': email, 'password': password}


def sign_in(server, email, password, session=None, timeout=TIMEOUT):
    return (session or requests).post(server.url(V1 + 'accounts:signInWithPassword'), params={'key': 'any'}, timeout=timeout,
                                      json={'email': email, 'password': password, 'returnSecureToken': True})


def put_database_rules(server, rules, namespace=NAMESPACE):
    response = requests.put(server.url('/.settings/rules.json'), params={'ns': namespace}, headers=admin_headers(),
                            data=json.dumps({'rules': rules}), timeout=TIMEOUT)
    assert response.status_code == 200, response.text


def put_storage_rules(server, source):
    """As `hearth storage rules set` does: PUT /.settings/storage.rules with the admin secret."""
    response = requests.put(server.url('/.settings/storage.rules'), headers=admin_headers(), data=source.encode(),
                            timeout=TIMEOUT)
    assert response.status_code == 200, response.text


def admin_put(server, path, value, namespace=NAMESPACE):
    response = requests.put(server.url(f'/{path}.json'), params={'ns': namespace}, headers=admin_headers(),
                            data=json.dumps(value), timeout=TIMEOUT)
    assert response.status_code == 200, response.text


# ───────────────────────────── Firebase's node hash ─────────────────────────────

def firebase_hash(value):
    """The Realtime Database node hash (wire protocol §9.1) of a JSON value without priorities."""
    if value is None:
        return ''
    if isinstance(value, dict):
        text = ''
        for key in sorted(value, key=_key_order):
            child = firebase_hash(value[key])
            if child:
                text += f':{key}:{child}'
        return _b64sha1(text) if text else ''
    if isinstance(value, bool):
        return _b64sha1('boolean:' + ('true' if value else 'false'))
    if isinstance(value, (int, float)):
        import struct
        return _b64sha1('number:' + struct.pack('>d', float(value)).hex())
    return _b64sha1('string:' + value)


def _key_order(key):
    # Firebase key order: 32-bit integer keys first, numerically, then the rest as strings.
    try:
        number = int(key)
        if str(number) == key and -2**31 <= number < 2**31:
            return (0, number, '')
    except ValueError:
        pass
    return (1, 0, key)


def _b64sha1(text):
    return base64.b64encode(hashlib.sha1(text.encode('utf-8')).digest()).decode('ascii')


# ───────────────────────────── another client address ─────────────────────────────

class SourceAddressAdapter(HTTPAdapter):
    """Connects from a chosen local address (127.0.0.2: another client, as far as the server knows)."""

    def __init__(self, source_address, **kwargs):
        self.source_address = source_address
        super().__init__(**kwargs)

    def init_poolmanager(self, connections, maxsize, block=False, **kwargs):
        kwargs['source_address'] = (self.source_address, 0)
        super().init_poolmanager(connections, maxsize, block=block, **kwargs)


def session_from(address):
    session = requests.Session()
    adapter = SourceAddressAdapter(address)
    session.mount('http://', adapter)
    return session


# ───────────────────────────── raw sockets ─────────────────────────────

def raw_connection(server, timeout=5):
    sock = socket.create_connection(('127.0.0.1', server.port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def send_quietly(sock, data):
    """Sends what the server takes; a server that already answered and closed may reset us."""
    try:
        sock.sendall(data)
        return True
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        return False


def read_status_line(sock, within):
    """The status code of the first response line arriving within `within` seconds, or None."""
    deadline = time.monotonic() + within
    received = b''
    while b'\r\n' not in received and time.monotonic() < deadline:
        readable, _, _ = select.select([sock], [], [], max(0.0, deadline - time.monotonic()))
        if not readable:
            break
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not chunk:
            break
        received += chunk
    line = received.split(b'\r\n', 1)[0]
    parts = line.split(b' ')
    if len(parts) >= 2 and parts[0].startswith(b'HTTP/') and parts[1].isdigit():
        return int(parts[1]), received
    return None, received


def closed_within(sock, within):
    """True once the server closes (EOF or reset) within `within` seconds; whatever it sends is read."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        readable, _, _ = select.select([sock], [], [], max(0.0, min(0.5, deadline - time.monotonic())))
        if not readable:
            continue
        try:
            if not sock.recv(65536):
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False
