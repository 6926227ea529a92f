"""Equivalent of the official firebase-admin-python db integration suite.

Upstream runs `integration/test_db.py` against the official RTDB emulator
(`firebase emulators:exec --only database --project fake-project-id 'pytest integration/test_db.py'`).
The PyPI sdist of firebase-admin (checked for 7.7.0 and 6.9.0) ships neither
`integration/` nor `tests/data/dinosaurs*.json`, and CI can only reach PyPI and
Debian, so the official file cannot be run here. This module re-implements the
checks that suite makes, in the same order and with the same request shapes, as
listed in rest-and-rules.md section 8.1:

* namespace `fake-project-id` (databaseURL https://fake-project-id.firebaseio.com,
  FIREBASE_DATABASE_EMULATOR_HOST pointing at hearth),
* rules fetched with `GET /.settings/rules.json?format=strict` and replaced by
  `PUT /.settings/rules.json` when they differ,
* data at `_adminsdk/python/dinodb`, users pushed under `_adminsdk/python/users`,
* auth-override apps (`{"uid": "user1"}` and `None`) against the protected/admin/public rules.

The dinosaur values are our own (dino_data.py) but satisfy the same expected results.
"""

import collections
import threading
import time

import pytest

import firebase_admin
from firebase_admin import db
from firebase_admin import exceptions

import dino_data
import harness

OFFICIAL_DATABASE_URL = 'https://fake-project-id.firebaseio.com'

OFFICIAL_RULES = {
    '_adminsdk': {
        'python': {
            'dinodb': dino_data.index_rules(),
            'protected': {
                '$uid': {
                    '.read': 'auth != null',
                    '.write': '$uid === auth.uid',
                },
            },
            'admin': {'.read': 'false', '.write': 'false'},
            'public': {'.read': 'true'},
        },
    },
}


@pytest.fixture(scope='module')
def app(hearth_server):
    del hearth_server
    the_app = harness.make_app('official-integration-db', OFFICIAL_DATABASE_URL)
    yield the_app
    firebase_admin.delete_app(the_app)


@pytest.fixture(scope='module')
def update_rules(app):
    """Same requests as upstream: GET rules with format=strict, PUT them back if different."""
    client = db.reference('', app)._client
    rules = client.body('get', '/.settings/rules.json', params='format=strict')
    assert isinstance(rules, dict) and 'rules' in rules, rules
    if rules.get('rules') != OFFICIAL_RULES:
        rules['rules'] = OFFICIAL_RULES
        client.request('put', '/.settings/rules.json', json=rules)
    assert client.body('get', '/.settings/rules.json', params='format=strict') == {
        'rules': OFFICIAL_RULES}


@pytest.fixture(scope='module')
def testdata():
    return dino_data.DINODB


@pytest.fixture(scope='module')
def testref(update_rules, testdata, app):
    del update_rules
    ref = db.reference('_adminsdk/python/dinodb', app)
    ref.set(testdata)
    return ref


class TestReferenceAttributes:

    def test_ref_attributes(self, testref):
        assert testref.key == 'dinodb'
        assert testref.path == '/_adminsdk/python/dinodb'

    def test_child(self, testref):
        child = testref.child('dinosaurs')
        assert child.key == 'dinosaurs'
        assert child.path == '/_adminsdk/python/dinodb/dinosaurs'

    def test_parent(self, testref):
        assert testref.parent.key == 'python'
        assert testref.parent.path == '/_adminsdk/python'


class TestReadOperations:

    def test_get_value(self, testref, testdata):
        value = testref.get()
        assert isinstance(value, dict)
        assert value == testdata

    def test_get_value_and_etag(self, testref, testdata):
        value, etag = testref.get(etag=True)
        assert value == testdata
        assert isinstance(etag, str)

    def test_get_shallow(self, testref):
        assert testref.get(shallow=True) == {'dinosaurs': True, 'scores': True}

    def test_get_if_changed(self, testref, testdata):
        success, data, etag = testref.get_if_changed('wrong_etag')
        assert success is True
        assert data == testdata
        assert isinstance(etag, str)
        assert testref.get_if_changed(etag) == (False, None, None)

    def test_get_child_value(self, testref, testdata):
        value = testref.child('dinosaurs').get()
        assert isinstance(value, dict)
        assert value == testdata['dinosaurs']

    def test_get_grandchild_value(self, testref, testdata):
        value = testref.child('dinosaurs').child('lambeosaurus').get()
        assert value == testdata['dinosaurs']['lambeosaurus']

    def test_get_nonexisting_child_value(self, testref):
        assert testref.child('none_existing').get() is None


