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
- every function of the crate that ran is named: as `Type::function` or
  `module::function` (or `Type`'s `function`; a module by as many of its
  path's last segments as tell it from the crate's other modules, a type
  by as many as tell it from another type of its name whose function ran
  too), or bare in a step of its file or of the one function's type the
  step counts, in the trace, in §4's preamble, or in a step of another
  trace that this one runs "as" (not in a quoted aside, `> `, which
  tells of another path); or it is of a kind the counting rule
  leaves out without naming: what only the scanner helpers call in
  `src/fast/`, the maps' hasher, derived impls (`clone`, `eq`,
  `default`...; a hand-written one is named) and pin projections.

Usage: trace_check.py REFERENCE_BINARY [--keep DIR [--again]]
"""

import argparse
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "architecture.md")

# How long the whole check may take (a server that never answers).
DEADLINE = 900

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
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    reply = send()
    time.sleep(1)  # what runs after the reply (a slot freed, the writer's chunk kept)
    subprocess.run(["callgrind_control", "-i", "off", str(proc.pid)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
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

    try:
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
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


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
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


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
    """The crate's functions that had a cost in a callgrind output, and
    each one's callers (any function's, normalised)."""
    names, ran, callers = {}, set(), {}
    current = callee = None
    with open(path) as f:
        for line in f:
            m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if m:
                if m.group(3):
                    names[m.group(2)] = m.group(3)
                if m.group(1) == "fn":
                    current = names[m.group(2)]
                    ran.add(current)
                else:
                    callee = names[m.group(2)]
            elif line.startswith("calls=") and current and callee:
                callers.setdefault(normalised(callee), set()).add(normalised(current))
    ours = {normalised(n) for n in ran
            if "clawmcp::" in n and not n.startswith("core::ptr::drop_in_place")}
    return ours, callers


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
        file, listed = None, []
        for i, part in enumerate(without_asides(names).split("`")):
            if i % 2 == 1 and file:
                listed.append((file, part))
            elif i % 2 == 0:
                paths = [w for w in re.split(r"[ ,;]", part) if w.endswith(".rs")]
                if paths:
                    file = paths[-1]
        first, last = int(m.group(1)), int(m.group(2))
        if len(listed) != last - first + 1:
            sys.exit(f"trace {letter}: steps {first}–{last} list {len(listed)} functions")
        steps += listed
    return steps


def module_of(file):
    return "clawmcp::" + re.sub(r"/mod$", "", file[:-3]).replace("/", "::")


def inline_always(file, function):
    with open(os.path.join(ROOT, "src", file)) as f:
        source = f.read()
    return re.search(r"#\[inline\(always\)\]\s*(?:pub(?:\([^)]*\))? )?fn "
                     + re.escape(function) + r"\b", source) is not None


STEP = re.compile(r"^(\d+)(?:–(\d+))?\. (.*)$")


def units(text):
    """A text's steps (a line each), list items and paragraphs; not its
    quoted asides (`> `), which tell of other paths."""
    unit = []
    for line in text.splitlines():
        if line.startswith(">"):
            continue
        if STEP.match(line) or line.startswith("- ") or not line.strip():
            if unit:
                yield " ".join(unit)
            unit = [line] if line.strip() else []
        else:
            unit.append(line)
    if unit:
        yield " ".join(unit)


def crate_modules():
    """The crate's modules that are files (`src/a/b.rs`, `src/a/b/mod.rs`),
    as `clawmcp::a::b`; not the crate's root, nor a `mod` written inline."""
    found = set()
    for folder, _, files in os.walk(os.path.join(ROOT, "src")):
        for file in files:
            if file.endswith(".rs") and file not in ("lib.rs", "main.rs"):
                path = os.path.relpath(os.path.join(folder, file), os.path.join(ROOT, "src"))
                found.add(module_of(path))
    return found


