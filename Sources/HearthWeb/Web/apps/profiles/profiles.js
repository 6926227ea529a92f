// Profiles — the realtime profile directory (apps.md §1) on hearth.js. No build step, no framework.
//
// Data: profiles/<push id> = { id, gender, name, age, imageURL?, hobbies? }; ids come from a
// transaction on meta/nextId, so concurrent adds from many windows never share one. Everything the
// database is asked goes through `Directory`; the rest of this file only renders.
import {
  initializeDatabase, ref, child, push, set, remove, onValue, runTransaction,
} from "/hearth.js";

// ───────────── the model: validation, filter and sort (pure, no I/O) ─────────────

/** Checks a form's fields; returns `{ profile }` or `{ errors: { field: message } }`. */
export function validateProfile(fields) {
  const errors = {};
  const name = String(fields.name ?? "").trim();
  if (!name) errors.name = "Enter a name.";
  else if (name.length > 80) errors.name = "Keep the name under 80 characters.";
  const ageText = String(fields.age ?? "").trim();
  const age = Number(ageText);
  if (!ageText) errors.age = "Enter an age.";
  else if (!/^\d+$/.test(ageText) || age > 150) errors.age = "Age is a whole number from 0 to 150.";
  if (fields.gender !== "male" && fields.gender !== "female") errors.gender = "Choose female or male.";
  const imageURL = String(fields.imageURL ?? "").trim();
  if (imageURL && !/^https?:\/\/\S+$/i.test(imageURL)) errors.imageURL = "Use an http(s) address, or leave it empty.";
  const hobbies = parseHobbies(fields.hobbies);
  if (hobbies.some((h) => h.length > 40)) errors.hobbies = "Each hobby is at most 40 characters.";
  if (Object.keys(errors).length) return { errors };
  const profile = { name, age, gender: fields.gender, hobbies };
  if (imageURL) profile.imageURL = imageURL;
  return { profile };
}

export function parseHobbies(text) {
  const seen = new Set();
  return String(text ?? "").split(",").map((h) => h.trim()).filter((h) => h && !seen.has(h.toLowerCase()) && seen.add(h.toLowerCase()));
}

const SORTS = {
  "id": (a, b) => a.id - b.id,
  "age-asc": (a, b) => a.age - b.age || a.id - b.id,
  "age-desc": (a, b) => b.age - a.age || a.id - b.id,
  "name-asc": (a, b) => a.name.localeCompare(b.name) || a.id - b.id,
  "name-desc": (a, b) => b.name.localeCompare(a.name) || a.id - b.id,
};

/** The profiles to show: filtered by gender ("all", "male", "female"), then sorted. */
export function visibleProfiles(profiles, filter, sort) {
  return profiles.filter((p) => filter === "all" || p.gender === filter).sort(SORTS[sort] ?? SORTS.id);
}

/** Turns the `profiles` snapshot value into an array, skipping what does not look like a profile. */
export function profilesFrom(value) {
  return Object.entries(value ?? {})
    .filter(([, p]) => p && typeof p === "object" && typeof p.name === "string")
    .map(([key, p]) => ({ key, id: Number(p.id) || 0, gender: p.gender, name: p.name, age: Number(p.age) || 0,
      imageURL: p.imageURL ?? "", hobbies: Array.isArray(p.hobbies) ? p.hobbies.filter((h) => typeof h === "string")
        : Object.values(p.hobbies ?? {}).filter((h) => typeof h === "string") }));
}

