// Hearth's console: data, rules, users, files and activity of this server, as its admin. Plain ES module.
//
// Signing in exchanges the admin secret for a session token (POST /.console/session); only that
// token is kept (sessionStorage, so it ends with the tab, and the server ends it after an hour).
// Every call below sends it as `Authorization: Bearer`, and hearth.js uses it for the live data.
import { initializeDatabase, ref, child, set, push, onValue, goOffline } from "/hearth.js";
import { DataTree, parseTyped } from "./data-tree.js";
import { setUpTransfer } from "./import-export.js";
import { mountRules } from "./rules-view.js";
import { mountActivity } from "./activity-view.js";

const $ = (id) => document.getElementById(id);
const SESSION_KEY = "hearth.console.session";

const state = {
  session: null, info: null, view: "data",
  db: null, namespace: null, path: [], tree: null,
  rulesKind: "database",
  usersToken: null, usersPages: [],
  bucket: null, folder: "",
};

// ───────────── session ─────────────

function loadSession() {
  try {
    const session = JSON.parse(sessionStorage.getItem(SESSION_KEY) ?? "null");
    return session && session.expires > Date.now() + 5000 ? session : null;
  } catch { return null; }
}

async function signIn(secret) {
  const response = await fetch("/.console/session", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ secret }) });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.error ?? `The server answered ${response.status}.`);
  sessionStorage.setItem(SESSION_KEY, JSON.stringify(body));
  return body;
}

async function signOut(message) {
  const session = state.session;
  state.session = null;
  sessionStorage.removeItem(SESSION_KEY);
  state.tree?.close();
  views.activity?.hide();
  if (state.db) { goOffline(state.db); state.db = null; }
  if (session) fetch("/.console/session", { method: "DELETE", headers: { Authorization: `Bearer ${session.token}` } }).catch(() => {});
  showSignIn(message);
}

/** A call to the server as the admin; an ended session sends the user back to sign in. */
async function api(path, options = {}) {
  if (!state.session || state.session.expires <= Date.now()) { await signOut("Your session ended; sign in again."); throw new Error("signed out"); }
  const headers = { Authorization: `Bearer ${state.session.token}`, ...(options.headers ?? {}) };
  const response = await fetch(path, { ...options, headers });
  if (response.status === 401 && path.startsWith("/.console")) { await signOut("Your session ended; sign in again."); throw new Error("signed out"); }
  return response;
}

async function apiJSON(path, options = {}) {
  const response = await api(path, options);
  const text = await response.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch { body = text; }
  if (!response.ok) {
    const message = body?.error?.message ?? body?.error ?? (typeof body === "string" ? body : `HTTP ${response.status}`);
    throw Object.assign(new Error(message), { status: response.status });
  }
  return body;
}

function toast(message) {
  const el = $("toast");
  el.textContent = message; el.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { el.hidden = true; }, 3000);
}

// ───────────── shell ─────────────

function showSignIn(message) {
  $("console-view").hidden = true;
  $("sign-out").hidden = true;
  $("status").hidden = true;
  $("project").textContent = "";
  $("sign-in-view").hidden = false;
  $("sign-in-error").textContent = message ?? "";
  document.querySelector("#sign-in input[name=secret]").focus();
}

async function showConsole() {
  $("sign-in-view").hidden = true;
  $("console-view").hidden = false;
  $("sign-out").hidden = false;
  state.info = await apiJSON("/.console/info");
  $("project").textContent = `project ${state.info.project}${state.info.emulator ? " · emulator mode" : ""}`;
  const select = $("namespace");
  select.replaceChildren(...state.info.namespaces.map((ns) => new Option(ns, ns)));
  state.namespace = state.info.namespaces.includes(state.namespace) ? state.namespace : state.info.defaultNamespace;
  select.value = state.namespace;
  route();
}

function route() {
  const view = (location.hash.slice(1) || "data").split("/")[0];
  state.view = ["data", "rules", "users", "files", "activity"].includes(view) ? view : "data";
  for (const link of document.querySelectorAll(".sidebar a")) {
    if (link.dataset.view === state.view) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
  }
  for (const panel of document.querySelectorAll("[data-view-panel]")) panel.hidden = panel.dataset.viewPanel !== state.view;
  if (state.view === "data") openData();
  if (state.view === "rules") views.rules.load();
  if (state.view === "users") loadUsers(true);
  if (state.view === "files") openFiles();
  if (state.view === "activity") views.activity.show(); else views.activity.hide();
}

// ───────────── data ─────────────

