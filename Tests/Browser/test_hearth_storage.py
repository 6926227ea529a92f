"""End-to-end tests of hearth-storage.js (Firebase Storage's modular API for browsers) in headless
Chromium against a live hearth server: resumable uploads with progress, pause, resume and cancel,
download URLs followed without credentials, uploadString's formats, metadata updates, listing,
deletion, and storage rules deciding with the hearth-auth.js user's token.

Each test works under its own folder (`unique_path`); the rules test restores open rules after itself.
"""

import json
import urllib.error
import urllib.request
import uuid

from conftest import SOURCE_JS

OPEN_RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /{allPaths=**} { allow read, write: if true; }
  }
}
"""

USER_RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /users/{uid}/{allPaths=**} {
      allow read: if request.auth != null;
      allow write: if request.auth != null && request.auth.uid == uid;
    }
  }
}
"""

# Bytes that differ from position to position, and a comparison, for the pages.
JS_HELPERS = '''
const S = await import("/hearth-storage.js");
const pattern = (size, seed = 7) => { const b = new Uint8Array(size); for (let i = 0; i < size; i++) b[i] = (i * 31 + seed) & 255; return b; };
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const codeOf = async (work) => { try { await work(); return "ok"; } catch (e) { return e.code || String(e); } };
'''


def put_storage_rules(base_url, source):
    request = urllib.request.Request(f'{base_url}/.settings/storage.rules', data=source.encode(), method='PUT',
                                     headers={'Authorization': 'Bearer owner'})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200, response.read()


