"""End-to-end OAuth client for an MCP server, on the official Python SDK (mcp 2.3.x).

    python e2e_client.py --url http://127.0.0.1:PORT/mcp --client-id mcp-jwt \\
        --client-secret mcp-jwt-secret [--scope 'mcp files:write'] \\
        [--expect-forbidden-tool file-writer] [--issuer http://127.0.0.1:P] \\
        [--auth-method client_secret_basic|client_secret_post]

Uses the SDK's own client_credentials support (mcp.client.auth.extensions.client_credentials.
ClientCredentialsOAuthProvider) as the httpx2 auth of the Streamable HTTP client, so the SDK
itself does: request without token -> 401 + WWW-Authenticate resource_metadata -> protected
resource metadata -> authorization server metadata -> token (client_credentials, resource =
the metadata's `resource`) -> retry with the bearer token. Event hooks on the HTTP client
print every request (method, URL, status) so the flow can be read.

Then: initialize, tools/list, tools/call echo {"message":"hi"} (result must contain "hi"), and
with --expect-forbidden-tool NAME, tools/call NAME {"path":"a.txt","content":"x"}, which must
fail (HTTP 403 / JSON-RPC error / isError result). Prints PASS/FAIL per step and
"N passed, M failed"; exits 1 on any failure.

Scope: on a 401 the SDK replaces the scope given to the provider with the one it selects
(WWW-Authenticate `scope`, else the protected resource metadata's scopes_supported, else the
authorization server's), and on 403 insufficient_scope it steps up to the union. --scope
pins the requested scope to exactly that string instead (a small override, see PinnedScope).

Install: python3 -m venv /tmp/mcp-venv && /tmp/mcp-venv/bin/pip install 'mcp==2.3.*'
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import warnings
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp.shared.exceptions import MCPDeprecationWarning

TIMEOUT = 30


class MemoryStorage:
    """TokenStorage kept in memory (nothing persists between runs)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class PinnedScope(ClientCredentialsOAuthProvider):
    """The SDK provider, except that the token request asks for exactly `pinned_scope`."""

    def __init__(self, *args, pinned_scope: str, **kwargs) -> None:
        super().__init__(*args, scope=pinned_scope, **kwargs)
        self._pinned_scope = pinned_scope

    async def _perform_authorization(self) -> httpx2.Request:
        self.context.client_metadata.scope = self._pinned_scope
        return await super()._perform_authorization()


def jwt_claims(token: str) -> dict | None:
    try:
        part = token.split(".")[1]
        return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (IndexError, ValueError):
        return None


class FlowLog:
    """httpx2 event hooks: print each request and remember what the OAuth flow did."""

    def __init__(self, mcp_url: str) -> None:
        self.mcp_url = mcp_url
        self.events: list[dict] = []
        self.prm: dict | None = None
        self.asm: dict | None = None
        self.token_form: dict | None = None
        self.token_response: dict | None = None

    async def on_request(self, request: httpx2.Request) -> None:
        if request.method == "POST" and self.asm and str(request.url) == self.asm.get("token_endpoint"):
            form = {k: v[0] for k, v in parse_qs(request.content.decode()).items()}
            form.pop("client_secret", None)
            self.token_form = form

    async def on_response(self, response: httpx2.Response) -> None:
        request = response.request
        url = str(request.url)
        event = {
            "method": request.method,
            "url": url,
            "status": response.status_code,
            "bearer": request.headers.get("authorization", "").lower().startswith("bearer "),
            "www_authenticate": response.headers.get("www-authenticate"),
        }
        self.events.append(event)
        note = ""
        if "/.well-known/" in urlparse(url).path and response.status_code == 200:
            body = json.loads(await response.aread())
            if "oauth-protected-resource" in url:
                self.prm = body
                note = f"  resource={body.get('resource')} authorization_servers={body.get('authorization_servers')}"
            else:
                self.asm = body
                note = f"  issuer={body.get('issuer')} token_endpoint={body.get('token_endpoint')}"
        elif self.asm and url == self.asm.get("token_endpoint"):
            body = json.loads(await response.aread())
            self.token_response = body
            shown = {k: v for k, v in body.items() if k != "access_token"}
            note = f"  form={self.token_form} -> {shown}"
            claims = jwt_claims(body.get("access_token", ""))
            if claims:
                note += f" jwt={ {k: claims.get(k) for k in ('iss', 'aud', 'sub', 'client_id', 'scope')} }"
        elif event["www_authenticate"]:
            note = f"  WWW-Authenticate: {event['www_authenticate']}"
        auth = " [bearer]" if event["bearer"] else ""
        print(f"  http: {request.method} {url}{auth} -> {response.status_code}{note}", flush=True)


