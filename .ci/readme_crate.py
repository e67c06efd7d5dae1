"""Builds a fresh crate from the README, as a newcomer would paste it: the
dependency block (```toml) as its Cargo.toml, with clawmcp as a path
dependency on this checkout; the 20-line server (the first ```rust block) as
src/main.rs; the test under "## Testing your server" as tests/readme.rs.
Then `cargo test` in it: the server must compile with exactly those
dependencies, and the test must pass.

    python3 .ci/readme_crate.py [WORKDIR]
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def blocks(text: str, lang: str):
    """Code blocks whose info string starts with `lang`, with their offsets."""
    for m in re.finditer(r"^```" + lang + r"[^\n]*\n(.*?)^```", text, re.S | re.M):
        yield m.start(), m.group(1)


def after(text: str, heading: str, lang: str) -> str:
    start = text.index(heading)
    return next(body for at, body in blocks(text, lang) if at > start)


def main() -> None:
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    toml = after(readme, "## A server in 20 lines", "toml")
    server = after(readme, "## A server in 20 lines", "rust")
    test = after(readme, "## Testing your server", "rust")
    if 'clawmcp = "' not in toml:
        sys.exit("the README's dependency block has no clawmcp line")
    tests = len(re.findall(r"^#\[(?:tokio::)?test\]", test, re.M))
    if tests == 0:
        sys.exit("the README's testing block holds no test")
    toml = re.sub(r'^clawmcp = ".*"$', 'clawmcp = { path = "%s" }' % ROOT, toml, flags=re.M)
    # The dev-dependency that turns on the test client: the same crate.
    toml = re.sub(r'^(clawmcp = \{ )version = "[^"]*"', r'\1path = "%s"' % ROOT, toml, flags=re.M)

    work = sys.argv[1] if len(sys.argv) > 1 else tempfile.gettempdir()
    os.makedirs(work, exist_ok=True)
    crate = os.path.join(tempfile.mkdtemp(prefix="clawmcp-readme-", dir=work), "readme-crate")
    os.makedirs(os.path.join(crate, "src"))
    os.makedirs(os.path.join(crate, "tests"))
    with open(os.path.join(crate, "Cargo.toml"), "w", encoding="utf-8") as f:
        f.write('[package]\nname = "readme-crate"\nversion = "0.0.0"\nedition = "2024"\n'
                'publish = false\n\n[workspace]\n\n' + toml)
    with open(os.path.join(crate, "src", "main.rs"), "w", encoding="utf-8") as f:
        f.write(server)
    with open(os.path.join(crate, "tests", "readme.rs"), "w", encoding="utf-8") as f:
        f.write(test)
    # The checkout's lock file: the same versions as the crate's own build.
    shutil.copy(os.path.join(ROOT, "Cargo.lock"), os.path.join(crate, "Cargo.lock"))
    env = dict(os.environ)
    if "CARGO_TARGET_DIR" not in env:
        # Share the checkout's target directory: its dependencies are built.
        env["CARGO_TARGET_DIR"] = os.path.join(ROOT, "target")
    print(f"crate at {crate}", flush=True)
    run = subprocess.run(["cargo", "test", "--manifest-path", os.path.join(crate, "Cargo.toml")],
                         env=env, stdout=subprocess.PIPE, text=True)
    print(run.stdout, end="")
    if run.returncode != 0:
        sys.exit(run.returncode)
    passed = sum(int(n) for n in re.findall(r"test result: ok\. (\d+) passed", run.stdout))
    if passed != tests:
        sys.exit(f"{passed} tests passed; the README's testing block has {tests}")
    shutil.rmtree(os.path.dirname(crate), ignore_errors=True)


if __name__ == "__main__":
    main()
