"""Helpers of the serving suite (issue 27): certificates made with the `openssl` command, starting
`hearth serve` with or without TLS, TLS and HTTP clients that trust only the test CA, and reading the
server's logs.

A plain module (the tests and conftest.py import it). Every server is started in its default mode
with the admin secret from HEARTH_ADMIN_SECRET and stopped by the fixture or test that started it;
every request and socket has a timeout, so a server that hangs fails a test instead of stalling the
run. The server's stdout (the start-up banner) and stderr (the log) are kept in separate files: the
JSON log test needs stderr alone.
"""

import contextlib
import hashlib
import http.client
import json
import os
import pathlib
import select
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import warnings

import pytest
import requests

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / 'Tests' / 'Support' / 'Python'))
import hearth_process  # noqa: E402  (free_port, stop: shared with the other Python suites)

ADMIN_SECRET = 'serving-suite-admin-secret-4e1b7d'
PROJECT = 'serving-project'
NAMESPACE = 'default'
V1 = '/identitytoolkit.googleapis.com/v1/'
TIMEOUT = 15  # seconds, for every request and socket of the suite

# Logs of the servers this session started, for the summary when something failed.
SERVER_LOGS = []


binary = hearth_process.required_binary


# ───────────────────────────── certificates ─────────────────────────────

