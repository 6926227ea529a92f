// onDisconnect: writes the server performs when this client disconnects.
// Part of hearth.js, the browser client of the Realtime Database; ../hearth.js is the entry.

import { wirePath } from "./paths.js";
import { normalize, withPriority } from "./nodes.js";
import { writablePath } from "./references.js";
import { mergeEntries } from "./writes.js";

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
