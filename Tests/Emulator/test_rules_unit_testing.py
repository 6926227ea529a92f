"""Issue 28: what @firebase/rules-unit-testing does (spec §3.5), over HTTP, against
`hearth serve --emulator`: it loads database rules (`PUT /.settings/rules.json?ns=<projectId>` as
`Bearer owner`, the file's text with its comments) and storage rules (`PUT /internal/setRules`), then
runs authenticated contexts (the SDK's unsigned mock token, iat 0 as it makes them), unauthenticated
contexts and rules-disabled ones (`owner`) against the database and the bucket `<projectId>`; between
tests it clears (`PUT /.json` null as owner, `POST /internal/reset`, `DELETE …/accounts`), which
really empties the namespace, the bucket and the users while the rules stay; rules that do not
compile are refused (400, with diagnostics for storage) and the rules in force stay. The Auth
emulator's config and oobCodes endpoints work; and none of the control endpoints exist (404), nor is
`owner` or an unsigned token accepted, when the server is not in emulator mode.
"""

import pytest
import requests

import emulator_support as support
from emulator_support import TIMEOUT

PROJECT_ID = 'demo-rut'
NS = PROJECT_ID       # rules-unit-testing's database namespace is the project id ...
BUCKET_ID = PROJECT_ID  # ... and so is its default bucket
ADMIN_SECRET = 'emulator-suite-admin-secret-3b9e51'

DATABASE_RULES = """{
  // As a test suite passes them to initializeTestEnvironment({database: {rules}}).
  "rules": {
    "users": {
      "$uid": {
        ".read": "auth != null && auth.uid == $uid",
        ".write": "auth != null && auth.uid == $uid"
      }
    },
    "public": {
      ".read": true,
      ".write": "auth != null"
    }
  }
}
"""

STORAGE_RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /users/{uid}/{allPaths=**} {
      allow read, write: if request.auth != null && request.auth.uid == uid;
    }
    match /public/{allPaths=**} {
      allow read: if true;
      allow write: if request.auth != null;
    }
  }
}
"""

# Line 5 (1-based): a condition without its right-hand side.
BROKEN_STORAGE_RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /users/{uid}/{allPaths=**} {
      allow read, write: if request.auth.uid == ;
    }
  }
}
"""
BROKEN_STORAGE_LINE = 5

BROKEN_DATABASE_RULES = '{"rules": {".read": "auth != null &&", ".write": true}}'

ALICE = support.unsigned_token('alice', project=PROJECT_ID, iat=0, email='alice@example.com')  # exp 3600: 1970
OWNER_STORAGE = {'Authorization': 'Firebase owner'}  # withSecurityRulesDisabled's storage credential


def load_database_rules(base, text):
    """As initializeTestEnvironment: the rules string through fetch (text/plain), as `Bearer owner`."""
    return requests.put(f'{base}/.settings/rules.json', params={'ns': NS}, data=text.encode(), timeout=TIMEOUT,
                        headers={'Authorization': 'Bearer owner', 'Content-Type': 'text/plain;charset=UTF-8'})


def load_storage_rules(base, text):
    return requests.put(f'{base}/internal/setRules', json={'rules': {'files': [{'name': 'storage.rules', 'content': text}]}},
                        timeout=TIMEOUT)


def clear(base):
    """clearDatabase (a null at the root as owner), a full storage reset and deleting every user."""
    return (support.db_put(base, '', None, NS, owner=True),
            requests.post(f'{base}/internal/reset', timeout=TIMEOUT),
            requests.delete(f'{base}/emulator/v1/projects/{PROJECT_ID}/accounts', timeout=TIMEOUT))


@pytest.fixture(scope='module')
def environment(tmp_path_factory):
    """An emulator-mode server without firebase.json, the rules loaded as rules-unit-testing loads them."""
    root = tmp_path_factory.mktemp('rules-unit-testing')
    port = support.hearth_process.free_port()
    server = support.start(['--host', '127.0.0.1', '--port', port, '--project', PROJECT_ID, '--data', root / 'data'],
                           cwd=root, ports=[port], logs=root / 'logs')
    server.database_rules_response = load_database_rules(server.base, DATABASE_RULES)
    server.storage_rules_response = load_storage_rules(server.base, STORAGE_RULES)
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def cleared(request):
    """Clears before each test, as a rules-unit-testing suite's beforeEach does."""
    if 'environment' in request.fixturenames:
        responses = clear(request.getfixturevalue('environment').base)
        assert [response.status_code for response in responses] == [200, 200, 200], [r.text for r in responses]


