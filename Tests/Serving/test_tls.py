"""Issue 27: `hearth serve --tls-cert --tls-key` serves every transport over TLS on one port —
REST, event streams, the realtime WebSocket (wss), long polling, the Authentication and Storage APIs
and the console — with ECDSA and RSA certificates given as a full chain, TLS 1.2 at least, and
nothing but a 400 for plain HTTP sent to the TLS port.
"""

import json
import re
import socket
import ssl
import uuid

import pytest
import requests

import serving_support as support
from serving_support import ADMIN_SECRET, TIMEOUT


# ───────────────────────────── REST over HTTPS ─────────────────────────────

@pytest.mark.parametrize('kind', ['ecdsa', 'rsa'])
def test_rest_write_and_read_over_https(servers, certificates, kind):
    server = servers[kind]
    value = {'kind': kind, 'note': f'over TLS {uuid.uuid4().hex[:8]}'}
    write = requests.put(server.url(f'/tls/{kind}.json'), data=json.dumps(value), headers=support.admin_headers(),
                         timeout=TIMEOUT, verify=str(server.ca))
    assert write.status_code == 200, write.text
    read = requests.get(server.url(f'/tls/{kind}.json'), params={'auth': ADMIN_SECRET}, timeout=TIMEOUT,
                        verify=str(server.ca))
    assert read.status_code == 200, read.text
    assert read.json() == value

    # The certificate served is the configured leaf, of this key type; the client trusts only the
    # root, so the intermediate came from the full-chain file.
    with support.tls_connection(server.port, support.client_context(server.ca)) as tls:
        assert support.fingerprint(tls.getpeercert(binary_form=True)) == certificates[kind].server.fingerprint
        cipher = tls.cipher()[0]
    if tls.version() == 'TLSv1.2':  # TLS 1.3 suites do not name the key type
        assert ('ECDSA' if kind == 'ecdsa' else 'RSA') in cipher, cipher

    banner = server.stdout()
    assert f'Hearth listening on https://127.0.0.1:{server.port}' in banner, banner


def test_tls_1_1_is_refused_and_tls_1_2_accepted(tls_server):
    # A client offering TLS 1.0 and 1.1 only (and able to: see legacy_context) is refused by the server.
    with pytest.raises((ssl.SSLError, ConnectionError)) as refused:
        with support.tls_connection(tls_server.port, support.legacy_context(tls_server.ca)) as tls:
            pytest.fail(f'the server accepted {tls.version()}')
    assert not isinstance(refused.value, ssl.SSLCertVerificationError), refused.value
    assert getattr(refused.value, 'reason', None) != 'NO_PROTOCOLS_AVAILABLE', \
        f'the client could not offer TLS 1.1 on this machine: {refused.value}'

    # TLS 1.2 is accepted; ALPN picks http/1.1 when a client offers h2 first.
    context = support.client_context(tls_server.ca, maximum=ssl.TLSVersion.TLSv1_2, alpn=['h2', 'http/1.1'])
    with support.tls_connection(tls_server.port, context) as tls:
        assert tls.version() == 'TLSv1.2'
        assert tls.selected_alpn_protocol() == 'http/1.1'
    status, _, body = support.https_request(tls_server, 'GET', '/healthz', context=support.client_context(
        tls_server.ca, maximum=ssl.TLSVersion.TLSv1_2))
    assert (status, body.strip()) == (200, b'ok')


def test_a_client_that_does_not_trust_the_ca_is_refused(tls_server):
    with pytest.raises(ssl.SSLCertVerificationError):
        with support.tls_connection(tls_server.port, support.client_context(None)):
            pass
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(tls_server.url('/healthz'), timeout=TIMEOUT)  # the system's roots


# ───────────────────────────── event streams and the WebSocket ─────────────────────────────

def test_event_stream_over_https(tls_server):
    path = f'sse/{uuid.uuid4().hex[:8]}'
    marker = {'written': uuid.uuid4().hex}
    stream = requests.get(tls_server.url(f'/{path}.json'), headers={'Accept': 'text/event-stream', **support.admin_headers()},
                          stream=True, timeout=(TIMEOUT, TIMEOUT), verify=str(tls_server.ca))
    try:
        assert stream.status_code == 200, stream.text
        assert stream.headers.get('Content-Type', '').startswith('text/event-stream')
        events = support.sse_events(stream)
        assert next(events) == ('put', {'path': '/', 'data': None})
        support.admin_put(tls_server, path, marker)
        for event, data in events:
            if event == 'keep-alive':
                continue
            assert (event, data) == ('put', {'path': '/', 'data': marker})
            break
    finally:
        stream.close()


def test_websocket_over_tls(tls_server):
    path = f'wss/{uuid.uuid4().hex[:8]}'
    support.admin_put(tls_server, path, 'over wss')
    client = support.WireClient(tls_server)
    try:
        assert '"t":"h"' in client.handshake_text.replace(' ', ''), client.handshake_text
        assert client.request('gauth', {'cred': ADMIN_SECRET})['s'] == 'ok'
        assert client.request('g', {'p': f'/{path}', 'q': {}}) == {'s': 'ok', 'd': 'over wss'}
    finally:
        client.close()


def test_the_other_surfaces_over_https(tls_server):
    """Long polling, the Authentication and Storage APIs, the console and the browser client on the
    same TLS port."""
    verify = str(tls_server.ca)
    poll = requests.get(tls_server.url('/.lp'), params={'start': 't', 'ser': '4242', 'cb': '1', 'v': '5', 'ns': 'default'},
                        timeout=TIMEOUT, verify=verify)
    assert poll.status_code == 200, poll.text
    assert '"t":"h"' in poll.text.replace(' ', ''), poll.text[:300]  # the handshake, as on the WebSocket
    account = support.sign_up(tls_server, f'tls-{uuid.uuid4().hex[:8]}@example.com', 'tls-password-1')
    assert account['token'].count('.') == 2
    files = requests.get(tls_server.url(f'/v0/b/{support.PROJECT}.appspot.com/o'), headers=support.admin_headers(),
                         timeout=TIMEOUT, verify=verify)
    assert files.status_code == 200 and 'items' in files.json(), files.text
    for page in ('/console/', '/hearth.js'):
        response = requests.get(tls_server.url(page), timeout=TIMEOUT, verify=verify)
        assert response.status_code == 200, (page, response.status_code)


# ───────────────────────────── plain HTTP on the TLS port ─────────────────────────────

def test_plain_http_on_the_tls_port_gets_400_and_no_data(tls_server):
    secret_value = f'plain-secret-{uuid.uuid4().hex}'
    support.admin_put(tls_server, 'plain/secret', secret_value)
    request = (f'GET /plain/secret.json?auth={ADMIN_SECRET} HTTP/1.1\r\nHost: 127.0.0.1:{tls_server.port}\r\n'
               f'Authorization: Bearer {ADMIN_SECRET}\r\nAccept: */*\r\n\r\n').encode()
    with socket.create_connection(('127.0.0.1', tls_server.port), timeout=TIMEOUT) as sock:
        sock.sendall(request)
        received, closed = support.read_until_closed(sock, within=10)
    text = received.decode('utf-8', 'replace')
    assert re.match(r'HTTP/1\.[01] 400 ', text), text[:300]
    assert 'https' in text.split('\r\n\r\n', 1)[-1].lower(), text[:500]
    assert secret_value not in text, text
    assert closed, 'the server kept the plain-HTTP connection open'
    # The TLS port still serves TLS clients afterwards.
    assert support.admin_get(tls_server, 'plain/secret') == secret_value
