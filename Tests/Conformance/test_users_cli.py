"""`hearth users` on a data directory: users created offline sign in once the server runs.

Starts its own server on a fresh data directory (not the session's), after the CLI has written it.
"""

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
