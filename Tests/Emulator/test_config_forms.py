"""Issue 28: the forms firebase.json and .firebaserc take. The database array form gives each named
instance (and each instance a deploy target resolves to through .firebaserc) its own rules, leaving
other namespaces open as the emulator does; the storage array form gives each bucket (named with
`bucket`, or through a `target`) its own rules; `--project` takes an alias of .firebaserc; emulators
Hearth does not have are named on one start-up line and their ports stay closed; and `--config` from
another working directory reads the rules files (and .firebaserc) next to the config, not in the
working directory.
"""

import json

import requests

import pytest

import emulator_support as support
from emulator_support import WATCH_WITHIN

MAIN_RULES = json.dumps({'rules': {'shared': {'.read': True, '.write': False}}}, indent=2)
OTHER_RULES = """{
  // other-ns: signed-in users write, nobody reads.
  "rules": {
    "shared": {
      ".read": false,
      ".write": "auth != null"
    }
  }
}
"""

SIGNED_IN_ONLY = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /{allPaths=**} {
      allow read, write: if request.auth != null;
    }
  }
}
"""

READ_ONLY = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /{allPaths=**} {
      allow read: if true;
      allow write: if false;
    }
  }
}
"""


# ───────────────────────────── array forms and deploy targets ─────────────────────────────

@pytest.fixture(scope='module')
def arrays(tmp_path_factory):
    root = tmp_path_factory.mktemp('config-arrays')
    ports = support.free_ports('database', 'storage', 'auth')
    firebase = {
        'database': [{'instance': 'other-ns', 'rules': 'other.rules.json'},
                     {'target': 'main', 'rules': 'main.rules.json'}],
        'storage': [{'bucket': 'demo-app-uploads', 'rules': 'uploads.rules'},
                    {'target': 'media', 'rules': 'media.rules'}],
        'emulators': {'database': {'port': ports['database']}, 'storage': {'port': ports['storage']},
                      'auth': {'port': ports['auth']}},
    }
    firebaserc = {
        'projects': {'default': 'demo-app'},
        'targets': {'demo-app': {'database': {'main': ['demo-app-default-rtdb', 'demo-app-eu']},
                                 'storage': {'media': ['demo-app-media', 'demo-app-media-eu']}}},
    }
    directory = support.write_project(root / 'project', firebase, firebaserc, {
        'main.rules.json': MAIN_RULES, 'other.rules.json': OTHER_RULES,
        'uploads.rules': SIGNED_IN_ONLY, 'media.rules': READ_ONLY})
    server = support.start(['--data', root / 'data'], cwd=directory,
                           ports=[ports['database'], ports['storage'], ports['auth']], logs=root / 'logs')
    yield server
    server.stop()


@pytest.mark.parametrize('namespace', ['demo-app-default-rtdb', 'demo-app-eu'])
def test_a_database_target_gives_each_of_its_instances_the_rules(arrays, namespace):
    user = support.unsigned_token('ada')
    assert support.db_put(arrays.base, 'shared', 'seeded', namespace, owner=True).status_code == 200
    read = support.db_get(arrays.base, 'shared', namespace)
    assert (read.status_code, read.json()) == (200, 'seeded'), (namespace, read.status_code, read.text)
    assert support.is_denied(support.db_put(arrays.base, 'shared', 'x', namespace)), namespace
    assert support.is_denied(support.db_put(arrays.base, 'shared', 'x', namespace, token=user)), namespace


def test_a_database_instance_has_its_own_rules(arrays):
    user = support.unsigned_token('ada')
    assert support.is_denied(support.db_get(arrays.base, 'shared', 'other-ns')), 'other-ns has main.rules.json'
    assert support.is_denied(support.db_put(arrays.base, 'shared', 'x', 'other-ns')), 'other-ns allows anonymous writes'
    write = support.db_put(arrays.base, 'shared', 'from ada', 'other-ns', token=user)
    assert write.status_code == 200, write.text
    assert support.db_get(arrays.base, 'shared', 'other-ns', owner=True).json() == 'from ada'


def test_a_namespace_without_rules_stays_open(arrays):
    write = support.db_put(arrays.base, 'shared', 'anyone', 'demo-app-scratch')
    assert write.status_code == 200, ('the emulator leaves namespaces without rules open', write.status_code, write.text)
    assert support.db_get(arrays.base, 'shared', 'demo-app-scratch').json() == 'anyone'


