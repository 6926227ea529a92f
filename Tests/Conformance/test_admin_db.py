"""Conformance suite: firebase_admin.db (and raw REST) against `hearth serve --emulator`.

Spec references are to /work/shared/docs/rest-and-rules.md.
Every test writes below its own unique path (fixture `unique_path`), except the
read-only query tests, which share the dinosaur data at DINO_PATH.
"""

import collections
import json
import threading
import time
import uuid

import pytest
import requests

from firebase_admin import db
from firebase_admin import exceptions

import dino_data
from harness import Rest

DINO_PATH = 'conformance/dinodb'
PUSH_CHARS = '-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz'
EVENT_TIMEOUT = 30  # generous: only matters when something is really broken

# One rules document for this module, installed once (section 5.6), before any query.
RULES = {
    '.read': True,
    '.write': True,
    'conformance': {
        'dinodb': dino_data.index_rules(),
        'ordering': {
            'types': {'.indexOn': 'v'},
            'strings': {'.indexOn': '.value'},
        },
        'wild': {'$case': {'.indexOn': ['v']}},
    },
}


# --------------------------------------------------------------------------------------
# helpers


def ref_at(app, path):
    return db.reference(path, app)


class EventCollector:
    """Listener callback that records (event_type, path, data) and lets tests wait."""

    def __init__(self):
        self.events = []
        self._cond = threading.Condition()

    def __call__(self, event):
        with self._cond:
            self.events.append((event.event_type, event.path, event.data))
            self._cond.notify_all()

    def wait_for(self, count, timeout=EVENT_TIMEOUT):
        deadline = time.time() + timeout
        with self._cond:
            while len(self.events) < count:
                remaining = deadline - time.time()
                if remaining <= 0:
                    pytest.fail(f'timed out after {timeout}s waiting for {count} events; '
                                f'got {self.events!r}')
                self._cond.wait(remaining)
            return list(self.events)

    def barrier(self, ref, timeout=EVENT_TIMEOUT):
        """Returns everything received once every event of the writes made so far has arrived (to check
        that there are no extra events), without sleeping: writes a marker under the listened location
        `ref` and waits for its event, since a stream delivers events in commit order. The marker's
        event is then forgotten, so later indices are unchanged."""
        marker = f'~barrier-{uuid.uuid4().hex}'
        ref.child(marker).set(True)
        deadline = time.time() + timeout
        with self._cond:
            while not any(event[1] == '/' + marker for event in self.events):
                remaining = deadline - time.time()
                if remaining <= 0:
                    pytest.fail(f'timed out after {timeout}s waiting for the barrier event; got {self.events!r}')
                self._cond.wait(remaining)
            self.events = [event for event in self.events if event[1] != '/' + marker]
            return list(self.events)


def start_listener(ref, callback, timeout=EVENT_TIMEOUT):
    """ref.listen(callback), failing instead of hanging if the stream never opens."""
    result = {}

    def run():
        try:
            result['reg'] = ref.listen(callback)
        except Exception as error:  # pylint: disable=broad-except
            result['error'] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        pytest.fail(f'listen() on {ref.path} did not return within {timeout}s '
                    '(no response headers for the text/event-stream GET?)')
    if 'error' in result:
        raise result['error']
    return result['reg']


def close_listener(registration, poke_ref, timeout=EVENT_TIMEOUT):
    """Closes a listener without waiting for the server's next keep-alive.

    ListenerRegistration.close() closes the response and joins the reader thread, but
    that thread stays blocked in recv() until the server sends more bytes (normally a
    keep-alive, ~30 s). A write below the listened location (`poke_ref`) wakes it at once.
    """
    thread = threading.Thread(target=registration.close, daemon=True)
    thread.start()
    thread.join(0.2)
    if thread.is_alive():
        poke_ref.child('_close_poke').set(True)
    thread.join(timeout)
    assert not thread.is_alive(), 'ListenerRegistration.close() did not return'


def push_id_time_ms(push_id):
    value = 0
    for char in push_id[:8]:
        value = value * 64 + PUSH_CHARS.index(char)
    return value


# --------------------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope='module')
def dino(fb_app, rest):
    """Installs RULES (with .indexOn) and writes the dinosaur data; returns its Reference."""
    resp = rest.put_rules(RULES)
    assert resp.status_code == 200, (
        f'PUT /.settings/rules.json -> {resp.status_code} {resp.text!r}')
    ref = ref_at(fb_app, DINO_PATH)
    ref.set(dino_data.DINODB)
    return ref


# --------------------------------------------------------------------------------------
# set / get of every kind of value (sections 1.4, 1.5, 2.2, 2.3)

VALUE_CASES = [
    ('int', 25),
    ('zero', 0),
    ('negative_int', -70000000),
    ('float_0_6', 0.6),
    ('float_2_1', 2.1),
    ('negative_float', -1.5),
    ('float_sum', 0.1 + 0.2),
    ('large_int', 9007199254740992),
    ('max_double', 1.7976931348623157e308),
    ('min_subnormal', 5e-324),
    ('small_float', 1e-7),
    ('big_exponent', 1e21),
    ('true', True),
    ('false', False),
    ('string', 'hello'),
    ('empty_string', ''),
    ('unicode_string', 'h\u00e9llo w\u00f6rld \u2713 \u65e5\u672c\u8a9e \U0001F996'),
    ('escapes', 'quote " backslash \\ slash / newline \n tab \t ctrl \x01 del \x7f'),
    ('nested', {
        'name': 'Stego', 'height': 4, 'ratio': 0.6, 'alive': False,
        'tags': {'a': True, 'b': 'x'},
        'deep': {'l1': {'l2': {'l3': {'l4': -70000000}}}},
    }),
    ('unicode_keys', {'\u043a\u043b\u044e\u0447': 1, '\u65e5\u672c': {'\u6df1\u3044': True},
                      'emoji\U0001F996': 'x', 'with space': 2, 'percent%20': 3}),
    ('array', ['a', 'b', 'c']),
    ('array_of_objects', [{'x': 1}, {'x': 2}]),
]


