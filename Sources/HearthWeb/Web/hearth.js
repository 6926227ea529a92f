/**
 * hearth.js — a small browser client for Hearth, speaking the Firebase Realtime Database
 * WebSocket protocol (v5). No dependencies, no build step: import it as an ES module.
 *
 * The API mirrors Firebase's modular web API (v9+):
 *
 * ```js
 * import { initializeDatabase, ref, push, set, onValue, query, orderByChild, limitToLast }
 *   from "/hearth.js";
 * const db = initializeDatabase({ url: "http://127.0.0.1:9000", namespace: "demo" });
 * const posts = ref(db, "posts");
 * onValue(query(posts, orderByChild("starCount"), limitToLast(10)), (snap) => {
 *   snap.forEach((post) => console.log(post.key, post.val()));
 * });
 * await set(push(posts), { title: "Hello", starCount: 0 });
 * ```
 *
 * Design in one paragraph: every listen the server knows about is a `Listen` holding the server's
 * data for it (its "server cache"). Each distinct query on top of it is a `View`. Local writes are
 * kept in an ordered `pending` list until the server acknowledges them; a view's visible data is
 * its server cache with the pending writes laid on top, filtered by its query. After any change
 * the affected views are recomputed and diffed against what their callbacks last saw, which
 * yields the value and child events. That is simpler than Firebase's incremental SyncTree and
 * gives the same events for the sizes a browser app listens to.
 *
 * Section map: 1 paths and keys · 2 ordering · 3 data nodes · 4 hashing · 5 push IDs ·
 * 6 queries · 7 snapshots · 8 connection · 9 sync and events · 10 public API.
 */

// ───────────────────────────── 1. Paths and keys ─────────────────────────────

const MIN_NAME = "[MIN_NAME]";
const MAX_NAME = "[MAX_NAME]";
const INVALID_KEY = /[.#$\[\]\/\u0000-\u001F\u007F]/;

/** Splits "a/b//c" into ["a","b","c"]; leading, trailing and doubled slashes mean nothing. */
function parsePath(path) {
  return String(path ?? "").split("/").filter((s) => s !== "");
}

function validateKey(key, where) {
  if (typeof key !== "string" || key === "" || INVALID_KEY.test(key)) {
    throw new Error(`${where}: invalid key "${key}" (keys must be non-empty and must not contain . # $ [ ] / or control characters)`);
  }
}

/** Validates user paths; `.info` is allowed as the first segment and `.priority` as the last. */
function validatePath(segments, where) {
  segments.forEach((s, i) => {
    if ((i === 0 && s === ".info") || (i === segments.length - 1 && s === ".priority")) return;
    validateKey(s, where);
  });
  if (segments.length > 32) throw new Error(`${where}: paths are at most 32 segments deep`);
}

const wirePath = (segments) => "/" + segments.join("/");
const isPrefix = (a, b) => a.length <= b.length && a.every((s, i) => s === b[i]);
const related = (a, b) => isPrefix(a, b) || isPrefix(b, a);

// ───────────────────────────── 2. Ordering (§8.3) ─────────────────────────────

const INTEGER_KEY = /^-?0*\d{1,10}$/; // the JS SDK rule, also used by HearthCore's Key

function keyAsInt(key) {
  if (!INTEGER_KEY.test(key)) return null;
  const n = Number(key);
  return n >= -2147483648 && n <= 2147483647 ? n : null;
}

// JS `<` on strings compares UTF-16 code units, which is exactly Firebase's string order.
const compareStrings = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

/** Firebase key order: sentinels, then 32-bit integer keys numerically, then UTF-16 order. */
function compareKeys(a, b) {
  if (a === b) return 0;
  if (a === MIN_NAME || b === MAX_NAME || b === "[MAX_KEY]") return -1;
  if (b === MIN_NAME || a === MAX_NAME || a === "[MAX_KEY]") return 1;
  const ai = keyAsInt(a), bi = keyAsInt(b);
  if (ai !== null && bi !== null) {
    if (ai !== bi) return ai < bi ? -1 : 1;
    return a.length - b.length || compareStrings(a, b); // "1" < "01"
  }
  if (ai !== null) return -1;
  if (bi !== null) return 1;
  return compareStrings(a, b);
}

const OBJECT = Symbol("object"); // the sort value of any non-leaf node: all objects compare equal

function typeRank(v) {
  if (v === null || v === undefined) return 0;
  if (v === false) return 1;
  if (v === true) return 2;
  if (typeof v === "number") return 3;
  if (typeof v === "string") return 4;
  return 5;
}

/** Value order: null < false < true < numbers < strings < objects. Also orders priorities. */
function compareValues(a, b) {
  const ra = typeRank(a), rb = typeRank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 3) return a < b ? -1 : a > b ? 1 : 0;
  if (ra === 4) return compareStrings(a, b);
  return 0;
}

// ───────────────────────────── 3. Data nodes ─────────────────────────────
// A node is the normalized export format (§7.2): null (no data), a primitive, a leaf with a
// priority {".value": v, ".priority": p}, or an object of non-null children with an optional
// ".priority". A server-value placeholder {".sv": …} is kept whole, as a leaf.

const isObject = (n) => n !== null && typeof n === "object";
const hasChildren = (n) => isObject(n) && !(".value" in n) && !(".sv" in n);
const priorityOf = (n) => (isObject(n) && n[".priority"] !== undefined ? n[".priority"] : null);
const childKeys = (n) => (hasChildren(n) ? Object.keys(n).filter((k) => k[0] !== ".") : []);

function leafValue(n) {
  if (!isObject(n)) return n ?? null;
  if (".value" in n) return n[".value"];
  return OBJECT;
}

/** Turns user JSON into a node: arrays become objects, nulls vanish, empty objects are null. */
function normalize(json, where = "value") {
  if (json === null) return null;
  if (json === undefined) throw new Error(`${where} contains undefined`);
  switch (typeof json) {
    case "number":
      if (!Number.isFinite(json)) throw new Error(`${where} contains ${json}`);
      return json;
    case "string": case "boolean":
      return json;
    case "object": break;
    default: throw new Error(`${where} contains a ${typeof json}`);
  }
  if (Array.isArray(json)) json = Object.assign({}, json);
  if (".sv" in json) return json;
  const priority = json[".priority"];
  if (".value" in json) return withPriority(normalize(json[".value"], where), priority ?? null);
  const out = {};
  for (const [k, v] of Object.entries(json)) {
    if (k === ".priority") continue;
    validateKey(k, where);
    const child = normalize(v, `${where}/${k}`);
    if (child !== null) out[k] = child;
  }
  if (Object.keys(out).length === 0) return null;
  if (priority != null) out[".priority"] = checkPriority(priority);
  return out;
}

function checkPriority(p) {
  if (p === null || typeof p === "string" || (typeof p === "number" && Number.isFinite(p)) || (isObject(p) && ".sv" in p)) return p;
  throw new Error("A priority must be a string, a finite number or null");
}

function withPriority(node, priority) {
  if (node === null) return null; // an empty node cannot carry a priority
  priority = checkPriority(priority ?? null);
  if (hasChildren(node)) {
    const out = { ...node };
    if (priority === null) delete out[".priority"]; else out[".priority"] = priority;
    return out;
  }
  const value = leafValue(node) === OBJECT ? node : leafValue(node);
  return priority === null ? value : { ".value": value, ".priority": priority };
}

function childOf(node, key) {
  if (key === ".priority") return priorityOf(node);
  return hasChildren(node) && Object.hasOwn(node, key) ? node[key] : null; // never a prototype member
}

