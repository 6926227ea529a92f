// Posts — the quickstart app (apps.md §3) on hearth.js and hearth-auth.js: sign-in, recent posts, my
// posts, my top posts, new posts written to two places in one atomic update, stars by transaction in
// both copies, and live comments. No build step, no framework.
import {
  initializeDatabase, ref, child, push, set, update, get, onValue, onChildAdded, query, orderByChild, limitToLast,
  runTransaction,
} from "/hearth.js";
import { getAuth, onAuthStateChanged, signInWithEmailAndPassword, createUserWithEmailAndPassword, signOut } from "/hearth-auth.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const db = initializeDatabase({ url: location.origin, namespace: params.get("ns") ?? "posts" });
const auth = getAuth(db);
const state = { user: null, username: null, pendingUsername: null, tab: "recent", stop: null, mode: "in", openId: null, openStops: [] };

const AUTH_MESSAGES = {
  "auth/email-already-in-use": "An account already uses this email: sign in instead.",
  "auth/invalid-credential": "Wrong email or password.",
  "auth/wrong-password": "Wrong email or password.",
  "auth/user-not-found": "No account uses this email: create one.",
  "auth/weak-password": "Choose a password of at least 6 characters.",
  "auth/invalid-email": "That email address is not valid.",
  "auth/missing-password": "Enter a password.",
  "auth/too-many-requests": "Too many attempts: wait a while and try again.",
};

function toast(message) {
  const el = $("toast");
  el.textContent = message; el.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { el.hidden = true; }, 2600);
}

// ───────────── the model: a post's two copies and its star ─────────────

/** Publishes a post under a new push ID in `posts` and `user-posts/<uid>` at once (one update). */
export async function publish(user, author, title, body) {
  const key = push(ref(db, "posts")).key;
  const post = { uid: user.uid, author, title, body, starCount: 0 };
  await update(ref(db), { [`posts/${key}`]: post, [`user-posts/${user.uid}/${key}`]: post });
  return key;
}

/** Flips `uid`'s star on one copy of a post, keeping `starCount` consistent (a transaction). */
function toggleStarAt(location, uid) {
  return runTransaction(location, (post) => {
    if (post) {
      const stars = { ...(post.stars ?? {}) };
      if (stars[uid]) { delete stars[uid]; post.starCount = Math.max(0, (post.starCount ?? 1) - 1); }
      else { stars[uid] = true; post.starCount = (post.starCount ?? 0) + 1; }
      post.stars = Object.keys(stars).length ? stars : null;
    }
    return post;
  });
}

/** Stars or unstars a post in both copies, as Firebase's quickstart does (one transaction each). */
export async function toggleStar(postId, authorUid, uid) {
  await Promise.all([toggleStarAt(ref(db, `posts/${postId}`), uid), toggleStarAt(ref(db, `user-posts/${authorUid}/${postId}`), uid)]);
}

// ───────────── signed out ─────────────

function setMode(mode) {
  state.mode = mode;
  for (const button of document.querySelectorAll("[data-mode]")) button.setAttribute("aria-pressed", String(button.dataset.mode === mode));
  document.querySelector("[data-up]").hidden = mode !== "up";
  $("auth-submit").textContent = mode === "up" ? "Create account" : "Sign in";
  document.querySelector("#auth-form input[name=password]").autocomplete = mode === "up" ? "new-password" : "current-password";
  $("auth-error").textContent = "";
}

async function submitAuth(event) {
  event.preventDefault();
  const fields = Object.fromEntries(new FormData(event.target));
  const error = $("auth-error");
  error.textContent = "";
  if (state.mode === "up" && !fields.username.trim()) { error.textContent = "Choose a username."; return; }
  try {
    if (state.mode === "up") {
      // Signed in as soon as the account exists, before its profile is written: the name chosen here
      // is the one to show meanwhile (not the email's).
      state.pendingUsername = fields.username.trim();
      const { user } = await createUserWithEmailAndPassword(auth, fields.email.trim(), fields.password);
      await set(ref(db, `users/${user.uid}`), { username: fields.username.trim(), email: user.email });
    } else {
      await signInWithEmailAndPassword(auth, fields.email.trim(), fields.password);
    }
    event.target.reset();
  } catch (failure) {
    state.pendingUsername = null;
    error.textContent = AUTH_MESSAGES[failure.code] ?? failure.message;
  }
}

// ───────────── signed in ─────────────

async function showSignedIn(user) {
  state.user = user;
  $("signed-out").hidden = true;
  $("signed-in").hidden = false;
  $("sign-out").hidden = false;
  const profile = (await get(ref(db, `users/${user.uid}`))).val();
  state.username = profile?.username ?? state.pendingUsername ?? user.email?.split("@")[0] ?? "someone";
  state.pendingUsername = null;
  const email = Object.assign(document.createElement("span"), { className: "who-email", textContent: ` · ${user.email ?? ""}` });
  $("who").replaceChildren(state.username, email);
  showTab(state.tab);
}

function showSignedOut() {
  state.user = null;
  state.stop?.(); state.stop = null;
  $("signed-in").hidden = true;
  $("sign-out").hidden = true;
  $("who").textContent = "";
  $("signed-out").hidden = false;
  setMode(state.mode);
}

