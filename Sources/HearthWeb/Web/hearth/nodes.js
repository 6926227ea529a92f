// Data nodes.
// Part of hearth.js, the browser client of the Realtime Database; ../hearth.js is the entry.

import { validateKey } from "./paths.js";
import { OBJECT } from "./ordering.js";

// A node is the normalized export format (§7.2): null (no data), a primitive, a leaf with a
// priority {".value": v, ".priority": p}, or an object of non-null children with an optional
// ".priority". A server-value placeholder {".sv": …} is kept whole, as a leaf.

export const isObject = (n) => n !== null && typeof n === "object";
export const hasChildren = (n) => isObject(n) && !(".value" in n) && !(".sv" in n);
export const priorityOf = (n) => (isObject(n) && n[".priority"] !== undefined ? n[".priority"] : null);
export const childKeys = (n) => (hasChildren(n) ? Object.keys(n).filter((k) => k[0] !== ".") : []);

export function leafValue(n) {
  if (!isObject(n)) return n ?? null;
  if (".value" in n) return n[".value"];
  return OBJECT;
}

/** Turns user JSON into a node: arrays become objects, nulls vanish, empty objects are null. */
export function normalize(json, where = "value") {
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

export function checkPriority(p) {
  if (p === null || typeof p === "string" || (typeof p === "number" && Number.isFinite(p)) || (isObject(p) && ".sv" in p)) return p;
  throw new Error("A priority must be a string, a finite number or null");
}

export function withPriority(node, priority) {
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

export function childOf(node, key) {
  if (key === ".priority") return priorityOf(node);
  return hasChildren(node) && Object.hasOwn(node, key) ? node[key] : null; // never a prototype member
}

export const getAt = (node, path) => path.reduce((n, k) => childOf(n, k), node);

/** Returns a copy of `node` with `value` at `path`; copies only along the path. */
export function setAt(node, path, value, i = 0) {
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

export function deepEqual(a, b) {
  if (a === b) return true;
  if (!isObject(a) || !isObject(b)) return false;
  const ka = Object.keys(a), kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
}

const ARRAY_KEY = /^(0|[1-9]\d*)$/;

/** Firebase's val(): priorities stripped; dense integer-keyed objects read back as arrays. */
export function toVal(node) {
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
export function resolveServerValues(node, existing, now) {
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
