// Writes: set, update, push, remove, priorities, and the server values.
// Part of hearth.js, the browser client of the Realtime Database; ../hearth.js is the entry.

import { parsePath, validatePath, wirePath } from "./paths.js";
import { checkPriority, isObject, normalize, resolveServerValues, withPriority } from "./nodes.js";
import { nextPushId } from "./push-ids.js";
import { child, writablePath } from "./references.js";

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

export function mergeEntries(path, values, where) {
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

/** A placeholder the server replaces with its time in milliseconds since 1970. */
export const serverTimestamp = () => ({ ".sv": "timestamp" });

/** A placeholder the server replaces with the current number plus `delta` (or `delta`). */
export function increment(delta) {
  if (typeof delta !== "number" || !Number.isFinite(delta)) throw new Error("increment: expected a finite number");
  return { ".sv": { increment: delta } };
}