const getAt = (node, path) => path.reduce((n, k) => childOf(n, k), node);

/** Returns a copy of `node` with `value` at `path`; copies only along the path. */
function setAt(node, path, value, i = 0) {
  if (i === path.length) return value;
  if (path[i] === ".priority") return withPriority(node, value);
  const child = setAt(childOf(node, path[i]), path, value, i + 1);
  const out = hasChildren(node) ? { ...node } : {};
  if (child === null) delete out[path[i]]; else out[path[i]] = child;
  if (childKeys(out).length === 0) return null;
  const priority = priorityOf(node); // a leaf that gains children keeps its priority
  if (priority !== null) out[".priority"] = priority;
  return out;
}

function deepEqual(a, b) {
  if (a === b) return true;
  if (!isObject(a) || !isObject(b)) return false;
  const ka = Object.keys(a), kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
}

const ARRAY_KEY = /^(0|[1-9]\d*)$/;

/** Firebase's val(): priorities stripped; dense integer-keyed objects read back as arrays. */
function toVal(node) {
  if (!isObject(node)) return node ?? null;
  if (".value" in node) return node[".value"];
  if (".sv" in node) return structuredClone(node);
  const out = {};
  let count = 0, maxKey = 0, allIntegers = true;
  for (const k of childKeys(node)) {
    out[k] = toVal(node[k]);
    count++;
    if (allIntegers && ARRAY_KEY.test(k)) maxKey = Math.max(maxKey, Number(k)); else allIntegers = false;
  }
  if (allIntegers && maxKey < 2 * count) {
    const array = [];
    for (const k of Object.keys(out)) array[k] = out[k];
    return array;
  }
  return out;
}

/** Resolves {".sv"} placeholders the way the server will, to predict a write locally (§10.1). */
function resolveServerValues(node, existing, now) {
  if (!isObject(node)) return node;
  if (".sv" in node) {
    const sv = node[".sv"];
    if (sv === "timestamp") return now;
    if (isObject(sv) && typeof sv.increment === "number") {
      const current = leafValue(existing);
      return typeof current === "number" ? current + sv.increment : sv.increment;
    }
    return null;
  }
  if (".value" in node) return withPriority(resolveServerValues(node[".value"], existing, now), resolveServerValues(node[".priority"], null, now));
  const out = {};
  for (const k of childKeys(node)) {
    const child = resolveServerValues(node[k], childOf(existing, k), now);
    if (child !== null) out[k] = child;
  }
  return withPriority(childKeys(out).length ? out : null, resolveServerValues(priorityOf(node), null, now));
}

// ───────────────────────────── 4. Hashing (§9.1) ─────────────────────────────
// Synchronous SHA-1, so a transaction can compute its hash in the same tick as its new value.

function sha1(bytes) {
  const blocks = ((bytes.length + 8) >> 6) + 1;
  const words = new Uint32Array(blocks * 16);
  for (let i = 0; i < bytes.length; i++) words[i >> 2] |= bytes[i] << (24 - (i & 3) * 8);
  words[bytes.length >> 2] |= 0x80 << (24 - (bytes.length & 3) * 8);
  words[blocks * 16 - 1] = bytes.length * 8;
  words[blocks * 16 - 2] = Math.floor((bytes.length * 8) / 2 ** 32);
  const h = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0];
  const w = new Uint32Array(80);
  for (let b = 0; b < words.length; b += 16) {
    for (let t = 0; t < 80; t++) {
      w[t] = t < 16 ? words[b + t] : ((x) => (x << 1) | (x >>> 31))(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16]);
    }
    let [a, bb, c, d, e] = h;
    for (let t = 0; t < 80; t++) {
      const f = t < 20 ? (bb & c) | (~bb & d) : t < 40 ? bb ^ c ^ d : t < 60 ? (bb & c) | (bb & d) | (c & d) : bb ^ c ^ d;
      const k = t < 20 ? 0x5a827999 : t < 40 ? 0x6ed9eba1 : t < 60 ? 0x8f1bbcdc : 0xca62c1d6;
      const tmp = (((a << 5) | (a >>> 27)) + f + e + k + w[t]) >>> 0;
      e = d; d = c; c = ((bb << 30) | (bb >>> 2)) >>> 0; bb = a; a = tmp;
    }
    [a, bb, c, d, e].forEach((v, i) => { h[i] = (h[i] + v) >>> 0; });
  }
  const out = new Uint8Array(20);
  h.forEach((v, i) => { out[i * 4] = v >>> 24; out[i * 4 + 1] = v >>> 16; out[i * 4 + 2] = v >>> 8; out[i * 4 + 3] = v; });
  return out;
}

const sha1Base64 = (text) => btoa(String.fromCharCode(...sha1(new TextEncoder().encode(text))));

function hex16(n) {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, n);
  let s = "";
  for (let i = 0; i < 8; i++) s += view.getUint8(i).toString(16).padStart(2, "0");
  return s;
}

const leafHashText = (v) => (typeof v === "number" ? "number:" + hex16(v) : typeof v === "boolean" ? "boolean:" + v : "string:" + v);

/** The node hash used by listens and compare-and-set transactions; "" for null. */
function nodeHash(node) {
  if (node === null) return "";
  const priority = priorityOf(node);
  let s = priority === null ? "" : "priority:" + leafHashText(priority) + ":";
  if (!hasChildren(node)) return sha1Base64(s + leafHashText(leafValue(node)));
  for (const [key, child] of sortedChildren(node, PRIORITY_INDEX)) {
    const h = nodeHash(child);
    if (h !== "") s += ":" + key + ":" + h;
  }
  return s === "" ? "" : sha1Base64(s);
}

// ───────────────────────────── 5. Push IDs ─────────────────────────────

const PUSH_CHARS = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";
let lastPushTime = 0;
const lastPushRandom = new Array(12).fill(0);

/** 8 time characters + 12 random ones; within one millisecond the random part counts up. */
function nextPushId(now) {
  const duplicateTime = now === lastPushTime;
  lastPushTime = now;
  let id = "";
  for (let i = 0; i < 8; i++) { id = PUSH_CHARS.charAt(now % 64) + id; now = Math.floor(now / 64); }
  if (!duplicateTime) {
    const random = crypto.getRandomValues(new Uint8Array(12));
    for (let i = 0; i < 12; i++) lastPushRandom[i] = random[i] & 63;
  } else {
    let i = 11;
    for (; i >= 0 && lastPushRandom[i] === 63; i--) lastPushRandom[i] = 0;
    if (i >= 0) lastPushRandom[i]++;
  }
  return id + lastPushRandom.map((r) => PUSH_CHARS.charAt(r)).join("");
}

// ───────────────────────────── 6. Queries (§8) ─────────────────────────────
// Query params: { index: {kind, path?}, start?: {v, k, inclusive}, end?: {…}, limit?, vf? }.

const PRIORITY_INDEX = { kind: "priority" };
const DEFAULT_PARAMS = Object.freeze({ index: PRIORITY_INDEX });

function sortValue(node, key, index) {
  switch (index.kind) {
    case "key": return key;
    case "priority": return priorityOf(node);
    case "value": return leafValue(node);
    default: return leafValue(getAt(node, index.path));
  }
}

/** The tie-break key of a start or end bound; sentinels make startAfter/endBefore exclusive. */
const boundKey = (bound, index) => (index.kind === "key" ? undefined : bound.k ?? (bound.inclusive ? undefined : bound.sentinel));