export const SAMPLE = [
  { name: "Ada Lovelace", age: 36, gender: "female", hobbies: ["mathematics", "poetry", "horses"] },
  { name: "Alan Turing", age: 41, gender: "male", hobbies: ["running", "chess", "cryptography"] },
  { name: "Grace Hopper", age: 85, gender: "female", hobbies: ["compilers", "teaching"] },
  { name: "Edsger Dijkstra", age: 72, gender: "male", hobbies: ["piano", "fountain pens"] },
  { name: "Margaret Hamilton", age: 38, gender: "female", hobbies: ["flying", "software"] },
  { name: "Donald Knuth", age: 86, gender: "male", hobbies: ["organ", "typesetting", "puzzles"] },
  { name: "Barbara Liskov", age: 84, gender: "female", hobbies: ["hiking"] },
  { name: "Ken Thompson", age: 81, gender: "male", hobbies: ["chess endgames", "flying"] },
];

// ───────────── the one place that talks to the database ─────────────

export class Directory {
  constructor(db) {
    this.db = db;
    this.profiles = ref(db, "profiles");
  }

  /** Calls `onChange(profiles)` now and after every change anywhere; returns the unsubscribe. */
  watch(onChange, onError) {
    return onValue(this.profiles, (snap) => onChange(profilesFrom(snap.val())), onError);
  }

  watchConnection(onChange) {
    return onValue(ref(this.db, ".info/connected"), (snap) => onChange(snap.val() === true));
  }

  /** Adds a profile with the next id (a transaction, so concurrent adds never collide). */
  async add(profile) {
    const { committed, snapshot } = await runTransaction(ref(this.db, "meta/nextId"), (n) => (n ?? 0) + 1);
    if (!committed) throw new Error("Could not reserve an id; try again.");
    const added = push(this.profiles);
    await set(added, { ...profile, id: snapshot.val() });
    return added.key;
  }

  remove(key) { return remove(child(this.profiles, key)); }

  setHobbies(key, hobbies) { return set(child(this.profiles, `${key}/hobbies`), hobbies.length ? hobbies : null); }
}

// ───────────── the page ─────────────

const $ = (id) => document.getElementById(id);
const COLORS = ["#4c6ef5", "#f76707", "#12b886", "#e64980", "#7950f2", "#1098ad", "#f59f00", "#d6336c"];

function avatar(p, size) {
  if (p.imageURL) {
    const img = document.createElement("img");
    img.className = "avatar"; img.alt = ""; img.src = p.imageURL; img.loading = "lazy";
    if (size) { img.style.width = img.style.height = `${size}px`; }
    return img;
  }
  const span = document.createElement("span");
  span.className = "avatar"; span.setAttribute("aria-hidden", "true");
  span.textContent = p.name.split(/\s+/).map((w) => w[0]).join("").slice(0, 2).toUpperCase();
  span.style.background = COLORS[p.id % COLORS.length];
  return span;
}

function chips(hobbies, onRemove) {
  const list = document.createElement("ul");
  list.className = "chips";
  for (const hobby of hobbies) {
    const item = document.createElement("li");
    item.className = "chip";
    item.append(hobby);
    if (onRemove) {
      const x = document.createElement("button");
      x.type = "button"; x.textContent = "×"; x.setAttribute("aria-label", `Remove ${hobby}`);
      x.addEventListener("click", () => onRemove(hobby));
      item.append(x);
    }
    list.append(item);
  }
  return list;
}

