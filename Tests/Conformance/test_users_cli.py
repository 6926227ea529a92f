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

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'Support' / 'Python'))
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
                # Ready, not merely answering: while it starts, the port answers 503 "starting".
                if requests.get(f'{base}/readyz', timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
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
                # Ready, not merely answering: while it starts, the port answers 503 "starting".
                if requests.get(f'{base}/readyz', timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
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


def test_get_and_update_by_uid_or_email_then_sign_in_with_the_changes(tmp_path):
    data = str(tmp_path / 'data')
    common = ['--data', data, '--project', 'cli-project']
    uid = hearth('users', 'create', *common, '--email', 'old@example.com', '--password-stdin',
                 '--display-name', 'Old Name', stdin='old-password\n').stdout.strip()
    assert uid
    shown = hearth('users', 'get', 'Old@Example.com', *common)
    assert shown.returncode == 0, shown.stderr
    assert f'uid: {uid}' in shown.stdout and 'email: old@example.com (not verified)' in shown.stdout
    assert 'display name: Old Name' in shown.stdout and 'disabled: no' in shown.stdout
    assert 'old-password' not in shown.stdout

    updated = hearth('users', 'update', uid, *common, '--email', 'new@example.com', '--email-verified',
                     '--password-stdin', '--display-name', 'New Name', '--photo-url', 'https://example.com/a.png',
                     '--claims', '{"role": "editor"}', stdin='new-password\n')
    assert updated.returncode == 0, updated.stderr
    assert 'new-password' not in updated.stdout
    as_json = json.loads(hearth('users', 'get', 'new@example.com', *common, '--json').stdout)
    assert as_json['localId'] == uid and as_json['email'] == 'new@example.com' and as_json['emailVerified'] is True
    assert as_json['displayName'] == 'New Name' and as_json['photoUrl'] == 'https://example.com/a.png'
    assert json.loads(as_json['customAttributes']) == {'role': 'editor'}
    assert as_json['disabled'] is False
    assert as_json.get('passwordHash') in (None, 'UkVEQUNURUQ=')  # never the real hash

    # Removing fields, disabling, and the refusals (each names the Firebase code, exit status 1).
    assert hearth('users', 'update', 'new@example.com', *common, '--display-name', '', '--claims', '{}').returncode == 0
    cleared = json.loads(hearth('users', 'get', uid, *common, '--json').stdout)
    assert 'displayName' not in cleared and json.loads(cleared.get('customAttributes', '{}')) == {}
    other = hearth('users', 'create', *common, '--email', 'taken@example.com').stdout.strip()
    assert other
    taken = hearth('users', 'update', uid, *common, '--email', 'taken@example.com')
    assert taken.returncode == 1 and 'EMAIL_EXISTS' in taken.stderr
    weak = hearth('users', 'update', uid, *common, '--password-stdin', stdin='123\n')
    assert weak.returncode == 1 and 'WEAK_PASSWORD' in weak.stderr
    forbidden = hearth('users', 'update', uid, *common, '--claims', '{"aud": "x"}')
    assert forbidden.returncode == 1 and 'FORBIDDEN_CLAIM' in forbidden.stderr
    missing = hearth('users', 'get', 'ghost@example.com', *common)
    assert missing.returncode == 1 and 'USER_NOT_FOUND' in missing.stderr
    assert hearth('users', 'update', 'no-such-uid', *common, '--disable').returncode == 1
    nothing = hearth('users', 'update', uid, *common)
    assert nothing.returncode == 1 and 'nothing to change' in nothing.stderr
    assert hearth('users', 'update', other, *common, '--disable').returncode == 0
    assert 'disabled: yes' in hearth('users', 'get', other, *common).stdout

    port = hearth_process.free_port()
    binary = os.environ.get('HEARTH_BIN') or str(hearth_process.DEFAULT_BIN)
    log = open(tmp_path / 'server.log', 'wb')
    proc = subprocess.Popen([binary, 'serve', '--port', str(port), *common],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    base = f'http://127.0.0.1:{port}'
    sign_in = f'{base}/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword'
    try:
        deadline = time.time() + 60
        while True:
            try:
                # Ready, not merely answering: while it starts, the port answers 503 "starting".
                if requests.get(f'{base}/readyz', timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert proc.poll() is None and time.time() < deadline, 'hearth did not start'
            time.sleep(0.1)
        ok = requests.post(sign_in, params={'key': 'k'}, timeout=HTTP_TIMEOUT,
                           json={'email': 'new@example.com', 'password': 'new-password', 'returnSecureToken': True})
        assert ok.status_code == 200, ok.text
        assert ok.json()['localId'] == uid
        old = requests.post(sign_in, params={'key': 'k'}, timeout=HTTP_TIMEOUT,
                            json={'email': 'new@example.com', 'password': 'old-password', 'returnSecureToken': True})
        assert old.status_code == 400
    finally:
        hearth_process.stop(proc)
        log.close()
