"""End-to-end tests of hearth.js: two browser pages against a live hearth server.

Page A writes, page B watches (or the other way round); every test asserts the values that
arrive, with explicit waits on `window.results` instead of sleeps.
"""

import json
import time
import urllib.request

import pytest

from conftest import REPO_ROOT, SOURCE_JS, PageError

FIXTURES = REPO_ROOT / 'Tests' / 'HearthCoreTests' / 'Fixtures'

# §9.1 of docs/wire-protocol.md: (export-format JSON, hash).
HASH_VECTORS = [
    [None, ''], [True, 'E5z61QM0lN/U2WsOnusszCTkR8M='], [False, 'aSSNoqcS4oQwJ2xxH20rvpp3zP0='],
    [500, 'Ajg9bohDwTVmqR14o1bVJnneryM='], ['Hello World', 'B8HWXc7zXMjrsnJxPRj7wrNGqt4='],
    [{'foo': 'bar'}, 'XnLeTeWQmzTHImTbSMDLg/qMrKY='],
    [{'z': 1, 'a': '2', 'b': 'true', 'c': False}, '8qk5vmuZGXWJx+77SGwjYRM0yPA='],
    [{'.priority': 200, '.value': 'primitive'}, 'R9u8hs9fhRzuQ2M/3BQ0uhxz5ys='],
    [{'.priority': 'high', '.value': 42}, 'd/2FMFWchvDsa06RLXZhzvM9aQc='],
    [{'.priority': 128.256, 'someKey': 'value'}, 'WYR8kBGna+a7E5x75zvhPhzACOQ='],
    [{'.priority': 'high', 'someKey': 'value'}, '/KquMIGoCuKO/ipoLoQzqnU0BcI='],
    [3, '3tYODYzGXwaGnXNech4jb4T9las='], [{'a': 1}, 'gIphxiFGusLh2VwSNVKSvNu90m4='],
    [{'a': {'.value': 1, '.priority': 2}, 'b': {'.value': 1, '.priority': 1}}, 'Hbshog8epOUNdSPDO3e8VIoAsfw='],
]


def test_served_module_is_this_repository_s_hearth_js(hearth_server):
    with urllib.request.urlopen(f'{hearth_server.base_url}/hearth.js', timeout=5) as response:
        assert response.status == 200
        assert response.headers['Content-Type'].split(';')[0].strip() in ('text/javascript', 'application/javascript')
        served = response.read()
    assert served == SOURCE_JS.read_bytes(), 'the server serves a different hearth.js (rebuild the binary)'


