"""Issue 28: `hearth serve --emulator`, started in a project directory as `firebase init emulators`
leaves it (no --config: firebase.json and .firebaserc are picked up from the working directory) with
`--import` of a firebase-tools export (spec §2.7), serves every API on every port firebase.json names,
enforces both rules files, signs the imported users in (fakeHash passwords, a disabled user, custom
claims), serves the imported object with its token and metadata and the database with its
priorities; on SIGINT it writes `--export-on-exit` in the emulators:export layout, and a fresh server
that imports that export has everything back (a Hearth → Hearth round trip).
"""

import json
import signal

import pytest
import requests

import emulator_support as support
from emulator_support import BUCKET, NAMESPACE, PROJECT, TIMEOUT, Seed

DATABASE_RULES = """{
  "rules": {
    "users": {
      "$uid": {
        ".read": "auth != null && auth.uid == $uid",
        ".write": "auth != null && auth.uid == $uid"
      }
    },
    "notes": {
      "$uid": {
        ".read": "auth != null && auth.uid == $uid",
        ".write": "auth != null && auth.uid == $uid"
      }
    },
    "motd": {
      ".read": true,
      ".write": false
    }
  }
}
"""

STORAGE_RULES = f"""rules_version = '2';
service firebase.storage {{
  match /b/{{bucket}}/o {{
    match /avatars/{{file}} {{
      allow read: if request.auth != null && request.auth.uid == '{Seed.alice_uid}';
      allow write: if false;
    }}
    match /users/{{uid}}/{{allPaths=**}} {{
      allow read, write: if request.auth != null && request.auth.uid == uid;
    }}
  }}
}}
"""

CAROL_EMAIL = 'carol@example.com'
CAROL_PASSWORD = 'carol-correct-horse-7'
CAROL_BYTES = b'\x00\x01 written before the exit \xfe\xff'
CAROL_TYPE = 'application/octet-stream'
CAROL_METADATA = {'kind': 'note', 'written-by': 'carol'}


def make_project(directory):
    """A project directory as `firebase init emulators` leaves it, on free ports; (dir, ports)."""
    ports = support.free_ports('database', 'auth', 'storage')
    support.write_project(directory, support.init_emulators_firebase_json(ports), support.FIREBASERC,
                          {'database.rules.json': DATABASE_RULES, 'storage.rules': STORAGE_RULES})
    return directory, ports


class Run:
    def __init__(self, server, ports, root):
        self.server = server
        self.ports = ports
        self.root = root
        self.base = server.base


@pytest.fixture(scope='module')
def first(tmp_path_factory, seed):
    """The server started from the project directory with the seed imported and --export-on-exit=DIR."""
    root = tmp_path_factory.mktemp('project-first')
    project, ports = make_project(root / 'project')
    export_dir = root / 'exported-on-exit'
    server = support.start(['--data', root / 'data', '--import', seed.directory, f'--export-on-exit={export_dir}'],
                           cwd=project, ports=[ports['database'], ports['auth'], ports['storage']], logs=root / 'logs')
    run = Run(server, ports, root)
    run.export_dir = export_dir
    yield run
    server.stop()


# ───────────────────────────── the first server: what the import brought ─────────────────────────────

def test_the_database_comes_back_with_its_priorities(first, seed):
    tree = support.db_export(first.base)
    assert tree.get('users') == seed.database['users'], tree
    assert tree.get('motd') == {'.value': 'hi', '.priority': 'a'}, tree
    # Without format=export, the plain value.
    response = support.db_get(first.base, 'motd', owner=True)
    assert (response.status_code, response.json()) == (200, 'hi'), response.text


@pytest.mark.parametrize('emulator', ['database', 'auth', 'storage'])
def test_every_named_port_serves_every_api(first, seed, emulator):
    base = f'http://127.0.0.1:{first.ports[emulator]}'
    motd = support.db_get(base, 'motd')
    assert (motd.status_code, motd.json()) == (200, 'hi'), (emulator, motd.status_code, motd.text)
    signed = support.sign_in(base, seed.alice_email, seed.alice_password)
    assert signed.status_code == 200, (emulator, signed.status_code, signed.text)
    assert signed.json()['localId'] == seed.alice_uid, signed.text
    metadata = support.object_metadata(base, BUCKET, seed.object_name, token=support.unsigned_token(seed.alice_uid))
    assert metadata.status_code == 200, (emulator, metadata.status_code, metadata.text)
    assert metadata.json().get('name') == seed.object_name, metadata.text