def http_get(url):
    """A GET with no credentials: (status, body)."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_served_module_is_this_repository_s_hearth_storage_js(hearth_server):
    with urllib.request.urlopen(f'{hearth_server.base_url}/hearth-storage.js', timeout=5) as response:
        assert response.status == 200
        assert response.headers['Content-Type'].split(';')[0].strip() in ('text/javascript', 'application/javascript')
        served = response.read()
    assert served == (SOURCE_JS.parent / 'hearth-storage.js').read_bytes(), 'the server serves a different hearth-storage.js (rebuild the binary)'


def test_resumable_upload_reports_progress_to_the_last_byte_and_round_trips(pages, unique_path):
    _, b, _ = pages
    outcome = b.call(JS_HELPERS + '''
        const storage = S.getStorage(db);
        const size = 1536 * 1024 + 77;
        const bytes = pattern(size);
        const r = S.ref(storage, `${args[0]}/big.bin`);
        const task = S.uploadBytesResumable(r, bytes, {contentType: "application/x-test", customMetadata: {k: "v"}});
        const events = [];
        let completed = 0;
        task.on("state_changed", (s) => events.push([s.state, s.bytesTransferred, s.totalBytes]),
                (e) => events.push(["error", e.code]), () => { completed++; });
        const snap = await task;
        await new Promise((resolve) => setTimeout(resolve, 0));
        const back = new Uint8Array(await S.getBytes(r));
        const blob = await S.getBlob(r);
        return {events, completed, state: snap.state, transferred: snap.bytesTransferred, total: snap.totalBytes,
                size: snap.metadata.size, contentType: snap.metadata.contentType, custom: snap.metadata.customMetadata,
                fullPath: snap.metadata.fullPath, bucket: snap.metadata.bucket, same: same(back, bytes),
                blobType: blob.type, blobSize: blob.size, refString: r.toString(), name: r.name, parent: r.parent.fullPath};
    ''', unique_path)
    size = 1536 * 1024 + 77
    events = outcome['events']
    assert outcome['completed'] == 1
    assert outcome['state'] == 'success'
    assert outcome['transferred'] == outcome['total'] == size
    assert all(e[0] == 'running' and e[2] == size for e in events), events[:5]
    transferred = [e[1] for e in events]
    assert transferred == sorted(transferred), transferred
    assert transferred[-1] == size
    assert len(set(transferred)) >= 4, transferred  # 256 KiB, 512 KiB, 768 KiB … chunks at least
    assert outcome['size'] == size
    assert outcome['contentType'] == 'application/x-test'
    assert outcome['custom'] == {'k': 'v'}
    assert outcome['fullPath'] == f'{unique_path}/big.bin'
    assert outcome['bucket'] == 'hearth-browser.appspot.com'
    assert outcome['same'] is True
    assert outcome['blobType'] == 'application/x-test' and outcome['blobSize'] == size
    assert outcome['refString'] == f'gs://hearth-browser.appspot.com/{unique_path}/big.bin'
    assert outcome['name'] == 'big.bin' and outcome['parent'] == unique_path


def test_pause_resume_and_cancel(pages, unique_path):
    _, b, _ = pages
    outcome = b.call(JS_HELPERS + '''
        const storage = S.getStorage(db);
        const bytes = pattern(2 * 1024 * 1024 + 5, 3);
        const r = S.ref(storage, `${args[0]}/paused.bin`);
        const task = S.uploadBytesResumable(r, bytes);
        const states = [];
        let pausedOnce = false;
        task.on("state_changed", (s) => {
            states.push(s.state);
            if (!pausedOnce && s.bytesTransferred > 0) { pausedOnce = true; states.push("pause:" + task.pause()); }
        });
        const until = async (check) => { for (let i = 0; i < 600 && !check(); i++) await new Promise((r) => setTimeout(r, 50)); };
        await until(() => task.snapshot.state === "paused");
        const atPause = task.snapshot.bytesTransferred;
        await new Promise((resolve) => setTimeout(resolve, 300));
        const afterWait = task.snapshot.bytesTransferred;
        const stillPaused = task.snapshot.state;
        states.push("resume:" + task.resume());
        const snap = await task;
        const roundTrip = same(new Uint8Array(await S.getBytes(r)), bytes);

        const doomed = S.ref(storage, `${args[0]}/canceled.bin`);
        const second = S.uploadBytesResumable(doomed, pattern(3 * 1024 * 1024, 5));
        let errorCode = null;
        second.on("state_changed", (s) => { if (s.bytesTransferred > 0) second.cancel(); }, (e) => { errorCode = e.code; });
        const awaited = await codeOf(() => second);
        const gone = await codeOf(() => S.getMetadata(doomed));
        const small = S.uploadBytesResumable(S.ref(storage, `${args[0]}/small-canceled.bin`), pattern(1000));
        const canceledSmall = small.cancel();
        const smallCode = await codeOf(() => small);
        return {states, atPause, afterWait, stillPaused, state: snap.state, roundTrip, errorCode, awaited, gone,
                secondState: second.snapshot.state, canceledSmall, smallCode,
                smallGone: await codeOf(() => S.getMetadata(S.ref(storage, `${args[0]}/small-canceled.bin`)))};
    ''', unique_path)
    assert 'pause:true' in outcome['states']
    assert 'paused' in outcome['states']
    assert 'resume:true' in outcome['states']
    assert outcome['stillPaused'] == 'paused'
    assert outcome['afterWait'] == outcome['atPause']
    assert outcome['state'] == 'success'
    assert outcome['roundTrip'] is True
    assert outcome['errorCode'] == 'storage/canceled'
    assert outcome['awaited'] == 'storage/canceled'
    assert outcome['secondState'] == 'canceled'
    assert outcome['gone'] == 'storage/object-not-found'
    assert outcome['canceledSmall'] is True
    assert outcome['smallCode'] == 'storage/canceled'
    assert outcome['smallGone'] == 'storage/object-not-found'


def test_download_url_is_fetched_without_credentials(pages, unique_path):
    _, b, _ = pages
    outcome = b.call(JS_HELPERS + '''
        const storage = S.getStorage(db);
        const r = S.ref(storage, `${args[0]}/photo 1+2.png`);
        const bytes = pattern(5000, 11);
        await S.uploadBytes(r, bytes, {contentType: "image/png"});
        const url = await S.getDownloadURL(r);
        const response = await fetch(url, {credentials: "omit"});
        const body = new Uint8Array(await response.arrayBuffer());
        return {url, status: response.status, type: response.headers.get("Content-Type"), same: same(body, bytes),
                fromUrl: S.ref(storage, url).fullPath, bytes: Array.from(bytes)};
    ''', unique_path)
    assert outcome['status'] == 200
    assert outcome['type'] == 'image/png'
    assert outcome['same'] is True
    assert outcome['fromUrl'] == f'{unique_path}/photo 1+2.png'
    encoded = urllib.request.quote(f'{unique_path}/photo 1+2.png', safe='')
    assert f'/v0/b/hearth-browser.appspot.com/o/{encoded}?alt=media&token=' in outcome['url']
    status, body = http_get(outcome['url'])
    assert status == 200 and list(body) == outcome['bytes']


def test_upload_string_formats_and_metadata_updates(pages, unique_path):
    _, b, _ = pages
    outcome = b.call(JS_HELPERS + '''
        const storage = S.getStorage(db);
        const text = async (r) => new TextDecoder().decode(await S.getBytes(r));
        const raw = S.ref(storage, `${args[0]}/raw.txt`);
        await S.uploadString(raw, "héllo ✓");
        const b64 = S.ref(storage, `${args[0]}/b64.txt`);
        await S.uploadString(b64, "SGVsbG8=", "base64");
        const b64url = S.ref(storage, `${args[0]}/b64url.bin`);
        await S.uploadString(b64url, "-_8", S.StringFormat.BASE64URL);
        const dataUrl = S.ref(storage, `${args[0]}/data.txt`);
        const fromDataUrl = await S.uploadString(dataUrl, "data:text/plain;base64,SGVsbG8sIGRhdGE=", "data_url");
        const invalid = await codeOf(() => S.uploadString(S.ref(storage, `${args[0]}/bad`), "@@@", "base64"));

        const first = await S.updateMetadata(raw, {cacheControl: "no-cache", contentLanguage: "en", customMetadata: {a: "1", b: "2"}});
        const second = await S.updateMetadata(raw, {customMetadata: {a: null, c: "3"}, contentLanguage: null});
        const read = await S.getMetadata(raw);
        const missing = await codeOf(() => S.updateMetadata(S.ref(storage, `${args[0]}/nothing`), {cacheControl: "x"}));
        return {raw: await text(raw), b64: await text(b64), b64url: Array.from(new Uint8Array(await S.getBytes(b64url))),
                data: await text(dataUrl), dataType: fromDataUrl.metadata.contentType, invalid,
                first: {cacheControl: first.cacheControl, contentLanguage: first.contentLanguage, custom: first.customMetadata, metageneration: first.metageneration},
                second: {cacheControl: second.cacheControl, contentLanguage: second.contentLanguage ?? null, custom: second.customMetadata, metageneration: second.metageneration},
                read: {cacheControl: read.cacheControl, custom: read.customMetadata, size: read.size, type: read.type, name: read.name, md5: typeof read.md5Hash},
                missing};
    ''', unique_path)
    assert outcome['raw'] == 'héllo ✓'
    assert outcome['b64'] == 'Hello'
    assert outcome['b64url'] == [0xFB, 0xFF]
    assert outcome['data'] == 'Hello, data'
    assert outcome['dataType'] == 'text/plain'
    assert outcome['invalid'] == 'storage/invalid-format'
    assert outcome['first'] == {'cacheControl': 'no-cache', 'contentLanguage': 'en', 'custom': {'a': '1', 'b': '2'}, 'metageneration': '2'}
    assert outcome['second'] == {'cacheControl': 'no-cache', 'contentLanguage': None, 'custom': {'b': '2', 'c': '3'}, 'metageneration': '3'}
    assert outcome['read'] == {'cacheControl': 'no-cache', 'custom': {'b': '2', 'c': '3'}, 'size': len('héllo ✓'.encode()),
                               'type': 'file', 'name': 'raw.txt', 'md5': 'string'}
    assert outcome['missing'] == 'storage/object-not-found'


def test_list_all_list_pages_and_delete(pages, unique_path):
    _, b, _ = pages
    outcome = b.call(JS_HELPERS + '''
        const storage = S.getStorage(db);
        const base = args[0];
        const names = ["a.txt", "b.txt", "c.txt", "2023/x.txt", "2023/y.txt", "2024/deep/z.txt", "d.txt"];
        for (const name of names) await S.uploadString(S.ref(storage, `${base}/${name}`), name);
        const folder = S.ref(storage, base);
        const all = await S.listAll(folder);
        const pages = [];
        let page = await S.list(folder, {maxResults: 2});
        pages.push([...page.prefixes, ...page.items].map((r) => r.fullPath));
        while (page.nextPageToken) {
            page = await S.list(folder, {maxResults: 2, pageToken: page.nextPageToken});
            pages.push([...page.prefixes, ...page.items].map((r) => r.fullPath));
        }
        const badMax = await codeOf(() => S.list(folder, {maxResults: 0}));
        const victim = S.ref(storage, `${base}/a.txt`);
        await S.deleteObject(victim);
        const afterDelete = await S.listAll(folder);
        return {prefixes: all.prefixes.map((r) => r.fullPath), items: all.items.map((r) => r.fullPath), pages, badMax,
                gone: await codeOf(() => S.getMetadata(victim)), goneBytes: await codeOf(() => S.getBytes(victim)),
                deleteAgain: await codeOf(() => S.deleteObject(victim)), root: await codeOf(() => S.deleteObject(S.ref(storage))),
                afterDelete: afterDelete.items.map((r) => r.name)};
    ''', unique_path)
    base = unique_path
    assert outcome['prefixes'] == [f'{base}/2023', f'{base}/2024']
    assert outcome['items'] == [f'{base}/a.txt', f'{base}/b.txt', f'{base}/c.txt', f'{base}/d.txt']
    assert all(len(p) <= 2 for p in outcome['pages'])
    assert len(outcome['pages']) == 3
    flat = [name for page in outcome['pages'] for name in page]
    assert sorted(flat) == sorted(outcome['prefixes'] + outcome['items'])
    assert outcome['badMax'] == 'storage/invalid-argument'
    assert outcome['gone'] == 'storage/object-not-found'
    assert outcome['goneBytes'] == 'storage/object-not-found'
    assert outcome['deleteAgain'] == 'storage/object-not-found'
    assert outcome['root'] == 'storage/invalid-root-operation'
    assert outcome['afterDelete'] == ['b.txt', 'c.txt', 'd.txt']


def test_rules_see_the_hearth_auth_user_and_refusals_are_unauthorized(pages, hearth_server):
    _, b, _ = pages
    put_storage_rules(hearth_server.base_url, USER_RULES)
    try:
        outcome = b.call(JS_HELPERS + '''
            const A = await import("/hearth-auth.js");
            const mine = initializeDatabase({url: location.origin, namespace: args[0]});
            const auth = A.getAuth(mine);
            const storage = S.getStorage(mine);
            const {user} = await A.signInAnonymously(auth);
            const own = S.ref(storage, `users/${user.uid}/note.txt`);
            const codes = {};
            codes.ownWrite = await codeOf(() => S.uploadString(own, "mine"));
            const url = await S.getDownloadURL(own);
            codes.ownRead = await codeOf(() => S.getBytes(own));
            codes.otherWrite = await codeOf(() => S.uploadString(S.ref(storage, "users/someone-else/x.txt"), "x"));
            codes.otherResumable = await codeOf(() => S.uploadBytesResumable(S.ref(storage, "users/someone-else/big.bin"), pattern(400000)));
            codes.outsideWrite = await codeOf(() => S.uploadString(S.ref(storage, "elsewhere/x.txt"), "x"));
            await A.signOut(auth);
            codes.signedOutRead = await codeOf(() => S.getBytes(own));
            codes.signedOutMetadata = await codeOf(() => S.getMetadata(own));
            codes.signedOutDelete = await codeOf(() => S.deleteObject(own));
            codes.signedOutList = await codeOf(() => S.listAll(S.ref(storage, `users/${user.uid}`)));
            const viaUrl = await (await fetch(url, {credentials: "omit"})).text();
            const tokenless = (await fetch(url.split("&token=")[0], {credentials: "omit"})).status;
            const forged = S.getStorage(initializeDatabase({url: location.origin, namespace: args[0] + "x"}));
            S.connectStorageEmulator(forged, location.hostname, Number(location.port), {mockUserToken: "not-a-token"});
            codes.forged = await codeOf(() => S.getMetadata(S.ref(forged, `users/${user.uid}/note.txt`)));
            return {codes, viaUrl, tokenless};
        ''', f'storagerules{uuid.uuid4().hex[:8]}')
    finally:
        put_storage_rules(hearth_server.base_url, OPEN_RULES)
    assert outcome['codes'] == {
        'ownWrite': 'ok', 'ownRead': 'ok',
        'otherWrite': 'storage/unauthorized', 'otherResumable': 'storage/unauthorized', 'outsideWrite': 'storage/unauthorized',
        'signedOutRead': 'storage/unauthorized', 'signedOutMetadata': 'storage/unauthorized',
        'signedOutDelete': 'storage/unauthorized', 'signedOutList': 'storage/unauthorized',
        'forged': 'storage/unauthenticated',
    }
    assert outcome['viaUrl'] == 'mine'
    assert outcome['tokenless'] == 403
