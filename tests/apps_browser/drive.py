#!/usr/bin/env python3
"""MCP Apps in a real browser, black box: a clawmcp server's app page
rendered by a real host (ext-apps' AppBridge on the TypeScript v2 client,
host.html + build/host-bundle.js) in headless chromium, driven by selenium.

    python3 drive.py --reference target/debug/examples/reference [--apps target/debug/examples/apps]

It starts the reference example over HTTP on a free loopback port, serves
the host page on another, opens host.html?server=http://127.0.0.1:PORT/mcp
(twice: the revision the client negotiates, a 2025-11-25 session, and
pinned to the stateless 2026-07-28) and checks that:
  - the server declares the io.modelcontextprotocol/ui extension, its echo
    tool links a ui:// page whose listing and contents are served as
    text/html;profile=mcp-app, an HTML5 document;
  - the page initializes with the host, shows the input and the result the
    host hands it after the model's call, and a message typed into it comes
    back from the running server through the host (tools/call echo, seen
    on the wire both ways);
  - what the server wrote and what the page sent validate against ext-apps'
    own schema.json: the tool's _meta.ui (McpUiToolMeta), the page's
    _meta.ui (McpUiResourceMeta) where present, the server's tools/call
    result as a ui/notifications/tool-result, and every ui/* message
    between page and host (ui/initialize as McpUiInitializeRequest, ...).
With --apps it does the same for the apps example's poll: create_poll's
page shows the poll the model created, a click votes through the
app-only vote tool, and the page draws the tallies.

Prints one `ok: ...` line per check, then `N passed, M failed`; exits 1
when anything failed (nothing is skipped). Every wait is bounded; the
servers and the browser are stopped in all cases. Only 127.0.0.1 is used.
Needs: chromium and chromium-driver (Debian), selenium and jsonschema
(pip), and the npm packages and bundle run.sh prepares.
"""

import argparse
import contextlib
import functools
import http.server
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

import jsonschema
from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

HERE = Path(__file__).resolve().parent
MIME = "text/html;profile=mcp-app"
EXTENSION = "io.modelcontextprotocol/ui"
HOST_NAME = "clawmcp-apps-browser-host"
CHROMIUM = "/usr/lib/chromium/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# The iframe's sandbox: scripts only (an opaque origin), the least a host
# grants; every page must work in it.
APP_SANDBOX = "allow-scripts"


class Failed(Exception):
    """A check that failed (`counted` when already printed and counted);
    the flow it belongs to cannot go on."""

    def __init__(self, what, counted=False):
        super().__init__(what)
        self.counted = counted


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def ok(self, what):
        self.passed += 1
        print(f"ok: {what}", flush=True)

    def fail(self, what, why):
        self.failed += 1
        print(f"FAIL: {what}: {why}", flush=True)

    def that(self, condition, what, why=""):
        """Counts one check; raises Failed when it does not hold."""
        if condition:
            self.ok(what)
        else:
            self.fail(what, why or "no")
            raise Failed(what, counted=True)

    def soft(self, condition, what, why=""):
        """Counts one check; the flow goes on either way."""
        try:
            self.that(condition, what, why)
        except Failed:
            pass


class Schema:
    """ext-apps' schema.json: one definition at a time, draft 2020-12."""

    def __init__(self, path):
        self.doc = json.loads(Path(path).read_text())
        self.path = path
        # The message definitions by their method (`properties.method.const`).
        self.by_method = {
            d["properties"]["method"]["const"]: name
            for name, d in self.doc["$defs"].items()
            if "const" in (d.get("properties") or {}).get("method", {})
        }

    def errors(self, definition, instance):
        if definition not in self.doc["$defs"]:
            return [f"schema.json has no definition {definition}"]
        schema = {
            "$schema": self.doc.get("$schema", "https://json-schema.org/draft/2020-12/schema"),
            "$defs": self.doc["$defs"],
            "$ref": f"#/$defs/{definition}",
        }
        validator = jsonschema.Draft202012Validator(schema)
        return [
            f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
            for e in validator.iter_errors(instance)
        ]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, process, seconds=15):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode} before listening")
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {seconds} s")


@contextlib.contextmanager
def mcp_server(binary, log_path):
    """The example `binary` serving HTTP on a free loopback port: its /mcp URL."""
    port = free_port()
    env = dict(os.environ, RUST_LOG="debug")
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [binary, "--http", f"127.0.0.1:{port}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=env,
        )
    try:
        wait_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