class Names:
    """What a text names: (owner, function) pairs, an owner being a type
    (`Type::function`, `Type`'s `function`) or, for a bare `function` in a
    step, the whole path of the step's file's module, or the type of the
    one function the step counts; and (module path's last segments,
    function) for `module::function`, which names a function of the one
    module of the crate whose path ends so (`revision_2026::serves` names
    none while two modules are called `revision_2026`); and every path of
    three segments or more, which tells a type's function from a twin's
    (`shared::Shared::offer`)."""

    def __init__(self, text, modules):
        self.pairs = set()
        self.in_modules = set()
        self.paths = set()  # every `a::B::c` token with three segments or more
        self.modules = modules
        for unit in units(text):
            step = STEP.match(unit)
            here = set()
            if step:
                head = step.group(3).split(" — ")[0]
                here.update(module_of(path) for path in re.findall(r"([\w/]+\.rs)", head))
                counted = re.findall(r"`([^`]*)`", head)
                if step.group(2) is None and counted and "::" in counted[0]:
                    here.add(counted[0].split("::")[-2])
            for owner, function in re.findall(r"`(\w+)`'s `(\w+)`", unit):
                self.pairs.add((owner, function))
            for token in re.findall(r"`([^`]*)`", unit):
                segments = re.sub(r"\(.*", "", token).split("::")
                if len(segments) >= 3:
                    self.paths.add(tuple(segments))
                if len(segments) >= 2:
                    self.pairs.add((segments[-2], segments[-1]))
                    if re.fullmatch(r"[a-z_0-9]+", segments[-2]):
                        self.in_modules.add((tuple(segments[:-1]), segments[-1]))
                else:
                    self.pairs.update((owner, segments[0]) for owner in here)

    def ending(self, suffix):
        """The crate's modules whose paths end with `suffix`."""
        return [m for m in self.modules if tuple(m.split("::")[-len(suffix):]) == suffix]

    def names(self, function, ran):
        """Whether the text names `function`. A `Type::function` names it
        while no function of another type of that name ran too; then only
        a longer path (`session::shared::Shared::offer`, or the step's
        own file) does."""
        module, name = function.rsplit("::", 1)
        owner = module.rsplit("::", 1)[-1]
        if re.fullmatch(r"[A-Z]", owner):  # a generic type: `F::call_lazily`
            return any(named == name for _, named in self.pairs)
        if (module, name) in self.pairs:
            return True
        if re.fullmatch(r"[a-z_0-9]+", owner) and module in self.modules:
            return any(named == name and self.ending(suffix) == [module]
                       for suffix, named in self.in_modules)
        if (owner, name) not in self.pairs:
            return False
        twins = [r for r in ran if r != function and r.endswith(f"::{owner}::{name}")]
        return not twins or any(
            tuple(function.split("::")[-len(path):]) == path for path in self.paths)

    def ambiguous(self, function, ran):
        """The names that would name `function` but for another module or
        type of the same name."""
        module, name = function.rsplit("::", 1)
        owner = module.rsplit("::", 1)[-1]
        found = ["::".join(suffix + (named,)) for suffix, named in sorted(self.in_modules)
                 if named == name and module in self.ending(suffix)
                 and len(self.ending(suffix)) > 1]
        if (owner, name) in self.pairs and any(
                r != function and r.endswith(f"::{owner}::{name}") for r in ran):
            found.append(f"{owner}::{name}")
        return found


def hand_written_impls():
    """(type, trait) of each `impl Trait for Type` of the std traits a
    derive also writes, in `src/`."""
    found = set()
    pattern = re.compile(r"\bimpl\b[^{;]*?\b(Clone|PartialEq|Default|Deref|Hash|Debug|Display)\b"
                         r"[^{;]*?\bfor\s+(?:[\w:]+::)?(\w+)")
    for folder, _, files in os.walk(os.path.join(ROOT, "src")):
        for name in files:
            if name.endswith(".rs"):
                with open(os.path.join(folder, name)) as f:
                    found.update((t, trait) for trait, t in pattern.findall(f.read()))
    return found