@pytest.mark.parametrize('value', [v for _, v in VALUE_CASES], ids=[n for n, _ in VALUE_CASES])
def test_set_get_value_kinds(fb_app, unique_path, value):
    ref = ref_at(fb_app, unique_path)
    ref.set(value)
    got = ref.get()
    assert got == value
    assert type(got) is type(value)  # 25 must come back as int, not 25.0


def test_set_overwrites_and_get_children(fb_app, unique_path):
    ref = ref_at(fb_app, unique_path)
    ref.set({'a': {'b': 1, 'c': 2}, 'd': 'x'})
    ref.set({'a': {'z': 0}})
    assert ref.get() == {'a': {'z': 0}}
    assert ref.child('a').get() == {'z': 0}
    assert ref.child('a/z').get() == 0
    assert ref.child('d').get() is None
    assert ref.child('missing/deeper').get() is None


def test_null_children_are_dropped_and_empty_object_deletes(fb_app, unique_path):
    ref = ref_at(fb_app, unique_path)
    ref.set({'a': 1, 'b': None, 'c': {'d': None}})
    assert ref.get() == {'a': 1}
    ref.set({})
    assert ref.get() is None


def test_write_below_leaf_replaces_leaf(fb_app, unique_path):
    ref = ref_at(fb_app, unique_path)
    ref.set('leaf')
    ref.child('x/y').set(1)
    assert ref.get() == {'x': {'y': 1}}


def test_unicode_and_space_in_path(fb_app, unique_path):
    ref = ref_at(fb_app, unique_path)
    ref.child('with space').set(1)
    ref.child('\u043a\u043b\u044e\u0447').set('\u65e5\u672c')
    ref.child('emoji\U0001F996').set(True)
    assert ref.get() == {'with space': 1, '\u043a\u043b\u044e\u0447': '\u65e5\u672c',
                         'emoji\U0001F996': True}
    assert ref.child('\u043a\u043b\u044e\u0447').get() == '\u65e5\u672c'


def test_array_rendering(fb_app, unique_path):
    """Section 2.3: integer-keyed objects render as arrays when dense enough."""
    ref = ref_at(fb_app, unique_path)
    ref.set({'0': 'a', '1': 'b', '2': 'c'})
    assert ref.get() == ['a', 'b', 'c']
    ref.set({'1': 'x'})
    assert ref.get() == [None, 'x']
    ref.set({'5': 'x'})
    assert ref.get() == {'5': 'x'}
    ref.set(['a', None, 'c'])
    assert ref.get() == ['a', None, 'c']
    assert ref.child('1').get() is None
    assert ref.child('2').get() == 'c'


def test_server_values(fb_app, unique_path):
    """Section 2.2: {".sv": "timestamp"} and {".sv": {"increment": n}}."""
    ref = ref_at(fb_app, unique_path)
    before = int(time.time() * 1000)
    ref.child('ts').set({'.sv': 'timestamp'})
    after = int(time.time() * 1000)
    stamp = ref.child('ts').get()
    assert isinstance(stamp, int)
    assert before - 5000 <= stamp <= after + 5000
    ref.child('n').set(10)
    ref.child('n').set({'.sv': {'increment': 5}})
    assert ref.child('n').get() == 15
    ref.child('m').set({'.sv': {'increment': 2.5}})
    assert ref.child('m').get() == 2.5


# --------------------------------------------------------------------------------------
# ETags (section 1.8)


def test_get_with_etag(fb_app, unique_path):
    ref = ref_at(fb_app, unique_path)
    ref.set({'a': 1})
    data, etag = ref.get(etag=True)
    assert data == {'a': 1}
    assert isinstance(etag, str) and etag
    assert ref.get(etag=True) == (data, etag), 'etag must be stable while data is unchanged'
    ref.set({'a': 1})
    assert ref.get(etag=True)[1] == etag, 'equal values must have equal etags'
    ref.set({'a': 2})
    data2, etag2 = ref.get(etag=True)
    assert data2 == {'a': 2}
    assert etag2 != etag
    ref.child('a').set(1)
    assert ref.get(etag=True)[1] == etag, 'etag must depend on the value only'


def test_etag_of_missing_location_is_null_etag(fb_app, unique_path):
    data, etag = ref_at(fb_app, unique_path).get(etag=True)
    assert data is None
    assert etag == 'null_etag'


