#!/usr/bin/env python3
"""The traces of docs/architecture.md §4 against what the code runs.

tests/architecture_traces.rs holds the document to itself (each step's
function exists in its file, the totals add up). This holds it to the
program: each of the three requests is sent to the reference example (a
debug build with default features, so that nothing is inlined but what
says `#[inline(always)]`) running under callgrind, with instrumentation on
for that request alone, after one like it warmed the server. Then:

- every function a trace counts ran (or is `#[inline(always)]`, which
  callgrind cannot see);
- every function of the crate that ran is named in the trace (counted or
  named where it runs), or in §4's preamble, or is of a kind the counting
  rule leaves out without naming: what the scanner helpers call in
  `src/fast/`, derived and pin-projection impls (`clone`, `eq`,
  `default`, `project`...).

Usage: trace_check.py REFERENCE_BINARY [--keep DIR]
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
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "architecture.md")

# Methods the counting rule leaves out without naming them: derived
# traits, `Deref`, and pin-project's projections.
UNNAMED_METHODS = {"clone", "eq", "ne", "default", "fmt", "hash", "deref", "project"}

# Modules whose insides §4's preamble leaves out: the scanner helpers'
# (`src/fast/`; a helper the trace counts must still run) and the maps'
# hasher.
HELPERS = ("clawmcp::fast::", "clawmcp::id_hash::")

META26 = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {}}
ECHO_V1 = "mcp://clawmcp/examples/tools/echo:v1"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def callgrind(binary, args, out, **popen):
    return subprocess.Popen(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                             f"--callgrind-out-file={out}", binary, *args], **popen)


def instrumented(proc, send):
    """Runs `send` with callgrind's instrumentation on, and nothing else."""
    time.sleep(0.3)
    subprocess.run(["callgrind_control", "-i", "on", str(proc.pid)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    reply = send()
    time.sleep(0.3)
    subprocess.run(["callgrind_control", "-i", "off", str(proc.pid)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return reply


def run_stdio(binary, out):
    """Trace a: a tools/call in a 2025-11-25 session over stdio."""
    proc = callgrind(binary, [], out, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL)

    def send(message):
        proc.stdin.write((json.dumps(message, separators=(",", ":")) + "\n").encode())
        proc.stdin.flush()

    def call(i):
        send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
              "params": {"name": "echo", "arguments": {"message": "hi"}}})
        return json.loads(proc.stdout.readline())

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "trace_check", "version": "1"}}})
    proc.stdout.readline()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    call(6)
    reply = instrumented(proc, lambda: call(7))
    proc.stdin.close()
    proc.wait(timeout=120)
    return reply


