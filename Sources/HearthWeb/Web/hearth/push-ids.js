// Push IDs.
// Part of hearth.js, the browser client of the Realtime Database; ../hearth.js is the entry.

const PUSH_CHARS = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";
let lastPushTime = 0;
const lastPushRandom = new Array(12).fill(0);

/** 8 time characters + 12 random ones; within one millisecond the random part counts up. */
export function nextPushId(now) {
  const duplicateTime = now === lastPushTime;
  lastPushTime = now;
  let id = "";
  for (let i = 0; i < 8; i++) { id = PUSH_CHARS.charAt(now % 64) + id; now = Math.floor(now / 64); }
  if (!duplicateTime) {
    const random = crypto.getRandomValues(new Uint8Array(12));
    for (let i = 0; i < 12; i++) lastPushRandom[i] = random[i] & 63;
  } else {
    let i = 11;
    for (; i >= 0 && lastPushRandom[i] === 63; i--) lastPushRandom[i] = 0;
    if (i >= 0) lastPushRandom[i]++;
  }
  return id + lastPushRandom.map((r) => PUSH_CHARS.charAt(r)).join("");
}
