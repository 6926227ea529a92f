// Internals for the tests in Tests/Browser.
// Part of hearth.js, the browser client of the Realtime Database; ../hearth.js is the entry.

import { compareKeys, compareValues } from "./ordering.js";
import { normalize, toVal } from "./nodes.js";
import { nodeHash, sha1Base64 } from "./hashing.js";
import { nextPushId } from "./push-ids.js";
import { applyQuery, sortedChildren, wireQuery } from "./queries.js";
import { splitFrames } from "./connection.js";

/** Internals exposed for tests only; not part of the API. */
export const _internals = { sortedChildren, compareKeys, compareValues, nodeHash, nextPushId, applyQuery, wireQuery, normalize, toVal, sha1Base64, splitFrames };