def test_ordering_queries_and_hashes_match_the_core_fixtures(pages):
    """hearth.js orders, filters and hashes exactly like HearthCore (the same fixture files)."""
    a, _, _ = pages
    ordering = json.loads((FIXTURES / 'ordering.json').read_text(encoding='utf-8'))
    queries = json.loads((FIXTURES / 'queries.json').read_text(encoding='utf-8'))
    failures = a.call('''
        const [ordering, queries, hashes] = args;
        const I = _internals, failures = [];
        const sorted = (list, cmp) => list.every((x, i) => i === 0 || cmp(list[i - 1], x) < 0);
        for (const s of ordering.keyOrder) if (!sorted(s.sorted, I.compareKeys)) failures.push("keys: " + s.name);
        const sortValue = (v) => (v !== null && typeof v === "object" ? {} : v);
        for (const s of ordering.valueOrder) {
            const objects = s.sorted.filter((v) => v !== null && typeof v === "object").length;
            const ok = s.sorted.every((v, i) => i === 0 || I.compareValues(sortValue(s.sorted[i - 1]), sortValue(v)) < (objects > 1 ? 1 : 0));
            if (!ok) failures.push("values: " + s.name);
        }
        for (const s of ordering.priorityOrder) {
            const node = Object.fromEntries(s.sorted.map(({key, priority}) => [key, priority === null ? 1 : {".value": 1, ".priority": priority}]));
            const got = I.sortedChildren(node, {kind: "priority"}).map((c) => c[0]);
            if (JSON.stringify(got) !== JSON.stringify(s.sorted.map((c) => c.key))) failures.push("priorities: " + s.name);
        }
        const builders = {startAt, startAfter, endAt, endBefore, equalTo};
        for (const s of queries) {
            const q = s.query, constraints = [];
            if (q.limitToFirst === 0 || q.limitToLast === 0) continue;  // REST-only: the SDK API refuses limit 0
            if (q.orderBy === "$key") constraints.push(orderByKey());
            else if (q.orderBy === "$value") constraints.push(orderByValue());
            else if (q.orderBy === "$priority") constraints.push(orderByPriority());
            else if (q.orderBy) constraints.push(orderByChild(q.orderBy));
            for (const [name, make] of Object.entries(builders)) if (q[name]) constraints.push(make(q[name].value, q[name].key));
            if (q.limitToFirst) constraints.push(limitToFirst(q.limitToFirst));
            if (q.limitToLast) constraints.push(limitToLast(q.limitToLast));
            const params = query(ref(db), ...constraints)._params;
            const result = I.applyQuery(I.normalize(s.data), params);
            const keys = I.sortedChildren(result, params.index).map((c) => c[0]);
            if (JSON.stringify(keys) !== JSON.stringify(s.expectedKeys)) failures.push(`query: ${s.name}: ${JSON.stringify(keys)}`);
        }
        for (const [json, hash] of hashes) {
            if (I.nodeHash(I.normalize(json)) !== hash) failures.push("hash: " + JSON.stringify(json));
        }
        return failures;
    ''', ordering, queries, HASH_VECTORS)
    assert failures == []


def test_set_and_push_are_seen_live_by_the_other_page(pages, unique_path):
    a, b, _ = pages
    b.call('''
        onValue(ref(db, args[0] + "/title"), (s) => log("title", s.val()));
        onChildAdded(ref(db, args[0] + "/list"), (s, prev) => log("added", [s.key, s.val(), prev]));
    ''', unique_path)
    b.wait_for('title', lambda r: r == [None], message='the initial null value')
    keys = a.call('''
        await set(ref(db, args[0] + "/title"), "hello");
        const list = ref(db, args[0] + "/list");
        const first = push(list, {n: 1});
        const second = push(list, {n: 2});
        const empty = push(list);  // a key only: nothing is written
        await Promise.all([first, second]);
        return [first.key, second.key, empty.key];
    ''', unique_path)
    first, second, empty = keys
    assert all(len(k) == 20 for k in keys) and first < second < empty, keys
    assert b.wait_for('title', lambda r: r[-1] == 'hello') == [None, 'hello']
    added = b.wait_for('added', lambda r: len(r) >= 2)
    assert added == [[first, {'n': 1}, None], [second, {'n': 2}, first]]


def test_snapshot_api_and_firebase_key_order(pages, unique_path):
    a, b, _ = pages
    a.call('await set(ref(db, args[0]), {b: 1, "10": 1, a: {x: 1, y: [3, 4]}, "9": 1, "-1": 1, A: 1, "01": 1});',
           unique_path)
    snap = b.call('''
        const s = await get(ref(db, args[0]));
        const keys = [];
        s.forEach((c) => { keys.push(c.key); });
        return {keys, size: s.size, n: s.numChildren(), has: s.hasChild("a/x"), hasNot: s.hasChild("zz"),
                child: s.child("a/y").val(), exists: s.exists(), key: s.key, parent: s.ref.parent.key};
    ''', unique_path)
    # Integer-like keys first, numerically ("01" is 1), then the rest in UTF-16 order.
    assert snap['keys'] == ['-1', '01', '9', '10', 'A', 'a', 'b']
    assert snap['size'] == snap['n'] == 7
    assert snap['has'] is True and snap['hasNot'] is False and snap['exists'] is True
    assert snap['child'] == [3, 4]  # arrays are stored as {"0":3,"1":4} and read back as arrays
    assert snap['key'] == unique_path.split('/')[-1] and snap['parent'] == 't'


