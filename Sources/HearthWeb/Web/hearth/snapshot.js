// Snapshots.
// Part of hearth.js, the browser client of the Realtime Database; ../hearth.js is the entry.

import { parsePath } from "./paths.js";
import { childKeys, getAt, priorityOf, toVal } from "./nodes.js";
import { PRIORITY_INDEX, sortedChildren } from "./queries.js";
import { child } from "./references.js";

/** An immutable copy of the data at a location, as seen by one event or read. */
export class DataSnapshot {
  constructor(ref, node, index = PRIORITY_INDEX) {
    this.ref = ref;
    this._node = node ?? null;
    this._index = index;
  }
  get key() { return this.ref.key; }
  get priority() { return priorityOf(this._node); }
  get size() { return childKeys(this._node).length; }
  /** The data as plain JavaScript (priorities stripped), or null. */
  val() { return toVal(this._node); }
  /** The data in export format, with ".priority" and ".value" where present. */
  exportVal() { return structuredClone(this._node); }
  toJSON() { return this.exportVal(); }
  exists() { return this._node !== null; }
  child(path) {
    const segments = parsePath(path);
    return new DataSnapshot(child(this.ref, path), getAt(this._node, segments));
  }
  hasChild(path) { return getAt(this._node, parsePath(path)) !== null; }
  hasChildren() { return childKeys(this._node).length > 0; }
  numChildren() { return this.size; }
  /** Calls `action` for each child in query order; returning true stops the loop. */
  forEach(action) {
    for (const [k, c] of sortedChildren(this._node, this._index)) {
      if (action(new DataSnapshot(child(this.ref, k), c)) === true) return true;
    }
    return false;
  }
}
