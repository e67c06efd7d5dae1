"""Builds a fresh crate from the README, as a newcomer would paste it: the
dependency block (```toml) as its Cargo.toml, with clawmcp as a path
dependency on this checkout; the 20-line server (the first ```rust block) as
src/main.rs; the test under "## Testing your server" as tests/readme.rs.
Then `cargo test` in it: the server must compile with exactly those
dependencies, and the test must pass.

Then a crate each for the blocks that say they need more, built with the
same dependency block and what they name added: the OAuth server (whose
first lines say its Cargo.toml: clawmcp's features, tokio's) and the axum
app (whose paragraph names its `axum = "…"` and tokio's `signal` feature).

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


def new_crate(work: str, toml: str) -> str:
    """A fresh crate in `work` whose dependencies are `toml`."""
    crate = os.path.join(tempfile.mkdtemp(prefix="clawmcp-readme-", dir=work), "readme-crate")
    os.makedirs(os.path.join(crate, "src"))
    os.makedirs(os.path.join(crate, "tests"))
    with open(os.path.join(crate, "Cargo.toml"), "w", encoding="utf-8") as f:
        f.write('[package]\nname = "readme-crate"\nversion = "0.0.0"\nedition = "2024"\n'
                'publish = false\n\n[workspace]\n\n' + toml)
    # The checkout's lock file: the same versions as the crate's own build.
    shutil.copy(os.path.join(ROOT, "Cargo.lock"), os.path.join(crate, "Cargo.lock"))
    return crate


def cargo(args, env) -> str:
    run = subprocess.run(["cargo", *args], env=env, stdout=subprocess.PIPE, text=True)
    print(run.stdout, end="")
    if run.returncode != 0:
        sys.exit(run.returncode)
    return run.stdout


def with_more(toml: str, clawmcp_features, tokio_features, extra) -> str:
    """The dependency block with clawmcp's and tokio's features added, and
    `extra` dependency lines."""
    def features(line: str, more) -> str:
        m = re.search(r'features = \[([^\]]*)\]', line)
        have = re.findall(r'"([^"]+)"', m.group(1)) if m else []
        listed = ", ".join('"%s"' % f for f in have + [f for f in more if f not in have])
        if m:
            return line[:m.start()] + "features = [%s]" % listed + line[m.end():]
        if line.rstrip().endswith("}"):
            return line.rstrip()[:-1].rstrip() + ", features = [%s] }" % listed
        return re.sub(r'^(\w+) = "([^"]+)"$', r'\1 = { version = "\2", features = [%s] }' % listed, line)
    out = []
    section = None
    for line in toml.splitlines():
        if line.startswith("["):
            section = line
        if section == "[dependencies]" and line.startswith("clawmcp ="):
            line = features(line, clawmcp_features)
        if section == "[dependencies]" and line.startswith("tokio ="):
            line = features(line, tokio_features)
        out.append(line)
        if line == "[dependencies]":
            out.extend(extra)
    return "\n".join(out) + "\n"


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
    env = dict(os.environ)
    if "CARGO_TARGET_DIR" not in env:
        # Share the checkout's target directory: its dependencies are built.
        env["CARGO_TARGET_DIR"] = os.path.join(ROOT, "target")

    crate = new_crate(work, toml)
    with open(os.path.join(crate, "src", "main.rs"), "w", encoding="utf-8") as f:
        f.write(server)
    with open(os.path.join(crate, "tests", "readme.rs"), "w", encoding="utf-8") as f:
        f.write(test)
    print(f"crate at {crate}", flush=True)
    out = cargo(["test", "--manifest-path", os.path.join(crate, "Cargo.toml")], env)
    passed = sum(int(n) for n in re.findall(r"test result: ok\. (\d+) passed", out))
    if passed != tests:
        sys.exit(f"{passed} tests passed; the README's testing block has {tests}")
    shutil.rmtree(os.path.dirname(crate), ignore_errors=True)

    # The OAuth server: its first lines say what it needs.
    oauth = after(readme, "## A remote server with OAuth", "rust")
    said = re.match(r"// Cargo.toml: (.*?)\n// (.*?)\n", oauth)
    if not said:
        sys.exit("the README's OAuth block does not begin by saying its Cargo.toml")
    clawmcp_features = re.findall(r'"([^"]+)"', re.search(r"features = \[([^\]]*)\]", said.group(1)).group(1))
    tokio_features = re.findall(r'"([^"]+)"', said.group(2))
    # The axum app: its paragraph names axum's version and tokio's feature.
    axum_at = readme.index("### In an axum (or any tower) app")
    axum = after(readme, "### In an axum (or any tower) app", "rust")
    prose = readme[axum_at:readme.index("```", axum_at)]
    axum_line = re.search(r'`(axum = "[^"]+")`', prose)
    axum_feature = re.search(r"tokio's `(\w+)` feature", prose)
    if not axum_line or not axum_feature:
        sys.exit("the README's axum paragraph does not name axum's version and tokio's feature")
    for name, code, more in (
        ("oauth", oauth, with_more(toml, clawmcp_features, tokio_features, [])),
        ("axum", axum, with_more(toml, [], [axum_feature.group(1)], [axum_line.group(1)])),
    ):
        crate = new_crate(work, more)
        with open(os.path.join(crate, "src", "main.rs"), "w", encoding="utf-8") as f:
            f.write(code)
        print(f"crate at {crate} for the {name} block, with:\n{more}", flush=True)
        cargo(["build", "--manifest-path", os.path.join(crate, "Cargo.toml")], env)
        shutil.rmtree(os.path.dirname(crate), ignore_errors=True)

if __name__ == "__main__":
    main()
