"""Issue 25, findings 3, 8 and 9: emailed links come from configuration, never from the request's
`Host`; the per-account sign-in lock holds under concurrency; `continueUrl` goes only to authorized
domains (no open redirect).
"""

import email
import email.policy
import http.server
import re
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from aiosmtpd.controller import Controller

import security_support as support
from security_support import TIMEOUT, V1
from smtp_inbox import Inbox

# ───────────────────────────── finding 3: reset-link poisoning ─────────────────────────────


def link_in(envelope):
    message = email.message_from_bytes(envelope.content, policy=email.policy.default)
    body = message.get_body(preferencelist=('plain',)).get_content()
    links = re.findall(r'https?://\S+', body)
    assert len(links) == 1, body
    return links[0]


@pytest.fixture
def inbox():
    received = Inbox()
    smtp = Controller(received, hostname='127.0.0.1', port=support.hearth_process.free_port())
    smtp.start()
    try:
        yield received, smtp.port
    finally:
        smtp.stop()


def ask_for_resets_with_a_forged_host(server):
    """A victim's account, then two resets asked with an attacker's Host and X-Forwarded-Host."""
    victim = support.sign_up(server, 'victim@example.com', 'victim-password-1')
    forged = [{'Host': 'evil.example:4444', 'X-Forwarded-Host': 'evil.example'},
              {'X-Forwarded-Host': 'evil.example', 'X-Forwarded-Proto': 'https'}]
    for headers in forged:
        response = requests.post(server.url(V1 + 'accounts:sendOobCode'), params={'key': 'any'}, headers=headers,
                                 json={'requestType': 'PASSWORD_RESET', 'email': victim['email']}, timeout=TIMEOUT)
        assert response.status_code == 200, response.text
    # The admin's link (firebase-admin's generate_password_reset_link) comes from the same place.
    admin = requests.post(server.url(V1 + f'projects/{support.PROJECT}/accounts:sendOobCode'),
                          headers={**support.admin_headers(), 'Host': 'evil.example:4444'}, timeout=TIMEOUT,
                          json={'requestType': 'PASSWORD_RESET', 'email': victim['email'], 'returnOobLink': True})
    assert admin.status_code == 200, admin.text
    assert 'oobLink' in admin.json(), admin.text
    return len(forged), admin.json()['oobLink']


def test_reset_links_use_the_public_url_whatever_the_request_host(inbox):
    received, smtp_port = inbox
    public_url = 'https://hearth.example.org'
    with support.running_server('--public-url', public_url, '--smtp-url', f'smtp://127.0.0.1:{smtp_port}',
                                name='public-url') as server:
        count, admin_link = ask_for_resets_with_a_forged_host(server)
        links = [link_in(envelope) for envelope in received.wait(count)] + [admin_link]
    for link in links:
        assert 'evil.example' not in link, link
        assert link.startswith(f'{public_url}/__/auth/action?'), link
        assert 'oobCode=' in link


def test_reset_links_without_a_public_url_use_the_configured_address(inbox):
    received, smtp_port = inbox
    with support.running_server('--smtp-url', f'smtp://127.0.0.1:{smtp_port}', name='no-public-url') as server:
        count, admin_link = ask_for_resets_with_a_forged_host(server)
        links = [link_in(envelope) for envelope in received.wait(count)] + [admin_link]
        for link in links:
            assert 'evil.example' not in link, link
            assert link.startswith(f'http://127.0.0.1:{server.port}/__/auth/action?'), link


# ───────────────────────────── finding 8: the sign-in lock under concurrency ─────────────────────────────