def test_the_database_rules_file_is_enforced(first, seed):
    base, alice = first.base, seed.alice_uid
    id_token = support.signed_in(base, seed.alice_email, seed.alice_password)['idToken']
    path = f'users/{alice}'

    assert support.is_denied(support.db_get(base, path)), 'an unauthenticated read of users/<alice> was not refused'
    assert support.is_denied(support.db_put(base, f'{path}/name', 'Mallory')), 'an unauthenticated write was not refused'
    assert support.is_denied(support.db_get(base, path, token=support.unsigned_token('mallory'))), 'another user read alice'
    assert support.is_denied(support.db_put(base, 'motd', 'defaced', token=id_token)), 'motd is not writable by users'

    for who, token in (('her ID token', id_token), ('an unsigned token', support.unsigned_token(alice))):
        response = support.db_get(base, path, token=token)
        assert (response.status_code, response.json()) == (200, {'name': 'Alice'}), (who, response.status_code, response.text)
        write = support.db_put(base, f'notes/{alice}/{"signed" if token == id_token else "unsigned"}', True, token=token)
        assert write.status_code == 200, (who, write.status_code, write.text)
    # The refused write changed nothing.
    assert support.db_get(base, 'motd', owner=True).json() == 'hi'


def test_the_storage_rules_file_is_enforced(first, seed):
    base, alice = first.base, seed.alice_uid
    id_token = support.signed_in(base, seed.alice_email, seed.alice_password)['idToken']

    assert support.storage_denied(support.object_metadata(base, BUCKET, seed.object_name)), 'unauthenticated read allowed'
    assert support.storage_denied(support.download(base, BUCKET, seed.object_name)), 'unauthenticated download allowed'
    assert support.storage_denied(support.object_metadata(base, BUCKET, seed.object_name, token=support.unsigned_token('mallory')))
    for who, token in (('her ID token', id_token), ('an unsigned token', support.unsigned_token(alice))):
        response = support.object_metadata(base, BUCKET, seed.object_name, token=token)
        assert response.status_code == 200, (who, response.status_code, response.text)

    name = f'users/{alice}/from-rules-test.txt'
    assert support.storage_denied(support.upload(base, BUCKET, name, b'x')), 'unauthenticated upload allowed'
    assert support.storage_denied(support.upload(base, BUCKET, name, b'x', token=support.unsigned_token('mallory')))
    assert support.storage_denied(support.upload(base, BUCKET, 'avatars/new.txt', b'x', token=id_token)), 'avatars/ is read-only'
    for token in (id_token, support.unsigned_token(alice)):
        response = support.upload(base, BUCKET, name, b'allowed', token=token)
        assert response.status_code == 200, (response.status_code, response.text)


def test_imported_users_sign_in_as_on_the_emulator(first, seed):
    base = first.base
    alice = support.signed_in(base, seed.alice_email, seed.alice_password)
    assert alice['localId'] == seed.alice_uid, alice
    assert alice.get('displayName') == 'Alice', alice
    claims = support.jwt_claims(alice['idToken'])
    assert (claims.get('sub'), claims.get('aud')) == (seed.alice_uid, PROJECT), claims

    wrong = support.sign_in(base, seed.alice_email, 'secret124')
    assert wrong.status_code == 400 and support.error_message(wrong).startswith(support.WRONG_PASSWORD), wrong.text
    bob = support.sign_in(base, seed.bob_email, 'anything-at-all')
    assert bob.status_code == 400 and support.error_message(bob).startswith('USER_DISABLED'), bob.text

    record = support.lookup(base, seed.bob_uid)
    assert record.get('disabled') is True, record
    assert json.loads(record.get('customAttributes') or '{}') == {'admin': True}, record
    assert any(p.get('providerId') == 'google.com' and p.get('rawId') == '1234567890'
               for p in record.get('providerUserInfo', [])), record
    record = support.lookup(base, seed.alice_uid)
    assert record.get('email') == seed.alice_email and record.get('emailVerified') is True, record
    assert str(record.get('createdAt')) == '1700000000000', record


def test_the_imported_object_is_served_with_its_token_and_metadata(first, seed):
    support.assert_served_object(first.base, BUCKET, seed.object_name, seed.object_bytes, seed.object_type,
                                 seed.object_metadata, seed.object_token)
    wrong = support.download(first.base, BUCKET, seed.object_name, download_token='00000000-0000-4000-8000-000000000000')
    assert wrong.status_code in (401, 403) and wrong.content != seed.object_bytes, (wrong.status_code, wrong.text[:200])


# ───────────────────────────── writes, SIGINT, the export on exit ─────────────────────────────

class Exited:
    pass


@pytest.fixture(scope='module')
def exited(first):
    """Writes through the APIs (a new user, a database value with a priority, an upload with custom
    metadata), notes what the server then holds, and stops it with SIGINT."""
    base = first.base
    carol = support.sign_up(base, CAROL_EMAIL, CAROL_PASSWORD)
    write = support.db_put(base, f'notes/{carol["uid"]}', {'text': 'written before the exit', '.priority': 7},
                           token=carol['token'])
    assert write.status_code == 200, write.text
    _, upload_token = support.uploaded(base, BUCKET, f'users/{carol["uid"]}/note.bin', CAROL_BYTES, CAROL_TYPE,
                                       token=carol['token'], metadata=CAROL_METADATA)
    config = requests.get(f'{base}/emulator/v1/projects/{PROJECT}/config', timeout=TIMEOUT)
    assert config.status_code == 200, config.text

    result = Exited()
    result.carol = carol
    result.upload_name = f'users/{carol["uid"]}/note.bin'
    result.upload_token = upload_token
    result.snapshot = support.db_export(base)
    result.config = config.json()
    result.status = first.server.signal_and_wait(signal.SIGINT)
    result.export_dir = first.export_dir
    result.log = first.server.log_tail()
    return result


