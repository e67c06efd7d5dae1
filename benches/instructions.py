#!/usr/bin/env python3
"""Instructions per request of a server, by cell, under callgrind.

Counts are what the server executes (valgrind --tool=callgrind), not time:
they do not depend on machine noise. Each cell runs the server twice, with
N and 3N echo calls, and reports (I(3N) - I(N)) / 2N, so start-up and
shutdown cancel out. The client is this script (its own cost is not counted).

    python3 benches/instructions.py            # builds the reference example (release)
    python3 benches/instructions.py --binary BIN --cells stdio-d1,http-c32 --calls 2000

Cells (64-byte echo messages):
    stdio-d1, stdio-d64    MCP v1.0 on stdio, 1 or 64 calls in flight
    http-c1, http-c32      MCP v1.0 over HTTP single exchanges, 1 or 32 connections
    mcp-stdio-d1, mcp-stdio-d64   the Model Context Protocol on stdio (tools/call)
    mcp-http-c1, mcp-http-c32     the Model Context Protocol over Streamable HTTP
    mcp26-stdio-d1, mcp26-http-c1, mcp26-http-c32
                           the same call as a 2026-07-28 request (per-request _meta,
                           no session; over HTTP with its mirrored headers)
    ask26-stdio, ask26-http-c1
                           a 2026-07-28 round trip: the reference example's ask tool
                           answers InputRequiredResult with a sealed requestState,
                           the retry carries the answer and the state (one "request"
                           here is the two calls)
    sleep26-stdio, task26-stdio
                           the reference example's sleep tool (0 ms) as a 2026-07-28
                           request: answered in its request, or, declaring the tasks
                           extension, as a task (one "request" here is the call that
                           creates it and the tasks/get calls that read it to its end,
                           usually one)
Prints one line per cell: `cell  instructions/request`.

`--cpu` runs the server natively instead and prints the CPU time (user +
system, from the kernel's accounting of the child) per request: noisier
than instructions, but in microseconds.

OAuth (HTTP cells): `--server-args "--oauth-issuer URL"` starts the server
behind OAuth, and `--bearer TOKEN` sends that token on every request
(benches/oauth.py gets one from a real authorization server).
"""

import argparse
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

ECHO_V1 = "mcp://clawmcp/examples/tools/echo:v1"
MESSAGE = "x" * 24  # a 64-byte-class echo, as the yardstick's


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def frame(body):
    data = json.dumps(body, separators=(",", ":")).encode()
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def line(body):
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


def v1_call(i):
    return {"jsonrpc": "2.0", "id": i, "method": "mcp/executeTool",
            "params": {"id": ECHO_V1, "arguments": {"message": MESSAGE}}}


def mcp_call(i):
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": MESSAGE}}}


META26 = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}


def mcp26_call(i):
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": MESSAGE}, "_meta": META26}}


TASKS26 = dict(META26, **{"io.modelcontextprotocol/clientCapabilities": {
    "elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}})


def sleep26_call(i, tasks):
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "sleep", "arguments": {"ms": 0},
                       "_meta": TASKS26 if tasks else META26}}


def get26(i, task_id):
    return {"jsonrpc": "2.0", "id": i, "method": "tasks/get",
            "params": {"taskId": task_id, "_meta": TASKS26}}


def ask26_call(i, state=None):
    params = {"name": "ask", "arguments": {"question": "Go on?"}, "_meta": META26}
    if state is not None:
        params["inputResponses"] = {"input-0": {"action": "accept", "content": {"yes": True}}}
        params["requestState"] = state
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}


CPU = False
GETS = [0]  # tasks/get calls made by task26 cells, for the report


def callgrind(binary, args, out):
    if CPU:
        return [binary, *args]
    return ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary, *args]


def expect_state(reply):
    """The requestState of an input_required result."""
    result = reply.get("result", {})
    if result.get("resultType") != "input_required":
        raise RuntimeError(f"expected input_required: {reply}")
    return result["requestState"]


def expect_answer(reply):
    result = reply.get("result", {})
    if result.get("resultType") != "complete" or result.get("structuredContent", {}).get("yes") is not True:
        raise RuntimeError(f"expected the answer: {reply}")


def total(out):
    with open(out) as f:
        for row in f:
            m = re.match(r"(?:summary|totals): (\d+)", row)
            if m:
                return int(m.group(1))
    raise RuntimeError(f"no totals in {out}")


