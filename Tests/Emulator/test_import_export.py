"""Issue 28: `--import` never mixes an export into data a data directory already holds (a database
value, a user or a file: refused, naming --import-replace; with --import-replace the old data is
gone and the export's is there), while a used but empty data directory takes it; `hearth emulators
export DIR --url …` writes the emulators:export layout from a running server on demand, refuses a
non-empty DIR unless --force; the older "flattened" and "nested" storage export layouts import; and
`--export-on-exit` without a directory exports into the --import directory, which need not exist on
the first run (nothing is imported then) — the emulator's `--import dir --export-on-exit` workflow.
"""

import signal
import urllib.parse

import pytest
import requests

import emulator_support as support
from emulator_support import BUCKET, NAMESPACE, OWNER


def plain_project(directory):
    """A project with the three emulators on free ports and no rules files (open, as a demo project)."""
    ports = support.free_ports('database', 'auth', 'storage')
    support.write_project(directory, {'emulators': {name: {'port': port} for name, port in ports.items()}},
                          support.FIREBASERC)
    return directory, [ports['database'], ports['auth'], ports['storage']]


def make_data(base, kind):
    if kind == 'value':
        assert support.db_put(base, 'existing/value', 42, owner=True).status_code == 200
    elif kind == 'user':
        support.sign_up(base, 'existing@example.com', 'existing-password-1')
    elif kind == 'file':
        support.uploaded(base, BUCKET, 'existing.txt', b'existing', headers=OWNER)
    else:
        raise ValueError(kind)


# ───────────────────────────── import over existing data ─────────────────────────────

@pytest.mark.parametrize('kind', ['value', 'user', 'file'])
def test_import_into_a_data_directory_with_data_is_refused(tmp_path, seed, kind):
    directory, ports = plain_project(tmp_path / 'project')
    data = tmp_path / 'data'
    with support.running(['--data', data], directory, ports, logs=tmp_path / 'logs') as server:
        make_data(server.base, kind)
    status, output = support.run_to_exit(['--data', data, '--import', seed.directory], cwd=directory)
    assert status != 0, f'an import over an existing {kind} was not refused:\n{output}'
    assert '--import-replace' in output, f'the refusal does not mention --import-replace:\n{output}'


def test_import_replace_replaces_the_data(tmp_path, seed):
    directory, ports = plain_project(tmp_path / 'project')
    data = tmp_path / 'data'
    with support.running(['--data', data], directory, ports, logs=tmp_path / 'logs-before') as server:
        for kind in ('value', 'user', 'file'):
            make_data(server.base, kind)
        assert support.db_put(server.base, 'elsewhere', 'old', namespace='demo-app-scratch', owner=True).status_code == 200

    status, output = support.run_to_exit(['--data', data, '--import', seed.directory], cwd=directory)
    assert status != 0 and '--import-replace' in output, output

    with support.running(['--data', data, '--import', seed.directory, '--import-replace'], directory, ports,
                         logs=tmp_path / 'logs-replaced') as server:
        base = server.base
        assert support.db_export(base) == seed.database
        assert support.db_get(base, 'elsewhere', 'demo-app-scratch', owner=True).json() is None, 'old data survived'
        gone = support.sign_in(base, 'existing@example.com', 'existing-password-1')
        assert gone.status_code == 400 and support.error_message(gone).startswith(support.NO_SUCH_USER), gone.text
        assert support.object_metadata(base, BUCKET, 'existing.txt', headers=OWNER).status_code == 404
        assert support.signed_in(base, seed.alice_email, seed.alice_password)['localId'] == seed.alice_uid
        support.assert_served_object(base, BUCKET, seed.object_name, seed.object_bytes, seed.object_type,
                                     seed.object_metadata, seed.object_token)


def test_import_into_a_used_but_empty_data_directory_is_accepted(tmp_path, seed):
    directory, ports = plain_project(tmp_path / 'project')
    data = tmp_path / 'data'
    with support.running(['--data', data], directory, ports, logs=tmp_path / 'logs-empty'):
        pass
    with support.running(['--data', data, '--import', seed.directory], directory, ports, logs=tmp_path / 'logs') as server:
        assert support.db_export(server.base) == seed.database
        assert support.signed_in(server.base, seed.alice_email, seed.alice_password)['localId'] == seed.alice_uid


# ───────────────────────────── hearth emulators export ─────────────────────────────

@pytest.fixture(scope='module')
def exporting(tmp_path_factory, seed):
    """A server with the seed imported and more written since; the CLI runs in root/cli."""
    root = tmp_path_factory.mktemp('on-demand')
    directory, ports = plain_project(root / 'project')
    server = support.start(['--data', root / 'data', '--import', seed.directory], directory, ports, logs=root / 'logs')
    base = server.base
    assert support.db_put(base, 'added', {'after': 'import', '.priority': 3}, owner=True).status_code == 200
    server.user = support.sign_up(base, 'erin@example.com', 'erin-password-1')
    _, server.added_token = support.uploaded(base, BUCKET, 'added/later.txt', b'added later', metadata={'k': 'v'},
                                             token=server.user['token'])
    server.cli_cwd = root / 'cli'
    server.cli_cwd.mkdir()
    yield server
    server.stop()


