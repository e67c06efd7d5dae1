#!/usr/bin/env python3
"""Scale-out, end to end: a real redis-server, a real nginx (round robin,
its own config on loopback ports) and three reference-server processes
sharing announcements through Redis (`--redis`).

It shows:
  1. single exchanges (MCP v1.0) and 2026-07-28 requests, sent through
     nginx, spread over all three processes (nginx's log names each);
     nginx names the client (X-Forwarded-For) and the processes, which
     trust it (`--trust-proxy`), count a task against that client;
  2. a stream held by one process hears of a change made through another,
     on all three stream shapes: an MCP v1.0 streaming session, a
     2025-11-25 session's GET stream, a 2026-07-28 subscriptions/listen;
     and the changed resource reads the same on every process;
  3. Redis killed: requests go on, nothing hangs; Redis restarted: the
     streams hear of the gap (a conservative resources/updated) and later
     changes cross processes again;
  4. a 2025-11-25 session through nginx, round robin (no affinity): served
     by all three processes in turn, its GET stream hears of writes, an
     elicitation is answered through another process than the tool's;
  5. the process holding its GET stream killed: the stream ends, a second
     GET stream on another process was refused with 409 until then, a new one
     opened through nginx works, the session goes on; another process
     killed: requests through nginx go on.

It cleans up after itself, and checks it did (a leftover fails the test,
after it is killed): every service it started — nginx's master and its
workers, each redis-server (the restarted one too), the three processes —
is stopped (SIGTERM, then SIGKILL after a while) and reaped, on a failure
midway too; then no process it recorded is left alive, nothing it started
was orphaned, and every port it used (nginx's, Redis's, each process's)
can be bound again.

    tests/scale_out.py --reference target/release/examples/reference

The reference example must be built with `--features redis`. Needs
redis-server and nginx on PATH (Debian: apt-get install -y redis-server
nginx): without them the test fails, it never skips. To look into a
failure: SERVER_LOG=debug sets the processes' log level (default warn),
and KEEP_WORK=1 keeps the work folder (their logs, nginx's access log).
"""

import argparse
import http.client
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

