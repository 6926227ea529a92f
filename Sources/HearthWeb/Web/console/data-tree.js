// The console's Data tree: the children of one location in a virtual scroller, so a node with a
// million children opens at once and scrolls smoothly. Plain ES module.
//
// Browsing asks the server for rows by position (GET /.console/children: the child count, and
// children `offset..<offset+limit` in key order, objects summarised by their child count), fetches
// only the pages the viewport needs, and keeps a fixed number of row elements whatever the count.
// While the view is open the visible rows are fetched again every second, so changes made elsewhere
// appear (highlighted) without listening to — or downloading — the whole node.
//
// A query (order, range, limit) is a live hearth.js listener instead: its result is bounded by its
// limit, and it shows in the same scroller.
import {
  ref, set, remove, onValue, query,
  orderByKey, orderByValue, orderByPriority, orderByChild,
  startAt, endAt, equalTo, limitToFirst, limitToLast,
} from "/hearth.js";

/** Row height in pixels: every row has it, so a row's position is its index times this. */
export const ROW = 32;
/** Rows asked for at once. */
const PAGE = 200;
/** Rows past the view whose page is fetched ahead of need. */
const AHEAD = 100;
/** Rows rendered above and below the viewport, so a fast scroll does not show blanks. */
const OVERSCAN = 12;
/** Milliseconds between refreshes of the visible rows while browsing. */
const REFRESH = 1000;
/** How long a changed row stays highlighted (ms). */
const HIGHLIGHT = 3000;
/** Chromium refuses elements taller than ~33.5M px: beyond this the scroll position is scaled. */
const MAX_HEIGHT = 15_000_000;
/** Pages kept in memory while browsing (older ones are fetched again when needed). */
const KEEP_PAGES = 64;

/** Parses what was typed: JSON when it is JSON (numbers, true, null, objects, "quoted"), else a string. */
export function parseTyped(text) {
  const trimmed = text.trim();
  try { return JSON.parse(trimmed); } catch { return text; }
}

function describe(value) {
  if (value === null || value === undefined) return { text: "null", kind: "null" };
  return { text: JSON.stringify(value), kind: typeof value };
}

/** A row as the server sends it: `{key, value}` for a leaf, `{key, children: n}` for an object. */
function fromValue(key, value) {
  return value !== null && typeof value === "object" ? { key, children: Object.keys(value).length } : { key, value };
}

const fingerprint = (row) => ("children" in row ? `#${row.children}` : JSON.stringify(row.value));

/** Children of a location by position, from the server, a page at a time. */
class BrowseSource {
  constructor(tree, path) {
    this.tree = tree;
    this.path = path;
    this.count = null;       // null until the first answer
    this.leaf = undefined;   // the value, when the location itself is a leaf
    this.pages = new Map();  // page index → rows
    this.loading = new Set();
    this.stale = new Set();  // pages to fetch again (the refresh of the rows in view)
    this.failedAt = -Infinity;
  }

  row(index) { return this.pages.get(Math.floor(index / PAGE))?.[index % PAGE]; }

  /**
   * Fetches the first page covering `first..last` that is missing or stale (`refresh` makes them all
   * stale). One request at a time: when it returns, the tree renders and asks again, so a fast scroll
   * only fetches where it ends up.
   */
  want(first, last, refresh = false) {
    const from = Math.floor(first / PAGE);
    const to = Math.floor(Math.max(first, last) / PAGE);
    if (refresh) for (let page = from; page <= to; page++) this.stale.add(page);
    if (this.loading.size || performance.now() - this.failedAt < 2000) return; // a failure shows; the next refresh retries
    const missing = (page) => page >= 0 && (this.count === null || page * PAGE < Math.max(this.count, 1)) && (!this.pages.has(page) || this.stale.has(page));
    for (let page = from; page <= to; page++) if (missing(page)) { this.fetchPage(page); return; }
    // Then the pages just past the view, so scrolling on rarely meets rows still loading.
    const after = Math.floor((last + AHEAD) / PAGE);
    const before = Math.floor(Math.max(0, first - AHEAD) / PAGE);
    if (after !== to && !this.stale.has(after) && missing(after)) this.fetchPage(after);
    else if (before !== from && !this.stale.has(before) && missing(before)) this.fetchPage(before);
  }