def test_rules_load_as_rules_unit_testing_sends_them(environment):
    assert environment.database_rules_response.status_code == 200, environment.database_rules_response.text
    response = environment.storage_rules_response
    assert (response.status_code, response.json().get('message')) == (200, 'Rules updated successfully'), response.text


def test_database_contexts(environment):
    base = environment.base
    write = support.db_put(base, 'users/alice', {'name': 'Alice'}, NS, token=ALICE)
    assert write.status_code == 200, write.text
    read = support.db_get(base, 'users/alice', NS, token=ALICE)
    assert (read.status_code, read.json()) == (200, {'name': 'Alice'}), read.text
    assert support.is_denied(support.db_put(base, 'users/bob', {'name': 'x'}, NS, token=ALICE))
    assert support.is_denied(support.db_get(base, 'users/bob', NS, token=ALICE))
    assert support.db_put(base, 'public/note', 'by alice', NS, token=ALICE).status_code == 200

    # Unauthenticated context.
    assert support.is_denied(support.db_get(base, 'users/alice', NS))
    assert support.is_denied(support.db_put(base, 'public/note', 'anonymous', NS))
    public = support.db_get(base, 'public/note', NS)
    assert (public.status_code, public.json()) == (200, 'by alice'), public.text

    # withSecurityRulesDisabled.
    assert support.db_put(base, 'users/bob', {'name': 'Bob'}, NS, owner=True).status_code == 200
    assert support.db_get(base, 'users/bob', NS, owner=True).json() == {'name': 'Bob'}


def test_storage_contexts(environment):
    base = environment.base
    _, token = support.uploaded(base, BUCKET_ID, 'users/alice/a.txt', b'alice', token=ALICE)
    assert support.object_metadata(base, BUCKET_ID, 'users/alice/a.txt', token=ALICE).status_code == 200
    media = support.download(base, BUCKET_ID, 'users/alice/a.txt', token=ALICE)
    assert (media.status_code, media.content) == (200, b'alice'), media.text[:200]
    assert support.storage_denied(support.upload(base, BUCKET_ID, 'users/bob/a.txt', b'x', token=ALICE))
    support.uploaded(base, BUCKET_ID, 'public/p.txt', b'public', token=ALICE)

    # Unauthenticated context.
    assert support.storage_denied(support.upload(base, BUCKET_ID, 'users/alice/b.txt', b'x'))
    assert support.storage_denied(support.upload(base, BUCKET_ID, 'public/q.txt', b'x'))
    assert support.storage_denied(support.object_metadata(base, BUCKET_ID, 'users/alice/a.txt'))
    assert support.object_metadata(base, BUCKET_ID, 'public/p.txt').status_code == 200
    # A download URL's token still opens the file.
    assert support.download(base, BUCKET_ID, 'users/alice/a.txt', download_token=token).content == b'alice'

    # withSecurityRulesDisabled: `Firebase owner`.
    support.uploaded(base, BUCKET_ID, 'users/bob/by-owner.txt', b'owner', headers=OWNER_STORAGE)
    assert support.object_metadata(base, BUCKET_ID, 'users/bob/by-owner.txt', headers=OWNER_STORAGE).status_code == 200


def test_clearing_empties_the_namespace_the_bucket_and_the_users_and_keeps_the_rules(environment):
    base = environment.base
    assert support.db_put(base, 'users/alice', {'name': 'Alice'}, NS, token=ALICE).status_code == 200
    assert support.db_put(base, 'public/note', 'kept?', NS, token=ALICE).status_code == 200
    _, token = support.uploaded(base, BUCKET_ID, 'users/alice/a.txt', b'alice', token=ALICE)
    support.uploaded(base, BUCKET_ID, 'public/deep/folder/file.txt', b'deep', token=ALICE)  # clearStorage() would miss it
    support.sign_up(base, 'zoe@example.com', 'zoe-password-1')
    assert support.db_get(base, '', NS, owner=True).json() is not None

    database, storage, accounts = clear(base)
    assert database.status_code == 200, database.text
    assert (storage.status_code, storage.text.strip()) == (200, 'OK'), storage.text
    assert (accounts.status_code, accounts.json()) == (200, {}), accounts.text

    assert support.db_get(base, '', NS, owner=True).json() is None, 'the namespace was not emptied'
    for name in ('users/alice/a.txt', 'public/deep/folder/file.txt'):
        gone = support.object_metadata(base, BUCKET_ID, name, headers=OWNER_STORAGE)
        assert gone.status_code == 404, (name, gone.status_code, gone.text)
    stale = support.download(base, BUCKET_ID, 'users/alice/a.txt', download_token=token)
    assert stale.status_code in (403, 404) and stale.content != b'alice', (stale.status_code, stale.text[:200])
    listing = requests.get(f'{base}/v0/b/{BUCKET_ID}/o', params={'prefix': '', 'delimiter': '/'}, headers=OWNER_STORAGE,
                           timeout=TIMEOUT)
    if listing.status_code == 200:
        assert not listing.json().get('items') and not listing.json().get('prefixes'), listing.text
    else:
        assert listing.status_code == 404, (listing.status_code, listing.text)
    gone = support.sign_in(base, 'zoe@example.com', 'zoe-password-1')
    assert gone.status_code == 400 and support.error_message(gone).startswith(support.NO_SUCH_USER), gone.text
    support.sign_up(base, 'zoe@example.com', 'zoe-password-2')  # the address is free again

    # The rules stay.
    assert support.is_denied(support.db_put(base, 'users/alice', {'name': 'x'}, NS))
    assert support.storage_denied(support.upload(base, BUCKET_ID, 'users/alice/again.txt', b'x'))
    support.uploaded(base, BUCKET_ID, 'users/alice/again.txt', b'alice again', token=ALICE)


