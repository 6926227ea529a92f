"""Issue 27: the certificate and key files. `kill -HUP` re-reads them: new connections get the
renewed certificate while an open WebSocket keeps working; a broken file keeps the old certificate
and logs a warning naming the file. At start-up a missing, broken or mismatched file stops the server
with an error naming it, and one of the two options alone is an error.

The files are replaced as ACME clients do (a new file renamed over the old one), then the server is
sent SIGHUP, as `systemctl reload hearth` does (docs/deploy.md).
"""

import time
import uuid

import pytest

import serving_support as support
from serving_support import ADMIN_SECRET

RELOADED = 'Reloaded the TLS certificate'
GARBAGE_PEM = '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n'
GARBAGE_KEY = '-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n'


def wait_for_fingerprint(server, expected, within=15):
    deadline = time.monotonic() + within
    while True:
        served = support.served_fingerprint(server.port, server.ca)
        if served == expected or time.monotonic() > deadline:
            return served
        time.sleep(0.1)


def replace_text(path, text):
    partial = path.with_name(path.name + '.new')
    partial.write_text(text)
    partial.replace(path)


def test_sighup_serves_the_renewed_certificate_and_an_open_websocket_keeps_working(certificates):
    ecdsa = certificates['ecdsa']
    with support.running_server(tls=ecdsa.server, ca=ecdsa.ca, name='reload') as server:
        assert support.served_fingerprint(server.port, server.ca) == ecdsa.server.fingerprint
        path = f'renew/{uuid.uuid4().hex[:8]}'
        old = support.WireClient(server)
        try:
            assert old.request('gauth', {'cred': ADMIN_SECRET})['s'] == 'ok'
            assert old.request('q', {'p': f'/{path}', 'h': ''})['s'] == 'ok'
            before = len(server.stderr().splitlines())

            support.install(ecdsa.renewed, server.cert_path, server.key_path)
            server.sighup()

            served = wait_for_fingerprint(server, ecdsa.renewed.fingerprint)
            assert served == ecdsa.renewed.fingerprint, 'new connections still get the old certificate after SIGHUP'
            server.wait_for_log(lambda line: RELOADED in line, after=before)
            assert server.process.poll() is None

            # The open WebSocket is the same TLS session, and it still carries requests and pushes.
            assert old.peer_fingerprint() == ecdsa.server.fingerprint
            old.ws.send('0')  # a client keepalive
            support.admin_put(server, path, 'after the reload')
            push = old.next_push(lambda d: d.get('a') == 'd' and d['b'].get('d') == 'after the reload')
            assert push['b']['p'].strip('/') == path, push
            assert old.request('g', {'p': f'/{path}', 'q': {}}) == {'s': 'ok', 'd': 'after the reload'}
        finally:
            old.close()

        # A new WebSocket is given the renewed certificate.
        new = support.WireClient(server)
        try:
            assert new.peer_fingerprint() == ecdsa.renewed.fingerprint
            assert new.handshake['d']['t'] == 'h', new.handshake
        finally:
            new.close()


def test_sighup_with_a_broken_file_keeps_the_old_certificate_and_names_the_file(certificates):
    rsa = certificates['rsa']
    with support.running_server(tls=rsa.server, ca=rsa.ca, name='broken-reload') as server:
        support.admin_put(server, 'kept', 'still served')
        cert, key = server.cert_path, server.key_path

        def garbage_cert():
            replace_text(cert, GARBAGE_PEM)

        def garbage_key():
            replace_text(key, GARBAGE_KEY)

        def renewed_cert_with_the_old_key():  # a renewal caught half done
            support.install(rsa.renewed, cert, key)
            replace_text(key, rsa.server.key.read_text())

        for breakage, named in ((garbage_cert, [cert]), (garbage_key, [key]), (renewed_cert_with_the_old_key, [cert, key])):
            support.install(rsa.server, cert, key)
            breakage()
            before = len(server.stderr().splitlines())
            server.sighup()
            warning = server.wait_for_log(lambda line: any(str(path) in line for path in named), after=before)
            assert 'warning' in warning.lower(), (breakage.__name__, warning)
            new_lines = server.stderr().splitlines()[before:]
            assert not any(RELOADED in line for line in new_lines), (breakage.__name__, new_lines)
            assert server.process.poll() is None, f'the server exited on a broken file at reload ({breakage.__name__})'
            assert support.served_fingerprint(server.port, server.ca) == rsa.server.fingerprint, breakage.__name__
            assert support.admin_get(server, 'kept') == 'still served'

        # Once the files are good again, the next SIGHUP takes them.
        support.install(rsa.renewed, cert, key)
        server.sighup()
        assert wait_for_fingerprint(server, rsa.renewed.fingerprint) == rsa.renewed.fingerprint


@pytest.mark.parametrize('case', ['missing cert', 'garbage cert', 'garbage key', 'another ECDSA key', 'an RSA key'])
def test_a_bad_file_at_start_up_stops_with_an_error_naming_it(certificates, tmp_path, case):
    ecdsa, rsa = certificates['ecdsa'], certificates['rsa']
    cert, key = tmp_path / 'cert.pem', tmp_path / 'key.pem'
    support.install(ecdsa.server, cert, key)
    named = [cert, key]  # a key that does not match the certificate: either file may be the one named
    if case == 'missing cert':
        cert = tmp_path / 'missing' / 'cert.pem'
        named = [cert]
    elif case == 'garbage cert':
        cert.write_text(GARBAGE_PEM)
        named = [cert]
    elif case == 'garbage key':
        key.write_text(GARBAGE_KEY)
        named = [key]
    elif case == 'another ECDSA key':
        key.write_bytes(ecdsa.renewed.key.read_bytes())
    else:
        key.write_bytes(rsa.server.key.read_bytes())
    status, out, err = support.run_to_exit('--tls-cert', str(cert), '--tls-key', str(key))
    assert status != 0, (status, out, err)
    assert any(str(path) in err for path in named), f'stderr names none of {named}:\n{err}'
    assert 'Hearth listening' not in out, out


@pytest.mark.parametrize('given, missing', [('--tls-cert', '--tls-key'), ('--tls-key', '--tls-cert')])
def test_one_tls_option_without_the_other_is_an_error(certificates, tmp_path, given, missing):
    cert, key = tmp_path / 'cert.pem', tmp_path / 'key.pem'
    support.install(certificates['ecdsa'].server, cert, key)
    status, out, err = support.run_to_exit(given, str(cert if given == '--tls-cert' else key))
    assert status != 0, (status, out, err)
    assert missing in err, f'stderr does not mention {missing}:\n{err}'