def test_a_bucket_named_in_the_storage_array_has_its_rules(arrays):
    bucket, name = 'demo-app-uploads', 'docs/a.txt'
    user = support.unsigned_token('ada')
    assert support.storage_denied(support.upload(arrays.base, bucket, name, b'x')), 'anonymous upload allowed'
    support.uploaded(arrays.base, bucket, name, b'from ada', token=user)
    assert support.storage_denied(support.object_metadata(arrays.base, bucket, name)), 'anonymous read allowed'
    assert support.object_metadata(arrays.base, bucket, name, token=user).status_code == 200


@pytest.mark.parametrize('bucket', ['demo-app-media', 'demo-app-media-eu'])
def test_a_storage_target_gives_each_of_its_buckets_the_rules(arrays, bucket):
    name = 'pictures/p.txt'
    user = support.unsigned_token('ada')
    assert support.storage_denied(support.upload(arrays.base, bucket, name, b'x', token=user)), 'media is read-only'
    support.uploaded(arrays.base, bucket, name, b'by the owner', headers=support.OWNER)  # the owner passes the rules
    read = support.object_metadata(arrays.base, bucket, name)
    assert read.status_code == 200, (bucket, read.status_code, read.text)
    media = support.download(arrays.base, bucket, name)
    assert (media.status_code, media.content) == (200, b'by the owner'), (bucket, media.status_code, media.text[:200])


# ───────────────────────────── --project alias, emulators Hearth does not have ─────────────────────────────

@pytest.fixture(scope='module')
def aliased(tmp_path_factory):
    root = tmp_path_factory.mktemp('config-alias')
    ports = support.free_ports('database', 'auth', 'firestore', 'pubsub')
    firebase = {
        'firestore': {'rules': 'firestore.rules'},
        'emulators': {
            'functions': {},
            'database': {'port': ports['database'], 'host': 'localhost'},
            'pubsub': {'port': ports['pubsub']},
            'auth': {'port': ports['auth'], 'host': '127.0.0.1'},
            'firestore': {'port': ports['firestore']},
        },
    }
    firebaserc = {'projects': {'default': 'demo-default', 'staging': 'demo-app'}}
    directory = support.write_project(root / 'project', firebase, firebaserc, {
        'firestore.rules': "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{database}/documents {}\n}\n"})
    server = support.start(['--data', root / 'data', '--project', 'staging'], cwd=directory,
                           ports=[ports['database'], ports['auth']], logs=root / 'logs')
    server.other_ports = ports
    yield server
    server.stop()


def test_project_alias_resolves_through_firebaserc(aliased):
    for port in (aliased.other_ports['database'], aliased.other_ports['auth']):
        user = support.sign_up(aliased.base_on(port), f'ada-{port}@example.com', 'correct horse battery')
        claims = support.jwt_claims(user['token'])
        assert claims.get('aud') == 'demo-app', claims
        assert claims.get('iss') == 'https://securetoken.google.com/demo-app', claims
        # The user is one of demo-app's (each project has its own users in emulator mode).
        assert support.lookup(aliased.base, user['uid'], project='demo-app').get('email') == user['email']


def test_emulators_hearth_does_not_have_are_named_on_one_line(aliased):
    def named():
        return [line for line in aliased.stdout().splitlines() if 'Not served by Hearth:' in line]
    support.poll(lambda: bool(named()), True)  # stdout is a file here: the line must be flushed, not held until exit
    lines = named()
    assert len(lines) == 1, f'expected one "Not served by Hearth:" line on stdout:\n{aliased.stdout()}'
    assert 'Not served by Hearth: firestore, functions, pubsub' in lines[0], lines[0]
    for name in ('firestore', 'pubsub'):
        assert support.port_is_closed(aliased.other_ports[name]), f'something listens on the {name} port'


# ───────────────────────────── --config from another working directory ─────────────────────────────

