/**
 * hearth-storage.js: files on a Hearth server for browsers, with the names of Firebase Storage's
 * modular API. It speaks Firebase Storage's REST API (`/v0/b/{bucket}/o/…`) on the database's own
 * origin and sends the signed-in user's ID token from hearth-auth.js (or the database's `authToken`),
 * so storage rules see `request.auth`.
 *
 * ```js
 * import { initializeDatabase } from "/hearth.js";
 * import { getAuth, signInAnonymously } from "/hearth-auth.js";
 * import { getStorage, ref, uploadBytesResumable, getDownloadURL } from "/hearth-storage.js";
 * const db = initializeDatabase({ namespace: "demo" });
 * const { user } = await signInAnonymously(getAuth(db));
 * const task = uploadBytesResumable(ref(getStorage(db), `avatars/${user.uid}.png`), file, { contentType: "image/png" });
 * task.on("state_changed", (s) => console.log(s.bytesTransferred / s.totalBytes), console.error);
 * await task;
 * console.log(await getDownloadURL(task.snapshot.ref));
 * ```
 *
 * The default bucket is `<project>.appspot.com`, the project being the database's namespace without
 * `-default-rtdb`; `getStorage(db, "gs://other-bucket")` names another. Uploads over 256 KiB (with
 * `uploadBytesResumable`) go in resumable chunks of 256 KiB doubling up to 32 MiB, with progress from
 * XMLHttpRequest; after a network error or a server failure the task asks the server how much it has
 * and continues from there.
 */

/** A failed storage call: `code` is Firebase's (`storage/object-not-found`, `storage/unauthorized`, …). */
export class StorageError extends Error {
  constructor(code, message, status = 0, serverResponse = null) {
    super(`Firebase Storage: ${message} (${code})`);
    this.name = "FirebaseError";
    this.code = code;
    this.status_ = status;
    this.customData = { serverResponse };
  }

  get status() { return this.status_; }
  get serverResponse() { return this.customData.serverResponse; }
}

/** Firebase's error codes, without the `storage/` prefix (`StorageErrorCode.OBJECT_NOT_FOUND`). */
export const StorageErrorCode = Object.freeze({
  UNKNOWN: "unknown", OBJECT_NOT_FOUND: "object-not-found", BUCKET_NOT_FOUND: "bucket-not-found",
  QUOTA_EXCEEDED: "quota-exceeded", UNAUTHENTICATED: "unauthenticated", UNAUTHORIZED: "unauthorized",
  RETRY_LIMIT_EXCEEDED: "retry-limit-exceeded", CANCELED: "canceled", INVALID_ARGUMENT: "invalid-argument",
  INVALID_FORMAT: "invalid-format", NO_DEFAULT_BUCKET: "no-default-bucket", NO_DOWNLOAD_URL: "no-download-url",
  INVALID_ROOT_OPERATION: "invalid-root-operation", INVALID_URL: "invalid-url",
});

/** The formats of `uploadString`. */
export const StringFormat = Object.freeze({ RAW: "raw", BASE64: "base64", BASE64URL: "base64url", DATA_URL: "data_url" });

/** The states of an upload task's snapshot. */
export const TaskState = Object.freeze({ RUNNING: "running", PAUSED: "paused", SUCCESS: "success", CANCELED: "canceled", ERROR: "error" });

/** The event `UploadTask.on` takes. */
export const TaskEvent = Object.freeze({ STATE_CHANGED: "state_changed" });

const MULTIPART_LIMIT = 256 * 1024;
const MAX_CHUNK = 32 * 1024 * 1024;

function error(code, message, status = 0, serverResponse = null) {
  return new StorageError(`storage/${code}`, message, status, serverResponse);
}

const canceled = () => error("canceled", "User canceled the upload/download.");
const retryLimit = () => error("retry-limit-exceeded", "Max retry time for operation exceeded, please try again.");