function connect() {
  if (state.db?._namespace === state.namespace) return;
  if (state.db) goOffline(state.db);
  state.db = initializeDatabase({ url: location.origin, namespace: state.namespace, authToken: state.session.token });
  state.db._namespace = state.namespace;
  onValue(ref(state.db, ".info/connected"), (snap) => {
    const status = $("status");
    status.hidden = false;
    status.dataset.state = snap.val() ? "online" : "offline";
    status.textContent = snap.val() ? "Live" : "Reconnecting…";
  });
}

function openData() {
  connect();
  // The tree (data-tree.js): rows by position from the server, a virtual scroller, live refreshes.
  state.tree ??= new DataTree($("tree-scroller"), {
    db: () => state.db, namespace: () => state.namespace, apiJSON, toast, navigate: (path) => navigate(path),
  });
  renderCrumbs();
  $("goto-path").value = "/" + state.path.join("/");
  state.tree.open(state.path, state.query);
  $("query-clear").hidden = !state.query;
}

function renderCrumbs() {
  const crumbs = [{ label: state.namespace + ":/", path: [] }, ...state.path.map((segment, i) => ({ label: segment, path: state.path.slice(0, i + 1) }))];
  $("crumbs").replaceChildren(...crumbs.flatMap((crumb, i) => {
    const button = document.createElement("button");
    button.type = "button"; button.textContent = crumb.label;
    button.addEventListener("click", () => navigate(crumb.path));
    return i < crumbs.length - 1 ? [button, document.createTextNode("/")] : [button];
  }));
}

function navigate(path) {
  state.path = path; state.query = null;
  openData();
}

// ───────────── users ─────────────

const identity = (operation) => `/identitytoolkit.googleapis.com/v1/projects/${encodeURIComponent(state.info.project)}/${operation}`;

async function loadUsers(reset) {
  if (reset) { state.usersToken = null; }
  const search = $("user-search").value.trim();
  let users = [];
  try {
    if (search) {
      const body = search.includes("@") ? { email: [search] } : { localId: [search] };
      users = (await apiJSON(identity("accounts:lookup"), { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) }))?.users ?? [];
      $("users-more").hidden = true;
    } else {
      const page = await apiJSON(identity(`accounts:batchGet?maxResults=25${state.usersToken ? `&nextPageToken=${encodeURIComponent(state.usersToken)}` : ""}`));
      users = page?.users ?? [];
      state.usersToken = page?.nextPageToken ?? null;
      $("users-more").hidden = !state.usersToken;
    }
  } catch (error) { toast(`Could not list users: ${error.message}`); return; }
  $("users-count").textContent = users.length ? `${users.length} shown` : "";
  const body = $("users-table").querySelector("tbody");
  if (!users.length) {
    const row = body.insertRow(); const cell = row.insertCell(); cell.colSpan = 7; cell.className = "hint";
    cell.textContent = search ? "No user matches." : "No users yet. Apps create them when people sign up, or use “New user”.";
    body.replaceChildren(row);
    return;
  }
  body.replaceChildren(...users.map(userRow));
}

function date(millis) { return millis ? new Date(Number(millis)).toLocaleString() : "—"; }

function userRow(user) {
  const row = document.createElement("tr");
  const provider = user.providerUserInfo?.[0]?.providerId ?? (user.email ? "password" : "anonymous");
  const cells = [user.email ?? "—", user.localId, provider, date(user.createdAt), date(user.lastLoginAt)];
  cells.forEach((text, i) => { const cell = row.insertCell(); cell.textContent = text; if (i === 1) cell.className = "mono"; });
  const stateCell = row.insertCell();
  const pill = document.createElement("span");
  pill.className = `pill${user.disabled ? " off" : ""}`; pill.textContent = user.disabled ? "disabled" : "active";
  stateCell.append(pill);
  const actions = row.insertCell(); actions.className = "actions";
  const button = (label, action) => { const b = document.createElement("button"); b.type = "button"; b.className = "button small"; b.textContent = label; b.addEventListener("click", action); actions.append(b); return b; };
  const update = (body, done) => apiJSON(identity("accounts:update"), { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ localId: user.localId, ...body }) })
    .then(() => { toast(done); loadUsers(true); }, (error) => toast(error.message));
  button(user.disabled ? "Enable" : "Disable", () => update({ disableUser: !user.disabled }, user.disabled ? "User enabled." : "User disabled: their sessions end."));
  button("Claims", () => {
    const current = user.customAttributes ?? "{}";
    const text = prompt(`Custom claims of ${user.email ?? user.localId} (JSON):`, current);
    if (text === null) return;
    try { JSON.parse(text); } catch { toast("Claims must be a JSON object."); return; }
    update({ customAttributes: text }, "Claims saved; they reach the user's next ID token.");
  });
  if (user.email) button("Reset link", async () => {
    try {
      const body = await apiJSON(identity("accounts:sendOobCode"), { method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ requestType: "PASSWORD_RESET", email: user.email, returnOobLink: true }) });
      prompt("Password reset link (send it to the user):", body.oobLink);
    } catch (error) { toast(error.message); }
  });
  const del = button("Delete", async () => {
    if (!confirm(`Delete ${user.email ?? user.localId}? This cannot be undone.`)) return;
    try { await apiJSON(identity("accounts:delete"), { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ localId: user.localId }) }); toast("User deleted."); loadUsers(true); }
    catch (error) { toast(error.message); }
  });
  del.classList.add("danger");
  return row;
}