/** Compares two (sortValue, key) posts under an index; the key breaks ties. */
function comparePosts(av, ak, bv, bk, index) {
  if (index.kind === "key") return compareKeys(ak, bk);
  return compareValues(av, bv) || compareKeys(ak, bk);
}

function sortedChildren(node, index) {
  return childKeys(node)
    .map((k) => [k, node[k], sortValue(node[k], k, index)])
    .sort((a, b) => comparePosts(a[2], a[0], b[2], b[0], index));
}

const loadsAllData = (p) => !p.start && !p.end && !p.limit;

/** A query's result over the full node at its location (§8.4); the root priority is dropped. */
function applyQuery(node, p) {
  if (loadsAllData(p)) return node;
  if (!hasChildren(node)) return null;
  const { index, start, end } = p;
  let posts = sortedChildren(node, index).filter(([k, , v]) => {
    if (start) {
      const c = index.kind === "key" ? compareKeys(k, start.v) : comparePosts(v, k, start.v, boundKey(start, index) ?? MIN_NAME, index);
      if (c < 0 || (c === 0 && !start.inclusive)) return false;
    }
    if (end) {
      const c = index.kind === "key" ? compareKeys(k, end.v) : comparePosts(v, k, end.v, boundKey(end, index) ?? MAX_NAME, index);
      if (c > 0 || (c === 0 && !end.inclusive)) return false;
    }
    return true;
  });
  if (p.limit) posts = p.vf === "l" ? posts.slice(0, p.limit) : posts.slice(-p.limit);
  if (posts.length === 0) return null;
  return Object.fromEntries(posts.map(([k, c]) => [k, c]));
}

/** The `q` object of a listen or get (§8.1), as the JS SDK builds it. */
function wireQuery(p) {
  const q = {};
  for (const [bound, v, n, inc] of [[p.start, "sp", "sn", "sin"], [p.end, "ep", "en", "ein"]]) {
    if (!bound) continue;
    q[v] = bound.v;
    const key = boundKey(bound, p.index);
    if (key !== undefined) q[n] = key;
    q[inc] = bound.inclusive;
  }
  if (p.limit) { q.l = p.limit; q.vf = p.vf; }
  if (p.index.kind === "key") q.i = ".key";
  else if (p.index.kind === "value") q.i = ".value";
  else if (p.index.kind === "child") q.i = p.index.path.join("/");
  return q;
}

/** Sorted-key JSON, so equal query objects give equal identifiers. */
function canonicalJSON(v) {
  if (!isObject(v)) return JSON.stringify(v);
  if (Array.isArray(v)) return "[" + v.map(canonicalJSON).join(",") + "]";
  return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + canonicalJSON(v[k])).join(",") + "}";
}

function constraint(name, apply) { return { type: name, _apply: apply }; }

function orderConstraint(name, index) {
  return constraint(name, (p) => {
    if (p.orderSet) throw new Error(`${name}: a query can only be ordered once`);
    return { ...p, index, orderSet: true };
  });
}

function boundConstraint(name, side, v, k, inclusive, sentinel) {
  if (v !== null && !["string", "number", "boolean"].includes(typeof v)) throw new Error(`${name}: the value must be a string, number, boolean or null`);
  if (k != null) validateKey(k, name);
  return constraint(name, (p) => {
    if (p[side]) throw new Error(`${name}: the query already has a ${side} point`);
    return { ...p, [side]: { v, k: k ?? undefined, inclusive, sentinel, name } };
  });
}

