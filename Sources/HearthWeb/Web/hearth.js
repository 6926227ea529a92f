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
 * The code is in the modules under hearth/, which this file re-exports: paths.js (paths and keys) ·
 * ordering.js (§8.3) · nodes.js (data nodes) · hashing.js (§9.1) · push-ids.js · queries.js (§8) ·
 * constraints.js (query() and its constraints) · snapshot.js · connection.js (the WebSocket, §1–§5,
 * §14) · repo.js (sync and events) · transactions.js (§9.2) · database.js · references.js ·
 * writes.js · reads.js (get and the listeners) · on-disconnect.js · internals.js (for tests).
 */

export { Database, initializeDatabase, goOffline, goOnline, setAuthToken } from "./hearth/database.js";
export { Query, Reference, ref, child } from "./hearth/references.js";
export { DataSnapshot } from "./hearth/snapshot.js";
export { set, setWithPriority, setPriority, remove, update, push, serverTimestamp, increment } from "./hearth/writes.js";
export { get, onValue, onChildAdded, onChildChanged, onChildRemoved, onChildMoved, off } from "./hearth/reads.js";
export {
  query, orderByChild, orderByKey, orderByValue, orderByPriority, limitToFirst, limitToLast,
  startAt, startAfter, endAt, endBefore, equalTo,
} from "./hearth/constraints.js";
export { runTransaction } from "./hearth/transactions.js";
export { OnDisconnect, onDisconnect } from "./hearth/on-disconnect.js";
export { _internals } from "./hearth/internals.js";
