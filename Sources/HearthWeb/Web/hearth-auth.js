/**
 * hearth-auth.js: accounts on a Hearth server for browsers, with the names of Firebase Auth's
 * modular API. It talks to the identity service on the database's own origin
 * (`/identitytoolkit.googleapis.com/v1/…`, `/securetoken.googleapis.com/v1/token`) and hands the
 * signed-in user's ID token to a hearth.js database, so its rules see `auth.uid`.
 *
 * ```js
 * import { initializeDatabase, ref, set } from "/hearth.js";
 * import { getAuth, createUserWithEmailAndPassword, onAuthStateChanged } from "/hearth-auth.js";
 * const db = initializeDatabase({ namespace: "demo" });
 * const auth = getAuth(db);
 * onAuthStateChanged(auth, (user) => console.log(user ? user.uid : "signed out"));
 * const { user } = await createUserWithEmailAndPassword(auth, "ada@example.com", "correct horse");
 * await set(ref(db, `users/${user.uid}`), { name: "Ada" });
 * ```
 *
 * The session (refresh token) is kept in localStorage per origin and namespace, so a reload stays
 * signed in; ID tokens are refreshed five minutes before they expire.
 */
import { setAuthToken } from "./hearth.js";

/** An error from the identity service: `code` is Firebase's (`auth/email-already-in-use`, …). */
export class AuthError extends Error {
  constructor(code, message) {
    super(`${message} (${code})`);
    this.code = code;
    this.serverMessage = message;
  }
}

const CODES = {
  EMAIL_EXISTS: "auth/email-already-in-use",
  INVALID_PASSWORD: "auth/wrong-password",
  INVALID_LOGIN_CREDENTIALS: "auth/invalid-credential",
  EMAIL_NOT_FOUND: "auth/user-not-found",
  USER_NOT_FOUND: "auth/user-not-found",
  USER_DISABLED: "auth/user-disabled",
  WEAK_PASSWORD: "auth/weak-password",
  INVALID_EMAIL: "auth/invalid-email",
  MISSING_EMAIL: "auth/missing-email",
  MISSING_PASSWORD: "auth/missing-password",
  TOO_MANY_ATTEMPTS_TRY_LATER: "auth/too-many-requests",
  TOKEN_EXPIRED: "auth/user-token-expired",
  INVALID_ID_TOKEN: "auth/invalid-user-token",
  INVALID_REFRESH_TOKEN: "auth/invalid-user-token",
  CREDENTIAL_TOO_OLD_LOGIN_AGAIN: "auth/requires-recent-login",
  INVALID_OOB_CODE: "auth/invalid-action-code",
  EXPIRED_OOB_CODE: "auth/expired-action-code",
  INVALID_CUSTOM_TOKEN: "auth/invalid-custom-token",
  OPERATION_NOT_ALLOWED: "auth/operation-not-allowed",
};

class Auth {
  constructor(db, origin, apiKey) {
    this.db = db;
    this.origin = origin;
    this.apiKey = apiKey;
    this.currentUser = null;
    this.listeners = new Set();
    this.refreshTimer = null;
    this.storageKey = `hearth-auth:${origin}:${db._repo.conn.namespace}`;
    this.ready = this.restore();
  }

  async call(path, body, form = false) {
    let response;
    try {
      response = await fetch(`${this.origin}/${path}?key=${encodeURIComponent(this.apiKey)}`, {
        method: "POST",
        headers: { "Content-Type": form ? "application/x-www-form-urlencoded" : "application/json" },
        body: form ? new URLSearchParams(body).toString() : JSON.stringify(body),
      });
    } catch (error) {
      throw new AuthError("auth/network-request-failed", String(error));
    }
    const json = await response.json().catch(() => ({}));
    if (!response.ok) {
      const message = json?.error?.message ?? `HTTP ${response.status}`;
      throw new AuthError(CODES[message.split(":")[0].trim()] ?? "auth/internal-error", message);
    }
    return json;
  }

  identity(operation, body) { return this.call(`identitytoolkit.googleapis.com/v1/${operation}`, body); }

  /** Signs in from a sign-in or sign-up reply, then loads the profile. */
  async adopt(reply) {
    const session = { uid: reply.localId, idToken: reply.idToken, refreshToken: reply.refreshToken,
      expiresAt: Date.now() + Number(reply.expiresIn ?? 3600) * 1000 };
    const profile = await this.lookup(session.idToken);
    this.setUser(new User(this, session, profile));
    return { user: this.currentUser };
  }

  async lookup(idToken) {
    const reply = await this.identity("accounts:lookup", { idToken });
    const record = reply.users?.[0] ?? {};
    return { email: record.email ?? null, displayName: record.displayName ?? null, photoURL: record.photoUrl ?? null,
      emailVerified: record.emailVerified === true,
      isAnonymous: !record.email && !(record.providerUserInfo ?? []).length };
  }

  /** Makes `user` current (or none); listeners hear of sign-ins and sign-outs, not token refreshes. */
  setUser(user) {
    const changed = this.currentUser !== user;
    this.currentUser = user;
    clearTimeout(this.refreshTimer);
    if (user) {
      localStorage.setItem(this.storageKey, JSON.stringify({ uid: user.uid, refreshToken: user._session.refreshToken, profile: user._profile }));
      setAuthToken(this.db, user._session.idToken);
      this.refreshTimer = setTimeout(() => user.getIdToken(true).catch(() => {}),
        Math.max(1000, user._session.expiresAt - Date.now() - 5 * 60 * 1000));
    } else {
      localStorage.removeItem(this.storageKey);
      setAuthToken(this.db, null);
    }
    if (changed) for (const listener of this.listeners) listener(user);
  }