  async fetchPage(page) {
    this.loading.add(page);
    try {
      const params = new URLSearchParams({ ns: this.tree.context.namespace(), path: "/" + this.path.join("/"), offset: String(page * PAGE), limit: String(PAGE) });
      const body = await this.tree.context.apiJSON(`/.console/children?${params}`);
      if (this.tree.source !== this) return;
      const first = this.count === null;
      if (this.count !== null && body.count !== this.count) {
        // Children came or went: positions moved, so other pages are stale.
        for (const other of [...this.pages.keys()]) if (other !== page) this.pages.delete(other);
      }
      this.count = body.count;
      this.leaf = "value" in body ? body.value : undefined;
      this.tree.noteRows(body.children, !first && this.pages.has(page) ? this.pages.get(page) : null);
      this.pages.delete(page); // re-inserted last: the pages in view are the newest, the oldest leave first
      this.pages.set(page, body.children);
      this.stale.delete(page);
      if (this.pages.size > KEEP_PAGES) this.pages.delete(this.pages.keys().next().value);
      this.tree.error(null);
    } catch (error) {
      this.failedAt = performance.now();
      if (error.message !== "signed out") this.tree.error(`Cannot read /${this.path.join("/")}: ${error.message}`);
    } finally {
      this.loading.delete(page);
      this.tree.render();
    }
  }

  stop() {}
}

/** The result of a live query, as rows. */
class QuerySource {
  constructor(tree, path, spec) {
    this.tree = tree;
    this.path = path;
    this.count = null;
    this.rows = [];
    const at = path.length ? ref(tree.context.db(), path.join("/")) : ref(tree.context.db());
    let first = true;
    this.unsubscribe = onValue(query(at, ...constraints(spec)), (snap) => {
      const rows = [];
      snap.forEach((child) => { rows.push(fromValue(child.key, child.val())); });
      if (snap.exists() && !rows.length) this.leaf = snap.val();
      tree.noteRows(rows, first ? null : this.rows);
      first = false;
      this.rows = rows;
      this.count = rows.length;
      tree.error(null);
      tree.render();
    }, (error) => { tree.error(`The query failed: ${error?.message ?? error}`); });
  }

  row(index) { return this.rows[index]; }
  want() {}
  stop() { this.unsubscribe?.(); }
}

/** The hearth.js constraints of a query form's values. */
export function constraints(spec) {
  const out = [];
  switch (spec.orderBy) {
    case "value": out.push(orderByValue()); break;
    case "priority": out.push(orderByPriority()); break;
    case "child": out.push(orderByChild(spec.child || "")); break;
    default: out.push(orderByKey());
  }
  const bound = (text) => (spec.orderBy === "key" || !spec.orderBy ? text : parseTyped(text));
  if (spec.equalTo !== "") out.push(equalTo(bound(spec.equalTo)));
  else {
    if (spec.startAt !== "") out.push(startAt(bound(spec.startAt)));
    if (spec.endAt !== "") out.push(endAt(bound(spec.endAt)));
  }
  const limit = Number(spec.limit) || 100;
  out.push(spec.limitSide === "last" ? limitToLast(limit) : limitToFirst(limit));
  return out;
}

/**
 * The tree of one location. `context` gives what it needs from the console:
 * `{ db(), namespace(), apiJSON(url), toast(text), navigate(path) }`.
 *
 * ```js
 * const tree = new DataTree(document.getElementById("tree-scroller"), context);
 * tree.open(["users"]);           // browse /users
 * tree.open(["users"], { orderBy: "child", child: "age", limit: 10, … });  // a query
 * ```
 */
export class DataTree {
  constructor(scroller, context) {
    this.scroller = scroller;
    this.spacer = scroller.querySelector(".tree-spacer");
    this.list = scroller.querySelector(".tree");
    this.context = context;
    this.source = null;
    this.known = new Map();     // key → fingerprint of the rows seen at this location
    this.changed = new Map();   // key → when it changed (highlighted until HIGHLIGHT later)
    this.editing = false;
    this.rendered = new Map();  // row identity (key, value, highlight) → its element, for reuse
    this.frame = 0;
    scroller.addEventListener("scroll", () => this.schedule());
    new ResizeObserver(() => this.schedule()).observe(scroller);
    this.timer = setInterval(() => this.refresh(), REFRESH);
  }