function start() {
  const params = new URLSearchParams(location.search);
  const db = initializeDatabase({ url: location.origin, namespace: params.get("ns") ?? "profiles" });
  const directory = new Directory(db);
  const state = { profiles: [], loaded: false, filter: "all", sort: "id", openKey: null, seen: new Map() };

  const toast = (message) => {
    const el = $("toast");
    el.textContent = message; el.hidden = false;
    clearTimeout(toast.timer);
    toast.timer = setTimeout(() => { el.hidden = true; }, 2600);
  };
  const fail = (what) => (error) => toast(`${what}: ${error?.message ?? error}`);

  function render() {
    const shown = visibleProfiles(state.profiles, state.filter, state.sort);
    const total = state.profiles.length;
    $("summary").textContent = state.loaded
      ? (total === 0 ? "Nobody here yet." : `${total} ${total === 1 ? "person" : "people"}${shown.length !== total ? `, ${shown.length} shown` : ""} · changes appear live`)
      : "Loading the directory…";
    $("loading").hidden = state.loaded;
    $("empty").hidden = !state.loaded || total > 0;
    $("no-match").hidden = !state.loaded || total === 0 || shown.length > 0;
    $("clear").hidden = state.filter === "all" && state.sort === "id";
    for (const button of $("filter").querySelectorAll("button")) {
      button.setAttribute("aria-pressed", String(button.dataset.filter === state.filter));
    }
    $("sort").value = state.sort;

    const list = $("list");
    const focusedKey = document.activeElement?.closest?.(".profile")?.dataset.key;
    list.replaceChildren(...shown.map((p) => {
      const row = document.createElement("li");
      row.className = `profile ${p.gender === "male" ? "male" : "female"}`;
      row.dataset.key = p.key;
      row.tabIndex = 0;
      row.setAttribute("aria-label", `${p.name}, ${p.age}, ${p.gender}${p.hobbies.length ? `, likes ${p.hobbies.join(", ")}` : ""}`);
      const who = document.createElement("div");
      who.className = "who";
      who.innerHTML = `<span class="name"></span><span class="age"></span>`;
      who.querySelector(".name").textContent = p.name;
      who.querySelector(".age").textContent = `${p.age}`;
      who.append(chips(p.hobbies));
      const id = document.createElement("span");
      id.className = "id"; id.textContent = `#${p.id}`;
      row.append(avatar(p), who, id);
      // Highlight what changed since the last render (not on the first load).
      const fingerprint = JSON.stringify(p);
      if (state.seen.size && state.seen.get(p.key) !== fingerprint) row.classList.add("changed");
      return row;
    }));
    state.seen = new Map(state.profiles.map((p) => [p.key, JSON.stringify(p)]));
    if (focusedKey) list.querySelector(`[data-key="${CSS.escape(focusedKey)}"]`)?.focus();
    if (state.openKey) renderDetail();
  }

  function renderDetail() {
    const p = state.profiles.find((x) => x.key === state.openKey);
    const dialog = $("detail-dialog");
    if (!p) { if (dialog.open) { dialog.close(); toast("That profile was deleted."); } state.openKey = null; return; }
    $("detail-name").textContent = p.name;
    $("detail-avatar").replaceChildren(avatar(p));
    $("detail-gender").textContent = p.gender === "male" ? "Male" : "Female";
    $("detail-age").textContent = String(p.age);
    $("detail-id").textContent = `#${p.id}`;
    const list = chips(p.hobbies, (hobby) => {
      directory.setHobbies(p.key, p.hobbies.filter((h) => h !== hobby)).catch(fail("Could not remove the hobby"));
    });
    list.id = "detail-hobbies";
    if (!p.hobbies.length) { const none = document.createElement("li"); none.className = "hint"; none.textContent = "No hobbies yet."; list.append(none); }
    $("detail-hobbies").replaceWith(list);
  }

  function open(key) {
    state.openKey = key;
    renderDetail();
    $("hobby-error").textContent = "";
    $("detail-dialog").showModal();
  }

  // Live data and connection state.
  directory.watch((profiles) => { state.profiles = profiles; state.loaded = true; $("banner").hidden = true; render(); }, (error) => {
    state.loaded = true;
    const banner = $("banner");
    banner.hidden = false;
    banner.textContent = error?.code === "permission_denied" || /permission/i.test(String(error))
      ? "This server does not let you read the directory (its rules deny it)."
      : `The directory could not be loaded: ${error?.message ?? error}`;
    render();
  });
  directory.watchConnection((online) => {
    const status = $("status");
    status.dataset.state = online ? "online" : "offline";
    status.textContent = online ? "Live" : "Reconnecting…";
  });

  // Filter and sort.
  $("filter").addEventListener("click", (event) => {
    const button = event.target.closest("button[data-filter]");
    if (button) { state.filter = button.dataset.filter; render(); }
  });
  $("sort").addEventListener("change", (event) => { state.sort = event.target.value; render(); });
  const clear = () => { state.filter = "all"; state.sort = "id"; render(); };
  $("clear").addEventListener("click", clear);
  $("no-match-clear").addEventListener("click", clear);

  // Rows open the detail view, by mouse or keyboard.
  $("list").addEventListener("click", (event) => { const row = event.target.closest(".profile"); if (row) open(row.dataset.key); });
  $("list").addEventListener("keydown", (event) => {
    const row = event.target.closest(".profile");
    if (!row) return;
    if (event.key === "Enter" || event.key === " ") { event.preventDefault(); open(row.dataset.key); }
    if (event.key === "ArrowDown") { event.preventDefault(); row.nextElementSibling?.focus(); }
    if (event.key === "ArrowUp") { event.preventDefault(); row.previousElementSibling?.focus(); }
  });

  // Dialog close buttons.
  for (const button of document.querySelectorAll("[data-close]")) {
    button.addEventListener("click", () => button.closest("dialog").close());
  }
  $("detail-dialog").addEventListener("close", () => { state.openKey = null; });

  // Add.
  const form = $("add-form");
  $("add-button").addEventListener("click", () => {
    form.reset();
    for (const el of form.querySelectorAll("[data-error]")) el.textContent = "";
    for (const el of form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
    $("add-dialog").showModal();
    form.elements.name.focus();
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const fields = Object.fromEntries(new FormData(form));
    const { profile, errors } = validateProfile(fields);
    for (const el of form.querySelectorAll("[data-error]")) el.textContent = errors?.[el.dataset.error] ?? "";
    for (const name of ["name", "age", "imageURL", "hobbies"]) {
      const input = form.elements[name];
      if (errors?.[name]) input.setAttribute("aria-invalid", "true"); else input.removeAttribute("aria-invalid");
    }
    if (errors) { form.querySelector('[aria-invalid="true"], input[name=gender]')?.focus(); return; }
    const submit = $("add-submit");
    submit.disabled = true;
    try {
      await directory.add(profile);
      $("add-dialog").close();
      toast(`${profile.name} was added.`);
    } catch (error) {
      form.querySelector('[data-error="form"]').textContent = `Not saved: ${error?.message ?? error}`;
    } finally {
      submit.disabled = false;
    }
  });

  // Hobbies and delete, from the detail view.
  $("hobby-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const p = state.profiles.find((x) => x.key === state.openKey);
    const input = $("hobby-input");
    const added = parseHobbies(input.value);
    if (!p || !added.length) return;
    if (added.some((h) => h.length > 40)) { $("hobby-error").textContent = "A hobby is at most 40 characters."; return; }
    $("hobby-error").textContent = "";
    input.value = "";
    directory.setHobbies(p.key, parseHobbies([...p.hobbies, ...added].join(","))).catch(fail("Could not save the hobbies"));
  });
  $("delete-button").addEventListener("click", async () => {
    const p = state.profiles.find((x) => x.key === state.openKey);
    if (!p || !confirm(`Delete ${p.name}'s profile? This cannot be undone.`)) return;
    try {
      await directory.remove(p.key);
      $("detail-dialog").close();
      toast(`${p.name} was deleted.`);
    } catch (error) { fail("Could not delete")(error); }
  });

  // Sample data for an empty directory.
  $("sample-button").addEventListener("click", async (event) => {
    event.target.disabled = true;
    try {
      for (const profile of SAMPLE) await directory.add(profile);
      toast("Sample profiles loaded.");
    } catch (error) { fail("Could not load the samples")(error); } finally { event.target.disabled = false; }
  });

  render();
}

if (typeof document !== "undefined" && document.getElementById("list")) start();
