// Timeline — the photo-sharing app (apps.md §2) on hearth.js, hearth-auth.js and hearth-storage.js.
//
// users/<uid> = {username, bio?, url?, follows/<uid>: true}; posts/<id> = {uid, username, image (the
// photo's storage path), imageURL, caption?, likes/<uid>: true, comments/<id>: {uid, username, text}};
// photos in the project's bucket under timeline/<uid>/. The timeline runs one query per followed
// person (and one for you) at once and shows their posts merged, newest first, live.
import {
  initializeDatabase, ref, child, push, set, update, remove, get, onValue, query, orderByChild, equalTo,
} from "/hearth.js";
import { getAuth, onAuthStateChanged, signInWithEmailAndPassword, createUserWithEmailAndPassword, signOut } from "/hearth-auth.js";
import { getStorage, ref as fileRef, uploadBytesResumable, getDownloadURL, deleteObject } from "/hearth-storage.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const db = initializeDatabase({ url: location.origin, namespace: params.get("ns") ?? "timeline" });
const auth = getAuth(db);
const state = { user: null, me: null, storage: null, stops: [], feedStops: [], mode: "in", openPost: null, openStop: null };
const COLORS = ["#4c6ef5", "#f76707", "#12b886", "#e64980", "#7950f2", "#1098ad", "#f59f00"];

const AUTH_MESSAGES = {
  "auth/email-already-in-use": "An account already uses this email: log in instead.",
  "auth/invalid-credential": "Wrong email or password.",
  "auth/wrong-password": "Wrong email or password.",
  "auth/user-not-found": "No account uses this email: sign up.",
  "auth/weak-password": "Choose a password of at least 6 characters.",
  "auth/invalid-email": "That email address is not valid.",
  "auth/missing-password": "Enter a password.",
};

function toast(message) {
  const el = $("toast");
  el.textContent = message; el.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { el.hidden = true; }, 2600);
}

function avatar(user, size = "small") {
  const span = document.createElement("span");
  span.className = `avatar ${size}`;
  span.setAttribute("aria-hidden", "true");
  const name = user?.username ?? "?";
  span.textContent = name.slice(0, 1).toUpperCase();
  let hash = 0;
  for (const c of name) hash = (hash * 31 + c.charCodeAt(0)) >>> 0;
  span.style.background = COLORS[hash % COLORS.length];
  return span;
}

/** The project's bucket, from the ID token's audience (the server's project). */
async function projectBucket(user) {
  const token = await user.getIdToken();
  const payload = JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
  return `gs://${payload.aud}.appspot.com`;
}

// ───────────── the model ─────────────

/** Everything in a timeline: the posts of `uids`, each list fetched concurrently, merged newest first. */
export function mergeTimeline(lists) {
  return lists.flat().sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}

async function sharePhoto(file, caption, onProgress) {
  const id = push(ref(db, "posts")).key;
  const extension = (file.name.split(".").pop() || "jpg").toLowerCase().replace(/[^a-z0-9]/g, "");
  const path = `timeline/${state.user.uid}/${id}.${extension}`;
  const task = uploadBytesResumable(fileRef(state.storage, path), file, { contentType: file.type || "image/jpeg" });
  task.on("state_changed", (snap) => onProgress(snap.totalBytes ? snap.bytesTransferred / snap.totalBytes : 0));
  await task;
  const imageURL = await getDownloadURL(fileRef(state.storage, path));
  const post = { uid: state.user.uid, username: state.me.username, image: path, imageURL };
  if (caption) post.caption = caption;
  await set(ref(db, `posts/${id}`), post);
  return id;
}

// ───────────── sign-in ─────────────

function setMode(mode) {
  state.mode = mode;
  for (const button of document.querySelectorAll("[data-mode]")) button.setAttribute("aria-pressed", String(button.dataset.mode === mode));
  document.querySelector("[data-up]").hidden = mode !== "up";
  $("auth-submit").textContent = mode === "up" ? "Sign up" : "Log in";
  $("auth-error").textContent = "";
}