function limitConstraint(name, n, vf) {
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name}: the limit must be a positive integer`);
  return constraint(name, (p) => {
    if (p.limit) throw new Error(`${name}: the query already has a limit`);
    return { ...p, limit: n, vf };
  });
}

// ───────────────────────────── 7. Snapshots ─────────────────────────────

/** An immutable copy of the data at a location, as seen by one event or read. */
export class DataSnapshot {
  constructor(ref, node, index = PRIORITY_INDEX) {
    this.ref = ref;
    this._node = node ?? null;
    this._index = index;
  }
  get key() { return this.ref.key; }
  get priority() { return priorityOf(this._node); }
  get size() { return childKeys(this._node).length; }
  /** The data as plain JavaScript (priorities stripped), or null. */
  val() { return toVal(this._node); }
  /** The data in export format, with ".priority" and ".value" where present. */
  exportVal() { return structuredClone(this._node); }
  toJSON() { return this.exportVal(); }
  exists() { return this._node !== null; }
  child(path) {
    const segments = parsePath(path);
    return new DataSnapshot(child(this.ref, path), getAt(this._node, segments));
  }
  hasChild(path) { return getAt(this._node, parsePath(path)) !== null; }
  hasChildren() { return childKeys(this._node).length > 0; }
  numChildren() { return this.size; }
  /** Calls `action` for each child in query order; returning true stops the loop. */
  forEach(action) {
    for (const [k, c] of sortedChildren(this._node, this._index)) {
      if (action(new DataSnapshot(child(this.ref, k), c)) === true) return true;
    }
    return false;
  }
}

// ───────────────────────────── 8. Connection (§1–§5, §14) ─────────────────────────────

const MAX_FRAME = 16384;
const KEEPALIVE_MS = 45000;
const BACKOFF_INITIAL_MS = 1000, BACKOFF_MAX_MS = 30000, BACKOFF_MULTIPLIER = 1.3;
const STABLE_CONNECTION_MS = 30000;
const SDK_STATS_KEY = "sdk.js.hearth-1-0-0";

function isJWTWithIat(token) {
  const parts = token.split(".");
  if (parts.length !== 3) return false;
  try {
    const claims = JSON.parse(atob(parts[1].replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(parts[1].length / 4) * 4, "=")));
    return isObject(claims) && Object.prototype.hasOwnProperty.call(claims, "iat");
  } catch { return false; }
}

/** Splits an outgoing message at ≤ 16384 UTF-16 units without cutting a surrogate pair (§2.2). */
function splitFrames(text) {
  const chunks = [];
  for (let i = 0; i < text.length;) {
    let end = Math.min(i + MAX_FRAME, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    chunks.push(text.slice(i, end));
    i = end;
  }
  return chunks;
}

/**
 * One multiplexed WebSocket per database. Owns the request numbers, the outstanding listens,
 * writes, onDisconnect operations and gets, and replays them after every reconnect.
 */
class Connection {
  constructor(repo, wsBase, namespace, authToken) {
    this.repo = repo;
    this.wsBase = wsBase;
    this.namespace = namespace;
    this.authToken = authToken ?? null;
    this.requestNumber = 0; // monotonic for the lifetime of the client (§14.1)
    this.callbacks = new Map(); // r → response handler, for the current socket only
    this.listens = new Map(); // listen key → { body, onResponse }
    this.writes = new Map(); // write id → { action, body, onComplete, sent }, in send order
    this.onDisconnectOps = []; // { action, body, onComplete } not yet acknowledged
    this.gets = new Set(); // { body, resolve, reject, sent }
    this.nextWriteId = 1;
    this.ws = null;
    this.connected = false;
    this.interrupted = false;
    this.killed = false;
    this.firstConnection = true;
    this.lastSessionId = null;
    this.delay = BACKOFF_INITIAL_MS;
    this.attempts = 0;
    this.connectedAt = 0;
    this.fragments = null; // { remaining, parts } while reassembling a fragmented message
    this.timer = null;
    this.keepalive = null;
    this.scheduleConnect();
  }

  // Connecting, with backoff: 1 s × 1.3 up to 30 s, full jitter, reset after a stable session.
  scheduleConnect() {
    if (this.interrupted || this.killed || this.ws || this.timer) return;
    let wait = 0;
    if (this.attempts++ > 0) {
      wait = Math.random() * this.delay;
      this.delay = Math.min(BACKOFF_MAX_MS, this.delay * BACKOFF_MULTIPLIER);
    }
    this.timer = setTimeout(() => { this.timer = null; this.open(); }, wait);
  }

  async open() {
    let token = null;
    try {
      token = typeof this.authToken === "function" ? await this.authToken() : this.authToken;
    } catch (e) {
      console.warn("hearth: could not get an auth token, connecting without one:", e);
    }
    if (this.interrupted || this.killed || this.ws) return;
    let url = `${this.wsBase}/.ws?v=5`;
    if (this.lastSessionId) url += `&ls=${encodeURIComponent(this.lastSessionId)}`;
    url += `&ns=${encodeURIComponent(this.namespace)}`;
    let ws;
    try { ws = new WebSocket(url); } catch (e) {
      console.warn("hearth: cannot open", url, e);
      return this.scheduleConnect();
    }
    this.ws = ws;
    this.token = token;
    const handshakeTimeout = setTimeout(() => ws.close(), 30000);
    ws.onmessage = (e) => { if (this.ws === ws) this.onFrame(String(e.data)); };
    ws.onclose = () => { clearTimeout(handshakeTimeout); if (this.ws === ws) this.onClose(); };
    ws.onopen = () => this.resetKeepalive();
    this.clearHandshakeTimeout = () => clearTimeout(handshakeTimeout);
  }

  close() { if (this.ws) { const ws = this.ws; ws.close(); this.onClose(); } }

  onClose() {
    this.ws = null;
    this.fragments = null;
    clearTimeout(this.keepalive);
    const wasConnected = this.connected;
    this.connected = false;
    this.callbacks.clear(); // replies to this socket's requests can never arrive now (§14.4)
    if (wasConnected && Date.now() - this.connectedAt > STABLE_CONNECTION_MS) this.delay = BACKOFF_INITIAL_MS;
    for (const [id, w] of this.writes) {
      w.sent = false;
      if ("h" in w.body) { this.writes.delete(id); w.onComplete("disconnect", "The connection was lost"); } // §9.2: a transaction reruns instead
    }
    for (const g of this.gets) g.sent = false;
    if (wasConnected) this.repo.onConnectedChanged(false);
    this.scheduleConnect();
  }

  // Framing (§2): fragment counts, keepalive "0".
  onFrame(text) {
    this.resetKeepalive();
    if (this.fragments) {
      this.fragments.parts.push(text);
      if (--this.fragments.remaining > 0) return;
      text = this.fragments.parts.join("");
      this.fragments = null;
    } else if (text.length <= 6 && /^\d+$/.test(text)) {
      const count = Number(text);
      if (count > 0) this.fragments = { remaining: count, parts: [] };
      return;
    }
    let message;
    try { message = JSON.parse(text); } catch { console.warn("hearth: unparsable frame", text.slice(0, 200)); return; }
    if (message.t === "c") this.onControl(message.d ?? {});
    else if (message.t === "d") this.onData(message.d ?? {});
  }

  sendMessage(message) {
    const text = JSON.stringify(message);
    if (text.length <= MAX_FRAME) this.ws.send(text);
    else {
      const chunks = splitFrames(text);
      this.ws.send(String(chunks.length));
      chunks.forEach((c) => this.ws.send(c));
    }
    this.resetKeepalive();
  }

  resetKeepalive() {
    clearTimeout(this.keepalive);
    this.keepalive = setTimeout(() => {
      if (this.ws?.readyState === WebSocket.OPEN) { this.ws.send("0"); this.resetKeepalive(); }
    }, KEEPALIVE_MS);
  }

  request(action, body, onResponse) {
    const r = ++this.requestNumber;
    if (onResponse) this.callbacks.set(r, onResponse);
    this.sendMessage({ t: "d", d: { r, a: action, b: body } });
  }

  onControl({ t, d }) {
    switch (t) {
      case "h": return this.onHandshake(d ?? {});
      case "r": // reset: reconnect now (we keep the user's host; §1.5)
        this.delay = BACKOFF_INITIAL_MS; this.attempts = 0; return this.close();
      case "s":
        console.warn("hearth: server shut the connection down, not reconnecting:", d);
        this.killed = true; return this.close();
      case "e": return console.warn("hearth: server error:", d);
      default: return; // "o" (pong) and upgrade messages need nothing
    }
  }

  onHandshake(handshake) {
    this.clearHandshakeTimeout();
    this.connected = true;
    this.connectedAt = Date.now();
    if (typeof handshake.ts === "number") this.repo.serverTimeOffset = handshake.ts - Date.now();
    if (handshake.s) this.lastSessionId = handshake.s;
    if (this.firstConnection) { this.firstConnection = false; this.request("s", { c: { [SDK_STATS_KEY]: 1 } }); }
    // Auth first: the server applies it to every request that follows on this socket (§4.4).
    if (this.token) this.sendAuth(this.token);
    // Then listens, writes in their original order, onDisconnects and gets (§14.1).
    for (const listen of this.listens.values()) this.sendListen(listen);
    for (const w of this.writes.values()) this.sendWrite(w);
    for (const op of this.onDisconnectOps) this.sendOnDisconnect(op);
    for (const g of this.gets) this.sendGet(g);
    this.repo.onConnectedChanged(true);
  }

  sendAuth(token) {
    this.request(isJWTWithIat(token) ? "auth" : "gauth", { cred: token }, (b) => {
      if (b.s === "ok") return;
      console.warn(`hearth: authentication failed (${b.s}): ${b.d}`);
      this.close(); // reconnect; a token function is asked again for a fresh token
    });
  }

  setAuthToken(token) {
    this.authToken = token ?? null;
    if (!this.connected) return;
    if (token == null) { this.token = null; this.request("unauth", {}); return; }
    if (typeof token === "function") { this.close(); return; }
    this.token = token;
    this.sendAuth(token);
  }

  onData(d) {
    if ("r" in d) {
      const handler = this.callbacks.get(d.r);
      this.callbacks.delete(d.r);
      handler?.(d.b ?? {});
      return;
    }
    const b = d.b ?? {};
    switch (d.a) {
      case "d": case "m": return this.repo.onServerData(parsePath(b.p), b.d, d.a === "m", b.t ?? null);
      case "c": return this.repo.onListenRevoked(parsePath(b.p), b.q ?? null);
      case "ac":
        console.warn(`hearth: auth revoked (${b.s}): ${b.d}`);
        this.token = null;
        return this.close();
      case "sd": return console.log("FIREBASE:", b.msg);
      default: return;
    }
  }

  // Listens.
  listen(key, body, onResponse) {
    const listen = { key, body, onResponse };
    this.listens.set(key, listen);
    if (this.connected) this.sendListen(listen);
  }

  sendListen(listen) {
    const body = { ...listen.body, h: this.repo.hashForListen(listen.key) };
    this.request("q", body, (b) => {
      if (this.listens.get(listen.key) !== listen) return;
      if (b.s !== "ok") this.listens.delete(listen.key); // failed listens are not unlistened (§8.2)
      listen.onResponse(b);
    });
  }

  unlisten(key) {
    const listen = this.listens.get(key);
    if (!listen) return;
    this.listens.delete(key);
    if (this.connected) this.request("n", { p: listen.body.p, ...(listen.body.q ? { q: listen.body.q, t: listen.body.t } : {}) });
  }

  // Writes: kept until acknowledged, resent in order after a reconnect.
  write(action, body, onComplete) {
    const w = { action, body, onComplete, sent: false, id: this.nextWriteId++ };
    this.writes.set(w.id, w);
    if (this.connected) this.sendWrite(w);
  }

  sendWrite(w) {
    w.sent = true;
    this.request(w.action, w.body, (b) => {
      if (this.writes.get(w.id) !== w) return;
      this.writes.delete(w.id);
      w.onComplete(b.s, b.d);
    });
  }

  onDisconnectOp(action, body) {
    return new Promise((resolve, reject) => {
      const op = { action, body, onComplete: (s, d) => (s === "ok" ? resolve() : reject(serverError(s, d))) };
      this.onDisconnectOps.push(op);
      if (this.connected) this.sendOnDisconnect(op);
    });
  }

  sendOnDisconnect(op) {
    this.request(op.action, op.body, (b) => {
      const i = this.onDisconnectOps.indexOf(op);
      if (i < 0) return;
      this.onDisconnectOps.splice(i, 1);
      op.onComplete(b.s, b.d);
    });
  }

  get(body) {
    return new Promise((resolve, reject) => {
      const g = { body, resolve, reject, sent: false };
      this.gets.add(g);
      if (this.connected) this.sendGet(g);
      else setTimeout(() => { if (!g.sent && this.gets.delete(g)) reject(new Error("Client is offline.")); }, 3000);
    });
  }

  sendGet(g) {
    g.sent = true;
    this.request("g", g.body, (b) => {
      if (!this.gets.delete(g)) return;
      if (b.s === "ok") g.resolve(b.d ?? null); else g.reject(serverError(b.s, b.d));
    });
  }

  interrupt() {
    this.interrupted = true;
    clearTimeout(this.timer);
    this.timer = null;
    this.close();
  }

  resume() {
    this.interrupted = false;
    this.killed = false;
    this.delay = BACKOFF_INITIAL_MS;
    this.attempts = 0;
    this.scheduleConnect();
  }
}

function serverError(status, detail) {
  const messages = { permission_denied: "Client doesn't have permission to access the desired data." };
  const error = new Error(`${status}: ${messages[status] ?? (typeof detail === "string" && detail ? detail : status)}`);
  error.code = status;
  return error;
}

// ───────────────────────────── 9. Sync and events ─────────────────────────────

/**
 * The client's model of the database: listens with their server caches, views with their
 * callbacks, and the pending (unacknowledged) local writes.
 */
class Repo {
  constructor(db, wsBase, namespace, authToken) {
    this.db = db;
    this.listens = new Map(); // listen key → Listen
    this.tags = new Map(); // tag → Listen
    this.views = new Map(); // view key → View
    this.pending = []; // { id, path, sets: [[path, node]] } in write order
    this.nextTag = 1;
    this.nextPendingId = 1;
    this.serverTimeOffset = 0;
    this.connected = false;
    this.info = new Map(); // ".info" child → Set of callbacks
    this.queue = [];
    this.raising = false;
    this.transactions = new Map(); // path → promise of the previous transaction there
    this.conn = new Connection(this, wsBase, namespace, authToken);
  }

  serverTime() { return Date.now() + this.serverTimeOffset; }

  // Listens and views.
  viewFor(q) {
    const path = q._path, params = q._params;
    const listenKey = wirePath(path) + "|" + (loadsAllData(params) ? "default" : canonicalJSON(wireQuery(params)));
    const viewKey = wirePath(path) + "|" + canonicalJSON(wireQuery(params));
    let view = this.views.get(viewKey);
    if (view) return view;
    let listen = this.listens.get(listenKey);
    if (!listen) {
      const tagged = !loadsAllData(params);
      listen = { key: listenKey, path, params, tag: tagged ? this.nextTag++ : null, cache: null, complete: false, views: new Set(), waiters: [] };
      this.listens.set(listenKey, listen);
      if (tagged) this.tags.set(listen.tag, listen);
      const body = tagged ? { p: wirePath(path), q: wireQuery(params), t: listen.tag } : { p: wirePath(path) };
      this.conn.listen(listenKey, body, (b) => this.onListenResponse(listen, b));
    }
    view = { key: viewKey, path, params, listen, regs: [], node: null, shown: false, ref: new Reference(this.db, path) };
    listen.views.add(view);
    this.views.set(viewKey, view);
    return view;
  }

  hashForListen(key) {
    const listen = this.listens.get(key);
    if (!listen) return "";
    if (!listen.complete) { listen.cache = null; return ""; } // never "" with data kept (§8.6)
    return nodeHash(listen.tag ? applyQuery(listen.cache, listen.params) : listen.cache);
  }

  onListenResponse(listen, b) {
    if (b.s === "ok") {
      if (isObject(b.d) && Array.isArray(b.d.w) && b.d.w.includes("no_index")) {
        console.warn(`hearth: using an unspecified index; consider ".indexOn": "${wireQuery(listen.params).i}" at ${wirePath(listen.path)}`);
      }
      listen.complete = true;
      this.refresh(listen.path);
    } else {
      this.cancelListen(listen, serverError(b.s, b.d));
    }
  }

  onListenRevoked(path, q) {
    const id = q ? q.map(canonicalJSON).join("$") : "default";
    const listen = this.listens.get(wirePath(path) + "|" + id);
    if (listen) { this.conn.listens.delete(listen.key); this.cancelListen(listen, serverError("permission_denied")); }
  }

  cancelListen(listen, error) {
    for (const view of [...listen.views]) {
      for (const reg of [...view.regs]) { this.removeRegistration(reg, false); reg.cancel?.(error); }
    }
  }

  addRegistration(q, type, callback, cancel, once) {
    if (q._path[0] === ".info") return this.addInfoRegistration(q._path, type, callback);
    const view = this.viewFor(q);
    const reg = { type, callback, cancel, once, view, active: true };
    view.regs.push(reg);
    if (view.shown) this.raise(this.eventsFor([reg], view, null, view.node)); // initial events, cached data
    else this.refreshView(view);
    return () => this.removeRegistration(reg, true);
  }

  removeRegistration(reg, unlisten) {
    if (!reg.active) return;
    reg.active = false;
    const view = reg.view;
    view.regs.splice(view.regs.indexOf(reg), 1);
    if (view.regs.length > 0) return;
    this.views.delete(view.key);
    const listen = view.listen;
    listen.views.delete(view);
    if (listen.views.size > 0) return;
    this.listens.delete(listen.key);
    if (listen.tag) this.tags.delete(listen.tag);
    if (unlisten) this.conn.unlisten(listen.key); else this.conn.listens.delete(listen.key);
  }

  // Server data (§6).
  onServerData(pushPath, data, isMerge, tag) {
    const updates = isMerge && isObject(data)
      ? Object.entries(data).map(([k, v]) => [pushPath.concat(parsePath(k)), v])
      : [[pushPath, data]];
    const targets = tag !== null ? [this.tags.get(tag)].filter(Boolean) : [...this.listens.values()].filter((l) => l.tag === null);
    for (const listen of targets) {
      let touched = false;
      for (const [path, value] of updates) {
        if (isPrefix(listen.path, path)) {
          listen.cache = setAt(listen.cache, path.slice(listen.path.length), normalize(value));
          if (path.length === listen.path.length) listen.complete = true;
          touched = true;
        } else if (tag === null && isPrefix(path, listen.path)) {
          listen.cache = getAt(normalize(value), listen.path.slice(path.length)); // the whole subtree: complete
          listen.complete = true;
          touched = true;
        }
      }
      if (touched) listen.waiters.splice(0).forEach((resolve) => resolve());
    }
    this.refresh(pushPath);
  }

  // Local writes: applied to views at once, dropped when the server answers.
  addPending(path, sets) {
    const id = this.nextPendingId++;
    this.pending.push({ id, path, sets });
    this.refresh(path);
    return id;
  }

  removePending(id) {
    const i = this.pending.findIndex((w) => w.id === id);
    if (i < 0) return;
    const [w] = this.pending.splice(i, 1);
    this.refresh(w.path);
  }

  /** Sends a put or merge and predicts it locally; resolves or rejects with the server's answer. */
  write(action, path, body, sets) {
    const id = this.addPending(path, sets);
    return new Promise((resolve, reject) => {
      this.conn.write(action, body, (status, detail) => {
        this.removePending(id);
        if (status === "ok") resolve(); else reject(serverError(status, detail));
      });
    });
  }

  /** Lays pending writes on a node known (or not) at `path`. */
  overlay(path, node, complete, excludeId) {
    for (const w of this.pending) {
      if (w.id === excludeId) continue;
      for (const [setPath, value] of w.sets) {
        if (isPrefix(setPath, path)) { node = getAt(value, path.slice(setPath.length)); complete = true; }
        else if (isPrefix(path, setPath)) node = setAt(node, setPath.slice(path.length), value);
      }
    }
    return { node, complete };
  }

  /** The best local value at `path`: a complete default listen covering it, plus pending writes. */
  localValue(path, excludeId) {
    let base = null, complete = false;
    for (const listen of this.listens.values()) {
      if (listen.tag === null && listen.complete && isPrefix(listen.path, path)) {
        base = getAt(listen.cache, path.slice(listen.path.length));
        complete = true;
        break;
      }
    }
    return this.overlay(path, base, complete, excludeId);
  }

  refresh(changedPath) {
    for (const view of [...this.views.values()]) if (related(view.path, changedPath)) this.refreshView(view);
  }

  refreshView(view) {
    const { node, complete } = this.overlay(view.path, view.listen.cache, view.listen.complete);
    if (!complete) return;
    const filtered = applyQuery(node, view.params);
    if (view.shown && deepEqual(filtered, view.node)) return;
    const previous = view.shown ? view.node : null;
    view.node = filtered;
    view.shown = true;
    this.raise(this.eventsFor(view.regs, view, previous, filtered));
  }

  /**
   * Diffs two views of the same query into Firebase's events, in Firebase's order:
   * child_removed, child_added, child_moved, child_changed, then value.
   */
  eventsFor(regs, view, before, after) {
    const index = view.params.index;
    const oldKids = hasChildren(before) ? before : {};
    const newOrder = sortedChildren(after, index);
    const previousName = new Map(newOrder.map(([k], i) => [k, i > 0 ? newOrder[i - 1][0] : null]));
    const removed = sortedChildren(before, index).filter(([k]) => childOf(after, k) === null);
    const added = [], moved = [], changed = [];
    for (const [k, c, v] of newOrder) {
      if (!Object.hasOwn(oldKids, k)) { added.push([k, c]); continue; }
      if (deepEqual(oldKids[k], c)) continue;
      changed.push([k, c]);
      if (index.kind !== "key" && compareValues(sortValue(oldKids[k], k, index), v) !== 0) moved.push([k, c]);
    }
    const events = [];
    const snap = (k, c) => new DataSnapshot(child(view.ref, k), c);
    const byType = { child_removed: removed, child_added: added, child_moved: moved, child_changed: changed };
    for (const [type, list] of Object.entries(byType)) {
      for (const [k, c] of list) {
        const args = type === "child_removed" ? [snap(k, c)] : [snap(k, c), previousName.get(k)];
        for (const reg of regs) if (reg.type === type) events.push(() => this.fire(reg, args));
      }
    }
    const value = new DataSnapshot(view.ref, after, index);
    for (const reg of regs) if (reg.type === "value") events.push(() => this.fire(reg, [value]));
    return events;
  }

  fire(reg, args) {
    if (!reg.active) return;
    if (reg.once) this.removeRegistration(reg, true);
    reg.callback(...args);
  }

  /** Runs callbacks after the state change that caused them; nested changes queue behind. */
  raise(events) {
    this.queue.push(...events);
    if (this.raising) return;
    this.raising = true;
    try {
      while (this.queue.length) {
        const event = this.queue.shift();
        try { event(); } catch (e) { setTimeout(() => { throw e; }); }
      }
    } finally { this.raising = false; }
  }

  // .info/connected and .info/serverTimeOffset: client-local values.
  infoValue(name) {
    if (name === "connected") return this.connected;
    if (name === "serverTimeOffset") return this.serverTimeOffset;
    return null;
  }

  addInfoRegistration(path, type, callback) {
    if (type !== "value") return () => {};
    const name = path[1] ?? "";
    if (!this.info.has(name)) this.info.set(name, new Set());
    const entry = { callback };
    this.info.get(name).add(entry);
    const r = new Reference(this.db, path);
    entry.fire = () => this.raise([() => this.info.get(name)?.has(entry) && callback(new DataSnapshot(r, this.infoValue(name)))]);
    entry.fire();
    return () => this.info.get(name)?.delete(entry);
  }

  whenConnected() {
    return this.connected ? Promise.resolve() : new Promise((resolve) => (this.connectWaiters ??= []).push(resolve));
  }

  onConnectedChanged(connected) {
    this.connected = connected;
    if (connected) (this.connectWaiters ?? []).splice(0).forEach((resolve) => resolve());
    for (const [name, entries] of this.info) {
      if (name === "connected" || name === "serverTimeOffset") entries.forEach((e) => e.fire());
    }
  }

  // Transactions (§9.2): compare-and-set puts with `h`, rerun on datastale, 25 attempts.
  transaction(path, update, applyLocally) {
    const key = wirePath(path);
    const previous = this.transactions.get(key) ?? Promise.resolve();
    const run = previous.then(() => this.runTransaction(path, update, applyLocally));
    this.transactions.set(key, run.catch(() => {}));
    return run;
  }

  async runTransaction(path, update, applyLocally) {
    let ready, failed;
    const loaded = new Promise((resolve, reject) => { ready = resolve; failed = reject; });
    const unwatch = this.addRegistration(new Query(this.db, path, DEFAULT_PARAMS), "value", () => ready(), (e) => failed(e), false);
    const listen = this.views.get(wirePath(path) + "|" + canonicalJSON(wireQuery(DEFAULT_PARAMS))).listen;
    const snapshotOf = (node) => new DataSnapshot(new Reference(this.db, path), node);
    try {
      await loaded;
      for (let attempt = 1; ; attempt++) {
        const current = this.localValue(path).node;
        const result = update(toVal(current));
        if (result === undefined) return { committed: false, snapshot: snapshotOf(current) };
        const newNode = normalize(result, "transaction result");
        const hash = nodeHash(current);
        const waitForData = new Promise((resolve) => listen.waiters.push(resolve));
        const local = resolveServerValues(newNode, current, this.serverTime());
        const pendingId = applyLocally ? this.addPending(path, [[path, local]]) : null;
        const { status, detail } = await new Promise((resolve) => {
          this.conn.write("p", { p: wirePath(path), d: newNode, h: hash }, (status, detail) => resolve({ status, detail }));
        });
        if (pendingId !== null) this.removePending(pendingId);
        if (status === "ok") return { committed: true, snapshot: snapshotOf(this.localValue(path).node) };
        if (status !== "datastale" && status !== "disconnect") throw serverError(status, detail);
        if (attempt >= 25) throw serverError("maxretry", "Transaction had too many retries");
        // Retry on fresh data: after a disconnect, once reconnected; after datastale, once the
        // server's newer value has arrived (it normally has already; wait at most a second).
        if (status === "disconnect") await this.whenConnected();
        else if (nodeHash(this.localValue(path).node) === hash) {
          await Promise.race([waitForData, new Promise((r) => setTimeout(r, 1000))]);
        }
      }
    } finally {
      unwatch();
    }
  }

  async get(q) {
    if (q._path[0] === ".info") return new DataSnapshot(q.ref, this.infoValue(q._path[1]));
    const view = this.views.get(wirePath(q._path) + "|" + canonicalJSON(wireQuery(q._params)));
    if (view?.shown) return new DataSnapshot(q.ref, view.node, q._params.index);
    if (loadsAllData(q._params)) {
      const { node, complete } = this.localValue(q._path);
      if (complete) return new DataSnapshot(q.ref, node, q._params.index);
    }
    const data = await this.conn.get({ p: wirePath(q._path), q: loadsAllData(q._params) ? {} : wireQuery(q._params) });
    return new DataSnapshot(q.ref, applyQuery(normalize(data), q._params), q._params.index);
  }
}

// ───────────────────────────── 10. Public API ─────────────────────────────

/** A database handle; create it with {@link initializeDatabase}. */
export class Database {
  constructor(repo) { this._repo = repo; }
}

/**
 * Connects to a Hearth server. One WebSocket per database, opened at once and kept open.
 *
 * ```js
 * const db = initializeDatabase({ url: "http://127.0.0.1:9000", namespace: "demo", authToken: "owner" });
 * const db2 = initializeDatabase({ url: "http://127.0.0.1:9000/?ns=demo" });
 * ```
 * @param {{url?: string, namespace?: string, authToken?: string | (() => Promise<string>)}} options
 *   `url` defaults to the page's origin; `namespace` defaults to `?ns=` in the URL, then to the
 *   first label of a host with 3 or more labels. `authToken` is sent as `auth` (JWT) or `gauth`.
 * @returns {Database}
 */
export function initializeDatabase(options = {}) {
  const url = new URL(options.url ?? globalThis.location.origin);
  const labels = url.hostname.split(".");
  const namespace = options.namespace ?? url.searchParams.get("ns") ?? (labels.length >= 3 ? labels[0].toLowerCase() : "");
  const scheme = url.protocol === "https:" || url.protocol === "wss:" ? "wss" : "ws";
  const db = new Database(null);
  db._repo = new Repo(db, `${scheme}://${url.host}`, namespace, options.authToken);
  return db;
}

