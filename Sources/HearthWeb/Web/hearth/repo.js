// Sync and events: listens, views, pending writes, and the events they raise.
// Part of hearth.js, the browser client of the Realtime Database; ../hearth.js is the entry.
// Transactions, which run on a Repo's listens and pending writes, are in transactions.js.

import { isPrefix, parsePath, related, wirePath } from "./paths.js";
import { compareValues } from "./ordering.js";
import { childOf, deepEqual, getAt, hasChildren, isObject, normalize, setAt } from "./nodes.js";
import { nodeHash } from "./hashing.js";
import { applyQuery, canonicalJSON, loadsAllData, sortValue, sortedChildren, wireQuery } from "./queries.js";
import { DataSnapshot } from "./snapshot.js";
import { Reference, child } from "./references.js";
import { Connection, serverError } from "./connection.js";

/**
 * The client's model of the database: listens with their server caches, views with their
 * callbacks, and the pending (unacknowledged) local writes.
 */
export class Repo {
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