class Results:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0
        # set while the forbidden tool call is in flight: (tool name, index of first event)
        self.forbidden_call: tuple[str, int] | None = None

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"{'PASS' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
        return ok


def check_flow(log: FlowLog, r: Results) -> None:
    ev = log.events
    mcp = [i for i, e in enumerate(ev) if e["url"] == log.mcp_url]
    first = ev[mcp[0]] if mcp else None
    r.check(
        "first MCP request without token -> 401 with resource_metadata",
        bool(first) and first["status"] == 401 and not first["bearer"]
        and "resource_metadata=" in (first["www_authenticate"] or ""),
        f"{first['status']} {first['www_authenticate']}" if first else "no MCP request seen",
    )
    prm_i = next((i for i, e in enumerate(ev) if "oauth-protected-resource" in e["url"] and e["status"] == 200), None)
    r.check("protected resource metadata fetched", prm_i is not None and log.prm is not None,
            f"resource={log.prm.get('resource')}" if log.prm else "")
    asm_i = next((i for i, e in enumerate(ev) if "/.well-known/" in e["url"] and "oauth-protected-resource"
                  not in e["url"] and e["status"] == 200), None)
    r.check("authorization server metadata fetched", asm_i is not None and (prm_i is None or asm_i > prm_i),
            f"issuer={log.asm.get('issuer')}" if log.asm else "")
    tok_i = next((i for i, e in enumerate(ev) if log.asm and e["url"] == log.asm.get("token_endpoint")), None)
    token_ok = tok_i is not None and ev[tok_i]["status"] == 200 and (log.token_form or {}).get(
        "grant_type") == "client_credentials"
    r.check("token obtained with client_credentials", token_ok,
            f"status={ev[tok_i]['status']} {log.token_response}" if tok_i is not None and not token_ok else "")
    want = (log.prm or {}).get("resource")
    got = (log.token_form or {}).get("resource")
    r.check("token request carried resource = PRM resource", want is not None and got == want,
            f"resource={got!r} prm={want!r}")
    retry = [i for i in mcp if ev[i]["bearer"] and tok_i is not None and i > tok_i]
    r.check("MCP request retried with bearer token",
            bool(retry) and ev[retry[0]]["status"] < 400,
            f"status={ev[retry[0]]['status']}" if retry else "no retry seen")


def leaf(e: BaseException) -> BaseException:
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return e