async function createUser(event) {
  event.preventDefault();
  const form = $("user-form");
  const fields = Object.fromEntries(new FormData(form));
  const error = $("user-error");
  error.textContent = "";
  if (fields.claims) { try { JSON.parse(fields.claims); } catch { error.textContent = "Claims must be JSON, like {\"admin\": true}."; return; } }
  try {
    const created = await apiJSON(identity("accounts"), { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ email: fields.email || undefined, password: fields.password || undefined }) });
    if (fields.claims) {
      await apiJSON(identity("accounts:update"), { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ localId: created.localId, customAttributes: fields.claims }) });
    }
    $("user-dialog").close();
    toast("User created.");
    loadUsers(true);
  } catch (failure) { error.textContent = failure.message; }
}

// ───────────── files ─────────────

const gcs = (path) => `/storage/v1/b/${path}`;
const encode = encodeURIComponent;

async function openFiles() {
  if (!state.info.files) { $("files-table").querySelector("tbody").replaceChildren(); toast("This server runs without files."); return; }
  const select = $("bucket");
  if (!select.options.length) {
    const buckets = (await apiJSON("/storage/v1/b"))?.items ?? [];
    select.replaceChildren(...buckets.map((b) => new Option(b.name, b.name)));
    state.bucket = buckets[0]?.name ?? null;
  }
  listFiles();
}

async function listFiles() {
  if (!state.bucket) return;
  $("file-preview").hidden = true;
  const crumbs = [{ label: state.bucket, folder: "" }];
  let acc = "";
  for (const part of state.folder.split("/").filter(Boolean)) { acc += part + "/"; crumbs.push({ label: part, folder: acc }); }
  $("file-crumbs").replaceChildren(...crumbs.flatMap((crumb, i) => {
    const b = document.createElement("button"); b.type = "button"; b.textContent = crumb.label;
    b.addEventListener("click", () => { state.folder = crumb.folder; listFiles(); });
    return i < crumbs.length - 1 ? [b, document.createTextNode("/")] : [b];
  }));
  let listing;
  try { listing = await apiJSON(gcs(`${encode(state.bucket)}/o?delimiter=%2F&prefix=${encode(state.folder)}`)); }
  catch (error) { toast(`Could not list files: ${error.message}`); return; }
  const body = $("files-table").querySelector("tbody");
  const rows = [];
  for (const prefix of listing.prefixes ?? []) {
    const row = document.createElement("tr"); row.className = "folder";
    const cell = row.insertCell();
    const b = document.createElement("button"); b.type = "button"; b.className = "linkish"; b.textContent = "📁 " + prefix.slice(state.folder.length);
    b.addEventListener("click", () => { state.folder = prefix; listFiles(); });
    cell.append(b);
    for (let i = 0; i < 4; i++) row.insertCell();
    rows.push(row);
  }
  for (const item of listing.items ?? []) rows.push(fileRow(item));
  if (!rows.length) {
    const row = document.createElement("tr"); const cell = row.insertCell(); cell.colSpan = 5; cell.className = "hint";
    cell.textContent = "No files here yet. Drop some above.";
    rows.push(row);
  }
  body.replaceChildren(...rows);
}