async function submitAuth(event) {
  event.preventDefault();
  const fields = Object.fromEntries(new FormData(event.target));
  const error = $("auth-error");
  error.textContent = "";
  try {
    if (state.mode === "up") {
      if (!fields.username.trim()) { error.textContent = "Choose a username."; return; }
      const { user } = await createUserWithEmailAndPassword(auth, fields.email.trim(), fields.password);
      const profile = { username: fields.username.trim() };
      if (fields.bio.trim()) profile.bio = fields.bio.trim();
      if (fields.url.trim()) profile.url = fields.url.trim();
      await set(ref(db, `users/${user.uid}`), profile);
    } else {
      await signInWithEmailAndPassword(auth, fields.email.trim(), fields.password);
    }
    event.target.reset();
  } catch (failure) { error.textContent = AUTH_MESSAGES[failure.code] ?? failure.message; }
}

// ───────────── views ─────────────

function stopAll() {
  for (const stop of state.stops) stop();
  for (const stop of state.feedStops) stop();
  state.stops = []; state.feedStops = [];
}

function route() {
  if (!state.user) return;
  stopAll();
  const hash = location.hash || "#/";
  for (const id of ["timeline-view", "search-view", "profile-view"]) $(id).hidden = true;
  for (const link of document.querySelectorAll("#nav a")) {
    if (link.getAttribute("href") === hash) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
  }
  if (hash === "#/search") showSearch();
  else if (hash === "#/me") showProfile(state.user.uid);
  else if (hash.startsWith("#/u/")) showProfile(decodeURIComponent(hash.slice(4)));
  else showTimeline();
}

function showTimeline() {
  $("timeline-view").hidden = false;
  // The people in the timeline: me and whom I follow, kept up to date.
  state.stops.push(onValue(ref(db, `users/${state.user.uid}/follows`), (snap) => {
    const uids = [state.user.uid, ...Object.keys(snap.val() ?? {})];
    for (const stop of state.feedStops) stop();
    state.feedStops = [];
    const lists = new Map();
    const render = () => { if (lists.size === uids.length) renderFeed(mergeTimeline([...lists.values()])); };
    // One query per person, all at once; the feed shows when every one has answered, then live.
    for (const uid of uids) {
      state.feedStops.push(onValue(query(ref(db, "posts"), orderByChild("uid"), equalTo(uid)), (posts) => {
        const list = [];
        posts.forEach((p) => { list.push({ id: p.key, ...p.val() }); });
        lists.set(uid, list);
        render();
      }));
    }
  }));
}

function renderFeed(posts) {
  $("feed-empty").hidden = posts.length > 0;
  $("feed").replaceChildren(...posts.map((post) => {
    const card = document.createElement("article");
    card.className = "card entry";
    card.dataset.id = post.id;
    const head = document.createElement("header");
    const who = document.createElement("a");
    who.href = `#/u/${encodeURIComponent(post.uid)}`; who.textContent = post.username;
    head.append(avatar(post), who);
    const photo = document.createElement("img");
    photo.className = "photo"; photo.src = post.imageURL; photo.alt = post.caption ?? `A photo by ${post.username}`; photo.loading = "lazy";
    photo.tabIndex = 0;
    photo.addEventListener("click", () => openPost(post.id));
    photo.addEventListener("keydown", (event) => { if (event.key === "Enter") openPost(post.id); });
    photo.addEventListener("dblclick", () => toggleLike(post.id, true));
    card.append(head, photo);
    if (post.caption) { const caption = document.createElement("p"); caption.className = "caption"; caption.textContent = post.caption; card.append(caption); }
    const counts = document.createElement("div");
    counts.className = "counts";
    counts.append(likeButton(post), `${Object.keys(post.comments ?? {}).length} comments`);
    card.append(counts);
    return card;
  }));
}

function likeButton(post) {
  const liked = !!post.likes?.[state.user.uid];
  const button = document.createElement("button");
  button.type = "button"; button.className = "like";
  button.setAttribute("aria-pressed", String(liked));
  const count = Object.keys(post.likes ?? {}).length;
  button.textContent = `${liked ? "♥" : "♡"} ${count}`;
  button.setAttribute("aria-label", `${liked ? "Unlike" : "Like"} (${count} likes)`);
  button.addEventListener("click", () => toggleLike(post.id, !liked));
  return button;
}

function toggleLike(postId, like) {
  const location = ref(db, `posts/${postId}/likes/${state.user.uid}`);
  (like ? set(location, true) : remove(location)).catch((error) => toast(`Not saved: ${error?.message ?? error}`));
}

