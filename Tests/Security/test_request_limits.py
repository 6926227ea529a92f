"""Issue 25, finding 10: an oversized request head gets 414/431 and a close, not silence; a head or a
body that trickles in is closed within the read timeout (`--request-read-timeout`, default 60 s).
"""

import time

import pytest

import security_support as support

READ_TIMEOUT = 3  # seconds, for this module's server (when the binary has the option)


@pytest.fixture(scope='module')
def limited_server():
    """A server with a short read timeout, if this binary can set one (else its default, 60 s)."""
    has_option = '--request-read-timeout' in support.serve_help()
    args = ('--request-read-timeout', str(READ_TIMEOUT)) if has_option else ()
    with support.running_server(*args, name='limits') as server:
        server.read_timeout = READ_TIMEOUT if has_option else 60
        yield server


def test_a_100_kb_url_gets_414_or_431_and_a_close(limited_server):
    sock = support.raw_connection(limited_server)
    try:
        support.send_quietly(sock, b'GET /' + b'a' * 100_000 + b'.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
        status, received = support.read_status_line(sock, within=5)
        assert status in (414, 431), f'no 414/431 within 5 s: {received[:200]!r}'
        assert support.closed_within(sock, 5), 'the connection stayed open after the refusal'
    finally:
        sock.close()


def test_100_kb_of_headers_get_431_and_a_close(limited_server):
    headers = b''.join(b'X-Filler-%d: %s\r\n' % (i, b'h' * 1000) for i in range(100))
    sock = support.raw_connection(limited_server)
    try:
        support.send_quietly(sock, b'GET /.json HTTP/1.1\r\nHost: 127.0.0.1\r\n' + headers + b'\r\n')
        status, received = support.read_status_line(sock, within=5)
        assert status == 431, f'no 431 within 5 s: {received[:200]!r}'
        assert support.closed_within(sock, 5), 'the connection stayed open after the refusal'
    finally:
        sock.close()


def test_a_head_sent_one_byte_a_second_is_closed_within_the_read_timeout(limited_server):
    bound = limited_server.read_timeout + 5
    head = b'GET /.json HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ' + b's' * 200
    sock = support.raw_connection(limited_server)
    started = time.monotonic()
    try:
        for byte in head:
            if not support.send_quietly(sock, bytes([byte])) or support.closed_within(sock, 1):
                break
            if time.monotonic() - started > bound:
                break
        took = time.monotonic() - started
        assert took <= bound, f'a slowloris head was still open after {took:.0f} s (timeout {limited_server.read_timeout} s)'
    finally:
        sock.close()


def test_a_body_that_goes_silent_is_closed_within_the_read_timeout(limited_server):
    bound = limited_server.read_timeout + 5
    sock = support.raw_connection(limited_server)
    try:
        support.send_quietly(sock, f'PUT /slow.json?ns={support.NAMESPACE} HTTP/1.1\r\nHost: 127.0.0.1\r\n'
                                   'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"012345678'.encode())
        started = time.monotonic()
        closed = support.closed_within(sock, bound)
        assert closed, f'a body silent after 10 of 1000 bytes was still open after {bound} s'
        assert time.monotonic() - started <= bound
    finally:
        sock.close()
