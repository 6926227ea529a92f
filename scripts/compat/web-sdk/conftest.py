"""Selenium plumbing for the Firebase web SDK compatibility tests.

run.sh checks the SDK directory and exports:
  FIREBASE_BOWER_DIR  the directory holding firebase-app.js and firebase-database.js
  SDK_VERSION         the SDK version directory (from the gstatic URLs inside firebase-database.js)
  WEB_SDK_OUT         where hearth.log, per-test WebSocket transcripts and console logs go
The session starts Hearth on HEARTH_PORT (a copy of $HEARTH_BIN, see Tests/Support/Python/hearth_process.py)
and a static server on WEB_PORT serving page.html and the SDK under /firebasejs/<SDK_VERSION>/.
"""

import functools
import http.server
import base64
import json
import os
import pathlib
import re
import sys
import tempfile
import threading
import time
import urllib.parse

import pytest
import websocket  # comes with selenium
from selenium import webdriver

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "Tests" / "Support" / "Python"))
import hearth_process  # noqa: E402  (shared with Tests/Conformance and Tests/Browser)
from chromium import Chromium  # noqa: E402

# Chosen at import because test_web_sdk.py imports HEARTH_PORT; the servers start per session.
HEARTH_PORT = hearth_process.free_port()
WEB_PORT = hearth_process.free_port()
SDK_DIR = os.environ.get("FIREBASE_BOWER_DIR", "")
SDK_VERSION = os.environ.get("SDK_VERSION", "")
OUT_DIR = os.environ.get("WEB_SDK_OUT", "/tmp/hearth-web-sdk-out")
CHROMIUM = os.environ.get("CHROMIUM_BIN", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER_BIN", "/usr/bin/chromedriver")
# "websocket" (the default) or "longpoll": every page blocks WebSockets, so the SDK long-polls /.lp.
TRANSPORT = os.environ.get("WEB_SDK_TRANSPORT", "websocket")


def pytest_configure(config):
    if not (SDK_DIR and SDK_VERSION):
        raise pytest.UsageError("run these tests through run.sh (FIREBASE_BOWER_DIR, SDK_VERSION unset)")
    os.makedirs(OUT_DIR, exist_ok=True)


def _handshake_ready(base_url):
    """Ready when a v5 WebSocket gets the handshake frame."""
    try:
        ws = websocket.create_connection(
            base_url.replace("http://", "ws://", 1) + "/.ws?v=5&ns=demo-proj-default-rtdb", timeout=3)
        try:
            m = json.loads(ws.recv())
        finally:
            ws.close()
        return m["t"] == "c" and m["d"]["t"] == "h"
    except (OSError, websocket.WebSocketException, ValueError, KeyError, TypeError):
        return False


class _StaticHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # to http.log, not into the tests' captured stderr
        with open(os.path.join(OUT_DIR, "http.log"), "a") as f:
            f.write(f"{self.address_string()} - {format % args}\n")


@pytest.fixture(scope="session", autouse=True)
def servers():
    """Hearth (emulator mode, fresh data directory) and the static server for page.html and the SDK."""
    with hearth_process.running_server("hearth-web-sdk-", _handshake_ready, port=HEARTH_PORT, copy_binary=True,
                                       log_path=os.path.join(OUT_DIR, "hearth.log")) as hearth, \
            tempfile.TemporaryDirectory(prefix="hearth-web-sdk-www-") as www:
        # page.html's import map sends the gstatic URLs to /firebasejs/<version>/.
        os.makedirs(os.path.join(www, "firebasejs"))
        os.symlink(os.path.abspath(SDK_DIR), os.path.join(www, "firebasejs", SDK_VERSION))
        os.symlink(HERE / "page.html", os.path.join(www, "page.html"))
        web = http.server.ThreadingHTTPServer(("127.0.0.1", WEB_PORT),
                                              functools.partial(_StaticHandler, directory=www))
        threading.Thread(target=web.serve_forever, daemon=True).start()
        try:
            yield hearth
        finally:
            web.shutdown()
            web.server_close()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    del config
    hearth_process.report_summary(terminalreporter, exitstatus)


class OpError(AssertionError):
    pass


class LongPollSegments:
    """Puts the client's long-poll messages back together from the seg/ts/d parameters of its polls."""

    def __init__(self):
        self.pending = {}
        self.next = 0

    def add(self, url):
        query = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)
        i = 0
        while f"seg{i}" in query:
            self.pending[int(query[f"seg{i}"][0])] = (int(query[f"ts{i}"][0]), query[f"d{i}"][0])
            i += 1
        out = []
        while self.next in self.pending:
            total = self.pending[self.next][0]
            parts = [self.pending.get(n) for n in range(self.next, self.next + total)]
            if None in parts:
                break
            data = "".join(d for _, d in parts).replace("-", "+").replace("_", "/").replace(".", "=")
            out.append(base64.b64decode(data + "=" * (-len(data) % 4)).decode())
            for n in range(self.next, self.next + total):
                del self.pending[n]
            self.next += total
        return out


