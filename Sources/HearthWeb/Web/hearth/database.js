// The database handle: initializeDatabase, goOffline, goOnline, setAuthToken.
// Part of hearth.js, the browser client of the Realtime Database; ../hearth.js is the entry.

import { Repo } from "./repo.js";

/** A database handle; create it with {@link initializeDatabase}. */
export class Database {
  constructor(repo) { this._repo = repo; }
}

/**
 * Connects to a Hearth server. One WebSocket per database, opened at once and kept open.
 *
 * ```js
 * const db = initializeDatabase({ url: "http://127.0.0.1:9000", namespace: "demo", authToken: "owner" });
 * const db2 = initializeDatabase({ url: "http://127.0.0.1:9000/?ns=demo" });
 * ```
 * @param {{url?: string, namespace?: string, authToken?: string | (() => Promise<string>)}} options
 *   `url` defaults to the page's origin; `namespace` defaults to `?ns=` in the URL, then to the
 *   first label of a host with 3 or more labels. `authToken` is sent as `auth` (JWT) or `gauth`.
 * @returns {Database}
 */
export function initializeDatabase(options = {}) {
  const url = new URL(options.url ?? globalThis.location.origin);
  const labels = url.hostname.split(".");
  const namespace = options.namespace ?? url.searchParams.get("ns") ?? (labels.length >= 3 ? labels[0].toLowerCase() : "");
  const scheme = url.protocol === "https:" || url.protocol === "wss:" ? "wss" : "ws";
  const db = new Database(null);
  db._repo = new Repo(db, `${scheme}://${url.host}`, namespace, options.authToken);
  return db;
}

/** Closes the connection and stops reconnecting; local writes keep working and queue up. */
export function goOffline(db) { db._repo.conn.interrupt(); }

/** Reconnects after {@link goOffline}: listens, pending writes and onDisconnects are resent. */
export function goOnline(db) { db._repo.conn.resume(); }

/**
 * Changes the credential: a token string, a function returning one, or null to sign out.
 * ```js
 * setAuthToken(db, await signIn(email, password));
 * ```
 */
export function setAuthToken(db, token) { db._repo.conn.setAuthToken(token); }