function showTab(tab) {
  state.tab = tab;
  for (const button of document.querySelectorAll("[data-tab]")) button.setAttribute("aria-pressed", String(button.dataset.tab === tab));
  state.stop?.();
  $("loading").hidden = false;
  const uid = state.user.uid;
  const source = tab === "recent" ? query(ref(db, "posts"), limitToLast(100))
    : tab === "mine" ? ref(db, `user-posts/${uid}`)
    : query(ref(db, `user-posts/${uid}`), orderByChild("starCount"), limitToLast(100));
  state.stop = onValue(source, (snap) => {
    const posts = [];
    snap.forEach((c) => { posts.push({ id: c.key, ...c.val() }); });
    // Newest first (push IDs sort by time); top posts by stars, most first.
    posts.reverse();
    renderPosts(posts);
  }, (error) => { toast(`Cannot read posts: ${error?.message ?? error}`); });
}

function renderPosts(posts) {
  $("loading").hidden = true;
  $("empty").hidden = posts.length > 0;
  $("summary").textContent = { recent: "The newest posts of everyone.", mine: "Everything you wrote.", top: "Your posts, most starred first." }[state.tab];
  const uid = state.user.uid;
  $("posts").replaceChildren(...posts.map((post) => {
    const item = document.createElement("li");
    item.className = "card post";
    item.tabIndex = 0;
    item.dataset.id = post.id;
    const title = document.createElement("h2"); title.textContent = post.title;
    const meta = document.createElement("span"); meta.className = "meta"; meta.textContent = `by ${post.author}`;
    const excerpt = document.createElement("p"); excerpt.className = "excerpt"; excerpt.textContent = post.body;
    item.append(title, starButton(post, uid), meta, excerpt);
    item.addEventListener("click", (event) => { if (!event.target.closest(".star")) openPost(post.id); });
    item.addEventListener("keydown", (event) => { if (event.key === "Enter" && event.target === item) openPost(post.id); });
    return item;
  }));
}

function starButton(post, uid) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "star";
  const starred = !!post.stars?.[uid];
  button.setAttribute("aria-pressed", String(starred));
  button.setAttribute("aria-label", `${starred ? "Unstar" : "Star"} “${post.title}” (${post.starCount ?? 0} stars)`);
  button.textContent = `${starred ? "★" : "☆"} ${post.starCount ?? 0}`;
  button.addEventListener("click", () => toggleStar(post.id, post.uid, uid).catch((error) => toast(`Not starred: ${error?.message ?? error}`)));
  return button;
}

function openPost(id) {
  for (const stop of state.openStops) stop();
  state.openId = id;
  $("comments").replaceChildren();
  state.openStops = [
    onValue(ref(db, `posts/${id}`), (snap) => {
      const post = snap.val();
      if (!post) { $("detail-dialog").close(); return; }
      $("detail-title").textContent = post.title;
      $("detail-author").textContent = `by ${post.author}`;
      $("detail-body").textContent = post.body;
      $("detail-star").replaceWith(Object.assign(starButton({ id, ...post }, state.user.uid), { id: "detail-star" }));
    }),
    onChildAdded(ref(db, `post-comments/${id}`), (snap) => {
      const comment = snap.val();
      const item = document.createElement("li");
      const author = document.createElement("div"); author.className = "author"; author.textContent = comment.author;
      const text = document.createElement("div"); text.textContent = comment.text;
      item.append(author, text);
      item.classList.add("changed");
      $("comments").append(item);
    }),
  ];
  $("detail-dialog").showModal();
}

// ───────────── wiring ─────────────

for (const button of document.querySelectorAll("[data-mode]")) button.addEventListener("click", () => setMode(button.dataset.mode));
$("auth-form").addEventListener("submit", submitAuth);
$("sign-out").addEventListener("click", () => signOut(auth));
for (const button of document.querySelectorAll("[data-tab]")) button.addEventListener("click", () => showTab(button.dataset.tab));
for (const button of document.querySelectorAll("[data-close]")) button.addEventListener("click", () => button.closest("dialog").close());
$("detail-dialog").addEventListener("close", () => { for (const stop of state.openStops) stop(); state.openStops = []; state.openId = null; });
$("new-post").addEventListener("click", () => { $("post-form").reset(); $("post-error").textContent = ""; $("post-dialog").showModal(); });
$("post-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const { title, body } = Object.fromEntries(new FormData(event.target));
  if (!title.trim()) { $("post-error").textContent = "Give the post a title."; return; }
  try {
    await publish(state.user, state.username, title.trim(), body);
    $("post-dialog").close();
    toast("Published.");
  } catch (error) { $("post-error").textContent = `Not published: ${error?.message ?? error}`; }
});
$("comment-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = $("comment-input");
  const text = input.value.trim();
  if (!text || !state.openId) return;
  try {
    await push(ref(db, `post-comments/${state.openId}`), { uid: state.user.uid, author: state.username, text });
    input.value = "";
  } catch (error) { toast(`Not sent: ${error?.message ?? error}`); }
});

onAuthStateChanged(auth, (user) => { if (user) showSignedIn(user); else showSignedOut(); });