  /** Opens `path` (an array of keys): browsing by position, or the result of `spec` (a query). */
  open(path, spec = null) {
    this.source?.stop();
    this.known = new Map();
    this.changed = new Map();
    this.rendered = new Map();
    this.path = path;
    this.spec = spec;
    this.scroller.scrollTop = 0;
    this.source = spec ? new QuerySource(this, path, spec) : new BrowseSource(this, path);
    this.render();
  }

  close() { this.source?.stop(); this.source = null; }

  /** Fetches the visible rows again (browsing; a query is live by itself). */
  refresh() {
    if (!(this.source instanceof BrowseSource) || this.editing || !this.scroller.isConnected || this.scroller.offsetParent === null || document.hidden) return;
    const [first, last] = this.visibleRange();
    this.source.want(first, last, true);
  }

  /** Remembers rows just fetched; those that differ from what was shown before get highlighted. */
  noteRows(rows, previousPage) {
    const now = performance.now();
    const before = previousPage ? new Set(previousPage.map((row) => row.key)) : null;
    for (const row of rows) {
      const print = fingerprint(row);
      const old = this.known.get(row.key);
      if ((old !== undefined && old !== print) || (old === undefined && before && !before.has(row.key))) this.changed.set(row.key, now);
      this.known.set(row.key, print);
    }
  }

