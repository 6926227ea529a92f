// Queries (§8): ordering children by an index, a query's result, its wire form.
// Part of hearth.js, the browser client of the Realtime Database; ../hearth.js is the entry.

import { MIN_NAME, MAX_NAME } from "./paths.js";
import { compareKeys, compareValues } from "./ordering.js";
import { childKeys, getAt, hasChildren, isObject, leafValue, priorityOf } from "./nodes.js";

// Query params: { index: {kind, path?}, start?: {v, k, inclusive}, end?: {…}, limit?, vf? }.

export const PRIORITY_INDEX = { kind: "priority" };
export const DEFAULT_PARAMS = Object.freeze({ index: PRIORITY_INDEX });

export function sortValue(node, key, index) {
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

export function sortedChildren(node, index) {
  return childKeys(node)
    .map((k) => [k, node[k], sortValue(node[k], k, index)])
    .sort((a, b) => comparePosts(a[2], a[0], b[2], b[0], index));
}

export const loadsAllData = (p) => !p.start && !p.end && !p.limit;

/** A query's result over the full node at its location (§8.4); the root priority is dropped. */
export function applyQuery(node, p) {
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
export function wireQuery(p) {
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
export function canonicalJSON(v) {
  if (!isObject(v)) return JSON.stringify(v);
  if (Array.isArray(v)) return "[" + v.map(canonicalJSON).join(",") + "]";
  return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + canonicalJSON(v[k])).join(",") + "}";
}