def run_http(binary, out, letter):
    """Trace b (a 2026-07-28 tools/call) or c (an MCP v1.0 single exchange)."""
    port = free_port()
    proc = callgrind(binary, ["--http", f"127.0.0.1:{port}"], out, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

        def call(i):
            if letter == "b":
                body = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
                    "name": "echo", "arguments": {"message": "hi"}, "_meta": META26}}
                headers = {"Content-Type": "application/json",
                           "Accept": "application/json, text/event-stream",
                           "MCP-Protocol-Version": "2026-07-28",
                           "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
            else:
                body = {"jsonrpc": "2.0", "id": i, "method": "mcp/executeTool",
                        "params": {"id": ECHO_V1, "arguments": {"message": "hi"}}}
                headers = {"Content-Type": "application/json", "Accept": "application/json"}
            conn.request("POST", "/mcp", json.dumps(body, separators=(",", ":")), headers)
            response = conn.getresponse()
            return json.loads(response.read())

        call(6)
        reply = instrumented(proc, lambda: call(7))
        conn.close()
        return reply
    finally:
        proc.terminate()
        proc.wait(timeout=120)


def normalised(name):
    """A callgrind function name as `clawmcp::module::Type::function`."""
    name = re.sub(r" \[[^\]]*\]$", "", name)
    name = re.sub(r"'\d+$", "", name)
    name = name.replace("::{{closure}}", "").replace("::_::", "::")
    while True:  # generic arguments (not `<T as Trait>`), innermost first
        shorter = re.sub(r"<(?![^<>]* as )(?!impl )[^<>]*>", "", name)
        if shorter == name:
            break
        name = shorter
    m = re.match(r"^<(\S+) as [^>]*>::(\w+)$", name)
    if m:
        name = f"{m.group(1)}::{m.group(2)}"
    m = re.match(r"^(.*)::<impl (?:\S+ for )?(\S+?)>::(\w+)$", name)
    if m:
        name = f"{m.group(1)}::{m.group(2).split('::')[-1]}::{m.group(3)}"
    return name


def ran_functions(path):
    """The crate's functions that had a cost in a callgrind output."""
    names, ran = {}, set()
    with open(path) as f:
        for line in f:
            m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if not m:
                continue
            if m.group(3):
                names[m.group(2)] = m.group(3)
            if m.group(1) == "fn":
                ran.add(names[m.group(2)])
    return {normalised(n) for n in ran
            if "clawmcp::" in n and not n.startswith("core::ptr::drop_in_place")}


def sections(text):
    """§4's preamble and each trace's text, by letter."""
    start = text.index("## 4. Three requests")
    end = text.index("### Where the steps go")
    section = text[start:end]
    parts = re.split(r"^### ([a-z])\. .*$", section, flags=re.M)
    return parts[0], {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def without_asides(text):
    out, depth = [], 0
    for c in text:
        if c == "(":
            depth += 1
        elif c == ")":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(c)
    return "".join(out)


def counted_steps(letter):
    """(file, name) of each step trace `letter` counts, in order (a range
    with no file is the steps of another trace it refers to)."""
    steps = []
    for line in TRACES[letter].splitlines():
        m = re.match(r"^(\d+)(?:–(\d+))?\. (.*)$", line)
        if not m:
            continue
        names = m.group(3).split(" — ")[0]
        if m.group(2) is None:
            file, name = names.split(": ", 1)
            words = re.findall(r"`([^`]*)`", name)
            steps.append((file, f"{words[0]}::{words[1]}" if "`'s `" in name else words[0]))
            continue
        if ".rs" not in names:
            ref = re.search(r"as ([a-z])\.(\d+)–(\d+)", m.group(3))
            if ref is None:
                sys.exit(f"trace {letter}: {line[:40]}… names no file and refers to no steps")
            first, last = int(ref.group(2)), int(ref.group(3))
            steps += counted_steps(ref.group(1))[first - 1:last]
            continue
        file = None
        for i, part in enumerate(without_asides(names).split("`")):
            if i % 2 == 1 and file:
                steps.append((file, part))
            elif i % 2 == 0:
                paths = [w for w in re.split(r"[ ,;]", part) if w.endswith(".rs")]
                if paths:
                    file = paths[-1]
    return steps


def module_of(file):
    return "clawmcp::" + re.sub(r"/mod$", "", file[:-3]).replace("/", "::")


def inline_always(file, function):
    with open(os.path.join(ROOT, "src", file)) as f:
        source = f.read()
    return re.search(r"#\[inline\(always\)\]\s*(?:pub(?:\([^)]*\))? )?fn "
                     + re.escape(function) + r"\b", source) is not None


def units(text):
    """A text's steps (a line each) and paragraphs."""
    unit = []
    for line in text.splitlines():
        if re.match(r"^\d+(–\d+)?\. ", line) or not line.strip():
            if unit:
                yield " ".join(unit)
            unit = [line] if line.strip() else []
        else:
            unit.append(line)
    if unit:
        yield " ".join(unit)


class Names:
    """What a text names: each backticked path, and each step's or
    paragraph's words."""

    def __init__(self, text):
        self.paths, self.lines = set(), []
        for unit in units(text):
            words = set()
            for token in re.findall(r"`([^`]*)`", unit):
                segments = re.sub(r"\(.*", "", token).split("::")
                words.update(segments)
                self.paths.add("::".join(segments[-2:]))
            self.lines.append(words)

    def names(self, function):
        segments = function.split("::")
        last, owner = segments[-1], segments[-2]
        if f"{owner}::{last}" in self.paths:
            return True
        is_type = owner[:1].isupper() and len(owner) > 1
        if not is_type:
            return last in self.paths
        # `Slot`'s `drop`, (`Work::time_limit`, `may_block`): the type and
        # the function in one step or paragraph.
        return any(last in words and owner in words for words in self.lines)


def check(letter, preamble, ran):
    problems = []
    trace = TRACES[letter]
    steps = counted_steps(letter)
    for file, name in steps:
        # A trait's method is named by its type's module, wherever the
        # impl is; a bare name (`answer` after `McpService::respond_to`) is
        # a function or a method of the file's module.
        module = module_of(file)
        if "::" in name:
            found = any(r.endswith(f"::{name}") for r in ran)
        else:
            found = any(re.fullmatch(re.escape(module) + r"(::[A-Z]\w*)?::" + re.escape(name), r)
                        for r in ran)
        if found:
            continue
        if inline_always(file, name.split("::")[-1]):
            continue
        problems.append(f"trace {letter} counts {file}: `{name}`, which did not run")
    referred = set(re.findall(r"\bas ([a-z])\.\d", trace)) - {letter}
    names = Names(preamble + trace + "".join(TRACES[r] for r in referred))
    for function in sorted(ran):
        segments = function.split("::")
        if segments[-1] in UNNAMED_METHODS:
            continue
        if function.startswith(HELPERS):
            continue  # inside a scanner helper, or the maps' hasher
        if not names.names(function):
            problems.append(f"trace {letter}: `{function}` ran, and the trace names it nowhere")
    return problems


TRACES = {}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary", help="the reference example, a debug build")
    parser.add_argument("--keep", help="keep the callgrind outputs in this folder")
    parser.add_argument("--again", action="store_true",
                        help="check the outputs kept in --keep again, without running")
    args = parser.parse_args()
    with open(DOC) as f:
        preamble, traces = sections(f.read())
    TRACES.update(traces)
    folder = args.keep or tempfile.mkdtemp(prefix="trace_check.")
    os.makedirs(folder, exist_ok=True)
    if args.again:
        replies = {letter: {"result": "kept"} for letter in "abc"}
    else:
        replies = {
            "a": run_stdio(args.binary, os.path.join(folder, "a.out")),
            "b": run_http(args.binary, os.path.join(folder, "b.out"), "b"),
            "c": run_http(args.binary, os.path.join(folder, "c.out"), "c"),
        }
    problems = []
    for letter in "abc":
        if "result" not in replies[letter]:
            problems.append(f"trace {letter}: the request was not answered: {replies[letter]}")
        ran = ran_functions(os.path.join(folder, f"{letter}.out"))
        found = check(letter, preamble, ran)
        print(f"trace {letter}: {len(ran)} of the crate's functions ran; "
              f"{len(counted_steps(letter))} steps counted; {len(found)} problems")
        problems += found
    for problem in problems:
        print("  " + problem, file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