  error(message) {
    const banner = document.getElementById("data-error");
    banner.hidden = !message;
    banner.textContent = message ?? "";
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.render(); });
  }

  /** The scroll geometry: total rows, the spacer's height and the first row's virtual position. */
  geometry() {
    const count = this.source?.count ?? 0;
    const full = count * ROW;
    const height = Math.min(full, MAX_HEIGHT);
    const viewport = this.scroller.clientHeight || 400;
    // Scaled past MAX_HEIGHT: the scroll bar's range maps onto the whole list.
    const ratio = height > viewport && full > height ? (full - viewport) / (height - viewport) : 1;
    return { count, height, viewport, virtualTop: this.scroller.scrollTop * ratio };
  }

  visibleRange() {
    const { count, viewport, virtualTop } = this.geometry();
    const first = Math.max(0, Math.floor(virtualTop / ROW) - OVERSCAN);
    const last = Math.min(Math.max(count - 1, 0), Math.ceil((virtualTop + viewport) / ROW) + OVERSCAN);
    return [first, last];
  }

  render() {
    if (this.editing || !this.source) return;
    const source = this.source;
    const { count, height, virtualTop } = this.geometry();
    this.spacer.style.height = `${height}px`;
    // As tall as its rows (CSS caps it): a short list takes little room, a long one scrolls.
    this.scroller.style.height = `${Math.max(Math.min(count, 40), source.leaf !== undefined || count === 0 ? 2 : 3) * ROW}px`;
    document.getElementById("tree-count").textContent = source.count === null ? "Loading…"
      : count ? `${count.toLocaleString()} ${count === 1 ? "child" : "children"}${this.spec ? " (query)" : ""}` : "";
    if (source.count === null) { source.want(0, PAGE - 1); return; }
    if (count === 0) {
      this.list.style.transform = "";
      if (source.leaf !== undefined) { this.list.replaceChildren(this.rowElement(this.path, this.path.at(-1) ?? "/", { key: this.path.at(-1), value: source.leaf })); return; }
      const empty = document.createElement("li");
      empty.className = "empty";
      empty.textContent = this.spec ? "No child matches this query." : this.path.length ? "Nothing here (null). Add a child below." : "This database is empty. Add a child below.";
      this.list.replaceChildren(empty);
      return;
    }
    const [first, last] = this.visibleRange();
    source.want(first, last);
    const now = performance.now();
    const rows = [];
    // Rows still in view keep their elements (a scroll step builds only the rows it brings in).
    const previous = this.rendered;
    this.rendered = new Map();
    for (let index = first; index <= last; index++) {
      const row = source.row(index);
      let element;
      if (row) {
        const highlighted = now - (this.changed.get(row.key) ?? -Infinity) < HIGHLIGHT;
        const id = `${highlighted ? "!" : ""}${row.key}\u0000${fingerprint(row)}`;
        element = previous.get(id) ?? this.rowElement([...this.path, row.key], row.key, row, now);
        this.rendered.set(id, element);
      } else element = this.placeholder();
      element.setAttribute("aria-posinset", String(index + 1));
      element.setAttribute("aria-setsize", String(count));
      rows.push(element);
    }
    // The list sits where its first row belongs, relative to the (possibly scaled) scroll position.
    this.list.style.transform = `translateY(${Math.round(this.scroller.scrollTop - (virtualTop - first * ROW))}px)`;
    const children = this.list.children;
    if (rows.length !== children.length || rows.some((row, i) => row !== children[i])) this.list.replaceChildren(...rows);
  }

  placeholder() {
    const item = document.createElement("li");
    item.className = "node-row loading";
    item.setAttribute("role", "treeitem");
    item.textContent = "…";
    return item;
  }

  rowElement(path, key, row, now = performance.now()) {
    const item = document.createElement("li");
    item.className = "node-row";
    item.setAttribute("role", "treeitem");
    const changedAt = this.changed.get(key);
    if (changedAt !== undefined) {
      if (now - changedAt < HIGHLIGHT) item.classList.add("changed"); else this.changed.delete(key);
    }
    const isObject = "children" in row;
    const toggle = document.createElement("button");
    toggle.className = "toggle"; toggle.type = "button";
    if (isObject) {
      toggle.textContent = "▸";
      toggle.setAttribute("aria-label", `Open ${key}`);
      toggle.addEventListener("click", () => this.context.navigate(path));
    } else { toggle.tabIndex = -1; toggle.setAttribute("aria-hidden", "true"); }
    const name = document.createElement(isObject ? "button" : "span");
    name.className = "key" + (isObject ? " linkish" : "");
    name.textContent = key;
    if (isObject) { name.type = "button"; name.title = "Open this node"; name.addEventListener("click", () => this.context.navigate(path)); }
    item.append(toggle, name);
    if (isObject) {
      const hint = document.createElement("span");
      hint.className = "hint";
      hint.textContent = `${row.children.toLocaleString()} ${row.children === 1 ? "child" : "children"}`;
      item.append(hint);
    } else item.append(this.valueElement(path, key, row.value));
    const actions = document.createElement("span");
    actions.className = "actions";
    const del = document.createElement("button");
    del.className = "button small danger"; del.type = "button"; del.textContent = "Delete";
    del.setAttribute("aria-label", `Delete ${path.join("/") || "everything"}`);
    del.addEventListener("click", async () => {
      if (!confirm(`Delete /${path.join("/")} and everything under it?`)) return;
      try { await remove(ref(this.context.db(), path.join("/"))); this.context.toast(`Deleted /${path.join("/")}`); this.refresh(); }
      catch (error) { this.context.toast(`Not deleted: ${error?.message ?? error}`); }
    });
    actions.append(del);
    item.append(actions);
    return item;
  }

  /** A leaf's value; Enter or a click edits it in place, typed (see parseTyped). */
  valueElement(path, key, value) {
    const shown = describe(value);
    const span = document.createElement("span");
    span.className = `value ${shown.kind}`;
    span.textContent = shown.text;
    span.tabIndex = 0;
    span.title = "Edit (Enter)";
    const finish = () => { this.editing = false; this.render(); };
    const edit = () => {
      const input = document.createElement("input");
      input.className = "input edit"; input.value = shown.text; input.setAttribute("aria-label", `New value of ${key}`);
      this.editing = true;
      span.replaceWith(input);
      input.focus(); input.select();
      input.addEventListener("keydown", async (event) => {
        if (event.key === "Escape") { input.replaceWith(span); span.focus(); finish(); }
        if (event.key === "Enter") {
          try { await set(ref(this.context.db(), path.join("/")), parseTyped(input.value)); this.context.toast(`Saved /${path.join("/")}`); }
          catch (error) { this.context.toast(`Not saved: ${error?.message ?? error}`); }
          if (input.isConnected) input.replaceWith(span);
          finish();
          this.refresh();
        }
      });
      input.addEventListener("blur", () => { if (input.isConnected) { input.replaceWith(span); finish(); } });
    };
    span.addEventListener("click", edit);
    span.addEventListener("keydown", (event) => { if (event.key === "Enter") edit(); });
    return span;
  }
}
