"""Issue 27: logs a collector can read. `--log-format json` writes one JSON object a line on stderr
(time, level, label, message and every metadata field); `--access-log` adds one `hearth.access` line
per HTTP request (method, path, query names, status, duration_ms, bytes, client) that never holds a
token, secret, password or value — whichever way a client sent it.
"""

import json
import re
import uuid

import requests

import serving_support as support
from serving_support import ADMIN_SECRET, TIMEOUT, V1

RFC3339_UTC_MILLISECONDS = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|\+00:00)$')


def test_json_log_and_access_log_hold_no_credentials_or_values():
    run = uuid.uuid4().hex[:8]
    value = f'value-canary-{run}'
    wire_value = f'wire-value-canary-{run}'
    query_value = f'query-canary-{run}'
    wrong_secret = f'wrong-secret-canary-{run}'
    password = f'password-canary-{run}'
    api_key = f'api-key-canary-{run}'

    with support.running_server('--log-format', 'json', '--access-log', name='logs') as server:
        def url(path):
            return server.url(path)

        # The admin secret in the query and in a header; a value in a body; a query value.
        put = requests.put(url('/logged/value.json'), params={'auth': ADMIN_SECRET}, data=json.dumps(value), timeout=TIMEOUT)
        assert put.status_code == 200, put.text
        get = requests.get(url('/logged/value.json'), params={'print': 'pretty'}, timeout=TIMEOUT,
                           headers={**support.admin_headers(), 'Accept-Encoding': 'identity'})
        assert get.status_code == 200 and get.json() == value, get.text
        queried = requests.get(url('/logged.json'), params={'orderBy': '"$key"', 'equalTo': json.dumps(query_value),
                                                            'auth': ADMIN_SECRET}, timeout=TIMEOUT)
        assert queried.status_code == 200, queried.text
        wrong = requests.get(url('/logged.json'), params={'auth': wrong_secret}, timeout=TIMEOUT)
        assert wrong.status_code == 401, wrong.text

        # An account: its password in sign-up and sign-in bodies, its ID token in the query and a
        # header, its refresh token in a body; an API key in the query.
        account = support.sign_up(server, f'logs-{run}@example.com', password)
        signed_in = requests.post(url(V1 + 'accounts:signInWithPassword'), params={'key': api_key}, timeout=TIMEOUT,
                                  json={'email': account['email'], 'password': password, 'returnSecureToken': True})
        assert signed_in.status_code == 200, signed_in.text
        tokens = [account['token'], signed_in.json()['idToken'], account['refresh'], signed_in.json().get('refreshToken')]
        for params, headers in (({'auth': account['token']}, {}), ({}, {'Authorization': f'Bearer {account["token"]}'})):
            denied = requests.get(url('/logged.json'), params=params, headers=headers, timeout=TIMEOUT)
            assert denied.status_code == 401, denied.text  # the database is locked; the token is still read
        refreshed = requests.post(url('/securetoken.googleapis.com/v1/token'), params={'key': api_key}, timeout=TIMEOUT,
                                  data={'grant_type': 'refresh_token', 'refresh_token': account['refresh']})
        assert refreshed.status_code == 200, refreshed.text
        tokens += [refreshed.json().get('id_token'), refreshed.json().get('refresh_token')]

        # The realtime protocol: the secret and a value inside WebSocket frames.
        client = support.WireClient(server)
        try:
            assert client.request('gauth', {'cred': ADMIN_SECRET})['s'] == 'ok'
            assert client.request('p', {'p': '/logged/wire', 'd': wire_value})['s'] == 'ok'
        finally:
            client.close()

        support.hearth_process.stop(server.process)  # everything logged is flushed
        assert server.process.returncode == 0, server.log_tail()
        stderr, stdout = server.stderr(), server.stdout()

    # Every stderr line is a JSON object with the time, level, label and message.
    entries = []
    for number, line in enumerate(stderr.splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            raise AssertionError(f'stderr line {number} is not JSON: {line!r}') from None
        assert isinstance(entry, dict), line
        for key in ('time', 'level', 'label', 'message'):
            assert key in entry, f'stderr line {number} has no "{key}": {line}'
        assert RFC3339_UTC_MILLISECONDS.match(entry['time']), entry['time']
        entries.append(entry)
    assert any(entry['level'] == 'info' for entry in entries), stderr[:2000]

    # One access line per request, with its fields.
    access = [entry for entry in entries if entry.get('label') == 'hearth.access']
    assert access, f'no hearth.access line in:\n{stderr[:3000]}'
    for entry in access:
        assert entry['message'] == 'request', entry
        for key in ('method', 'path', 'status', 'duration_ms', 'bytes', 'client'):
            assert key in entry, f'access line without "{key}": {entry}'
        assert '?' not in str(entry['path']), entry
        assert float(entry['duration_ms']) >= 0, entry
        assert int(entry['bytes']) >= 0, entry
        assert str(entry['client']).startswith('127.0.0.1'), entry

    def find(method, path, status):
        found = [e for e in access if e['method'] == method and e['path'] == path and str(e['status']) == str(status)]
        assert found, f'no access line for {method} {path} {status} among:\n' + '\n'.join(map(json.dumps, access))
        return found

    written = find('PUT', '/logged/value.json', 200)[0]
    assert 'auth' in str(written.get('query', '')), written
    read = find('GET', '/logged/value.json', 200)[0]
    assert 'print=pretty' in str(read.get('query', '')), read
    assert int(read['bytes']) == len(get.content), (read, len(get.content))
    find('GET', '/logged.json', 401)
    find('POST', V1 + 'accounts:signInWithPassword', 200)
    find('POST', '/securetoken.googleapis.com/v1/token', 200)

    # No secret, token, password or value anywhere in the output, in any form.
    everything = stderr + stdout
    secrets = {'admin secret': ADMIN_SECRET, 'wrong secret': wrong_secret, 'password': password, 'value': value,
               'value sent on the WebSocket': wire_value, 'query value': query_value, 'API key': api_key}
    for number, token in enumerate(t for t in tokens if t):
        secrets[f'token {number}'] = token
        secrets[f'token {number}, last part'] = token.rsplit('.', 1)[-1]
    for what, secret in secrets.items():
        lines = [line for line in everything.splitlines() if secret in line]
        assert not lines, f'the {what} is logged:\n' + '\n'.join(lines[:5])


def test_no_access_log_unless_asked_for(plain_server):
    assert requests.get(plain_server.url('/healthz'), timeout=TIMEOUT).status_code == 200
    assert 'hearth.access' not in plain_server.stderr()


def test_the_access_log_has_websocket_connections_too():
    """A WebSocket starts as an HTTP request (the upgrade): it gets its access line like any other."""
    with support.running_server('--log-format', 'json', '--access-log', name='ws-logs') as server:
        client = support.WireClient(server)
        try:
            assert client.request('gauth', {'cred': ADMIN_SECRET})['s'] == 'ok'
        finally:
            client.close()
        support.hearth_process.stop(server.process)
        lines = [json.loads(line) for line in server.stderr().splitlines() if line.strip()]
    access = [entry for entry in lines if entry.get('label') == 'hearth.access']
    upgrades = [entry for entry in access if entry.get('path') == '/.ws']
    assert upgrades, 'no access line for GET /.ws among:\n' + '\n'.join(map(json.dumps, access))
    assert upgrades[0]['method'] == 'GET' and str(upgrades[0]['status']) in ('101', '200'), upgrades[0]
    assert 'v=5' in str(upgrades[0].get('query', '')), upgrades[0]
    assert ADMIN_SECRET not in json.dumps(lines)