function showSearch() {
  $("search-view").hidden = false;
  const input = $("search");
  const run = async () => {
    const term = input.value.trim().toLowerCase();
    const users = (await get(ref(db, "users"))).val() ?? {};
    const found = Object.entries(users).filter(([uid, u]) => uid !== state.user.uid && (!term || (u.username ?? "").toLowerCase().includes(term)))
      .sort(([, a], [, b]) => a.username.localeCompare(b.username));
    $("people").replaceChildren(...found.map(([uid, u]) => {
      const item = document.createElement("li");
      const link = document.createElement("a");
      link.className = "card"; link.href = `#/u/${encodeURIComponent(uid)}`;
      const name = document.createElement("span"); name.textContent = u.username;
      link.append(avatar(u), name);
      item.append(link);
      return item;
    }));
  };
  input.oninput = () => { clearTimeout(run.timer); run.timer = setTimeout(run, 200); };
  run();
  input.focus();
}

function showProfile(uid) {
  $("profile-view").hidden = false;
  const mine = uid === state.user.uid;
  state.stops.push(onValue(ref(db, "users"), (snap) => {
    const users = snap.val() ?? {};
    const user = users[uid];
    if (!user) { $("profile-name").textContent = "No such person"; return; }
    if (mine) state.me = user;
    $("profile-avatar").replaceWith(Object.assign(avatar(user, "big"), { id: "profile-avatar" }));
    $("profile-name").textContent = user.username;
    $("profile-bio").textContent = user.bio ?? "";
    const url = $("profile-url");
    url.textContent = user.url ?? ""; url.href = /^https?:\/\//.test(user.url ?? "") ? user.url : "#";
    const followers = Object.values(users).filter((u) => u.follows?.[uid]).length;
    const following = Object.keys(user.follows ?? {}).length;
    $("profile-followers").textContent = `${followers} ${followers === 1 ? "follower" : "followers"}`;
    $("profile-following").textContent = `${following} following`;
    const follows = !!users[state.user.uid]?.follows?.[uid];
    const follow = $("follow");
    follow.hidden = mine;
    follow.textContent = follows ? "Unfollow" : "Follow";
    follow.className = follows ? "button" : "button primary";
    follow.onclick = () => {
      const location = ref(db, `users/${state.user.uid}/follows/${uid}`);
      (follows ? remove(location) : set(location, true)).catch((error) => toast(`Not saved: ${error?.message ?? error}`));
    };
    $("edit-profile").hidden = !mine;
    $("log-out").hidden = !mine;
  }));
  state.stops.push(onValue(query(ref(db, "posts"), orderByChild("uid"), equalTo(uid)), (snap) => {
    const posts = [];
    snap.forEach((p) => { posts.push({ id: p.key, ...p.val() }); });
    posts.reverse();
    $("profile-posts-count").textContent = `${posts.length} ${posts.length === 1 ? "post" : "posts"}`;
    $("profile-grid").replaceChildren(...posts.map((post) => {
      const img = document.createElement("img");
      img.src = post.imageURL; img.alt = post.caption ?? "A photo"; img.loading = "lazy"; img.tabIndex = 0;
      img.addEventListener("click", () => openPost(post.id));
      img.addEventListener("keydown", (event) => { if (event.key === "Enter") openPost(post.id); });
      return img;
    }));
  }));
}

