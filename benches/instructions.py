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
Prints one line per cell: `cell  instructions/request`.

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


def callgrind(binary, args, out):
    return ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary, *args]


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
    proc = subprocess.Popen(callgrind(binary, [], out), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    enc = line if mcp else frame
    reader = FrameReader(proc.stdout, mcp)
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
}


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
    args = parser.parse_args()
    global BEARER, SERVER_ARGS
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
                CELLS[cell](args.binary, n, out)
                counts.append(total(out))
            per = (counts[1] - counts[0]) / (2 * args.calls)
            print(f"{cell:15} {per:10.0f} instructions/request", flush=True)


if __name__ == "__main__":
    sys.exit(main())