LAST_WRITE = "mcp://clawmcp/examples/resources/last-write.txt"
PATIENCE = 10.0  # a hang guard, never a performance bound
STOP_PATIENCE = 5.0  # how long a service gets to stop before SIGKILL
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}
KEYS = ",".join(["11" * 32, "22" * 32])
NGINX_SOURCE = "127.0.0.2"  # nginx's address towards the servers, which trust it
CLIENT_SOURCE = "127.0.0.3"  # a client's own address, which nginx forwards for
TASK_META = dict(META, **{"io.modelcontextprotocol/clientCapabilities": {
    "elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}})
SOCKETS = []  # the test's raw connections (streams), closed at the end


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, what):
    deadline = time.time() + PATIENCE
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"FAIL: {what} did not start on port {port}")


def check(ok, what):
    if not ok:
        raise SystemExit(f"FAIL: {what}")
    print(f"ok: {what}")


def plural(n, what):
    return f"{n} {what}{'s' if n != 1 else ''}"


def proc_stat(pid):
    """A process's (state, parent pid, start time) from /proc/<pid>/stat;
    None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(")") + 2:].split()  # after "pid (comm) "
    return fields[0], int(fields[1]), int(fields[19])


def proc_name(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip() or "?"
    except OSError:
        return "?"


def children_of(pid):
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = proc_stat(int(entry))
            if stat is not None and stat[1] == pid:
                kids.append(int(entry))
    return kids


def alive(pid, start):
    """Is the process recorded as (pid, start time) still running? A zombie
    is not; a pid reused by another process (another start time) is not."""
    stat = proc_stat(pid)
    return stat is not None and stat[0] not in "ZXx" and (start is None or stat[2] == start)


def kill_and_reap(pid):
    """SIGKILL a process; reap it if it is (or became, orphaned) our child."""
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    deadline = time.time() + STOP_PATIENCE
    while time.time() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        except ChildProcessError:
            return  # not ours: its parent reaps it
        time.sleep(0.02)


def become_subreaper():
    """Be the child subreaper (Linux): a descendant orphaned while the test
    runs (an nginx worker whose master died) becomes our child, so it can be
    found and reaped instead of living on under init."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def port_holders(port):
    """Who holds a loopback TCP port: (pid, its name, socket state) each."""
    inodes = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.readlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if int(cols[1].rsplit(":", 1)[1], 16) == port:
                inodes[cols[9]] = {"0A": "LISTEN", "06": "TIME_WAIT"}.get(cols[3], cols[3])
    holders = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{entry}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:[") and link[8:-1] in inodes:
                holders.append((int(entry), proc_name(int(entry)), inodes[link[8:-1]]))
    return holders


def proc_comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


def port_free(port):
    """Can the port be bound again? SO_REUSEADDR so that the TIME_WAIT
    leftovers of closed connections do not count; on Linux a socket still
    listening on the port does."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


SHIPPED_NGINX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                             "examples", "scale-out", "nginx.conf")


def shipped_nginx_parts():
    """The shipped nginx config's `location /mcp` body and its
    `limit_conn_zone` lines, which the test's config embeds."""
    with open(SHIPPED_NGINX) as f:
        text = f.read()
    found = re.search(r"location /mcp \{\n(.*?)\n\s*\}", text, re.S)
    if not found:
        raise SystemExit(f"FAIL: no `location /mcp` block in {SHIPPED_NGINX}")
    location = found.group(1)
    zones = "\n".join(line for line in text.splitlines() if "limit_conn_zone" in line)
    for needed in ("proxy_bind " + NGINX_SOURCE, "$proxy_add_x_forwarded_for", "limit_conn "):
        if needed not in location:
            raise SystemExit(f"FAIL: the shipped nginx config's location lacks {needed!r}")
    return location, zones


class Deployment:
    def __init__(self, reference, work):
        self.reference = reference
        self.work = work
        self.redis_port = free_port()
        self.ports = [free_port() for _ in range(3)]
        self.nginx_port = free_port()
        self.redis = None
        self.redises = []  # every redis-server started, the restarted one too
        self.servers = []
        self.nginx = None
        self.extra_args = []
        self.logs = []
        self.started = []  # (what, pid, start time) of every process started
        self.workers = set()  # nginx's worker pids, as recorded

    def track(self, what, pid):
        if any(p == pid for _, p, _ in self.started):
            return
        stat = proc_stat(pid)
        self.started.append((what, pid, stat[2] if stat else None))

    def start_redis(self):
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self.work],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.redises.append(self.redis)
        self.track("redis-server", self.redis.pid)
        wait_port(self.redis_port, "redis-server")

    def stop_redis(self):
        self.redis.kill()
        self.redis.wait()

    def start_servers(self):
        env = dict(os.environ, CLAWMCP_REQUEST_STATE_KEYS=KEYS, RUST_LOG=os.environ.get("SERVER_LOG", "warn"))
        for i, port in enumerate(self.ports):
            root = os.path.join(self.work, f"root{i}")
            os.makedirs(root, exist_ok=True)
            log = open(os.path.join(self.work, f"server{i}.log"), "wb")
            self.logs.append(log)
            self.servers.append(subprocess.Popen(
                [self.reference, "--http", f"127.0.0.1:{port}", "--root", root,
                 "--redis", f"redis://127.0.0.1:{self.redis_port}/",
                 "--trust-proxy", NGINX_SOURCE, *self.extra_args],
                stdout=subprocess.DEVNULL, stderr=log, env=env))
            self.track(f"reference server :{port}", self.servers[-1].pid)
        for port in self.ports:
            wait_port(port, "a reference server")

    def start_nginx(self):
        """nginx with the shipped config's `location /mcp` block and its
        per-client connection zone (examples/scale-out/nginx.conf), so that
        what the README hands out is what runs here; the upstreams, ports,
        paths and logs are this test's."""
        d = self.work
        upstreams = "\n".join(f"    server 127.0.0.1:{p} max_fails=1 fail_timeout=2s;"
                              for p in self.ports)
        location, zones = shipped_nginx_parts()
        conf = f"""
worker_processes 1;
error_log {d}/nginx-error.log warn;
pid {d}/nginx.pid;
daemon off;
events {{ worker_connections 1024; }}
http {{
  log_format up '$upstream_addr $request_method $status';
  access_log {d}/access.log up;
  client_body_temp_path {d}/body;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
{zones}
  upstream mcp {{
{upstreams}
    keepalive 16;
  }}
  server {{
    listen 127.0.0.1:{self.nginx_port};
    location /mcp {{
{location}
      proxy_next_upstream error timeout;
      add_header X-Upstream $upstream_addr always;
    }}
  }}
}}
"""
        path = os.path.join(d, "nginx.conf")
        with open(path, "w") as f:
            f.write(conf)
        # `daemon off;`: the master stays our child (its pid is the Popen's).
        self.nginx = subprocess.Popen(["nginx", "-p", d, "-c", path],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.track("nginx master", self.nginx.pid)
        wait_port(self.nginx_port, "nginx")
        self.record_workers()

    def record_workers(self):
        """nginx's workers are the master's children; recorded while the
        master lives (once it is gone they would be reparented)."""
        if self.nginx is not None and self.nginx.poll() is None:
            for pid in children_of(self.nginx.pid):
                self.workers.add(pid)
                self.track("nginx worker", pid)

    def stop_nginx(self):
        master = self.nginx
        if master is None:
            return
        self.record_workers()
        if master.poll() is None:
            # SIGTERM, nginx's fast shutdown: the master stops its workers,
            # reaps them, removes its pid file, exits. Not SIGQUIT (`-s
            # quit`): that waits for requests in flight, and the test holds
            # streams open for up to proxy_read_timeout.
            master.send_signal(signal.SIGTERM)
            try:
                master.wait(timeout=STOP_PATIENCE)
            except subprocess.TimeoutExpired:
                print(f"note: nginx did not stop in {STOP_PATIENCE}s on SIGTERM: killed")
                self.record_workers()
                master.kill()  # first, so that it respawns no worker
                master.wait()
                for pid in self.workers:
                    kill_and_reap(pid)
        master.wait()

    def stop_popens(self, procs, what):
        """SIGTERM each one still running, wait, SIGKILL the slow; reap all."""
        for p in procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.time() + STOP_PATIENCE
        for p in procs:
            try:
                p.wait(timeout=max(0.0, deadline - time.time()))
            except subprocess.TimeoutExpired:
                print(f"note: {what} (pid {p.pid}) did not stop in {STOP_PATIENCE}s "
                      "on SIGTERM: killed")
                p.kill()
                p.wait()

    def stop(self):
        """Stop every service started, with all its workers, reap them, and
        check nothing of it is left: a recorded process alive, an orphan of
        ours, a port still taken. Leftovers are killed, then named in a
        SystemExit. Each step runs even if one before it failed."""
        problems = []
        for sock in SOCKETS:  # shutdown: a stream's reader thread holds a file on it
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        for step in (self.stop_nginx,
                     lambda: self.stop_popens(self.servers, "a reference server"),
                     lambda: self.stop_popens(self.redises, "redis-server")):
            try:
                step()
            except Exception as e:  # the other steps still run
                problems.append(f"a stop step failed: {e!r}")
        for log in self.logs:
            log.close()

        deadline = time.time() + STOP_PATIENCE
        left = list(self.started)
        while True:
            left = [t for t in left if alive(t[1], t[2])]
            if not left or time.time() > deadline:
                break
            time.sleep(0.05)
        for what, pid, _ in left:
            problems.append(f"{what} (pid {pid}) still runs")
            kill_and_reap(pid)
        # Every Popen is reaped now: any child left is an orphaned descendant
        # (we are the subreaper) — alive or a zombie, it is reaped here.
        for pid in children_of(os.getpid()):
            stat = proc_stat(pid)
            if stat is not None and stat[0] not in "ZXx":
                problems.append(f"{proc_name(pid)!r} (pid {pid}) was orphaned and still runs")
            kill_and_reap(pid)

        ports = [("nginx", self.nginx_port), ("redis-server", self.redis_port)]
        ports += [("a reference server", p) for p in self.ports]
        deadline = time.time() + STOP_PATIENCE
        for what, port in ports:
            while not port_free(port) and time.time() < deadline:
                time.sleep(0.05)
            if not port_free(port):
                holders = port_holders(port)
                problems.append(f"port {port} ({what}) is still taken: " + (", ".join(
                    f"pid {pid} {name!r} ({state})" for pid, name, state in holders)
                    or "by no process"))
                # One of our services' programs listening there: a leftover
                # of ours that escaped the records (killed, so nothing leaks).
                ours = {"nginx", "redis-server", os.path.basename(self.reference)[:15]}
                for pid, _, state in holders:
                    if state == "LISTEN" and proc_comm(pid) in ours:
                        kill_and_reap(pid)
        if problems:
            raise SystemExit("FAIL: the test left something behind: " + "; ".join(problems))
        started = [plural(len(self.redises), "redis-server"), plural(len(self.servers), "server")]
        if self.nginx is not None:
            started.insert(0, f"nginx master and {plural(len(self.workers), 'worker')}")
        print(f"ok: every service the test started is stopped ({', '.join(started)}); "
              "their ports are free")


def post(port, body, headers=None, v1=False, json_reply=True, source=None):
    """One POST /mcp (from the loopback address `source`, if given); the
    parsed JSON reply (or the first SSE message). An MCP v1.0 request sends
    no `Accept` (the Model Context Protocol's `text/event-stream` would
    name that dialect)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=PATIENCE,
                                      source_address=(source, 0) if source else None)
    h = {"Content-Type": "application/json"}
    if not v1:
        h["Accept"] = "application/json, text/event-stream"
    h.update(headers or {})
    conn.request("POST", "/mcp", json.dumps(body), h)
    resp = conn.getresponse()
    data = resp.read().decode()
    conn.close()
    if resp.getheader("Content-Type", "").startswith("text/event-stream"):
        for line in data.splitlines():
            if line.startswith("data:"):
                message = json.loads(line[5:])
                if "id" in message and "method" not in message:
                    return resp, message
        return resp, None
    try:
        return resp, (json.loads(data) if data else None)
    except ValueError:
        if not json_reply:
            return resp, data
        raise SystemExit(f"FAIL: HTTP {resp.status} from :{port}: {data[:200]!r}")


def stateless_headers(method, name=None):
    h = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    if name:
        h["Mcp-Name"] = name
    return h


def task_call(port, tool, arguments, rid=50, headers=None, source=None):
    """A tools/call that declares the tasks extension: (upstream, task id)."""
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": TASK_META}}
    resp, reply = post(port, body, {**stateless_headers("tools/call", tool), **(headers or {})},
                       source=source)
    result = (reply or {}).get("result", {})
    check(result.get("resultType") == "task" and result.get("taskId"),
          f"a {tool} call on :{port} gets a task ({reply})")
    return resp.getheader("X-Upstream"), result["taskId"]


def task_request(port, method, task_id, extra=None, rid=60):
    params = dict({"taskId": task_id, "_meta": TASK_META}, **(extra or {}))
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    _, reply = post(port, body, stateless_headers(method, task_id))
    return reply


def task_until(port, task_id, pred, what, patience=PATIENCE):
    """Polls tasks/get on :port until pred(task) holds; the task."""
    deadline = time.time() + patience
    while True:
        reply = task_request(port, "tasks/get", task_id)
        task = (reply or {}).get("result")
        if task is not None and pred(task):
            return task
        if time.time() >= deadline:
            raise SystemExit(f"FAIL: {what} (last: {reply})")
        time.sleep(0.1)


def stored_task(redis_port, task_id):
    """A task as Redis holds it (its JSON's `task`), read with redis-cli, or None."""
    keys = subprocess.run(["redis-cli", "-p", str(redis_port), "--scan", "--pattern",
                           f"*:task:{task_id}"], capture_output=True, text=True,
                          timeout=PATIENCE).stdout.split()
    if not keys:
        return None
    text = subprocess.run(["redis-cli", "-p", str(redis_port), "GET", keys[0]],
                          capture_output=True, text=True, timeout=PATIENCE).stdout
    return json.loads(text)["task"] if text.strip() else None


def write(port, content, rid=1):
    """A file-writer call as a 2026-07-28 request: sets last-write."""
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "file-writer",
                       "arguments": {"path": "note.txt", "content": content},
                       "_meta": META}}
    resp, reply = post(port, body, stateless_headers("tools/call", "file-writer"))
    check(resp.status == 200 and reply and "result" in reply
          and not reply["result"].get("isError"), f"a write of {content!r} on :{port}")


def read_last_write(port):
    body = {"jsonrpc": "2.0", "id": 9, "method": "resources/read",
            "params": {"uri": LAST_WRITE, "_meta": META}}
    _, reply = post(port, body, stateless_headers("resources/read", LAST_WRITE))
    return reply["result"]["contents"][0]["text"]


class Stream:
    """A long response read on a thread: each JSON message (a line, or an
    SSE data line) goes to a queue."""

    def __init__(self, sock_file):
        self.messages = queue.Queue()
        self.file = sock_file
        self.head = []  # the response's head lines
        self.head_read = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def status(self):
        """The response's status code (0 when there was no head)."""
        self.head_read.wait(PATIENCE)
        parts = self.head[0].split() if self.head else []
        return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0

    def header(self, name):
        self.head_read.wait(PATIENCE)
        for line in self.head:
            key, _, value = line.partition(":")
            if key.strip().lower() == name.lower():
                return value.strip()
        return None

    def _read(self):
        try:
            for raw in self.file:
                line = raw.decode(errors="replace").strip()
                if not self.head_read.is_set():
                    if line:
                        self.head.append(line)
                    else:
                        self.head_read.set()
                    continue
                if line.startswith("data:"):
                    line = line[5:].strip()
                if line.startswith("{"):
                    try:
                        self.messages.put(json.loads(line))
                    except ValueError:
                        pass
        except (OSError, ValueError):
            pass
        self.head_read.set()
        self.messages.put(None)

    def wait_for(self, pred, what, patience=PATIENCE):
        deadline = time.time() + patience
        while True:
            left = deadline - time.time()
            if left <= 0:
                raise SystemExit(f"FAIL: {what}: nothing arrived in {patience}s")
            try:
                message = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            if message is None:
                raise SystemExit(f"FAIL: {what}: the stream ended")
            if pred(message):
                print(f"ok: {what}")
                return message

    def drain(self):
        while not self.messages.empty():
            self.messages.get_nowait()


def raw_request(port, head, first_body=b"", chunked=False):
    """A raw HTTP/1.1 request on a socket; its response as a Stream (the
    response's chunk-size lines are not JSON, so they are skipped)."""
    sock = socket.create_connection(("127.0.0.1", port), PATIENCE)
    SOCKETS.append(sock)
    sock.settimeout(None)
    sock.sendall(head + first_body)
    return sock, Stream(sock.makefile("rb"))


def v1_stream(port):
    """An MCP v1.0 streaming session (docs: §8.7), handshake done."""
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    lines = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": {"clientCapabilities": {}}}) + "\n"
             + json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}) + "\n"
             + json.dumps({"jsonrpc": "2.0", "id": 2, "method": "mcp/listTools"}) + "\n").encode()
    chunk = b"%x\r\n" % len(lines) + lines + b"\r\n"
    sock, stream = raw_request(port, head, chunk)
    stream.wait_for(lambda m: m.get("id") == 2, "the v1.0 session is ready")
    return sock, stream


