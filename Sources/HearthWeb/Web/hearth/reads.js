// Reads: get, the listeners (onValue, onChild…) and off.
// Part of hearth.js, the browser client of the Realtime Database; ../hearth.js is the entry.

import { wirePath } from "./paths.js";
import { canonicalJSON, wireQuery } from "./queries.js";

/**
 * Reads once: from a listener's cache when one is up to date, else from the server.
 * ```js
 * const snap = await get(ref(db, "users/alice"));
 * ```
 */
export function get(q) { return q._db._repo.get(q); }

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