function openPost(id) {
  state.openStop?.();
  state.openPost = id;
  const dialog = $("post-dialog");
  state.openStop = onValue(ref(db, `posts/${id}`), (snap) => {
    const post = snap.val();
    if (!post) { if (dialog.open) dialog.close(); return; }
    $("post-title").textContent = post.username;
    const photo = $("post-photo");
    if (photo.src !== post.imageURL) photo.src = post.imageURL;
    photo.alt = post.caption ?? "A photo";
    photo.ondblclick = () => toggleLike(id, true);
    $("post-caption").textContent = post.caption ?? "";
    $("post-like").replaceWith(Object.assign(likeButton({ id, ...post }), { id: "post-like" }));
    $("post-counts").textContent = `${Object.keys(post.comments ?? {}).length} comments`;
    $("post-delete").hidden = post.uid !== state.user.uid;
    $("post-delete").onclick = async () => {
      if (!confirm("Delete this post?")) return;
      try {
        await remove(ref(db, `posts/${id}`));
        await deleteObject(fileRef(state.storage, post.image)).catch(() => {});
        toast("Post deleted.");
      } catch (error) { toast(`Not deleted: ${error?.message ?? error}`); }
    };
    const comments = Object.entries(post.comments ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
    $("post-comments").replaceChildren(...comments.map(([commentId, comment]) => {
      const item = document.createElement("li");
      const who = document.createElement("span"); who.className = "who"; who.textContent = comment.username;
      const text = document.createElement("span"); text.textContent = comment.text;
      item.append(who, text);
      if (comment.uid === state.user.uid) {
        const del = document.createElement("button");
        del.type = "button"; del.className = "button small"; del.textContent = "Delete";
        del.setAttribute("aria-label", "Delete your comment");
        del.onclick = () => remove(ref(db, `posts/${id}/comments/${commentId}`)).catch((error) => toast(error.message));
        item.append(del);
      }
      return item;
    }));
  });
  if (!dialog.open) dialog.showModal();
}

// ───────────── wiring ─────────────

for (const button of document.querySelectorAll("[data-mode]")) button.addEventListener("click", () => setMode(button.dataset.mode));
$("auth-form").addEventListener("submit", submitAuth);
for (const button of document.querySelectorAll("[data-close]")) button.addEventListener("click", () => button.closest("dialog").close());
$("post-dialog").addEventListener("close", () => { state.openStop?.(); state.openStop = null; state.openPost = null; });
$("log-out").addEventListener("click", () => signOut(auth));
$("refresh").addEventListener("click", () => route());
window.addEventListener("hashchange", route);

$("new-post").addEventListener("click", () => {
  $("new-form").reset(); $("new-error").textContent = ""; $("new-preview").hidden = true; $("new-progress").hidden = true;
  $("new-dialog").showModal();
});
$("new-form").elements.photo.addEventListener("change", (event) => {
  const file = event.target.files[0];
  const preview = $("new-preview");
  if (file) { preview.src = URL.createObjectURL(file); preview.hidden = false; } else preview.hidden = true;
});
$("new-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const file = form.elements.photo.files[0];
  if (!file) { $("new-error").textContent = "Pick a photo."; return; }
  if (!file.type.startsWith("image/")) { $("new-error").textContent = "That file is not an image."; return; }
  const bar = $("new-progress");
  bar.hidden = false;
  $("new-submit").disabled = true;
  try {
    await sharePhoto(file, form.elements.caption.value.trim(), (fraction) => { bar.firstElementChild.style.width = `${Math.round(fraction * 100)}%`; });
    $("new-dialog").close();
    toast("Shared.");
  } catch (error) {
    $("new-error").textContent = `Not shared: ${error?.message ?? error}`;
  } finally { $("new-submit").disabled = false; }
});
$("comment-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = $("comment-input");
  const text = input.value.trim();
  if (!text || !state.openPost) return;
  try {
    await set(push(ref(db, `posts/${state.openPost}/comments`)), { uid: state.user.uid, username: state.me.username, text });
    input.value = "";
  } catch (error) { toast(`Not sent: ${error?.message ?? error}`); }
});
$("edit-profile").addEventListener("click", () => {
  const form = $("profile-form");
  form.elements.username.value = state.me?.username ?? "";
  form.elements.bio.value = state.me?.bio ?? "";
  form.elements.url.value = state.me?.url ?? "";
  $("profile-error").textContent = "";
  $("profile-dialog").showModal();
});
$("profile-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const fields = Object.fromEntries(new FormData(event.target));
  if (!fields.username.trim()) { $("profile-error").textContent = "A username is needed."; return; }
  try {
    await update(ref(db, `users/${state.user.uid}`), { username: fields.username.trim(), bio: fields.bio.trim() || null, url: fields.url.trim() || null });
    $("profile-dialog").close();
    toast("Profile saved.");
  } catch (error) { $("profile-error").textContent = `Not saved: ${error?.message ?? error}`; }
});

onAuthStateChanged(auth, async (user) => {
  state.user = user;
  if (!user) {
    stopAll();
    for (const id of ["timeline-view", "search-view", "profile-view"]) $(id).hidden = true;
    $("nav").hidden = true;
    $("signed-out").hidden = false;
    setMode(state.mode);
    return;
  }
  $("signed-out").hidden = true;
  $("nav").hidden = false;
  state.storage = getStorage(db, await projectBucket(user));
  // A profile written at sign-up may still be on its way: wait for it briefly.
  for (let attempt = 0; attempt < 20 && !state.me; attempt++) {
    state.me = (await get(ref(db, `users/${user.uid}`))).val();
    if (!state.me) await new Promise((resolve) => setTimeout(resolve, 150));
  }
  state.me ??= { username: user.email?.split("@")[0] ?? "me" };
  route();
});
