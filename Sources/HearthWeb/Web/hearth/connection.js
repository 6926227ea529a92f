// Connection (§1–§5, §14): the WebSocket, its framing, and resending after a reconnect.
// Part of hearth.js, the browser client of the Realtime Database; ../hearth.js is the entry.

import { parsePath } from "./paths.js";
import { isObject } from "./nodes.js";

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
export function splitFrames(text) {
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
export class Connection {
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

export function serverError(status, detail) {
  const messages = { permission_denied: "Client doesn't have permission to access the desired data." };
  const error = new Error(`${status}: ${messages[status] ?? (typeof detail === "string" && detail ? detail : status)}`);
  error.code = status;
  return error;
}