def test_limited_query_sees_children_enter_and_leave(pages, unique_path):
    a, b, _ = pages
    a.call('await set(ref(db, args[0]), {a: {s: 1}, b: {s: 5}, c: {s: 3}});', unique_path)
    b.call('''
        const q = query(ref(db, args[0]), orderByChild("s"), limitToLast(2));
        onValue(q, (s) => { const keys = []; s.forEach((c) => { keys.push(c.key); }); log("window", keys); });
        onChildAdded(q, (s, prev) => log("added", [s.key, prev]));
        onChildRemoved(q, (s) => log("removed", s.key));
    ''', unique_path)
    b.wait_for('window', lambda r: r and r[-1] == ['c', 'b'], message='the initial window [c, b]')
    a.call('await set(ref(db, args[0] + "/d"), {s: 4});', unique_path)
    b.wait_for('window', lambda r: r[-1] == ['d', 'b'], message='d entering, c leaving')
    a.call('await set(ref(db, args[0] + "/b/s"), 0);', unique_path)
    b.wait_for('window', lambda r: r[-1] == ['c', 'd'], message='b leaving, c entering again')
    assert b.results('removed') == ['c', 'b']
    assert b.results('added') == [['c', None], ['b', 'c'], ['d', None], ['c', None]]


def test_child_changed_moved_and_priorities(pages, unique_path):
    a, b, _ = pages
    a.call('await set(ref(db, args[0]), {x: {n: 1}, y: {n: 2}, z: {n: 3}});', unique_path)
    b.call('''
        const q = query(ref(db, args[0]), orderByChild("n"));   // no limit: a default listen, sorted locally
        onValue(q, (s) => { const keys = []; s.forEach((c) => { keys.push(c.key); }); log("order", keys); });
        onChildChanged(q, (s, prev) => log("changed", [s.key, s.val().n, prev]));
        onChildMoved(q, (s, prev) => log("moved", [s.key, prev]));
    ''', unique_path)
    b.wait_for('order', lambda r: r == [['x', 'y', 'z']])
    a.call('await set(ref(db, args[0] + "/x/n"), 5);', unique_path)
    b.wait_for('order', lambda r: r[-1] == ['y', 'z', 'x'])
    assert b.results('changed') == [['x', 5, 'z']]
    assert b.results('moved') == [['x', 'z']]
    out = a.call('''
        const r = ref(db, args[0] + "/p");
        await setWithPriority(child(r, "low"), "L", 1);
        await setWithPriority(child(r, "high"), {v: "H"}, 10);
        await set(child(r, "none"), "N");
        await setPriority(child(r, "none"), 5);
        const s = await get(query(r, orderByPriority()));
        const order = [];
        s.forEach((c) => { order.push([c.key, c.priority]); });
        return {order, exported: s.child("low").exportVal()};
    ''', unique_path)
    assert out == {'order': [['low', 1], ['none', 5], ['high', 10]], 'exported': {'.value': 'L', '.priority': 1}}


def test_multi_path_update(pages, unique_path):
    a, b, _ = pages
    a.call('await set(ref(db, args[0]), {x: {keep: 1, gone: 2}, y: {old: true}});', unique_path)
    b.call('onValue(ref(db, args[0]), (s) => log("root", s.val()));', unique_path)
    b.wait_for('root', lambda r: r and r[-1] == {'x': {'keep': 1, 'gone': 2}, 'y': {'old': True}})
    a.call('await update(ref(db, args[0]), {"x/new": "n", "x/gone": null, "z/deep/leaf": [1, 2]});', unique_path)
    b.wait_for('root', lambda r: r[-1] == {'x': {'keep': 1, 'new': 'n'}, 'y': {'old': True},
                                           'z': {'deep': {'leaf': [1, 2]}}})
    # The update is atomic: B never sees a state with only part of it applied.
    assert len(b.results('root')) == 2