class FrameReader:
    """Reads Content-Length frames or lines from a pipe."""

    def __init__(self, pipe, lines):
        self.pipe, self.lines, self.buf = pipe, lines, b""

    def next(self):
        while True:
            if self.lines:
                i = self.buf.find(b"\n")
                if i >= 0:
                    msg, self.buf = self.buf[:i], self.buf[i + 1:]
                    return json.loads(msg)
            else:
                i = self.buf.find(b"\r\n\r\n")
                if i >= 0:
                    n = int(self.buf[:i].split(b":")[1])
                    if len(self.buf) >= i + 4 + n:
                        msg = self.buf[i + 4:i + 4 + n]
                        self.buf = self.buf[i + 4 + n:]
                        return json.loads(msg)
            chunk = os.read(self.pipe.fileno(), 65536)
            if not chunk:
                raise RuntimeError("the server closed its output")
            self.buf += chunk


def run_stdio(binary, calls, depth, mcp, out):
    # (Every task of a run is kept: one caller may hold all of them.)
    args = ["--max-tasks-per-principal", str(4 * calls)] if mcp == "task26" else []
    proc = subprocess.Popen(callgrind(binary, args, out), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    enc = line if mcp else frame
    reader = FrameReader(proc.stdout, mcp)
    if mcp in ("mcp26", "ask26", "sleep26", "task26"):
        proc.stdin.write(enc({"jsonrpc": "2.0", "id": 0, "method": "server/discover",
                              "params": {"_meta": META26}}))
        proc.stdin.flush()
        reader.next()
        for i in range(calls):
            if mcp in ("sleep26", "task26"):
                proc.stdin.write(enc(sleep26_call(1000 + i, mcp == "task26")))
                proc.stdin.flush()
                reply = reader.next()
                result = reply.get("result", {})
                want = "task" if mcp == "task26" else "complete"
                if result.get("resultType") != want:
                    raise RuntimeError(f"expected {want}: {reply}")
                while mcp == "task26" and result.get("status") != "completed":
                    GETS[0] += 1
                    proc.stdin.write(enc(get26(1000 + i, result["taskId"])))
                    proc.stdin.flush()
                    result = reader.next().get("result", {})
                    if not result:
                        raise RuntimeError("tasks/get failed")
            elif mcp == "mcp26":
                proc.stdin.write(enc(mcp26_call(1000 + i)))
                proc.stdin.flush()
                reply = reader.next()
                if "error" in reply:
                    raise RuntimeError(f"an error reply: {reply}")
            else:
                proc.stdin.write(enc(ask26_call(1000 + i)))
                proc.stdin.flush()
                state = expect_state(reader.next())
                proc.stdin.write(enc(ask26_call(1000 + i, state)))
                proc.stdin.flush()
                expect_answer(reader.next())
        proc.stdin.close()
        proc.wait(timeout=120)
        return
    if mcp:
        proc.stdin.write(enc({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "instructions", "version": "1"}}}))
        proc.stdin.write(enc({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    else:
        proc.stdin.write(enc({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                              "params": {"clientCapabilities": {}}}))
        proc.stdin.write(enc({"jsonrpc": "2.0", "method": "initialized"}))
    proc.stdin.flush()
    reader.next()
    call = mcp_call if mcp else v1_call
    sent = received = 0
    while received < calls:
        batch = b""
        while sent < calls and sent - received < depth:
            sent += 1
            batch += enc(call(1000 + sent))
        if batch:
            proc.stdin.write(batch)
            proc.stdin.flush()
        reply = reader.next()
        if "error" in reply:
            raise RuntimeError(f"an error reply: {reply}")
        received += 1
    proc.stdin.close()
    proc.wait(timeout=120)


def wait_port(port, proc):
    for _ in range(600):
        if proc.poll() is not None:
            raise RuntimeError("the server exited")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the server did not listen")


BEARER = None
SERVER_ARGS = []


def http_worker(port, calls, mcp, errors):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/json", "Host": f"127.0.0.1:{port}"}
    if BEARER:
        headers["Authorization"] = f"Bearer {BEARER}"
    if mcp in ("mcp26", "ask26"):
        headers["Accept"] = "application/json, text/event-stream"
        headers["MCP-Protocol-Version"] = "2026-07-28"
        headers["Mcp-Method"] = "tools/call"
        headers["Mcp-Name"] = "echo" if mcp == "mcp26" else "ask"

        def post(message):
            conn.request("POST", "/mcp", json.dumps(message), headers)
            reply = conn.getresponse()
            data = reply.read()
            if reply.status != 200 or b'"error"' in data:
                errors.append(data)
                return {}
            return json.loads(data)
        for i in range(calls):
            if mcp == "mcp26":
                post(mcp26_call(1000 + i))
            else:
                state = expect_state(post(ask26_call(1000 + i)))
                expect_answer(post(ask26_call(1000 + i, state)))
        conn.close()
        return
    if mcp:
        headers["Accept"] = "application/json, text/event-stream"
        body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "instructions", "version": "1"}}})
        conn.request("POST", "/mcp", body, headers)
        reply = conn.getresponse()
        reply.read()
        headers["Mcp-Session-Id"] = reply.getheader("mcp-session-id")
        headers["MCP-Protocol-Version"] = "2025-06-18"
        conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), headers)
        conn.getresponse().read()
    call = mcp_call if mcp else v1_call
    for i in range(calls):
        conn.request("POST", "/mcp", json.dumps(call(1000 + i)), headers)
        reply = conn.getresponse()
        data = reply.read()
        if reply.status != 200 or b'"error"' in data:
            errors.append(data)
    conn.close()


