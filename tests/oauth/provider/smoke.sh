#!/usr/bin/env bash
# Hand check of the test authorization server with curl (README.md "Observed" came from this).
#   tests/oauth/provider/smoke.sh [PORT]      (default 9400; needs curl and python3)
# Starts provider.mjs via start.sh with a key file in a temp dir, checks discovery (both
# paths), a JWT token, an opaque token + introspection + revocation, mcp-reader's scope
# limit, client_secret_post, then restarts with --rotate and checks the kid changed.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PORT=${1:-9400}
P=http://127.0.0.1:$PORT
RES=http://127.0.0.1:9/mcp
TMP=$(mktemp -d)
PID=
pass=0; fail=0
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

start() {
  "$HERE/start.sh" --port "$PORT" --keys "$TMP/keys.json" "$@" >"$TMP/out" 2>"$TMP/err" &
  PID=$!
  for _ in $(seq 1 100); do grep -q '^READY ' "$TMP/out" 2>/dev/null && break; sleep 0.2; done
  echo "started: $(cat "$TMP/out")"
}
stop() { kill "$PID"; wait "$PID" || true; PID=; }
check() { if [ "$2" = "$3" ]; then pass=$((pass+1)); echo "PASS $1"; else fail=$((fail+1)); echo "FAIL $1: got '$2' want '$3'"; fi; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
jwt() { python3 -c '
import base64, json, sys
h, p, _ = sys.stdin.read().strip().split(".")
d = lambda s: json.loads(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))
print("header ", json.dumps(d(h))); print("payload", json.dumps(d(p)))'; }
token() { curl -s -u "$1:$1-secret" -d grant_type=client_credentials -d scope="$2" -d resource="$RES" "$P/token"; }

start
echo "--- discovery"
a=$(curl -s "$P/.well-known/openid-configuration")
b=$(curl -s "$P/.well-known/oauth-authorization-server")
echo "$b" | json '{k: d[k] for k in ("issuer","token_endpoint","jwks_uri","introspection_endpoint","revocation_endpoint","grant_types_supported","scopes_supported")}'
check "RFC 8414 document = openid-configuration" "$a" "$b"
check "issuer" "$(echo "$b" | json 'd["issuer"]')" "$P"

echo "--- JWT token (mcp-jwt)"
r=$(token mcp-jwt 'mcp files:write'); echo "$r" | json '{k: v for k, v in d.items() if k != "access_token"}'
at=$(echo "$r" | json 'd["access_token"]'); echo "$at" | jwt
kid1=$(curl -s "$P/jwks" | json 'd["keys"][0]["kid"]')
payload=$(echo "$at" | jwt | sed -n 's/^payload //p')
check "aud = resource" "$(echo "$payload" | json 'd["aud"]')" "$RES"
check "scope" "$(echo "$payload" | json 'd["scope"]')" "mcp files:write"
check "kid = JWKS kid" "$(echo "$at" | jwt | sed -n 's/^header  //p' | json 'd["kid"]')" "$kid1"

echo "--- client_secret_post (mcp-other)"
r=$(curl -s -d client_id=mcp-other -d client_secret=mcp-other-secret -d grant_type=client_credentials -d scope=mcp -d resource="$RES" "$P/token")
check "mcp-other sub" "$(echo "$r" | json 'd["access_token"]' | jwt | sed -n 's/^payload //p' | json 'd["sub"]')" "mcp-other"

echo "--- opaque token (mcp-opaque) + introspection (mcp-server)"
r=$(token mcp-opaque 'mcp files:write'); echo "$r" | json '{k: v for k, v in d.items() if k != "access_token"}'
ot=$(echo "$r" | json 'd["access_token"]')
i=$(curl -s -u mcp-server:mcp-server-secret -d token="$ot" "$P/token/introspection"); echo "$i"
check "introspection active" "$(echo "$i" | json 'd["active"]')" "True"
check "introspection aud" "$(echo "$i" | json 'd["aud"]')" "$RES"
echo "--- revoke (by owner mcp-opaque), introspect again"
check "revocation status" "$(curl -s -o /dev/null -w '%{http_code}' -u mcp-opaque:mcp-opaque-secret -d token="$ot" -d token_type_hint=access_token "$P/token/revocation")" "200"
i=$(curl -s -u mcp-server:mcp-server-secret -d token="$ot" "$P/token/introspection"); echo "$i"
check "after revocation" "$i" '{"active":false}'
echo "--- JWT at the introspection endpoint"
curl -s -u mcp-server:mcp-server-secret -d token="$at" "$P/token/introspection"; echo

echo "--- mcp-reader asking for files:write"
r=$(token mcp-reader 'mcp files:write'); echo "$r"
check "mcp-reader refused" "$(echo "$r" | json 'd.get("error")')" "invalid_scope"
check "mcp-reader mcp only" "$(token mcp-reader mcp | json 'd["scope"]')" "mcp"
check "mcp-short expires_in" "$(token mcp-short mcp | json 'd["expires_in"]')" "2"

echo "--- restart without --rotate, then with --rotate"
stop; start
check "kid kept" "$(curl -s "$P/jwks" | json 'd["keys"][0]["kid"]')" "$kid1"
stop; start --rotate
kid2=$(curl -s "$P/jwks" | json 'd["keys"][0]["kid"]')
echo "kid before=$kid1 after=$kid2"
check "kid changed" "$([ "$kid1" != "$kid2" ] && echo yes)" "yes"
check "JWKS has one key" "$(curl -s "$P/jwks" | json 'len(d["keys"])')" "1"
stop
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