def test_update_sets_priorities(pages, unique_path):
    """Update keys ending in `.priority` set the priority of the node above; B's priority order follows."""
    a, b, _ = pages
    a.call('await set(ref(db, args[0]), {x: "X", y: {n: 1}});', unique_path)
    b.call('''
        onValue(query(ref(db, args[0]), orderByPriority()), (s) => {
            const keys = [];
            s.forEach((c) => { keys.push(c.key); });
            log("order", keys);
        });
    ''', unique_path)
    b.wait_for('order', lambda r: r and r[-1] == ['x', 'y'])
    a.call('await update(ref(db, args[0]), {"x/.priority": 2, "y/.priority": 1, "w/n": 0, "w/.priority": 0});', unique_path)
    b.wait_for('order', lambda r: r[-1] == ['w', 'y', 'x'])


def test_remove(pages, unique_path):
    a, b, _ = pages
    a.call('await set(ref(db, args[0]), {one: 1, two: 2});', unique_path)
    b.call('''
        onValue(ref(db, args[0]), (s) => log("value", s.val()));
        onChildRemoved(ref(db, args[0]), (s) => log("removed", [s.key, s.val()]));
    ''', unique_path)
    b.wait_for('value', lambda r: r == [{'one': 1, 'two': 2}])
    a.call('await remove(ref(db, args[0] + "/one"));', unique_path)
    b.wait_for('value', lambda r: r[-1] == {'two': 2})
    a.call('await remove(ref(db, args[0]));', unique_path)
    assert b.wait_for('value', lambda r: r[-1] is None) == [{'one': 1, 'two': 2}, {'two': 2}, None]
    assert b.results('removed') == [['one', 1], ['two', 2]]


def test_get_reads_from_the_server_and_with_queries(pages, unique_path):
    a, b, _ = pages
    a.call('await set(ref(db, args[0]), {p1: {n: 3}, p2: {n: 1}, p3: {n: 2}});', unique_path)
    got = b.call('''
        const all = (await get(ref(db, args[0]))).val();
        const missing = await get(ref(db, args[0] + "/nothing"));
        // Ordered by a child, the whole location: no index needed.
        const s = await get(query(ref(db, args[0]), orderByChild("n")));
        const keys = [];
        s.forEach((c) => { keys.push(c.key); });
        const range = await get(query(ref(db, args[0]), orderByKey(), startAfter("p1")));
        const first = await get(query(ref(db, args[0]), orderByKey(), limitToFirst(2)));
        // Limited by a child without its .indexOn: refused, as Firebase refuses it.
        const unindexed = await get(query(ref(db, args[0]), orderByChild("n"), limitToFirst(2))).then(() => "answered", (e) => e.message);
        return {all, missing: [missing.exists(), missing.val()], keys, range: Object.keys(range.val()),
                first: Object.keys(first.val()), unindexed};
    ''', unique_path)
    assert got == {'all': {'p1': {'n': 3}, 'p2': {'n': 1}, 'p3': {'n': 2}},
                   'missing': [False, None], 'keys': ['p2', 'p3', 'p1'], 'range': ['p2', 'p3'], 'first': ['p1', 'p2'],
                   'unindexed': f'failure: Index not defined, add ".indexOn": "n", for path "/{unique_path}", to the rules'}


def test_concurrent_transactions_from_two_pages(pages, unique_path):
    a, b, _ = pages
    n = 10
    # Start both pages' runs without waiting, then wait for both: they race on one counter.
    for page in (a, b):
        page.run('''
            const [path, n] = arguments;
            const {ref, runTransaction} = window.H;
            const counter = ref(window.db, path);
            Promise.all(Array.from({length: n}, () => runTransaction(counter, (value) => (value || 0) + 1)))
                .then((outcomes) => window.log("done", outcomes.map((o) => [o.committed, o.snapshot.val()])),
                      (e) => window.log("error", String(e)));
        ''', unique_path, n)
    for page in (a, b):
        done = page.wait_for('done', lambda r: len(r) == 1, timeout=90, message='all transactions')[0]
        assert page.results('error') == []
        assert [committed for committed, _ in done] == [True] * n
        assert all(isinstance(v, int) and 1 <= v <= 2 * n for _, v in done)
    assert a.call('return (await get(ref(db, args[0]))).val();', unique_path) == 2 * n
    # Every committed value is distinct: no increment was lost or applied twice.
    values = [v for page in (a, b) for _, v in page.results('done')[0]]
    assert sorted(values) == list(range(1, 2 * n + 1))