function size(bytes) {
  const n = Number(bytes);
  return n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1048576).toFixed(1)} MiB`;
}

function fileRow(item) {
  const row = document.createElement("tr");
  const nameCell = row.insertCell();
  const open = document.createElement("button"); open.type = "button"; open.className = "linkish"; open.textContent = item.name.slice(state.folder.length);
  open.addEventListener("click", () => preview(item));
  nameCell.append(open);
  row.insertCell().textContent = size(item.size);
  row.insertCell().textContent = item.contentType ?? "";
  row.insertCell().textContent = new Date(item.updated).toLocaleString();
  const actions = row.insertCell(); actions.className = "actions";
  const download = document.createElement("button"); download.type = "button"; download.className = "button small"; download.textContent = "Download";
  download.addEventListener("click", async () => {
    const blob = await (await api(`/download/storage/v1/b/${encode(item.bucket)}/o/${encode(item.name)}?alt=media`)).blob();
    const a = document.createElement("a"); a.href = URL.createObjectURL(blob); a.download = item.name.split("/").pop(); a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  });
  const del = document.createElement("button"); del.type = "button"; del.className = "button small danger"; del.textContent = "Delete";
  del.addEventListener("click", async () => {
    if (!confirm(`Delete ${item.name}?`)) return;
    try { await apiJSON(gcs(`${encode(item.bucket)}/o/${encode(item.name)}`), { method: "DELETE" }); toast("File deleted."); listFiles(); }
    catch (error) { toast(error.message); }
  });
  actions.append(download, del);
  return row;
}

async function preview(item) {
  const box = $("file-preview");
  box.hidden = false;
  box.replaceChildren(Object.assign(document.createElement("p"), { className: "hint", textContent: "Loading…" }));
  const response = await api(`/download/storage/v1/b/${encode(item.bucket)}/o/${encode(item.name)}?alt=media`, { headers: { Range: "bytes=0-65535" } });
  const blob = await response.blob();
  const title = Object.assign(document.createElement("h3"), { textContent: item.name });
  const meta = Object.assign(document.createElement("p"), { className: "hint", textContent: `${size(item.size)} · ${item.contentType} · md5 ${item.md5Hash}` });
  let content;
  if ((item.contentType ?? "").startsWith("image/")) {
    content = Object.assign(document.createElement("img"), { src: URL.createObjectURL(blob), alt: item.name });
  } else if (/^(text\/|application\/(json|javascript|xml))/.test(item.contentType ?? "")) {
    content = Object.assign(document.createElement("pre"), { textContent: await blob.text() });
  } else {
    content = Object.assign(document.createElement("p"), { className: "hint", textContent: "No preview for this type; download it instead." });
  }
  box.replaceChildren(title, meta, content, metadataForm(item));
}

/** The file's metadata, editable: content type and caching headers, and custom key/value metadata. */
function metadataForm(item) {
  const form = document.createElement("form");
  form.className = "metadata-form";
  form.setAttribute("aria-label", `Metadata of ${item.name}`);
  const fields = [
    ["contentType", "Content-Type"], ["cacheControl", "Cache-Control"],
    ["contentDisposition", "Content-Disposition"], ["contentLanguage", "Content-Language"],
  ];
  const grid = document.createElement("div");
  grid.className = "metadata-grid";
  for (const [name, label] of fields) {
    const field = Object.assign(document.createElement("label"), { className: "field" });
    field.append(label, Object.assign(document.createElement("input"), { className: "input code-line", name, value: item[name] ?? "", autocomplete: "off" }));
    grid.append(field);
  }
  const custom = Object.assign(document.createElement("label"), { className: "field" });
  custom.append("Custom metadata ", Object.assign(document.createElement("span"), { className: "hint", textContent: '(JSON object of strings, e.g. {"owner": "ada"}; a key set to null is removed)' }),
    Object.assign(document.createElement("textarea"), { className: "input code-line", name: "metadata", rows: 3, value: JSON.stringify(item.metadata ?? {}, null, 1) }));
  const error = Object.assign(document.createElement("p"), { className: "field-error", role: "alert" });
  const save = Object.assign(document.createElement("button"), { type: "submit", className: "button primary small", textContent: "Save metadata" });
  form.append(Object.assign(document.createElement("h4"), { textContent: "Metadata" }), grid, custom, error, save);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    const patch = {};
    for (const [name] of fields) {
      const value = form.elements[name].value.trim();
      if (value !== (item[name] ?? "")) patch[name] = value || null;
    }
    try {
      const metadata = JSON.parse(form.elements.metadata.value || "{}");
      if (metadata === null || typeof metadata !== "object" || Array.isArray(metadata)) throw new Error();
      // Keys no longer listed are removed, as Cloud Storage's PATCH removes a key set to null.
      for (const key of Object.keys(item.metadata ?? {})) if (!(key in metadata)) metadata[key] = null;
      patch.metadata = metadata;
    } catch { error.textContent = "Custom metadata must be a JSON object."; return; }
    try {
      const updated = await apiJSON(gcs(`${encode(item.bucket)}/o/${encode(item.name)}`), { method: "PATCH", headers: { "Content-Type": "application/json" }, body: JSON.stringify(patch) });
      toast("Metadata saved.");
      listFiles();
      preview(updated);
    } catch (failure) { error.textContent = failure.message; }
  });
  return form;
}

function upload(files) {
  const bar = $("upload-progress");
  const queue = [...files];
  const next = () => {
    const file = queue.shift();
    if (!file) { bar.hidden = true; listFiles(); return; }
    bar.hidden = false;
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `/upload/storage/v1/b/${encode(state.bucket)}/o?uploadType=media&name=${encode(state.folder + file.name)}`);
    xhr.setRequestHeader("Authorization", `Bearer ${state.session.token}`);
    xhr.setRequestHeader("Content-Type", file.type || "application/octet-stream");
    xhr.upload.onprogress = (event) => { if (event.lengthComputable) bar.firstElementChild.style.width = `${(100 * event.loaded / event.total).toFixed(0)}%`; };
    xhr.onload = () => { toast(xhr.status === 200 ? `Uploaded ${file.name}` : `Upload of ${file.name} failed (${xhr.status})`); bar.firstElementChild.style.width = "0"; next(); };
    xhr.onerror = () => { toast(`Upload of ${file.name} failed`); next(); };
    xhr.send(file);
  };
  next();
}

// ───────────── wiring ─────────────

/** The views that live in their own modules. */
const views = {};

function start() {
  views.rules = mountRules({ $, api, apiJSON, toast, state, parseTyped });
  views.activity = mountActivity({ $, apiJSON });
  $("sign-in").addEventListener("submit", async (event) => {
    event.preventDefault();
    const input = event.target.elements.secret;
    try {
      state.session = await signIn(input.value);
      input.value = "";
      await showConsole();
    } catch (error) { $("sign-in-error").textContent = error.message; }
  });
  $("sign-out").addEventListener("click", () => signOut("Signed out."));
  window.addEventListener("hashchange", () => { if (state.session) route(); });
  $("namespace").addEventListener("change", (event) => { state.namespace = event.target.value; state.path = []; state.query = null; route(); });
  $("goto").addEventListener("submit", (event) => { event.preventDefault(); navigate($("goto-path").value.split("/").filter(Boolean)); });
  $("query-bar").addEventListener("submit", (event) => { event.preventDefault(); state.query = Object.fromEntries(new FormData(event.target)); openData(); });
  $("query-bar").elements.orderBy.addEventListener("change", (event) => { $("query-bar").elements.child.hidden = event.target.value !== "child"; });
  $("query-clear").addEventListener("click", () => navigate(state.path));
  setUpTransfer({ path: () => state.path, namespace: () => state.namespace, token: () => state.session.token, toast, imported: () => state.tree?.refresh() });
  $("add-child").addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = $("add-key").value.trim();
    const value = parseTyped($("add-value").value);
    const parent = state.path.length ? ref(state.db, state.path.join("/")) : ref(state.db);
    try {
      if (key) await set(child(parent, key), value); else await push(parent, value);
      $("add-key").value = ""; $("add-value").value = "";
      toast("Added.");
      state.tree?.refresh();
    } catch (error) { toast(`Not added: ${error?.message ?? error}`); }
  });
  $("user-search").addEventListener("input", () => { clearTimeout(start.search); start.search = setTimeout(() => loadUsers(true), 250); });
  $("users-more").addEventListener("click", () => loadUsers(false));
  $("user-new").addEventListener("click", () => { $("user-form").reset(); $("user-error").textContent = ""; $("user-dialog").showModal(); });
  $("user-form").addEventListener("submit", createUser);
  for (const button of document.querySelectorAll("[data-close]")) button.addEventListener("click", () => button.closest("dialog").close());
  $("bucket").addEventListener("change", (event) => { state.bucket = event.target.value; state.folder = ""; listFiles(); });
  const zone = $("dropzone");
  zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => { event.preventDefault(); zone.classList.remove("over"); upload(event.dataTransfer.files); });
  zone.addEventListener("keydown", (event) => { if (event.key === "Enter" || event.key === " ") { event.preventDefault(); $("file-input").click(); } });
  $("file-input").addEventListener("change", (event) => { upload(event.target.files); event.target.value = ""; });

  state.session = loadSession();
  if (state.session) showConsole().catch(() => signOut("Your session ended; sign in again.")); else showSignIn();
}

start();
