// References and queries: Query, Reference, ref, child.
// Part of hearth.js, the browser client of the Realtime Database; ../hearth.js is the entry.

import { parsePath, validatePath, wirePath } from "./paths.js";
import { DEFAULT_PARAMS, canonicalJSON, wireQuery } from "./queries.js";

/** A location and a set of query constraints; made by {@link query}. */
export class Query {
  constructor(db, path, params) {
    this._db = db;
    this._path = path;
    this._params = params;
  }
  get ref() { return new Reference(this._db, this._path); }
  isEqual(other) {
    return !!other && other._db === this._db && wirePath(other._path) === wirePath(this._path) &&
      canonicalJSON(wireQuery(other._params)) === canonicalJSON(wireQuery(this._params));
  }
  toString() {
    const base = this._db._repo.conn.wsBase.replace(/^ws/, "http");
    return base + "/" + this._path.map(encodeURIComponent).join("/");
  }
  toJSON() { return this.toString(); }
}

/** A location in the database. `key` is its last segment (null at the root). */
export class Reference extends Query {
  constructor(db, path) { super(db, path, DEFAULT_PARAMS); }
  get key() { return this._path.length ? this._path[this._path.length - 1] : null; }
  get parent() { return this._path.length ? new Reference(this._db, this._path.slice(0, -1)) : null; }
  get root() { return new Reference(this._db, []); }
}

/**
 * A reference to `path` (default: the root).
 * ```js
 * const alice = ref(db, "users/alice");
 * ```
 */
export function ref(db, path) {
  const segments = parsePath(path);
  validatePath(segments, "ref");
  return new Reference(db, segments);
}

/** The reference at `path` below `parent`; `path` may contain slashes. */
export function child(parent, path) {
  const segments = parsePath(path);
  validatePath(parent._path.concat(segments), "child");
  return new Reference(parent._db, parent._path.concat(segments));
}

export function writablePath(r, where) {
  if (!(r instanceof Reference)) throw new Error(`${where}: expected a Reference`);
  if (r._path[0] === ".info") throw new Error(`${where}: .info is read-only`);
  return r._path;
}
