// Query constraints: query() and orderBy…, limitTo…, startAt…, endAt…, equalTo.
// Part of hearth.js, the browser client of the Realtime Database; ../hearth.js is the entry.

import { MIN_NAME, MAX_NAME, parsePath, validateKey } from "./paths.js";
import { PRIORITY_INDEX } from "./queries.js";
import { Query } from "./references.js";

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
