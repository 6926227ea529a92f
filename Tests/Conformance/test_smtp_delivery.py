"""Account emails delivered over SMTP (`hearth serve --smtp-url`), to a real SMTP server (aiosmtpd)
in this process: the reset email arrives with its link, the link's code resets the password, a mail
server that is down at first gets the message on a retry, and the log never holds the code, the link
or the recipient. Starts its own servers in the default mode (not the session's emulator).
"""

import email
import email.policy
import os
import pathlib
import re
import subprocess
import sys
import time
import urllib.parse

import requests
from aiosmtpd.controller import Controller

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'Support' / 'Python'))
import hearth_process  # noqa: E402
from smtp_inbox import Inbox  # noqa: E402

from harness import HTTP_TIMEOUT  # noqa: E402

SECRET = 'smtp-test-secret'
V1 = '/identitytoolkit.googleapis.com/v1/'


def serve(tmp_path, smtp_port, name, extra=(), env_extra=None):
    port = hearth_process.free_port()
    binary = os.environ.get('HEARTH_BIN') or str(hearth_process.DEFAULT_BIN)
    log_path = tmp_path / f'{name}.log'
    log = open(log_path, 'wb')
    env = dict(os.environ, HEARTH_ADMIN_SECRET=SECRET, **(env_extra or {}))
    proc = subprocess.Popen([binary, 'serve', '--port', str(port), '--data', str(tmp_path / name), '--project', 'mail-project',
                             '--smtp-url', f'smtp://127.0.0.1:{smtp_port}', '--smtp-from', 'noreply@hearth.test',
                             '--log-level', 'debug', *extra],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    log.close()
    base = f'http://127.0.0.1:{port}'
    deadline = time.time() + 60
    while True:
        try:
            # Ready, not merely answering: while it starts, the port answers 503 "starting".
            if requests.get(f'{base}/readyz', timeout=2).status_code == 200:
                return proc, base, log_path
        except requests.RequestException:
            pass
        assert proc.poll() is None and time.time() < deadline, 'hearth did not start'
        time.sleep(0.1)


def create_user_and_ask_for_a_reset(base, email_address):
    created = requests.post(f'{base}{V1}projects/mail-project/accounts', headers={'Authorization': f'Bearer {SECRET}'},
                            json={'email': email_address, 'password': 'old-password'}, timeout=HTTP_TIMEOUT)
    assert created.status_code == 200, created.text
    started = time.monotonic()
    asked = requests.post(f'{base}{V1}accounts:sendOobCode', params={'key': 'k'},
                          json={'requestType': 'PASSWORD_RESET', 'email': email_address}, timeout=HTTP_TIMEOUT)
    assert asked.status_code == 200, asked.text
    return time.monotonic() - started


def link_in(envelope):
    message = email.message_from_bytes(envelope.content, policy=email.policy.default)
    body = message.get_body(preferencelist=('plain',)).get_content()
    links = re.findall(r'http://\S+', body)
    assert len(links) == 1, body
    return message, body, links[0]


def test_a_reset_email_is_delivered_and_its_link_resets_the_password(tmp_path):
    inbox = Inbox()
    smtp = Controller(inbox, hostname='127.0.0.1', port=hearth_process.free_port())
    smtp.start()
    proc, base, log_path = serve(tmp_path, smtp.port, 'up')
    try:
        create_user_and_ask_for_a_reset(base, 'Mailed@Example.com')
        envelope = inbox.wait(1)[-1]
        assert envelope.mail_from == 'noreply@hearth.test'
        assert envelope.rcpt_tos == ['mailed@example.com']
        message, body, link = link_in(envelope)
        assert message['From'] == 'noreply@hearth.test' and message['To'] == 'mailed@example.com'
        assert message['Subject'] == 'Reset your password for mail-project'
        assert 'mailed@example.com' in body
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(link).query))
        assert query['mode'] == 'resetPassword'
        # The same message is in the outbox, and its code resets the password.
        reset = requests.post(f'{base}{V1}accounts:resetPassword', params={'key': 'k'},
                              json={'oobCode': query['oobCode'], 'newPassword': 'new-password'}, timeout=HTTP_TIMEOUT)
        assert reset.status_code == 200, reset.text
        signin = requests.post(f'{base}{V1}accounts:signInWithPassword', params={'key': 'k'}, timeout=HTTP_TIMEOUT,
                               json={'email': 'mailed@example.com', 'password': 'new-password', 'returnSecureToken': True})
        assert signin.status_code == 200, signin.text
    finally:
        hearth_process.stop(proc)
        smtp.stop()
    log = log_path.read_text()
    assert 'Email delivered' in log  # debug level: the delivery is logged, its contents are not
    for secret in (query['oobCode'], link, 'mailed@example.com'):
        assert secret not in log


