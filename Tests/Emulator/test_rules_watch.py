"""Issue 28: the rules files firebase.json names are watched. An edit to database.rules.json or
storage.rules changes what the running server enforces, without a restart; an edit that does not
compile keeps the last good rules in force and logs `<file>:<line>:<column>` (the line where the
mistake is); fixing the file applies it again (saved by renaming a new file over it, as editors do).
A rules file that is invalid or missing at start-up stops `hearth serve` with a non-zero status and a
message naming it.
"""

import re
import time

import pytest

import emulator_support as support
from emulator_support import BUCKET, WATCH_WITHIN


def database_rules(open_writable):
    """Rules where exactly one of /open and /closed is writable by anyone: /open when open_writable."""
    a, b = ('true', 'false') if open_writable else ('false', 'true')
    return ('{\n'
            '  "rules": {\n'
            f'    "open": {{".read": true, ".write": {a}}},\n'
            f'    "closed": {{".read": true, ".write": {b}}}\n'
            '  }\n'
            '}\n')


# Line 4 (1-based) names a variable the rules language does not have.
BROKEN_DATABASE_RULES = ('{\n'
                         '  "rules": {\n'
                         '    "open": {".read": true, ".write": true},\n'
                         '    "closed": {".read": true, ".write": "no_such_variable == true"}\n'
                         '  }\n'
                         '}\n')
BROKEN_DATABASE_LINE = 4


def storage_rules(open_writable):
    a, b = ('true', 'false') if open_writable else ('false', 'true')
    return ("rules_version = '2';\n"
            "service firebase.storage {\n"
            "  match /b/{bucket}/o {\n"
            "    match /open/{file} {\n"
            f"      allow read: if true;\n"
            f"      allow write: if {a};\n"
            "    }\n"
            "    match /closed/{file} {\n"
            "      allow read: if true;\n"
            f"      allow write: if {b};\n"
            "    }\n"
            "  }\n"
            "}\n")


# Line 6 (1-based) has a comparison without its right-hand side.
BROKEN_STORAGE_RULES = ("rules_version = '2';\n"
                        "service firebase.storage {\n"
                        "  match /b/{bucket}/o {\n"
                        "    match /open/{file} {\n"
                        "      allow read: if true;\n"
                        "      allow write: if request.auth.uid == ;\n"
                        "    }\n"
                        "  }\n"
                        "}\n")
BROKEN_STORAGE_LINE = 6


def project(directory, ports, database_text, storage_text):
    firebase = {'database': {'rules': 'database.rules.json'}, 'storage': {'rules': 'storage.rules'},
                'emulators': {'database': {'port': ports['database']}, 'storage': {'port': ports['storage']}}}
    files = {}
    if database_text is not None:
        files['database.rules.json'] = database_text
    if storage_text is not None:
        files['storage.rules'] = storage_text
    return support.write_project(directory, firebase, support.FIREBASERC, files)


@pytest.fixture(scope='module')
def watched(tmp_path_factory):
    root = tmp_path_factory.mktemp('rules-watch')
    ports = support.free_ports('database', 'storage')
    directory = project(root / 'project', ports, database_rules(open_writable=True), storage_rules(open_writable=True))
    server = support.start(['--data', root / 'data'], cwd=directory, ports=[ports['database'], ports['storage']],
                           logs=root / 'logs')
    server.project = directory
    yield server
    server.stop()


def database_state(server):
    """(write to /open allowed, write to /closed allowed), unauthenticated."""
    def allowed(path):
        response = support.db_put(server.base, f'{path}/probe', 1)
        assert response.status_code == 200 or support.is_denied(response), (path, response.status_code, response.text)
        return response.status_code == 200
    return allowed('open'), allowed('closed')


def storage_state(server):
    def allowed(path):
        response = support.upload(server.base, BUCKET, f'{path}/probe.txt', b'probe')
        assert response.status_code in (200, 403), (path, response.status_code, response.text)
        return response.status_code == 200
    return allowed('open'), allowed('closed')


def check_watching(server, file_name, state, good_text, broken_text, broken_line):
    path = server.project / file_name
    assert state(server) == (True, False), 'the rules file given at start-up is not what is enforced'

    # An edit in place: enforcement flips without a restart.
    path.write_text(good_text(open_writable=False))
    seen = support.poll(lambda: state(server), (False, True))
    assert seen == (False, True), f'the edit of {file_name} was not applied within {WATCH_WITHIN} s (state {seen})'

    # A broken edit: the error is logged with file:line:column, and the last good rules stay.
    before = server.stderr_line_count()
    path.write_text(broken_text)
    # (The error must point at the line of the mistake; the failure message shows what was logged instead.)
    server.wait_for_stderr(rf'{file_name.replace(".", "[.]")}:{broken_line}:\d+', after=before)
    assert state(server) == (False, True), 'a broken rules file changed what is enforced'
    time.sleep(1)  # a reload that wrongly took the broken file has had its time
    assert state(server) == (False, True), 'a broken rules file changed what is enforced'

    # Fixed again (saved as editors do: a new file renamed over it): applied.
    support.replace_atomically(path, good_text(open_writable=True))
    seen = support.poll(lambda: state(server), (True, False))
    assert seen == (True, False), f'the fixed {file_name} was not applied within {WATCH_WITHIN} s (state {seen})'


def test_database_rules_file_edits_apply_without_a_restart(watched):
    check_watching(watched, 'database.rules.json', database_state, database_rules, BROKEN_DATABASE_RULES,
                   BROKEN_DATABASE_LINE)


def test_storage_rules_file_edits_apply_without_a_restart(watched):
    check_watching(watched, 'storage.rules', storage_state, storage_rules, BROKEN_STORAGE_RULES, BROKEN_STORAGE_LINE)


@pytest.mark.parametrize('which, problem', [('database', 'invalid'), ('database', 'missing'),
                                            ('storage', 'invalid'), ('storage', 'missing')])
def test_a_bad_rules_file_at_start_up_stops_hearth(tmp_path, which, problem):
    ports = support.free_ports('database', 'storage')
    database_text, storage_text = database_rules(True), storage_rules(True)
    file_name, line = ('database.rules.json', BROKEN_DATABASE_LINE) if which == 'database' else ('storage.rules', BROKEN_STORAGE_LINE)
    broken = None if problem == 'missing' else (BROKEN_DATABASE_RULES if which == 'database' else BROKEN_STORAGE_RULES)
    if which == 'database':
        database_text = broken
    else:
        storage_text = broken
    directory = project(tmp_path / 'project', ports, database_text, storage_text)

    status, output = support.run_to_exit(['--data', tmp_path / 'data'], cwd=directory)
    assert status != 0, output
    assert file_name in output, f'the message does not name {file_name}:\n{output}'
    if problem == 'invalid':
        assert re.search(rf'{file_name.replace(".", "[.]")}:{line}:\d+', output), \
            f'the message does not point at {file_name}:{line}:<column>:\n{output}'
