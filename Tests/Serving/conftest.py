"""Fixtures of the serving suite: the real `hearth` binary serving TLS itself, its health and
readiness endpoints, its drain, and its logs (issue 27).

Certificates are made here with the `openssl` command, once per session: for each key type (ECDSA
P-256 and RSA-2048) a throwaway root CA, an intermediate under it, and two server certificates for
`localhost` and `127.0.0.1` under the intermediate (`server`, and `renewed` with another key and
serial, for the SIGHUP tests). A server is given the full chain (leaf, then the intermediate);
clients trust the root alone.

The session's servers, started side by side, in the default mode (admin secret from
HEARTH_ADMIN_SECRET, locked databases):

    hearth serve --host 127.0.0.1 --port P --data DIR --project serving-project \
        --tls-cert DIR/cert.pem --tls-key DIR/key.pem       (one ECDSA, one RSA)
    hearth serve --host 127.0.0.1 --port P --data DIR --project serving-project   (plain HTTP)

They serve the checks that change nothing shared; the tests of reload, drain and logs start their
own. Nothing is skipped: a missing binary or `openssl` fails the run.

Environment:
    HEARTH_BIN               the binary (default: <repo>/.build/debug/hearth). Missing: the run FAILS.
    HEARTH_STARTUP_TIMEOUT   seconds to wait for a server (default 60).
    HEARTH_SERVE_ARGS        more `hearth serve` options for every server started.
    HEARTH_KEEP_TMP          keep the servers' directories, logs and the certificates.
"""

import concurrent.futures
import os
import shutil
import tempfile

import pytest

import serving_support as support


class Certificates:
    """One key type's CA and its two server certificates."""

    def __init__(self, pki):
        self.pki = pki
        self.ca = pki.root
        self.server = pki.issue('server')
        self.renewed = pki.issue('renewed')


@pytest.fixture(scope='session')
def certificates():
    directory = tempfile.mkdtemp(prefix='hearth-serving-pki-')
    try:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            ecdsa, rsa = pool.map(lambda algorithm: Certificates(support.PKI(os.path.join(directory, algorithm), algorithm)),
                                  ('ecdsa', 'rsa'))
        yield {'ecdsa': ecdsa, 'rsa': rsa}
    finally:
        if not os.environ.get('HEARTH_KEEP_TMP'):
            shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope='session')
def servers(certificates):
    """The shared servers: 'ecdsa' and 'rsa' (TLS), 'plain' (HTTP), started in parallel."""
    plans = {
        'ecdsa': dict(tls=certificates['ecdsa'].server, ca=certificates['ecdsa'].ca, name='ecdsa'),
        'rsa': dict(tls=certificates['rsa'].server, ca=certificates['rsa'].ca, name='rsa'),
        'plain': dict(name='plain'),
    }
    started = {}
    try:
        with concurrent.futures.ThreadPoolExecutor(len(plans)) as pool:
            futures = {name: pool.submit(support.start_server, **plan) for name, plan in plans.items()}
            errors = []
            for name, future in futures.items():
                try:
                    started[name] = future.result()
                except BaseException as error:  # pytest.fail's exception, from a thread
                    errors.append(error)
            if errors:
                raise errors[0]
        yield started
    finally:
        for server in started.values():
            support.stop_server(server)


@pytest.fixture(scope='session')
def tls_server(servers):
    return servers['ecdsa']


@pytest.fixture(scope='session')
def plain_server(servers):
    return servers['plain']


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    del config
    if exitstatus != 0 and support.SERVER_LOGS:
        terminalreporter.section('hearth server logs (tails)')
        for command, tail in support.SERVER_LOGS:
            terminalreporter.write_line(f'$ hearth {command}')
            terminalreporter.write_line(tail)
    if support.hearth_process.STATE['sigterm_ignored']:
        terminalreporter.write_line('NOTE: a hearth server did not exit within 10 s of SIGTERM and was killed.')
