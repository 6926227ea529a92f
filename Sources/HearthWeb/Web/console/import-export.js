// The console's import and export of a location as JSON, with progress. Plain ES module.
//
// Export streams `GET /<path>.json?format=export` (priorities included) and counts the bytes as
// they arrive, then saves them as a file. Import reads a JSON file and either
//   - replaces the location with it: one PUT, so it is atomic (all or nothing), or
//   - merges it in: its top-level children are written with PATCH requests of about CHUNK bytes
//     each. Each request is atomic; the whole merge is not (a failure stops it part way, and says
//     how far it got). Like update(), each top-level child given replaces that child.
/** Bytes per PATCH request of a merge (about; one child larger than this goes alone). */
export const CHUNK = 1 << 20;

const encodePath = (path) => path.map(encodeURIComponent).join("/");

/** A human size: 512 B, 3.4 KiB, 12.0 MiB. */
export function size(bytes) {
  return bytes < 1024 ? `${bytes} B` : bytes < 1048576 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1048576).toFixed(1)} MiB`;
}

/**
 * The PATCH bodies of a merge of `value`: its top-level members split into groups of about `chunk`
 * bytes of JSON, as strings (so their sizes are known and each is encoded once).
 *
 * ```js
 * mergeChunks({ a: 1, b: 2 }, 8)  // ['{"a":1}', '{"b":2}']
 * ```
 */
export function mergeChunks(value, chunk = CHUNK) {
  const bodies = [];
  let parts = [];
  let bytes = 2;
  for (const [key, child] of Object.entries(value)) {
    const part = `${JSON.stringify(key)}:${JSON.stringify(child)}`;
    if (parts.length && bytes + part.length + 1 > chunk) { bodies.push(`{${parts.join(",")}}`); parts = []; bytes = 2; }
    parts.push(part);
    bytes += part.length + 1;
  }
  if (parts.length) bodies.push(`{${parts.join(",")}}`);
  return bodies;
}

/**
 * Wires the Data view's Export button and Import dialog. `context` gives
 * `{ path(), namespace(), token(), toast(text), imported() }` (imported() refreshes the tree).
 */
export function setUpTransfer(context) {
  const $ = (id) => document.getElementById(id);
  const bar = $("transfer-progress");
  const label = $("transfer-state");
  const progress = (fraction, text) => {
    bar.hidden = fraction === null;
    bar.firstElementChild.style.width = `${Math.round(100 * (fraction ?? 0))}%`;
    bar.setAttribute("aria-valuenow", String(Math.round(100 * (fraction ?? 0))));
    label.textContent = text;
  };
  const url = (path, extra = "") => `/${encodePath(path)}.json?ns=${encodeURIComponent(context.namespace())}${extra}`;

  $("export").addEventListener("click", async () => {
    const path = context.path();
    const where = "/" + path.join("/");
    const button = $("export");
    button.disabled = true;
    try {
      const response = await fetch(url(path, "&format=export"), { headers: { Authorization: `Bearer ${context.token()}` } });
      if (!response.ok) throw new Error((await response.json().catch(() => ({}))).error ?? `HTTP ${response.status}`);
      const total = Number(response.headers.get("Content-Length")) || 0;
      const reader = response.body.getReader();
      const parts = [];
      let received = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        parts.push(value);
        received += value.length;
        progress(total ? received / total : 0.5, `Exporting ${where}: ${size(received)}${total ? ` of ${size(total)}` : ""}`);
      }
      const link = document.createElement("a");
      link.href = URL.createObjectURL(new Blob(parts, { type: "application/json" }));
      link.download = `${context.namespace()}${path.length ? "-" + path.join("-") : ""}.json`;
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
      progress(null, `Exported ${where} (${size(received)}) as ${link.download}.`);
    } catch (error) {
      progress(null, `Export failed: ${error.message}`);
    } finally { button.disabled = false; }
  });

  $("import").addEventListener("click", () => {
    const form = $("import-form");
    form.reset();
    form.elements.path.value = "/" + context.path().join("/");
    $("import-error").textContent = "";
    $("import-dialog").showModal();
  });

  $("import-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = event.target;
    const file = form.elements.file.files[0];
    const mode = form.elements.mode.value;
    const path = form.elements.path.value.split("/").filter(Boolean);
    const where = "/" + path.join("/");
    const fail = (text) => { $("import-error").textContent = text; };
    if (!file) return fail("Choose a JSON file.");
    let value;
    try { value = JSON.parse(await file.text()); } catch { return fail(`${file.name} is not valid JSON.`); }
    if (mode === "replace" && !confirm(`Replace everything at ${where} with ${file.name}?`)) return;
    $("import-dialog").close();
    try {
      if (mode === "merge" && value !== null && typeof value === "object" && !Array.isArray(value)) {
        const bodies = mergeChunks(value).map((text) => new Blob([text], { type: "application/json" }));
        const total = bodies.reduce((sum, body) => sum + body.size, 0);
        let sent = 0;
        for (const [index, body] of bodies.entries()) {
          progress(sent / total, `Merging ${file.name} into ${where}: request ${index + 1} of ${bodies.length}, ${size(sent)} of ${size(total)}`);
          await send("PATCH", url(path), body, (loaded) => progress((sent + loaded) / total, `Merging ${file.name} into ${where}: request ${index + 1} of ${bodies.length}, ${size(sent + loaded)} of ${size(total)}`))
            .catch((error) => { throw new Error(`${error.message} after ${index} of ${bodies.length} requests (those are saved)`); });
          sent += body.size;
        }
        progress(null, `Merged ${file.name} into ${where}: ${Object.keys(value).length.toLocaleString()} children in ${bodies.length} ${bodies.length === 1 ? "request" : "requests"}.`);
      } else {
        const body = new Blob([JSON.stringify(value)], { type: "application/json" });
        await send("PUT", url(path), body, (loaded) => progress(loaded / body.size, `Replacing ${where} with ${file.name}: ${size(loaded)} of ${size(body.size)}`));
        progress(null, `Replaced ${where} with ${file.name} (${size(body.size)}, in one atomic write).`);
      }
      context.toast("Import done.");
    } catch (error) {
      progress(null, `Import failed: ${error.message}`);
    }
    context.imported();
  });

  /** One request (a Blob body) with upload progress (fetch has none): resolves on 2xx, else rejects with the server's message. */
  function send(method, target, body, onProgress) {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open(method, target);
      xhr.setRequestHeader("Authorization", `Bearer ${context.token()}`);
      xhr.setRequestHeader("Content-Type", "application/json");
      xhr.upload.onprogress = (event) => onProgress(event.loaded);
      xhr.onload = () => {
        if (xhr.status >= 200 && xhr.status < 300) { onProgress(body.size); resolve(); return; }
        let message = `HTTP ${xhr.status}`;
        try { message = JSON.parse(xhr.responseText).error ?? message; } catch { /* not JSON */ }
        reject(new Error(message));
      };
      xhr.onerror = () => reject(new Error("the connection failed"));
      xhr.send(body);
    });
  }
}