class HostFiles(http.server.SimpleHTTPRequestHandler):
    """Serves host.html and the bundle, nothing else."""

    SERVED = {"/host.html", "/build/host-bundle.js"}

    def do_GET(self):
        if self.path.split("?", 1)[0] not in self.SERVED:
            self.send_error(404)
            return
        super().do_GET()

    def do_HEAD(self):
        self.do_GET()

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def host_server(directory):
    handler = functools.partial(HostFiles, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@contextlib.contextmanager
def browser(timeout):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in [
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1024,768",
    ]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.set_page_load_timeout(timeout)
        driver.set_script_timeout(timeout)
        yield driver
    finally:
        driver.quit()


class Session:
    """One host page in the browser, showing one tool's app."""

    def __init__(self, driver, checks, schema, timeout, protocol=None):
        self.protocol = protocol  # a revision the host's client pins, else negotiated
        self.d = driver
        self.checks = checks
        self.schema = schema
        self.timeout = timeout

    def host(self):
        self.d.switch_to.default_content()
        return json.loads(self.d.execute_script("return JSON.stringify(window.__host || null)"))

    def wait(self, condition, what):
        """Waits (bounded) until condition(driver) is truthy; its value."""
        try:
            # The page redraws: an element found may be gone when read.
            ignored = (NoSuchElementException, StaleElementReferenceException)
            return WebDriverWait(self.d, self.timeout, poll_frequency=0.05, ignored_exceptions=ignored).until(condition)
        except TimeoutException:
            raise Failed(f"{what}: not within {self.timeout} s") from None

    def open(self, base, server, tool, args, sandbox=APP_SANDBOX):
        query = {"server": server, "tool": tool, "args": json.dumps(args), "sandbox": sandbox}
        if self.protocol:
            query["protocol"] = self.protocol
        query = urlencode(query)
        self.d.get(f"{base}/host.html?{query}")

        def settled(d):
            state = d.execute_script("return window.__host && window.__host.state")
            return state if state in ("ready", "error") else None

        try:
            state = self.wait(settled, f"the host showing {tool}'s app")
        except Failed as e:
            host = self.host() or {}
            self.checks.that(False, f"the host shows {tool}'s app", f"{e} (state {host.get('state')})")
        host = self.host()
        self.checks.that(
            state == "ready",
            f"the host connected, read {tool}'s page and the page initialized ({host.get('protocolVersion')})",
            host.get("error") or state,
        )
        if self.protocol:
            self.checks.soft(
                host.get("protocolVersion") == self.protocol,
                f"the host's client and the server speak {self.protocol}",
                repr(host.get("protocolVersion")),
            )
        return host

    def validate(self, definition, instance, what):
        errors = self.schema.errors(definition, instance)
        self.checks.soft(not errors, f"{what} validates against schema.json {definition}", "; ".join(errors))

    def server_side(self, host, tool):
        """The server's half: capability, tool linkage, the page as listed and read."""
        c = self.checks
        caps = host.get("serverCapabilities") or {}
        ext = (caps.get("extensions") or {}).get(EXTENSION)
        c.soft(isinstance(ext, dict), f"the server declares the {EXTENSION} extension", json.dumps(caps))

        entry = host["tool"]
        meta = entry.get("_meta") or {}
        ui = meta.get("ui")
        c.that(isinstance(ui, dict), f"{tool}'s tools/list entry has _meta.ui", json.dumps(meta))
        self.validate("McpUiToolMeta", ui, f"{tool}'s _meta.ui")
        uri = ui.get("resourceUri", "")
        c.soft(
            isinstance(uri, str) and uri.startswith("ui://") and len(uri) > len("ui://"),
            f"{tool}'s _meta.ui.resourceUri is a ui:// URI ({uri})",
            repr(uri),
        )
        c.soft(
            meta.get("ui/resourceUri") == uri,
            f"{tool}'s legacy flat _meta['ui/resourceUri'] names the same page",
            repr(meta.get("ui/resourceUri")),
        )

        listing = host.get("listing")
        c.soft(listing is not None, f"resources/list lists {uri}", "not listed")
        if listing is not None:
            c.soft(listing.get("mimeType") == MIME, f"resources/list gives {uri} the type {MIME}", repr(listing.get("mimeType")))
            if "_meta" in listing and "ui" in (listing["_meta"] or {}):
                self.validate("McpUiResourceMeta", listing["_meta"]["ui"], "the page's listing _meta.ui")

        contents = host.get("contents") or []
        c.soft(len(contents) == 1, f"resources/read {uri} returns one content", f"{len(contents)} contents")
        page = next((p for p in contents if p.get("uri") == uri), None)
        c.that(page is not None, f"resources/read returns the content at {uri}", json.dumps([p.get("uri") for p in contents]))
        c.soft(page.get("mimeType") == MIME, f"resources/read serves the page as {MIME}", repr(page.get("mimeType")))
        text = page.get("text")
        c.soft(
            isinstance(text, str) and text.lstrip().lower().startswith("<!doctype html>"),
            "the page is an HTML5 document (text, <!DOCTYPE html>)",
            repr((text or "")[:40]),
        )
        if "_meta" in page and "ui" in (page["_meta"] or {}):
            self.validate("McpUiResourceMeta", page["_meta"]["ui"], "the page's read contents _meta.ui")
            if listing is not None and "ui" in (listing.get("_meta") or {}):
                c.soft(
                    listing["_meta"]["ui"] == page["_meta"]["ui"],
                    "the page's _meta.ui is the same listed and read",
                    json.dumps([listing["_meta"]["ui"], page["_meta"]["ui"]]),
                )

    def handshake(self, host, tool):
        """The page's half of the handshake, and what the host handed it."""
        c = self.checks

        def strip(message):
            return {k: v for k, v in message.items() if k not in ("jsonrpc", "id")}

        sent = host.get("pageToHost") or []
        init = next((m for m in sent if m.get("method") == "ui/initialize"), None)
        c.that(init is not None, "the page sent ui/initialize", json.dumps(sent)[:300])
        done = next((m for m in sent if m.get("method") == "ui/notifications/initialized"), None)
        c.soft(done is not None, "the page sent ui/notifications/initialized", json.dumps(sent)[:300])
        c.soft(
            done is not None and sent.index(done) > sent.index(init),
            "the page said initialized after initialize",
        )
        model = host.get("modelCall") or {}
        result = model.get("result") or {}
        texts = [b for b in result.get("content") or [] if b.get("type") == "text" and b.get("text")]
        c.soft(
            texts and not result.get("isError"),
            f"{tool} called as the model would returns a text fallback in content",
            json.dumps(result)[:300],
        )
        # The server's own reply to the model's call, as it came over HTTP,
        # is what a host hands on as ui/notifications/tool-result.
        _, _, reply = self.app_call(host, tool, lambda a: a == model.get("arguments"), calls=False)
        raw = (reply or {}).get("result")
        c.soft(raw is not None, f"the server's reply to the model's tools/call {tool} was seen on the wire", json.dumps(reply)[:300])
        if raw is not None:
            self.validate(
                "McpUiToolResultNotification",
                {"method": "ui/notifications/tool-result", "params": raw},
                f"the server's {tool} result (as the host hands it on)",
            )
        given = host.get("hostToPage") or []
        for method in ("ui/notifications/tool-input", "ui/notifications/tool-result"):
            c.soft(any(m.get("method") == method for m in given), f"the host handed the page {method}", "not sent")
        # Every ui/* message either way, against the definition whose
        # method it is: what the page wrote, and what the host handed on
        # of the server's (the tool's input and result).
        for who, messages in (("the page's", sent), ("the host's", given)):
            seen = {}
            for message in messages:
                definition = self.schema.by_method.get(message.get("method"))
                if definition:
                    seen.setdefault((message["method"], definition), []).append(strip(message))
            for (method, definition), instances in seen.items():
                errors = [e for instance in instances for e in self.schema.errors(definition, instance)]
                c.soft(
                    not errors,
                    f"{who} {method} ({len(instances)}) validates against schema.json {definition}",
                    "; ".join(errors),
                )

    def frame(self):
        self.d.switch_to.default_content()
        self.d.switch_to.frame(self.d.find_element(By.ID, "app"))
        self.wait(
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true",
            "the page's body[data-ready]",
        )

    def text_is(self, selector, expected, what):
        """Waits until the element's text is `expected`; a check either way."""
        try:
            self.wait(lambda d: d.find_element(By.CSS_SELECTOR, selector).text == expected, what)
            self.checks.ok(f"{what}: {expected!r}")
        except Failed:
            try:
                seen = repr(self.d.find_element(By.CSS_SELECTOR, selector).text)
            except (NoSuchElementException, StaleElementReferenceException) as e:
                seen = f"no {selector} ({type(e).__name__})"
            self.checks.that(False, what, f"expected {expected!r}, the page shows {seen}")

    def app_call(self, host, tool, check, calls=True):
        """The page's tools/call of `tool` the host forwarded (if `calls`),
        the request the host's client sent the server, and the server's
        reply, the first whose arguments pass `check`."""
        calls = [a for a in host.get("appCalls") or [] if a["params"].get("name") == tool] if calls else []
        forwarded = [m for m in host.get("toServer") or [] if m.get("method") == "tools/call" and m["params"].get("name") == tool]
        call = next((a for a in calls if check(a["params"].get("arguments") or {})), None)
        request = next((m for m in forwarded if check(m["params"].get("arguments") or {})), None)
        reply = None
        if request is not None:
            reply = next((m for m in host.get("fromServer") or [] if m.get("id") == request.get("id") and "method" not in m), None)
        return call, request, reply


def echo_flow(session, base, server, log_path):
    c = session.checks
    model_message = f"hello from the model {secrets.token_hex(4)}"
    user_message = f"hello from chromium {secrets.token_hex(4)}"
    host = session.open(base, server, "echo", {"message": model_message}, sandbox=APP_SANDBOX)
    session.server_side(host, "echo")
    session.handshake(host, "echo")

    session.frame()
    session.wait(
        lambda d: d.find_element(By.ID, "message").get_attribute("value") == model_message,
        "the model's input in #message",
    )
    c.ok("the page shows the model's input (ui/notifications/tool-input) in #message")
    session.text_is("#answer", model_message, "the page shows the model's result (ui/notifications/tool-result)")

    box = session.d.find_element(By.ID, "message")
    box.clear()
    box.send_keys(user_message)
    session.d.find_element(By.ID, "send").click()
    session.text_is("#answer", user_message, "the page's own tools/call echo came back through the host")

    host = session.host()
    call, request, reply = session.app_call(host, "echo", lambda a: a.get("message") == user_message)
    c.that(call is not None and call["refused"] is None, "the host forwarded the page's tools/call echo", json.dumps(host.get("appCalls")))
    c.that(request is not None, "the host's client sent tools/call echo with the typed message to the server")
    structured = ((reply or {}).get("result") or {}).get("structuredContent") or {}
    c.that(
        structured.get("message") == user_message,
        "the running server answered that tools/call with the typed message",
        json.dumps(reply)[:300],
    )
    if session.protocol is None:  # a session: it began with initialize
        log = Path(log_path).read_text(errors="replace")
        c.soft(f"client={HOST_NAME}" in log, "the server's log shows the browser host's initialize", log[-500:])


def poll_flow(session, base, server):
    c = session.checks
    question = f"Lunch {secrets.token_hex(3)}?"
    options = ["pizza", "soup", "salad"]
    host = session.open(base, server, "create_poll", {"question": question, "options": options})
    session.server_side(host, "create_poll")
    session.handshake(host, "create_poll")
    fallback = " ".join(b.get("text", "") for b in host["modelCall"]["result"].get("content") or [])
    c.soft(
        "shown to the user as an app" in fallback and all(o in fallback for o in options),
        "create_poll's text fallback names the options and knows this client renders apps",
        repr(fallback),
    )
    tools = {t["name"]: t for t in host["tools"]}
    vote = tools.get("vote") or {}
    vote_ui = (vote.get("_meta") or {}).get("ui") or {}
    c.soft(vote_ui.get("visibility") == ["app"], "vote is an app-only tool (visibility [\"app\"])", json.dumps(vote_ui))
    session.validate("McpUiToolMeta", vote_ui, "vote's _meta.ui")

    session.frame()
    session.text_is("#question", question, "the poll page shows the model's question")
    buttons = session.d.find_elements(By.CSS_SELECTOR, "#options button")
    c.that([b.text for b in buttons] == options, "the poll page renders one button per option", json.dumps([b.text for b in buttons]))
    buttons[1].click()
    session.text_is("#chart [data-option='soup'] .count", "1", "a click votes through the host and the chart redraws")
    bars = session.d.find_elements(By.CSS_SELECTOR, "#chart svg rect.bar")
    c.soft(len(bars) == len(options), "the chart is an SVG bar per option", f"{len(bars)} bars")

    host = session.host()
    call, request, reply = session.app_call(host, "vote", lambda a: a.get("option") == "soup")
    c.that(call is not None and call["refused"] is None, "the host forwarded the page's app-only tools/call vote", json.dumps(host.get("appCalls")))
    c.that(request is not None, "the host's client sent tools/call vote to the server")
    tallies = (((reply or {}).get("result") or {}).get("structuredContent") or {}).get("tallies")
    c.soft(
        isinstance(tallies, list) and [t.get("votes") for t in tallies] == [0, 1, 0],
        "the running server counted the vote",
        json.dumps(reply)[:300],
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", required=True, help="the reference example's binary")
    parser.add_argument("--apps", help="the apps example's binary (the poll app), also checked when given")
    parser.add_argument("--host-dir", default=str(HERE), help="where host.html and build/host-bundle.js are")
    parser.add_argument(
        "--schema",
        default=str(HERE / "node_modules/@modelcontextprotocol/ext-apps/dist/src/generated/schema.json"),
        help="ext-apps' schema.json",
    )
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds each wait may take")
    args = parser.parse_args()

    checks = Checks()
    started = time.monotonic()
    bundle = Path(args.host_dir) / "build/host-bundle.js"
    if not bundle.is_file():
        print(f"FAIL: no host bundle at {bundle} (run.sh builds it)", flush=True)
        print("0 passed, 1 failed")
        return 1
    schema = Schema(args.schema)
    # The validation can fail: a linked tool's _meta.ui with a csp (which
    # belongs to the page) and a non-string URI is refused.
    refused = schema.errors("McpUiToolMeta", {"resourceUri": 1, "csp": {}})
    checks.soft(len(refused) == 2, "schema.json refuses a bad _meta.ui (the validation is live)", repr(refused))
    checks.soft(
        {"ui/initialize", "ui/notifications/tool-result"} <= set(schema.by_method),
        f"schema.json defines the messages by method ({len(schema.by_method)} of them)",
        repr(schema.by_method),
    )
    logs = tempfile.mkdtemp(prefix="clawmcp-apps-browser-")
    flows = [("reference", args.reference, echo_flow)]
    if args.apps:
        flows.append(("apps", args.apps, lambda s, b, u, _log: poll_flow(s, b, u)))
    # Each flow twice: as the client negotiates (a session, 2025-11-25 for
    # this client), and pinned to the stateless 2026-07-28 revision, where
    # the client's capabilities come with every request.
    revisions = [None, "2026-07-28"]
    try:
        with host_server(args.host_dir) as base, browser(args.timeout) as driver:
            for (name, binary, flow), protocol in [(f, r) for f in flows for r in revisions]:
                log_path = os.path.join(logs, f"{name}-{protocol or 'negotiated'}.log")
                session = Session(driver, checks, schema, args.timeout, protocol)
                try:
                    with mcp_server(binary, log_path) as server:
                        revision = protocol or "the revision the client negotiates"
                        print(f"-- {name} example at {server}, {revision}; host at {base}", flush=True)
                        flow(session, base, server, log_path)
                except Exception as e:  # noqa: BLE001 - any surprise is a failure, never a skip
                    if not (isinstance(e, Failed) and e.counted):
                        checks.fail(f"the {name} flow", str(e) if isinstance(e, Failed) else repr(e))
                    dump(driver, session, log_path)
    except Exception as e:  # noqa: BLE001
        checks.fail("the browser and the servers", repr(e))
    if checks.failed:
        print(f"the servers' logs are in {logs}", file=sys.stderr)
    else:
        shutil.rmtree(logs, ignore_errors=True)
    print(f"({time.monotonic() - started:.1f} s)")
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


def dump(driver, session, log_path):
    """What helps to see why: the host's state, the browser's console, the server's log."""
    with contextlib.suppress(Exception):
        host = session.host() or {}
        print("host state:", host.get("state"), host.get("error") or "", file=sys.stderr)
        print("page -> host:", json.dumps(host.get("pageToHost"))[:2000], file=sys.stderr)
        print("host -> page:", json.dumps(host.get("hostToPage"))[:2000], file=sys.stderr)
    with contextlib.suppress(Exception):
        for entry in driver.get_log("browser"):
            print("console:", entry.get("level"), entry.get("message"), file=sys.stderr)
    with contextlib.suppress(Exception):
        print("server log (tail):", Path(log_path).read_text(errors="replace")[-2000:], file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