/** Closes the connection and stops reconnecting; local writes keep working and queue up. */
export function goOffline(db) { db._repo.conn.interrupt(); }

/** Reconnects after {@link goOffline}: listens, pending writes and onDisconnects are resent. */
export function goOnline(db) { db._repo.conn.resume(); }

/**
 * Changes the credential: a token string, a function returning one, or null to sign out.
 * ```js
 * setAuthToken(db, await signIn(email, password));
 * ```
 */
export function setAuthToken(db, token) { db._repo.conn.setAuthToken(token); }

/** A location and a set of query constraints; made by {@link query}. */
export class Query {
  constructor(db, path, params) {
    this._db = db;
    this._path = path;
    this._params = params;
  }
  get ref() { return new Reference(this._db, this._path); }
  isEqual(other) {
    return !!other && other._db === this._db && wirePath(other._path) === wirePath(this._path) &&
      canonicalJSON(wireQuery(other._params)) === canonicalJSON(wireQuery(this._params));
  }
  toString() {
    const base = this._db._repo.conn.wsBase.replace(/^ws/, "http");
    return base + "/" + this._path.map(encodeURIComponent).join("/");
  }
  toJSON() { return this.toString(); }
}

/** A location in the database. `key` is its last segment (null at the root). */
export class Reference extends Query {
  constructor(db, path) { super(db, path, DEFAULT_PARAMS); }
  get key() { return this._path.length ? this._path[this._path.length - 1] : null; }
  get parent() { return this._path.length ? new Reference(this._db, this._path.slice(0, -1)) : null; }
  get root() { return new Reference(this._db, []); }
}