def long_poll_messages(script):
    """The messages of a long-poll answer: each pRTLPCB<cb>(n, [messages]) call's array, as JSON texts."""
    out = []
    for match in re.finditer(r"pRTLPCB\d+\((\d+),(\[.*?\])\);(?=parent\.|$)", script, re.S):
        out.extend(json.dumps(m, separators=(",", ":")) for m in json.loads(match.group(2)))
    return out


class Page:
    """One fresh headless Chromium (its own profile, so no long-polling memory) running page.html."""

    def __init__(self, name, test_name, dburl=None, log_sdk=True, mock_uid=None, auth=False):
        self.name = name
        self.test_name = test_name
        self.frames = []       # (ms, dir, payload) from the DevTools performance log
        self.ws_urls = []
        self.http_urls = []
        self.lp_requests = {}
        self.lp_segments = LongPollSegments()
        self.console = []
        self.closed = False
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                  "--no-first-run", "--disable-extensions", "--disable-background-networking"):
            opts.add_argument(a)
        opts.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
        self.driver = Chromium(CHROMEDRIVER, opts)
        self.driver.set_script_timeout(60)
        params = {"sdk": SDK_VERSION, "port": HEARTH_PORT, "host": "127.0.0.1"}
        if dburl:
            params["dburl"] = dburl
        if log_sdk:
            params["log"] = "1"
        if mock_uid:
            params["mock"] = mock_uid
        if auth:
            params["auth"] = "1"
        if TRANSPORT == "longpoll":
            params["lp"] = "block"
        self.driver.get(f"http://127.0.0.1:{WEB_PORT}/page.html?" + urllib.parse.urlencode(params))
        self.wait(lambda: self.js("return H.ready || H.loadError"), 20, "page load")
        err = self.js("return H.loadError")
        if err:
            raise AssertionError(f"[{name}] SDK failed to load: {err}")

    # --- plumbing ---------------------------------------------------------
    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def op(self, name, *args):
        res = self.driver.execute_async_script(
            "const cb = arguments[arguments.length - 1];"
            "H.run(arguments[0], arguments[1]).then(cb);", name, list(args))
        if not res["ok"]:
            raise OpError(f"[{self.name}] {name}{tuple(args)} failed: {res['error']}")
        return res["value"]

    def wait(self, pred, timeout=10, what="condition"):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            last = pred()
            if last:
                return last
            time.sleep(0.05)
        raise AssertionError(f"[{self.name}] timed out after {timeout}s waiting for {what}; last={last!r}")

    def wait_connected(self, timeout=15):
        try:
            self.wait(lambda: self.js("return H.connected === true"), timeout, ".info/connected == true")
        except AssertionError as e:
            self.drain_logs()
            lp = [u for u in self.http_urls if "/.lp" in u]
            raise AssertionError(f"{e}\n  websockets opened: {self.ws_urls}\n  long-poll requests: {lp[:3]}"
                                 f"\n  frames: {self.frames[:10]}\n  console: {self.console[-10:]}")

    def events(self, lid):
        return self.js("return H.ev[arguments[0]] || []", lid)

    def last_value(self, lid):
        evs = [e for e in self.events(lid) if e["type"] == "value"]
        return evs[-1] if evs else None

    def wait_value(self, lid, pred, timeout=10, what=None):
        try:
            return self.wait(lambda: (lambda v: v if v is not None and pred(v) else None)(self.last_value(lid)),
                             timeout, what or f"value event on {lid}")
        except AssertionError as e:
            raise AssertionError(f"{e}\n  events: {json.dumps(self.events(lid))[:3000]}")

    def wait_events(self, lid, pred, timeout=10, what=None):
        try:
            return self.wait(lambda: (lambda evs: evs if pred(evs) else None)(self.events(lid)),
                             timeout, what or f"events on {lid}")
        except AssertionError as e:
            raise AssertionError(f"{e}\n  events: {json.dumps(self.events(lid))[:3000]}")

    # --- DevTools logs ----------------------------------------------------
    def drain_logs(self):
        if self.closed:
            return
        try:
            for entry in self.driver.get_log("performance"):
                m = json.loads(entry["message"])["message"]
                meth, p = m.get("method"), m.get("params", {})
                if meth == "Network.webSocketCreated":
                    self.ws_urls.append(p.get("url"))
                elif meth == "Network.webSocketFrameSent":
                    self.frames.append((entry["timestamp"], "C->S", p["response"]["payloadData"]))
                elif meth == "Network.webSocketFrameReceived":
                    self.frames.append((entry["timestamp"], "S->C", p["response"]["payloadData"]))
                elif meth == "Network.webSocketClosed":
                    self.frames.append((entry["timestamp"], "---", "socket closed"))
                elif meth == "Network.webSocketFrameError":
                    self.frames.append((entry["timestamp"], "ERR", p.get("errorMessage")))
                elif meth == "Network.requestWillBeSent":
                    url = p.get("request", {}).get("url")
                    self.http_urls.append(url)
                    if url and "/.lp?" in url:
                        # Long polling: the client's messages travel in the URL; the replies in the script.
                        self.lp_requests[p["requestId"]] = url
                        for message in self.lp_segments.add(url):
                            self.frames.append((entry["timestamp"], "C->S", message))
                elif meth == "Network.loadingFinished" and p.get("requestId") in self.lp_requests:
                    url = self.lp_requests.pop(p["requestId"])
                    try:
                        body = self.driver.execute_cdp_cmd("Network.getResponseBody", {"requestId": p["requestId"]})["body"]
                    except Exception as e:  # noqa: BLE001  (an evicted body is reported, not hidden)
                        self.frames.append((entry["timestamp"], "ERR", f"no body for {url}: {e}"))
                        continue
                    for message in long_poll_messages(body):
                        self.frames.append((entry["timestamp"], "S->C", message))
            for entry in self.driver.get_log("browser"):
                self.console.append(f"{entry['level']}: {entry['message']}")
            try:
                logs = self.js("const l = H.logs.splice(0); const e = H.errors.splice(0);"
                               "return l.concat(e.map(x => 'PAGE ' + x));")
                self.console.extend("sdk: " + x for x in logs)
            except Exception:
                pass
        except Exception as e:  # the browser may already be gone
            self.console.append(f"(log drain failed: {e})")

    def write_transcript(self):
        base = os.path.join(OUT_DIR, f"{self.test_name}.{self.name}")
        with open(base + ".frames.txt", "w") as f:
            for u in self.ws_urls:
                f.write(f"# websocket {u}\n")
            t0 = self.frames[0][0] if self.frames else 0
            for ts, d, payload in self.frames:
                f.write(f"{ts - t0:7d}ms {d} {payload}\n")
        with open(base + ".console.txt", "w") as f:
            f.write("\n".join(self.console) + "\n")
        return base

    def close(self):
        if self.closed:
            return
        self.drain_logs()
        try:
            self.driver.quit()
        finally:
            self.closed = True

    def kill(self):
        """Close the page abruptly (as a user closing the tab): the socket drops without goOffline."""
        self.close()


@pytest.fixture
def open_page(request):
    pages = []
    test_name = re.sub(r"[^A-Za-z0-9_.-]", "_", request.node.name)

    def make(name="A", connect=True, **kw):
        p = Page(name, test_name, **kw)
        pages.append(p)
        if connect:
            p.wait_connected()
        return p

    yield make
    for p in pages:
        p.close()
        p.write_transcript()


@pytest.fixture
def base_path(request):
    """A unique root for each test, so tests never see each other's data."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", request.node.name)
    return f"compat/{name}-{int(time.time() * 1000) % 10_000_000}"
