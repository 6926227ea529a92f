// Paths and keys.
// Part of hearth.js, the browser client of the Realtime Database; ../hearth.js is the entry.

export const MIN_NAME = "[MIN_NAME]";
export const MAX_NAME = "[MAX_NAME]";
const INVALID_KEY = /[.#$\[\]\/\u0000-\u001F\u007F]/;

/** Splits "a/b//c" into ["a","b","c"]; leading, trailing and doubled slashes mean nothing. */
export function parsePath(path) {
  return String(path ?? "").split("/").filter((s) => s !== "");
}

export function validateKey(key, where) {
  if (typeof key !== "string" || key === "" || INVALID_KEY.test(key)) {
    throw new Error(`${where}: invalid key "${key}" (keys must be non-empty and must not contain . # $ [ ] / or control characters)`);
  }
}

/** Validates user paths; `.info` is allowed as the first segment and `.priority` as the last. */
export function validatePath(segments, where) {
  segments.forEach((s, i) => {
    if ((i === 0 && s === ".info") || (i === segments.length - 1 && s === ".priority")) return;
    validateKey(s, where);
  });
  if (segments.length > 32) throw new Error(`${where}: paths are at most 32 segments deep`);
}

export const wirePath = (segments) => "/" + segments.join("/");
export const isPrefix = (a, b) => a.length <= b.length && a.every((s, i) => s === b[i]);
export const related = (a, b) => isPrefix(a, b) || isPrefix(b, a);