def openssl(*args, cwd=None):
    openssl_path = shutil.which('openssl')
    if openssl_path is None:
        pytest.fail('openssl not found: apt-get install -y openssl', pytrace=False)
    done = subprocess.run([openssl_path, *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise AssertionError(f'openssl {" ".join(args)} failed ({done.returncode}):\n{done.stderr}')
    return done.stdout


def new_key(path, algorithm):
    if algorithm == 'ecdsa':
        openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', str(path))
    elif algorithm == 'rsa':
        openssl('genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', str(path))
    else:
        raise ValueError(algorithm)
    os.chmod(path, 0o600)


CA_EXTENSIONS = """basicConstraints = critical, CA:TRUE, pathlen:{pathlen}
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
"""

SERVER_EXTENSIONS = """basicConstraints = critical, CA:FALSE
keyUsage = critical, {key_usage}
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
"""


def _sign(directory, csr, issuer_cert, issuer_key, out, extensions, days, serial):
    extfile = directory / f'{out.stem}.ext'
    extfile.write_text(extensions)
    openssl('x509', '-req', '-in', str(csr), '-CA', str(issuer_cert), '-CAkey', str(issuer_key),
            '-set_serial', str(serial), '-days', str(days), '-sha256', '-extfile', str(extfile), '-out', str(out))


class Leaf:
    """A server certificate: its key, the leaf alone, the full chain (leaf, then the intermediate)."""

    def __init__(self, key, cert, fullchain):
        self.key = key
        self.cert = cert
        self.fullchain = fullchain
        self.fingerprint = fingerprint(ssl.PEM_cert_to_DER_cert(cert.read_text()))


class PKI:
    """A throwaway CA of one key type: a root, an intermediate under it, and server certificates
    under the intermediate (as a public CA issues them). Clients trust the root alone, so a
    handshake that verifies shows the server sent the intermediate from the full-chain file."""

    def __init__(self, directory, algorithm):
        self.directory = pathlib.Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.algorithm = algorithm
        self.serial = 1000
        d = self.directory
        self.root_key, self.root = d / 'root.key', d / 'root.pem'
        new_key(self.root_key, algorithm)
        config = d / 'root.cnf'  # `req -x509` takes its extensions from a config section
        config.write_text('[req]\ndistinguished_name = dn\n[dn]\n[v3_root]\n' + CA_EXTENSIONS.format(pathlen=1))
        openssl('req', '-x509', '-new', '-key', str(self.root_key), '-subj', f'/CN=Hearth serving test root ({algorithm})',
                '-days', '2', '-sha256', '-set_serial', '1', '-config', str(config), '-extensions', 'v3_root',
                '-out', str(self.root))
        self.intermediate_key, self.intermediate = d / 'intermediate.key', d / 'intermediate.pem'
        new_key(self.intermediate_key, algorithm)
        csr = d / 'intermediate.csr'
        openssl('req', '-new', '-key', str(self.intermediate_key), '-subj', f'/CN=Hearth serving test intermediate ({algorithm})',
                '-out', str(csr))
        _sign(d, csr, self.root, self.root_key, self.intermediate, CA_EXTENSIONS.format(pathlen=0), 2, 2)

    def issue(self, name):
        """A new server certificate for localhost and 127.0.0.1, with a new key and serial."""
        self.serial += 1
        d = self.directory
        key, cert, fullchain, csr = d / f'{name}.key', d / f'{name}.pem', d / f'{name}-fullchain.pem', d / f'{name}.csr'
        new_key(key, self.algorithm)
        openssl('req', '-new', '-key', str(key), '-subj', '/CN=localhost', '-out', str(csr))
        key_usage = 'digitalSignature, keyEncipherment' if self.algorithm == 'rsa' else 'digitalSignature'
        _sign(d, csr, self.intermediate, self.intermediate_key, cert, SERVER_EXTENSIONS.format(key_usage=key_usage), 2,
              self.serial)
        fullchain.write_text(cert.read_text() + self.intermediate.read_text())
        return Leaf(key, cert, fullchain)


def fingerprint(der):
    return hashlib.sha256(der).hexdigest()


def install(leaf, cert_path, key_path):
    """Puts leaf's full chain and key at the paths the server reads, each replaced atomically (a
    rename, as ACME clients do), so the server never reads half a file."""
    for source, target in ((leaf.fullchain, cert_path), (leaf.key, key_path)):
        target = pathlib.Path(target)
        partial = target.with_name(target.name + '.new')
        shutil.copyfile(source, partial)
        os.chmod(partial, 0o600)
        os.replace(partial, target)


# ───────────────────────────── TLS clients ─────────────────────────────

def client_context(ca=None, minimum=None, maximum=None, alpn=None):
    """A client context that trusts `ca` only (the system's roots when None)."""
    context = ssl.create_default_context(cafile=str(ca) if ca else None)
    if minimum is not None:
        context.minimum_version = minimum
    if maximum is not None:
        context.maximum_version = maximum
    if alpn:
        context.set_alpn_protocols(alpn)
    return context


def legacy_context(ca):
    """A client that offers only TLS 1.0 and 1.1. OpenSSL 3 disables those below security level 0,
    so the client lowers its own level: a refusal can then only come from the server."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(cafile=str(ca))
    context.set_ciphers('DEFAULT:@SECLEVEL=0')
    with warnings.catch_warnings():  # Python deprecates naming the old versions; that is the point here
        warnings.simplefilter('ignore', DeprecationWarning)
        context.minimum_version = ssl.TLSVersion.TLSv1
        context.maximum_version = ssl.TLSVersion.TLSv1_1
    return context


@contextlib.contextmanager
def tls_connection(port, context, server_hostname='127.0.0.1'):
    raw = socket.create_connection(('127.0.0.1', port), timeout=TIMEOUT)
    try:
        tls = context.wrap_socket(raw, server_hostname=server_hostname)
    except BaseException:
        raw.close()
        raise
    try:
        yield tls
    finally:
        tls.close()


def served_fingerprint(port, ca):
    """The SHA-256 of the leaf certificate a new connection is given (verified against ca)."""
    with tls_connection(port, client_context(ca)) as tls:
        return fingerprint(tls.getpeercert(binary_form=True))


def https_request(server, method, path, body=None, headers=None, context=None):
    """One request on a new connection; returns (status, headers, body bytes)."""
    connection = http.client.HTTPSConnection('127.0.0.1', server.port, timeout=TIMEOUT,
                                             context=context or client_context(server.ca))
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


# ───────────────────────────── servers ─────────────────────────────

class Server:
    """A running `hearth serve`, reached at 127.0.0.1:<port>; https when it was given a certificate."""

    def __init__(self, process, port, tmp_root, command, stdout_path, stderr_path, ca=None, cert_path=None,
                 key_path=None):
        self.process = process
        self.port = port
        self.tmp_root = pathlib.Path(tmp_root)
        self.data_dir = self.tmp_root / 'data'
        self.command = command
        self.stdout_path = pathlib.Path(stdout_path)
        self.stderr_path = pathlib.Path(stderr_path)
        self.ca = ca
        self.cert_path = cert_path
        self.key_path = key_path
        self.scheme = 'https' if cert_path else 'http'
        self.base_url = f'{self.scheme}://127.0.0.1:{port}'

    def url(self, path):
        return self.base_url + path

    @property
    def verify(self):
        """For requests' verify=: the test CA on a TLS server."""
        return str(self.ca) if self.ca else True

    def stdout(self):
        return self.stdout_path.read_text(errors='replace') if self.stdout_path.exists() else ''

    def stderr(self):
        return self.stderr_path.read_text(errors='replace') if self.stderr_path.exists() else ''

    def log_tail(self, lines=40):
        return '\n'.join((self.stdout() + self.stderr()).splitlines()[-lines:])

    def sighup(self):
        os.kill(self.process.pid, signal.SIGHUP)

    def wait_for_log(self, predicate, within=15, after=0):
        """Waits until a stderr line (from line number `after` on) satisfies predicate; returns it."""
        deadline = time.monotonic() + within
        while True:
            lines = self.stderr().splitlines()[after:]
            for line in lines:
                if predicate(line):
                    return line
            if time.monotonic() > deadline:
                raise AssertionError(f'no such log line within {within} s; stderr tail:\n' + '\n'.join(lines[-20:]))
            if self.process.poll() is not None:
                raise AssertionError(f'hearth exited ({self.process.returncode}); stderr tail:\n' + '\n'.join(lines[-20:]))
            time.sleep(0.05)


def serve_command(tmp_root, port, *args):
    return [str(binary()), 'serve', '--host', '127.0.0.1', '--port', str(port), '--data', os.path.join(tmp_root, 'data'),
            '--project', PROJECT, *args, *shlex.split(os.environ.get('HEARTH_SERVE_ARGS', ''))]


def environment():
    env = dict(os.environ, HEARTH_ADMIN_SECRET=ADMIN_SECRET)
    for inherited in ('HEARTH_PUBLIC_URL', 'HEARTH_SMTP_URL', 'HEARTH_PROJECT'):
        env.pop(inherited, None)
    return env


def answers(server):
    """True once the server is ready (`/readyz` 200, over TLS when it has a certificate): while it
    starts, its port already answers 503 `starting`."""
    try:
        if server.scheme == 'https':
            connection = http.client.HTTPSConnection('127.0.0.1', server.port, timeout=2,
                                                     context=client_context(server.ca))
        else:
            connection = http.client.HTTPConnection('127.0.0.1', server.port, timeout=2)
        try:
            connection.request('GET', '/readyz')
            response = connection.getresponse()
            response.read()
            return response.status == 200
        finally:
            connection.close()
    except (OSError, http.client.HTTPException):
        return False


def start_server(*args, name='server', tls=None, ca=None):
    """Starts `hearth serve` in its default mode with `args`. tls: a Leaf, copied into the server's
    directory as cert.pem (full chain) and key.pem and passed as --tls-cert/--tls-key; ca: the root
    clients trust."""
    tmp_root = tempfile.mkdtemp(prefix=f'hearth-serving-{name}-')
    port = hearth_process.free_port()
    cert_path = key_path = None
    extra = []
    if tls is not None:
        cert_path, key_path = pathlib.Path(tmp_root, 'cert.pem'), pathlib.Path(tmp_root, 'key.pem')
        install(tls, cert_path, key_path)
        extra = ['--tls-cert', str(cert_path), '--tls-key', str(key_path)]
    command = serve_command(tmp_root, port, *extra, *args)
    stdout_path, stderr_path = os.path.join(tmp_root, 'stdout.log'), os.path.join(tmp_root, 'stderr.log')
    with open(stdout_path, 'wb') as out, open(stderr_path, 'wb') as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=environment(),
                                   cwd=tmp_root)
    server = Server(process, port, tmp_root, command, stdout_path, stderr_path, ca=ca, cert_path=cert_path,
                    key_path=key_path)
    deadline = time.time() + float(os.environ.get('HEARTH_STARTUP_TIMEOUT', '60'))
    while not answers(server):
        if process.poll() is not None or time.time() > deadline:
            hearth_process.stop(process)
            log = server.log_tail()
            if not os.environ.get('HEARTH_KEEP_TMP'):
                shutil.rmtree(tmp_root, ignore_errors=True)
            pytest.fail(f'hearth did not start (status {process.returncode}).\ncommand: {" ".join(command)}\n'
                        f'log:\n{log}', pytrace=False)
        time.sleep(0.1)
    return server


def stop_server(server):
    hearth_process.stop(server.process)
    SERVER_LOGS.append((' '.join(server.command[1:]), server.log_tail(15)))
    if not os.environ.get('HEARTH_KEEP_TMP'):
        shutil.rmtree(server.tmp_root, ignore_errors=True)


@contextlib.contextmanager
def running_server(*args, **kwargs):
    server = start_server(*args, **kwargs)
    try:
        yield server
    finally:
        stop_server(server)


def run_to_exit(*args, within=30):
    """Runs `hearth serve` with args (in a fresh directory) where it must refuse to start; returns
    (exit status, stdout, stderr). A server that starts anyway is stopped and the test fails."""
    tmp_root = tempfile.mkdtemp(prefix='hearth-serving-refused-')
    command = serve_command(tmp_root, hearth_process.free_port(), *args)
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                   env=environment(), cwd=tmp_root, text=True)
        try:
            out, err = process.communicate(timeout=within)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate(timeout=10)
            raise AssertionError(f'hearth kept running {within} s instead of refusing to start.\n'
                                 f'command: {" ".join(command)}\nstdout:\n{out}\nstderr:\n{err}')
        return process.returncode, out, err
    finally:
        shutil.rmtree(tmp_root, ignore_errors=True)


