#!/usr/bin/env python3
"""Hostile input, end to end: the hardening rules of issue 29 seen from an
attacker's side. The examples run as processes on loopback ports; the test
sends what a hostile client would and checks the answers.

  1. template variables hold what the docs promise: a value that decodes
     to a separator, a control character, `.` or `..` matches no template
     (conformance example, `test://template/{id}/data`);
  2. the reference file-writer is bounded: a path over 1024 bytes or 32
     components is refused before anything is created under the root;
  3. limits per principal: a peer holds at most its share of streams and
     sessions (429 with Retry-After past it), another peer is not affected;
  4. a session holds a bounded number of subscriptions, of bounded URIs;
  5. the HTTP status of a 2026-07-28 reply comes from its outcome, never
     from what a result's text holds;
  6. a body of many tiny chunks is read in linear time, without a panic.

Every process it starts is stopped (SIGTERM, then SIGKILL) on a failure
too. Traffic stays on loopback: 127.0.0.1, and 127.0.0.2 as a second peer.

    tests/hostile.py --reference target/debug/examples/reference \\
        --conformance target/debug/examples/conformance

Prints `ok: <rule>` per rule, then `PASS: hostile`; exits non-zero with
`FAIL: <rule>: ...` on the first rule that does not hold.
"""

import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

PATIENCE = 10.0  # a hang guard for each socket operation, not a performance bound
STOP_PATIENCE = 5.0  # how long a server gets to stop before SIGKILL
PEER_A, PEER_B = "127.0.0.1", "127.0.0.2"
SESSION = "2025-11-25"
STATELESS = "2026-07-28"
ACCEPT = "application/json, text/event-stream"
META = {"io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientCapabilities": {}}
V1_BASE = "mcp://clawmcp/examples"
# docs/model-context.md §7.6 (status_of in src/transport/http/revision_2026.rs):
# the HTTP status of a 2026-07-28 error by its code; a result and any other
# code get 200.
STATUS_BY_CODE = {-32601: 404, -32602: 400, -32020: 400, -32021: 400, -32022: 400}
SOCKETS = []  # raw connections (streams), closed at the end


def fail(what):
    raise SystemExit(f"FAIL: {what}")


def check(ok, what, detail=""):
    if not ok:
        fail(f"{what}: {detail}" if detail else what)
    print(f"ok: {what}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind((PEER_A, 0))
        return s.getsockname()[1]


class Servers:
    """The processes the test starts, each logging to a file in `work`."""

    def __init__(self, work):
        self.work = work
        self.procs = []  # (name, Popen, log file)

    def start(self, name, binary, *args):
        port = free_port()
        log = open(os.path.join(self.work, f"{name}.log"), "wb")
        proc = subprocess.Popen([binary, "--http", f"{PEER_A}:{port}", *args],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=log, env=dict(os.environ, RUST_LOG="warn"))
        self.procs.append((name, proc, log))
        deadline = time.time() + PATIENCE
        while time.time() < deadline:
            if proc.poll() is not None:
                fail(f"{name} exited with {proc.returncode} at start: {self.log_tail(name)}")
            try:
                socket.create_connection((PEER_A, port), 0.2).close()
                return port
            except OSError:
                time.sleep(0.05)
        fail(f"{name} did not listen on port {port} within {PATIENCE}s")

    def alive(self, name):
        return any(n == name and p.poll() is None for n, p, _ in self.procs)

    def log_tail(self, name):
        try:
            with open(os.path.join(self.work, f"{name}.log"), "rb") as f:
                return f.read()[-600:].decode(errors="replace").strip() or "(empty log)"
        except OSError:
            return "(no log)"

    def stop(self):
        """SIGTERM each one, wait, SIGKILL the slow; reap all."""
        for _, proc, _ in self.procs:
            if proc.poll() is None:
                proc.terminate()
        deadline = time.time() + STOP_PATIENCE
        for name, proc, log in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                print(f"note: {name} (pid {proc.pid}) did not stop on SIGTERM: killed")
                proc.kill()
                proc.wait(timeout=STOP_PATIENCE)
            log.close()


# ---- HTTP helpers ---------------------------------------------------------

def connect(port, source=PEER_A):
    return http.client.HTTPConnection(PEER_A, port, timeout=PATIENCE,
                                      source_address=(source, 0))


def sse_messages(text):
    """The JSON messages of an SSE body: each event's `data:` lines joined."""
    messages, data = [], []
    for line in text.replace("\r\n", "\n").split("\n") + [""]:
        if line == "":
            if data:
                try:
                    messages.append(json.loads("\n".join(data)))
                except ValueError:
                    pass
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
    return messages


def read_reply(resp):
    """The response's JSON-RPC reply: a JSON body, or the reply among an SSE
    stream's messages; the raw text when the body is not JSON."""
    text = resp.read().decode(errors="replace")
    if resp.getheader("Content-Type", "").startswith("text/event-stream"):
        replies = [m for m in sse_messages(text) if isinstance(m, dict)
                   and "method" not in m and ("result" in m or "error" in m)]
        return replies[-1] if replies else text
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def post(conn, body, headers=None, v1=False):
    """One POST /mcp on `conn`: (status, response headers, reply). An MCP
    v1.0 request sends no `Accept` (the Model Context Protocol's
    `text/event-stream` would name that dialect)."""
    h = {"Content-Type": "application/json"}
    if not v1:
        h["Accept"] = ACCEPT
    h.update(headers or {})
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn.request("POST", "/mcp", data, h)
    resp = conn.getresponse()
    reply = read_reply(resp)
    return resp.status, resp, reply


def error_of(reply):
    return reply.get("error") if isinstance(reply, dict) else None


def error_text(error):
    return json.dumps(error) if error else ""


def initialize(conn):
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": SESSION, "capabilities": {},
                       "clientInfo": {"name": "hostile", "version": "1"}}}
    return post(conn, body)