def test_get_if_changed(fb_app, unique_path):
    ref = ref_at(fb_app, unique_path)
    ref.set({'name': 'x', 'n': 0.6})
    changed, data, etag = ref.get_if_changed('wrong_etag')
    assert changed is True
    assert data == {'name': 'x', 'n': 0.6}
    assert isinstance(etag, str)
    assert etag == ref.get(etag=True)[1]
    assert ref.get_if_changed(etag) == (False, None, None)
    ref.child('n').set(2.1)
    changed, data, etag2 = ref.get_if_changed(etag)
    assert changed is True
    assert data == {'name': 'x', 'n': 2.1}
    assert etag2 != etag


def test_set_if_unchanged_mismatch_and_match(fb_app, unique_path):
    ref = ref_at(fb_app, unique_path)
    original = {'name': 'Edward Cope', 'since': 1800}
    ref.set(original)
    _, current_etag = ref.get(etag=True)

    success, data, etag = ref.set_if_unchanged('invalid-etag', {'name': 'other'})
    assert success is False
    assert data == original
    assert etag == current_etag
    assert ref.get() == original, 'a failed conditional write must not change data'

    update = {'name': 'Jack Horner', 'since': 1940}
    success, data, new_etag = ref.set_if_unchanged(etag, update)
    assert success is True
    assert data == update
    assert isinstance(new_etag, str) and new_etag != etag
    assert ref.get(etag=True) == (update, new_etag)

    # The old etag is now stale.
    success, data, etag3 = ref.set_if_unchanged(etag, {'x': 1})
    assert (success, data, etag3) == (False, update, new_etag)


def test_set_if_unchanged_create_if_absent(fb_app, unique_path):
    ref = ref_at(fb_app, unique_path)
    success, data, etag = ref.set_if_unchanged('null_etag', 'created')
    assert success is True and data == 'created'
    assert etag == ref.get(etag=True)[1]
    success, data, _ = ref.set_if_unchanged('null_etag', 'again')
    assert success is False and data == 'created'


def test_raw_conditional_requests(rest, unique_path):
    """412 carries the current value and ETag; 304 has no body; DELETE honours if-match."""
    resp = rest.put(unique_path, {'v': 1}, headers={'X-Firebase-ETag': 'true'})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {'v': 1}
    etag = resp.headers.get('ETag')
    assert etag

    resp = rest.get(unique_path, headers={'X-Firebase-ETag': 'true'})
    assert resp.status_code == 200
    assert resp.headers.get('ETag') == etag, 'PUT and GET ETags of the same value differ'

    resp = rest.put(unique_path, {'v': 2}, headers={'if-match': 'bogus'})
    assert resp.status_code == 412, resp.text
    assert resp.json() == {'v': 1}
    assert resp.headers.get('ETag') == etag

    resp = rest.get(unique_path, headers={'if-none-match': etag})
    assert resp.status_code == 304
    assert resp.content == b''

    resp = rest.request('DELETE', unique_path, headers={'if-match': 'bogus'})
    assert resp.status_code == 412, resp.text
    assert resp.json() == {'v': 1}
    assert rest.get(unique_path).json() == {'v': 1}

    resp = rest.request('DELETE', unique_path, headers={'if-match': etag})
    assert resp.status_code == 200, resp.text
    assert rest.get(unique_path).json() is None


