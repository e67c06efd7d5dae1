#!/usr/bin/env python3
"""Memory per idle HTTP streaming session (issue: "how cost grows").

Starts the reference server over HTTP, opens N streaming sessions
(`initialize` + `initialized` in a chunked body that stays open), waits for
every `initialize` reply, and reports how much the server's resident memory
grew per session. Standard library only.

    python3 benches/idle_sessions.py [N=500] [--binary BIN]

Without --binary it builds the reference example (release) where cargo says.

N must stay under the server's stream limit (512 streaming sessions, minus 20
for warm-up): past it sessions are refused with 503 and not counted. Every
session comes from this machine, one principal: the server is started with
as many streams per principal as it has streams.
"""

import json
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def chunk(data):
    return b"%x\r\n" % len(data) + data + b"\r\n"


def line(message):
    return json.dumps(message).encode() + b"\n"


def main():
    args = sys.argv[1:]
    binary = None
    if "--binary" in args:
        i = args.index("--binary")
        binary = args[i + 1]
        del args[i:i + 2]
    if binary is None:
        from reference_bin import reference_bin
        binary = reference_bin()
    sessions = int(args[0]) if args else 500
    port = free_port()
    server = subprocess.Popen([binary, "--http", f"127.0.0.1:{port}", "--max-streams-per-principal", "512"], stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        opening = (
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
            + chunk(line({"jsonrpc": "2.0", "method": "initialize",
                          "params": {"clientCapabilities": {}}, "id": 1}))
            + chunk(line({"jsonrpc": "2.0", "method": "initialized"}))
        )

        def open_sessions(n):
            socks = []
            for _ in range(n):
                s = socket.create_connection(("127.0.0.1", port))
                s.sendall(opening)
                socks.append(s)
            answered = 0
            for s in socks:
                s.settimeout(5)
                seen = b""
                while b'"id":1' not in seen:  # headers and first line may come apart
                    data = s.recv(65536)
                    if not data:
                        break
                    seen += data
                answered += b'"id":1' in seen
            return socks, answered

        warm, _ = open_sessions(20)  # the runtime's and allocator's first growth
        time.sleep(0.5)
        before = rss_kib(server.pid)
        held, answered = open_sessions(sessions)
        time.sleep(1.0)
        after = rss_kib(server.pid)
        print(f"sessions={sessions} answered={answered} rss_before_kib={before} "
              f"rss_after_kib={after} per_session_kib={(after - before) / sessions:.1f}")
        for s in warm + held:
            s.close()
        return 0 if answered == sessions else 1
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    sys.exit(main())