/** The error of a failed response, as the official SDK maps statuses to codes. */
function errorFor(status, text, ref) {
  let serverMessage = null;
  try { serverMessage = JSON.parse(text)?.error?.message ?? null; } catch { /* not JSON */ }
  const path = ref ? ref.fullPath : "";
  switch (status) {
    case 401: return error("unauthenticated", "User is not authenticated, please authenticate using Firebase Authentication and try again.", status, text);
    case 402: return error("quota-exceeded", `Quota for bucket '${ref?.bucket ?? ""}' exceeded, please view quota on https://firebase.google.com/pricing/.`, status, text);
    case 403: return error("unauthorized", `User does not have permission to access '${path}'.`, status, text);
    case 404:
      if (/bucket/i.test(serverMessage ?? "")) return error("bucket-not-found", `Bucket '${ref?.bucket ?? ""}' does not exist.`, status, text);
      return error("object-not-found", `Object '${path}' does not exist.`, status, text);
    default:
      return error("unknown", `An unknown error occurred, please check the error payload for server response. (${serverMessage ?? `HTTP ${status}`})`, status, text);
  }
}

const retryable = (status) => status >= 500 || status === 408 || status === 429;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Percent-encodes as `encodeURIComponent` does (so `/` is `%2F`): an object name is one path segment. */
const encode = (text) => encodeURIComponent(text);

// ───────────────────────────── the service ─────────────────────────────

class FirebaseStorage {
  constructor(db, origin, bucket) {
    this._db = db ?? null;
    this._origin = origin;
    this._bucket = bucket;
    this._mockToken = null;
    /** Milliseconds an upload keeps retrying after network errors and server failures. */
    this.maxUploadRetryTime = 10 * 60 * 1000;
    /** Milliseconds other calls keep retrying. */
    this.maxOperationRetryTime = 2 * 60 * 1000;
  }

  /** The hearth.js database this storage belongs to (Firebase's `app`). */
  get app() { return this._db; }

  /** The credential for a request: the emulator mock token, the hearth-auth.js user's ID token, or the database's token. */
  async _token() {
    if (this._mockToken) return this._mockToken;
    const auth = this._db?._auth;
    if (auth) {
      await auth.ready;
      return auth.currentUser ? auth.currentUser.getIdToken() : null;
    }
    const token = this._db?._repo?.conn?.authToken;
    return typeof token === "function" ? await token() : (token ?? null);
  }

  async _headers(extra = {}) {
    const headers = { "X-Firebase-Storage-Version": "webjs/hearth", ...extra };
    const token = await this._token();
    if (token) headers.Authorization = `Firebase ${token}`;
    return headers;
  }

  _objectUrl(ref, query = "") {
    return `${this._origin}/v0/b/${encode(ref.bucket)}/o/${encode(ref.fullPath)}${query}`;
  }

  _bucketUrl(bucket, params) {
    const query = Object.entries(params).filter(([, v]) => v !== undefined && v !== null)
      .map(([k, v]) => `${encode(k)}=${encode(String(v))}`).join("&");
    return `${this._origin}/v0/b/${encode(bucket)}/o${query ? `?${query}` : ""}`;
  }

  /** fetch with the user's token; network errors and 5xx/408/429 retried with backoff within the budget. */
  async _fetch(method, url, ref, { headers = {}, body, accept = (s) => s >= 200 && s < 300 } = {}) {
    const deadline = Date.now() + this.maxOperationRetryTime;
    let delay = 250;
    for (;;) {
      let response;
      try {
        response = await fetch(url, { method, headers: await this._headers(headers), body, cache: "no-store" });
      } catch (e) {
        if (Date.now() + delay > deadline) throw retryLimit();
        await sleep(delay);
        delay = Math.min(delay * 2, 8000);
        continue;
      }
      if (accept(response.status)) return response;
      const text = await response.text();
      if (retryable(response.status)) {
        if (Date.now() + delay > deadline) throw retryLimit();
        await sleep(delay);
        delay = Math.min(delay * 2, 8000);
        continue;
      }
      throw errorFor(response.status, text, ref);
    }
  }
}

function defaultBucket(db) {
  const namespace = db?._repo?.conn?.namespace;
  if (!namespace) return null;
  return `${namespace.replace(/-default-rtdb$/, "")}.appspot.com`;
}

