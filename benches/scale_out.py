#!/usr/bin/env python3
"""Scale-out benches: the topology of tests/scale_out.py (a real
redis-server, nginx round robin, three reference processes with --redis).

  latency  from a write on process B (the file-writer sets the last-write
           resource) to its notification on a 2026-07-28 listen stream held
           by process A: p50 and p99 over N writes, on loopback. The clock
           starts before the write's request is sent, so the figure holds
           the write's own request too.
  fan-out  one change delivered to S idle listen streams spread over the
           three processes: p99 over the streams of the time from the write
           to the stream's notification, for each of R changes one after
           another (the median round's figures are the result), and the
           servers' resident memory per idle stream (their RSS growth over S).
  req/s    2026-07-28 tools/list requests through nginx to three processes,
           against nginx to one (wrk, 2 threads, 32 connections, 10 s).

    python3 benches/scale_out.py --reference target/release/examples/reference \
        [--writes 200] [--streams 10000] [--rounds 5]

The reference example must be built with `--features redis` (release).
"""

import argparse
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import scale_out as topo  # noqa: E402


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1])
    return 0


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def listen_request(port):
    body = json.dumps({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
                       "params": {"_meta": topo.META,
                                  "notifications": {"resourceSubscriptions": [topo.LAST_WRITE]}}}).encode()
    return (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def bench_latency(d, writes):
    a, b, _ = d.ports
    _, stream = topo.listen_stream(a)
    samples = []
    for i in range(writes):
        stream.drain()
        started = time.perf_counter()
        quiet_write(b, f"latency {i}", i)
        stream.wait_for(topo.updated_on_stream, "the notification", patience=10)
        samples.append((time.perf_counter() - started) * 1000)
    return percentile(samples, 50), percentile(samples, 99)


def quiet_write(port, content, rid):
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "file-writer",
                       "arguments": {"path": "note.txt", "content": content},
                       "_meta": topo.META}}
    resp, reply = topo.post(port, body, topo.stateless_headers("tools/call", "file-writer"))
    if resp.status != 200 or "result" not in reply:
        raise SystemExit(f"a write failed: {reply}")


def fanout_client():
    """The fan-out client (benches/fanout_client.rs), built where cargo says."""
    out = subprocess.run(
        ["cargo", "build", "--release", "--bench", "fanout_client", "--message-format=json"],
        cwd=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."),
        capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        m = json.loads(line)
        if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "fanout_client" \
                and m.get("executable"):
            return m["executable"]
    raise SystemExit("the fan-out client did not build")


def bench_fan_out(d, streams, rounds):
    """The figures of each of `rounds` changes: (p50, p99) in ms, and the
    resident memory per idle stream in bytes."""
    before = sum(rss_kib(p.pid) for p in d.servers)
    client = subprocess.Popen([fanout_client(), ",".join(map(str, d.ports)), str(streams),
                               str(rounds)],
                              stdout=subprocess.PIPE, text=True)
    if client.stdout.readline().strip() != "READY":
        raise SystemExit("the fan-out client could not open its streams")
    time.sleep(1)
    after = sum(rss_kib(p.pid) for p in d.servers)
    per_stream = (after - before) * 1024 / streams
    figures = []
    for r in range(rounds):
        started = time.time()
        quiet_write(d.ports[1], f"fan-out {r}", r + 1)
        times = []
        for line in client.stdout:
            if line.strip() == "DONE":
                break
            times.append((float(line) - started) * 1000)
        if len(times) < streams:
            client.kill()
            raise SystemExit(f"only {len(times)} of {streams} streams heard of change {r}")
        figures.append((percentile(times, 50), percentile(times, 99)))
        time.sleep(0.5)
    client.kill()
    client.wait()
    return figures, per_stream


def wrk(port, seconds=10):
    script = os.path.join(tempfile.gettempdir(), "clawmcp-wrk.lua")
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                       "params": {"_meta": topo.META}})
    with open(script, "w") as f:
        f.write('wrk.method = "POST"\n'
                f"wrk.body = {json.dumps(body)}\n"
                'wrk.headers["Content-Type"] = "application/json"\n'
                'wrk.headers["Accept"] = "application/json, text/event-stream"\n'
                'wrk.headers["MCP-Protocol-Version"] = "2026-07-28"\n'
                'wrk.headers["Mcp-Method"] = "tools/list"\n')
    out = subprocess.run(["wrk", "-t2", "-c32", f"-d{seconds}s", "-s", script,
                          f"http://127.0.0.1:{port}/mcp"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("Requests/sec:"):
            return float(line.split()[1])
    raise SystemExit(f"wrk said: {out}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reference", required=True)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--streams", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--skip-rps", action="store_true")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, args.streams * 2 + 1024))
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    work = tempfile.mkdtemp(prefix="clawmcp-scale-bench-")
    d = topo.Deployment(os.path.abspath(args.reference), work)
    # Every stream comes from this machine: one principal (its address).
    d.extra_args = ["--max-streams", str(args.streams),
                    "--max-streams-per-principal", str(args.streams)]
    try:
        d.start_redis()
        d.start_servers()
        d.start_nginx()
        p50, p99 = bench_latency(d, args.writes)
        print(f"cross-process notification latency: p50 {p50:.2f} ms, p99 {p99:.2f} ms "
              f"({args.writes} writes)")
        figures, per = bench_fan_out(d, args.streams, args.rounds)
        f50, f99 = sorted(figures, key=lambda f: f[1])[len(figures) // 2]
        rounds = ", ".join(f"{p99:.0f}" for _, p99 in figures)
        print(f"fan-out to {args.streams} idle listen streams on 3 processes: "
              f"p50 {f50:.1f} ms, p99 {f99:.1f} ms (the median of {len(figures)} changes; "
              f"p99 of each: {rounds} ms); {per / 1024:.1f} KiB per idle stream")
        if not args.skip_rps and shutil.which("wrk"):
            three = wrk(d.nginx_port)
            d.nginx.kill()
            d.nginx.wait()
            ports, d.ports = d.ports, d.ports[:1]
            d.start_nginx()
            one = wrk(d.nginx_port)
            d.ports = ports
            print(f"req/s through nginx: three processes {three:.0f}, one {one:.0f} "
                  f"({three / one:.2f} x)")
    finally:
        d.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
