"""Runs the shell snippets of the README and of the pages it sends readers
to for more (PAGES) against the reference example, as a reader pastes
them, and checks the output each one shows in its comment lines that hold
a JSON-RPC message (`...` and `…` match anything).

    python3 .ci/readme_shell.py REFERENCE_BINARY

Every ```sh block of those pages is either run or listed in SKIPPED with
the reason, so a new snippet cannot go unchecked by accident. `cargo run
... --example reference` in a snippet runs the given binary instead (no
build in the middle of a check); `127.0.0.1:8080` becomes a free port;
`curl -s` becomes `curl -sf`, so an error status fails the snippet even
where it shows no output.
"""

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The pages whose shell snippets are checked, in this order.
PAGES = ["README.md", "docs/by-hand.md", "docs/scale-out.md"]

# First line of a block -> why it is not run here.
SKIPPED = {
    "cargo run --example reference     # the reference server, on stdin/stdout":
        "the newcomer's two commands: .ci/run runs `cargo test` itself, and the "
        "reference server is what every other check here runs",
    "tests/oauth/provider/start.sh --port 9400 &   # a test issuer: prints READY http://127.0.0.1:9400 once it listens":
        "starts an authorization server (oidc-provider, Node.js): .ci/run's OAuth step "
        "runs the reference example with --oauth-issuer against it and the official Python client",
    "redis-server --port 6379 --bind 127.0.0.1 &":
        "starts a deployment (redis-server, three processes and nginx): .ci/run's "
        "scale-out step runs that topology in tests/scale_out.py",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def expected_patterns(block: str):
    """The outputs a block shows: its `# ` lines that hold a JSON-RPC
    message (a leading "the first curl prints " aside; other comment lines
    are prose); `...` and `…` match anything, newlines too."""
    for line in block.splitlines():
        if line.startswith("# ") and '{"jsonrpc"' in line:
            text = line[2:].removeprefix("the first curl prints ").strip()
            parts = re.split(r"\.\.\.|…", text)
            yield text, re.compile(".*?".join(re.escape(p.strip()) for p in parts), re.S)


def main() -> None:
    binary = os.path.abspath(sys.argv[1])
    readme = "".join(open(os.path.join(ROOT, page), encoding="utf-8").read() for page in PAGES)
    # Every shell-like fence, whatever its info string says after the language.
    blocks = re.findall(r"^```(?:sh|bash|shell|console)\b[^\n]*\n(.*?)^```", readme, re.S | re.M)
    port = free_port()
    root = tempfile.mkdtemp(prefix="clawmcp-readme-root-")
    server = subprocess.Popen([binary, "--http", f"127.0.0.1:{port}", "--root", root],
                              stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        failed = 0
        for block in blocks:
            first = block.splitlines()[0]
            if first in SKIPPED:
                print(f"SKIP {first[:60]!r}: {SKIPPED[first]}")
                continue
            script = block.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
            script = script.replace("cargo run -q --example reference", shlex.quote(binary))
            # A 4xx or 5xx fails the snippet (curl -s alone exits 0 on them).
            script = re.sub(r"\bcurl -s", "curl -sf", script)
            run = subprocess.run(["bash", "-c", "set -e -o pipefail\n" + script + "\nwait"],
                                 capture_output=True, text=True, timeout=60, cwd=ROOT)
            problems = []
            if run.returncode != 0:
                problems.append(f"exit {run.returncode}: {run.stderr.strip()[-500:]}")
            for text, pattern in expected_patterns(block):
                if not pattern.search(run.stdout):
                    problems.append(f"no output like {text}")
            if problems:
                failed += 1
                print(f"FAIL {first[:60]!r}:\n  " + "\n  ".join(problems)
                      + f"\n  stdout: {run.stdout[-1500:]}")
            else:
                print(f"PASS {first[:60]!r}")
        unknown = set(SKIPPED) - {b.splitlines()[0] for b in blocks}
        if unknown:
            failed += 1
            print(f"FAIL SKIPPED names blocks the pages no longer have: {unknown}")
        sys.exit(1 if failed else 0)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
