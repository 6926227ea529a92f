"""Helpers of the Emulator Suite suite (issue 28): Firebase project directories (`firebase.json`,
`.firebaserc`, rules files), `firebase emulators:export` directories (the worked example of
docs/specs/emulator-suite.md §2.7 and the older storage layouts of §2.5.2), starting
`hearth serve --emulator` with its stdout and stderr in files, the emulator's unsigned tokens, and the
database, Identity Toolkit and Firebase Storage calls the tests make.

A plain module (the tests and conftest.py import it). Every server is stopped by the fixture or test
that started it; every request and process wait has a timeout, so a server that hangs fails a test
instead of stalling the run. Ports always come from hearth_process.free_port(): never the
emulators' fixed defaults (9000, 9099, 9199), which a developer's own emulators may hold.
"""

import base64
import contextlib
import hashlib
import json
import os
import pathlib
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.parse

import pytest
import requests

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / 'Tests' / 'Support' / 'Python'))
import hearth_process  # noqa: E402  (free_port, stop: shared with the other Python suites)

PROJECT = 'demo-app'
NAMESPACE = f'{PROJECT}-default-rtdb'  # where firebase.json's single-form database rules apply
BUCKET = f'{PROJECT}.appspot.com'      # the default bucket of a demo project
API_KEY = 'fake-api-key'               # the emulator accepts any key
V1 = '/identitytoolkit.googleapis.com/v1/'
OWNER = {'Authorization': 'Bearer owner'}  # the emulators' admin credential
TIMEOUT = 15  # seconds, for every HTTP request of the suite
WATCH_WITHIN = 5  # seconds a rules-file edit may take to show (Hearth promises 1 s)

# (command, log tail) of the servers this session started, for the summary when something failed.
SERVER_LOGS = []


binary = hearth_process.required_binary


# ───────────────────────────── checksums, as the Storage emulator writes them ─────────────────────────────

def _crc32c_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1  # Castagnoli, reflected
        table.append(crc)
    return table


_CRC32C = _crc32c_table()


def crc32c(data):
    """CRC-32C (Castagnoli) of bytes, as an unsigned int (crc32c(b'123456789') == 0xE3069283)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def crc32c_decimal(data):
    """The export's form: the unsigned value as a decimal string ("2591144780" for b'hello')."""
    return str(crc32c(data))


def crc32c_base64(data):
    """Cloud Storage's form: base64 of the big-endian 4 bytes."""
    return base64.b64encode(crc32c(data).to_bytes(4, 'big')).decode('ascii')


def md5_base64(data):
    return base64.b64encode(hashlib.md5(data).digest()).decode('ascii')


def etag(generation, metageneration):
    """The Storage emulator's etag: base64 SHA-1 of "<generation>/<metageneration>" without its last character."""
    return base64.b64encode(hashlib.sha1(f'{generation}/{metageneration}'.encode()).digest()).decode('ascii')[:-1]


assert crc32c(b'123456789') == 0xE3069283 and crc32c_decimal(b'hello') == '2591144780'  # the spec's value (§2.7)


# ───────────────────────────── project directories ─────────────────────────────

def write_json(path, value, indent=2):
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=indent) + '\n')
    return path


def write_text(path, text):
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def replace_atomically(path, text):
    """Saves as many editors do: a new file renamed over the old one."""
    path = pathlib.Path(path)
    partial = path.with_name(f'.{path.name}.saving')
    partial.write_text(text)
    os.replace(partial, path)