/**
 * A reference to `path` (default: the root).
 * ```js
 * const alice = ref(db, "users/alice");
 * ```
 */
export function ref(db, path) {
  const segments = parsePath(path);
  validatePath(segments, "ref");
  return new Reference(db, segments);
}

/** The reference at `path` below `parent`; `path` may contain slashes. */
export function child(parent, path) {
  const segments = parsePath(path);
  validatePath(parent._path.concat(segments), "child");
  return new Reference(parent._db, parent._path.concat(segments));
}

function writablePath(r, where) {
  if (!(r instanceof Reference)) throw new Error(`${where}: expected a Reference`);
  if (r._path[0] === ".info") throw new Error(`${where}: .info is read-only`);
  return r._path;
}

/**
 * Writes `value` at `ref`, replacing what was there (null deletes). Local listeners fire at once;
 * the promise resolves when the server has applied the write.
 * ```js
 * await set(ref(db, "users/alice"), { name: "Alice", joined: serverTimestamp() });
 * ```
 */
export function set(r, value) {
  return setNode(r, normalize(value), "set");
}

function setNode(r, node, where) {
  const path = writablePath(r, where);
  const repo = r._db._repo;
  const local = resolveServerValues(node, repo.localValue(path).node, repo.serverTime());
  return repo.write("p", path, { p: wirePath(path), d: node }, [[path, local]]);
}