class TestWriteOperations:

    def test_push(self, testref):
        ref = testref.parent.child('users').push()
        assert ref.path == '/_adminsdk/python/users/' + ref.key
        assert ref.get() == ''

    def test_push_with_value(self, testref):
        value = {'name': 'Luis Alvarez', 'since': 1911}
        ref = testref.parent.child('users').push(value)
        assert ref.path == '/_adminsdk/python/users/' + ref.key
        assert ref.get() == value

    def test_set_primitive_value(self, testref):
        ref = testref.parent.child('users').push()
        ref.set('value')
        assert ref.get() == 'value'

    def test_set_complex_value(self, testref):
        value = {'name': 'Mary Anning', 'since': 1799}
        ref = testref.parent.child('users').push()
        ref.set(value)
        assert ref.get() == value

    def test_update_children(self, testref):
        value = {'name': 'Robert Bakker', 'since': 1945}
        ref = testref.parent.child('users').push()
        ref.update(value)
        assert ref.get() == value

    def test_update_children_with_existing_values(self, testref):
        value = {'name': 'Edwin Colbert', 'since': 1900, 'temp': True}
        ref = testref.parent.child('users').push(value)
        ref.update({'since': 1905})
        value['since'] = 1905
        assert ref.get() == value
        ref.update({'temp': None})
        del value['temp']
        assert ref.get() == value

    def test_update_nested_children(self, testref):
        users = testref.parent.child('users')
        edward = users.push({'name': 'Edward Cope', 'since': 1800})
        jack = users.push({'name': 'Jack Horner', 'since': 1940})
        users.update({f'{edward.key}/since': 1840, f'{jack.key}/since': 1946})
        assert edward.get() == {'name': 'Edward Cope', 'since': 1840}
        assert jack.get() == {'name': 'Jack Horner', 'since': 1946}

    def test_set_if_unchanged(self, testref):
        push_data = {'name': 'Edward Cope', 'since': 1800}
        edward = testref.parent.child('users').push(push_data)
        update_data = {'name': 'Jack Horner', 'since': 1940}
        success, data, etag = edward.set_if_unchanged('invalid-etag', update_data)
        assert success is False
        assert data == push_data
        assert isinstance(etag, str)
        success, data, new_etag = edward.set_if_unchanged(etag, update_data)
        assert success is True
        assert data == update_data
        assert new_etag != etag

    def test_transaction(self, testref):
        def transaction_update(snapshot):
            snapshot['name'] += ' Owen'
            snapshot['since'] = 1804
            return snapshot
        ref = testref.parent.child('users').push({'name': 'Richard'})
        expected = {'name': 'Richard Owen', 'since': 1804}
        assert ref.transaction(transaction_update) == expected
        assert ref.get() == expected

    def test_transaction_scalar(self, testref):
        ref = testref.parent.child('users/count')
        ref.set(42)
        assert ref.transaction(lambda x: x + 1 if x else 1) == 43
        assert ref.get() == 43

    def test_delete(self, testref):
        ref = testref.parent.child('users').push('foo')
        assert ref.get() == 'foo'
        ref.delete()
        assert ref.get() is None


class TestListenOperations:

    def test_listen(self, testref):
        events = []
        python = testref.parent
        registration = python.listen(events.append)
        try:
            ref = python.child('users').push()
            assert ref.path == '/_adminsdk/python/users/' + ref.key
            assert ref.get() == ''
            deadline = time.time() + 30  # generous: only matters when something is broken
            while len(events) < 2 and time.time() < deadline:
                time.sleep(0.01)
            assert len(events) == 2, [(e.event_type, e.path) for e in events]
            assert events[0].event_type == 'put'
            assert events[0].path == '/'
            assert events[1].event_type == 'put'
            assert events[1].path == '/users/' + ref.key
            assert events[1].data == ''
        finally:
            # Upstream calls registration.close() directly. That call returns only once the
            # server sends another byte on the stream (a keep-alive, ~every 30 s), so a
            # server without keep-alives would hang the upstream suite forever.
            closer = threading.Thread(target=registration.close, daemon=True)
            closer.start()
            closer.join(45)
            assert not closer.is_alive(), (
                'ListenerRegistration.close() still blocked after 45 s: the server sent '
                'nothing (no keep-alive) on the idle stream')