def test_transaction_abort_and_return_value(pages, unique_path):
    a, _, _ = pages
    out = a.call('''
        await set(ref(db, args[0]), {count: 5});
        const aborted = await runTransaction(ref(db, args[0] + "/count"), () => undefined);
        const result = await runTransaction(ref(db, args[0]), (v) => ({...v, count: v.count * 2, at: serverTimestamp()}));
        return [aborted.committed, aborted.snapshot.val(), result.committed, result.snapshot.val().count,
                typeof result.snapshot.val().at];
    ''', unique_path)
    assert out == [False, 5, True, 10, 'number']


def test_on_disconnect_fires_when_a_page_goes_offline_or_closes(pages, unique_path):
    a, b, new_page = pages
    b.call('''
        onValue(ref(db, args[0] + "/a"), (s) => log("a", s.val()));
        onValue(ref(db, args[0] + "/c"), (s) => log("c", s.val()));
    ''', unique_path)
    a.call('''
        await set(ref(db, args[0] + "/a"), {online: true});
        await onDisconnect(ref(db, args[0] + "/a/online")).set(false);
        await onDisconnect(ref(db, args[0] + "/a")).update({"seen": serverTimestamp(), "note": "bye"});
        await onDisconnect(ref(db, args[0] + "/a/cancelled")).set("should not appear");
        await onDisconnect(ref(db, args[0] + "/a/cancelled")).cancel();
        goOffline(db);
    ''', unique_path)
    a_values = b.wait_for('a', lambda r: r and isinstance(r[-1], dict) and 'note' in r[-1],
                          message='page A\'s onDisconnect writes')
    last = a_values[-1]
    assert last['online'] is False and last['note'] == 'bye' and 'cancelled' not in last
    assert abs(last['seen'] / 1000 - time.time()) < 120

    c = new_page('page C')
    c.call('''
        await set(ref(db, args[0] + "/c"), "here");
        await onDisconnect(ref(db, args[0] + "/c")).remove();
    ''', unique_path)
    b.wait_for('c', lambda r: r and r[-1] == 'here')
    c.driver.switch_to.window(c.handle)
    c.driver.close()  # closing the page closes its WebSocket
    b.wait_for('c', lambda r: r[-1] is None, message='page C\'s onDisconnect remove after closing it')


def test_server_timestamp_and_increment(pages, unique_path):
    a, b, _ = pages
    b.call('onValue(ref(db, args[0]), (s) => log("v", s.val()));', unique_path)
    b.wait_for('v', lambda r: r == [None])
    local = a.call('''
        const r = ref(db, args[0]);
        let seen = null;
        const stop = onValue(r, (s) => { seen = s.val(); });
        const write = set(r, {at: serverTimestamp(), n: increment(5)});
        const predicted = seen;   // the local prediction, before the server answered
        await write;
        await update(r, {n: increment(2)});
        stop();
        return predicted;
    ''', unique_path)
    assert local['n'] == 5 and abs(local['at'] / 1000 - time.time()) < 120
    final = b.wait_for('v', lambda r: r[-1] and r[-1].get('n') == 7)[-1]
    assert isinstance(final['at'], int) and abs(final['at'] / 1000 - time.time()) < 120


def test_local_events_fire_before_the_server_acknowledges(pages, unique_path):
    a, _, _ = pages
    order = a.call('''
        const r = ref(db, args[0]);
        const order = [];
        onValue(r, (s) => order.push("value:" + JSON.stringify(s.val())));
        await get(r);                                    // the listener has its initial data
        await new Promise((resolve) => { const t = setInterval(() => { if (order.length) { clearInterval(t); resolve(); } }, 5); });
        const write = set(r, 42).then(() => order.push("ack"));
        order.push("returned");
        await write;
        return order;
    ''', unique_path)
    assert order == ['value:null', 'value:42', 'returned', 'ack']