TRAIT_OF = {"clone": {"Clone"}, "eq": {"PartialEq"}, "ne": {"PartialEq"},
            "default": {"Default"}, "deref": {"Deref"}, "hash": {"Hash"},
            "fmt": {"Debug", "Display"}, "partial_cmp": {"PartialOrd"},
            "cmp": {"Ord"}}


def derived(function, hand_written):
    """Whether `function` is a derived impl's method (or pin-project's)."""
    segments = function.split("::")
    if segments[-1] == "project":
        return True
    traits = TRAIT_OF.get(segments[-1])
    return bool(traits) and not any((segments[-2], t) in hand_written for t in traits)


def inside_helper(function, callers, hosts):
    """Whether `function` runs only inside a scanner helper (what of the
    crate called it is in `src/fast/`, or is where a helper is inlined),
    or is the maps' hasher."""
    if function.startswith("clawmcp::id_hash::"):
        return True
    if not function.startswith("clawmcp::fast::"):
        return False
    # (A closure a library function runs, `Option::and_then`'s, has no
    # caller of the crate's: a library generic's callers are merged.)
    return all(c.startswith("clawmcp::fast::") or c in hosts
               for c in callers.get(function, ()) if c.startswith("clawmcp::"))


def hosts_of(steps):
    """Where a counted scanner helper marked `#[inline(always)]` runs: the
    first step before it that is not inlined (`jsonrpc::parse`)."""
    hosts = set()
    for i, (file, name) in enumerate(steps):
        if not (file.startswith("fast/") and inline_always(file, name.split("::")[-1])):
            continue
        j = i - 1
        while j >= 0 and inline_always(steps[j][0], steps[j][1].split("::")[-1]):
            j -= 1
        if j >= 0:
            hosts.add(f"{module_of(steps[j][0])}::{steps[j][1]}")
    return hosts


def referred_steps(trace):
    """The step lines of other traces that `trace` refers to (`as a.5–8`)."""
    lines = []
    said = "\n".join(line for line in trace.splitlines() if not line.startswith(">"))
    for letter, first, last in re.findall(r"\bas ([a-z])\.(\d+)(?:–(\d+))?", said):
        first, last = int(first), int(last or first)
        for line in TRACES[letter].splitlines():
            m = STEP.match(line)
            if m and int(m.group(1)) <= last and int(m.group(2) or m.group(1)) >= first:
                lines.append(line)
    return "\n\n".join(lines)


def check(letter, preamble, ran, callers, hand_written, modules):
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
    names = Names(preamble + "\n\n" + trace + "\n\n" + referred_steps(trace), modules)
    hosts = hosts_of(steps)
    for function in sorted(ran):
        if derived(function, hand_written) or inside_helper(function, callers, hosts):
            continue
        if not names.names(function, ran):
            hint = "".join(f"; `{n}` could be more than one's, write more of its path"
                           for n in names.ambiguous(function, ran))
            problems.append(f"trace {letter}: `{function}` ran, and the trace names it nowhere{hint}")
    return problems


TRACES = {}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary", help="the reference example, a debug build")
    parser.add_argument("--keep", help="keep the callgrind outputs in this folder")
    parser.add_argument("--again", action="store_true",
                        help="check the outputs kept in --keep again, without running")
    args = parser.parse_args()
    def overdue(*_):
        raise TimeoutError(f"the check took over {DEADLINE} s: a server did not answer")

    signal.signal(signal.SIGALRM, overdue)  # the servers are stopped on the way out
    signal.alarm(DEADLINE)
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
    hand_written = hand_written_impls()
    modules = crate_modules()
    problems = []
    for letter in "abc":
        if "result" not in replies[letter]:
            problems.append(f"trace {letter}: the request was not answered: {replies[letter]}")
        ran, callers = ran_functions(os.path.join(folder, f"{letter}.out"))
        found = check(letter, preamble, ran, callers, hand_written, modules)
        print(f"trace {letter}: {len(ran)} of the crate's functions ran; "
              f"{len(counted_steps(letter))} steps counted; {len(found)} problems")
        problems += found
    for problem in problems:
        print("  " + problem, file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
