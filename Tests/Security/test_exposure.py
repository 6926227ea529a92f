"""Issue 25, "also seen": the reference apps stay off on a public interface unless asked for;
admin-secret guesses are throttled per client address; the console's sign-in lock is per address,
so an attacker's guesses do not lock the real admin out.

The second client address is 127.0.0.2 (Linux routes all of 127/8 to loopback): a connection from
there is another client as far as the server can tell.
"""

import json

import pytest
import requests

import security_support as support
from security_support import ADMIN_SECRET, ANOTHER_ADDRESS, TIMEOUT

PROFILE = {'id': 1, 'gender': 'female', 'name': 'Eve', 'age': 30}


def anonymous_profile_write(server):
    return requests.put(server.url('/profiles/p1.json'), params={'ns': 'profiles'}, data=json.dumps(PROFILE),
                        timeout=TIMEOUT)


# ───────────────────────────── reference apps ─────────────────────────────

def test_reference_apps_are_off_on_a_public_interface():
    with support.running_server(host='0.0.0.0', name='public') as server:
        page = requests.get(server.url('/apps/profiles/'), timeout=TIMEOUT)
        assert page.status_code == 404, page.status_code
        write = anonymous_profile_write(server)
        assert write.status_code == 401, (write.status_code, write.text)
        assert write.json() == {'error': 'Permission denied'}


def test_reference_apps_on_a_public_interface_when_asked_for():
    with support.running_server('--reference-apps', host='0.0.0.0', name='public-apps') as server:
        page = requests.get(server.url('/apps/profiles/'), timeout=TIMEOUT)
        assert page.status_code == 200, page.status_code
        write = anonymous_profile_write(server)
        assert write.status_code == 200, (write.status_code, write.text)


def test_reference_apps_are_on_for_a_loopback_host(server):
    page = requests.get(server.url('/apps/profiles/'), timeout=TIMEOUT)
    assert page.status_code == 200, page.status_code
    write = anonymous_profile_write(server)
    assert write.status_code == 200, (write.status_code, write.text)


# ───────────────────────────── admin-secret guesses ─────────────────────────────

@pytest.fixture
def own_server():
    """A server of this test alone: its per-address state is not shared with the other tests."""
    with support.running_server(name='throttle') as server:
        yield server


def test_admin_secret_guesses_are_throttled_per_address(own_server):
    root = own_server.url('/.json')
    with requests.Session() as attacker:
        for guess in range(15):
            wrong = attacker.get(root, params={'ns': support.NAMESPACE, 'auth': f'wrong-secret-{guess}'}, timeout=TIMEOUT)
            assert wrong.status_code in (401, 429), wrong.text
        right = attacker.get(root, params={'ns': support.NAMESPACE, 'auth': ADMIN_SECRET}, timeout=TIMEOUT)
        assert right.status_code == 429, (right.status_code, right.text[:300])
    # Another address is not affected.
    with support.session_from(ANOTHER_ADDRESS) as other:
        fine = other.get(root, params={'ns': support.NAMESPACE, 'auth': ADMIN_SECRET}, timeout=TIMEOUT)
        assert fine.status_code == 200, (fine.status_code, fine.text[:300])


# ───────────────────────────── the console's sign-in lock ─────────────────────────────

def console_sign_in(session, server, secret):
    return session.post(server.url('/.console/session'), data=json.dumps({'secret': secret}),
                        headers={'Content-Type': 'application/json'}, timeout=TIMEOUT)


def test_console_sign_in_lock_is_per_address(own_server):
    with support.session_from(ANOTHER_ADDRESS) as attacker:
        answers = [console_sign_in(attacker, own_server, f'guess-{i}').status_code for i in range(20)]
        assert set(answers) <= {401, 429}, answers
        # The guessing address is locked: even the right secret is refused there for now.
        locked = console_sign_in(attacker, own_server, ADMIN_SECRET)
        assert locked.status_code == 429, (locked.status_code, locked.text)
    # The real admin, from another address, signs in.
    with requests.Session() as admin:
        signed_in = console_sign_in(admin, own_server, ADMIN_SECRET)
        assert signed_in.status_code == 200, (signed_in.status_code, signed_in.text)
        assert signed_in.json().get('token')
