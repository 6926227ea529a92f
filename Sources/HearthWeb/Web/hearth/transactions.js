// Transactions (§9.2).
// Part of hearth.js, the browser client of the Realtime Database; ../hearth.js is the entry.

import { wirePath } from "./paths.js";
import { normalize, resolveServerValues, toVal } from "./nodes.js";
import { nodeHash } from "./hashing.js";
import { DEFAULT_PARAMS, canonicalJSON, wireQuery } from "./queries.js";
import { DataSnapshot } from "./snapshot.js";
import { Query, Reference, writablePath } from "./references.js";
import { serverError } from "./connection.js";

// Transactions (§9.2): compare-and-set puts with `h`, rerun on datastale, 25 attempts.
export function transaction(repo, path, update, applyLocally) {
  const key = wirePath(path);
  const previous = repo.transactions.get(key) ?? Promise.resolve();
  const run = previous.then(() => runAttempts(repo, path, update, applyLocally));
  repo.transactions.set(key, run.catch(() => {}));
  return run;
}

async function runAttempts(repo, path, update, applyLocally) {
  let ready, failed;
  const loaded = new Promise((resolve, reject) => { ready = resolve; failed = reject; });
  const unwatch = repo.addRegistration(new Query(repo.db, path, DEFAULT_PARAMS), "value", () => ready(), (e) => failed(e), false);
  const listen = repo.views.get(wirePath(path) + "|" + canonicalJSON(wireQuery(DEFAULT_PARAMS))).listen;
  const snapshotOf = (node) => new DataSnapshot(new Reference(repo.db, path), node);
  try {
    await loaded;
    for (let attempt = 1; ; attempt++) {
      const current = repo.localValue(path).node;
      const result = update(toVal(current));
      if (result === undefined) return { committed: false, snapshot: snapshotOf(current) };
      const newNode = normalize(result, "transaction result");
      const hash = nodeHash(current);
      const waitForData = new Promise((resolve) => listen.waiters.push(resolve));
      const local = resolveServerValues(newNode, current, repo.serverTime());
      const pendingId = applyLocally ? repo.addPending(path, [[path, local]]) : null;
      const { status, detail } = await new Promise((resolve) => {
        repo.conn.write("p", { p: wirePath(path), d: newNode, h: hash }, (status, detail) => resolve({ status, detail }));
      });
      if (pendingId !== null) repo.removePending(pendingId);
      if (status === "ok") return { committed: true, snapshot: snapshotOf(repo.localValue(path).node) };
      if (status !== "datastale" && status !== "disconnect") throw serverError(status, detail);
      if (attempt >= 25) throw serverError("maxretry", "Transaction had too many retries");
      // Retry on fresh data: after a disconnect, once reconnected; after datastale, once the
      // server's newer value has arrived (it normally has already; wait at most a second).
      if (status === "disconnect") await repo.whenConnected();
      else if (nodeHash(repo.localValue(path).node) === hash) {
        await Promise.race([waitForData, new Promise((r) => setTimeout(r, 1000))]);
      }
    }
  } finally {
    unwatch();
  }
}

/**
 * Atomically modifies the data at `ref`: `update(current)` returns the new value, or undefined
 * to abort. Runs again with fresh data whenever another client wrote first (up to 25 times).
 * ```js
 * const { committed, snapshot } = await runTransaction(ref(db, "counter"), (n) => (n ?? 0) + 1);
 * ```
 * @returns {Promise<{committed: boolean, snapshot: DataSnapshot}>}
 */
export function runTransaction(r, update, options = {}) {
  const path = writablePath(r, "runTransaction");
  if (typeof update !== "function") throw new Error("runTransaction: update must be a function");
  return transaction(r._db._repo, path, update, options.applyLocally !== false);
}