def write_project(directory, firebase, firebaserc=None, files=None):
    """A project directory: firebase.json, .firebaserc (when given) and other files {relative path: text}."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    write_json(directory / 'firebase.json', firebase)
    if firebaserc is not None:
        write_json(directory / '.firebaserc', firebaserc)
    for relative, text in (files or {}).items():
        write_text(directory / relative, text)
    return directory


def free_ports(*names):
    """{name: a free port} for each emulator name."""
    ports = {}
    while len(ports) < len(names):
        port = hearth_process.free_port()
        if port not in ports.values():
            ports[names[len(ports)]] = port
    return ports


def init_emulators_firebase_json(ports, database_rules='database.rules.json', storage_rules='storage.rules'):
    """firebase.json as `firebase init emulators` leaves it (spec §1.8), on the given ports."""
    return {
        'database': {'rules': database_rules},
        'storage': {'rules': storage_rules},
        'emulators': {
            'auth': {'port': ports['auth']},
            'database': {'port': ports['database']},
            'storage': {'port': ports['storage']},
            'ui': {'enabled': True},
            'singleProjectMode': True,
        },
    }


FIREBASERC = {'projects': {'default': PROJECT}}


# ───────────────────────────── the worked example export (spec §2.7) ─────────────────────────────

class Seed:
    """What the worked-example export holds, for the assertions."""

    project = PROJECT
    namespace = NAMESPACE
    bucket = BUCKET
    alice_uid = 'Xk3pQ9rT2vW8yZ1aB4cD6eF7gH0j'
    alice_email = 'alice@example.com'
    alice_password = 'secret123'
    alice_salt = 'fakeSaltA1b2C3d4E5f6G7h8I9j0'
    bob_uid = 'bob'
    bob_email = 'bob@example.com'
    object_name = 'avatars/alice.txt'
    object_bytes = b'hello'
    object_type = 'text/plain'
    object_metadata = {'owner': 'alice'}
    object_token = '0b7f3c52-9d7e-4c1a-8a3e-5f2d6b9c1e47'
    disk_name = '6d1e2f3a-4b5c-4d6e-8f70-819203a4b5c6'  # unrelated to the token, as in real exports
    generation = 1700000000000

    def __init__(self, directory):
        self.directory = pathlib.Path(directory)

    @property
    def database(self):
        """The database tree with priorities, as `GET /.json?format=export` gives it."""
        return {'users': {self.alice_uid: {'.priority': 1, 'name': 'Alice'}, 'bob': {'name': 'Bob'}},
                'motd': {'.value': 'hi', '.priority': 'a'}}


def export_metadata():
    return {'version': '15.28.1',
            'database': {'version': '4.11.2', 'path': 'database_export'},
            'auth': {'version': '15.28.1', 'path': 'auth_export'},
            'storage': {'version': '15.28.1', 'path': 'storage_export'}}


def object_metadata_json(name, bucket, data, content_type, custom=None, tokens=None, generation=1700000000000):
    """A storage_export/metadata/*.json document as firebase-tools writes it (spec §2.5.3)."""
    document = {
        'name': name, 'bucket': bucket, 'metageneration': 1, 'generation': generation,
        'contentType': content_type, 'storageClass': 'STANDARD',
        'downloadTokens': list(tokens or []), 'etag': etag(generation, 1),
        'timeCreated': '2023-11-14T22:13:20.000Z', 'updated': '2023-11-14T22:13:20.000Z',
        'size': len(data), 'md5Hash': md5_base64(data), 'crc32c': crc32c_decimal(data),
    }
    if custom is not None:
        document['customMetadata'] = dict(custom)
    return document


def write_worked_example(directory):
    """The complete small export of spec §2.7 (alice with a fakeHash password, bob disabled with a
    custom claim, a database tree with priorities, avatars/alice.txt with a download token)."""
    seed = Seed(directory)
    root = seed.directory
    write_json(root / 'firebase-export-metadata.json', export_metadata())
    # database_export/*.json and auth_export/*.json are compact, as the emulators write them.
    write_text(root / 'database_export' / f'{seed.namespace}.json', json.dumps(seed.database, separators=(',', ':')))
    accounts = {
        'kind': 'identitytoolkit#DownloadAccountResponse',
        'users': [
            {
                'localId': seed.alice_uid, 'createdAt': '1700000000000', 'lastLoginAt': '1700000500000',
                'displayName': 'Alice', 'emailVerified': True, 'email': seed.alice_email,
                'salt': seed.alice_salt,
                'passwordHash': f'fakeHash:salt={seed.alice_salt}:password={seed.alice_password}',
                'passwordUpdatedAt': 1700000000000, 'validSince': '1700000000',
                'providerUserInfo': [{'providerId': 'password', 'email': seed.alice_email, 'federatedId': seed.alice_email,
                                      'rawId': seed.alice_email, 'displayName': 'Alice'}],
                'lastRefreshAt': '2023-11-14T22:21:40.000Z',
            },
            {
                'localId': seed.bob_uid, 'createdAt': '1700000100000', 'lastLoginAt': '1700000100000',
                'email': seed.bob_email, 'emailVerified': True, 'disabled': True,
                'customAttributes': '{"admin":true}',
                'providerUserInfo': [{'providerId': 'google.com', 'rawId': '1234567890', 'federatedId': '1234567890',
                                      'email': seed.bob_email, 'displayName': 'Bob'}],
                'validSince': '1700000100',
            },
        ],
    }
    write_text(root / 'auth_export' / 'accounts.json', json.dumps(accounts, separators=(',', ':')))
    write_text(root / 'auth_export' / 'config.json', json.dumps(
        {'signIn': {'allowDuplicateEmails': False}, 'emailPrivacyConfig': {'enableImprovedEmailPrivacy': False}},
        separators=(',', ':')))
    write_json(root / 'storage_export' / 'buckets.json', {'buckets': [{'id': seed.bucket}]})
    (root / 'storage_export' / 'blobs').mkdir(parents=True, exist_ok=True)
    (root / 'storage_export' / 'blobs' / seed.disk_name).write_bytes(seed.object_bytes)
    write_json(root / 'storage_export' / 'metadata' / f'{seed.disk_name}.json',
               object_metadata_json(seed.object_name, seed.bucket, seed.object_bytes, seed.object_type,
                                    custom=seed.object_metadata, tokens=[seed.object_token], generation=seed.generation))
    return seed


# ───────────────────────────── reading an export ─────────────────────────────

class Export:
    """An emulators:export directory, read after checking its layout (spec §2.1)."""

    def __init__(self, directory):
        self.directory = pathlib.Path(directory)
        root = self.directory
        metadata_path = root / 'firebase-export-metadata.json'
        assert metadata_path.is_file(), f'no firebase-export-metadata.json in {root}: {listing(root)}'
        self.metadata = json.loads(metadata_path.read_text())
        assert isinstance(self.metadata.get('version'), str) and self.metadata['version'], self.metadata
        for section, path in (('database', 'database_export'), ('auth', 'auth_export'), ('storage', 'storage_export')):
            assert isinstance(self.metadata.get(section), dict), (section, self.metadata)
            assert self.metadata[section].get('path') == path, (section, self.metadata)
            assert (root / path).is_dir(), f'{path}/ missing: {listing(root)}'

        self.databases = {}
        for file in sorted((root / 'database_export').glob('*.json')):
            self.databases[file.name[:-len('.json')]] = json.loads(file.read_text())

        self.accounts = json.loads((root / 'auth_export' / 'accounts.json').read_text())
        self.accounts_text = (root / 'auth_export' / 'accounts.json').read_text()
        assert isinstance(self.accounts.get('users'), list), self.accounts
        self.users = {user['localId']: user for user in self.accounts['users']}
        self.auth_config = json.loads((root / 'auth_export' / 'config.json').read_text())

        storage = root / 'storage_export'
        self.buckets = [bucket['id'] for bucket in json.loads((storage / 'buckets.json').read_text())['buckets']]
        self.objects = {}  # (bucket, name) -> (metadata, bytes)
        for metadata_file in sorted((storage / 'metadata').rglob('*.json')):
            relative = metadata_file.relative_to(storage / 'metadata').as_posix()[:-len('.json')]
            blob = storage / 'blobs' / relative
            assert blob.is_file(), f'metadata/{relative}.json has no blobs/{relative}'
            document = json.loads(metadata_file.read_text())
            self.objects[(document['bucket'], document['name'])] = (document, blob.read_bytes())

    def user_by_email(self, email):
        found = [user for user in self.accounts['users'] if user.get('email') == email]
        assert len(found) == 1, (email, [user.get('email') for user in self.accounts['users']])
        return found[0]

    def object(self, bucket, name):
        assert (bucket, name) in self.objects, ((bucket, name), sorted(self.objects))
        return self.objects[(bucket, name)]


def listing(directory):
    directory = pathlib.Path(directory)
    if not directory.exists():
        return f'{directory} does not exist'
    return sorted(str(path.relative_to(directory)) for path in directory.rglob('*'))


def assert_exported_object(export, bucket, name, data, content_type, custom, token):
    """The object is in the export with its bytes, type, custom metadata, token and checksums."""
    document, blob = export.object(bucket, name)
    assert blob == data, (name, blob[:80])
    assert document.get('contentType') == content_type, document
    assert document.get('customMetadata') == custom, document
    assert token in document.get('downloadTokens', []), document
    assert document.get('size') == len(data), document
    assert document.get('md5Hash') == md5_base64(data), document
    assert document.get('crc32c') == crc32c_decimal(data), document


# ───────────────────────────── processes ─────────────────────────────

def environment(admin_secret=None):
    """The environment of a server: none of the variables that would change its project, URL or mail,
    and no admin secret unless given (emulator mode needs none)."""
    env = dict(os.environ)
    for inherited in ('HEARTH_ADMIN_SECRET', 'HEARTH_PROJECT', 'HEARTH_PUBLIC_URL', 'HEARTH_SMTP_URL',
                      'HEARTH_SMTP_FROM', 'HEARTH_AUTHORIZED_DOMAINS', 'GCLOUD_PROJECT'):
        env.pop(inherited, None)
    if admin_secret:
        env['HEARTH_ADMIN_SECRET'] = admin_secret
    return env


def extra_serve_args(args):
    """HEARTH_SERVE_ARGS (CI: --memory-limit 1MB), except for an --in-memory server, which cannot take it."""
    if '--in-memory' in args:
        return []
    return shlex.split(os.environ.get('HEARTH_SERVE_ARGS', ''))


def serve_command(args, emulator=True):
    # The environment's extra options come first, so an `--export-on-exit` without a value can be last.
    return [str(binary()), 'serve', *(['--emulator'] if emulator else []), *extra_serve_args(args), *args]


class Hearth:
    """A running `hearth serve`, reached at 127.0.0.1 on each of its ports."""

    def __init__(self, process, command, cwd, ports, logs):
        self.process = process
        self.command = command
        self.cwd = pathlib.Path(cwd)
        self.ports = list(ports)
        self.port = self.ports[0]
        self.stdout_path = pathlib.Path(logs) / 'stdout.log'
        self.stderr_path = pathlib.Path(logs) / 'stderr.log'
        self.logged = False

    @property
    def base(self):
        return f'http://127.0.0.1:{self.port}'

    def base_on(self, port):
        return f'http://127.0.0.1:{port}'

    def url(self, path, port=None):
        return f'http://127.0.0.1:{port or self.port}{path}'

    def stdout(self):
        return self.stdout_path.read_text(errors='replace') if self.stdout_path.exists() else ''

    def stderr(self):
        return self.stderr_path.read_text(errors='replace') if self.stderr_path.exists() else ''

    def log_tail(self, lines=40):
        return '\n'.join(('--- stdout\n' + self.stdout() + '\n--- stderr\n' + self.stderr()).splitlines()[-lines:])

    def stderr_line_count(self):
        return len(self.stderr().splitlines())

    def wait_for_stderr(self, pattern, after=0, within=WATCH_WITHIN):
        """The first match of the regex in a stderr line from line `after` on, waiting up to `within` s."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + within
        while True:
            for line in self.stderr().splitlines()[after:]:
                match = regex.search(line)
                if match:
                    return match
            if time.monotonic() > deadline:
                raise AssertionError(f'no stderr line matching {pattern!r} within {within} s; stderr since the change:\n'
                                     + '\n'.join(self.stderr().splitlines()[after:][-30:]))
            time.sleep(0.1)

    def signal_and_wait(self, signum=signal.SIGINT, within=30):
        """Sends the signal and returns the exit status (fails the test if it does not exit)."""
        self.process.send_signal(signum)
        try:
            status = self.process.wait(timeout=within)
        except subprocess.TimeoutExpired:
            hearth_process.stop(self.process)
            raise AssertionError(f'hearth did not exit within {within} s of {signal.Signals(signum).name}; log:\n{self.log_tail()}')
        self._record()
        return status

    def stop(self):
        hearth_process.stop(self.process)
        self._record()

    def _record(self):
        if not self.logged:
            self.logged = True
            SERVER_LOGS.append((' '.join(self.command[1:]), self.log_tail(20)))


def _ready(port):
    try:
        return requests.get(f'http://127.0.0.1:{port}/readyz', timeout=2).status_code == 200
    except requests.RequestException:
        return False


def start(args, cwd, ports, logs=None, emulator=True, admin_secret=None):
    """Starts `hearth serve [--emulator] ARGS` in cwd and waits until /readyz answers 200 on every port
    in `ports` (the first is the one requests go to by default). Fails the test with the log if it
    exits or is not ready in time."""
    cwd = pathlib.Path(cwd)
    logs = pathlib.Path(logs or cwd)
    logs.mkdir(parents=True, exist_ok=True)
    command = serve_command([str(arg) for arg in args], emulator=emulator)
    stdout_path, stderr_path = logs / 'stdout.log', logs / 'stderr.log'
    with open(stdout_path, 'wb') as out, open(stderr_path, 'wb') as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd,
                                   env=environment(admin_secret))
    server = Hearth(process, command, cwd, ports, logs)
    deadline = time.time() + float(os.environ.get('HEARTH_STARTUP_TIMEOUT', '60'))
    waiting = list(ports)
    while waiting:
        waiting = [port for port in waiting if not _ready(port)]
        if not waiting:
            break
        if process.poll() is not None or time.time() > deadline:
            hearth_process.stop(process)
            server._record()
            pytest.fail(f'hearth did not become ready on ports {waiting} (status {process.returncode}).\n'
                        f'command (cwd {cwd}): {" ".join(command)}\nlog:\n{server.log_tail()}', pytrace=False)
        time.sleep(0.1)
    return server


@contextlib.contextmanager
def running(args, cwd, ports, **kwargs):
    server = start(args, cwd, ports, **kwargs)
    try:
        yield server
    finally:
        server.stop()


def run_to_exit(args, cwd, within=20, emulator=True):
    """Runs `hearth serve` where it must refuse to start; returns (exit status, stdout + stderr).
    A server that keeps running is stopped and the test fails."""
    command = serve_command([str(arg) for arg in args], emulator=emulator)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                               cwd=cwd, env=environment(), text=True)
    try:
        out, err = process.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        process.terminate()
        try:
            out, err = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate(timeout=10)
        raise AssertionError(f'hearth kept running {within} s instead of refusing to start.\n'
                             f'command (cwd {cwd}): {" ".join(command)}\nstdout:\n{out}\nstderr:\n{err}')
    SERVER_LOGS.append((' '.join(command[1:]), f'exit {process.returncode}\n{(out + err)[-2000:]}'))
    return process.returncode, out + err


def run_cli(args, cwd, within=60):
    """Runs `hearth ARGS` (not serve) to its end; returns (exit status, stdout, stderr)."""
    command = [str(binary()), *[str(arg) for arg in args]]
    try:
        done = subprocess.run(command, cwd=cwd, env=environment(), capture_output=True, text=True, timeout=within,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as error:
        raise AssertionError(f'`{" ".join(command)}` did not finish within {within} s: {error}')
    return done.returncode, done.stdout, done.stderr


def port_is_closed(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(2)
        return sock.connect_ex(('127.0.0.1', port)) != 0


def poll(probe, expected, within=WATCH_WITHIN, interval=0.1):
    """Calls probe() until it returns `expected` (within `within` s); returns the last value seen."""
    deadline = time.monotonic() + within
    while True:
        value = probe()
        if value == expected or time.monotonic() > deadline:
            return value
        time.sleep(interval)


# ───────────────────────────── tokens ─────────────────────────────

def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b'=').decode('ascii')


def unsigned_token(uid, project=PROJECT, iat=None, **claims):
    """An unsigned JWT as the Firebase SDKs' mockUserToken / createMockUserToken makes it (spec §3.5):
    header {"alg":"none","type":"JWT"}, the standard claims, an empty signature. iat defaults to now."""
    issued = int(time.time()) if iat is None else iat
    payload = {'iss': f'https://securetoken.google.com/{project}', 'aud': project, 'iat': issued, 'exp': issued + 3600,
               'auth_time': issued, 'sub': uid, 'user_id': uid,
               'firebase': {'sign_in_provider': 'custom', 'identities': {}}}
    payload.update(claims)
    header = {'alg': 'none', 'type': 'JWT'}
    return (_b64url(json.dumps(header, separators=(',', ':')).encode()) + '.'
            + _b64url(json.dumps(payload, separators=(',', ':')).encode()) + '.')


def jwt_claims(token):
    payload = token.split('.')[1]
    return json.loads(base64.urlsafe_b64decode(payload + '=' * (-len(payload) % 4)))


# ───────────────────────────── the database ─────────────────────────────

def db_url(base, path):
    path = path.strip('/')
    return f'{base}/{path}.json' if path else f'{base}/.json'


def db_get(base, path, namespace=NAMESPACE, token=None, owner=False, **params):
    """GET a database path over REST: as the owner, with ?auth=<token>, or unauthenticated."""
    query = {'ns': namespace, **params}
    if token:
        query['auth'] = token
    return requests.get(db_url(base, path), params=query, headers=OWNER if owner else {}, timeout=TIMEOUT)


def db_put(base, path, value, namespace=NAMESPACE, token=None, owner=False):
    query = {'ns': namespace}
    if token:
        query['auth'] = token
    return requests.put(db_url(base, path), params=query, data=json.dumps(value), timeout=TIMEOUT,
                        headers={'Content-Type': 'application/json', **(OWNER if owner else {})})


def db_export(base, namespace=NAMESPACE):
    """The whole namespace with priorities, as the export reads it (owner, ?format=export)."""
    response = db_get(base, '', namespace, owner=True, format='export')
    assert response.status_code == 200, (response.status_code, response.text)
    return response.json()


def is_denied(response):
    """A database refusal: 401 (or 403) with Firebase's "Permission denied"."""
    return response.status_code in (401, 403) and 'permission denied' in response.text.lower()


# ───────────────────────────── Identity Toolkit ─────────────────────────────

def identity(base, operation, body, headers=None):
    return requests.post(f'{base}{V1}{operation}', params={'key': API_KEY}, json=body, headers=headers or {},
                         timeout=TIMEOUT)


def sign_in(base, email, password):
    """accounts:signInWithPassword; the response (200 with idToken, or 400 with error.message)."""
    return identity(base, 'accounts:signInWithPassword', {'email': email, 'password': password, 'returnSecureToken': True})


def signed_in(base, email, password):
    response = sign_in(base, email, password)
    assert response.status_code == 200, (email, response.status_code, response.text)
    return response.json()


def sign_up(base, email, password):
    response = identity(base, 'accounts:signUp', {'email': email, 'password': password, 'returnSecureToken': True})
    assert response.status_code == 200, (email, response.status_code, response.text)
    body = response.json()
    return {'uid': body['localId'], 'token': body['idToken'], 'email': email, 'password': password}


def error_message(response):
    try:
        return response.json()['error']['message']
    except (ValueError, KeyError, TypeError):
        return response.text


WRONG_PASSWORD = ('INVALID_PASSWORD', 'INVALID_LOGIN_CREDENTIALS')
NO_SUCH_USER = ('EMAIL_NOT_FOUND', 'INVALID_LOGIN_CREDENTIALS')


def lookup(base, local_id, project=PROJECT):
    """The admin's accounts:lookup (as `Bearer owner`); the user record."""
    response = requests.post(f'{base}{V1}projects/{project}/accounts:lookup', json={'localId': [local_id]},
                             headers=OWNER, timeout=TIMEOUT)
    assert response.status_code == 200, (response.status_code, response.text)
    users = response.json().get('users') or []
    assert len(users) == 1, response.text
    return users[0]


# ───────────────────────────── Firebase Storage (/v0) ─────────────────────────────

def firebase_auth(token):
    """The Firebase Storage SDKs' credential header."""
    return {'Authorization': f'Firebase {token}'} if token else {}


def object_url(base, bucket, name):
    return f'{base}/v0/b/{bucket}/o/{urllib.parse.quote(name, safe="")}'


def upload(base, bucket, name, data, content_type='text/plain', token=None, headers=None, metadata=None):
    """`POST /v0/b/<bucket>/o?name=…`: a raw upload, or the SDKs' multipart one when custom metadata is
    given. token: a user's ID token (sent as `Firebase <token>`); headers: e.g. OWNER."""
    auth = {**firebase_auth(token), **(headers or {})}
    url = f'{base}/v0/b/{bucket}/o'
    if metadata is None:
        return requests.post(url, params={'name': name}, data=data, timeout=TIMEOUT,
                             headers={**auth, 'Content-Type': content_type})
    boundary = 'emulator-suite-boundary-7c1e'
    body = (f'--{boundary}\r\nContent-Type: application/json; charset=utf-8\r\n\r\n'.encode()
            + json.dumps({'name': name, 'contentType': content_type, 'metadata': metadata}).encode()
            + f'\r\n--{boundary}\r\nContent-Type: {content_type}\r\n\r\n'.encode() + data + f'\r\n--{boundary}--'.encode())
    return requests.post(url, params={'name': name}, data=body, timeout=TIMEOUT,
                         headers={**auth, 'X-Goog-Upload-Protocol': 'multipart',
                                  'Content-Type': f'multipart/related; boundary={boundary}'})


def uploaded(base, bucket, name, data, content_type='text/plain', token=None, headers=None, metadata=None):
    """An upload that must succeed; returns (its metadata, its first download token)."""
    response = upload(base, bucket, name, data, content_type, token=token, headers=headers, metadata=metadata)
    assert response.status_code == 200, (name, response.status_code, response.text)
    body = response.json()
    tokens = download_tokens(body)
    assert tokens, body
    return body, tokens[0]


def download_tokens(metadata):
    tokens = metadata.get('downloadTokens') or ''
    if isinstance(tokens, list):
        return tokens
    return [token for token in tokens.split(',') if token]


def object_metadata(base, bucket, name, token=None, headers=None):
    return requests.get(object_url(base, bucket, name), timeout=TIMEOUT, headers={**firebase_auth(token), **(headers or {})})


def download(base, bucket, name, download_token=None, token=None, headers=None):
    params = {'alt': 'media'}
    if download_token:
        params['token'] = download_token
    return requests.get(object_url(base, bucket, name), params=params, timeout=TIMEOUT,
                        headers={**firebase_auth(token), **(headers or {})})


def assert_served_object(base, bucket, name, data, content_type, custom, download_token):
    """The object answers its download URL (the token, no credentials) with its bytes and type, and
    its metadata (as the owner) shows the type, custom metadata, token and checksums."""
    media = download(base, bucket, name, download_token=download_token)
    assert media.status_code == 200, (name, media.status_code, media.text[:300])
    assert media.content == data, (name, media.content[:80])
    assert media.headers.get('Content-Type', '').split(';')[0].strip() == content_type, dict(media.headers)
    response = object_metadata(base, bucket, name, headers=OWNER)
    assert response.status_code == 200, (name, response.status_code, response.text)
    document = response.json()
    assert document.get('name') == name and document.get('bucket') == bucket, document
    assert document.get('contentType') == content_type, document
    assert (document.get('metadata') or {}) == (custom or {}), document
    assert download_token in download_tokens(document), document
    assert int(document.get('size')) == len(data), document
    assert document.get('md5Hash') == md5_base64(data), document
    # The /v0 API of the emulator serves the decimal form; Cloud Storage's JSON API base64. Either is the same value.
    assert document.get('crc32c') in (crc32c_decimal(data), crc32c_base64(data)), document
    return document


def storage_denied(response):
    return response.status_code == 403