class Session:
    """A 2025-11-25 session over one keep-alive connection."""

    def __init__(self, port, source=PEER_A):
        self.conn = connect(port, source)
        status, resp, reply = initialize(self.conn)
        self.id = resp.getheader("Mcp-Session-Id")
        if status != 200 or not self.id or not isinstance(reply, dict) or "result" not in reply:
            fail(f"a {SESSION} initialize from {source} got {status}: {reply!r:.300}")
        self.headers = {"Mcp-Session-Id": self.id, "MCP-Protocol-Version": SESSION}
        status, _, _ = post(self.conn, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                            self.headers)
        if status != 202:
            fail(f"notifications/initialized got {status}, not 202")
        self.next_id = 10

    def request(self, method, params):
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        status, _, reply = post(self.conn, body, self.headers)
        if not isinstance(reply, dict) or reply.get("id") != self.next_id:
            fail(f"{method} got {status} with no reply of its own: {reply!r:.300}")
        return reply

    def close(self):
        try:
            self.conn.request("DELETE", "/mcp", headers=self.headers)
            self.conn.getresponse().read()
        except (OSError, http.client.HTTPException):
            pass
        self.conn.close()


def stateless_call(conn, name, arguments, rid=1):
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": META}}
    headers = {"MCP-Protocol-Version": STATELESS, "Mcp-Method": "tools/call", "Mcp-Name": name}
    return post(conn, body, headers)


# ---- raw sockets: MCP v1.0 streaming sessions, chunked bodies --------------

