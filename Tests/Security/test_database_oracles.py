"""Issue 25, findings 1 and 2: a precondition (REST `if-match`, a WebSocket transaction's hash) must
never be compared, or answered with the current value, before the rules have decided the request.
"""

import json
import uuid

import requests
import websocket

import security_support as support
from security_support import NAMESPACE, TIMEOUT

PERMISSION_DENIED = {'error': 'Permission denied'}


def seed(deployment):
    """Fresh secrets under A's node and A's dropbox; returns them."""
    secret = f'alice-secret-{uuid.uuid4().hex}'
    note = f'alice-note-{uuid.uuid4().hex}'
    support.admin_put(deployment.server, f'users/{deployment.a["uid"]}', {'secret': secret, 'profile': {'city': 'Lisbon'}})
    support.admin_put(deployment.server, f'dropbox/{deployment.a["uid"]}', {'note': note})
    return secret, note


def rest(server, method, path, token=None, if_match=None, value=None):
    headers = {'Content-Type': 'application/json'}
    if token:
        headers['Authorization'] = f'Bearer {token}'
    if if_match is not None:
        headers['if-match'] = if_match
    return requests.request(method, server.url(f'/{path}.json' if path else '/.json'), params={'ns': NAMESPACE},
                            headers=headers, data=None if value is None else json.dumps(value), timeout=TIMEOUT)


def test_unauthenticated_conditional_put_on_the_root_gets_permission_denied_not_the_database(deployment):
    secret, note = seed(deployment)
    response = rest(deployment.server, 'PUT', '', if_match='x', value={'taken': True})
    assert response.status_code == 401, (response.status_code, response.text[:500])
    assert response.json() == PERMISSION_DENIED
    assert 'ETag' not in response.headers
    for private in (secret, note, deployment.a['uid']):
        assert private not in response.text
    # Nothing was written either.
    check = requests.get(deployment.server.url(f'/users/{deployment.a["uid"]}/secret.json'), params={'ns': NAMESPACE},
                         headers=support.admin_headers(), timeout=TIMEOUT)
    assert check.json() == secret


def test_another_users_conditional_put_and_delete_get_permission_denied_without_the_data(deployment):
    secret, _ = seed(deployment)
    node = f'users/{deployment.a["uid"]}'
    for method, value in (('PUT', {'secret': 'overwritten'}), ('DELETE', None)):
        for path in (node, f'{node}/secret'):
            response = rest(deployment.server, method, path, token=deployment.b['token'], if_match='"wrong-etag"', value=value)
            assert response.status_code == 401, (method, path, response.status_code, response.text[:500])
            assert response.json() == PERMISSION_DENIED, (method, path)
            assert 'ETag' not in response.headers, (method, path)
            assert secret not in response.text and 'Lisbon' not in response.text, (method, path)


def test_the_owner_gets_412_with_the_current_value_and_its_etag(deployment):
    """firebase-admin's transaction relies on this: a reader's mismatch answers the value and ETag."""
    secret, _ = seed(deployment)
    path = f'users/{deployment.a["uid"]}/secret'
    response = rest(deployment.server, 'PUT', path, token=deployment.a['token'], if_match='"wrong-etag"', value='mine')
    assert response.status_code == 412, response.text
    assert response.json() == secret
    etag = response.headers.get('ETag')
    assert etag, response.headers
    # The ETag is the right one: a write conditioned on it succeeds.
    retried = rest(deployment.server, 'PUT', path, token=deployment.a['token'], if_match=etag, value='mine')
    assert retried.status_code == 200, retried.text
    assert retried.json() == 'mine'


def test_a_node_the_writer_may_not_read_never_answers_its_value_or_etag(deployment):
    """B may write A's dropbox but not read it: a wrong if-match must not hand B the note (nor its
    ETag, a hash B could test guesses against). The rules' refusal or a 412 without the value."""
    _, note = seed(deployment)
    path = f'dropbox/{deployment.a["uid"]}'
    for method, value in (('PUT', {'note': 'from bob'}), ('DELETE', None)):
        response = rest(deployment.server, method, path, token=deployment.b['token'], if_match='"wrong-etag"', value=value)
        assert response.status_code in (401, 412), (method, response.status_code, response.text[:500])
        body = response.json()
        assert isinstance(body, dict) and set(body) == {'error'}, (method, body)
        assert note not in response.text, method
        assert 'ETag' not in response.headers, (method, response.headers)
    # The note is still there, unchanged.
    check = requests.get(deployment.server.url(f'/{path}/note.json'), params={'ns': NAMESPACE},
                         headers=support.admin_headers(), timeout=TIMEOUT)
    assert check.json() == note


# ───────────────────────────── the WebSocket transaction hash ─────────────────────────────

class WireClient:
    """A Firebase wire-protocol v5 client over a real WebSocket (docs: wire-protocol.md)."""

    def __init__(self, server):
        self.ws = websocket.create_connection(f'ws://127.0.0.1:{server.port}/.ws?v=5&ns={NAMESPACE}', timeout=TIMEOUT)
        self.next_request = 1
        handshake = json.loads(self.ws.recv())
        assert handshake['t'] == 'c' and handshake['d']['t'] == 'h', handshake

    def request(self, action, body):
        number = self.next_request
        self.next_request += 1
        self.ws.send(json.dumps({'t': 'd', 'd': {'r': number, 'a': action, 'b': body}}))
        while True:  # pushes may come first; the answer carries our request number
            message = json.loads(self.ws.recv())
            if message.get('t') == 'd' and message['d'].get('r') == number:
                return message['d']['b']

    def close(self):
        self.ws.close()


def test_websocket_transaction_hash_is_no_oracle_for_a_user_without_access(deployment):
    secret, _ = seed(deployment)
    path = f'/users/{deployment.a["uid"]}/secret'
    right, wrong = support.firebase_hash(secret), support.firebase_hash('a guess')

    # The owner: the protocol works and the hash is Firebase's (right: ok, wrong: datastale).
    owner = WireClient(deployment.server)
    try:
        assert owner.request('auth', {'cred': deployment.a['token']})['s'] == 'ok'
        assert owner.request('p', {'p': path, 'd': secret, 'h': wrong})['s'] == 'datastale'
        assert owner.request('p', {'p': path, 'd': secret, 'h': right})['s'] == 'ok'
    finally:
        owner.close()

    # B may neither read nor write there: a right and a wrong guess answer alike.
    attacker = WireClient(deployment.server)
    try:
        assert attacker.request('auth', {'cred': deployment.b['token']})['s'] == 'ok'
        with_right = attacker.request('p', {'p': path, 'd': 'guess', 'h': right})
        with_wrong = attacker.request('p', {'p': path, 'd': 'guess', 'h': wrong})
        without = attacker.request('p', {'p': path, 'd': 'guess'})
    finally:
        attacker.close()
    assert with_right['s'] == 'permission_denied', with_right
    assert with_wrong['s'] == 'permission_denied', with_wrong
    assert with_right == with_wrong == without
    assert secret not in json.dumps([with_right, with_wrong])
