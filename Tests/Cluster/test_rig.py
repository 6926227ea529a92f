"""The rig's own controls do what the fault tests believe they do (in either mode)."""
import socket
import time
import urllib.parse

import pytest

from clients import rest

NS = "rigcheck"


def answers(url, timeout=1.0):
    parts = urllib.parse.urlsplit(url)
    try:
        with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(b"GET /.well-known/jwks.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            return s.recv(12).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def test_kill_and_start_keep_port_and_data(rig):
    name = "node1"
    status, _, _ = rest(rig.url, "PUT", "/kept", rig.admin_secret, NS, "yes")
    assert status == 200
    old_pid, url = rig.pid(name), rig.node_url(name)
    rig.kill(name)
    assert rig.pid(name) is None and not answers(url)
    rig.wait_proxy_sees(name, up=False)
    rig.start_node(name)
    assert rig.pid(name) not in (None, old_pid) and rig.node_url(name) == url and answers(url)
    rig.wait_proxy_sees(name, up=True)
    assert rest(url, "GET", "/kept", rig.admin_secret, NS)[2] == "yes"


def test_pause_and_resume(rig):
    url = rig.node_url("node1")
    rig.pause("node1")
    try:
        assert not answers(url, timeout=1.0), "a stopped node answered"
    finally:
        rig.resume("node1")
    assert answers(url, timeout=5.0)


def test_drain_and_undrain_through_the_admin_socket(rig):
    before = rig.proxy_sessions_total()["node1"]
    assert rest(rig.url, "GET", "/x", rig.admin_secret, NS)[0] == 200
    assert rig.proxy_sessions_total()["node1"] >= before + (1 if rig.single else 0)
    rig.drain("node1")
    assert "admin=8" in rig.proxy_server_states()["node1"]  # SRV_ADMF_DRAIN
    rig.shutdown_sessions("node1")
    rig.undrain("node1")
    assert "admin=0" in rig.proxy_server_states()["node1"]


@pytest.mark.multinode
def test_postgres_restart_and_owner_lookup(rig):
    assert rest(rig.url, "PUT", "/x", rig.admin_secret, NS, 1)[0] == 200
    assert rig.owner(NS) in rig.nodes
    rig.restart_postgres()
    deadline = time.monotonic() + 30
    while True:
        try:
            if rest(rig.url, "PUT", "/x", rig.admin_secret, NS, 2)[0] == 200:
                break
        except OSError:
            pass
        assert time.monotonic() < deadline, "no write accepted within 30 s of a PostgreSQL restart"
        time.sleep(0.2)