GUARDED_RULES = json.dumps({'rules': {'guarded': {'.read': True, '.write': False}}}, indent=2)
OPEN_RULES = json.dumps({'rules': {'.read': True, '.write': True}}, indent=2)
OPEN_STORAGE = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /{allPaths=**} {
      allow read, write: if true;
    }
  }
}
"""


@pytest.fixture(scope='module')
def configured_elsewhere(tmp_path_factory):
    root = tmp_path_factory.mktemp('config-elsewhere')
    ports = support.free_ports('database', 'storage', 'decoy')
    config_dir = root / 'project' / 'nested'
    support.write_project(config_dir, {
        'database': {'rules': 'rules/db.rules.json'},
        'storage': {'rules': 'rules/storage.rules'},
        'emulators': {'database': {'port': ports['database']}, 'storage': {'port': ports['storage']}},
    }, support.FIREBASERC, {'rules/db.rules.json': GUARDED_RULES, 'rules/storage.rules': READ_ONLY})
    # The working directory has a firebase.json and rules files of its own, which must not be used.
    cwd = support.write_project(root / 'elsewhere', {
        'database': {'rules': 'rules/db.rules.json'},
        'emulators': {'database': {'port': ports['decoy']}},
    }, {'projects': {'default': 'demo-decoy'}}, {'rules/db.rules.json': OPEN_RULES, 'rules/storage.rules': OPEN_STORAGE})
    server = support.start(['--config', '../project/nested/firebase.json', '--data', root / 'data'], cwd=cwd,
                           ports=[ports['database'], ports['storage']], logs=root / 'logs')
    server.config_dir = config_dir
    server.decoy_port = ports['decoy']
    yield server
    server.stop()


def test_config_rules_paths_resolve_next_to_the_config(configured_elsewhere):
    server = configured_elsewhere
    assert support.port_is_closed(server.decoy_port), 'the working directory\'s firebase.json was used'
    assert support.is_denied(support.db_put(server.base, 'guarded', 'x')), 'the config\'s database rules are not enforced'
    assert support.db_put(server.base, 'guarded', 'owner', owner=True).status_code == 200
    assert support.db_get(server.base, 'guarded').json() == 'owner'
    assert support.storage_denied(support.upload(server.base, support.BUCKET, 'x.txt', b'x')), \
        'the config\'s storage rules are not enforced'


def test_config_rules_files_are_watched_where_they_are(configured_elsewhere):
    server = configured_elsewhere
    support.replace_atomically(server.config_dir / 'rules' / 'db.rules.json',
                               json.dumps({'rules': {'guarded': {'.read': True, '.write': True}}}))
    status = support.poll(lambda: support.db_put(server.base, 'guarded', 'now open').status_code, 200)
    assert status == 200, f'an edit of the config\'s rules file was not applied within {WATCH_WITHIN} s'


# ───────────────────────────── the hub ─────────────────────────────

def test_the_hub_lists_the_emulators_for_rules_unit_testing(tmp_path):
    """rules-unit-testing finds the emulators through FIREBASE_EMULATOR_HUB's `GET /emulators`; an
    export is never started by a web page (a request with an Origin is refused, as by the hub)."""
    ports = support.free_ports('database', 'auth', 'storage', 'hub')
    firebase = {'emulators': {name: {'host': '127.0.0.1', 'port': port} for name, port in ports.items()}}
    directory = support.write_project(tmp_path / 'project', firebase, {'projects': {'default': 'demo-app'}})
    with support.running(['--in-memory'], cwd=directory, ports=list(ports.values()), logs=tmp_path / 'logs') as server:
        hub = f'http://127.0.0.1:{ports["hub"]}'
        answer = requests.get(f'{hub}/emulators', headers={'Origin': 'http://localhost:9876'}, timeout=support.TIMEOUT)
        assert answer.status_code == 200, answer.text
        assert answer.headers.get('Access-Control-Allow-Origin') == 'http://localhost:9876'
        listed = answer.json()
        assert set(listed) == {'database', 'auth', 'storage', 'hub'}
        for name, port in ports.items():
            assert (listed[name]['name'], listed[name]['host'], listed[name]['port']) == (name, '127.0.0.1', port)
            assert listed[name]['listen'] == [{'address': '127.0.0.1', 'family': 'IPv4', 'port': port}]
        # The hub's port serves the APIs too, like every other.
        assert support.db_put(hub, 'via-hub', 1, owner=True).status_code == 200
        target = tmp_path / 'export'
        refused = requests.post(f'{server.base}/_admin/export', json={'path': str(target)}, timeout=support.TIMEOUT,
                                headers={**support.OWNER, 'Origin': 'http://evil.example'})
        assert refused.status_code == 403 and not target.exists(), refused.text
        done = requests.post(f'{server.base}/_admin/export', json={'path': str(target)}, headers=support.OWNER,
                             timeout=support.TIMEOUT)
        assert done.status_code == 200 and (target / 'firebase-export-metadata.json').is_file(), done.text