async def run(args: argparse.Namespace, r: Results, log: FlowLog) -> None:
    kwargs = dict(
        server_url=args.url,
        storage=MemoryStorage(),
        client_id=args.client_id,
        client_secret=args.client_secret,
        token_endpoint_auth_method=args.auth_method,
        issuer=args.issuer,
    )
    with warnings.catch_warnings():
        if args.issuer is None:  # deprecated in the SDK (MCPDeprecationWarning), still allowed
            warnings.simplefilter("ignore", MCPDeprecationWarning)
        auth = PinnedScope(**kwargs, pinned_scope=args.scope) if args.scope else \
            ClientCredentialsOAuthProvider(**kwargs)

    http = create_mcp_http_client()
    http.auth = auth
    http.event_hooks = {"request": [log.on_request], "response": [log.on_response]}

    async with http, streamable_http_client(args.url, http_client=http) as (read, write):
        async with ClientSession(read, write) as session:
            print("step: initialize (the OAuth flow runs here)", flush=True)
            try:
                with anyio.fail_after(TIMEOUT):
                    init = await session.initialize()
                ok, detail = True, f"server={init.server_info.name} protocol={init.protocol_version}"
            except Exception as e:  # noqa: BLE001
                ok, detail = False, f"{type(e).__name__}: {e}"
            check_flow(log, r)
            if not r.check("initialize", ok, detail):
                return

            print("step: tools/list", flush=True)
            try:
                with anyio.fail_after(TIMEOUT):
                    tools = [t.name for t in (await session.list_tools()).tools]
                r.check("tools/list includes echo", "echo" in tools, f"tools={tools}")
            except Exception as e:  # noqa: BLE001
                r.check("tools/list includes echo", False, f"{type(e).__name__}: {e}")

            print("step: tools/call echo", flush=True)
            try:
                with anyio.fail_after(TIMEOUT):
                    res = await session.call_tool("echo", {"message": "hi"})
                text = " ".join(getattr(c, "text", "") for c in res.content)
                r.check("tools/call echo returns hi", not res.is_error and "hi" in text,
                        f"is_error={res.is_error} text={text!r}")
            except Exception as e:  # noqa: BLE001
                r.check("tools/call echo returns hi", False, f"{type(e).__name__}: {e}")

            if args.expect_forbidden_tool:
                name = args.expect_forbidden_tool
                print(f"step: tools/call {name} (must be refused)", flush=True)
                seen = len(log.events)
                r.forbidden_call = (name, seen)
                try:
                    with anyio.fail_after(TIMEOUT):
                        res = await session.call_tool(name, {"path": "a.txt", "content": "x"})
                    refused, detail = bool(res.is_error), f"is_error={res.is_error} content={res.content}"
                except Exception as e:  # noqa: BLE001  (McpError, or the OAuth step-up failing)
                    refused, detail = True, f"{type(e).__name__}: {e}"
                # A 403 that the SDK's step-up turned into a success is not a refusal.
                statuses = [e["status"] for e in log.events[seen:] if e["url"] == args.url]
                r.forbidden_call = None
                r.check(f"tools/call {name} refused", refused, f"{detail}; MCP statuses={statuses}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="MCP endpoint, e.g. http://127.0.0.1:8080/mcp")
    ap.add_argument("--client-id", required=True)
    ap.add_argument("--client-secret", required=True)
    ap.add_argument("--scope", help="request exactly this scope (default: the SDK's scope selection)")
    ap.add_argument("--expect-forbidden-tool", metavar="NAME")
    ap.add_argument("--issuer", help="authorization server issuer the credentials belong to (pins it)")
    ap.add_argument("--auth-method", default="client_secret_basic",
                    choices=["client_secret_basic", "client_secret_post"])
    args = ap.parse_args()
    r, log = Results(), FlowLog(args.url)
    try:
        anyio.run(run, args, r, log)
    except Exception as e:  # noqa: BLE001
        e = leaf(e)
        if r.forbidden_call is not None:
            # The SDK answers 403 insufficient_scope with a step-up token request; when the
            # authorization server refuses that, the error escapes the transport and ends the
            # session instead of failing just this call.
            name, seen = r.forbidden_call
            statuses = [ev["status"] for ev in log.events[seen:] if ev["url"] == args.url]
            r.check(f"tools/call {name} refused", 403 in statuses,
                    f"MCP statuses={statuses}, then the SDK's step-up failed: {type(e).__name__}: {e}")
        else:
            r.check("run", False, f"{type(e).__name__}: {e}")
    print(f"{r.passed} passed, {r.failed} failed", flush=True)
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
