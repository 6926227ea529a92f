// Ordering (§8.3): keys, values and priorities.
// Part of hearth.js, the browser client of the Realtime Database; ../hearth.js is the entry.

import { MIN_NAME, MAX_NAME } from "./paths.js";

const INTEGER_KEY = /^-?0*\d{1,10}$/; // the JS SDK rule, also used by HearthCore's Key

function keyAsInt(key) {
  if (!INTEGER_KEY.test(key)) return null;
  const n = Number(key);
  return n >= -2147483648 && n <= 2147483647 ? n : null;
}

// JS `<` on strings compares UTF-16 code units, which is exactly Firebase's string order.
const compareStrings = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

/** Firebase key order: sentinels, then 32-bit integer keys numerically, then UTF-16 order. */
export function compareKeys(a, b) {
  if (a === b) return 0;
  if (a === MIN_NAME || b === MAX_NAME || b === "[MAX_KEY]") return -1;
  if (b === MIN_NAME || a === MAX_NAME || a === "[MAX_KEY]") return 1;
  const ai = keyAsInt(a), bi = keyAsInt(b);
  if (ai !== null && bi !== null) {
    if (ai !== bi) return ai < bi ? -1 : 1;
    return a.length - b.length || compareStrings(a, b); // "1" < "01"
  }
  if (ai !== null) return -1;
  if (bi !== null) return 1;
  return compareStrings(a, b);
}

export const OBJECT = Symbol("object"); // the sort value of any non-leaf node: all objects compare equal

function typeRank(v) {
  if (v === null || v === undefined) return 0;
  if (v === false) return 1;
  if (v === true) return 2;
  if (typeof v === "number") return 3;
  if (typeof v === "string") return 4;
  return 5;
}

/** Value order: null < false < true < numbers < strings < objects. Also orders priorities. */
export function compareValues(a, b) {
  const ra = typeRank(a), rb = typeRank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 3) return a < b ? -1 : a > b ? 1 : 0;
  if (ra === 4) return compareStrings(a, b);
  return 0;
}
