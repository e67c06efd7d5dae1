#!/usr/bin/env python3
"""Trace context end to end (feature `otel`): the reference example, built
with `otel`, exports its spans over OTLP/HTTP to a receiver this script runs
on loopback, which decodes them with the official protobuf definitions
(`opentelemetry-proto`). It sends calls with a known `traceparent` (and
`baggage`) in `params._meta`, on stdio and over HTTP, and checks:

  1. each request's server span is in the caller's trace, its parent the
     caller's span, named `{method} {target}` with the conventions'
     attributes (mcp.method.name, mcp.protocol.version, mcp.session.id,
     jsonrpc.request.id, network.transport, gen_ai.tool.name,
     gen_ai.operation.name; over HTTP network.protocol.version,
     client.address and client.port);
  2. failures set error.type: the JSON-RPC code (`-32602` for an unknown
     tool) or `tool_error` for a result the tool marked an error, and the
     span's status is ERROR;
  3. a request to the client (the ask tool's elicitation) carries the trace
     in its `params._meta`: the same trace, its parent a client span of the
     server's, itself a child of the call's span;
  4. a request without trace context, or with a malformed traceparent,
     starts a trace of its own;
  5. a resource's span names its URI, and an error's status says the
     reply's message;
  6. a call run as a task (2026-07-28, the tasks extension) runs in a span
     of its own, a child of the request that created it, and its question
     in `inputRequests` carries the trace on;
  7. the spans are flushed when the server stops (stdin closed, SIGTERM);
  8. what a client writes is bounded in a span: a request answered "method
     not found" is named `_OTHER` (its method, cut to 256 bytes, stays in
     mcp.method.name), and a long id is cut too;
  9. a call stopped at its time limit (a result marked `isError`) sets
     error.type `tool_error`;
 10. a `tracestate` written with JSON escapes is carried on.

    tests/otel/check.py --reference target/debug/examples/reference

(needs `pip install opentelemetry-proto`). Prints `ok: ...` lines and
`N passed, 0 failed`; exits non-zero on the first failure. Every process it
starts is stopped, also on a failure; traffic stays on 127.0.0.1.
"""

import argparse
import http.client
import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest, ExportTraceServiceResponse)

PATIENCE = 15.0  # a hang guard, never a performance bound
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
INTERNAL, SERVER, CLIENT = 1, 2, 3  # Span.SpanKind
TASKS = "io.modelcontextprotocol/tasks"
STATUS_ERROR = 2
PASSED = []


def fail(what):
    raise SystemExit(f"FAIL: {what}")


def check(ok, what, detail=""):
    if not ok:
        fail(f"{what}{': ' + str(detail) if detail else ''}")
    PASSED.append(what)
    print(f"ok: {what}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Receiver:
    """An OTLP/HTTP trace receiver on loopback: every span it is sent."""

    def __init__(self):
        self.spans = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                ok = self.path == "/v1/traces" and \
                    self.headers.get("Content-Type") == "application/x-protobuf"
                if ok:
                    request = ExportTraceServiceRequest()
                    request.ParseFromString(body)
                    with receiver.lock:
                        for resource in request.resource_spans:
                            service = attributes(resource.resource.attributes).get("service.name")
                            for scope in resource.scope_spans:
                                for span in scope.spans:
                                    receiver.spans.append((service, span))
                answer = ExportTraceServiceResponse().SerializeToString() if ok else b""
                self.send_response(200 if ok else 400)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def find(self, pred, what, patience=PATIENCE):
        deadline = time.time() + patience
        while time.time() < deadline:
            with self.lock:
                found = [s for s in self.spans if pred(s[1])]
            if found:
                return found[0]
            time.sleep(0.05)
        with self.lock:
            seen = [(s[1].name, s[1].trace_id.hex()) for s in self.spans]
        fail(f"{what}: not exported (spans seen: {seen})")

    def stop(self):
        self.server.shutdown()


def attributes(kvs):
    out = {}
    for kv in kvs:
        v = kv.value
        kind = v.WhichOneof("value")
        out[kv.key] = getattr(v, kind) if kind else None
    return out


def server_env(receiver, service):
    return dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{receiver.port}",
                OTEL_SERVICE_NAME=service, RUST_LOG="warn",
                # Small batches, sent at once: the flush at shutdown is what is tested.
                OTEL_BSP_SCHEDULE_DELAY="100")


