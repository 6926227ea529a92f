"""Issue 27: `GET /healthz` and `GET /readyz` for load balancers, container runtimes and systemd —
no credentials, no data, never cached — and `--drain-seconds`: after SIGTERM `/readyz` answers 503
`draining` while everything else is still served, then the server stops as before.
"""

import signal
import subprocess
import time

import pytest
import requests

import serving_support as support
from serving_support import TIMEOUT


@pytest.mark.parametrize('which', ['plain', 'ecdsa'])
def test_healthz_and_readyz_answer_without_credentials(servers, which):
    server = servers[which]
    for path, body in (('/healthz', 'ok'), ('/readyz', 'ready')):
        response = requests.get(server.url(path), timeout=TIMEOUT, verify=server.verify)
        assert (response.status_code, response.text.strip()) == (200, body), (path, response.status_code, response.text)
        assert response.headers.get('Content-Type', '').startswith('text/plain'), (path, response.headers)
        assert 'no-store' in response.headers.get('Cache-Control', ''), (path, response.headers)


def draining_readyz(server, within=1.5):
    """The first `/readyz` answer after a stop signal that shows the drain (503 `draining`). The
    signal reaches the server a moment after it is sent, so `ready` may come first, for `within` s."""
    deadline = time.monotonic() + within
    while True:
        readyz = requests.get(server.url('/readyz'), timeout=TIMEOUT)
        if (readyz.status_code, readyz.text.strip()) == (503, 'draining'):
            return readyz
        assert (readyz.status_code, readyz.text.strip()) == (200, 'ready'), (readyz.status_code, readyz.text)
        assert time.monotonic() < deadline, f'/readyz still answered ready {within} s after the stop signal'
        time.sleep(0.02)


def test_drain_answers_not_ready_while_serving_then_exits():
    with support.running_server('--drain-seconds', '3', name='drain') as server:
        support.admin_put(server, 'drained', {'still': 'served'})
        ready = requests.get(server.url('/readyz'), timeout=TIMEOUT)
        assert (ready.status_code, ready.text.strip()) == (200, 'ready')

        signalled = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        readyz = draining_readyz(server)
        assert 'no-store' in readyz.headers.get('Cache-Control', ''), readyz.headers
        # Everything else is served as usual meanwhile, on new connections too.
        assert support.admin_get(server, 'drained') == {'still': 'served'}
        assert requests.get(server.url('/healthz'), timeout=TIMEOUT).status_code == 200
        assert time.monotonic() - signalled < 2.5, 'the checks above took too long to say anything about the drain'

        try:
            status = server.process.wait(timeout=3 + 10)
        except subprocess.TimeoutExpired:
            status = None
        stopped = time.monotonic() - signalled
        assert status == 0, f'hearth did not exit 0 within 13 s of SIGTERM (status {status}); log:\n{server.log_tail()}'
        assert stopped >= 2.5, f'hearth stopped {stopped:.1f} s after SIGTERM, before its 3-second drain'


def assert_exits_soon(server, after):
    """The server exits 0 within 20 s: far less than its 60-second drain."""
    try:
        status = server.process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        status = None
    assert status == 0, f'hearth did not exit 0 within 20 s of {after} (status {status}); log:\n{server.log_tail()}'


def test_a_second_signal_ends_the_drain_at_once():
    with support.running_server('--drain-seconds', '60', name='drain-cut') as server:
        server.process.send_signal(signal.SIGTERM)
        draining_readyz(server)
        server.process.send_signal(signal.SIGINT)
        assert_exits_soon(server, 'the second signal')


def test_a_second_signal_sent_before_the_drain_shows_still_ends_it():
    """Two signals back to back (as a process manager escalating at once would send): the second is
    not lost while the first is still turning into the drain."""
    with support.running_server('--drain-seconds', '60', name='drain-cut-early') as server:
        server.process.send_signal(signal.SIGTERM)
        server.process.send_signal(signal.SIGINT)
        assert_exits_soon(server, 'two signals')
