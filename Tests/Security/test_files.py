"""Issue 25, findings 4 to 7: uploaded files cannot run script on the server's origin; resumable
uploads meet the rules at their start and may not outgrow what they declared; custom metadata is
capped at 8 KiB (as Cloud Storage's); a multipart upload's metadata part is never buffered whole.
"""

import json
import os
import pathlib
import threading
import time
import urllib.parse
import uuid

import requests

import security_support as support
from security_support import BUCKET, TIMEOUT

FILES = f'/v0/b/{BUCKET}/o'
PNG = b'\x89PNG\r\n\x1a\n' + b'\x00' * 8  # 16 bytes; the server does not look inside


def object_url(server, name):
    return server.url(f'{FILES}/{urllib.parse.quote(name, safe="")}')


def multipart(metadata, data, data_type, boundary='security-suite-boundary'):
    body = (f'--{boundary}\r\nContent-Type: application/json; charset=utf-8\r\n\r\n'.encode()
            + json.dumps(metadata).encode()
            + f'\r\n--{boundary}\r\nContent-Type: {data_type}\r\n\r\n'.encode() + data + f'\r\n--{boundary}--'.encode())
    return body, f'multipart/related; boundary={boundary}'


def firebase_multipart_upload(server, user, name, metadata, data=PNG, data_type='image/png'):
    """A small upload as the Firebase SDKs send it (X-Goog-Upload-Protocol: multipart)."""
    body, content_type = multipart({'name': name, 'contentType': data_type, **metadata}, data, data_type)
    return requests.post(server.url(FILES), params={'name': name}, data=body, timeout=TIMEOUT,
                         headers={**support.bearer(user), 'X-Goog-Upload-Protocol': 'multipart', 'Content-Type': content_type})


# ───────────────────────────── finding 4: stored script ─────────────────────────────

SVG = b'''<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40">
<script type="text/javascript"><![CDATA[
document.title = 'pwned';
try { localStorage.setItem('pwned', location.origin); } catch (e) {}
]]></script>
<rect width="40" height="40" fill="red"/>
</svg>
'''


def upload_svg(deployment):
    name = f'users/{deployment.a["uid"]}/x-{uuid.uuid4().hex[:6]}.svg'
    response = requests.post(deployment.server.url(FILES), params={'name': name}, data=SVG, timeout=TIMEOUT,
                             headers={**support.bearer(deployment.a), 'Content-Type': 'image/svg+xml'})
    assert response.status_code == 200, response.text  # image/svg+xml passes the image/.* rule, as in the report
    token = response.json()['downloadTokens'].split(',')[0]
    return name, f'{object_url(deployment.server, name)}?alt=media&token={token}'