def in_trace(span, name):
    return span.name == name and span.trace_id.hex() == TRACE_ID


def check_call_span(receiver, name, transport, version, extra):
    service, span = receiver.find(
        lambda s: in_trace(s, name) and attributes(s.attributes).get("network.transport") == transport,
        f"the span {name!r} ({transport})")
    attrs = attributes(span.attributes)
    check(span.parent_span_id.hex() == PARENT_ID and span.kind == SERVER,
          f"{name} ({transport}): a server span whose parent is the caller's span",
          (span.parent_span_id.hex(), span.kind))
    expected = {"mcp.method.name": name.split(" ")[0], "network.transport": transport,
                "mcp.protocol.version": version, **extra}
    wrong = {k: (attrs.get(k), v) for k, v in expected.items() if attrs.get(k) != v}
    check(not wrong, f"{name} ({transport}): the conventions' attributes", wrong or attrs)
    return service, span, attrs


def stdio_server(argv, env):
    """The reference example on stdio: the process, a function that sends
    a message, and one that waits for the first line a predicate takes."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    lines = []
    reader = threading.Thread(target=lambda: [lines.append(json.loads(l)) for l in proc.stdout],
                              daemon=True)
    reader.start()

    def send(message):
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()

    def wait(pred, what):
        deadline = time.time() + PATIENCE
        while time.time() < deadline:
            for m in list(lines):
                if pred(m):
                    return m
            time.sleep(0.02)
        fail(f"stdio: {what} (got {[str(m)[:200] for m in lines[-3:]]})")

    return proc, send, wait


def stdio(args, receiver):
    env = server_env(receiver, "clawmcp-otel-stdio")
    root = tempfile.mkdtemp(prefix="clawmcp-otel-")
    proc, send, wait = stdio_server([args.reference, "--root", root], env)

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "otel-check", "version": "1"}}})
        wait(lambda m: m.get("id") == 1, "initialize answered")
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        meta = {"traceparent": TRACEPARENT, "tracestate": "check=1", "baggage": "tenant=acme"}
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"message": "hi"}, "_meta": meta}})
        wait(lambda m: m.get("id") == 2, "echo answered")
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "no-such-tool", "arguments": {}, "_meta": meta}})
        wait(lambda m: m.get("id") == 3, "the unknown tool answered")
        send({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "divide", "arguments": {"a": 1, "b": 0}, "_meta": meta}})
        wait(lambda m: m.get("id") == 4, "divide answered")
        # The ask tool asks the client: the request carries the trace.
        send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "ask", "arguments": {"question": "Traced?"}, "_meta": meta}})
        asked = wait(lambda m: m.get("method") == "elicitation/create", "the elicitation arrives")
        send({"jsonrpc": "2.0", "id": asked["id"], "result": {
            "action": "accept", "content": {"yes": True}}})
        wait(lambda m: m.get("id") == 5, "ask answered")
        send({"jsonrpc": "2.0", "id": 6, "method": "tools/list"})
        wait(lambda m: m.get("id") == 6, "tools/list answered")
        about = "mcp://clawmcp/examples/resources/about.txt"
        send({"jsonrpc": "2.0", "id": 7, "method": "resources/read",
              "params": {"uri": about, "_meta": meta}})
        wait(lambda m: m.get("id") == 7, "resources/read answered")
        send({"jsonrpc": "2.0", "id": 8, "method": "resources/read",
              "params": {"uri": "mcp://clawmcp/examples/resources/none", "_meta": meta}})
        missing = wait(lambda m: m.get("id") == 8, "the unknown resource answered")
        # A traceparent whose trace id is two digits short.
        send({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"message": "hi"},
            "_meta": {"traceparent": f"00-{TRACE_ID[2:]}-{PARENT_ID}-01"}}})
        wait(lambda m: m.get("id") == 9, "the malformed traceparent's call answered")
        # A 2026-07-28 call run as a task, on the same connection.
        task_meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                     "io.modelcontextprotocol/clientCapabilities": {
                         "elicitation": {}, "extensions": {TASKS: {}}}, **meta}
        send({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {
            "name": "ask", "arguments": {"question": "As a task?"}, "_meta": task_meta}})
        created = wait(lambda m: m.get("id") == 10, "the task is created")["result"]
        check(created.get("resultType") == "task", "the ask call is a task", created)
        question = None
        for rid in range(11, 200):
            send({"jsonrpc": "2.0", "id": rid, "method": "tasks/get",
                  "params": {"taskId": created["taskId"], "_meta": task_meta}})
            task = wait(lambda m, rid=rid: m.get("id") == rid, "tasks/get answered")["result"]
            if task.get("status") == "input_required":
                key, question = next(iter(task["inputRequests"].items()))
                break
            time.sleep(0.05)
        check(question is not None, "the task asks its question")
        send({"jsonrpc": "2.0", "id": 300, "method": "tasks/update", "params": {
            "taskId": created["taskId"], "_meta": task_meta,
            "inputResponses": {key: {"action": "accept", "content": {"yes": True}}}}})
        wait(lambda m: m.get("id") == 300, "tasks/update answered")
        proc.stdin.close()  # the server stops, and flushes its spans
        proc.wait(timeout=PATIENCE)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    service, _, attrs = check_call_span(receiver, "tools/call echo", "pipe", "2025-11-25", {
        "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
        "jsonrpc.request.id": "2"})
    check(service == "clawmcp-otel-stdio", "OTEL_SERVICE_NAME names the service", service)
    check("mcp.session.id" not in attrs, "no session id on stdio", attrs)
    _, span, attrs = check_call_span(receiver, "tools/call", "pipe", "2025-11-25", {
        "error.type": "-32602", "rpc.response.status_code": "-32602"})
    check(span.status.code == STATUS_ERROR, "an unknown tool's span has status ERROR", span.status)
    _, span, attrs = check_call_span(receiver, "tools/call divide", "pipe", "2025-11-25", {
        "error.type": "tool_error"})
    check(span.status.code == STATUS_ERROR and "zero" in span.status.message.lower(),
          "a tool error's span has status ERROR with the tool's text", span.status)
    _, ask, _ = check_call_span(receiver, "tools/call ask", "pipe", "2025-11-25", {
        "gen_ai.tool.name": "ask"})
    carried = (asked.get("params") or {}).get("_meta") or {}
    parts = carried.get("traceparent", "").split("-")
    check(len(parts) == 4 and parts[1] == TRACE_ID,
          "the elicitation's _meta carries the caller's trace", carried)
    _, client_span = receiver.find(
        lambda s: s.span_id.hex() == parts[2], "the client span the elicitation names")
    check(client_span.kind == CLIENT and client_span.name == "elicitation/create"
          and client_span.parent_span_id == ask.span_id,
          "its parent is the server's client span elicitation/create, a child of the call's span",
          (client_span.name, client_span.kind))
    check(attributes(client_span.attributes).get("jsonrpc.request.id") == str(asked["id"]),
          "the client span names the id of the request to the client",
          attributes(client_span.attributes))
    check("tenant=acme" in carried.get("baggage", ""),
          "the caller's baggage travels on to the client", carried)
    _, listed = receiver.find(lambda s: s.name == "tools/list", "the tools/list span")
    check(listed.trace_id.hex() != TRACE_ID and not listed.parent_span_id,
          "a request without trace context starts a trace of its own",
          (listed.trace_id.hex(), listed.parent_span_id.hex()))
    _, bad = receiver.find(lambda s: attributes(s.attributes).get("jsonrpc.request.id") == "9",
                           "the span of the call with a malformed traceparent")
    check(bad.trace_id.hex() not in (TRACE_ID, "00" + TRACE_ID[2:]) and not bad.parent_span_id,
          "a malformed traceparent starts a trace of its own", bad.trace_id.hex())
    _, read, attrs = check_call_span(receiver, "resources/read", "pipe", "2025-11-25", {
        "mcp.resource.uri": "mcp://clawmcp/examples/resources/about.txt"})
    _, unknown = receiver.find(lambda s: attributes(s.attributes).get("jsonrpc.request.id") == "8",
                               "the unknown resource's span")
    message = missing["error"]["message"]
    check(unknown.status.code == STATUS_ERROR and unknown.status.message == message,
          "an error's span status says the reply's message", (unknown.status.message, message))
    _, creating = receiver.find(
        lambda s: in_trace(s, "tools/call ask") and s.kind == SERVER
        and attributes(s.attributes).get("mcp.protocol.version") == "2026-07-28",
        "the span of the request that created the task")
    _, running = receiver.find(
        lambda s: s.kind == INTERNAL and s.parent_span_id == creating.span_id,
        "the task's own span")
    check(running.name == "tools/call ask" and running.trace_id.hex() == TRACE_ID
          and attributes(running.attributes).get("mcp.task.id") == created["taskId"],
          "the task runs in a span of its own, a child of the request that created it",
          (running.name, attributes(running.attributes)))
    carried = (question.get("params") or {}).get("_meta") or {}
    parts = carried.get("traceparent", "").split("-")
    check(len(parts) == 4 and parts[1] == TRACE_ID and carried.get("tracestate") == "check=1",
          "the task's question in inputRequests carries the trace on", carried)


def http_request(port, body, headers, source=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=PATIENCE,
                                      source_address=(source, 0) if source else None)
    conn.request("POST", "/mcp", json.dumps(body), {
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        **headers})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response, data


def over_http(args, receiver):
    port = free_port()
    env = server_env(receiver, "clawmcp-otel-http")
    # 127.0.0.2 stands for a trusted reverse proxy; this client, on
    # 127.0.0.1, is not one.
    proc = subprocess.Popen([args.reference, "--http", f"127.0.0.1:{port}",
                             "--trust-proxy", "127.0.0.2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.time() + PATIENCE
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if time.time() >= deadline:
                    fail("the HTTP server did not start")
                time.sleep(0.05)
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}, "traceparent": TRACEPARENT}
        response, _ = http_request(port, {"jsonrpc": "2.0", "id": "a-1", "method": "tools/call",
                                          "params": {"name": "echo", "arguments": {"message": "hi"},
                                                     "_meta": meta}},
                                   {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                                    "Mcp-Name": "echo"})
        check(response.status == 200, "a 2026-07-28 call over HTTP is answered", response.status)
        # A 2025-11-25 session: its requests name it.
        response, _ = http_request(port, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "otel-check", "version": "1"}}}, {})
        sid = response.getheader("Mcp-Session-Id")
        check(response.status == 200 and sid, "a session over HTTP opens", response.status)
        headers = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
        http_request(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
        # Through the "proxy": the client it forwards for is the span's client.
        response, _ = http_request(port, {"jsonrpc": "2.0", "id": 2, "method": "prompts/get",
                                          "params": {"name": "planner", "_meta": {"traceparent": TRACEPARENT}}},
                                   {**headers, "X-Forwarded-For": "198.51.100.1, 192.0.2.7"},
                                   source="127.0.0.2")
        check(response.status == 200, "the session's prompts/get is answered", response.status)
        proc.send_signal(signal.SIGTERM)  # the server stops, and flushes its spans
        proc.wait(timeout=PATIENCE)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _, _, attrs = check_call_span(receiver, "tools/call echo", "tcp", "2026-07-28", {
        "gen_ai.tool.name": "echo", "jsonrpc.request.id": "a-1", "network.protocol.name": "http",
        "network.protocol.version": "1.1", "client.address": "127.0.0.1"})
    check(isinstance(attrs.get("client.port"), int) and 0 < attrs["client.port"] < 65536,
          "an HTTP span names the client's port", attrs.get("client.port"))
    check("network.peer.address" not in attrs,
          "a span of a client that is no trusted proxy's names no network peer beside it",
          attrs.get("network.peer.address"))
    _, _, attrs = check_call_span(receiver, "prompts/get planner", "tcp", "2025-11-25", {
        "gen_ai.prompt.name": "planner", "mcp.session.id": sid,
        "client.address": "192.0.2.7", "network.peer.address": "127.0.0.2"})
    check("client.port" not in attrs and isinstance(attrs.get("network.peer.port"), int),
          "behind a trusted proxy: no client port, the proxy's as the network peer's",
          (attrs.get("client.port"), attrs.get("network.peer.port")))


def bounds(args, receiver):
    """Checks 8 to 10, on a server whose tools may run 200 ms."""
    env = server_env(receiver, "clawmcp-otel-bounds")
    proc, send, wait = stdio_server([args.reference, "--tool-time-limit", "200"], env)

    def call(message):
        send(message)
        return wait(lambda m: m.get("id") == message["id"],
                    f"an answer to {message['method'][:40]}")

    long_method = "x/" + "é" * 2000
    long_id = "i" * 5000
    try:
        call({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "otel-bounds", "version": "1"}}})
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        unknown = call({"jsonrpc": "2.0", "id": long_id, "method": long_method,
                        "params": {"_meta": {"traceparent": TRACEPARENT}}})
        check(unknown.get("error", {}).get("code") == -32601, "the long method is not found",
              unknown.get("error"))
        stopped = call({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "sleep", "arguments": {"ms": 10000},
            "_meta": {"traceparent": TRACEPARENT}}})
        check(stopped.get("result", {}).get("isError") is True,
              "a call past its time limit is a result marked isError", stopped)
        # `tracestate` values may hold `/` and `"`; JSON escapes them, or may.
        proc.stdin.write(b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ask",'
                         b'"arguments":{"question":"Escaped?"},"_meta":{"traceparent":"'
                         + TRACEPARENT.encode() + b'","tracestate":"a\\/b=c\\"d"}}}\n')
        proc.stdin.flush()
        asked = wait(lambda m: m.get("method") == "elicitation/create", "the elicitation arrives")
        proc.stdin.close()
        proc.wait(timeout=PATIENCE)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    _, span = receiver.find(lambda s: s.name == "_OTHER" and s.trace_id.hex() == TRACE_ID,
                            "the span of the request whose method was not found")
    attrs = attributes(span.attributes)
    method, rid = attrs.get("mcp.method.name", ""), attrs.get("jsonrpc.request.id", "")
    check(len(method.encode()) <= 256 and long_method.startswith(method) and method,
          "its method is cut to 256 bytes at a character boundary", len(method.encode()))
    check(len(rid) <= 256 and long_id.startswith(rid) and rid,
          "its id is cut to 256 bytes", len(rid))
    check(len(span.status.message.encode()) <= 256, "its status message is cut to 256 bytes",
          len(span.status.message.encode()))
    _, span = receiver.find(
        lambda s: s.name == "tools/call sleep"
        and attributes(s.attributes).get("jsonrpc.request.id") == "3"
        and s.trace_id.hex() == TRACE_ID,
        "the span of the call stopped at its time limit")
    check(attributes(span.attributes).get("error.type") == "tool_error"
          and span.status.code == STATUS_ERROR,
          "a call stopped at its time limit sets error.type tool_error and status ERROR",
          (attributes(span.attributes), span.status))
    carried = (asked.get("params") or {}).get("_meta") or {}
    check(carried.get("tracestate") == 'a/b=c"d',
          "a tracestate written with escapes is carried on", carried)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", required=True, help="the reference example, built with otel")
    args = parser.parse_args()
    receiver = Receiver()
    try:
        stdio(args, receiver)
        bounds(args, receiver)
        over_http(args, receiver)
    finally:
        receiver.stop()
    print(f"{len(PASSED)} passed, 0 failed")


if __name__ == "__main__":
    sys.exit(main())