# ───────────────────────────── requests ─────────────────────────────

def admin_headers():
    return {'Authorization': f'Bearer {ADMIN_SECRET}'}


def admin_put(server, path, value, namespace=NAMESPACE):
    response = requests.put(server.url(f'/{path}.json'), params={'ns': namespace}, headers=admin_headers(),
                            data=json.dumps(value), timeout=TIMEOUT, verify=server.verify)
    assert response.status_code == 200, response.text
    return response


def admin_get(server, path, namespace=NAMESPACE):
    response = requests.get(server.url(f'/{path}.json'), params={'ns': namespace}, headers=admin_headers(),
                            timeout=TIMEOUT, verify=server.verify)
    assert response.status_code == 200, response.text
    return response.json()


def sign_up(server, email, password):
    response = requests.post(server.url(V1 + 'accounts:signUp'), params={'key': 'any'}, timeout=TIMEOUT,
                             json={'email': email, 'password': password, 'returnSecureToken': True},
                             verify=server.verify)
    assert response.status_code == 200, response.text
    body = response.json()
    return {'uid': body['localId'], 'token': body['idToken'], 'refresh': body.get('refreshToken'), 'email': email,
            'password': password}


# ───────────────────────────── raw sockets ─────────────────────────────

def read_until_closed(sock, within):
    """Everything the peer sends until it closes; (bytes, closed) after at most `within` seconds."""
    deadline = time.monotonic() + within
    received = b''
    while time.monotonic() < deadline:
        readable, _, _ = select.select([sock], [], [], max(0.0, min(0.5, deadline - time.monotonic())))
        if not readable:
            continue
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            return received, True
        if not chunk:
            return received, True
        received += chunk
    return received, False


