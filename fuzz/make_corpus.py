#!/usr/bin/env python3
"""Regenerates the seed corpus in fuzz/corpus/<target>/ (see fuzz/README.md).

Every input starts with a configuration byte and chunk-size bytes (the layout
is in fuzz/src/lib.rs): `seed(choice, chunks, stream, flag)` builds one.
"""
import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))


def seed(choice, chunks, stream, flag=False):
    assert 0 <= choice < 8 and len(chunks) < 8
    head = choice | (len(chunks) << 3) | (0x40 if flag else 0)
    return bytes([head] + [c - 1 for c in chunks]) + stream


def frame(body):
    if isinstance(body, (dict, list)):
        body = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    if isinstance(body, str):
        body = body.encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def req(id, method, params=None):
    m = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        m["params"] = params
    return m


def note(method, params=None):
    m = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        m["params"] = params
    return m


ECHO = "mcp://fuzz/tools/echo:v1"
INIT = frame(req(1, "initialize", {"clientCapabilities": {}})) + frame(note("initialized", {}))
LIST = frame(req(2, "mcp/listTools"))

frame_decoder = {
    "one_frame": seed(4, [], INIT),
    "byte_by_byte": seed(4, [1], INIT + LIST),
    "odd_chunks": seed(5, [3, 7, 1, 20], INIT + LIST + INIT),
    "tolerant_headers": seed(4, [5], b"content-LENGTH: 2\nX-Tag: a\r\n"
                             b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}"),
    "garbage_then_frame": seed(4, [], b"GARBAGE, NOT A HEADER\r\n\r\n" + LIST),
    "oversize_then_frame": seed(2, [9], b"Content-Length: 99999999\r\n\r\n" + b"x" * 40 + LIST),
    "bad_content_type": seed(4, [], b"Content-Length: 2\r\nContent-Type: text/plain\r\n\r\n{}" + LIST),
    "truncated_at_eof": seed(4, [], b"Content-Length: 10\r\n\r\n{}"),
    "two_lengths": seed(4, [2], b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}" + LIST),
    "utf8_body": seed(6, [4], frame('{"s":"héllo ✓ 😀 日本語"}')),
    "no_length_glued": seed(4, [], b"Content-Type: application/json\r\n\r\n{\"id\":1}" + LIST),
    "long_header_line": seed(4, [16], b"A" * 100 + b"\r\n" + LIST, flag=True),
    "empty_and_blank_lines": seed(1, [], b"\r\n\n" + frame("") + b"\r\n" + frame("[]")),
}

stdio_session = {
    "handshake_list": seed(2, [], INIT + LIST),
    "echo": seed(2, [], INIT + frame(req(3, "mcp/executeTool", {"id": ECHO, "arguments": {"a": [1, "✓"]}}))),
    "batch": seed(2, [], INIT + frame([req(4, "mcp/listTools"), note("x"), 3, req("s", "mcp/listPrompts")])),
    "before_initialize": seed(2, [], LIST + frame(note("initialized")) + INIT),
    "bad_ids": seed(2, [], INIT + frame("[]") + frame('{"jsonrpc":"2.0","id":1.5,"method":"a"}')
                    + frame('{"jsonrpc":"2.0","id":true,"method":"a"}')
                    + frame('{"jsonrpc":"2.0","id":9223372036854775807,"method":"a"}')),
    "garbage_between": seed(1, [3], INIT + b"GARBAGE\r\n\r\n" + LIST + b"\xff\xfe:\n\r\n\r\n" + LIST),
    "oversize": seed(4 | 1, [50], INIT + frame(req(5, "mcp/executeTool", {"id": ECHO, "arguments": {"a": "x" * 400}})) + LIST),
    "trace_verbose": seed(2, [], INIT + frame(note("$/setTrace", {"value": "verbose"})) + LIST),
    "cancel": seed(2, [], INIT + frame(req(6, "mcp/executeTool", {"id": ECHO})) + frame(note("$/cancelRequest", {"id": 6}))),
    "not_json": seed(0, [1], INIT + frame("{not json") + frame(b"\"\xff\xfe\"") + frame("")),
    "second_initialize": seed(2, [], frame(req(2, "initialize", {"clientCapabilities": {}})) + INIT + INIT),
    "unknown_methods": seed(3, [], INIT + frame(req(7, "rpc.x")) + frame(req(8, "$/y")) + frame(req(9, "nope", [1]))
                            + frame(req(10, "mcp/executeTool", {"id": "mcp://fuzz/none"}))),
}

def line(message):
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def mc_init(version):
    return line(req(1, "initialize", {"protocolVersion": version, "capabilities": {},
                                      "clientInfo": {"name": "f", "version": "1"}})) \
        + line(note("notifications/initialized"))


MC_CALLS = (line(req(2, "tools/list")) + line(req(3, "tools/call", {"name": "echo", "arguments": {"a": 1}}))
            + line(req(4, "tools/call", {"name": "rich", "arguments": {}})))
model_context_session = {
    "latest": seed(2, [], mc_init("2025-11-25") + MC_CALLS),
    "v2025_06_18": seed(2, [7], mc_init("2025-06-18") + MC_CALLS),
    "v2025_03_26": seed(3, [], mc_init("2025-03-26") + MC_CALLS
                        + line([req(5, "tools/list"), req(6, "ping")])),
    "v2024_11_05": seed(2, [3, 1], mc_init("2024-11-05") + MC_CALLS),
    "old_with_2026": seed(2, [], mc_init("2025-03-26") + line(req(7, "tools/call", {
        "name": "rich", "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}))),
    "before_initialize": seed(2, [], MC_CALLS + mc_init("2099-01-01") + MC_CALLS),
    "cancel": seed(2, [], mc_init("2025-11-25") + line(req(8, "tools/call", {"name": "echo"}))
                   + line(note("notifications/cancelled", {"requestId": 8}))),
}

PRETTY = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "mcp/listTools", "params": {"a": [1, {"b": None}]}},
                    indent=2).encode()
http_stream_body = {
    "compact_lines": seed(5, [], b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{}}}\n'
                          b'{"jsonrpc":"2.0","method":"initialized"}\n'),
    "pretty": seed(5, [3], PRETTY + b"\n" + PRETTY),
    "adjacent": seed(4, [], b'[{"d":1}]{"e":"\\\\"}"str"{}'),
    "scalars": seed(4, [2], b'42 "x y"\nnull garbage -1.5e3 true'),
    "escapes": seed(4, [1], b'{"a":"}\\"{"}\n  {"b":"\\\\"}'),
    "mismatched": seed(4, [4], b'{"a": [}\n{"b":1}'),
    "oversize_compact": seed(2, [7], b'{"m":"' + b"x" * 60 + b'"}\n{"ok":1}\n'),
    "oversize_spaced": seed(3, [100], b'{"m": "' + b"x " * 60 + b'"}\n{"ok":1}\n'),
    "unfinished": seed(4, [2], b'{"a":[1,'),
    "utf8": seed(5, [5], '{"s":"héllo ✓ 😀"}\n["日本語"]'.encode()),
    "blank": seed(0, [1], b" \n\t \r\n"),
    "deep": seed(6, [13], b"[" * 40 + b"{}" + b"]" * 40),
}

for target, seeds in [("frame_decoder", frame_decoder), ("stdio_session", stdio_session),
                      ("model_context_session", model_context_session),
                      ("http_stream_body", http_stream_body)]:
    d = os.path.join(HERE, "corpus", target)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    print(target, len(seeds), "seeds,", sum(len(v) for v in seeds.values()), "bytes")