function bucketOf(url) {
  const match = /^gs:\/\/([^/]+)\/?$/.exec(url);
  if (!match) throw error("invalid-default-bucket", `Invalid default bucket '${url}'.`);
  return match[1];
}

/**
 * The storage of a hearth.js database (one per database and bucket), on the database's origin.
 * `bucketUrl` (`gs://bucket`) names a bucket other than `<project>.appspot.com`. Without a database,
 * the page's origin and the bucket given.
 */
export function getStorage(db, bucketUrl) {
  const bucket = bucketUrl ? bucketOf(bucketUrl) : defaultBucket(db);
  if (!bucket) throw error("no-default-bucket", "No default bucket found: pass getStorage(db) a hearth.js database or a gs:// bucket URL.");
  const origin = db?._repo?.conn?.wsBase ? db._repo.conn.wsBase.replace(/^ws/, "http") : location.origin;
  if (!db) return new FirebaseStorage(null, origin, bucket);
  db._storages ??= new Map();
  if (!db._storages.has(bucket)) db._storages.set(bucket, new FirebaseStorage(db, origin, bucket));
  return db._storages.get(bucket);
}

/**
 * Sends storage calls to `http://host:port`. `options.mockUserToken` (a token string, or claims such
 * as `{ sub: "uid" }` for an unsigned token the server accepts in emulator mode) is sent as the credential.
 */
export function connectStorageEmulator(storage, host, port, options = {}) {
  storage._origin = `http://${host}:${port}`;
  const mock = options.mockUserToken;
  if (typeof mock === "string") storage._mockToken = mock;
  else if (mock) storage._mockToken = mockToken(mock, storage._bucket.replace(/\.(appspot\.com|firebasestorage\.app)$/, ""));
}