def test_conditional_put_is_atomic(rest, unique_path):
    """Section 1.9: many concurrent PUTs with the same if-match: exactly one wins."""
    rest.put(unique_path, 0)
    etag = rest.get(unique_path, headers={'X-Firebase-ETag': 'true'}).headers['ETag']
    contenders = 8
    barrier = threading.Barrier(contenders)
    statuses = []
    lock = threading.Lock()

    def contend(i):
        session = requests.Session()
        barrier.wait()
        resp = session.put(rest.url(unique_path), params={'ns': rest.ns},
                           data=json.dumps(i + 1),
                           headers={'Authorization': 'Bearer owner', 'if-match': etag},
                           timeout=20)
        with lock:
            statuses.append((resp.status_code, i + 1))

    threads = [threading.Thread(target=contend, args=(i,)) for i in range(contenders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    winners = [v for status, v in statuses if status == 200]
    assert sorted(s for s, _ in statuses) == [200] + [412] * (contenders - 1), statuses
    assert rest.get(unique_path).json() == winners[0]


# --------------------------------------------------------------------------------------
# push (sections 1.4, 1.11)


def test_push_ids(fb_app, unique_path):
    ref = ref_at(fb_app, unique_path)
    now_ms = int(time.time() * 1000)
    children = [ref.push(i) for i in range(15)]
    keys = [c.key for c in children]
    for key in keys:
        assert len(key) == 20, key
        assert all(ch in PUSH_CHARS for ch in key), key
        assert abs(push_id_time_ms(key) - now_ms) < 60000, f'{key}: timestamp prefix is off'
    assert len(set(keys)) == len(keys)
    assert keys == sorted(keys), 'push ids must sort in creation order'
    assert children[0].path == f'/{unique_path}/{keys[0]}'
    assert ref.get() == {k: i for i, k in enumerate(keys)}
    assert list(ref.order_by_key().get().values()) == list(range(15))


def test_push_default_and_values(fb_app, unique_path):
    ref = ref_at(fb_app, unique_path)
    empty = ref.push()
    assert empty.get() == ''
    obj = ref.push({'name': 'Luis Alvarez', 'since': 1911})
    assert obj.get() == {'name': 'Luis Alvarez', 'since': 1911}
    num = ref.push(0.6)
    assert num.get() == 0.6


def test_raw_post_response(rest, unique_path):
    resp = rest.request('POST', unique_path, json_body={'a': 1})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert set(body) == {'name'} and len(body['name']) == 20
    assert rest.get(f'{unique_path}/{body["name"]}').json() == {'a': 1}


# --------------------------------------------------------------------------------------
# update (section 1.4.1)


def test_update_children(fb_app, unique_path):
    ref = ref_at(fb_app, unique_path)
    ref.set({'name': 'Edwin Colbert', 'since': 1900, 'temp': True})
    ref.update({'since': 1905})
    assert ref.get() == {'name': 'Edwin Colbert', 'since': 1905, 'temp': True}
    ref.update({'temp': None})
    assert ref.get() == {'name': 'Edwin Colbert', 'since': 1905}


def test_update_multi_path(fb_app, unique_path):
    ref = ref_at(fb_app, unique_path)
    ref.set({'a': {'x': 1, 'y': 2}, 'b': {'x': 3}, 'c': 5})
    ref.update({'a/x': 10, 'b/z': 4, 'd/e/f': 'new'})
    assert ref.get() == {'a': {'x': 10, 'y': 2}, 'b': {'x': 3, 'z': 4}, 'c': 5,
                         'd': {'e': {'f': 'new'}}}
    ref.update({'a/y': None, 'c': None, 'b': {'only': True}})
    assert ref.get() == {'a': {'x': 10}, 'b': {'only': True}, 'd': {'e': {'f': 'new'}}}


def test_update_nested_children_of_siblings(fb_app, unique_path):
    users = ref_at(fb_app, unique_path)
    edward = users.push({'name': 'Edward Cope', 'since': 1800})
    jack = users.push({'name': 'Jack Horner', 'since': 1940})
    users.update({f'{edward.key}/since': 1840, f'{jack.key}/since': 1946})
    assert edward.get() == {'name': 'Edward Cope', 'since': 1840}
    assert jack.get() == {'name': 'Jack Horner', 'since': 1946}


def test_update_on_leaf_replaces_it(fb_app, unique_path):
    ref = ref_at(fb_app, unique_path)
    pushed = ref.push()  # holds ""
    pushed.update({'name': 'Robert Bakker', 'since': 1945})
    assert pushed.get() == {'name': 'Robert Bakker', 'since': 1945}
    leaf = ref.child('leaf')
    leaf.set(42)
    leaf.update({'k': 1})
    assert leaf.get() == {'k': 1}


def test_update_missing_location_and_delete_last_child(fb_app, unique_path):
    ref = ref_at(fb_app, unique_path)
    ref.update({'only': 1})
    assert ref.get() == {'only': 1}
    ref.update({'only': None})
    assert ref.get() is None
    assert ref.get(shallow=True) is None


def test_raw_patch_echoes_body(rest, unique_path):
    body = {'a/b': 1, 'c': 'x'}
    resp = rest.request('PATCH', unique_path, json_body=body)
    assert resp.status_code == 200, resp.text
    assert resp.json() == body
    assert rest.get(unique_path).json() == {'a': {'b': 1}, 'c': 'x'}


def test_print_silent(rest, unique_path):
    for method, body in (('PUT', {'a': 1}), ('PATCH', {'b': 2}), ('POST', 3)):
        resp = rest.request(method, unique_path, params={'print': 'silent'}, json_body=body)
        assert resp.status_code == 204, f'{method}: {resp.status_code} {resp.text!r}'
        assert resp.content == b''


# --------------------------------------------------------------------------------------
# delete


def test_delete(fb_app, unique_path):
    ref = ref_at(fb_app, unique_path)
    ref.set({'keep': 1, 'gone': {'deep': 2}})
    ref.child('gone').delete()
    assert ref.get() == {'keep': 1}
    ref.child('never-existed').delete()
    ref.delete()
    assert ref.get() is None


def test_delete_last_child_removes_empty_parents(fb_app, unique_path):
    ref = ref_at(fb_app, unique_path)
    ref.child('a/b/c').set(1)
    ref.child('a/b/c').delete()
    assert ref.get() is None
    assert ref.child('a').get() is None


def test_raw_delete_response(rest, unique_path):
    rest.put(unique_path, 1)
    resp = rest.request('DELETE', unique_path, headers={'X-Firebase-ETag': 'true'})
    assert resp.status_code == 200
    assert resp.json() is None
    assert resp.headers.get('ETag') == 'null_etag'


# --------------------------------------------------------------------------------------
# transactions (section 1.9)


def test_transaction_object(fb_app, unique_path):
    ref = ref_at(fb_app, unique_path)
    ref.set({'name': 'Richard'})

    def update(snapshot):
        snapshot['name'] += ' Owen'
        snapshot['since'] = 1804
        return snapshot

    expected = {'name': 'Richard Owen', 'since': 1804}
    assert ref.transaction(update) == expected
    assert ref.get() == expected


def test_transaction_scalar_and_missing(fb_app, unique_path):
    ref = ref_at(fb_app, unique_path)
    ref.child('count').set(42)
    assert ref.child('count').transaction(lambda x: x + 1 if x else 1) == 43
    assert ref.child('count').get() == 43
    assert ref.child('fresh').transaction(lambda x: (x or 0) + 1) == 1
    assert ref.child('fresh').get() == 1


def test_transaction_contention(fb_app, unique_path):
    """Several threads increment one counter; every increment must land exactly once."""
    ref = ref_at(fb_app, unique_path)
    ref.set(0)
    workers, per_worker = 4, 8
    errors, aborts = [], []
    lock = threading.Lock()

    def work():
        for _ in range(per_worker):
            while True:
                try:
                    ref.transaction(lambda v: (v or 0) + 1)
                    break
                except db.TransactionAbortedError:
                    with lock:
                        aborts.append(1)  # 25 lost races in a row; try again
                except Exception as error:  # pylint: disable=broad-except
                    with lock:
                        errors.append(repr(error))
                    return

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(t.is_alive() for t in threads), 'transaction threads hung'
    assert not errors, errors
    assert ref.get() == workers * per_worker


# --------------------------------------------------------------------------------------
# queries (sections 1.7, 3) over the dinosaur data (expected results from 1.7.4)


def test_rules_round_trip(dino, rest):
    del dino
    resp = rest.get('.settings/rules', params={'format': 'strict'})
    assert resp.json() == {'rules': RULES}


def test_dino_data_round_trip(dino):
    assert dino.get() == dino_data.DINODB
    assert dino.child('dinosaurs/lambeosaurus').get() == dino_data.DINOSAURS['lambeosaurus']


def test_order_by_key(dino):
    value = dino.child('dinosaurs').order_by_key().get()
    assert isinstance(value, collections.OrderedDict)
    assert list(value.keys()) == dino_data.KEY_SORTED
    assert dict(value) == dino_data.DINOSAURS


def test_order_by_value(dino):
    value = dino.child('scores').order_by_value().get()
    assert list(value.keys()) == dino_data.SCORE_SORTED
    assert dict(value) == dino_data.SCORES


def test_order_by_child(dino):
    value = dino.child('dinosaurs').order_by_child('height').get()
    assert list(value.keys()) == dino_data.HEIGHT_SORTED
    assert value['triceratops'] == dino_data.DINOSAURS['triceratops']


QUERY_CASES = [
    # (id, child, query builder, expected keys in order)
    ('limit_first', 'dinosaurs', lambda r: r.order_by_child('height').limit_to_first(2),
     dino_data.HEIGHT_SORTED[:2]),
    ('limit_first_all', 'dinosaurs', lambda r: r.order_by_child('height').limit_to_first(10),
     dino_data.HEIGHT_SORTED),
    ('limit_last', 'dinosaurs', lambda r: r.order_by_child('height').limit_to_last(2),
     dino_data.HEIGHT_SORTED[-2:]),
    ('limit_last_all', 'dinosaurs', lambda r: r.order_by_child('height').limit_to_last(10),
     dino_data.HEIGHT_SORTED),
    ('start_at', 'dinosaurs', lambda r: r.order_by_child('height').start_at(3.5),
     dino_data.HEIGHT_SORTED[-2:]),
    ('end_at', 'dinosaurs', lambda r: r.order_by_child('height').end_at(3.5),
     dino_data.HEIGHT_SORTED[:4]),
    ('start_and_end_at', 'dinosaurs', lambda r: r.order_by_child('height').start_at(2.5).end_at(5),
     dino_data.HEIGHT_SORTED[-3:-1]),
    ('equal_to', 'dinosaurs', lambda r: r.order_by_child('height').equal_to(0.6),
     dino_data.HEIGHT_SORTED[:2]),
    ('equal_to_2_1', 'dinosaurs', lambda r: r.order_by_child('height').equal_to(2.1),
     ['lambeosaurus']),
    ('start_at_tie_limit', 'dinosaurs',
     lambda r: r.order_by_child('height').start_at(0.6).limit_to_first(1), ['linhenykus']),
    ('end_at_limit_last', 'dinosaurs',
     lambda r: r.order_by_child('height').end_at(4).limit_to_last(3),
     ['lambeosaurus', 'triceratops', 'stegosaurus']),
    ('start_at_limit_last', 'dinosaurs',
     lambda r: r.order_by_child('height').start_at(2).limit_to_last(2),
     ['stegosaurus', 'bruhathkayosaurus']),
    ('nested_child', 'dinosaurs', lambda r: r.order_by_child('ratings/pos').start_at(4),
     ['pterodactyl', 'stegosaurus', 'triceratops']),
    ('nested_child_end_at', 'dinosaurs', lambda r: r.order_by_child('ratings/pos').end_at(2),
     ['bruhathkayosaurus', 'lambeosaurus']),
    ('key_limit_first', 'dinosaurs', lambda r: r.order_by_key().limit_to_first(2),
     ['bruhathkayosaurus', 'lambeosaurus']),
    ('key_limit_last', 'dinosaurs', lambda r: r.order_by_key().limit_to_last(2),
     ['stegosaurus', 'triceratops']),
    ('key_range', 'dinosaurs', lambda r: r.order_by_key().start_at('l').end_at('m'),
     ['lambeosaurus', 'linhenykus']),
    ('key_start_at', 'dinosaurs', lambda r: r.order_by_key().start_at('pterodactyl'),
     ['pterodactyl', 'stegosaurus', 'triceratops']),
    ('key_equal_to', 'dinosaurs', lambda r: r.order_by_key().equal_to('stegosaurus'),
     ['stegosaurus']),
    ('value_limit_last', 'scores', lambda r: r.order_by_value().limit_to_last(2),
     ['linhenykus', 'pterodactyl']),
    ('value_limit_first', 'scores', lambda r: r.order_by_value().limit_to_first(3),
     ['stegosaurus', 'lambeosaurus', 'triceratops']),
    ('value_start_at', 'scores', lambda r: r.order_by_value().start_at(22),
     ['triceratops', 'bruhathkayosaurus', 'linhenykus', 'pterodactyl']),
    ('value_range_limit', 'scores', lambda r: r.order_by_value().end_at(55).limit_to_last(2),
     ['triceratops', 'bruhathkayosaurus']),
    ('value_equal_to', 'scores', lambda r: r.order_by_value().equal_to(80), ['linhenykus']),
]


@pytest.mark.parametrize('child,build,expected', [c[1:] for c in QUERY_CASES],
                         ids=[c[0] for c in QUERY_CASES])
def test_queries(dino, child, build, expected):
    value = build(dino.child(child)).get()
    assert isinstance(value, collections.OrderedDict), value
    assert list(value.keys()) == expected
    source = dino_data.DINOSAURS if child == 'dinosaurs' else dino_data.SCORES
    assert dict(value) == {k: source[k] for k in expected}


def test_query_without_matches(dino):
    value = dino.child('dinosaurs').order_by_child('height').equal_to(7).get()
    # rest-and-rules.md 2.2: GET never returns {}; accept either empty form.
    assert value in (None, {}, collections.OrderedDict())


def test_raw_query_result_is_object(dino, rest):
    """Section 1.7.3: the server returns the window as a JSON object of full children."""
    del dino
    resp = rest.get(f'{DINO_PATH}/dinosaurs',
                    params={'orderBy': '"height"', 'startAt': '2.5', 'endAt': '5'})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {k: dino_data.DINOSAURS[k] for k in ('triceratops', 'stegosaurus')}
    resp = rest.get(f'{DINO_PATH}/dinosaurs',
                    params={'orderBy': '"ratings/pos"', 'startAt': '4', 'limitToFirst': '1'})
    assert resp.status_code == 200, resp.text
    assert list(resp.json()) == ['pterodactyl']


def test_order_by_unindexed_child_is_rejected(dino):
    with pytest.raises(exceptions.InvalidArgumentError) as excinfo:
        dino.child('dinosaurs').order_by_child('appeared').get()
    message = str(excinfo.value)
    assert message.startswith('Index not defined'), message
    assert '"appeared"' in message, message


def test_order_by_value_without_value_index_is_rejected(dino):
    with pytest.raises(exceptions.InvalidArgumentError) as excinfo:
        dino.child('dinosaurs').order_by_value().limit_to_first(1).get()
    message = str(excinfo.value)
    assert message.startswith('Index not defined'), message
    assert '.value' in message, message


def test_order_by_key_needs_no_index(fb_app, dino, unique_path):
    del dino
    ref = ref_at(fb_app, unique_path)
    ref.set({'b': 2, 'a': 1, 'c': 3})
    assert list(ref.order_by_key().limit_to_last(2).get().items()) == [('b', 2), ('c', 3)]


def test_key_order_integers_first(fb_app, dino, unique_path):
    """Section 3.1: 32-bit integer keys first (numerically), then strings."""
    del dino
    ref = ref_at(fb_app, unique_path)
    ref.set({'10': 'a', '9': 'b', '1': 'c', 'x': 'd', '-5': 'e', '2147483648': 'f', 'A': 'g'})
    # server order: -5, 1, 9, 10, "2147483648", "A", "x"
    expected = ['-5', '1', '9', '10', '2147483648', 'A', 'x']
    for n in range(1, len(expected) + 1):
        got = ref.order_by_key().limit_to_first(n).get()
        assert set(got) == set(expected[:n]), f'limit_to_first({n})'
    assert set(ref.order_by_key().limit_to_last(3).get()) == {'2147483648', 'A', 'x'}
    # the bound '2' is itself an integer key, so it sorts among the integers
    assert set(ref.order_by_key().start_at('2').get()) == {'9', '10', '2147483648', 'A', 'x'}
    assert set(ref.order_by_key().end_at('10').get()) == {'-5', '1', '9', '10'}


def test_value_type_order(fb_app, dino):
    """Section 3.2: null < false < true < numbers < strings < objects, ties by key."""
    del dino
    ref = ref_at(fb_app, 'conformance/ordering/types')
    ref.set({
        'a_missing': {'other': 1},
        'b_false': {'v': False},
        'c_true': {'v': True},
        'd_five': {'v': 5},
        'e_string': {'v': 'str'},
        'f_object': {'v': {'x': 1}},
        'g_minus': {'v': -1},
        'h_string': {'v': 'abc'},
        'i_object': {'v': {'y': 2}},
    })
    expected = ['a_missing', 'b_false', 'c_true', 'g_minus', 'd_five', 'h_string', 'e_string',
                'f_object', 'i_object']
    for n in range(1, len(expected) + 1):
        got = ref.order_by_child('v').limit_to_first(n).get()
        assert set(got) == set(expected[:n]), f'limit_to_first({n})'
    assert set(ref.order_by_child('v').start_at(0).get()) == {
        'd_five', 'h_string', 'e_string', 'f_object', 'i_object'}
    assert set(ref.order_by_child('v').end_at(True).get()) == {'a_missing', 'b_false', 'c_true'}
    assert set(ref.order_by_child('v').equal_to(False).get()) == {'b_false'}
    assert set(ref.order_by_child('v').start_at('b').end_at('z').get()) == {'e_string'}


def test_string_order_is_utf16(fb_app, dino):
    """Section 3.1: strings compare by UTF-16 code units (astral < U+FF21)."""
    del dino
    ref = ref_at(fb_app, 'conformance/ordering/strings')
    ref.set({'upper': 'B', 'lower': 'a', 'astral': '\U0001F600', 'fullwidth': '\uff21'})
    expected = ['upper', 'lower', 'astral', 'fullwidth']
    for n in range(1, len(expected) + 1):
        got = ref.order_by_value().limit_to_first(n).get()
        assert set(got) == set(expected[:n]), f'limit_to_first({n})'


def test_index_on_under_wildcard(fb_app, dino):
    """Section 5.5: .indexOn below a $wildcard rules node."""
    del dino
    ref = ref_at(fb_app, 'conformance/wild/case1')
    ref.set({'x': {'v': 3}, 'y': {'v': 1}, 'z': {'v': 2}})
    assert list(ref.order_by_child('v').limit_to_first(2).get()) == ['y', 'z']


# --------------------------------------------------------------------------------------
# shallow (section 1.7.5)


def test_shallow_get(dino):
    assert dino.get(shallow=True) == {'dinosaurs': True, 'scores': True}
    assert dino.child('dinosaurs').get(shallow=True) == {k: True for k in dino_data.KEY_SORTED}
    assert dino.child('scores/stegosaurus').get(shallow=True) == 5
    assert dino.child('dinosaurs/lambeosaurus/order').get(shallow=True) == 'ornithischia'
    assert dino.child('no/such/node').get(shallow=True) is None


# --------------------------------------------------------------------------------------
# listen (section 4)


def test_listen_initial_put_and_child_write(fb_app, unique_path):
    ref = ref_at(fb_app, unique_path)
    ref.set({'a': 1, 'nested': {'x': 0.6}})
    events = EventCollector()
    registration = start_listener(ref, events)
    try:
        got = events.wait_for(1)
        assert got[0] == ('put', '/', {'a': 1, 'nested': {'x': 0.6}})
        ref.child('b').set('two')
        got = events.wait_for(2)
        assert got[1] == ('put', '/b', 'two')
        ref.child('nested/x').set(2.1)
        got = events.wait_for(3)
        assert got[2] == ('put', '/nested/x', 2.1)
    finally:
        close_listener(registration, ref)


def test_listen_push_produces_exactly_one_event(fb_app, unique_path):
    """The official integration test_listen: put "/" then put "/users/<id>" "" and no more."""
    ref = ref_at(fb_app, unique_path)
    ref.child('seed').set(True)
    events = EventCollector()
    registration = start_listener(ref, events)
    try:
        events.wait_for(1)
        pushed = ref.child('users').push()
        assert pushed.get() == ''
        events.wait_for(2)
        got = events.barrier(ref)
        assert len(got) == 2, got
        assert got[0] == ('put', '/', {'seed': True})
        assert got[1] == ('put', f'/users/{pushed.key}', '')
    finally:
        close_listener(registration, ref)


def test_listen_update_delete_and_unrelated_writes(fb_app, unique_path):
    ref = ref_at(fb_app, f'{unique_path}/watched')
    sibling = ref_at(fb_app, f'{unique_path}/sibling')
    ref.set({'a': 1, 'b': 2})
    events = EventCollector()
    registration = start_listener(ref, events)
    try:
        events.wait_for(1)
        sibling.set('ignored')  # writes elsewhere send nothing
        ref.update({'c': 3, 'a': None})
        got = events.wait_for(2)
        assert got[1][0] == 'patch'
        assert got[1][1] == '/'
        assert got[1][2] == {'c': 3, 'a': None}
        ref.child('b').delete()
        got = events.wait_for(3)
        assert got[2] == ('put', '/b', None)
        assert events.barrier(ref) == got, 'unexpected extra events'
    finally:
        close_listener(registration, ref)


def test_listen_write_above_listener(fb_app, unique_path):
    parent = ref_at(fb_app, unique_path)
    ref = parent.child('child')
    parent.set({'child': {'v': 1}, 'other': 1})
    events = EventCollector()
    registration = start_listener(ref, events)
    try:
        events.wait_for(1)
        parent.set({'child': {'v': 2}, 'other': 2})
        got = events.wait_for(2)
        assert got[1] == ('put', '/', {'v': 2})
        parent.update({'other': 3})  # does not change the listened location
        parent.child('other').set(4)
        assert events.barrier(ref) == got, 'no event expected when the location is unchanged'
        parent.delete()
        got = events.wait_for(3)
        assert got[2] == ('put', '/', None)
    finally:
        close_listener(registration, ref)


def test_listen_empty_location(fb_app, unique_path):
    ref = ref_at(fb_app, unique_path)
    events = EventCollector()
    registration = start_listener(ref, events)
    try:
        got = events.wait_for(1)
        assert got[0] == ('put', '/', None)
        ref.set({'first': True})
        got = events.wait_for(2)
        assert got[1] == ('put', '/', {'first': True})
    finally:
        close_listener(registration, ref)


def test_raw_event_stream_framing(rest, unique_path):
    """Section 4.2: headers and `event: put` / one-line `data:` framing."""
    rest.put(unique_path, {'k': 'v'})
    resp = rest.get(unique_path, headers={'Accept': 'text/event-stream'}, stream=True,
                    timeout=(5, EVENT_TIMEOUT))
    try:
        assert resp.status_code == 200
        assert resp.headers.get('Content-Type', '').startswith('text/event-stream')
        text = ''
        for char in resp.iter_content(chunk_size=1, decode_unicode=True):
            text += char
            if text.replace('\r\n', '\n').endswith('\n\n'):
                break
        lines = [line for line in text.replace('\r\n', '\n').split('\n') if line]
        assert lines[0] == 'event: put', lines
        assert lines[1].startswith('data: '), lines
        assert len(lines) == 2, lines
        assert json.loads(lines[1][len('data: '):]) == {'path': '/', 'data': {'k': 'v'}}
    finally:
        resp.close()


# --------------------------------------------------------------------------------------
# raw error shapes (sections 1.5, 1.7.1, 1.7.2, 1.10)


def test_malformed_json_body(rest, unique_path):
    resp = rest.request('PUT', unique_path, data=b'{"a": ',
                        headers={'Content-Type': 'application/json'})
    assert resp.status_code == 400, resp.text
    body = resp.json()
    assert isinstance(body, dict) and isinstance(body.get('error'), str) and body['error'], body
    assert rest.get(unique_path).json() is None


def test_invalid_key_in_body(rest, unique_path):
    resp = rest.put(unique_path, {'a.b': 1})
    assert resp.status_code == 400, resp.text
    assert isinstance(resp.json().get('error'), str)


def test_limit_without_order_by(rest):
    resp = rest.get('x', params={'limitToFirst': '1'})
    assert resp.status_code == 400, resp.text
    assert resp.json() == {
        'error': 'orderBy must be defined when other query parameters are defined'}


def test_order_by_unindexed_child_raw(rest, dino):
    del dino
    resp = rest.get(f'{DINO_PATH}/dinosaurs', params={'orderBy': '"weight"', 'limitToFirst': '1'})
    assert resp.status_code == 400, resp.text
    assert resp.json()['error'].startswith('Index not defined'), resp.text


@pytest.mark.parametrize('params,message', [
    ({'orderBy': 'height'}, 'orderBy must be a valid JSON encoded path'),
    ({'orderBy': '"$key"', 'startAt': '0'}, 'Provided key index type is invalid, must be string'),
    ({'orderBy': '"$key"', 'equalTo': 'abc'}, 'Constraint index field must be a JSON primitive'),
], ids=['order_by_not_json', 'key_bound_not_string', 'bound_not_primitive'])
def test_query_parameter_errors(rest, dino, params, message):
    del dino
    resp = rest.get(f'{DINO_PATH}/dinosaurs', params=params)
    assert resp.status_code == 400, resp.text
    assert resp.json() == {'error': message}


def test_sdk_error_message(fb_app):
    """The SDK surfaces the server's `error` text (section 1.5)."""
    with pytest.raises(exceptions.InvalidArgumentError) as excinfo:
        ref_at(fb_app, 'x')._client.request('get', '/x.json', params='limitToFirst=1')
    assert str(excinfo.value) == 'orderBy must be defined when other query parameters are defined'


def test_error_and_json_content_type(rest, unique_path):
    resp = rest.put(unique_path, {'a': 1})
    assert resp.headers.get('Content-Type', '').startswith('application/json'), resp.headers
    resp = rest.get('x', params={'limitToFirst': '1'})
    assert resp.headers.get('Content-Type', '').startswith('application/json'), resp.headers


def test_owner_is_admin_and_rules_read(rest):
    resp = rest.get('.settings/rules')
    assert resp.status_code == 200, resp.text
    # The source text is returned as stored; it must at least be JSON with a rules member here.
    assert 'rules' in json.loads(resp.text)


def test_emulator_defaults_in_fresh_namespace(hearth_server):
    """Sections 1.2, 5.1, 5.6: lazily created namespace, open default rules, admin-only rules."""
    ns = f'hearth-fresh-{uuid.uuid4().hex[:8]}'
    anonymous = Rest(hearth_server.base_url, ns, token=None)
    owner = Rest(hearth_server.base_url, ns)
    try:
        resp = anonymous.put('open/x', {'v': 1})
        assert resp.status_code == 200, resp.text
        assert anonymous.get('open').json() == {'x': {'v': 1}}
        resp = owner.get('.settings/rules', params={'format': 'strict'})
        assert resp.status_code == 200, resp.text
        assert resp.json() == {'rules': {'.read': True, '.write': True}}
        resp = anonymous.request('PUT', '.settings/rules', data=b'{"rules": {".read": false}}')
        assert resp.status_code in (401, 403), resp.text
        assert owner.get('.settings/rules', params={'format': 'strict'}).json() == {
            'rules': {'.read': True, '.write': True}}
        # Namespaces are independent databases.
        assert owner.get('open').json() == {'x': {'v': 1}}
        assert Rest(hearth_server.base_url, ns + '-other').get('open').json() is None
    finally:
        anonymous.session.close()
        owner.session.close()


def test_push_id_helper():
    # -INOQPH-aV_psbk3ZXEX from the REST docs decodes to a 2013 timestamp.
    assert 1.3e12 < push_id_time_ms('-INOQPH-aV_psbk3ZXEX') < 1.5e12