/** Like {@link set}, also setting the node's priority. */
export function setWithPriority(r, value, priority) {
  return setNode(r, withPriority(normalize(value), priority), "setWithPriority");
}

/** Sets only the priority of the node at `ref`. */
export function setPriority(r, priority) {
  return setNode(child(r, ".priority"), checkPriority(priority), "setPriority");
}

/** Deletes the data at `ref`. */
export function remove(r) { return set(r, null); }

function mergeEntries(path, values, where) {
  if (!isObject(values) || Array.isArray(values)) throw new Error(`${where}: expected an object`);
  const entries = Object.entries(values).map(([k, v]) => {
    const rel = parsePath(k);
    if (rel.length === 0) throw new Error(`${where}: empty key`);
    validatePath(path.concat(rel), where);
    return [k, rel, normalize(v, `${where} value at ${k}`)];
  });
  const sorted = entries.map((e) => e[1].join("/")).sort();
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i].startsWith(sorted[i - 1] + "/") || sorted[i] === sorted[i - 1]) throw new Error(`${where}: path ${sorted[i - 1]} is an ancestor of ${sorted[i]}`);
  }
  return entries;
}

/**
 * Writes several children atomically. Keys are paths relative to `ref` and may contain "/";
 * children not named are untouched; null deletes.
 * ```js
 * await update(ref(db), { "posts/p1/title": "Hi", [`user-posts/alice/p1/title`]: "Hi" });
 * ```
 */
