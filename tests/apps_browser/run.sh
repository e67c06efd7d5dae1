#!/usr/bin/env bash
# MCP Apps in a real browser (drive.py): the reference example's echo app
# rendered by a host built on ext-apps' AppBridge and the TypeScript v2
# client, in headless chromium driven by selenium.
#   tests/apps_browser/run.sh REFERENCE_BINARY [APPS_BINARY]
# Installs what is missing, and only that: chromium and chromium-driver
# (Debian, apt-get), a Python venv with selenium and jsonschema ($VENV if
# given, else ${TMPDIR:-/tmp}/clawmcp-apps-browser-venv), the pinned npm
# packages (npm ci, package-lock.json); builds the host bundle with the
# pinned esbuild; then runs drive.py. Fails, never skips.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
reference="${1:?usage: run.sh REFERENCE_BINARY [APPS_BINARY]}"
apps="${2:-}"
reference="$(realpath "$reference")"
[ -z "$apps" ] || apps="$(realpath "$apps")"

if [ ! -x /usr/bin/chromedriver ] || [ ! -x /usr/lib/chromium/chromium ]; then
  echo "installing chromium and chromium-driver (apt-get)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
fi

venv="${VENV:-${TMPDIR:-/tmp}/clawmcp-apps-browser-venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
# selenium 4.52 and later need a certifi newer than the package index has.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'selenium==4.51.0' 'jsonschema>=4.18,<5'

cd "$here"
npm ci --silent --no-audit --no-fund
# esbuild's postinstall may be skipped (npm's allowScripts): its launcher
# finds the platform binary (@esbuild/linux-x64) without it.
./node_modules/.bin/esbuild host-entry.js --bundle --format=esm --platform=browser \
  --outfile=build/host-bundle.js --log-level=warning

exec "$venv/bin/python" drive.py --reference "$reference" ${apps:+--apps "$apps"}
