// The console's Rules view: database and storage rules in an editor that shows the server's
// diagnostics at their line and column as you type, save with confirmation, the history of saved
// versions with a diff against the editor and restore, and the simulator with its explanation
// (every rule evaluated, at its line, and the one that decided).
import { lineDiff, hunks } from "./diff.js";

/**
 * Wires the view to the page. `context` holds the console's shared pieces.
 * @example const rules = mountRules({ $, api, apiJSON, toast, state, parseTyped }); rules.load();
 */
export function mountRules({ $, api, apiJSON, toast, state, parseTyped }) {
  const editor = $("rules-source");
  const gutter = $("rules-gutter");
  let saved = "";            // the source as last loaded or saved
  let versions = [];         // the history, newest first
  let selected = null;       // the version shown in the diff
  let checkTimer = null;
  let checkRun = 0;

  const isDatabase = () => state.rulesKind === "database";
  const rulesURL = () => isDatabase() ? `/.settings/rules.json?ns=${encodeURIComponent(state.namespace)}` : "/.settings/storage.rules";
  const scopeQuery = () => isDatabase() ? `kind=database&ns=${encodeURIComponent(state.namespace)}` : "kind=storage";

  // ── editor: line numbers and diagnostics ──

  function renderGutter(marked = new Set()) {
    const count = editor.value.split("\n").length;
    const lines = [];
    for (let line = 1; line <= count; line++) lines.push(marked.has(line) ? `<span class="bad">${line}</span>` : String(line));
    gutter.innerHTML = lines.join("\n");
    gutter.scrollTop = editor.scrollTop;
  }

  /** Puts the caret at a 1-based line and column of the editor, and scrolls it into view. */
  function reveal(line, column = 1) {
    const lines = editor.value.split("\n");
    let offset = 0;
    for (let index = 0; index < Math.min(line - 1, lines.length); index++) offset += lines[index].length + 1;
    offset += Math.max(0, column - 1);
    editor.focus();
    editor.setSelectionRange(offset, offset);
    const lineHeight = parseFloat(getComputedStyle(editor).lineHeight) || 19;
    editor.scrollTop = Math.max(0, (line - 4) * lineHeight);
    gutter.scrollTop = editor.scrollTop;
  }

  function showDiagnostics(diagnostics) {
    const list = $("rules-diagnostics");
    list.replaceChildren(...diagnostics.map((diagnostic) => {
      const item = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "linkish";
      button.textContent = `Line ${diagnostic.line}, column ${diagnostic.column}`;
      button.addEventListener("click", () => reveal(diagnostic.line, diagnostic.column));
      item.append(button, document.createTextNode(`: ${diagnostic.message}`));
      return item;
    }));
    list.hidden = diagnostics.length === 0;
    renderGutter(new Set(diagnostics.map((diagnostic) => diagnostic.line)));
    const check = $("rules-check");
    check.dataset.state = diagnostics.length ? "bad" : "good";
    check.textContent = diagnostics.length ? `${diagnostics.length} problem${diagnostics.length > 1 ? "s" : ""}` : "No problems";
  }

  async function check() {
    const run = ++checkRun;
    if (isDatabase() === false && !state.info.files) return;
    try {
      const body = await apiJSON(`/.console/rules/check?${scopeQuery()}`, { method: "POST", body: editor.value });
      if (run === checkRun) showDiagnostics(body.diagnostics);
    } catch (error) {
      if (run === checkRun) $("rules-check").textContent = `Not checked: ${error.message}`;
    }
  }

  function edited() {
    renderGutter();
    $("rules-state").textContent = editor.value === saved ? "" : "Unsaved changes.";
    clearTimeout(checkTimer);
    checkTimer = setTimeout(check, 300);
    if (selected) showDiff();
  }

  // ── load and save ──

  async function load() {
    for (const button of document.querySelectorAll("[data-rules]")) button.setAttribute("aria-pressed", String(button.dataset.rules === state.rulesKind));
    $("rules-where").textContent = isDatabase()
      ? `Security rules of the database “${state.namespace}” (JSON with comments). Saved rules apply to the next request.`
      : "Storage rules (Firebase's storage rules language), for every bucket.";
    // The emulator counts what each database rule answered (/.inspect/coverage).
    const coverage = $("rules-coverage");
    coverage.hidden = !(isDatabase() && state.info.emulator);
    coverage.href = `/.inspect/coverage?ns=${encodeURIComponent(state.namespace)}`;
    $("rules-diagnostics").hidden = true;
    $("rules-state").textContent = "";
    $("rules-check").textContent = "";
    $("simulator").hidden = !isDatabase();
    selected = null;
    $("history-diff").hidden = true;
    if (!isDatabase() && !state.info.files) {
      editor.value = ""; saved = ""; renderGutter();
      $("rules-state").textContent = "This server runs without files.";
      $("history-list").replaceChildren();
      return;
    }
    const response = await api(rulesURL());
    editor.value = response.ok ? await response.text() : "";
    saved = editor.value;
    renderGutter();
    if (!response.ok) $("rules-state").textContent = `Could not read the rules (${response.status}).`;
    check();
    loadHistory();
  }

  async function save(source = editor.value, what = "Replace the rules? They apply to the next request.") {
    if (!confirm(what)) return false;
    const response = await api(rulesURL(), { method: "PUT", body: source });
    if (response.ok) {
      editor.value = source;
      saved = source;
      renderGutter();
      $("rules-diagnostics").hidden = true;
      $("rules-state").textContent = `Saved at ${new Date().toLocaleTimeString()}.`;
      toast("Rules saved.");
      check();
      await loadHistory();
      return true;
    }
    const body = await response.json().catch(() => ({}));
    $("rules-state").textContent = "Not saved: fix the problems above.";
    const message = body.error?.message ?? body.error ?? `The server answered ${response.status}.`;
    // The server's message lists `line L, column C: …` per problem; the live check has them as data.
    await check();
    if ($("rules-diagnostics").hidden) showDiagnostics([{ line: 1, column: 1, message }]);
    return false;
  }

  // ── history ──

  async function loadHistory() {
    const list = $("history-list");
    try {
      versions = (await apiJSON(`/.console/rules/history?${scopeQuery()}`)).versions;
    } catch (error) {
      list.replaceChildren(Object.assign(document.createElement("li"), { className: "hint", textContent: `No history: ${error.message}` }));
      return;
    }
    if (versions.length === 0) {
      list.replaceChildren(Object.assign(document.createElement("li"), { className: "hint", textContent: "Nothing saved yet: these are the defaults." }));
      return;
    }
    list.replaceChildren(...versions.map((version, index) => {
      const item = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "history-item";
      button.dataset.version = version.version;
      button.setAttribute("aria-pressed", String(selected?.version === version.version));
      const when = version.time ? new Date(version.time).toLocaleString() : "before the history began";
      button.innerHTML = `<span class="when"></span><span class="hint"></span>`;
      button.firstChild.textContent = when;
      button.lastChild.textContent = index === 0 ? `v${version.version} · current` : `v${version.version} · ${version.source.split("\n").length} lines`;
      button.addEventListener("click", () => select(version));
      item.append(button);
      return item;
    }));
  }

  function select(version) {
    selected = version;
    for (const button of document.querySelectorAll(".history-item")) button.setAttribute("aria-pressed", String(Number(button.dataset.version) === version.version));
    showDiff();
  }

  /** The selected version against what the editor holds: what restoring it would change. */
  function showDiff() {
    const panel = $("history-diff");
    panel.hidden = false;
    const diff = lineDiff(editor.value, selected.source);
    const changed = diff.filter((line) => line.kind !== "same").length;
    $("history-diff-title").textContent = changed
      ? `Restoring v${selected.version} would change ${changed} line${changed > 1 ? "s" : ""} of the editor:`
      : `v${selected.version} is what the editor holds.`;
    const out = $("history-diff-lines");
    out.replaceChildren(...hunks(diff).map((line) => {
      const row = document.createElement("div");
      row.className = `diff-line ${line.kind}`;
      row.textContent = line.kind === "fold" ? `  ⋯ ${line.count} unchanged line${line.count > 1 ? "s" : ""}` : `${{ same: " ", add: "+", del: "−" }[line.kind]} ${line.text}`;
      return row;
    }));
    $("history-restore").disabled = changed === 0 && selected.source === saved;
  }

  async function restore() {
    if (!selected) return;
    const restored = await save(selected.source, `Restore v${selected.version} of the rules? It is saved as a new version and applies to the next request.`);
    if (restored) { selected = versions[0] ?? null; if (selected) select(selected); }
  }

  // ── simulator ──

  async function simulate(event) {
    event.preventDefault();
    const form = event.target;
    const verdict = $("sim-result");
    const explanation = $("sim-explanation");
    verdict.className = "verdict"; verdict.textContent = "";
    explanation.hidden = true;
    const operation = form.elements.operation.value;
    const scenario = { [operation]: form.elements.path.value || "/" };
    try {
      scenario.auth = form.elements.auth.value.trim() ? JSON.parse(form.elements.auth.value) : null;
    } catch { verdict.textContent = "Auth must be JSON."; return; }
    try {
      if (operation !== "read") scenario.value = form.elements.value.value.trim() ? parseTyped(form.elements.value.value) : null;
    } catch { verdict.textContent = "The value must be JSON."; return; }
    if (editor.value !== saved) toast("The simulator runs the saved rules, not the editor's changes.");
    try {
      const body = await apiJSON(`/.console/simulate?ns=${encodeURIComponent(state.namespace)}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(scenario) });
      verdict.className = `verdict ${body.allowed ? "allowed" : "denied"}`;
      verdict.textContent = body.allowed ? "Allowed" : "Denied";
      $("sim-summary").textContent = body.summary;
      const rows = body.steps.map((step) => {
        const row = document.createElement("tr");
        row.className = step.result ? "pass" : "fail";
        const line = document.createElement("td");
        if (step.line) {
          const jump = Object.assign(document.createElement("button"), { type: "button", className: "linkish", textContent: `line ${step.line}` });
          jump.addEventListener("click", () => reveal(step.line, step.column));
          line.append(jump);
        }
        const cells = [step.rule.replace(/^rules/, "") || "/", step.path, step.expression, step.result ? "true" : "false"].map((text, index) => {
          const cell = document.createElement("td");
          cell.textContent = text;
          if (index < 3) cell.className = "mono";
          return cell;
        });
        row.append(line, ...cells);
        return row;
      });
      $("sim-steps").replaceChildren(...rows);
      $("sim-steps-table").hidden = rows.length === 0;
      explanation.hidden = false;
    } catch (error) { verdict.textContent = error.message; }
  }

  // ── wiring ──

  editor.addEventListener("input", edited);
  editor.addEventListener("scroll", () => { gutter.scrollTop = editor.scrollTop; });
  editor.addEventListener("keydown", (event) => {
    // Tab indents (two spaces) instead of leaving the editor; Escape then Tab still moves focus on.
    if (event.key === "Tab" && !event.shiftKey && !editor.dataset.escaped) {
      event.preventDefault();
      editor.setRangeText("  ", editor.selectionStart, editor.selectionEnd, "end");
      edited();
    } else if ((event.ctrlKey || event.metaKey) && event.key === "s") {
      event.preventDefault();
      save();
    }
    editor.dataset.escaped = event.key === "Escape" ? "1" : "";
  });
  for (const button of document.querySelectorAll("[data-rules]")) button.addEventListener("click", () => { state.rulesKind = button.dataset.rules; load(); });
  $("rules-save").addEventListener("click", () => save());
  $("history-restore").addEventListener("click", restore);
  $("history-close").addEventListener("click", () => {
    selected = null;
    $("history-diff").hidden = true;
    for (const button of document.querySelectorAll(".history-item")) button.setAttribute("aria-pressed", "false");
  });
  $("simulator").addEventListener("submit", simulate);

  return { load };
}