def test_invalid_storage_rules_are_refused_with_diagnostics_and_the_old_rules_stay(environment):
    base = environment.base
    missing = requests.put(f'{base}/internal/setRules', json={'rules': {}}, timeout=TIMEOUT)
    assert (missing.status_code, missing.json().get('message')) == (400, "Request body must include 'rules.files' array"), missing.text

    response = load_storage_rules(base, BROKEN_STORAGE_RULES)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body.get('message') == 'There was an error updating rules, see logs for more details', body
    issues = body.get('issues')
    assert isinstance(issues, list) and issues, body
    assert any(issue.get('line') == BROKEN_STORAGE_LINE and isinstance(issue.get('column'), int) and issue.get('message')
               for issue in issues), issues

    assert support.storage_denied(support.upload(base, BUCKET_ID, 'users/alice/x.txt', b'x'))
    assert support.storage_denied(support.upload(base, BUCKET_ID, 'users/bob/x.txt', b'x', token=ALICE))
    support.uploaded(base, BUCKET_ID, 'users/alice/x.txt', b'still', token=ALICE)
    support.uploaded(base, BUCKET_ID, 'public/x.txt', b'still public', token=ALICE)
    assert support.object_metadata(base, BUCKET_ID, 'public/x.txt').status_code == 200


def test_invalid_database_rules_are_refused_and_the_old_rules_stay(environment):
    base = environment.base
    response = load_database_rules(base, BROKEN_DATABASE_RULES)
    assert response.status_code == 400, (response.status_code, response.text)
    assert support.db_put(base, 'users/alice', {'name': 'Alice'}, NS, token=ALICE).status_code == 200
    assert support.is_denied(support.db_put(base, 'users/bob', {'name': 'x'}, NS, token=ALICE))
    assert support.is_denied(support.db_put(base, 'public/x', 1, NS))


def test_a_namespace_without_rules_is_open(environment):
    # Rules loaded for the namespace <projectId> do not apply to <projectId>-default-rtdb (spec §3.3).
    other = f'{PROJECT_ID}-default-rtdb'
    assert support.db_put(environment.base, 'users/bob', {'name': 'anyone'}, other).status_code == 200
    assert support.db_get(environment.base, 'users/bob', other).json() == {'name': 'anyone'}