class TestAdvancedQueries:

    height_sorted = dino_data.HEIGHT_SORTED

    def test_order_by_key(self, testref):
        value = testref.child('dinosaurs').order_by_key().get()
        assert isinstance(value, collections.OrderedDict)
        assert list(value.keys()) == dino_data.KEY_SORTED

    def test_order_by_value(self, testref):
        value = testref.child('scores').order_by_value().get()
        assert list(value.keys()) == dino_data.SCORE_SORTED

    def test_order_by_child(self, testref):
        value = testref.child('dinosaurs').order_by_child('height').get()
        assert list(value.keys()) == self.height_sorted

    def test_limit_first(self, testref):
        value = testref.child('dinosaurs').order_by_child('height').limit_to_first(2).get()
        assert list(value.keys()) == self.height_sorted[:2]

    def test_limit_first_all(self, testref):
        value = testref.child('dinosaurs').order_by_child('height').limit_to_first(10).get()
        assert list(value.keys()) == self.height_sorted

    def test_limit_last(self, testref):
        value = testref.child('dinosaurs').order_by_child('height').limit_to_last(2).get()
        assert list(value.keys()) == self.height_sorted[-2:]

    def test_limit_last_all(self, testref):
        value = testref.child('dinosaurs').order_by_child('height').limit_to_last(10).get()
        assert list(value.keys()) == self.height_sorted

    def test_start_at(self, testref):
        value = testref.child('dinosaurs').order_by_child('height').start_at(3.5).get()
        assert list(value.keys()) == self.height_sorted[-2:]

    def test_end_at(self, testref):
        value = testref.child('dinosaurs').order_by_child('height').end_at(3.5).get()
        assert list(value.keys()) == self.height_sorted[:4]

    def test_start_and_end_at(self, testref):
        value = testref.child('dinosaurs').order_by_child('height').start_at(2.5).end_at(5).get()
        assert list(value.keys()) == self.height_sorted[-3:-1]

    def test_equal_to(self, testref):
        value = testref.child('dinosaurs').order_by_child('height').equal_to(0.6).get()
        assert list(value.keys()) == self.height_sorted[:2]

    def test_order_by_nested_child(self, testref):
        value = testref.child('dinosaurs').order_by_child('ratings/pos').start_at(4).get()
        assert len(value) == 3
        assert set(value) == {'pterodactyl', 'stegosaurus', 'triceratops'}

    def test_filter_by_key(self, testref):
        value = testref.child('dinosaurs').order_by_key().limit_to_first(2).get()
        assert set(value) == {'bruhathkayosaurus', 'lambeosaurus'}

    def test_filter_by_value(self, testref):
        value = testref.child('scores').order_by_value().limit_to_last(2).get()
        assert set(value) == {'pterodactyl', 'linhenykus'}


@pytest.fixture(scope='module')
def override_app(update_rules):
    del update_rules
    the_app = harness.make_app('db-override', OFFICIAL_DATABASE_URL,
                                databaseAuthVariableOverride={'uid': 'user1'})
    yield the_app
    firebase_admin.delete_app(the_app)


@pytest.fixture(scope='module')
def none_override_app(update_rules):
    del update_rules
    the_app = harness.make_app('db-none-override', OFFICIAL_DATABASE_URL,
                                databaseAuthVariableOverride=None)
    yield the_app
    firebase_admin.delete_app(the_app)


def _assert_denied(action):
    with pytest.raises(exceptions.UnauthenticatedError) as excinfo:
        action()
    assert str(excinfo.value) == 'Permission denied'


class TestAuthVariableOverride:

    @staticmethod
    def init_ref(path, app):
        admin_ref = db.reference(path, app)
        admin_ref.set('test')
        assert admin_ref.get() == 'test'

    def test_no_access(self, app, override_app):
        path = '_adminsdk/python/admin'
        self.init_ref(path, app)
        user_ref = db.reference(path, override_app)
        _assert_denied(user_ref.get)
        _assert_denied(lambda: user_ref.set('test2'))

    def test_read(self, app, override_app):
        path = '_adminsdk/python/protected/user2'
        self.init_ref(path, app)
        user_ref = db.reference(path, override_app)
        assert user_ref.get() == 'test'
        _assert_denied(lambda: user_ref.set('test2'))

    def test_read_write(self, app, override_app):
        path = '_adminsdk/python/protected/user1'
        self.init_ref(path, app)
        user_ref = db.reference(path, override_app)
        assert user_ref.get() == 'test'
        user_ref.set('test2')
        assert user_ref.get() == 'test2'

    def test_query(self, override_app):
        user_ref = db.reference('_adminsdk/python/protected', override_app)
        _assert_denied(lambda: user_ref.order_by_key().limit_to_first(2).get())

    def test_none_auth_override(self, app, none_override_app):
        path = '_adminsdk/python/public'
        self.init_ref(path, app)
        public_ref = db.reference(path, none_override_app)
        assert public_ref.get() == 'test'
        ref = db.reference('_adminsdk/python', none_override_app)
        _assert_denied(lambda: ref.child('protected/user1').get())
        _assert_denied(lambda: ref.child('protected/user2').get())
        _assert_denied(lambda: ref.child('admin').get())