def test_downloads_of_active_content_are_sandboxed_attachments(deployment):
    _, download = upload_svg(deployment)
    response = requests.get(download, timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    assert response.content == SVG
    headers = response.headers
    assert headers.get('X-Content-Type-Options', '').lower() == 'nosniff', dict(headers)
    policy = headers.get('Content-Security-Policy', '').lower()
    directives = [d.strip() for d in policy.split(';')]
    assert any(d == 'sandbox' or d.startswith('sandbox ') for d in directives) \
        or "script-src 'none'" in directives or "default-src 'none'" in directives, policy
    assert headers.get('Content-Disposition', '').lower().startswith('attachment'), headers.get('Content-Disposition')


def test_an_uploaded_svg_does_not_run_script_in_the_browser(deployment, browser):
    _, download = upload_svg(deployment)
    console = deployment.server.url('/console/')
    browser.get(console)
    browser.execute_script("localStorage.removeItem('pwned');")
    try:
        browser.get(download)
    except Exception:  # noqa: BLE001 - a navigation that turns into a download may time out here
        pass
    time.sleep(1.5)
    title = browser.title
    browser.get(console)
    stolen = browser.execute_script("return localStorage.getItem('pwned');")
    assert stolen is None, f'the SVG script ran on the server origin (localStorage pwned={stolen!r})'
    assert title != 'pwned', 'the SVG script ran (document.title was set)'


def test_the_console_page_sets_a_content_security_policy(server):
    response = requests.get(server.url('/console/'), timeout=TIMEOUT)
    assert response.status_code == 200
    policy = response.headers.get('Content-Security-Policy', '')
    assert policy, dict(response.headers)
    assert 'script-src' in policy or 'default-src' in policy, policy


# ───────────────────────────── finding 5: resumable uploads ─────────────────────────────

def start_resumable(server, name, size, content_type, user=None):
    headers = {'X-Goog-Upload-Protocol': 'resumable', 'X-Goog-Upload-Command': 'start',
               'X-Goog-Upload-Header-Content-Length': str(size), 'X-Goog-Upload-Header-Content-Type': content_type,
               'Content-Type': 'application/json; charset=utf-8'}
    if user:
        headers.update(support.bearer(user))
    return requests.post(server.url(FILES), params={'name': name, 'uploadType': 'resumable'}, headers=headers,
                         data=json.dumps({'name': name, 'contentType': content_type}), timeout=TIMEOUT)


def test_a_resumable_upload_the_rules_refuse_is_refused_at_its_start(deployment):
    server, a = deployment.server, deployment.a
    name = f'users/{a["uid"]}/big.png'
    refused = [('anonymous', start_resumable(server, name, 1000, 'image/png')),
               ('another user', start_resumable(server, name, 1000, 'image/png', user=deployment.b)),
               ('a declared type the rules refuse', start_resumable(server, name, 1000, 'text/html', user=a))]
    for who, response in refused:
        assert response.status_code == 403, (who, response.status_code, response.text)
        assert response.json()['error']['code'] == 403, (who, response.text)
        assert 'X-Goog-Upload-URL' not in response.headers, (who, response.headers)
    # The owner, with a type the rules allow, may start.
    allowed = start_resumable(server, name, 1000, 'image/png', user=a)
    assert allowed.status_code == 200, allowed.text
    assert allowed.headers.get('X-Goog-Upload-URL')


def test_a_resumable_upload_takes_no_more_than_it_declared(deployment):
    server, a = deployment.server, deployment.a
    started = start_resumable(server, f'users/{a["uid"]}/small-{uuid.uuid4().hex[:6]}.png', 10, 'image/png', user=a)
    assert started.status_code == 200, started.text
    session_url = started.headers['X-Goog-Upload-URL']
    upload_id = started.headers.get('x-gupload-uploadid') or urllib.parse.parse_qs(urllib.parse.urlsplit(session_url).query)['upload_id'][0]
    chunk = requests.post(session_url, data=b'0123456789abcdefghij', timeout=TIMEOUT,
                          headers={**support.bearer(a), 'X-Goog-Upload-Command': 'upload', 'X-Goog-Upload-Offset': '0'})
    assert 400 <= chunk.status_code < 500, (chunk.status_code, chunk.text)
    query = requests.post(session_url, timeout=TIMEOUT, headers={**support.bearer(a), 'X-Goog-Upload-Command': 'query'})
    if query.status_code == 200:  # the session may also have been ended (404)
        assert int(query.headers.get('X-Goog-Upload-Size-Received', '0')) <= 10, dict(query.headers)
    else:
        assert query.status_code == 404, (query.status_code, query.text)
    stored = server.data_dir / 'files' / 'uploads' / upload_id
    if stored.exists():
        assert stored.stat().st_size <= 10, f'{stored.stat().st_size} bytes of a 10-byte upload are on disk'


# ───────────────────────────── finding 6: custom metadata cap ─────────────────────────────

def test_custom_metadata_is_capped_at_8_kib(deployment):
    server, a = deployment.server, deployment.a
    over = firebase_multipart_upload(server, a, f'users/{a["uid"]}/over.png', {'metadata': {'note': 'x' * 9000}})
    assert over.status_code == 400, (over.status_code, over.text[:300])
    too_big_start = requests.post(server.url(FILES), params={'name': f'users/{a["uid"]}/over2.png', 'uploadType': 'resumable'},
                                  timeout=TIMEOUT, data=json.dumps({'contentType': 'image/png', 'metadata': {'note': 'x' * 9000}}),
                                  headers={**support.bearer(a), 'X-Goog-Upload-Protocol': 'resumable',
                                           'X-Goog-Upload-Command': 'start', 'X-Goog-Upload-Header-Content-Length': '16',
                                           'Content-Type': 'application/json; charset=utf-8'})
    assert too_big_start.status_code == 400, (too_big_start.status_code, too_big_start.text[:300])

    name = f'users/{a["uid"]}/under-{uuid.uuid4().hex[:6]}.png'
    under = firebase_multipart_upload(server, a, name, {'metadata': {'note': 'x' * 1000}})
    assert under.status_code == 200, under.text
    assert under.json()['metadata'] == {'note': 'x' * 1000}

    headers = {**support.bearer(a), 'Content-Type': 'application/json; charset=utf-8'}
    pushed_over = requests.patch(object_url(server, name), data=json.dumps({'metadata': {'more': 'y' * 8000}}),
                                 headers=headers, timeout=TIMEOUT)
    assert pushed_over.status_code == 400, (pushed_over.status_code, pushed_over.text[:300])
    small_patch = requests.patch(object_url(server, name), data=json.dumps({'metadata': {'more': 'y' * 100}}),
                                 headers=headers, timeout=TIMEOUT)
    assert small_patch.status_code == 200, small_patch.text
    assert small_patch.json()['metadata'] == {'note': 'x' * 1000, 'more': 'y' * 100}


# ───────────────────────────── finding 7: multipart metadata part ─────────────────────────────

MIB = 1 << 20


def stream_multipart_with_huge_metadata(server, path, metadata_bytes, headers):
    """Sends a multipart upload whose metadata part is `metadata_bytes` long, stopping when the server
    answers (or stops reading); returns (status, seconds until the answer)."""
    boundary = 'huge-metadata-boundary'
    opening = f'--{boundary}\r\nContent-Type: application/json; charset=utf-8\r\n\r\n{{"metadata":{{"k":"'.encode()
    closing = f'"}}}}\r\n--{boundary}\r\nContent-Type: image/png\r\n\r\n'.encode() + PNG + f'\r\n--{boundary}--\r\n'.encode()
    filler = metadata_bytes - len(b'{"metadata":{"k":""}}')
    length = len(opening) + filler + len(closing)
    head = (f'POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: multipart/related; boundary={boundary}\r\n'
            f'Content-Length: {length}\r\n' + ''.join(f'{k}: {v}\r\n' for k, v in headers.items()) + '\r\n').encode()
    sock = support.raw_connection(server, timeout=5)
    started = time.monotonic()
    try:
        support.send_quietly(sock, head + opening)
        block = b'x' * (256 * 1024)
        sent = 0
        import select
        while sent < filler:
            if select.select([sock], [], [], 0)[0]:
                break  # answered early
            piece = block[:min(len(block), filler - sent)]
            if not support.send_quietly(sock, piece):
                break
            sent += len(piece)
        else:
            support.send_quietly(sock, closing)
        status, _ = support.read_status_line(sock, within=30)
        return status, time.monotonic() - started
    finally:
        sock.close()


class PeakRSS:
    """The server's peak resident memory over a block, in KiB above what it held at the start."""

    def __init__(self, server):
        self.server = server

    def __enter__(self):
        self.cleared = self.server.reset_peak_rss()
        self.baseline = self.server.status_kib('VmRSS')
        self.peak = self.baseline
        self.running = True
        self.sampler = threading.Thread(target=self._sample, daemon=True)
        self.sampler.start()
        return self

    def _sample(self):
        while self.running:
            try:
                self.peak = max(self.peak, self.server.status_kib('VmRSS'))
            except (OSError, AssertionError):
                return
            time.sleep(0.01)

    def __exit__(self, *exc):
        self.running = False
        self.sampler.join(timeout=2)
        if self.cleared:
            self.peak = max(self.peak, self.server.status_kib('VmHWM'))
        self.growth = self.peak - self.baseline
        return False


def test_a_huge_multipart_metadata_part_is_refused_quickly_without_buffering(deployment):
    server = deployment.server
    # The Cloud Storage API (the admin's): a 5 MiB metadata part is refused at once.
    status, took = stream_multipart_with_huge_metadata(
        server, f'/upload/storage/v1/b/{BUCKET}/o?uploadType=multipart&name=huge.png', 5 * MIB, support.admin_headers())
    assert status in (400, 413), status
    assert took < 5, f'answered after {took:.1f} s'
    # The Firebase API, with no credentials at all (the report's attack): 40 MiB of metadata must not
    # be held in memory while the server decides.
    name = urllib.parse.quote(f'users/{deployment.a["uid"]}/huge.png', safe='')
    with PeakRSS(server) as memory:
        status, took = stream_multipart_with_huge_metadata(
            server, f'{FILES}?name={name}', 40 * MIB, {'X-Goog-Upload-Protocol': 'multipart'})
    assert status in (400, 403, 413), status
    assert took < 10, f'answered after {took:.1f} s'
    assert memory.growth < 20 * 1024, f'the server grew by {memory.growth // 1024} MiB while refusing it'


# ───────────────────────────── the upload size limit ─────────────────────────────

def test_max_upload_size_refuses_larger_uploads_at_once():
    """`--max-upload-size` bounds every upload, the admin's too: a simple upload past it is a 413, and
    a resumable upload that declares more is refused at its start."""
    with support.running_server('--max-upload-size', '1KB', name='upload-limit') as server:
        fits = requests.post(server.url(FILES), params={'name': 'fits.bin'}, data=b'x' * 1000, timeout=TIMEOUT,
                             headers={**support.admin_headers(), 'Content-Type': 'application/octet-stream'})
        assert fits.status_code == 200, fits.text
        too_large = requests.post(server.url(FILES), params={'name': 'large.bin'}, data=b'x' * 5000, timeout=TIMEOUT,
                                  headers={**support.admin_headers(), 'Content-Type': 'application/octet-stream'})
        assert too_large.status_code == 413, too_large.text
        start = requests.post(server.url(FILES), params={'name': 'declared.bin'}, data=b'{}', timeout=TIMEOUT, headers={
            **support.admin_headers(), 'X-Goog-Upload-Protocol': 'resumable', 'X-Goog-Upload-Command': 'start',
            'X-Goog-Upload-Header-Content-Length': '5000', 'Content-Type': 'application/json'})
        assert start.status_code == 413, start.text
        missing = requests.get(object_url(server, 'large.bin'), headers=support.admin_headers(), timeout=TIMEOUT)
        assert missing.status_code == 404


# ───────────────────────────── uploads of unknown length ─────────────────────────────

def stream_chunked(server, path, headers, opening, filler_bytes, closing):
    """Sends `opening`, `filler_bytes` of filler and `closing` as a chunked body (no Content-Length),
    stopping when the server answers first; returns (status, bytes of filler sent)."""
    head = (f'POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nTransfer-Encoding: chunked\r\n'
            + ''.join(f'{k}: {v}\r\n' for k, v in headers.items()) + '\r\n').encode()

    def chunk(data):
        return f'{len(data):x}\r\n'.encode() + data + b'\r\n'

    import select
    sock = support.raw_connection(server, timeout=5)
    try:
        support.send_quietly(sock, head + (chunk(opening) if opening else b''))  # an empty chunk would end the body
        block = b'x' * (256 * 1024)
        sent = 0
        while sent < filler_bytes:
            if select.select([sock], [], [], 0)[0]:
                break  # answered early
            piece = block[:min(len(block), filler_bytes - sent)]
            if not support.send_quietly(sock, chunk(piece)):
                break
            sent += len(piece)
        else:
            support.send_quietly(sock, (chunk(closing) if closing else b'') + b'0\r\n\r\n')
        status, _ = support.read_status_line(sock, within=30)
        return status, sent
    finally:
        sock.close()


def test_uploads_without_a_length_are_decided_before_their_bytes_are_stored():
    """A client sending no Content-Length (a chunked body) is stored only where the rules allow it at
    any size; where its size matters to them, it is asked for a length (411) before its bytes are
    stored, instead of having them stored and then refused."""
    rules = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /any/{file} { allow read, write: if request.auth != null; }
    match /none/{file} { allow read: if request.auth != null; }
    match /sized/{file} {
      allow read: if request.auth != null;
      allow write: if request.auth != null && request.resource.size < 1024;
    }
  }
}
"""
    with support.running_server(name='unknown-length') as server:
        support.put_storage_rules(server, rules)
        user = support.sign_up(server, f'u-{uuid.uuid4().hex[:6]}@example.com', 'user-password-1')
        headers = support.bearer(user)
        boundary = 'chunked-boundary'

        def multipart_parts(name):
            opening = (f'--{boundary}\r\nContent-Type: application/json; charset=utf-8\r\n\r\n'
                       + json.dumps({'name': name, 'contentType': 'application/octet-stream'})
                       + f'\r\n--{boundary}\r\nContent-Type: application/octet-stream\r\n\r\n').encode()
            return opening, f'\r\n--{boundary}--\r\n'.encode()

        multipart_headers = {**headers, 'X-Goog-Upload-Protocol': 'multipart',
                             'Content-Type': f'multipart/related; boundary={boundary}'}
        raw_headers = {**headers, 'Content-Type': 'application/octet-stream'}

        # Where any size is allowed, a chunked body is taken as before.
        opening, closing = multipart_parts('any/m.bin')
        assert stream_chunked(server, f'{FILES}?name=any%2Fm.bin', multipart_headers, opening, 5000, closing) == (200, 5000)
        assert stream_chunked(server, f'{FILES}?name=any%2Fr.bin', raw_headers, b'', 5000, b'') == (200, 5000)

        # Where the size decides, 64 MiB are refused before they are sent, and nothing is stored.
        total = 64 * MIB
        opening, closing = multipart_parts('sized/m.bin')
        status, sent = stream_chunked(server, f'{FILES}?name=sized%2Fm.bin', multipart_headers, opening, total, closing)
        assert status == 411 and sent < total, (status, sent)
        status, sent = stream_chunked(server, f'{FILES}?name=sized%2Fr.bin', raw_headers, b'', total, b'')
        assert status == 411 and sent < total, (status, sent)
        for name in ('sized/m.bin', 'sized/r.bin'):
            assert requests.get(object_url(server, name), headers=headers, timeout=TIMEOUT).status_code == 404

        # Where no size is allowed, the answer is the refusal itself, as with a length.
        opening, closing = multipart_parts('none/m.bin')
        status, sent = stream_chunked(server, f'{FILES}?name=none%2Fm.bin', multipart_headers, opening, total, closing)
        assert status == 403 and sent < total, (status, sent)
        status, sent = stream_chunked(server, f'{FILES}?name=none%2Fr.bin', raw_headers, b'', total, b'')
        assert status == 403 and sent < total, (status, sent)

        # With its length, an upload under the limit is stored.
        fits = requests.post(server.url(FILES), params={'name': 'sized/ok.bin'}, data=b'x' * 500, timeout=TIMEOUT, headers=raw_headers)
        assert fits.status_code == 200, fits.text