def listen_stream(port, notifications=None, meta=None):
    """A 2026-07-28 subscriptions/listen (by default for last-write)."""
    notifications = notifications or {"resourceSubscriptions": [LAST_WRITE]}
    body = json.dumps({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
                       "params": {"_meta": meta or META,
                                  "notifications": notifications}}).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    sock, stream = raw_request(port, head, body)
    ack = stream.wait_for(lambda m: m.get("method") == "notifications/subscriptions/acknowledged",
                          "the listen stream is acknowledged")
    stream.acknowledged = ack
    return sock, stream


def session_stream(port):
    """A 2025-11-25 session subscribed to last-write, with its GET stream."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "scale-out", "version": "1"}}}
    resp, _ = post(port, init)
    sid = resp.getheader("Mcp-Session-Id")
    check(resp.status == 200 and sid, "a 2025-11-25 session is created")
    h = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
    post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, h)
    resp, reply = post(port, {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
                              "params": {"uri": LAST_WRITE}}, h)
    check(reply and "result" in reply, "the session subscribes to last-write")
    head = (f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
            f"Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n").encode()
    sock, stream = raw_request(port, head)
    time.sleep(0.2)  # the GET stream is registered once its head is read
    return sock, stream


def get_head(port, sid):
    """A session's GET stream request."""
    return (f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
            f"Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n").encode()