# ───────────────────────────── the realtime protocol ─────────────────────────────

class WireClient:
    """A Firebase wire-protocol v5 client over a real WebSocket (docs/specs/wire-protocol.md)."""

    def __init__(self, server, namespace=NAMESPACE):
        import websocket  # websocket-client
        scheme = 'wss' if server.scheme == 'https' else 'ws'
        sslopt = {'ca_certs': str(server.ca)} if server.ca else None
        self.ws = websocket.create_connection(f'{scheme}://127.0.0.1:{server.port}/.ws?v=5&ns={namespace}',
                                              timeout=TIMEOUT, sslopt=sslopt)
        self.next_request = 1
        self.pushes = []
        self.handshake_text = self.ws.recv()
        self.handshake = json.loads(self.handshake_text)

    def send(self, action, body):
        number = self.next_request
        self.next_request += 1
        self.ws.send(json.dumps({'t': 'd', 'd': {'r': number, 'a': action, 'b': body}}))
        return number

    def receive(self):
        """The next data message (keepalives `0` skipped); pushes are also kept in self.pushes."""
        while True:
            text = self.ws.recv()
            if text == '0':
                continue
            message = json.loads(text)
            if message.get('t') == 'd' and 'r' not in message['d']:
                self.pushes.append(message['d'])
            return message

    def request(self, action, body):
        number = self.send(action, body)
        while True:  # pushes may come first; the answer carries our request number
            message = self.receive()
            if message.get('t') == 'd' and message['d'].get('r') == number:
                return message['d']['b']

    def next_push(self, predicate):
        for push in self.pushes:
            if predicate(push):
                self.pushes.remove(push)
                return push
        while True:
            message = self.receive()
            if message.get('t') == 'd' and 'r' not in message['d'] and predicate(message['d']):
                self.pushes.remove(message['d'])
                return message['d']

    def peer_fingerprint(self):
        return fingerprint(self.ws.sock.getpeercert(binary_form=True))

    def close(self):
        self.ws.close()


# ───────────────────────────── event streams ─────────────────────────────

def sse_events(response):
    """(event, data) pairs of a streamed requests response, as they arrive."""
    buffer = ''
    for text in response.iter_content(chunk_size=1, decode_unicode=True):
        buffer += text
        buffer = buffer.replace('\r\n', '\n')
        while '\n\n' in buffer:
            block, buffer = buffer.split('\n\n', 1)
            event, data = None, []
            for line in block.split('\n'):
                if line.startswith('event:'):
                    event = line[len('event:'):].strip()
                elif line.startswith('data:'):
                    data.append(line[len('data:'):].strip())
            yield event, json.loads('\n'.join(data)) if data else None
