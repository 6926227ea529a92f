"""Fixtures of the Emulator Suite suite: the real `hearth` binary as a drop-in for the Firebase
Emulator Suite (issue 28, docs/specs/emulator-suite.md).

Servers are started in the emulator mode, from a Firebase project directory as `firebase init
emulators` leaves it, usually with the project directory as the working directory (so the default
pick-up of `firebase.json` is what is tested):

    cd PROJECT && hearth serve --emulator --data DIR [--import EXPORT] [--export-on-exit[=DIR]]

`firebase.json` names free ports (hearth_process.free_port()), never the emulators' defaults, and a
server is used only once /readyz answers 200 on every port it names. Each module starts the servers
it needs (module-scoped where the tests do not disturb each other); the rules-unit-testing module
also starts one server in the default mode (admin secret set) to see the control endpoints absent.
Nothing is skipped: a missing binary fails the run.

Environment:
    HEARTH_BIN               the binary (default: <repo>/.build/debug/hearth). Missing: the run FAILS.
    HEARTH_STARTUP_TIMEOUT   seconds to wait for a server (default 60).
    HEARTH_SERVE_ARGS        more `hearth serve` options for every server started (not for --in-memory ones).

Project directories, data directories, exports and each server's stdout.log/stderr.log are kept in
pytest's temporary directories (the last three runs), to look at after a failure.
"""

import pytest

import emulator_support as support


@pytest.fixture(scope='session', autouse=True)
def hearth_binary():
    """Fails the session at once when there is no binary (instead of every test failing on its own)."""
    return support.binary()


@pytest.fixture(scope='session')
def seed(tmp_path_factory):
    """The worked-example export of spec §2.7, written once; servers only read it."""
    return support.write_worked_example(tmp_path_factory.mktemp('seed-export'))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    del config
    if exitstatus != 0 and support.SERVER_LOGS:
        terminalreporter.section('hearth server logs (tails)')
        for command, tail in support.SERVER_LOGS[-12:]:
            terminalreporter.write_line(f'$ hearth {command}')
            terminalreporter.write_line(tail)
    if support.hearth_process.STATE['sigterm_ignored']:
        terminalreporter.write_line('NOTE: a hearth server did not exit within 10 s of SIGTERM and was killed.')