def test_sigint_exits_0_after_writing_the_export(exited):
    assert exited.status == 0, f'exit status {exited.status}; log:\n{exited.log}'
    export = support.Export(exited.export_dir)
    assert NAMESPACE in export.databases, sorted(export.databases)
    assert BUCKET in export.buckets, export.buckets


def test_the_export_holds_the_database_with_priorities(exited, seed):
    assert exited.snapshot['notes'][exited.carol['uid']] == {'text': 'written before the exit', '.priority': 7}, exited.snapshot
    export = support.Export(exited.export_dir)
    assert export.databases[NAMESPACE] == exited.snapshot
    assert export.databases[NAMESPACE]['users'] == seed.database['users']


def test_the_export_holds_the_users_without_their_passwords(exited, seed):
    export = support.Export(exited.export_dir)
    carol = export.user_by_email(CAROL_EMAIL)
    assert carol['localId'] == exited.carol['uid'], carol
    assert carol.get('passwordHash') and not carol['passwordHash'].startswith('fakeHash:'), carol
    alice = export.users.get(seed.alice_uid)
    assert alice and alice.get('email') == seed.alice_email and alice.get('displayName') == 'Alice', export.users
    bob = export.users.get(seed.bob_uid)
    assert bob and bob.get('disabled') is True, export.users
    assert json.loads(bob.get('customAttributes') or '{}') == {'admin': True}, bob
    # Hearth keeps password hashes, never passwords: neither the new user's nor the imported one's is written out.
    for password in (CAROL_PASSWORD, seed.alice_password):
        assert password not in export.accounts_text, f'a plaintext password is in accounts.json: {password}'
    assert export.auth_config == exited.config, (export.auth_config, exited.config)


def test_the_export_holds_the_objects(exited, seed):
    export = support.Export(exited.export_dir)
    support.assert_exported_object(export, BUCKET, seed.object_name, seed.object_bytes, seed.object_type,
                                   seed.object_metadata, seed.object_token)
    support.assert_exported_object(export, BUCKET, exited.upload_name, CAROL_BYTES, CAROL_TYPE, CAROL_METADATA,
                                   exited.upload_token)


# ───────────────────────────── a fresh server importing that export ─────────────────────────────

@pytest.fixture(scope='module')
def reimported(tmp_path_factory, exited):
    assert exited.status == 0, f'the first server exited with {exited.status}'
    root = tmp_path_factory.mktemp('project-again')
    project, ports = make_project(root / 'project')
    server = support.start(['--data', root / 'data', '--import', exited.export_dir], cwd=project,
                           ports=[ports['database'], ports['auth'], ports['storage']], logs=root / 'logs')
    yield Run(server, ports, root)
    server.stop()


def test_round_trip_every_user_signs_in_with_the_same_password(reimported, exited, seed):
    base = reimported.base
    carol = support.signed_in(base, CAROL_EMAIL, CAROL_PASSWORD)
    assert carol['localId'] == exited.carol['uid'], carol
    alice = support.signed_in(base, seed.alice_email, seed.alice_password)
    assert alice['localId'] == seed.alice_uid, alice
    wrong = support.sign_in(base, CAROL_EMAIL, CAROL_PASSWORD + 'x')
    assert wrong.status_code == 400 and support.error_message(wrong).startswith(support.WRONG_PASSWORD), wrong.text
    bob = support.sign_in(base, seed.bob_email, 'anything-at-all')
    assert bob.status_code == 400 and support.error_message(bob).startswith('USER_DISABLED'), bob.text
    assert json.loads(support.lookup(base, seed.bob_uid).get('customAttributes') or '{}') == {'admin': True}


def test_round_trip_database_values_and_priorities(reimported, exited):
    assert support.db_export(reimported.base) == exited.snapshot
    # And the rules still apply to them: carol reads her note, nobody else does.
    carol = support.signed_in(reimported.base, CAROL_EMAIL, CAROL_PASSWORD)
    note = support.db_get(reimported.base, f'notes/{exited.carol["uid"]}/text', token=carol['idToken'])
    assert (note.status_code, note.json()) == (200, 'written before the exit'), note.text
    assert support.is_denied(support.db_get(reimported.base, f'notes/{exited.carol["uid"]}'))


def test_round_trip_objects_with_their_tokens_and_metadata(reimported, exited, seed):
    support.assert_served_object(reimported.base, BUCKET, seed.object_name, seed.object_bytes, seed.object_type,
                                 seed.object_metadata, seed.object_token)
    support.assert_served_object(reimported.base, BUCKET, exited.upload_name, CAROL_BYTES, CAROL_TYPE, CAROL_METADATA,
                                 exited.upload_token)
