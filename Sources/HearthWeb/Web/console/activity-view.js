// The console's Activity view: live counters (connections, listens, reads, writes and rule denials per
// second, size on disk) per database, a chart of the last minute, and the live log of recent requests
// on every transport with a filter. It polls GET /.console/activity once a second while it is shown.

const HISTORY = 60;          // seconds of rates kept for the chart
const LOG_ROWS = 500;        // rows kept in the log table

/**
 * Wires the view to the page; `show()` starts polling and `hide()` stops it.
 * @example const activity = mountActivity({ $, apiJSON }); activity.show();
 */
export function mountActivity({ $, apiJSON }) {
  let timer = null;
  let last = null;           // the previous poll: { time, totals by namespace }
  let after = 0;             // the newest request sequence seen
  let paused = false;
  const series = [];         // [{ reads, writes, denied }] per second, newest last
  const log = [];            // newest first

  function rate(now, previous, field, seconds) {
    return previous ? Math.max(0, (now[field] - previous[field]) / seconds) : 0;
  }

  const format = (value) => value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(value ? 2 : 0);

  function bytes(count) {
    if (count === null || count === undefined) return "in memory";
    const units = ["B", "KB", "MB", "GB", "TB"];
    let value = count, unit = 0;
    while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit++; }
    return `${value.toFixed(unit ? 1 : 0)} ${units[unit]}`;
  }

  async function poll() {
    let report;
    try {
      report = await apiJSON(`/.console/activity?after=${after}`);
      $("activity-error").hidden = true;
    } catch (error) {
      if (error.message === "signed out") return hide();
      $("activity-error").hidden = false;
      $("activity-error").textContent = `The activity cannot be read: ${error.message}. Retrying…`;
      return;
    }
    const seconds = last ? Math.max(0.001, (report.time - last.time) / 1000) : 1;
    const totals = { reads: 0, writes: 0, denied: 0 };
    const rows = report.databases.map((database) => {
      const previous = last?.databases.get(database.namespace);
      const rates = {
        reads: rate(database, previous, "reads", seconds),
        writes: rate(database, previous, "writes", seconds),
        denied: rate(database, previous, "denied", seconds),
      };
      for (const key in totals) totals[key] += rates[key];
      return { ...database, rates };
    });
    last = { time: report.time, databases: new Map(report.databases.map((database) => [database.namespace, database])) };
    series.push(totals);
    if (series.length > HISTORY) series.shift();

    $("stat-connections").textContent = report.websocketConnections;
    $("stat-streams").textContent = report.eventStreams;
    $("stat-listens").textContent = report.databases.reduce((sum, database) => sum + database.listens, 0);
    $("stat-reads").textContent = format(totals.reads);
    $("stat-writes").textContent = format(totals.writes);
    $("stat-denied").textContent = format(totals.denied);
    renderDatabases(rows);
    renderChart();
    for (const request of report.requests) {
      after = Math.max(after, request.sequence);
      log.unshift(request);
    }
    if (log.length > LOG_ROWS) log.length = LOG_ROWS;
    if (!paused && report.requests.length) renderLog(report.requests.length);
  }

  function renderDatabases(rows) {
    $("activity-databases").replaceChildren(...rows.map((database) => {
      const row = document.createElement("tr");
      const cells = [database.namespace, database.listens, format(database.rates.reads), format(database.rates.writes), format(database.rates.denied), bytes(database.storedBytes)];
      row.append(...cells.map((text, index) => {
        const cell = document.createElement("td");
        cell.textContent = text;
        if (index > 0) cell.className = "number";
        if (index === 4 && database.rates.denied > 0) cell.classList.add("warn");
        return cell;
      }));
      row.dataset.namespace = database.namespace;
      return row;
    }));
  }

  /** Reads and writes per second over the last minute, as two lines in an SVG. */
  function renderChart() {
    const svg = $("activity-chart");
    const width = 600, height = 120, top = Math.max(1, ...series.map((point) => Math.max(point.reads, point.writes)));
    const line = (field) => series.map((point, index) => {
      const x = width - (series.length - 1 - index) * (width / (HISTORY - 1));
      const y = height - 4 - (point[field] / top) * (height - 12);
      return `${index ? "L" : "M"}${x.toFixed(1)},${y.toFixed(1)}`;
    }).join(" ");
    svg.querySelector(".reads").setAttribute("d", line("reads"));
    svg.querySelector(".writes").setAttribute("d", line("writes"));
    $("activity-chart-top").textContent = `${format(top)}/s`;
  }

  function matches(request, text, deniedOnly) {
    if (deniedOnly && !request.denied) return false;
    if (!text) return true;
    const haystack = `${request.transport} ${request.method} ${request.path} ${request.status} ${request.namespace ?? ""}`.toLowerCase();
    return text.split(/\s+/).every((word) => haystack.includes(word));
  }

  function renderLog(fresh = 0) {
    const text = $("activity-filter").value.trim().toLowerCase();
    const deniedOnly = $("activity-denied").checked;
    const shown = log.filter((request) => matches(request, text, deniedOnly));
    $("activity-log").replaceChildren(...shown.map((request, index) => {
      const row = document.createElement("tr");
      if (request.denied) row.classList.add("denied");
      else if (/^[45]/.test(request.status) || !/^(ok|[123]\d\d)$/.test(request.status)) row.classList.add("failed");
      if (index < fresh && matches(request, text, deniedOnly)) row.classList.add("changed");
      const time = new Date(request.time);
      const cells = [
        time.toLocaleTimeString([], { hour12: false }) + `.${String(time.getMilliseconds()).padStart(3, "0")}`,
        request.transport === "websocket" ? "WS" : "HTTP",
        request.method, request.path, request.namespace ?? "", request.denied ? `${request.status} · denied` : request.status,
        `${request.milliseconds.toFixed(request.milliseconds < 10 ? 2 : 0)} ms`,
      ];
      row.append(...cells.map((value, column) => {
        const cell = document.createElement("td");
        cell.textContent = value;
        if (column === 3) cell.className = "mono path";
        if (column === 6) cell.className = "number";
        return cell;
      }));
      return row;
    }));
    $("activity-count").textContent = shown.length === log.length ? `${log.length} requests` : `${shown.length} of ${log.length} requests`;
    $("activity-empty").hidden = shown.length > 0;
  }

  function show() {
    if (timer) return;
    poll();
    timer = setInterval(poll, 1000);
  }

  function hide() {
    clearInterval(timer);
    timer = null;
  }

  $("activity-filter").addEventListener("input", () => renderLog());
  $("activity-denied").addEventListener("change", () => renderLog());
  $("activity-pause").addEventListener("click", (event) => {
    paused = !paused;
    event.currentTarget.setAttribute("aria-pressed", String(paused));
    event.currentTarget.textContent = paused ? "Resume" : "Pause";
    if (!paused) renderLog();
  });
  $("activity-clear").addEventListener("click", () => { log.length = 0; renderLog(); });

  return { show, hide };
}
