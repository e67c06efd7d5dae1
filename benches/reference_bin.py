"""The release build of the reference example, built now, at the path cargo
reports (so a CARGO_TARGET_DIR set by the user is honoured)."""

import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def reference_bin(example="reference"):
    build = subprocess.run(
        ["cargo", "build", "--release", "--example", example, "--message-format=json"],
        cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True,
    )
    for line in reversed(build.stdout.splitlines()):
        message = json.loads(line)
        if (message.get("reason") == "compiler-artifact" and message.get("executable")
                and message["target"]["name"] == example):
            return message["executable"]
    raise RuntimeError(f"cargo reported no executable for example {example}")