def run_http(binary, calls, connections, mcp, out):
    port = free_port()
    proc = subprocess.Popen(callgrind(binary, ["--http", f"127.0.0.1:{port}", *SERVER_ARGS], out),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc)
        errors = []
        per = calls // connections
        workers = [threading.Thread(target=http_worker, args=(port, per, mcp, errors))
                   for _ in range(connections)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        if errors:
            raise RuntimeError(f"{len(errors)} bad replies, e.g. {errors[0][:200]!r}")
    finally:
        proc.terminate()
        proc.wait(timeout=120)


CELLS = {
    "stdio-d1": lambda b, n, o: run_stdio(b, n, 1, False, o),
    "stdio-d64": lambda b, n, o: run_stdio(b, n, 64, False, o),
    "http-c1": lambda b, n, o: run_http(b, n, 1, False, o),
    "http-c32": lambda b, n, o: run_http(b, n, 32, False, o),
    "mcp-stdio-d1": lambda b, n, o: run_stdio(b, n, 1, True, o),
    "mcp-stdio-d64": lambda b, n, o: run_stdio(b, n, 64, True, o),
    "mcp-http-c1": lambda b, n, o: run_http(b, n, 1, True, o),
    "mcp-http-c32": lambda b, n, o: run_http(b, n, 32, True, o),
    "mcp26-stdio-d1": lambda b, n, o: run_stdio(b, n, 1, "mcp26", o),
    "mcp26-http-c1": lambda b, n, o: run_http(b, n, 1, "mcp26", o),
    "mcp26-http-c32": lambda b, n, o: run_http(b, n, 32, "mcp26", o),
    "ask26-stdio": lambda b, n, o: run_stdio(b, n, 1, "ask26", o),
    "ask26-http-c1": lambda b, n, o: run_http(b, n, 1, "ask26", o),
    "sleep26-stdio": lambda b, n, o: run_stdio(b, n, 1, "sleep26", o),
    "task26-stdio": lambda b, n, o: run_stdio(b, n, 1, "task26", o),
}


def cpu_seconds():
    import resource
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", help="a release build of the reference example "
                        "(default: build it, where cargo says)")
    parser.add_argument("--cells", default="stdio-d1,stdio-d64,http-c1,http-c32",
                        help="comma-separated cells (default: the four MCP v1.0 ones); 'all' for every cell")
    parser.add_argument("--calls", type=int, default=3200, help="N (the second run makes 3N)")
    parser.add_argument("--keep", metavar="DIR",
                        help="keep the callgrind outputs in DIR (for callgrind_annotate)")
    parser.add_argument("--server-args", default="", help="more arguments for the server (HTTP cells)")
    parser.add_argument("--bearer", help="an access token to send on every HTTP request")
    parser.add_argument("--cpu", action="store_true",
                        help="run natively and report CPU microseconds per request instead")
    args = parser.parse_args()
    global BEARER, SERVER_ARGS, CPU
    CPU = args.cpu
    BEARER = args.bearer
    SERVER_ARGS = args.server_args.split()
    if args.binary is None:
        from reference_bin import reference_bin
        args.binary = reference_bin()
    cells = list(CELLS) if args.cells == "all" else args.cells.split(",")
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or scratch
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
        for cell in cells:
            counts = []
            for n in (args.calls, 3 * args.calls):
                out = os.path.join(tmp, f"{cell}-{n}.out")
                before = cpu_seconds()
                CELLS[cell](args.binary, n, out)
                counts.append(cpu_seconds() - before if CPU else total(out))
            per = (counts[1] - counts[0]) / (2 * args.calls)
            if cell == "task26-stdio":
                print(f"  ({GETS[0] / (4 * args.calls):.2f} tasks/get per task)", file=sys.stderr)
                GETS[0] = 0
            if CPU:
                print(f"{cell:15} {per * 1e6:10.2f} CPU µs/request", flush=True)
            else:
                print(f"{cell:15} {per:10.0f} instructions/request", flush=True)


if __name__ == "__main__":
    sys.exit(main())