  /** A reload keeps the session: the stored refresh token is exchanged for a fresh ID token. */
  async restore() {
    const saved = JSON.parse(localStorage.getItem(this.storageKey) ?? "null");
    if (!saved) return;
    try {
      const user = new User(this, { uid: saved.uid, idToken: null, refreshToken: saved.refreshToken, expiresAt: 0 }, saved.profile);
      await user.getIdToken(true);
      this.setUser(user);
    } catch {
      localStorage.removeItem(this.storageKey);
    }
  }
}

class User {
  constructor(auth, session, profile) {
    this._auth = auth;
    this._session = session;
    this._profile = profile;
  }

  get uid() { return this._session.uid; }
  get email() { return this._profile.email; }
  get displayName() { return this._profile.displayName; }
  get photoURL() { return this._profile.photoURL; }
  get emailVerified() { return this._profile.emailVerified; }
  get isAnonymous() { return this._profile.isAnonymous; }

  /** The ID token, refreshed first when it expires within five minutes (or when forced). */
  async getIdToken(forceRefresh = false) {
    if (!forceRefresh && this._session.idToken && this._session.expiresAt - Date.now() > 5 * 60 * 1000) return this._session.idToken;
    const reply = await this._auth.call("securetoken.googleapis.com/v1/token",
      { grant_type: "refresh_token", refresh_token: this._session.refreshToken }, true);
    this._session = { uid: reply.user_id, idToken: reply.id_token, refreshToken: reply.refresh_token,
      expiresAt: Date.now() + Number(reply.expires_in ?? 3600) * 1000 };
    if (this._auth.currentUser === this) this._auth.setUser(this);
    return this._session.idToken;
  }

  async _update(changes) {
    const reply = await this._auth.identity("accounts:update", { idToken: await this.getIdToken(), ...changes, returnSecureToken: true });
    if (reply.idToken) {
      this._session = { uid: reply.localId, idToken: reply.idToken, refreshToken: reply.refreshToken,
        expiresAt: Date.now() + Number(reply.expiresIn ?? 3600) * 1000 };
    }
    this._profile = await this._auth.lookup(this._session.idToken);
    if (this._auth.currentUser === this) this._auth.setUser(this);
  }

  toJSON() { return { uid: this.uid, email: this.email, displayName: this.displayName, isAnonymous: this.isAnonymous }; }
}

/**
 * The Auth of a hearth.js database (one per database). `options.url` names another server;
 * `options.apiKey` is sent as `key=` (a server configured with API keys refuses others).
 */
export function getAuth(db, options = {}) {
  if (!db._auth) {
    const origin = options.url ?? db._repo.conn.wsBase.replace(/^ws/, "http");
    db._auth = new Auth(db, origin, options.apiKey ?? "hearth");
  }
  return db._auth;
}

/** Sends identity calls to another server (Firebase's name; Hearth's identity is on the database's origin). */
export function connectAuthEmulator(auth, url) { auth.origin = url.replace(/\/$/, ""); }

export async function createUserWithEmailAndPassword(auth, email, password) {
  return auth.adopt(await auth.identity("accounts:signUp", { email, password, returnSecureToken: true }));
}

export async function signInWithEmailAndPassword(auth, email, password) {
  return auth.adopt(await auth.identity("accounts:signInWithPassword", { email, password, returnSecureToken: true }));
}

export async function signInAnonymously(auth) {
  return auth.adopt(await auth.identity("accounts:signUp", { returnSecureToken: true }));
}

export async function signInWithCustomToken(auth, token) {
  return auth.adopt(await auth.identity("accounts:signInWithCustomToken", { token, returnSecureToken: true }));
}

/** Signs out: the database connection drops the credential and listeners hear `null`. */
export async function signOut(auth) { auth.setUser(null); }

/** Calls `callback` with the current user once the saved session is restored, then on every change. */
export function onAuthStateChanged(auth, callback) {
  auth.listeners.add(callback);
  auth.ready.then(() => { if (auth.listeners.has(callback)) callback(auth.currentUser); });
  return () => auth.listeners.delete(callback);
}

/** Asks the server to email a password-reset link (with `--smtp-url`; else the link waits in the outbox: docs/identity.md). */
export async function sendPasswordResetEmail(auth, email) {
  await auth.identity("accounts:sendOobCode", { requestType: "PASSWORD_RESET", email });
}

export async function sendEmailVerification(user) {
  await user._auth.identity("accounts:sendOobCode", { requestType: "VERIFY_EMAIL", idToken: await user.getIdToken() });
}

export function updatePassword(user, password) { return user._update({ password }); }

export function updateEmail(user, email) { return user._update({ email }); }

export function updateProfile(user, { displayName, photoURL } = {}) {
  const changes = {};
  if (displayName !== undefined) changes.displayName = displayName;
  if (photoURL !== undefined) changes.photoUrl = photoURL;
  return user._update(changes);
}

export async function deleteUser(user) {
  await user._auth.identity("accounts:delete", { idToken: await user.getIdToken() });
  if (user._auth.currentUser === user) user._auth.setUser(null);
}
