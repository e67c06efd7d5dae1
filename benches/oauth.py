#!/usr/bin/env python3
"""What OAuth costs per request: HTTP req/s and server CPU per request with
a verified JWT on every request, against the same server without OAuth.

    python3 benches/oauth.py --binary target/release/examples/reference   # built with --features oauth
    python3 benches/oauth.py --binary BIN --connections 32,1 --seconds 10 --repeat 3

It starts the test authorization server (tests/oauth/provider, npm
oidc-provider), gets one client-credentials JWT for the resource
`http://bench.local/mcp`, and starts two reference servers on loopback:
`none` (no OAuth) and `jwt` (`--oauth-issuer ISSUER --public-url
http://bench.local/mcp`). wrk (Debian's `wrk`) sends MCP v1.0 echo single
exchanges over C keep-alive connections, the two servers interleaved
`--repeat` times; the server's CPU is read from /proc. Prints one line per
server and connection count (medians), and the ratio jwt/none.

The token is verified once (a signature check against the issuer's key
set) and then found by its keyed hash until it expires: what this measures is
the cost of that lookup and of the principal reaching the request's work.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import base64

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESOURCE = "http://bench.local/mcp"
BODY = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "mcp/executeTool", "params": {
    "id": "mcp://clawmcp/examples/tools/echo:v1", "arguments": {"message": "x" * 24}}})


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


def start_provider():
    proc = subprocess.Popen([os.path.join(ROOT, "tests/oauth/provider/start.sh"), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    if not line.startswith("READY "):
        raise RuntimeError(f"the provider did not start: {line!r}")
    return proc, line.split()[1]


def token(issuer):
    form = urllib.parse.urlencode({"grant_type": "client_credentials", "scope": "mcp files:write",
                                   "resource": RESOURCE}).encode()
    request = urllib.request.Request(f"{issuer}/token", data=form)
    request.add_header("Authorization", "Basic " + base64.b64encode(b"mcp-jwt:mcp-jwt-secret").decode())
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.load(reply)["access_token"]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wrk(port, connections, seconds, bearer, script_dir):
    headers = {"Content-Type": "application/json"}
    if bearer:
        headers["Authorization"] = f"Bearer {bearer}"
    script = os.path.join(script_dir, f"post-{bool(bearer)}.lua")
    with open(script, "w") as f:
        f.write('wrk.method = "POST"\n')
        f.write(f"wrk.body = {json.dumps(BODY)}\n")
        for name, value in headers.items():
            f.write(f'wrk.headers["{name}"] = {json.dumps(value)}\n')
        f.write('done = function(summary, latency, requests)\n'
                '  io.write(string.format("RESULT %d %d %d\\n", summary.requests, summary.duration,'
                ' summary.errors.status + summary.errors.connect + summary.errors.read'
                ' + summary.errors.write + summary.errors.timeout))\nend\n')
    out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", script,
                          f"http://127.0.0.1:{port}/mcp"], capture_output=True, text=True, check=True)
    line = next(l for l in out.stdout.splitlines() if l.startswith("RESULT "))
    requests, micros, errors = map(int, line.split()[1:])
    if errors:
        raise RuntimeError(f"wrk saw {errors} errors:\n{out.stdout}")
    return requests, micros / 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True,
                        help="the reference example, release, built with --features oauth")
    parser.add_argument("--connections", default="32,1")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    provider, issuer = start_provider()
    servers = {}
    try:
        bearer = token(issuer)
        for name, extra in (("none", []), ("jwt", ["--oauth-issuer", issuer, "--public-url", RESOURCE])):
            port = free_port()
            proc = subprocess.Popen([args.binary, "--http", f"127.0.0.1:{port}", *extra],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_port(port, proc)
            servers[name] = (port, proc)
        results = {}
        with tempfile.TemporaryDirectory() as scratch:
            for connections in map(int, args.connections.split(",")):
                for _ in range(args.repeat):
                    for name, (port, proc) in servers.items():
                        token_for = bearer if name == "jwt" else None
                        wrk(port, connections, 1, token_for, scratch)  # warm-up (the first verification)
                        before = cpu_seconds(proc.pid)
                        requests, seconds = wrk(port, connections, args.seconds, token_for, scratch)
                        cpu = cpu_seconds(proc.pid) - before
                        results.setdefault((name, connections), []).append(
                            (requests / seconds, cpu / requests * 1e6))
        print(f"{'server':6} {'conns':>5} {'req/s':>10} {'cpu µs/req':>11}")
        for connections in map(int, args.connections.split(",")):
            medians = {}
            for name in servers:
                runs = results[(name, connections)]
                rate = statistics.median(r for r, _ in runs)
                cpu = statistics.median(c for _, c in runs)
                medians[name] = (rate, cpu)
                print(f"{name:6} {connections:5} {rate:10.0f} {cpu:11.2f}")
            ratio = medians["jwt"][0] / medians["none"][0]
            cpu_ratio = medians["jwt"][1] / medians["none"][1]
            print(f"jwt/none at {connections} connections: {ratio:.1%} of the req/s, "
                  f"{cpu_ratio:.2f}x the CPU per request")
    finally:
        for _, proc in servers.values():
            proc.terminate()
            proc.wait(timeout=30)
        provider.terminate()
        provider.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