def test_a_mail_server_that_is_down_gets_the_email_on_a_retry_and_the_request_does_not_wait(tmp_path):
    smtp_port = hearth_process.free_port()  # nothing listens here yet
    proc, base, log_path = serve(tmp_path, smtp_port, 'down')
    inbox = Inbox()
    smtp = None
    try:
        took = create_user_and_ask_for_a_reset(base, 'later@example.com')
        assert took < 5  # answered without waiting for the mail server
        deadline = time.time() + 30
        while 'will retry' not in log_path.read_text():
            assert time.time() < deadline, 'no failed attempt logged'
            time.sleep(0.1)
        smtp = Controller(inbox, hostname='127.0.0.1', port=smtp_port)
        smtp.start()
        envelope = inbox.wait(1, timeout=40)[-1]  # retries after 1 s, then 5 s, 30 s, …
        assert envelope.rcpt_tos == ['later@example.com']
        _, _, link = link_in(envelope)
        assert 'oobCode=' in link
    finally:
        hearth_process.stop(proc)
        if smtp is not None:
            smtp.stop()
    log = log_path.read_text()
    assert 'later@example.com' not in log and link not in log


def self_signed_certificate(directory):
    """A certificate for 127.0.0.1 (IP SAN) and its key, as PEM files."""
    import datetime
    import ipaddress
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'hearth-test-smtp')])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address('127.0.0.1'))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / 'smtp-cert.pem', directory / 'smtp-key.pem'
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_starttls_with_a_login_delivers_and_an_untrusted_certificate_gets_nothing(tmp_path):
    import ssl
    from aiosmtpd.smtp import AuthResult
    cert_path, key_path = self_signed_certificate(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(cert_path), str(key_path))
    logins = []

    def authenticator(server, session, envelope, mechanism, auth_data):
        logins.append((mechanism, auth_data.login, auth_data.password, session.ssl is not None))
        return AuthResult(success=auth_data.login == b'mailer' and auth_data.password == b'mail-secret')

    inbox = Inbox()
    smtp = Controller(inbox, hostname='127.0.0.1', port=hearth_process.free_port(), tls_context=context,
                      require_starttls=True, auth_require_tls=True, authenticator=authenticator)
    smtp.start()
    login = {'HEARTH_SMTP_USERNAME': 'mailer', 'HEARTH_SMTP_PASSWORD': 'mail-secret'}
    trusted, base, log_path = serve(tmp_path, smtp.port, 'tls', extra=['--smtp-ca-file', str(cert_path)], env_extra=login)
    try:
        create_user_and_ask_for_a_reset(base, 'secure@example.com')
        envelope = inbox.wait(1)[-1]
        assert envelope.rcpt_tos == ['secure@example.com']
        assert logins == [('PLAIN', b'mailer', b'mail-secret', True)]  # the login went inside TLS
    finally:
        hearth_process.stop(trusted)
    log = log_path.read_text()
    assert 'mail-secret' not in log and 'secure@example.com' not in log

    # Without the CA file the self-signed certificate is refused: nothing is sent, not even the login.
    untrusted, base, log_path = serve(tmp_path, smtp.port, 'untrusted', env_extra=login)
    try:
        create_user_and_ask_for_a_reset(base, 'refused@example.com')
        # The handshake fails (the server sees "unknown CA"); it is retried like any failed connection.
        deadline = time.time() + 30
        while log_path.read_text().count('will retry') < 2:
            assert time.time() < deadline, 'no failed attempts logged'
            time.sleep(0.1)
        assert len(inbox.messages) == 1 and len(logins) == 1
    finally:
        hearth_process.stop(untrusted)
        smtp.stop()