function base64url(text) {
  return btoa(String.fromCharCode(...new TextEncoder().encode(text))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function mockToken(claims, project) {
  const iat = claims.iat ?? 0;
  const sub = claims.sub ?? claims.user_id;
  if (!sub) throw error("invalid-argument", "mockUserToken must contain 'sub' or 'user_id'.");
  const payload = { iss: `https://securetoken.google.com/${project}`, aud: project, iat, exp: iat + 3600, auth_time: iat,
    sub, user_id: sub, firebase: { sign_in_provider: "custom", identities: {} }, ...claims };
  return [base64url(JSON.stringify({ alg: "none", type: "JWT" })), base64url(JSON.stringify(payload)), ""].join(".");
}

// ───────────────────────────── references ─────────────────────────────

const normalize = (path) => path.split("/").filter((part) => part.length > 0).join("/");

/** A file or folder in a bucket, as Firebase's `StorageReference`. */
export class StorageReference {
  constructor(storage, bucket, path) {
    this._service = storage;
    this.bucket = bucket;
    this.fullPath = normalize(path);
  }

  get storage() { return this._service; }
  get name() { return this.fullPath.split("/").pop() ?? ""; }
  get parent() {
    if (this.fullPath === "") return null;
    return new StorageReference(this._service, this.bucket, this.fullPath.split("/").slice(0, -1).join("/"));
  }
  get root() { return new StorageReference(this._service, this.bucket, ""); }
  toString() { return `gs://${this.bucket}/${this.fullPath}`; }
}

function parseUrl(storage, url) {
  const gs = /^gs:\/\/([^/]+)\/?(.*)$/.exec(url);
  if (gs) return new StorageReference(storage, gs[1], gs[2]);
  const http = /^https?:\/\/[^/]+\/v0\/b\/([^/?#]+)\/o(?:\/([^?#]*))?/.exec(url);
  if (http) return new StorageReference(storage, decodeURIComponent(http[1]), decodeURIComponent(http[2] ?? ""));
  throw error("invalid-url", `Invalid URL '${url}'.`);
}

/**
 * `ref(storage)` is the bucket's root; `ref(storage, "images/a.png")` a path in it;
 * `ref(storage, "gs://bucket/path")` or a download URL that object; `ref(reference, "child/path")`
 * a path below a reference.
 */
export function ref(serviceOrRef, pathOrUrl) {
  if (serviceOrRef instanceof StorageReference) {
    if (pathOrUrl === undefined) return serviceOrRef;
    const base = serviceOrRef.fullPath;
    return new StorageReference(serviceOrRef._service, serviceOrRef.bucket, base ? `${base}/${pathOrUrl}` : pathOrUrl);
  }
  if (!(serviceOrRef instanceof FirebaseStorage)) throw error("invalid-argument", "ref() takes a storage from getStorage() or a reference.");
  if (pathOrUrl === undefined) return new StorageReference(serviceOrRef, serviceOrRef._bucket, "");
  if (/^(gs|https?):\/\//.test(pathOrUrl)) return parseUrl(serviceOrRef, pathOrUrl);
  return new StorageReference(serviceOrRef, serviceOrRef._bucket, pathOrUrl);
}

function requireObject(reference, operation) {
  if (reference.fullPath === "") {
    throw error("invalid-root-operation", `The operation '${operation}' cannot be performed on a root reference, create a non-root reference using child, such as .child('file.png').`);
  }
}

// ───────────────────────────── metadata ─────────────────────────────

const WRITABLE = ["contentType", "cacheControl", "contentDisposition", "contentEncoding", "contentLanguage"];

/** The metadata the server answered with, in Firebase's `FullMetadata` shape. */
function fullMetadata(storage, json) {
  const metadata = {
    type: "file", bucket: json.bucket, generation: json.generation, metageneration: json.metageneration,
    fullPath: json.name, name: (json.name ?? "").split("/").pop(), size: Number(json.size),
    timeCreated: json.timeCreated, updated: json.updated, md5Hash: json.md5Hash,
  };
  for (const key of WRITABLE) if (json[key] !== undefined) metadata[key] = json[key];
  if (json.metadata) metadata.customMetadata = json.metadata;
  if (json.downloadTokens) metadata.downloadTokens = String(json.downloadTokens).split(",").filter((t) => t);
  metadata.ref = new StorageReference(storage, json.bucket, json.name ?? "");
  return metadata;
}

/** Writable fields of `metadata` (undefined left out; null kept: it removes the field). */
function resource(metadata, name) {
  const body = name === undefined ? {} : { name };
  for (const key of WRITABLE) if (metadata[key] !== undefined) body[key] = metadata[key];
  if (metadata.customMetadata !== undefined) body.metadata = metadata.customMetadata;
  return body;
}

async function json(response) {
  const text = await response.text();
  return text ? JSON.parse(text) : {};
}

/** The object's metadata. */
export async function getMetadata(reference) {
  requireObject(reference, "getMetadata");
  const storage = reference._service;
  return fullMetadata(storage, await json(await storage._fetch("GET", storage._objectUrl(reference), reference)));
}

/** Changes the given fields (null removes one; `customMetadata` merges key by key, null removing a key). */
export async function updateMetadata(reference, metadata) {
  requireObject(reference, "updateMetadata");
  const storage = reference._service;
  const response = await storage._fetch("PATCH", storage._objectUrl(reference), reference, {
    headers: { "Content-Type": "application/json; charset=utf-8" }, body: JSON.stringify(resource(metadata ?? {})),
  });
  return fullMetadata(storage, await json(response));
}

/** A URL that reads the object without credentials while its download token lasts. */
export async function getDownloadURL(reference) {
  requireObject(reference, "getDownloadURL");
  const storage = reference._service;
  const body = await json(await storage._fetch("GET", storage._objectUrl(reference), reference));
  const token = String(body.downloadTokens ?? "").split(",").find((t) => t);
  if (!token) throw error("no-download-url", "The given file does not have any download URLs.");
  return storage._objectUrl(reference, `?alt=media&token=${encode(token)}`);
}

/** Deletes the object. */
export async function deleteObject(reference) {
  requireObject(reference, "deleteObject");
  const storage = reference._service;
  await storage._fetch("DELETE", storage._objectUrl(reference), reference);
}

async function download(reference, maxDownloadSizeBytes) {
  requireObject(reference, "getBytes");
  const storage = reference._service;
  const headers = maxDownloadSizeBytes === undefined ? {} : { Range: `bytes=0-${maxDownloadSizeBytes}` };
  const response = await storage._fetch("GET", storage._objectUrl(reference, "?alt=media"), reference,
    { headers, accept: (s) => (s >= 200 && s < 300) || s === 416 });
  if (response.status === 416) {
    // An empty object has no byte 0 for a range to start at.
    if (/\/0$/.test(response.headers.get("Content-Range") ?? "")) return new Blob([], { type: response.headers.get("Content-Type") ?? "" });
    throw errorFor(416, await response.text(), reference);
  }
  const blob = await response.blob();
  return maxDownloadSizeBytes === undefined ? blob : blob.slice(0, maxDownloadSizeBytes, blob.type);
}

/** The object's bytes as an ArrayBuffer (at most `maxDownloadSizeBytes`, when given). */
export async function getBytes(reference, maxDownloadSizeBytes) {
  return (await download(reference, maxDownloadSizeBytes)).arrayBuffer();
}

/** The object's bytes as a Blob with its content type (at most `maxDownloadSizeBytes`, when given). */
export async function getBlob(reference, maxDownloadSizeBytes) {
  return download(reference, maxDownloadSizeBytes);
}

// ───────────────────────────── listing ─────────────────────────────

/** One page of what is directly under a reference: `{prefixes, items, nextPageToken}`. */
export async function list(reference, options = {}) {
  const { maxResults, pageToken } = options ?? {};
  if (maxResults !== undefined && maxResults !== null && !(Number.isInteger(maxResults) && maxResults >= 1 && maxResults <= 1000)) {
    throw error("invalid-argument", `Invalid argument in \`list\` at index 1: maxResults must be between 1 and 1000, not ${maxResults}.`);
  }
  const storage = reference._service;
  const prefix = reference.fullPath === "" ? "" : `${reference.fullPath}/`;
  const url = storage._bucketUrl(reference.bucket, { prefix, delimiter: "/", pageToken, maxResults });
  const body = await json(await storage._fetch("GET", url, reference));
  return {
    prefixes: (body.prefixes ?? []).map((p) => new StorageReference(storage, reference.bucket, p)),
    items: (body.items ?? []).map((item) => new StorageReference(storage, item.bucket ?? reference.bucket, item.name)),
    nextPageToken: body.nextPageToken || undefined,
  };
}

/** Everything directly under a reference, all pages together. */
export async function listAll(reference) {
  const result = { prefixes: [], items: [] };
  let pageToken;
  do {
    const page = await list(reference, { pageToken });
    result.prefixes.push(...page.prefixes);
    result.items.push(...page.items);
    pageToken = page.nextPageToken;
  } while (pageToken);
  return result;
}

// ───────────────────────────── uploads ─────────────────────────────

const ABORTED = Symbol("aborted");

/**
 * An upload in progress, as Firebase's `UploadTask`: `on("state_changed", next, error, complete)`,
 * `pause()`, `resume()`, `cancel()`, `snapshot`, and a promise of the final snapshot (`await task`).
 */
export class UploadTask {
  constructor(reference, data, metadata, resumable) {
    requireObject(reference, resumable ? "uploadBytesResumable" : "uploadBytes");
    this._ref = reference;
    this._blob = data instanceof Blob ? data : new Blob([data]);
    this._metadata = metadata ?? {};
    this._resumable = resumable && this._blob.size > MULTIPART_LIMIT;
    this._state = TaskState.RUNNING;
    this._transferred = 0;
    this._result = null;
    this._error = null;
    this._uploadUrl = null;
    this._xhr = null;
    this._chunk = MULTIPART_LIMIT;
    this._observers = new Set();
    this._promise = new Promise((resolve, reject) => { this._resolve = resolve; this._reject = reject; });
    this._promise.catch(() => {});  // a failure is reported to observers; unobserved, it is not "unhandled"
    this._deadline = Date.now() + reference._service.maxUploadRetryTime;
    setTimeout(() => this._run(), 0);
  }

  get snapshot() {
    return { bytesTransferred: this._transferred, totalBytes: this._blob.size, state: this._state,
      metadata: this._result, task: this, ref: this._ref };
  }

  /**
   * Observes the task: `next(snapshot)` on every change (progress, pause, resume), then `complete()`
   * or `error(err)`. Takes functions or an observer object; returns a function that unsubscribes.
   */
  on(type, nextOrObserver, error, complete) {
    if (type !== TaskEvent.STATE_CHANGED) throw new StorageError("storage/invalid-argument", `Invalid event '${type}'.`);
    const observer = typeof nextOrObserver === "object" && nextOrObserver !== null
      ? { next: nextOrObserver.next?.bind(nextOrObserver), error: nextOrObserver.error?.bind(nextOrObserver), complete: nextOrObserver.complete?.bind(nextOrObserver) }
      : { next: nextOrObserver, error, complete };
    this._observers.add(observer);
    this._notifyOne(observer);
    return () => this._observers.delete(observer);
  }

  then(onFulfilled, onRejected) { return this._promise.then(onFulfilled, onRejected); }
  catch(onRejected) { return this._promise.catch(onRejected); }

  /** Pauses the upload (the chunk in flight is aborted and sent again on resume). */
  pause() {
    if (this._state !== TaskState.RUNNING) return false;
    this._state = TaskState.PAUSED;
    this._xhr?.abort();
    this._notify();
    return true;
  }

  resume() {
    if (this._state !== TaskState.PAUSED) return false;
    this._state = TaskState.RUNNING;
    this._notify();
    setTimeout(() => this._run(), 0);
    return true;
  }

  /** Stops the upload: the server drops what it has and the task fails with `storage/canceled`. */
  cancel() {
    if (this._state !== TaskState.RUNNING && this._state !== TaskState.PAUSED) return false;
    this._state = TaskState.CANCELED;
    this._xhr?.abort();
    if (this._uploadUrl) this._command(this._uploadUrl, "cancel").catch(() => {});
    this._fail(canceled());
    return true;
  }

  _isFinal() { return [TaskState.SUCCESS, TaskState.CANCELED, TaskState.ERROR].includes(this._state); }

  /** Tells one observer of the state now, in a microtask (as the official SDK does): next, complete or error. */
  _notifyOne(observer) {
    const snapshot = this.snapshot;
    const err = this._error;
    if (this._state === TaskState.SUCCESS) { if (observer.complete) queueMicrotask(() => observer.complete()); }
    else if (this._state === TaskState.ERROR || this._state === TaskState.CANCELED) { if (observer.error) queueMicrotask(() => observer.error(err)); }
    else if (observer.next) queueMicrotask(() => observer.next(snapshot));
  }

  _notify() {
    for (const observer of [...this._observers]) this._notifyOne(observer);
    if (this._isFinal()) this._observers.clear();
  }

  _progress(bytes) {
    if (this._state !== TaskState.RUNNING) return;
    const transferred = Math.min(bytes, this._blob.size);
    if (transferred === this._transferred && bytes !== 0) return;
    this._transferred = transferred;
    this._notify();
  }

  _fail(err) {
    if (this._error) return;
    if (this._state !== TaskState.CANCELED) this._state = TaskState.ERROR;
    this._error = err;
    this._notify();
    this._reject(err);
  }

  _succeed(json) {
    this._result = fullMetadata(this._ref._service, json);
    this._progress(this._blob.size);
    this._state = TaskState.SUCCESS;
    this._notify();
    this._resolve(this.snapshot);
  }

  /** Whether the run `id` is the current one and the task still runs (a pause or resume ends older runs). */
  _alive(id) { return id === undefined || (id === this._runId && this._state === TaskState.RUNNING); }

  /**
   * One XMLHttpRequest (for its upload progress); resolves with status, headers and text. With a run
   * `id`, rejects with ABORTED once that run is over (before sending, or after the answer).
   */
  async _send(method, url, headers, body, onProgress, id) {
    const all = await this._ref._service._headers(headers);
    if (!this._alive(id)) throw ABORTED;
    const response = await new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      this._xhr = xhr;
      xhr.open(method, url);
      for (const [name, value] of Object.entries(all)) xhr.setRequestHeader(name, value);
      if (onProgress) xhr.upload.onprogress = (e) => onProgress(e.loaded);
      xhr.onload = () => { this._xhr = null; resolve({ status: xhr.status, header: (n) => xhr.getResponseHeader(n), text: xhr.responseText }); };
      xhr.onerror = () => { this._xhr = null; reject(new Error("network error")); };
      xhr.onabort = () => { this._xhr = null; reject(ABORTED); };
      xhr.send(body ?? null);
    });
    if (!this._alive(id)) throw ABORTED;
    return response;
  }

  _command(url, command) { return this._send("POST", url, { "X-Goog-Upload-Command": command }); }

  /** Sleeps before a retry; throws retry-limit-exceeded when the upload's retry time is spent. */
  async _backoff() {
    this._delay = Math.min((this._delay ?? 125) * 2, 8000);
    if (Date.now() + this._delay > this._deadline) throw retryLimit();
    await sleep(this._delay);
  }

  async _run() {
    const id = this._runId = (this._runId ?? 0) + 1;
    const type = this._metadata.contentType ?? (this._blob.type || "application/octet-stream");
    const metadata = resource({ ...this._metadata, contentType: type }, this._ref.fullPath);
    try {
      for (;;) {
        if (!this._alive(id)) return;
        try {
          if (this._resumable) await this._runResumable(metadata, type, id);
          else await this._runMultipart(metadata, type, id);
          return;
        } catch (e) {
          if (e === ABORTED) return;  // paused or canceled
          if (e instanceof StorageError) throw e;
          await this._backoff();  // a network error: go on from what the server has
        }
      }
    } catch (e) {
      if (e === ABORTED || this._state === TaskState.CANCELED) return;
      this._fail(e instanceof StorageError ? e : error("unknown", String(e)));
    }
  }

  async _runMultipart(metadata, type, id) {
    const storage = this._ref._service;
    const boundary = `hearth${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
    const head = `--${boundary}\r\nContent-Type: application/json; charset=utf-8\r\n\r\n${JSON.stringify(metadata)}\r\n--${boundary}\r\nContent-Type: ${type}\r\n\r\n`;
    const body = new Blob([head, this._blob, `\r\n--${boundary}--`]);
    const headLength = new TextEncoder().encode(head).length;
    const url = storage._bucketUrl(this._ref.bucket, { name: this._ref.fullPath });
    this._progress(0);
    const response = await this._send("POST", url,
      { "X-Goog-Upload-Protocol": "multipart", "Content-Type": `multipart/related; boundary=${boundary}` }, body,
      (loaded) => this._progress(Math.max(0, loaded - headLength)), id);
    if (response.status >= 200 && response.status < 300) return this._succeed(JSON.parse(response.text || "{}"));
    if (retryable(response.status)) throw new Error(`HTTP ${response.status}`);
    throw errorFor(response.status, response.text, this._ref);
  }

  async _runResumable(metadata, type, id) {
    const storage = this._ref._service;
    const size = this._blob.size;
    if (!this._uploadUrl) {
      const start = await this._send("POST", storage._bucketUrl(this._ref.bucket, { name: this._ref.fullPath }), {
        "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start",
        "X-Goog-Upload-Header-Content-Length": String(size), "X-Goog-Upload-Header-Content-Type": type,
        "Content-Type": "application/json; charset=utf-8",
      }, JSON.stringify(metadata), undefined, id);
      if (retryable(start.status)) throw new Error(`HTTP ${start.status}`);
      if (start.status < 200 || start.status >= 300) throw errorFor(start.status, start.text, this._ref);
      this._uploadUrl = start.header("X-Goog-Upload-URL");
      if (!this._uploadUrl) throw error("unknown", "The server did not return X-Goog-Upload-URL.");
      this._offset = 0;
    } else {
      // After a pause or an error: ask the server how much it has.
      const status = await this._send("POST", this._uploadUrl, { "X-Goog-Upload-Command": "query" }, undefined, undefined, id);
      if (retryable(status.status)) throw new Error(`HTTP ${status.status}`);
      if (status.status < 200 || status.status >= 300) throw errorFor(status.status, status.text, this._ref);
      if (status.header("X-Goog-Upload-Status") === "final") {
        return this._succeed(await json(await storage._fetch("GET", storage._objectUrl(this._ref), this._ref)));
      }
      this._offset = Number(status.header("X-Goog-Upload-Size-Received") ?? 0);
      this._chunk = MULTIPART_LIMIT;
      this._progress(this._offset);
    }
    for (;;) {
      if (!this._alive(id)) throw ABORTED;
      const offset = this._offset;
      const end = Math.min(offset + this._chunk, size);
      const last = end === size;
      const response = await this._send("POST", this._uploadUrl, {
        "X-Goog-Upload-Command": last ? "upload, finalize" : "upload", "X-Goog-Upload-Offset": String(offset),
      }, this._blob.slice(offset, end), (loaded) => this._progress(offset + loaded), id);
      if (retryable(response.status)) throw new Error(`HTTP ${response.status}`);
      if (response.status < 200 || response.status >= 300) {
        if (response.status === 400 && /offset/i.test(response.text)) throw new Error("offset mismatch");
        throw errorFor(response.status, response.text, this._ref);
      }
      if (last || response.header("X-Goog-Upload-Status") === "final") {
        const body = response.text ? JSON.parse(response.text)
          : await json(await storage._fetch("GET", storage._objectUrl(this._ref), this._ref));
        return this._succeed(body);
      }
      this._offset = end;
      this._delay = undefined;
      this._progress(end);
      this._chunk = Math.min(this._chunk * 2, MAX_CHUNK);
    }
  }
}

/** Uploads bytes (Blob, File, ArrayBuffer or typed array) in one multipart request; resolves `{metadata, ref}`. */
export async function uploadBytes(reference, data, metadata) {
  const snapshot = await new UploadTask(reference, data, metadata, false);
  return { metadata: snapshot.metadata, ref: reference };
}

/** Uploads bytes with progress, pause, resume and cancel; over 256 KiB in resumable chunks. */
export function uploadBytesResumable(reference, data, metadata) {
  return new UploadTask(reference, data, metadata, true);
}

function decodeBase64(text, url) {
  let normalized = text;
  if (url) {
    if (/[+/]/.test(text)) throw error("invalid-format", "String does not match format 'base64url': Invalid character found");
    normalized = text.replace(/-/g, "+").replace(/_/g, "/");
  } else if (/[-_]/.test(text)) {
    throw error("invalid-format", "String does not match format 'base64': Invalid character found");
  }
  try {
    const binary = atob(normalized);
    return Uint8Array.from(binary, (c) => c.charCodeAt(0));
  } catch {
    throw error("invalid-format", `String does not match format '${url ? "base64url" : "base64"}': Invalid character found`);
  }
}

/** The bytes and content type of a string in one of the `StringFormat`s. */
function stringData(value, format) {
  switch (format) {
    case StringFormat.RAW: return { bytes: new TextEncoder().encode(value) };
    case StringFormat.BASE64: return { bytes: decodeBase64(value, false) };
    case StringFormat.BASE64URL: return { bytes: decodeBase64(value, true) };
    case StringFormat.DATA_URL: {
      const match = /^data:([^,]*?)(;base64)?,(.*)$/s.exec(value);
      if (!match) throw error("invalid-format", "String does not match format 'data_url': Must be formatted 'data:[<mediatype>][;base64],<data>");
      const contentType = match[1] ? match[1] : null;
      const bytes = match[2] ? decodeBase64(match[3], false) : new TextEncoder().encode(decodeURIComponent(match[3]));
      return { bytes, contentType };
    }
    default: throw error("invalid-argument", `Unknown format '${format}'.`);
  }
}

/** Uploads a string: `raw` (UTF-8), `base64`, `base64url` or `data_url` (whose media type becomes the content type). */
export async function uploadString(reference, value, format = StringFormat.RAW, metadata) {
  const { bytes, contentType } = stringData(value, format);
  const withType = { ...(metadata ?? {}) };
  if (withType.contentType === undefined && contentType) withType.contentType = contentType;
  return uploadBytes(reference, bytes, withType);
}