def updated_on_stream(m):
    return (m.get("method") in ("notifications/resources/updated", "mcp/resourceDidChange")
            and (m.get("params", {}).get("uri") == LAST_WRITE
                 or m.get("params", {}).get("mcpId") == LAST_WRITE))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reference", required=True)
    args = parser.parse_args()
    for tool in ("redis-server", "nginx"):
        if shutil.which(tool) is None:
            raise SystemExit(f"FAIL: {tool} is not on PATH "
                             "(Debian: apt-get install -y redis-server nginx)")
    # A CI timeout's SIGTERM unwinds like a failure: the cleanup runs.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("FAIL: scale-out was terminated (SIGTERM)"))
    become_subreaper()
    work = tempfile.mkdtemp(prefix="clawmcp-scale-out-")
    d = Deployment(os.path.abspath(args.reference), work)
    failure = None
    try:
        d.start_redis()
        d.start_servers()
        d.start_nginx()
        a, b, c = d.ports

        # 1. Spread: single exchanges and 2026-07-28 requests through nginx.
        for i in range(12):
            resp, reply = post(d.nginx_port, {"jsonrpc": "2.0", "id": i, "method": "mcp/listTools"},
                               v1=True)
            if resp.status != 200 or "result" not in reply:
                raise SystemExit(f"FAIL: a v1.0 single exchange through nginx: {reply}")
            resp, reply = post(d.nginx_port,
                               {"jsonrpc": "2.0", "id": i, "method": "tools/list",
                                "params": {"_meta": META}}, stateless_headers("tools/list"))
            if resp.status != 200 or "result" not in reply:
                raise SystemExit(f"FAIL: a 2026-07-28 tools/list through nginx: {reply}")
        time.sleep(0.2)
        with open(os.path.join(work, "access.log")) as f:
            served = {line.split()[0] for line in f if line.strip()}
        check(served >= {f"127.0.0.1:{p}" for p in d.ports},
              f"requests through nginx reached all three processes ({sorted(served)})")

        # 2. Streams on process A hear of a change made on B (and C).
        _, v1 = v1_stream(a)
        _, listen = listen_stream(a)
        _, session = session_stream(a)
        write(b, "from B")
        v1.wait_for(updated_on_stream, "the v1.0 stream on A hears of B's write")
        listen.wait_for(lambda m: updated_on_stream(m) and m["params"]["_meta"].get(
            "io.modelcontextprotocol/subscriptionId") == "L",
            "the listen stream on A hears of B's write, tagged")
        session.wait_for(updated_on_stream, "the 2025-11-25 GET stream on A hears of B's write")
        deadline = time.time() + PATIENCE
        while time.time() < deadline and any(read_last_write(p) != "from B" for p in d.ports):
            time.sleep(0.05)
        check(all(read_last_write(p) == "from B" for p in d.ports),
              "last-write reads the same on every process")
        listen.drain()
        write(b, "from B")
        listen.wait_for(updated_on_stream, "a write of the same content is announced on A too")
        # A 2026-07-28 retry needs the shared keys: the sealed state of a
        # round opened on one process is accepted by another (ask tool).
        ask = {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
               "params": {"name": "ask", "arguments": {"question": "Go on?"},
                          "_meta": dict(META, **{"io.modelcontextprotocol/clientCapabilities":
                                                 {"elicitation": {}}})}}
        _, first = post(b, ask, stateless_headers("tools/call", "ask"))
        state = first["result"].get("requestState")
        check(first["result"].get("resultType") == "input_required" and state,
              "the ask tool's first round on B asks for input")
        key = next(iter(first["result"]["inputRequests"]))
        ask["params"]["inputResponses"] = {key: {"action": "accept", "content": {"yes": True}}}
        ask["params"]["requestState"] = state
        _, second = post(c, ask, stateless_headers("tools/call", "ask"))
        check(second and second.get("result", {}).get("resultType") == "complete",
              f"its retry is served by C ({second})")

        # 2b. Tasks: created through nginx, read, answered and cancelled on
        # other processes than the one that runs them.
        # From a client address of its own, with a hop it wrote itself.
        upstream, sleeping = task_call(d.nginx_port, "sleep", {"ms": 60000},
                                       headers={"X-Forwarded-For": "203.0.113.1"},
                                       source=CLIENT_SOURCE)
        runner = int(upstream.rsplit(":", 1)[1])
        others = [p for p in d.ports if p != runner]
        for p in d.ports:
            task_until(p, sleeping, lambda t: t["status"] == "working",
                       f"the sleep task reads as working on :{p}")
        print(f"ok: a task running on :{runner} reads as working on every process")
        # Without a token a task counts against its client's address: the
        # one nginx, a trusted proxy, forwarded for (not nginx's, nor the
        # hop the client wrote), in one set in Redis that every process reads.
        stored = stored_task(d.redis_port, sleeping)
        counted = (stored or {}).get("counted_as")
        check(counted == f"peer {CLIENT_SOURCE}",
              f"the task counts against the address nginx forwarded for ({stored})")
        sets = subprocess.run(["redis-cli", "-p", str(d.redis_port), "--scan", "--pattern",
                               "*:tasks-of:" + (counted or "").encode().hex()],
                              capture_output=True, text=True, timeout=PATIENCE).stdout.split()
        member = subprocess.run(["redis-cli", "-p", str(d.redis_port), "ZSCORE",
                                 (sets or [""])[0], sleeping],
                                capture_output=True, text=True, timeout=PATIENCE).stdout.strip()
        check(len(sets) == 1 and member == "inf",
              f"the running task is in its peer's set in Redis ({sets}, score {member!r})")
        upstream, asking = task_call(d.nginx_port, "ask", {"question": "Ship it?"})
        asker = int(upstream.rsplit(":", 1)[1])
        elsewhere = [p for p in d.ports if p != asker]
        waiting = task_until(elsewhere[0], asking, lambda t: t["status"] == "input_required",
                             "the ask task waits for input, seen from another process")
        # A listen stream on a third process watches it (notifications/tasks).
        _, watching = listen_stream(elsewhere[1], {"taskIds": [asking]}, TASK_META)
        agreed = watching.acknowledged["params"]["notifications"].get("taskIds")
        check(agreed == [asking], f"the stream on :{elsewhere[1]} agrees to watch it ({agreed})")
        watching.wait_for(lambda m: m.get("method") == "notifications/tasks"
                          and m["params"].get("status") == "input_required",
                          "the stream hears its state: input_required")
        key = next(iter(waiting["inputRequests"]))
        ack = task_request(elsewhere[0], "tasks/update", asking, {"inputResponses": {
            key: {"action": "accept", "content": {"yes": True}}}})
        check(ack and ack.get("result", {}).get("resultType") == "complete",
              f"tasks/update is acknowledged on :{elsewhere[0]} ({ack})")
        done = task_until(elsewhere[1], asking, lambda t: t["status"] == "completed",
                          "the answered task completes, seen from a third process")
        check(done["result"]["structuredContent"]["yes"] is True,
              f"the answer from another process reached the running call ({done})")
        heard = watching.wait_for(lambda m: m.get("method") == "notifications/tasks"
                                  and m["params"].get("status") == "completed",
                                  "the stream hears it complete, saved by another process")
        check(heard["params"].get("result", {}).get("structuredContent") ==
              done["result"]["structuredContent"],
              "the notification carries the task as tasks/get shows it")
        print(f"ok: a task on :{asker} answered through :{elsewhere[0]} completes")
        ack = task_request(others[0], "tasks/cancel", sleeping)
        check(ack and ack.get("result", {}).get("resultType") == "complete",
              f"tasks/cancel is acknowledged on :{others[0]} ({ack})")
        task_until(others[1], sleeping, lambda t: t["status"] == "cancelled",
                   "the task cancelled through another process ends cancelled")
        print(f"ok: a task on :{runner} cancelled through :{others[0]} ends cancelled")

        # 3. Redis down: requests go on; back: the gap is told, pushes resume.
        d.stop_redis()
        started = time.time()
        write(b, "while Redis is down")
        write(a, "on A while Redis is down")
        check(time.time() - started < PATIENCE, "writes do not wait for Redis")
        listen.wait_for(updated_on_stream, "A's own write reaches A's stream without Redis")
        d.start_redis()
        listen.drain()
        v1.drain()
        listen.wait_for(updated_on_stream,
                        "after Redis is back, A's listen stream hears of the gap", patience=15)
        time.sleep(0.5)
        listen.drain()
        v1.drain()
        write(c, "from C after the restart")
        listen.wait_for(updated_on_stream, "a write on C reaches A's listen stream again")
        v1.wait_for(updated_on_stream, "a write on C reaches A's v1.0 stream again")

        # 4. A 2025-11-25 session through nginx, round robin: no affinity.
        with open(os.path.join(work, "access.log")) as f:
            seen = len(f.readlines())
        n = d.nginx_port
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                           "clientInfo": {"name": "scale-out", "version": "1"}}}
        resp, _ = post(n, init)
        sid = resp.getheader("Mcp-Session-Id")
        check(resp.status == 200 and sid, "a session is created through nginx")
        h = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
        resp, _ = post(n, {"jsonrpc": "2.0", "method": "notifications/initialized"}, h)
        check(resp.status == 202, f"its initialized is taken ({resp.status})")
        for i in range(4):
            resp, reply = post(n, {"jsonrpc": "2.0", "id": 10 + i, "method": "tools/list"}, h)
            check(resp.status == 200 and "result" in reply, f"its tools/list {i} is served")
        resp, reply = post(n, {"jsonrpc": "2.0", "id": 20, "method": "resources/subscribe",
                               "params": {"uri": LAST_WRITE}}, h)
        check(reply and "result" in reply, "it subscribes to last-write through nginx")
        _, get_stream = raw_request(n, get_head(n, sid))
        time.sleep(0.3)
        write(a, "for the roaming session")
        get_stream.wait_for(updated_on_stream, "its GET stream hears of a write")
        # An elicitation answered through another process than the tool's
        # (round robin sends the answer elsewhere; tried until it does).
        crossed = False
        for attempt in range(4):
            call = json.dumps({"jsonrpc": "2.0", "id": 30 + attempt, "method": "tools/call",
                               "params": {"name": "ask",
                                          "arguments": {"question": "Go on?"}}}).encode()
            head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{n}\r\n"
                    "Content-Type: application/json\r\n"
                    "Accept: application/json, text/event-stream\r\n"
                    f"Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
                    f"Content-Length: {len(call)}\r\n\r\n").encode()
            _, asking = raw_request(n, head, call)
            question = asking.wait_for(lambda m: m.get("method") == "elicitation/create",
                                       "the ask tool's elicitation arrives")
            answer = {"jsonrpc": "2.0", "id": question["id"],
                      "result": {"action": "accept", "content": {"yes": True}}}
            resp, _ = post(n, answer, h)
            check(resp.status == 202, f"the answer is taken ({resp.status})")
            result = asking.wait_for(lambda m, i=30 + attempt: m.get("id") == i,
                                     "the tool call ends")
            check(result.get("result", {}).get("structuredContent", {}).get("yes") is True,
                  f"the answer reached the waiting tool ({result})")
            tool_at, answer_at = asking.header("X-Upstream"), resp.getheader("X-Upstream")
            if tool_at and answer_at and tool_at != answer_at:
                crossed = True
                break
        check(crossed, "an answer POSTed to another process reached the tool")
        with open(os.path.join(work, "access.log")) as f:
            lines = f.readlines()[seen:]
        session_upstreams = {line.split()[0] for line in lines if line.strip()}
        check(session_upstreams >= {f"127.0.0.1:{p}" for p in d.ports},
              f"the session was served by all three processes ({sorted(session_upstreams)})")
        get_upstream = get_stream.header("X-Upstream")
        check(get_upstream is not None, f"nginx names the GET stream's process ({get_upstream})")
        holder = d.ports.index(int(get_upstream.rsplit(":", 1)[1]))
        # One GET stream per session in the whole deployment: a second one,
        # on any other process, is refused (409 with Retry-After).
        for i, p in enumerate(d.ports):
            if i != holder:
                _, second = raw_request(p, get_head(p, sid))
                check(second.status() == 409 and second.header("Retry-After"),
                      f"a second GET stream on :{p} is refused with 409 ({second.status()})")

        # 5. The process holding the GET stream dies: the stream ends, the
        # session goes on elsewhere, everything else too.
        d.servers[holder].kill()
        d.servers[holder].wait()
        deadline = time.time() + PATIENCE
        ended = False
        while time.time() < deadline and not ended:
            try:
                ended = get_stream.messages.get(timeout=0.2) is None
            except queue.Empty:
                pass
        check(ended, "the GET stream ends with its process")
        # The dead holder's claim lapses with its liveness key (5 s): until
        # then a new GET is 409, then one takes over (allowed 30 s on a
        # loaded machine).
        died, deadline = time.time(), time.time() + 30
        while True:
            _, get_stream = raw_request(n, get_head(n, sid))
            status = get_stream.status()
            if status == 200:
                break
            if status != 409 or time.time() >= deadline:
                raise SystemExit("FAIL: a new GET stream waits for the dead holder's claim "
                                 f"to lapse, refused with 409 meanwhile ({status})")
            time.sleep(0.5)
        print(f"ok: a new GET stream takes over {time.time() - died:.1f}s after its holder died")
        time.sleep(0.3)
        alive = [p for i, p in enumerate(d.ports) if i != holder]
        write(alive[0], "after the holder died")
        get_stream.wait_for(updated_on_stream, "a new GET stream on another process hears of writes")
        resp, reply = post(n, {"jsonrpc": "2.0", "id": 40, "method": "tools/list"}, h)
        check(resp.status == 200 and "result" in reply, "the session goes on")
        started = time.time()
        resp, _ = post(n, {"jsonrpc": "2.0", "id": 41, "method": "tools/list"},
                       {"Mcp-Session-Id": "0" * 32, "MCP-Protocol-Version": "2025-11-25"},
                       json_reply=False)
        check(resp.status == 404 and time.time() - started < PATIENCE,
              f"a session no process knows gets a clean 404 ({resp.status})")

        # 6. Everything else goes on. A process stopped (SIGSTOP) past its
        # liveness has its task failed by another; resumed, it does not
        # bring it back: an ended task stays as it ended.
        dying = next(i for i, p in enumerate(d.servers) if p.poll() is None)
        last = next(i for i, p in enumerate(d.servers) if p.poll() is None and i != dying)
        _, paused = task_call(d.ports[dying], "sleep", {"ms": 2000}, rid=71)
        os.kill(d.servers[dying].pid, signal.SIGSTOP)
        try:
            failed = task_until(d.ports[last], paused, lambda t: t["status"] != "working",
                                "a stopped process's task is failed by another", patience=10)
        finally:
            os.kill(d.servers[dying].pid, signal.SIGCONT)
        check(failed["status"] == "failed", f"the stopped process's task is failed ({failed})")
        time.sleep(3)  # its sleep ended meanwhile, and its runner tried to save
        kept = task_request(d.ports[last], "tasks/get", paused)["result"]
        check(kept["status"] == "failed" and kept["lastUpdatedAt"] == failed["lastUpdatedAt"],
              f"resumed, its process does not bring the ended task back ({kept})")
        # A second process dies with tasks running: the task fails, seen
        # from the last one, within 10 s; a task nobody reads fails too.
        _, orphan = task_call(d.ports[dying], "sleep", {"ms": 60000}, rid=70)
        _, unread = task_call(d.ports[dying], "sleep", {"ms": 60000}, rid=72)
        # A listen stream on the last process watches it, and nothing polls.
        _, watching = listen_stream(d.ports[last], {"taskIds": [orphan]}, TASK_META)
        watching.wait_for(lambda m: m.get("method") == "notifications/tasks"
                          and m["params"].get("status") == "working",
                          "a stream on the last process watches the task: working")
        d.servers[dying].kill()
        d.servers[dying].wait()
        died = time.time()
        heard = watching.wait_for(lambda m: m.get("method") == "notifications/tasks"
                                  and m["params"].get("status") != "working",
                                  "the stream hears the dead process's task end", patience=10)
        check(heard["params"]["status"] == "failed",
              f"it hears it failed, unasked, {time.time() - died:.1f}s after the death ({heard})")
        failed = task_until(d.ports[last], orphan, lambda t: t["status"] != "working",
                            "a task whose process died stops reading as working", patience=10)
        check(failed["status"] == "failed" and failed.get("error", {}).get("code") == -32603,
              f"it is failed with a JSON-RPC error ({failed})")
        print(f"ok: a task whose process died reads as failed {time.time() - died:.1f}s later")
        deadline = died + 10
        while (stored_task(d.redis_port, unread) or {}).get("status") != "failed":
            if time.time() >= deadline:
                raise SystemExit("FAIL: a dead process's task that nobody reads is failed "
                                 f"within 10 s ({stored_task(d.redis_port, unread)})")
            time.sleep(0.2)
        print(f"ok: a dead process's task nobody read is failed in Redis "
              f"{time.time() - died:.1f}s after the death (it expires, freeing its place in the bound)")
        for i in range(9):
            resp, reply = post(d.nginx_port, {"jsonrpc": "2.0", "id": 100 + i,
                                              "method": "tools/list", "params": {"_meta": META}},
                               stateless_headers("tools/list"))
            if resp.status != 200 or "result" not in reply:
                raise SystemExit(f"FAIL: with C dead, a request through nginx got {resp.status}")
        print("ok: with processes dead, requests through nginx go on")
        survivor = next(i for i, p in enumerate(d.servers) if p.poll() is None)
        write(d.ports[survivor], "with processes dead")
        print("ok: the surviving process serves writes")
    except BaseException as e:
        failure = e
        raise
    finally:
        # On a failure midway too. A cleanup failure then is printed, and
        # the first failure's message stays the one the test ends with.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one: the cleanup goes on
        try:
            d.stop()
        except BaseException as e:
            if failure is None:
                raise
            message = str(e)
            if message.startswith("FAIL: "):
                message = message[len("FAIL: "):]
            print(f"FAIL in the cleanup, after the failure below: {message}", file=sys.stderr,
                  flush=True)
        finally:
            if os.environ.get("KEEP_WORK"):
                print(f"kept: {work}")
            else:
                shutil.rmtree(work, ignore_errors=True)
    print("PASS: scale-out")


if __name__ == "__main__":
    main()