def test_the_auth_emulator_config_and_oob_codes(environment):
    base = environment.base
    config_url = f'{base}/emulator/v1/projects/{PROJECT_ID}/config'
    config = requests.get(config_url, timeout=TIMEOUT)
    assert config.status_code == 200, config.text
    assert config.json() == {'signIn': {'allowDuplicateEmails': False},
                             'emailPrivacyConfig': {'enableImprovedEmailPrivacy': False}}, config.text
    support.sign_up(base, 'yan@example.com', 'yan-password-1')
    try:
        enabled = requests.patch(config_url, json={'emailPrivacyConfig': {'enableImprovedEmailPrivacy': True}}, timeout=TIMEOUT)
        assert enabled.status_code == 200 and enabled.json()['emailPrivacyConfig']['enableImprovedEmailPrivacy'] is True, enabled.text
        wrong = support.sign_in(base, 'yan@example.com', 'not-it')
        assert support.error_message(wrong).startswith('INVALID_LOGIN_CREDENTIALS'), wrong.text
    finally:
        disabled = requests.patch(config_url, json={'emailPrivacyConfig': {'enableImprovedEmailPrivacy': False}}, timeout=TIMEOUT)
    assert disabled.status_code == 200, disabled.text
    wrong = support.sign_in(base, 'yan@example.com', 'not-it')
    assert support.error_message(wrong).startswith('INVALID_PASSWORD'), wrong.text

    sent = support.identity(base, 'accounts:sendOobCode', {'requestType': 'PASSWORD_RESET', 'email': 'yan@example.com'})
    assert sent.status_code == 200, sent.text
    codes = requests.get(f'{base}/emulator/v1/projects/{PROJECT_ID}/oobCodes', timeout=TIMEOUT)
    assert codes.status_code == 200, codes.text
    assert any(code.get('email') == 'yan@example.com' and code.get('requestType') == 'PASSWORD_RESET' and code.get('oobCode')
               for code in codes.json().get('oobCodes', [])), codes.text


def test_control_endpoints_are_absent_outside_emulator_mode(tmp_path):
    port = support.hearth_process.free_port()
    with support.running(['--host', '127.0.0.1', '--port', port, '--project', PROJECT_ID, '--data', tmp_path / 'data'],
                         cwd=tmp_path, ports=[port], logs=tmp_path / 'logs', emulator=False,
                         admin_secret=ADMIN_SECRET) as server:
        base = server.base
        absent = [
            ('PUT', '/internal/setRules', {'json': {'rules': {'files': [{'name': 'storage.rules', 'content': STORAGE_RULES}]}}}),
            ('POST', '/internal/reset', {}),
            ('GET', f'/emulator/v1/projects/{PROJECT_ID}/config', {}),
            ('PATCH', f'/emulator/v1/projects/{PROJECT_ID}/config', {'json': {'emailPrivacyConfig': {'enableImprovedEmailPrivacy': True}}}),
            ('DELETE', f'/emulator/v1/projects/{PROJECT_ID}/accounts', {}),
            ('GET', f'/emulator/v1/projects/{PROJECT_ID}/oobCodes', {}),
        ]
        for method, path, extra in absent:
            response = requests.request(method, base + path, timeout=TIMEOUT, **extra)
            assert response.status_code == 404, (method, path, response.status_code, response.text[:300])
        # `owner` is nobody here, and unsigned tokens are refused.
        rules = load_database_rules(base, DATABASE_RULES)
        assert rules.status_code in (401, 403), (rules.status_code, rules.text)
        wipe = support.db_put(base, '', None, NS, owner=True)
        assert wipe.status_code in (401, 403), (wipe.status_code, wipe.text)
        unsigned = support.db_get(base, 'users/alice', NS, token=ALICE)
        assert unsigned.status_code in (401, 403), (unsigned.status_code, unsigned.text)
        # While the admin secret still works (the server is up and serving this namespace).
        admin = requests.get(f'{base}/.json', params={'ns': NS}, headers={'Authorization': f'Bearer {ADMIN_SECRET}'},
                             timeout=TIMEOUT)
        assert admin.status_code == 200, admin.text


def test_the_storage_control_endpoints_answer_browsers(environment):
    """rules-unit-testing may run in a browser (Karma): the emulator answers its preflights and CORS."""
    origin = {'Origin': 'http://127.0.0.1:9876'}
    for path, method in (('/internal/setRules', 'PUT'), ('/internal/reset', 'POST')):
        preflight = requests.options(f'{environment.base}{path}', timeout=TIMEOUT,
                                     headers={**origin, 'Access-Control-Request-Method': method,
                                              'Access-Control-Request-Headers': 'content-type'})
        assert preflight.status_code == 204, (path, preflight.status_code, preflight.text)
        assert preflight.headers.get('Access-Control-Allow-Origin') == origin['Origin']
        assert method in preflight.headers.get('Access-Control-Allow-Methods', '')
    loaded = requests.put(f'{environment.base}/internal/setRules', headers=origin, timeout=TIMEOUT,
                          json={'rules': {'files': [{'name': 'storage.rules', 'content': STORAGE_RULES}]}})
    assert loaded.status_code == 200 and loaded.headers.get('Access-Control-Allow-Origin') == origin['Origin']
    reset = requests.post(f'{environment.base}/internal/reset', headers=origin, timeout=TIMEOUT)
    assert reset.status_code == 200 and reset.headers.get('Access-Control-Allow-Origin') == origin['Origin']
