"""`hearth storage`: copy a folder up and back, list, delete, and storage rules, against the session's server."""

import os
import pathlib
import subprocess
import sys
import uuid

import requests

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'Support' / 'Python'))
import hearth_process  # noqa: E402

from harness import PROJECT_ID  # noqa: E402

BUCKET = f'{PROJECT_ID}.appspot.com'


def storage(server, *args):
    """Runs `hearth storage ARGS` against `server` (None: an offline command)."""
    binary = os.environ.get('HEARTH_BIN') or str(hearth_process.DEFAULT_BIN)
    # In --emulator mode `owner` is the admin credential.
    online = ['--url', server.base_url, '--secret', 'owner'] if server else []
    return subprocess.run([binary, 'storage', *args, *online], capture_output=True, text=True, timeout=120)


def test_copy_a_folder_up_and_back_list_and_remove(hearth_server, tmp_path):
    source = tmp_path / 'photos'
    (source / 'trips').mkdir(parents=True)
    (source / 'a.txt').write_text('alpha')
    (source / 'trips' / 'b.bin').write_bytes(os.urandom(3 * 1024 * 1024 + 7))
    folder = f'cli-{uuid.uuid4().hex[:8]}'
    up = storage(hearth_server, 'cp', '-r', str(source), f'gs://{BUCKET}/{folder}')
    assert up.returncode == 0, up.stderr
    assert 'uploaded 2 file(s)' in up.stdout
    assert '100%' in up.stderr  # progress was shown

    listed = storage(hearth_server, 'ls', f'gs://{BUCKET}/{folder}/')
    assert listed.stdout.split() == [f'gs://{BUCKET}/{folder}/trips/', f'gs://{BUCKET}/{folder}/a.txt']
    recursive = storage(hearth_server, 'ls', '-r', '-l', f'gs://{BUCKET}/{folder}')
    assert f'{3 * 1024 * 1024 + 7}' in recursive.stdout

    back = tmp_path / 'back'
    down = storage(hearth_server, 'cp', '-r', f'gs://{BUCKET}/{folder}', str(back))
    assert down.returncode == 0, down.stderr
    assert (back / 'a.txt').read_text() == 'alpha'
    assert (back / 'trips' / 'b.bin').read_bytes() == (source / 'trips' / 'b.bin').read_bytes()

    removed = storage(hearth_server, 'rm', '-r', f'gs://{BUCKET}/{folder}')
    assert removed.returncode == 0, removed.stderr
    assert 'deleted 2 file(s)' in removed.stdout
    empty = storage(hearth_server, 'ls', f'gs://{BUCKET}/{folder}/')
    assert empty.stdout.strip() == ''
    missing = storage(hearth_server, 'cp', f'gs://{BUCKET}/{folder}/a.txt', str(tmp_path / 'x'))
    assert missing.returncode == 1
    assert '404' in missing.stderr


def test_rules_check_set_and_get(hearth_server, tmp_path):
    broken = tmp_path / 'broken.rules'
    broken.write_text("service firebase.storage {\n  match /b/{bucket}/o {\n    allow read: if request.auth.uid ==;\n  }\n}\n")
    checked = storage(None, 'rules', 'check', str(broken))
    assert checked.returncode == 1
    assert f'{broken}:3:' in checked.stderr
    assert storage(hearth_server, 'rules', 'set', str(broken)).returncode == 1

    rules = tmp_path / 'storage.rules'
    rules.write_text("rules_version = '2';\nservice firebase.storage {\n  match /b/{bucket}/o {\n"
                     "    match /{all=**} { allow write: if true; }\n    match /open/{file} { allow read; }\n  }\n}\n")
    assert storage(hearth_server, 'rules', 'set', str(rules)).returncode == 0
    assert storage(hearth_server, 'rules', 'get').stdout.strip() == rules.read_text().strip()
    # The rules are live: anyone writes, but reads only under open/.
    base = f'{hearth_server.base_url}/v0/b/{BUCKET}/o'
    assert requests.post(f'{base}?name=locked%2Fx', data=b'1', timeout=10).status_code == 200
    assert requests.post(f'{base}?name=open%2Fx', data=b'1', timeout=10).status_code == 200
    assert requests.get(f'{base}/locked%2Fx', timeout=10).status_code == 403
    assert requests.get(f'{base}/open%2Fx', timeout=10).status_code == 200
    # Back to open rules for the rest of the session.
    rules.write_text("rules_version = '2';\nservice firebase.storage { match /b/{bucket}/o { match /{all=**} { allow read, write; } } }\n")
    assert storage(hearth_server, 'rules', 'set', str(rules)).returncode == 0
    scenarios = tmp_path / 'scenarios.json'
    scenarios.write_text('{"tests": [{"name": "anyone reads", "auth": null, "method": "get", "path": "a/b", "expect": "allowed"},'
                         '{"name": "wrong on purpose", "auth": null, "method": "delete", "path": "a", "expect": "denied"}]}')
    tested = storage(None, 'rules', 'test', str(rules), str(scenarios))
    assert tested.returncode == 1
    assert '1 passed, 1 failed' in tested.stdout