def test_rejected_write_rolls_back_the_local_event(pages, unique_path):
    a, _, _ = pages
    out = a.call('''
        const r = ref(db, args[0]);
        await set(r, "kept");
        const seen = [];
        onValue(r, (s) => seen.push(s.val()));
        await get(r);
        // The server refuses an unknown server value; the optimistic local event is undone.
        let error = null;
        const write = set(r, {a: 1, b: {".sv": "no-such-server-value"}}).catch((e) => { error = e.code; });
        const optimistic = seen.slice();
        await write;
        return {optimistic, seen, error};
    ''', unique_path)
    assert out['error'] == 'invalid_data', out
    assert out['optimistic'] == ['kept', {'a': 1}], out
    assert out['seen'] == ['kept', {'a': 1}, 'kept'], out


def test_large_values_cross_the_socket_in_fragments(pages, unique_path):
    a, b, _ = pages
    b.call('onValue(ref(db, args[0]), (s) => log("len", s.exists() ? [s.val().length, s.val().slice(-3)] : null));',
           unique_path)
    b.wait_for('len', lambda r: r == [None])
    a.call('await set(ref(db, args[0]), "é😀".repeat(20000) + "end");', unique_path)
    b.wait_for('len', lambda r: r[-1] == [60003, 'end'], message='a 60 000-unit string')


def test_reconnect_resumes_listens_and_queued_writes(pages, unique_path):
    a, b, _ = pages
    b.call('''
        onValue(ref(db, ".info/connected"), (s) => log("connected", s.val()));
        onValue(ref(db, args[0] + "/x"), (s) => log("x", s.val()));
    ''', unique_path)
    b.wait_for('connected', lambda r: r and r[-1] is True)
    a.call('await set(ref(db, args[0] + "/x"), 1);', unique_path)
    b.wait_for('x', lambda r: r and r[-1] == 1)

    b.call('goOffline(db);')
    b.wait_for('connected', lambda r: r[-1] is False)
    a.call('await set(ref(db, args[0] + "/x"), 2);', unique_path)
    # While offline, B's own write applies locally at once and is queued.
    b.call('set(ref(db, args[0] + "/y"), "queued").then(() => log("y-acked", true));', unique_path)
    assert b.results('x')[-1] == 1
    b.call('goOnline(db);')
    b.wait_for('connected', lambda r: r[-1] is True)
    b.wait_for('x', lambda r: r[-1] == 2, message='the value written while B was offline')
    b.wait_for('y-acked', lambda r: r == [True])
    assert a.call('return (await get(ref(db, args[0] + "/y"))).val();', unique_path) == 'queued'
    a.call('await set(ref(db, args[0] + "/x"), 3);', unique_path)
    assert b.wait_for('x', lambda r: r[-1] == 3) == [None, 1, 2, 3]


def test_unsubscribe_only_once_and_off(pages, unique_path):
    a, b, _ = pages
    b.call('''
        window.stop = onValue(ref(db, args[0]), (s) => log("v", s.val()));
        onValue(ref(db, args[0]), (s) => log("once", s.val()), {onlyOnce: true});
        onChildAdded(ref(db, args[0] + "-list"), (s) => log("added", s.key));
    ''', unique_path)
    b.wait_for('v', lambda r: r == [None])
    a.call('await set(ref(db, args[0]), 1);', unique_path)
    b.wait_for('v', lambda r: r == [None, 1])
    a.call('await set(ref(db, args[0] + "-list/k1"), true);', unique_path)
    b.wait_for('added', lambda r: r == ['k1'])
    b.call('''
        window.stop();
        off(ref(db, args[0] + "-list"), "child_added");
        onValue(ref(db, args[0] + "-other"), (s) => log("other", s.val()));
    ''', unique_path)
    a.call('''
        await set(ref(db, args[0]), 2);
        await set(ref(db, args[0] + "-list/k2"), true);
        await set(ref(db, args[0] + "-other"), "x");
    ''', unique_path)
    b.wait_for('other', lambda r: r and r[-1] == 'x')  # B has seen every write after the last one it ignores
    assert b.results('v') == [None, 1]
    assert b.results('once') == [None]
    assert b.results('added') == ['k1']


