"""`hearth users` on a data directory: users created offline sign in once the server runs.

Starts its own server on a fresh data directory (not the session's), after the CLI has written it.
"""

import json
import os
import pathlib
import subprocess
import sys
import time

import pytest
import requests

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'support'))
import hearth_process  # noqa: E402

from harness import HTTP_TIMEOUT  # noqa: E402


def hearth(*args, stdin=None):
    binary = os.environ.get('HEARTH_BIN') or str(hearth_process.DEFAULT_BIN)
    return subprocess.run([binary, *args], input=stdin, capture_output=True, text=True, timeout=120)


def test_users_created_offline_sign_in_after_serve(tmp_path):
    data = str(tmp_path / 'data')
    created = hearth('users', 'create', '--data', data, '--project', 'cli-project', '--email', 'Cli@Example.com',
                     '--password-stdin', '--claims', '{"admin": true}', stdin='cli-password\n')
    assert created.returncode == 0, created.stderr
    uid = created.stdout.strip()
    assert hearth('users', 'create', '--data', data, '--project', 'cli-project', '--uid', 'doomed').returncode == 0
    weak = hearth('users', 'create', '--data', data, '--project', 'cli-project', '--email', 'w@example.com',
                  '--password-stdin', stdin='123\n')
    assert weak.returncode == 1
    assert 'WEAK_PASSWORD' in weak.stderr
    listed = hearth('users', 'list', '--data', data, '--project', 'cli-project', '--json')
    assert [line for line in listed.stdout.splitlines() if uid in line]
    assert 'cli-password' not in listed.stdout
    assert hearth('users', 'delete', '--data', data, '--project', 'cli-project', 'doomed').returncode == 0
    assert 'doomed' not in hearth('users', 'list', '--data', data, '--project', 'cli-project').stdout

    port = hearth_process.free_port()
    binary = os.environ.get('HEARTH_BIN') or str(hearth_process.DEFAULT_BIN)
    log = open(tmp_path / 'server.log', 'wb')
    proc = subprocess.Popen([binary, 'serve', '--port', str(port), '--data', data, '--project', 'cli-project'],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    base = f'http://127.0.0.1:{port}'
    try:
        deadline = time.time() + 60
        while True:
            try:
                requests.get(f'{base}/.json', timeout=2)
                break
            except requests.RequestException:
                assert proc.poll() is None, 'hearth exited'
                assert time.time() < deadline, 'hearth did not start'
                time.sleep(0.1)
        # While the server runs, the CLI refuses the directory and says what to do instead.
        busy = hearth('users', 'list', '--data', data)
        assert busy.returncode == 1
        assert 'admin API' in busy.stderr
        response = requests.post(f'{base}/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword',
                                 params={'key': 'any'}, timeout=HTTP_TIMEOUT,
                                 json={'email': 'cli@example.com', 'password': 'cli-password', 'returnSecureToken': True})
        assert response.status_code == 200, response.text
        assert response.json()['localId'] == uid
        secrets = [response.json()['idToken'], response.json()['refreshToken']]
    finally:
        hearth_process.stop(proc)
        log.close()
    # Neither the password nor the tokens reach the log.
    text = (tmp_path / 'server.log').read_text()
    assert 'cli-password' not in text
    assert not [secret for secret in secrets if secret in text]


# firebase/scrypt's published test vector: the password "user1password" under these parameters.
VECTOR = {'signerKey': 'jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==',
          'saltSeparator': 'Bw==', 'salt': '42xEC+ixf3L2lw==',
          'hash': 'lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ=='}


def test_import_a_firebase_export_then_export_and_import_again(tmp_path):
    firebase_export = tmp_path / 'firebase-users.json'
    firebase_export.write_text(json.dumps({'users': [
        {'localId': 'fb-1', 'email': 'Moved@Example.com', 'emailVerified': True, 'passwordHash': VECTOR['hash'],
         'salt': VECTOR['salt'], 'displayName': 'Moved', 'createdAt': '1600000000000', 'lastSignedInAt': '1600000001000',
         'customAttributes': '{"plan": "pro"}', 'providerUserInfo': []},
        {'localId': 'fb-2', 'email': 'not-an-email'},
    ]}))
    first = str(tmp_path / 'first')
    imported = hearth('users', 'import', str(firebase_export), '--data', first, '--project', 'moved',
                      '--hash-algo', 'SCRYPT', '--hash-key', VECTOR['signerKey'], '--salt-separator', VECTOR['saltSeparator'],
                      '--rounds', '8', '--mem-cost', '14')
    assert imported.returncode == 1  # one user was refused, and the command says so
    assert '1 user(s) imported' in imported.stdout and 'fb-2: email is invalid' in imported.stderr
    assert 'imported 2/2' in imported.stderr  # progress
    bad = hearth('users', 'import', str(firebase_export), '--data', first, '--hash-algo', 'MD5')
    assert bad.returncode == 1 and 'not supported' in bad.stderr

    exported_file = tmp_path / 'hearth-users.json'
    exported = hearth('users', 'export', str(exported_file), '--data', first, '--project', 'moved')
    assert exported.returncode == 0, exported.stderr
    assert oct(exported_file.stat().st_mode & 0o777) == '0o600'
    users = json.loads(exported_file.read_text())['users']
    assert [u['localId'] for u in users] == ['fb-1']
    assert users[0]['email'] == 'moved@example.com' and users[0]['customAttributes'] == '{"plan": "pro"}'
    assert users[0]['lastSignedInAt'] == '1600000001000'

    second = str(tmp_path / 'second')
    again = hearth('users', 'import', str(exported_file), '--data', second, '--project', 'moved', '--hash-algo', 'HEARTH')
    assert again.returncode == 0, again.stderr
    # The password from Firebase signs in on the server that got the users second-hand.
    port = hearth_process.free_port()
    binary = os.environ.get('HEARTH_BIN') or str(hearth_process.DEFAULT_BIN)
    log = open(tmp_path / 'second.log', 'wb')
    proc = subprocess.Popen([binary, 'serve', '--port', str(port), '--data', second, '--project', 'moved'],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    base = f'http://127.0.0.1:{port}'
    try:
        deadline = time.time() + 60
        while True:
            try:
                requests.get(f'{base}/.json', timeout=2)
                break
            except requests.RequestException:
                assert proc.poll() is None and time.time() < deadline, 'hearth did not start'
                time.sleep(0.1)
        signin = requests.post(f'{base}/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword', params={'key': 'k'},
                               json={'email': 'moved@example.com', 'password': 'user1password', 'returnSecureToken': True}, timeout=HTTP_TIMEOUT)
        assert signin.status_code == 200, signin.text
        assert signin.json()['localId'] == 'fb-1'
        wrong = requests.post(f'{base}/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword', params={'key': 'k'},
                              json={'email': 'moved@example.com', 'password': 'nope', 'returnSecureToken': True}, timeout=HTTP_TIMEOUT)
        assert wrong.status_code == 400
    finally:
        hearth_process.stop(proc)
        log.close()
