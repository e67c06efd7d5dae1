#!/usr/bin/env python3
"""Tasks benches (the tasks extension, for 2026-07-28 requests).

  redis   N tasks (the reference example's `sleep`, 0 ms) created through
          nginx on three processes that share Redis, each read until it
          ended: Redis memory and the processes' resident memory per ended
          task; then `tasks/get` latency through nginx (p50, p99) over R
          reads of tasks picked at random among them.
  memory  the same N tasks in one process's memory store (no Redis): its
          resident memory per ended task.

    python3 benches/tasks.py --reference target/release/examples/reference \
        [--tasks 10000] [--reads 2000]

The reference example must be built with `--features redis` (release). The
instructions of a task's round against a plain call are cells of
benches/instructions.py (`task26-stdio`, `sleep26-stdio`).
"""

import argparse
import http.client
import importlib.util
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import scale_out as topo  # noqa: E402

# The scale-out bench's helpers (percentile, rss_kib), by path: its module
# name is the test's.
_spec = importlib.util.spec_from_file_location(
    "scale_out_bench", os.path.join(os.path.dirname(os.path.abspath(__file__)), "scale_out.py"))
scale_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scale_bench)
percentile, rss_kib = scale_bench.percentile, scale_bench.rss_kib

META = topo.TASK_META


class Client:
    """One keep-alive connection to an endpoint."""

    def __init__(self, port):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.next_id = 0

    def request(self, method, params, name):
        self.next_id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                           "params": dict(params, _meta=META)})
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method,
                   "Mcp-Name": name}
        self.conn.request("POST", "/mcp", body, headers)
        resp = self.conn.getresponse()
        reply = json.loads(resp.read())
        if "result" not in reply:
            raise SystemExit(f"FAIL: {method} on :{self.port}: {reply}")
        return reply["result"]

    def create(self):
        result = self.request("tools/call", {"name": "sleep", "arguments": {"ms": 0}}, "sleep")
        if result.get("resultType") != "task":
            raise SystemExit(f"FAIL: no task: {result}")
        return result["taskId"]

    def get(self, task_id):
        return self.request("tasks/get", {"taskId": task_id}, task_id)


def make_tasks(client, n):
    ids = [client.create() for _ in range(n)]
    for task_id in ids:
        while client.get(task_id)["status"] != "completed":
            time.sleep(0.001)
    return ids


def redis_used_memory(port):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"INFO memory\r\n")
        data = b""
        while b"used_memory:" not in data or not data.endswith(b"\r\n"):
            data += s.recv(65536)
    for line in data.decode().splitlines():
        if line.startswith("used_memory:"):
            return int(line.split(":")[1])
    raise SystemExit("FAIL: no used_memory in Redis's INFO")


def bench_redis(reference, n, reads):
    work = tempfile.mkdtemp(prefix="clawmcp-tasks-bench-")
    d = topo.Deployment(os.path.abspath(reference), work)
    d.extra_args = ["--max-tasks-per-principal", str(n + 1000)]
    try:
        d.start_redis()
        d.start_servers()
        d.start_nginx()
        client = Client(d.nginx_port)
        make_tasks(client, 100)  # warm: connections, first allocations
        redis_before = redis_used_memory(d.redis_port)
        rss_before = sum(rss_kib(p.pid) for p in d.servers)
        started = time.perf_counter()
        ids = make_tasks(client, n)
        took = time.perf_counter() - started
        redis_per = (redis_used_memory(d.redis_port) - redis_before) / n
        rss_per = (sum(rss_kib(p.pid) for p in d.servers) - rss_before) * 1024 / n
        samples = []
        for _ in range(reads):
            task_id = random.choice(ids)
            t = time.perf_counter()
            client.get(task_id)
            samples.append((time.perf_counter() - t) * 1000)
        print(f"{n} tasks through nginx on 3 processes with Redis ({took:.1f} s to create and "
              f"read each to its end): Redis {redis_per:.0f} B per ended task, "
              f"processes' RSS {rss_per:.0f} B per ended task")
        print(f"tasks/get through nginx: p50 {percentile(samples, 50):.2f} ms, "
              f"p99 {percentile(samples, 99):.2f} ms ({reads} reads)")
    finally:
        d.stop()
        shutil.rmtree(work, ignore_errors=True)


def bench_memory(reference, n):
    port = topo.free_port()
    proc = subprocess.Popen([reference, "--http", f"127.0.0.1:{port}",
                             "--max-tasks-per-principal", str(n + 1000)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        topo.wait_port(port, "the reference server")
        client = Client(port)
        make_tasks(client, 100)
        before = rss_kib(proc.pid)
        make_tasks(client, n)
        per = (rss_kib(proc.pid) - before) * 1024 / n
        print(f"{n} ended tasks in one process's memory store: RSS {per:.0f} B per task")
    finally:
        proc.kill()
        proc.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reference", required=True)
    parser.add_argument("--tasks", type=int, default=10000)
    parser.add_argument("--reads", type=int, default=2000)
    args = parser.parse_args()
    bench_memory(args.reference, args.tasks)
    bench_redis(args.reference, args.tasks, args.reads)


if __name__ == "__main__":
    main()