def assert_export_of(export, server, seed):
    assert export.databases[NAMESPACE] == support.db_export(server.base)
    assert export.databases[NAMESPACE]['added'] == {'after': 'import', '.priority': 3}
    assert export.user_by_email('erin@example.com')['localId'] == server.user['uid']
    assert seed.alice_uid in export.users and export.users[seed.bob_uid].get('disabled') is True, sorted(export.users)
    assert BUCKET in export.buckets, export.buckets
    support.assert_exported_object(export, BUCKET, seed.object_name, seed.object_bytes, seed.object_type,
                                   seed.object_metadata, seed.object_token)
    support.assert_exported_object(export, BUCKET, 'added/later.txt', b'added later', 'text/plain', {'k': 'v'},
                                   server.added_token)


def test_emulators_export_writes_the_layout_on_demand(exporting, seed):
    status, out, err = support.run_cli(['emulators', 'export', 'exports/first', '--url', exporting.base],
                                       cwd=exporting.cli_cwd)
    assert status == 0, (status, out, err)
    assert 'Export complete' in out, (out, err)
    # DIR is relative to the CLI's working directory, not the server's.
    assert_export_of(support.Export(exporting.cli_cwd / 'exports' / 'first'), exporting, seed)
    assert not (exporting.cwd / 'exports').exists(), 'the export went to the server\'s working directory'
    # The server goes on serving.
    assert support.signed_in(exporting.base, 'erin@example.com', 'erin-password-1')['localId'] == exporting.user['uid']


def test_emulators_export_into_an_existing_empty_directory(exporting, seed):
    target = exporting.cli_cwd / 'empty-target'
    target.mkdir()
    status, out, err = support.run_cli(['emulators', 'export', target, '--url', exporting.base], cwd=exporting.cli_cwd)
    assert status == 0 and 'Export complete' in out, (status, out, err)
    assert_export_of(support.Export(target), exporting, seed)


def test_emulators_export_refuses_a_non_empty_directory_without_force(exporting, seed):
    target = exporting.cli_cwd / 'occupied'
    target.mkdir()
    (target / 'keep.txt').write_text('not an export')
    status, out, err = support.run_cli(['emulators', 'export', target, '--url', exporting.base], cwd=exporting.cli_cwd)
    assert status != 0, (status, out, err)
    assert '--force' in out + err, (out, err)
    assert not (target / 'firebase-export-metadata.json').exists(), support.listing(target)
    assert (target / 'keep.txt').read_text() == 'not an export'

    status, out, err = support.run_cli(['emulators', 'export', target, '--url', exporting.base, '--force'],
                                       cwd=exporting.cli_cwd)
    assert status == 0 and 'Export complete' in out, (status, out, err)
    assert_export_of(support.Export(target), exporting, seed)


def test_an_export_never_deletes_a_directory_that_is_not_an_export(exporting, seed, tmp_path):
    """The server itself refuses (409) to replace a directory of other files unless asked with force;
    an earlier export it replaces; and --export-on-exit into such a directory stops the start."""
    project = tmp_path / 'someones-project'
    project.mkdir()
    (project / 'main.swift').write_text('print("keep me")')
    refused = requests.post(f'{exporting.base}/_admin/export', json={'path': str(project)}, headers=OWNER,
                            timeout=support.TIMEOUT)
    assert refused.status_code == 409 and 'not an earlier export' in refused.json()['error'], refused.text
    assert sorted(p.name for p in project.iterdir()) == ['main.swift']
    earlier = tmp_path / 'earlier'
    assert requests.post(f'{exporting.base}/_admin/export', json={'path': str(earlier)}, headers=OWNER,
                         timeout=support.TIMEOUT).status_code == 200
    (earlier / 'stray.txt').write_text('left by hand')
    again = requests.post(f'{exporting.base}/_admin/export', json={'path': str(earlier)}, headers=OWNER,
                          timeout=support.TIMEOUT)
    assert again.status_code == 200 and not (earlier / 'stray.txt').exists(), again.text
    status, output = support.run_to_exit(['--in-memory', '--port', '0', f'--export-on-exit={project}'], cwd=tmp_path)
    assert status != 0 and 'not an earlier export' in output, output
    assert (project / 'main.swift').read_text() == 'print("keep me")'


# ───────────────────────────── older storage layouts ─────────────────────────────

OLD_TEXT = ('docs/read me.txt', BUCKET, b'an object from an older export\n', 'text/plain')
OLD_BINARY = ('top.bin', 'demo-app-legacy', bytes(range(256)), 'application/octet-stream')


def encode_uri_component(text):
    return urllib.parse.quote(text, safe="-_.!~*'()")