def test_invalid_input_is_rejected_synchronously(pages):
    a, _, _ = pages
    for script in ('set(ref(db, "bad.key"), 1);', 'set(ref(db, "ok"), {"a/b": 1});', 'set(ref(db, "ok"), {a: undefined});',
                   'query(ref(db), limitToFirst(1), limitToLast(1));', 'set(ref(db, ".info/connected"), true);'):
        with pytest.raises(PageError):
            a.call(script)


def test_hearth_auth_signs_up_and_rules_see_the_uid(pages, hearth_server):
    """hearth-auth.js: sign up, write where rules name the uid, sign out and be refused, sign in
    again; Firebase's error codes; state listeners."""
    import uuid
    with urllib.request.urlopen(f'{hearth_server.base_url}/hearth-auth.js', timeout=5) as response:
        assert response.read() == (SOURCE_JS.parent / 'hearth-auth.js').read_bytes(), 'rebuild the binary'
    namespace = f'browserauth{uuid.uuid4().hex[:8]}'
    rules = {'rules': {'users': {'$uid': {'.read': 'auth != null && auth.uid == $uid',
                                          '.write': 'auth != null && auth.uid == $uid'}}}}
    request = urllib.request.Request(f'{hearth_server.base_url}/.settings/rules.json?ns={namespace}',
                                     data=json.dumps(rules).encode(), method='PUT',
                                     headers={'Authorization': 'Bearer owner'})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
    a, _, _ = pages
    outcome = a.call('''
        const A = await import("/hearth-auth.js");
        const mine = initializeDatabase({url: location.origin, namespace: args[0]});
        const auth = A.getAuth(mine);
        const states = [];
        A.onAuthStateChanged(auth, (user) => states.push(user ? (user.isAnonymous ? "anonymous" : user.email) : null));
        const email = `ada-${Date.now()}@example.com`;
        const {user} = await A.createUserWithEmailAndPassword(auth, email, "correct horse");
        await set(ref(mine, `users/${user.uid}`), {name: "Ada"});
        const read = (await get(ref(mine, `users/${user.uid}`))).val();
        let refusedElsewhere = null;
        try { await set(ref(mine, "users/someone-else"), 1); } catch (e) { refusedElsewhere = String(e.message || e); }
        await A.signOut(auth);
        let refusedSignedOut = null;
        try { await set(ref(mine, `users/${user.uid}`), {name: "Eve"}); } catch (e) { refusedSignedOut = String(e.message || e); }
        const codes = [];
        for (const attempt of [
            () => A.createUserWithEmailAndPassword(auth, email, "another one"),
            () => A.signInWithEmailAndPassword(auth, email, "wrong password"),
            () => A.createUserWithEmailAndPassword(auth, `weak-${Date.now()}@example.com`, "123"),
        ]) {
            try { await attempt(); codes.push("no error"); } catch (e) { codes.push(e.code); }
        }
        const again = await A.signInWithEmailAndPassword(auth, email, "correct horse");
        await set(ref(mine, `users/${again.user.uid}/name`), "Ada Lovelace");
        const token = await again.user.getIdToken(true);
        await A.signOut(auth);
        await A.signInAnonymously(auth);
        await A.signOut(auth);
        return {same: again.user.uid === user.uid, read, refusedElsewhere, refusedSignedOut, codes, states,
                tokenParts: token.split(".").length, email};
    ''', namespace)
    assert outcome['same'] is True
    assert outcome['read'] == {'name': 'Ada'}
    assert 'permission' in (outcome['refusedElsewhere'] or '').lower()
    assert 'permission' in (outcome['refusedSignedOut'] or '').lower()
    assert outcome['codes'] == ['auth/email-already-in-use', 'auth/wrong-password', 'auth/weak-password']
    assert outcome['tokenParts'] == 3
    assert outcome['states'] == [None, outcome['email'], None, outcome['email'], None, 'anonymous', None]