def test_concurrent_wrong_passwords_lock_the_account(deployment):
    """20 wrong passwords at once: the lock (10 failures per account by default) must hold, so at
    most 10 are checked, the rest answer TOO_MANY_ATTEMPTS_TRY_LATER, and so does the right one."""
    victim = deployment.c
    barrier = threading.Barrier(20, timeout=TIMEOUT)

    def guess(number):
        with requests.Session() as session:
            barrier.wait()
            # Generous: up to 20 slow password hashes on a 2-core machine that may be busy.
            return support.sign_in(deployment.server, victim['email'], f'wrong-guess-{number}', session=session, timeout=90)

    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(guess, range(20)))
    messages = []
    for answer in answers:
        assert answer.status_code == 400, answer.text
        messages.append(answer.json()['error']['message'])
    locked = [m for m in messages if m.startswith('TOO_MANY_ATTEMPTS_TRY_LATER')]
    checked = [m for m in messages if not m.startswith('TOO_MANY_ATTEMPTS_TRY_LATER')]
    assert locked, f'no attempt was refused: {messages}'
    assert len(checked) <= 10, f'{len(checked)} wrong passwords were checked (limit 10): {messages}'
    for message in checked:
        assert message.startswith(('INVALID_LOGIN_CREDENTIALS', 'INVALID_PASSWORD')), message

    right = support.sign_in(deployment.server, victim['email'], victim['password'])
    assert right.status_code == 400, right.text
    assert right.json()['error']['message'].startswith('TOO_MANY_ATTEMPTS_TRY_LATER'), right.text
    assert 'idToken' not in right.text


# ───────────────────────────── finding 9: open redirect ─────────────────────────────

class Recorder:
    """A local HTTP server standing in for the attacker's site; remembers every request."""

    def __init__(self):
        hits = self.hits = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's hook name
                hits.append((self.headers.get('Host'), self.path))
                body = b'<html><head><title>landing</title></head><body>landed</body></html>'
                self.send_response(200)
                self.send_header('Content-Type', 'text/html')
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def recorder():
    site = Recorder()
    try:
        yield site
    finally:
        site.close()


def action_url(server, continue_url):
    query = urllib.parse.urlencode({'mode': 'signIn', 'oobCode': 'any-code', 'apiKey': 'any', 'lang': 'en',
                                    'continueUrl': continue_url})
    return server.url(f'/__/auth/action?{query}')


def visit(browser, url, seconds=3, until=None):
    """Opens `url` and gives its scripts `seconds` to navigate away (less once `until()` holds);
    returns the final URL."""
    browser.get(url)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not (until and until()):
        time.sleep(0.25)
    return browser.current_url


def test_action_page_does_not_redirect_to_an_unauthorized_continue_url(server, browser, recorder):
    # Over HTTP: no redirect status, no refresh to the attacker.
    response = requests.get(action_url(server, 'https://evil.example/'), allow_redirects=False, timeout=TIMEOUT)
    assert not (300 <= response.status_code < 400 and 'evil.example' in response.headers.get('Location', '')), \
        (response.status_code, response.headers)
    assert not re.search(r'http-equiv=["\']?refresh[^>]*evil\.example', response.text, re.I)
    # In Chromium (evil.example resolves to the recorder here): the page must not go there.
    final = visit(browser, action_url(server, f'http://evil.example:{recorder.port}/landing'))
    assert urllib.parse.urlsplit(final).hostname != 'evil.example', final
    assert recorder.hits == [], recorder.hits


def test_action_page_still_follows_an_authorized_continue_url(server, browser, recorder):
    """The control of the test above: localhost is an authorized domain, and the page goes there,
    passing the link's parameters on (as Firebase's hosted handler does)."""
    final = visit(browser, action_url(server, f'http://localhost:{recorder.port}/landing'), seconds=20,
                  until=lambda: bool(recorder.hits))
    assert recorder.hits, f'the page did not go to the authorized continueUrl (still at {final})'
    assert 'oobCode=any-code' in recorder.hits[0][1]


def test_send_oob_code_refuses_an_unauthorized_continue_url(deployment):
    response = requests.post(deployment.server.url(V1 + 'accounts:sendOobCode'), params={'key': 'any'}, timeout=TIMEOUT,
                             json={'requestType': 'PASSWORD_RESET', 'email': deployment.a['email'],
                                   'continueUrl': 'https://evil.example/'})
    assert response.status_code == 400, response.text
    assert 'UNAUTHORIZED_DOMAIN' in response.json()['error']['message'], response.text