def read_head(sock):
    """A response's status and headers (lower-cased names), and any bytes
    of the body read with them."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            fail(f"the connection closed before a response head: {data[:200]!r}")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode(errors="replace").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        key, _, value = line.partition(":")
        headers[key.strip().lower()] = value.strip()
    return status, headers, rest


def first_line_of_chunked(sock, rest):
    """The first line of a chunked response body (MCP v1.0 streams write a
    line of JSON per message)."""
    buf, body = rest, b""
    while b"\n" not in body:
        while b"\r\n" not in buf:
            more = sock.recv(4096)
            if not more:
                fail(f"the stream ended before its first line: {body[:200]!r}")
            buf += more
        size_line, _, buf = buf.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            fail(f"the stream ended before its first line: {body[:200]!r}")
        while len(buf) < size + 2:
            more = sock.recv(4096)
            if not more:
                fail("the stream ended inside a chunk")
            buf += more
        body += buf[:size]
        buf = buf[size + 2:]
    return body.split(b"\n", 1)[0]


def open_v1_stream(port, source):
    """A POST with a chunked body whose first chunk is an `initialize` line,
    kept open: (socket, status, headers, the first line when 200)."""
    sock = socket.create_connection((PEER_A, port), PATIENCE, source_address=(source, 0))
    SOCKETS.append(sock)
    head = (f"POST /mcp HTTP/1.1\r\nHost: {PEER_A}:{port}\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    line = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                        "params": {"clientCapabilities": {}}}) + "\n").encode()
    sock.sendall(head + b"%x\r\n" % len(line) + line + b"\r\n")
    status, headers, rest = read_head(sock)
    first = first_line_of_chunked(sock, rest) if status == 200 else None
    return sock, status, headers, first


def close_socket(sock):
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
    if sock in SOCKETS:
        SOCKETS.remove(sock)


# ---- the checks -------------------------------------------------------------

def check_template_values(port):
    rule = "template variables hold only safe path segments"
    session = Session(port)
    try:
        reply = session.request("resources/read", {"uri": "test://template/123/data"})
        contents = reply.get("result", {}).get("contents", [])
        check(contents and "123" in json.dumps(contents),
              f"{rule}: test://template/123/data reads", f"{reply!r:.300}")
        for bad in ["..%2F..%2Fetc%2Fpasswd", "a%2Fb", "a%5Cb", "a%00b", "%0A",
                    "%2E%2E", "..", "."]:
            uri = f"test://template/{bad}/data"
            reply = session.request("resources/read", {"uri": uri})
            check(error_of(reply) and "result" not in reply,
                  f"{rule}: {uri} matches no template "
                  f"(error {error_of(reply) and error_of(reply).get('code')})",
                  f"the read got {reply!r:.300}")
    finally:
        session.close()


def check_file_writer(port, root):
    rule = "the file-writer is bounded"
    conn = connect(port)
    try:
        def write(path, rid):
            body = {"jsonrpc": "2.0", "id": rid, "method": "mcp/executeTool",
                    "params": {"id": f"{V1_BASE}/tools/file-writer:v1",
                               "arguments": {"path": path, "content": "hello"}}}
            status, _, reply = post(conn, body, v1=True)
            if status != 200 or not isinstance(reply, dict):
                fail(f"{rule}: a write of a {len(path)}-byte path got {status}: {reply!r:.300}")
            return reply

        for path, limit, what in [("d/" * 20000 + "x", "1024", "a 40001-byte path"),
                                  ("d/" * 32 + "x", "32", "a path of 33 components")]:
            reply = write(path, 3)
            error = error_of(reply)
            check(error and error.get("code") == -32000 and limit in error_text(error),
                  f"{rule}: {what} is refused (-32000, naming {limit})", f"{reply!r:.300}")
            left = os.listdir(root)
            check(left == [], f"{rule}: after {what}, nothing was created under the root",
                  f"the root holds {left[:5]}")
        reply = write("a.txt", 4)
        check("result" in reply and os.path.isfile(os.path.join(root, "a.txt")),
              f"{rule}: a normal write succeeds and the file exists", f"{reply!r:.300}")
        with open(os.path.join(root, "a.txt")) as f:
            check(f.read() == "hello", f"{rule}: the file holds what was written")
    finally:
        conn.close()


def check_stream_limits(port):
    rule = "streams per principal"
    opened = []
    try:
        for i in (1, 2):
            sock, status, _, first = open_v1_stream(port, PEER_A)
            opened.append(sock)
            reply = json.loads(first) if first else {}
            check(status == 200 and reply.get("id") == 1 and "result" in reply,
                  f"{rule}: stream {i} from {PEER_A} opens (200, initialize answered)",
                  f"{status} {first!r}")
        sock, status, headers, _ = open_v1_stream(port, PEER_A)
        check(status == 429 and headers.get("retry-after"),
              f"{rule}: a third stream from {PEER_A} gets 429 with Retry-After",
              f"{status} {headers}")
        close_socket(sock)
        sock, status, _, first = open_v1_stream(port, PEER_B)
        opened.append(sock)
        check(status == 200 and first,
              f"{rule}: meanwhile a stream from {PEER_B} opens (200)", f"{status}")
        # A closed stream gives its slot back (the server notices soon).
        close_socket(opened.pop(0))
        deadline = time.time() + PATIENCE
        while True:
            sock, status, _, _ = open_v1_stream(port, PEER_A)
            if status == 200 or time.time() > deadline:
                break
            close_socket(sock)
            time.sleep(0.1)
        opened.append(sock)
        check(status == 200, f"{rule}: a closed stream gives its slot back", f"{status}")
    finally:
        for sock in opened:
            close_socket(sock)


def check_session_limits(port):
    rule = "sessions per principal"
    sessions = []
    try:
        for i in (1, 2):
            sessions.append(Session(port, PEER_A))
            print(f"ok: {rule}: session {i} from {PEER_A} opens (200)")
        conn = connect(port, PEER_A)
        status, resp, reply = initialize(conn)
        conn.close()
        check(status == 429 and resp.getheader("Retry-After")
              and not resp.getheader("Mcp-Session-Id"),
              f"{rule}: a third session from {PEER_A} gets 429 with Retry-After",
              f"{status} {reply!r:.200}")
        sessions.append(Session(port, PEER_B))
        print(f"ok: {rule}: meanwhile a session from {PEER_B} opens (200)")
        sessions.pop(0).close()  # DELETE: its slot is given back
        sessions.append(Session(port, PEER_A))
        print(f"ok: {rule}: a deleted session gives its slot back")
    finally:
        for session in sessions:
            session.close()


def check_subscription_bounds(port):
    rule = "subscriptions are bounded"
    session = Session(port)
    try:
        long_uri = "test://template/" + "a" * 2100 + "/data"
        reply = session.request("resources/subscribe", {"uri": long_uri})
        error = error_of(reply)
        check(error and error.get("code") == -32602 and "max_uri_length" in error_text(error),
              f"{rule}: a {len(long_uri)}-byte URI gets -32602 naming max_uri_length",
              f"{reply!r:.300}")
        for n in range(256):
            reply = session.request("resources/subscribe", {"uri": f"test://template/{n}/data"})
            if "result" not in reply:
                fail(f"{rule}: subscription {n + 1} of 256 was refused: {reply!r:.300}")
        print(f"ok: {rule}: 256 subscriptions are taken")
        reply = session.request("resources/subscribe", {"uri": "test://template/256/data"})
        error = error_of(reply)
        check(error and error.get("code") == -32602 and "max_subscriptions" in error_text(error),
              f"{rule}: the 257th gets -32602 naming max_subscriptions", f"{reply!r:.300}")
        reply = session.request("resources/unsubscribe", {"uri": "test://template/0/data"})
        check("result" in reply, f"{rule}: an unsubscribe is taken", f"{reply!r:.300}")
        reply = session.request("resources/subscribe", {"uri": "test://template/256/data"})
        check("result" in reply, f"{rule}: then another subscription fits", f"{reply!r:.300}")
    finally:
        session.close()


def check_stateless_status(port):
    rule = f"a {STATELESS} reply's HTTP status comes from its outcome"
    conn = connect(port)
    try:
        text = ',"error":{"code":-32601'
        status, _, reply = stateless_call(conn, "echo", {"message": text})
        result = reply.get("result") if isinstance(reply, dict) else None
        check(status == 200 and result and not result.get("isError")
              and result.get("structuredContent", {}).get("message") == text,
              f"{rule}: an echo of {text!r} is a 200 result", f"{status} {reply!r:.300}")
        status, _, reply = stateless_call(conn, "no-such-tool", {}, rid=2)
        error = error_of(reply)
        code = error and error.get("code")
        check(code == -32602 and "no-such-tool" in error_text(error),
              f"{rule}: an unknown tool gets -32602 naming it", f"{status} {reply!r:.300}")
        expected = STATUS_BY_CODE.get(code, 200)
        check(status == expected, f"{rule}: its status is {expected}, by the table",
              f"got {status}")
    finally:
        conn.close()


def check_tiny_chunks(port, servers, name):
    rule = "a body of 20000 one-byte chunks"
    request = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "mcp/listTools"}).encode()
    sock = socket.create_connection((PEER_A, port), PATIENCE)
    SOCKETS.append(sock)
    started = time.time()
    try:
        sock.sendall((f"POST /mcp HTTP/1.1\r\nHost: {PEER_A}:{port}\r\n"
                      "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                      "Connection: close\r\n\r\n").encode())
        batch = b"1\r\n \r\n" * 1000
        for _ in range(20):
            sock.sendall(batch)
        sock.sendall(b"%x\r\n" % len(request) + request + b"\r\n0\r\n\r\n")
        sock.settimeout(20.0)
        data = b""
        try:
            while True:
                more = sock.recv(65536)
                if not more:
                    break
                data += more
        except socket.timeout:
            fail(f"{rule}: no whole answer within 20 s (read {data[:200]!r})")
        elapsed = time.time() - started
        head, _, body = data.partition(b"\r\n\r\n")
        status_line = head.split(b"\r\n", 1)[0].decode(errors="replace")
        check(status_line.split()[1:2] == ["200"] and b'"id":7' in body and b"result" in body,
              f"{rule} is answered 200 with its reply ({elapsed:.1f}s)",
              f"{status_line!r} {body[:300]!r}")
    finally:
        close_socket(sock)
    check(servers.alive(name), f"{rule}: the server is still alive",
          servers.log_tail(name))
    conn = connect(port)
    status, _, reply = post(conn, {"jsonrpc": "2.0", "id": 8, "method": "mcp/listTools"}, v1=True)
    conn.close()
    check(status == 200 and isinstance(reply, dict) and "result" in reply,
          f"{rule}: a second request is served", f"{status} {reply!r:.200}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", required=True, help="the reference example's binary")
    parser.add_argument("--conformance", required=True,
                        help="the conformance example's binary")
    args = parser.parse_args()
    reference = os.path.abspath(args.reference)
    conformance = os.path.abspath(args.conformance)
    for binary in (reference, conformance):
        if not os.access(binary, os.X_OK):
            fail(f"{binary} is not an executable")
    print(f"testing: reference {reference}", flush=True)
    print(f"testing: conformance {conformance}", flush=True)
    # A CI timeout's SIGTERM unwinds like a failure: the cleanup runs.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("FAIL: hostile was terminated (SIGTERM)"))
    started = time.time()
    work = tempfile.mkdtemp(prefix="clawmcp-hostile-")
    root = os.path.join(work, "root")
    os.mkdir(root)
    servers = Servers(work)
    try:
        conf = servers.start("conformance", conformance)
        ref = servers.start("reference", reference, "--root", root)
        limited = servers.start("reference-limited", reference,
                                "--root", os.path.join(work, "root-limited"),
                                "--max-streams", "8", "--max-streams-per-principal", "2",
                                "--max-sessions-per-principal", "2")
        checks = [
            ("template variables", lambda: check_template_values(conf)),
            ("the file-writer's bounds", lambda: check_file_writer(ref, root)),
            ("streams per principal", lambda: check_stream_limits(limited)),
            ("sessions per principal", lambda: check_session_limits(limited)),
            ("subscription bounds", lambda: check_subscription_bounds(conf)),
            (f"{STATELESS} statuses", lambda: check_stateless_status(ref)),
            ("tiny chunks", lambda: check_tiny_chunks(ref, servers, "reference")),
        ]
        for rule, run in checks:
            try:
                run()
            except (OSError, http.client.HTTPException, ValueError) as e:
                # A reset, a timeout, a reply that is not HTTP or not JSON.
                fail(f"{rule}: {type(e).__name__}: {e}")
        for name in ("conformance", "reference", "reference-limited"):
            check(servers.alive(name), f"{name} is still running after it all",
                  servers.log_tail(name))
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the cleanup goes on
        for sock in list(SOCKETS):
            close_socket(sock)
        servers.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"PASS: hostile ({time.time() - started:.1f}s)")


if __name__ == "__main__":
    main()
