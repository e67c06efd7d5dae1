"""Checks an MCP endpoint mounted in an app (examples/axum.rs, examples/notes.rs)
with real clients: the app's own /health, an MCP v1.0 single exchange (urllib),
and the official Python SDK client over Streamable HTTP (initialize, tools/list,
tools/call). Run with the venv that has `mcp` installed.

    python .ci/http_app_check.py http://127.0.0.1:PORT --tool echo --v1-tool mcp://axum-example/tools/echo:v1 \
        --arguments '{"message": "hi"}' --expect '{"message": "hi"}'

Exit 1 on the first failure, with what was wrong.
"""

import argparse
import json
import sys
import urllib.request

import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


def fail(what: str) -> None:
    print(f"FAIL {what}", flush=True)
    sys.exit(1)


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


async def model_context(url: str, tool: str, arguments: dict, expect: dict) -> None:
    async with streamable_http_client(url) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            if tool not in names:
                fail(f"tools/list: {tool} not in {names}")
            result = (await session.call_tool(tool, arguments)).model_dump(
                by_alias=True, mode="json", exclude_none=True
            )
            if result.get("isError") or result.get("structuredContent") != expect:
                fail(f"tools/call {tool}: {result}")
    print(f"PASS Streamable HTTP (Python SDK): initialize, tools/list, tools/call {tool}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base", help="the app's base URL, e.g. http://127.0.0.1:3000")
    parser.add_argument("--tool", required=True, help="the tool's name (listed in tools/list)")
    parser.add_argument("--v1-tool", required=True, help="the tool's mcpId")
    parser.add_argument("--arguments", required=True, help="JSON arguments")
    parser.add_argument("--expect", required=True, help="the JSON output expected")
    parser.add_argument("--mc-tool", help="the tool the Python client calls (default --tool)")
    parser.add_argument("--mc-arguments", help="its JSON arguments (default --arguments)")
    parser.add_argument("--mc-expect", help="its JSON output expected (default --expect)")
    args = parser.parse_args()
    arguments, expect = json.loads(args.arguments), json.loads(args.expect)
    mc_tool = args.mc_tool or args.tool
    mc_arguments = json.loads(args.mc_arguments) if args.mc_arguments else arguments
    mc_expect = json.loads(args.mc_expect) if args.mc_expect else expect

    with urllib.request.urlopen(f"{args.base}/health", timeout=10) as response:
        if response.status != 200:
            fail(f"/health: {response.status}")
    print("PASS the app's own /health")

    reply = post(
        f"{args.base}/mcp",
        {"jsonrpc": "2.0", "id": 2, "method": "mcp/executeTool",
         "params": {"id": args.v1_tool, "arguments": arguments}},
    )
    if reply.get("result", {}).get("output") != expect:
        fail(f"MCP v1.0 mcp/executeTool: {reply}")
    print("PASS MCP v1.0 single exchange: mcp/executeTool")

    anyio.run(model_context, f"{args.base}/mcp", mc_tool, mc_arguments, mc_expect)


if __name__ == "__main__":
    main()
