// Hashing (§9.1).
// Part of hearth.js, the browser client of the Realtime Database; ../hearth.js is the entry.

import { hasChildren, leafValue, priorityOf } from "./nodes.js";
import { PRIORITY_INDEX, sortedChildren } from "./queries.js";

// Synchronous SHA-1, so a transaction can compute its hash in the same tick as its new value.

function sha1(bytes) {
  const blocks = ((bytes.length + 8) >> 6) + 1;
  const words = new Uint32Array(blocks * 16);
  for (let i = 0; i < bytes.length; i++) words[i >> 2] |= bytes[i] << (24 - (i & 3) * 8);
  words[bytes.length >> 2] |= 0x80 << (24 - (bytes.length & 3) * 8);
  words[blocks * 16 - 1] = bytes.length * 8;
  words[blocks * 16 - 2] = Math.floor((bytes.length * 8) / 2 ** 32);
  const h = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0];
  const w = new Uint32Array(80);
  for (let b = 0; b < words.length; b += 16) {
    for (let t = 0; t < 80; t++) {
      w[t] = t < 16 ? words[b + t] : ((x) => (x << 1) | (x >>> 31))(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16]);
    }
    let [a, bb, c, d, e] = h;
    for (let t = 0; t < 80; t++) {
      const f = t < 20 ? (bb & c) | (~bb & d) : t < 40 ? bb ^ c ^ d : t < 60 ? (bb & c) | (bb & d) | (c & d) : bb ^ c ^ d;
      const k = t < 20 ? 0x5a827999 : t < 40 ? 0x6ed9eba1 : t < 60 ? 0x8f1bbcdc : 0xca62c1d6;
      const tmp = (((a << 5) | (a >>> 27)) + f + e + k + w[t]) >>> 0;
      e = d; d = c; c = ((bb << 30) | (bb >>> 2)) >>> 0; bb = a; a = tmp;
    }
    [a, bb, c, d, e].forEach((v, i) => { h[i] = (h[i] + v) >>> 0; });
  }
  const out = new Uint8Array(20);
  h.forEach((v, i) => { out[i * 4] = v >>> 24; out[i * 4 + 1] = v >>> 16; out[i * 4 + 2] = v >>> 8; out[i * 4 + 3] = v; });
  return out;
}

export const sha1Base64 = (text) => btoa(String.fromCharCode(...sha1(new TextEncoder().encode(text))));

function hex16(n) {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, n);
  let s = "";
  for (let i = 0; i < 8; i++) s += view.getUint8(i).toString(16).padStart(2, "0");
  return s;
}

const leafHashText = (v) => (typeof v === "number" ? "number:" + hex16(v) : typeof v === "boolean" ? "boolean:" + v : "string:" + v);

/** The node hash used by listens and compare-and-set transactions; "" for null. */
export function nodeHash(node) {
  if (node === null) return "";
  const priority = priorityOf(node);
  let s = priority === null ? "" : "priority:" + leafHashText(priority) + ":";
  if (!hasChildren(node)) return sha1Base64(s + leafHashText(leafValue(node)));
  for (const [key, child] of sortedChildren(node, PRIORITY_INDEX)) {
    const h = nodeHash(child);
    if (h !== "") s += ":" + key + ":" + h;
  }
  return s === "" ? "" : sha1Base64(s);
}
