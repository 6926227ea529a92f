#!/usr/bin/env python3
"""A graceful restart (SIGTERM) keeps what a client asked for on disconnect.

WebSocket clients register onDisconnect writes and stay connected; the server is stopped with SIGTERM
(it closes the connections, which fires the writes) and started again on the same data. Every write
must be there, and the server must have exited cleanly. Five cycles of three clients, because losing
the writes was a race between the connections closing and the database writers stopping.

Environment: HEARTH_BIN (default <repo>/.build/debug/hearth). Standard library only.
"""
import base64
import json
import os
import pathlib
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ.get('HEARTH_BIN', str(REPO / '.build' / 'debug' / 'hearth'))


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def start(data, port, log):
    process = subprocess.Popen([BIN, 'serve', '--emulator', '--port', str(port), '--data', data],
                               stdout=log, stderr=subprocess.STDOUT)
    for _ in range(300):
        try:
            urllib.request.urlopen(f'http://127.0.0.1:{port}/.json?ns=demo&shallow=true', timeout=1)
            return process
        except OSError:
            if process.poll() is not None:
                sys.exit(f'FAIL: hearth exited with {process.returncode} while starting')
            time.sleep(0.1)
    sys.exit('FAIL: hearth did not start within 30 s')


def send_frame(sock, text):
    payload = text.encode()
    mask = os.urandom(4)
    header = bytes([0x81])
    if len(payload) < 126:
        header += bytes([0x80 | len(payload)])
    else:
        header += bytes([0x80 | 126]) + struct.pack('!H', len(payload))
    sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))


def receive_frame(reader):
    head = reader.read(2)
    assert len(head) == 2, 'the connection ended without a close frame'
    first, second = head
    length = second & 0x7F
    if length == 126:
        length = struct.unpack('!H', reader.read(2))[0]
    elif length == 127:
        length = struct.unpack('!Q', reader.read(8))[0]
    return first & 0x0F, reader.read(length)


def main():
    if not os.access(BIN, os.X_OK):
        sys.exit(f'FAIL: hearth binary not found at {BIN} (build it with swift build or set HEARTH_BIN)')
    data = tempfile.mkdtemp(prefix='hearth-restart-')
    port = free_port()
    cycles, clients = 5, 3
    with open(os.path.join(data, 'server.log'), 'ab') as log:
        for cycle in range(cycles):
            server = start(os.path.join(data, 'db'), port, log)
            connections = [connect(port, f'/presence/c{cycle}-{n}') for n in range(clients)]
            server.terminate()
            code = server.wait(timeout=15)
            assert code == 0, f'hearth exited with {code} on SIGTERM'
            for _, reader in connections:
                opcode, _ = receive_frame(reader)
                assert opcode == 0x8, f'expected a close frame on shutdown, got opcode {opcode}'
        server = start(os.path.join(data, 'db'), port, log)
        try:
            with urllib.request.urlopen(f'http://127.0.0.1:{port}/presence.json?ns=demo') as response:
                stored = json.loads(response.read()) or {}
        finally:
            server.terminate()
            server.wait(timeout=15)
    expected = {f'c{cycle}-{n}': 'offline' for cycle in range(cycles) for n in range(clients)}
    missing = sorted(set(expected) - set(stored))
    assert stored == expected, f'onDisconnect writes lost across SIGTERM restarts: {missing} (data and log kept in {data})'
    shutil.rmtree(data)
    print(f'PASS: {cycles} SIGTERM restarts with {clients} WebSocket clients each: every client got a close '
          'frame, hearth exited 0, and every onDisconnect write survived')


def connect(port, path):
    """A WebSocket client that has registered `path = "offline"` for when it disconnects."""
    sock = socket.create_connection(('127.0.0.1', port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f'GET /.ws?v=5&ns=demo HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n'
                  f'Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n').encode())
    reader = sock.makefile('rb')
    status = reader.readline()
    assert b' 101 ' in status, f'upgrade refused: {status!r}'
    while reader.readline() not in (b'\r\n', b''):
        pass
    _, handshake = receive_frame(reader)
    assert json.loads(handshake)['d']['t'] == 'h', handshake
    send_frame(sock, json.dumps({'t': 'd', 'd': {'r': 1, 'a': 'o', 'b': {'p': path, 'd': 'offline'}}}))
    _, reply = receive_frame(reader)
    assert json.loads(reply)['d']['b']['s'] == 'ok', reply
    return sock, reader


if __name__ == '__main__':
    main()