export function update(r, values) {
  const path = writablePath(r, "update");
  const entries = mergeEntries(path, values, "update");
  if (entries.length === 0) return Promise.resolve();
  const repo = r._db._repo;
  const now = repo.serverTime();
  const sets = entries.map(([, rel, node]) => {
    const full = path.concat(rel);
    return [full, resolveServerValues(node, repo.localValue(full).node, now)];
  });
  const d = Object.fromEntries(entries.map(([k, , node]) => [k, node]));
  return repo.write("m", path, { p: wirePath(path), d }, sets);
}

/**
 * Creates a child with a new push ID (time-ordered, generated on the client). With a value, it
 * is also written; the returned reference is then also a promise of that write.
 * ```js
 * const postRef = push(ref(db, "posts"), { title: "Hello" });
 * await postRef;
 * ```
 */
export function push(parent, value) {
  writablePath(parent, "push");
  const key = nextPushId(parent._db._repo.serverTime());
  const pushed = child(parent, key);
  const thenable = child(parent, key);
  const promise = value === undefined ? Promise.resolve(pushed) : set(pushed, value).then(() => pushed);
  thenable.then = promise.then.bind(promise);
  thenable.catch = promise.catch.bind(promise);
  return thenable;
}

/**
 * Reads once: from a listener's cache when one is up to date, else from the server.
 * ```js
 * const snap = await get(ref(db, "users/alice"));
 * ```
 */
export function get(q) { return q._db._repo.get(q); }

/**
 * A query: a location plus ordering, range and limit constraints.
 * ```js
 * const top = query(ref(db, "posts"), orderByChild("starCount"), limitToLast(10));
 * ```
 */
export function query(q, ...constraints) {
  let params = { ...q._params };
  for (const c of constraints) params = c._apply(params);
  for (const bound of [params.start, params.end]) {
    if (bound && params.index.kind === "key" && (typeof bound.v !== "string" || bound.k !== undefined)) {
      throw new Error(`${bound.name}: with orderByKey the value must be a key, and no second argument is allowed`);
    }
  }
  return new Query(q._db, q._path, params);
}

/** Orders by the value at `path` under each child. */
export function orderByChild(path) {
  const segments = parsePath(path);
  if (segments.length === 0 || segments[0][0] === "$") throw new Error("orderByChild: invalid path");
  return orderConstraint("orderByChild", { kind: "child", path: segments });
}
/** Orders by key. */
export const orderByKey = () => orderConstraint("orderByKey", { kind: "key" });
/** Orders by each child's own value. */
export const orderByValue = () => orderConstraint("orderByValue", { kind: "value" });
/** Orders by priority (the default order). */
export const orderByPriority = () => orderConstraint("orderByPriority", PRIORITY_INDEX);
/** Keeps the first `n` children in query order. */
export const limitToFirst = (n) => limitConstraint("limitToFirst", n, "l");
/** Keeps the last `n` children in query order. */
export const limitToLast = (n) => limitConstraint("limitToLast", n, "r");
/** Starts at `value` (inclusive); `key` breaks ties among equal values. */
export const startAt = (value = null, key) => boundConstraint("startAt", "start", value, key, true, MIN_NAME);
/** Starts after `value` (exclusive). */
export const startAfter = (value, key) => boundConstraint("startAfter", "start", value ?? null, key, false, MAX_NAME);
/** Ends at `value` (inclusive). */
export const endAt = (value = null, key) => boundConstraint("endAt", "end", value, key, true, MAX_NAME);
/** Ends before `value` (exclusive). */
export const endBefore = (value, key) => boundConstraint("endBefore", "end", value ?? null, key, false, MIN_NAME);
/** Only children whose ordered value equals `value` (and key equals `key`, if given). */
export function equalTo(value, key) {
  const s = startAt(value, key), e = endAt(value, key);
  return constraint("equalTo", (p) => e._apply(s._apply(p)));
}

function listener(type) {
  return (q, callback, cancelOrOptions, options) => {
    const cancel = typeof cancelOrOptions === "function" ? cancelOrOptions : null;
    const opts = (typeof cancelOrOptions === "object" && cancelOrOptions) || options || {};
    return q._db._repo.addRegistration(q, type, callback, cancel, !!opts.onlyOnce);
  };
}

/**
 * Calls `callback(snapshot)` with the data at the query now and after every change. Returns the
 * function that stops listening. `.info/connected` can be watched too.
 * ```js
 * const stop = onValue(ref(db, "users/alice"), (snap) => render(snap.val()));
 * ```
 * @returns {() => void}
 */
export const onValue = listener("value");
/** Calls `callback(snapshot, previousChildName)` for each existing and each new child. */
export const onChildAdded = listener("child_added");
/** Calls `callback(snapshot, previousChildName)` when a child's data changes. */
export const onChildChanged = listener("child_changed");
/** Calls `callback(snapshot)` with the old data of each removed child. */
export const onChildRemoved = listener("child_removed");
/** Calls `callback(snapshot, previousChildName)` when a child's position in the order changes. */
export const onChildMoved = listener("child_moved");

/** Removes listeners at `q`: all, those of one event type, or one callback. */
export function off(q, eventType, callback) {
  const repo = q._db._repo;
  const view = repo.views.get(wirePath(q._path) + "|" + canonicalJSON(wireQuery(q._params)));
  for (const reg of [...(view?.regs ?? [])]) {
    if ((!eventType || reg.type === eventType) && (!callback || reg.callback === callback)) repo.removeRegistration(reg, true);
  }
}

/**
 * Atomically modifies the data at `ref`: `update(current)` returns the new value, or undefined
 * to abort. Runs again with fresh data whenever another client wrote first (up to 25 times).
 * ```js
 * const { committed, snapshot } = await runTransaction(ref(db, "counter"), (n) => (n ?? 0) + 1);
 * ```
 * @returns {Promise<{committed: boolean, snapshot: DataSnapshot}>}
 */
export function runTransaction(r, update, options = {}) {
  const path = writablePath(r, "runTransaction");
  if (typeof update !== "function") throw new Error("runTransaction: update must be a function");
  return r._db._repo.transaction(path, update, options.applyLocally !== false);
}

/** Writes the server performs when this client disconnects. */
export class OnDisconnect {
  constructor(r) { this._ref = r; this._path = writablePath(r, "onDisconnect"); }
  _op(action, d) { return this._ref._db._repo.conn.onDisconnectOp(action, { p: wirePath(this._path), d }); }
  set(value) { return this._op("o", normalize(value)); }
  setWithPriority(value, priority) { return this._op("o", withPriority(normalize(value), priority)); }
  remove() { return this._op("o", null); }
  update(values) {
    const entries = mergeEntries(this._path, values, "onDisconnect.update");
    return this._op("om", Object.fromEntries(entries.map(([k, , node]) => [k, node])));
  }
  /** Cancels every onDisconnect write at this location and below. */
  cancel() { return this._op("oc", null); }
}

/**
 * ```js
 * await onDisconnect(ref(db, "presence/alice")).set(serverTimestamp());
 * ```
 */
export function onDisconnect(r) { return new OnDisconnect(r); }

/** A placeholder the server replaces with its time in milliseconds since 1970. */
export const serverTimestamp = () => ({ ".sv": "timestamp" });

/** A placeholder the server replaces with the current number plus `delta` (or `delta`). */
export function increment(delta) {
  if (typeof delta !== "number" || !Number.isFinite(delta)) throw new Error("increment: expected a finite number");
  return { ".sv": { increment: delta } };
}

/** Internals exposed for tests only; not part of the API. */
export const _internals = { sortedChildren, compareKeys, compareValues, nodeHash, nextPushId, applyQuery, wireQuery, normalize, toVal, sha1Base64, splitFrames };