def write_old_layout(directory, layout):
    """A storage-only export (firebase-tools 10.x) in the flattened or nested layout (spec §2.5.2): the
    text object has its token in downloadTokens; the binary one, as older writers left it, only in
    customMetadata.firebaseStorageDownloadTokens."""
    storage = directory / 'storage_export'
    support.write_json(directory / 'firebase-export-metadata.json',
                       {'version': '10.4.2', 'storage': {'version': '10.4.2', 'path': 'storage_export'}})
    support.write_json(storage / 'buckets.json', {'buckets': [{'id': BUCKET}, {'id': 'demo-app-legacy'}]})
    objects = [
        (OLD_TEXT, support.object_metadata_json(OLD_TEXT[0], OLD_TEXT[1], OLD_TEXT[2], OLD_TEXT[3],
                                                custom={'layout': layout}, tokens=['5a1c0e3e-0000-4000-8000-00000000000a'])),
        (OLD_BINARY, support.object_metadata_json(OLD_BINARY[0], OLD_BINARY[1], OLD_BINARY[2], OLD_BINARY[3],
                                                  custom={'k': 'v', 'firebaseStorageDownloadTokens': 'tok-a,tok-b'})),
    ]
    for (name, bucket, data, _), document in objects:
        del document['etag']
        if 'firebaseStorageDownloadTokens' in document['customMetadata']:
            del document['downloadTokens']
        relative = encode_uri_component(f'{bucket}/{name}') if layout == 'flattened' else f'{bucket}/{name}'
        blob = storage / 'blobs' / relative
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        support.write_json(storage / 'metadata' / f'{relative}.json', document)


@pytest.mark.parametrize('layout', ['flattened', 'nested'])
def test_older_storage_layouts_import(tmp_path, layout):
    export = tmp_path / 'old-export'
    write_old_layout(export, layout)
    if layout == 'flattened':
        assert (export / 'storage_export' / 'blobs' / 'demo-app.appspot.com%2Fdocs%2Fread%20me.txt').is_file()
    directory, ports = plain_project(tmp_path / 'project')
    with support.running(['--data', tmp_path / 'data', '--import', export], directory, ports, logs=tmp_path / 'logs') as server:
        name, bucket, data, content_type = OLD_TEXT
        support.assert_served_object(server.base, bucket, name, data, content_type, {'layout': layout},
                                     '5a1c0e3e-0000-4000-8000-00000000000a')
        name, bucket, data, content_type = OLD_BINARY
        support.assert_served_object(server.base, bucket, name, data, content_type, {'k': 'v'}, 'tok-a')
        media = support.download(server.base, bucket, name, download_token='tok-b')
        assert (media.status_code, media.content) == (200, data), (media.status_code, media.text[:200])
        # Nothing else came with a storage-only export.
        assert support.db_export(server.base) is None


# ───────────────────────────── --export-on-exit into the --import directory ─────────────────────────────

def test_export_on_exit_without_a_directory_uses_the_import_directory(tmp_path):
    state = tmp_path / 'state'  # does not exist before the first run
    args = ['--in-memory', '--import', state, '--export-on-exit']

    directory, ports = plain_project(tmp_path / 'first')
    server = support.start(args, directory, ports, logs=tmp_path / 'logs-first')
    try:
        base = server.base
        assert support.db_export(base) is None, 'something was imported from a directory that does not exist'
        absent = support.sign_in(base, 'dora@example.com', 'dora-password-1')
        assert absent.status_code == 400 and support.error_message(absent).startswith(support.NO_SUCH_USER), absent.text
        assert support.db_put(base, 'counter', {'.value': 1, '.priority': 'p'}, owner=True).status_code == 200
        dora = support.sign_up(base, 'dora@example.com', 'dora-password-1')
        _, token = support.uploaded(base, BUCKET, 'state.txt', b'state 1', token=dora['token'], metadata={'run': '1'})
        status = server.signal_and_wait(signal.SIGTERM)
    finally:
        server.stop()
    assert status == 0, f'exit status {status}; log:\n{server.log_tail()}'
    export = support.Export(state)
    assert export.databases[NAMESPACE] == {'counter': {'.value': 1, '.priority': 'p'}}, export.databases
    assert export.user_by_email('dora@example.com')['localId'] == dora['uid']
    support.assert_exported_object(export, BUCKET, 'state.txt', b'state 1', 'text/plain', {'run': '1'}, token)

    # The next run imports it back, and its exit exports again into the same directory.
    directory, ports = plain_project(tmp_path / 'second')
    server = support.start(args, directory, ports, logs=tmp_path / 'logs-second')
    try:
        base = server.base
        assert support.db_export(base) == {'counter': {'.value': 1, '.priority': 'p'}}
        assert support.signed_in(base, 'dora@example.com', 'dora-password-1')['localId'] == dora['uid']
        support.assert_served_object(base, BUCKET, 'state.txt', b'state 1', 'text/plain', {'run': '1'}, token)
        assert support.db_put(base, 'counter', 2, owner=True).status_code == 200
        status = server.signal_and_wait(signal.SIGTERM)
    finally:
        server.stop()
    assert status == 0, f'exit status {status}; log:\n{server.log_tail()}'
    assert support.Export(state).databases[NAMESPACE] == {'counter': 2}
