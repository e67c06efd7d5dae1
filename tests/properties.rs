//! Property tests ("Prove it holds"): the stdio frame codec, the HTTP
//! streaming-body splitter and whole stdio sessions, checked on generated
//! inputs in arbitrary chunkings (docs/mcp-v1.md §1, §7, §8).
//!
//! Every property is deterministic given its proptest seed and fast: the
//! case count is kept modest (`CASES`) so the file runs in a few seconds.
//! Set `PROPTEST_CASES` to run more. The fuzz targets in `fuzz/` push the
//! same invariants much further.

use std::collections::BTreeMap;
use std::io;
use std::time::Duration;

use bytes::BytesMut;
use clawmcp::definition::ToolDefinition;
use clawmcp::server::Input;
use clawmcp::transport::{FrameCodec, JsonStreamDecoder};
use clawmcp::{Server, ToolContext, tool_fn};
use proptest::prelude::*;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::codec::{Decoder, Encoder};

#[path = "common/stdio_output.rs"]
mod stdio_output;

/// Cases per property: enough to shake out framing bugs, few enough for CI.
const CASES: u32 = 64;
/// The message limit of the decoders and the test server.
const LIMIT: usize = 4096;
const ECHO: &str = "mcp://props/tools/echo:v1";

fn config() -> ProptestConfig {
    // `PROPTEST_CASES` (read by `ProptestConfig::default`) still wins when set.
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(CASES);
    ProptestConfig {
        cases,
        // Persisted failures would land in tests/, which is not ours to litter.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------

/// Strings with a fair share of multi-byte UTF-8 and of JSON-significant
/// characters (quotes, backslashes, brackets, control characters).
fn text() -> BoxedStrategy<String> {
    prop_oneof![
        any::<String>(),
        "[a-z{}\\[\\]\"\\\\:, \n\t]{0,12}",
        prop::sample::select(vec![
            "héllo ✓ 😀".to_owned(),
            "日本語のテキスト".to_owned(),
            "\u{0}\u{1f}\u{7f}\u{80}\u{ffff}".to_owned(),
            "Content-Length: 5\r\n\r\n".to_owned(),
            "}]\"\\".to_owned(),
            String::new(),
        ]),
    ]
    .boxed()
}

/// Any JSON value without floats (so that bytes and values round-trip).
fn json_value() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map(text(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

/// A JSON-RPC-shaped message (or a batch of them) with arbitrary content.
fn message() -> BoxedStrategy<Value> {
    let single = (any::<i64>(), text(), json_value()).prop_map(|(id, method, params)| {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"p": params}})
    })
    .boxed();
    prop_oneof![
        4 => single.clone(),
        1 => prop::collection::vec(single, 1..4).prop_map(Value::from),
        1 => json_value(),
    ]
    .boxed()
}

/// Chunk sizes, used cyclically to cut an input into pieces.
fn chunking() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        Just(vec![1]),
        prop::collection::vec(1usize..64, 1..12),
        prop::collection::vec(1usize..4096, 1..4),
    ]
}

// ---------------------------------------------------------------------------
// Decoding helpers
// ---------------------------------------------------------------------------

/// Feeds `input` to `decoder` in chunks of the given sizes (cyclically),
/// draining it after each chunk, then ends the input.
fn decode_chunked<D>(mut decoder: D, input: &[u8], sizes: &[usize]) -> Vec<Input>
where
    D: Decoder<Item = Input, Error = io::Error>,
{
    // Every item consumes at least one byte (or ends the input), so more
    // items than this means the decoder is spinning.
    let bound = input.len() + 2;
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut rest = input;
    let mut sizes = sizes.iter().copied().cycle();
    while !rest.is_empty() {
        let n = sizes.next().unwrap_or(1).clamp(1, rest.len());
        buf.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
        while let Some(item) = decoder.decode(&mut buf).expect("decode never fails") {
            out.push(item);
            assert!(out.len() <= bound, "decoder yields without consuming");
        }
    }
    while let Some(item) = decoder
        .decode_eof(&mut buf)
        .expect("decode_eof never fails")
    {
        out.push(item);
        assert!(
            out.len() <= bound,
            "decoder yields without consuming at EOF"
        );
    }
    out
}

fn msg(bytes: &[u8]) -> Input {
    Input::Message(bytes.to_vec().into())
}

fn framed(body: &[u8]) -> Vec<u8> {
    let mut dst = BytesMut::new();
    FrameCodec::new(usize::MAX)
        .encode(body, &mut dst)
        .expect("encoding into memory cannot fail");
    dst.to_vec()
}

// ---------------------------------------------------------------------------
// FrameCodec
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    /// Framed valid messages, split anywhere, decode to the same messages.
    #[test]
    fn frame_codec_messages_survive_any_chunking(
        messages in prop::collection::vec(message(), 0..8),
        sizes in chunking(),
    ) {
        let bodies: Vec<String> = messages.iter().map(Value::to_string).collect();
        let mut input = Vec::new();
        for body in &bodies {
            input.extend(framed(body.as_bytes()));
        }
        let expected: Vec<Input> = bodies.iter().map(|b| msg(b.as_bytes())).collect();
        let out = decode_chunked(FrameCodec::new(usize::MAX), &input, &sizes);
        prop_assert_eq!(&out, &expected);
        for (item, value) in out.iter().zip(&messages) {
            let Input::Message(bytes) = item else { unreachable!() };
            prop_assert_eq!(&serde_json::from_slice::<Value>(bytes).unwrap(), value);
        }
    }

    /// Encode-then-decode is the identity on any bodies, whatever their bytes.
    #[test]
    fn frame_codec_encode_decode_is_identity(
        bodies in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..LIMIT), 0..6),
        sizes in chunking(),
    ) {
        let mut codec = FrameCodec::new(LIMIT);
        let mut input = BytesMut::new();
        for body in &bodies {
            codec.encode(body.as_slice(), &mut input).unwrap();
        }
        let expected: Vec<Input> = bodies.iter().map(|b| msg(b)).collect();
        prop_assert_eq!(&decode_chunked(FrameCodec::new(LIMIT), &input, &[input.len().max(1)]), &expected);
        prop_assert_eq!(&decode_chunked(FrameCodec::new(LIMIT), &input, &sizes), &expected);
    }

    /// Whatever the bytes: messages are within the limit and slices of the
    /// input in order, and messages and oversize reports do not depend on
    /// the chunking (`Unreadable` reports may).
    #[test]
    fn frame_codec_any_bytes_decode_alike_in_any_chunking(
        input in prop::collection::vec(stdio_piece(), 0..8).prop_map(|p| p.concat()),
        limit in prop::sample::select(vec![0usize, 16, 100, LIMIT]),
        sizes in chunking(),
    ) {
        let content = |items: Vec<Input>| -> Vec<Input> {
            items.into_iter().filter(|i| !matches!(i, Input::Unreadable(_))).collect()
        };
        let out = content(decode_chunked(FrameCodec::new(limit), &input, &sizes));
        let whole = content(decode_chunked(FrameCodec::new(limit), &input, &[input.len().max(1)]));
        prop_assert_eq!(&out, &whole);
        let mut at = 0;
        for item in &out {
            match item {
                Input::Message(body) => {
                    prop_assert!(body.len() <= limit);
                    let found = find(&input[at..], body);
                    prop_assert!(found.is_some(), "{body:?} is not in the rest of the input");
                    at += found.unwrap_or(0) + body.len();
                }
                Input::TooLarge { declared } => prop_assert!(*declared > limit),
                Input::Unreadable(_) => {}
            }
        }
    }

    /// A frame over the limit is reported with its declared size and
    /// skipped; the frames around it are intact (docs/mcp-v1.md §7).
    #[test]
    fn frame_codec_skips_oversize_frames_exactly(
        bodies in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..400), 1..6),
        limit in 0usize..300,
        sizes in chunking(),
    ) {
        let input: Vec<u8> = bodies.iter().flat_map(|b| framed(b)).collect();
        let expected: Vec<Input> = bodies
            .iter()
            .map(|b| if b.len() > limit { Input::TooLarge { declared: b.len() } } else { msg(b) })
            .collect();
        prop_assert_eq!(decode_chunked(FrameCodec::new(limit), &input, &sizes), expected);
    }
}

// ---------------------------------------------------------------------------
// JsonStreamDecoder
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    /// Newline-separated compact values, split anywhere, decode to the same values.
    #[test]
    fn json_stream_compact_lines_survive_any_chunking(
        values in prop::collection::vec(json_value(), 0..8),
        sizes in chunking(),
    ) {
        let lines: Vec<String> = values.iter().map(Value::to_string).collect();
        let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let expected: Vec<Input> = lines.iter().map(|l| msg(l.as_bytes())).collect();
        let out = decode_chunked(JsonStreamDecoder::new(usize::MAX), input.as_bytes(), &sizes);
        prop_assert_eq!(&out, &expected);
        for (item, value) in out.iter().zip(&values) {
            let Input::Message(bytes) = item else { unreachable!() };
            prop_assert_eq!(&serde_json::from_slice::<Value>(bytes).unwrap(), value);
        }
    }

    /// Pretty-printed values, separated by any white space (or by nothing
    /// between containers), split anywhere, decode to the same values.
    #[test]
    fn json_stream_pretty_values_survive_any_chunking(
        values in prop::collection::vec(json_value(), 0..6),
        separators in prop::collection::vec(
            prop::sample::select(vec!["\n", "\r\n", "\n\n", " ", "\t \n", ""]), 6),
        sizes in chunking(),
    ) {
        let pretty: Vec<String> = values
            .iter()
            .map(|v| serde_json::to_string_pretty(v).unwrap())
            .collect();
        let mut input = String::from(" \n");
        for (i, p) in pretty.iter().enumerate() {
            input.push_str(p);
            let container = |s: &str| s.starts_with(['{', '[', '"']);
            let next_is_container = pretty.get(i + 1).is_none_or(|n| container(n));
            // Only delimited values may touch; a bare scalar ends at white space.
            let sep = if separators[i].is_empty() && !(container(p) && next_is_container) {
                "\n"
            } else {
                separators[i]
            };
            input.push_str(sep);
        }
        let expected: Vec<Input> = pretty.iter().map(|p| msg(p.as_bytes())).collect();
        let out = decode_chunked(JsonStreamDecoder::new(LIMIT * 16), input.as_bytes(), &sizes);
        prop_assert_eq!(&out, &expected);
        for (item, value) in out.iter().zip(&values) {
            let Input::Message(bytes) = item else { unreachable!() };
            prop_assert_eq!(&serde_json::from_slice::<Value>(bytes).unwrap(), value);
        }
    }

    /// Whatever the bytes: every message is within the limit and is a
    /// slice of the input, in order, the messages do not depend on the
    /// chunking, and decoding terminates.
    #[test]
    fn json_stream_any_bytes_yield_in_order_slices_within_the_limit(
        input in prop::collection::vec(
            prop::sample::select(b"{}[]\"\\ \nab1:,".to_vec()), 0..600),
        limit in 1usize..64,
        sizes in chunking(),
    ) {
        let out = decode_chunked(JsonStreamDecoder::new(limit), &input, &sizes);
        let whole = decode_chunked(JsonStreamDecoder::new(limit), &input, &[input.len().max(1)]);
        let messages = |items: &[Input]| -> Vec<Input> {
            items.iter().filter(|i| matches!(i, Input::Message(_))).cloned().collect()
        };
        prop_assert_eq!(messages(&out), messages(&whole), "the chunking changed the messages");
        let mut at = 0;
        for item in &out {
            match item {
                Input::Message(bytes) => {
                    prop_assert!(bytes.len() <= limit, "{} > {limit}", bytes.len());
                    prop_assert!(!bytes.is_empty());
                    let found = find(&input[at..], bytes);
                    prop_assert!(found.is_some(), "{bytes:?} is not in the rest of the input");
                    at += found.unwrap_or(0) + bytes.len();
                }
                Input::TooLarge { declared } => prop_assert!(*declared > limit),
                Input::Unreadable(_) => prop_assert!(false, "the JSON stream has no unreadable input"),
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

// ---------------------------------------------------------------------------
// Whole stdio sessions
// ---------------------------------------------------------------------------

/// A server with one echo tool and a small message limit.
fn server() -> Server {
    let echo = tool_fn(
        ToolDefinition {
            mcp_id: ECHO.into(),
            name: "echo".into(),
            description: "Returns its arguments.".into(),
            input_schema: json!({"type": "object"}),
            output_schema: json!({}),
        },
        |args: Value, _ctx: ToolContext| async move { Ok(args) },
    );
    // MCP v1.0 only: its framing is what these properties are about (a
    // server speaking both would read input starting with `{` as the Model
    // Context Protocol's newline-delimited JSON; see
    // `ndjson_any_input_yields_only_json_lines`).
    Server::builder()
        .name("props")
        .protocols(clawmcp::server::Protocols::McpV1)
        .tool(echo)
        .max_message_size(LIMIT)
        .build()
        .expect("the test server builds")
}

/// The same echo tool on a server of both dialects.
fn both_dialects() -> Server {
    let echo = tool_fn(
        ToolDefinition {
            mcp_id: ECHO.into(),
            name: "echo".into(),
            description: "Returns its arguments.".into(),
            input_schema: json!({"type": "object"}),
            output_schema: json!({}),
        },
        |args: Value, _ctx: ToolContext| async move { Ok(args) },
    );
    Server::builder()
        .name("props")
        .tool(echo)
        .max_message_size(LIMIT)
        .build()
        .expect("the test server builds")
}

/// Pieces of newline-delimited input: valid messages of the Model Context
/// Protocol, near misses, garbage, lines over the limit.
fn ndjson_input() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        prop::sample::select(vec![
            &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-03-26\",\"capabilities\":{},\"clientInfo\":{\"name\":\"p\",\"version\":\"1\"}}}\n"[..],
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"p\",\"version\":\"1\"}}}\n",
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
            b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"x\":1}}}\n",
            b"{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"tools/list\",\"params\":{\"cursor\":\"bad\"}}\n",
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\r\n",
            b"[{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}]\n",
            b"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}\n",
            b"{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\n",
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":2}}\n",
            b"\n",
            b"garbage\n",
            b"{\"jsonrpc\":\"1.0\",\"id\":true}\n",
        ])
        .prop_map(<[u8]>::to_vec),
        (LIMIT..LIMIT + 64).prop_map(|n| {
            let mut line = vec![b'x'; n];
            line.push(b'\n');
            line
        }),
        prop::collection::vec(any::<u8>(), 0..64),
    ];
    prop::collection::vec(piece, 0..12).prop_map(|pieces| pieces.concat())
}

/// Writes `input` to a fresh stdio session, closes the input, and reads the
/// output to its end (concurrently, so neither side can block the other).
fn run_session(input: &[u8]) -> (io::Result<()>, Vec<u8>) {
    run_session_on(server(), input)
}

fn run_session_on(server: Server, input: &[u8]) -> (io::Result<()>, Vec<u8>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let (client, server_end) = tokio::io::duplex(8 * 1024);
        let (server_read, server_write) = tokio::io::split(server_end);
        let (mut from_server, mut to_server) = tokio::io::split(client);
        let serve = server.serve_io(server_read, server_write);
        let write = async move {
            to_server.write_all(input).await?;
            to_server.shutdown().await
        };
        let read = async move {
            let mut out = Vec::new();
            from_server.read_to_end(&mut out).await.map(|_| out)
        };
        let (served, written, output) = tokio::time::timeout(Duration::from_secs(30), async {
            tokio::join!(serve, write, read)
        })
        .await
        .expect("the session ends after its input ends");
        written.expect("the server reads all of its input");
        (served, output.expect("the output is readable"))
    })
}

/// Splits stdio output into frame bodies, checking that it is nothing but
/// `Content-Length: N\r\n\r\n` + N bytes of compact JSON, each a JSON-RPC
/// response, notification or batch of responses.
fn output_messages(output: &[u8]) -> Result<Vec<Value>, String> {
    Ok(stdio_output::check_stdio_output(output)?
        .into_iter()
        .map(|body| serde_json::from_slice(body).unwrap_or(Value::Null))
        .collect())
}

fn request(id: &Value, method: &str, params: Option<Value>) -> Vec<u8> {
    let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
    if let Some(params) = params {
        message["params"] = params;
    }
    framed(message.to_string().as_bytes())
}

fn handshake() -> Vec<u8> {
    let mut out = request(
        &json!(1),
        "initialize",
        Some(json!({"clientCapabilities": {}})),
    );
    out.extend(framed(
        br#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#,
    ));
    out
}

/// Pieces of stdio input: frames of valid and invalid messages, frames with
/// wrong lengths, header fragments and raw garbage.
fn stdio_piece() -> impl Strategy<Value = Vec<u8>> {
    let body = prop_oneof![
        Just(handshake()),
        (0i64..20, json_value()).prop_map(|(id, arguments)| request(
            &json!(id),
            "mcp/executeTool",
            Some(json!({"id": ECHO, "arguments": {"a": arguments}}))
        )),
        (0i64..20).prop_map(|id| request(&json!(id), "mcp/listTools", None)),
        (0i64..20).prop_map(|id| request(&json!(id), "mcp/listResources", Some(json!({})))),
        json_value().prop_map(|p| request(&json!("s"), "mcp/executeTool", Some(p))),
        Just(framed(br#"[{"jsonrpc":"2.0","id":7,"method":"mcp/listTools"},{"jsonrpc":"2.0","method":"initialized"},3]"#)),
        Just(framed(b"[]")),
        Just(framed(br#"{"jsonrpc":"2.0","method":"$/setTrace","params":{"value":"verbose"}}"#)),
        Just(framed(br#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":3}}"#)),
        Just(framed(br#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"x"}"#)),
        Just(framed(br#"{"jsonrpc":"2.0","id":1.5,"method":"mcp/listTools"}"#)),
        message().prop_map(|m| framed(m.to_string().as_bytes())),
        prop::collection::vec(any::<u8>(), 0..64).prop_map(|b| framed(&b)),
    ];
    prop_oneof![
        6 => body,
        // A frame whose declared length is off.
        1 => (message(), -8i64..8).prop_map(|(m, delta)| {
            let body = m.to_string();
            let n = (body.len() as i64 + delta).max(0);
            format!("Content-Length: {n}\r\n\r\n{body}").into_bytes()
        }),
        2 => prop::sample::select(vec![
            &b"Content-Length: "[..], b"content-length:", b"Content-Length: 2\r\n",
            b"Content-Type: application/json\r\n", b"Content-Type: text/plain\r\n",
            b"X-Other: 1\r\n", b"\r\n", b"\n", b"\r\n\r\n", b"12", b":", b"{}",
            b"Content-Length: 99999999\r\n\r\n", b"Content-Length: -1\r\n\r\n",
            b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        ]).prop_map(<[u8]>::to_vec),
        1 => prop::collection::vec(any::<u8>(), 0..64),
    ]
}

fn stdio_input() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..1024),
        prop::collection::vec(stdio_piece(), 0..12).prop_map(|pieces| pieces.concat()),
    ]
}

/// Garbage that cannot be mistaken for the start of a frame.
fn garbage() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..48),
        prop::sample::select(vec![
            &b"Content-Type: application/json\r\n"[..],
            b"X-Other: 1\r\n",
            b"GARBAGE",
            b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"mcp/listTools\"}",
            b"\r\n",
            b"\n",
            b": ",
            b"Content-Lenght: 3\r\n",
            b"\xff\xfe",
        ])
        .prop_map(<[u8]>::to_vec),
    ];
    prop::collection::vec(piece, 0..6)
        .prop_map(|pieces| pieces.concat())
        .prop_filter("must not hold a Content-Length header name", |g| {
            find(&g.to_ascii_lowercase(), b"content-length").is_none()
        })
}

proptest! {
    #![proptest_config(config())]

    /// Any bytes into a session that starts with `{` or `[` on a server of
    /// both dialects: the Model Context Protocol over newline-delimited
    /// JSON, so the output is only lines of compact JSON-RPC, and
    /// `serve_io` returns `Ok` (docs/model-context.md §1, §4).
    #[test]
    fn ndjson_any_input_yields_only_json_lines(
        blanks in prop::sample::select(vec!["", " ", "\r\n", "\n\t "]),
        opener in prop::sample::select(vec!["{", "["]),
        input in ndjson_input(),
    ) {
        let mut all = Vec::from(blanks.as_bytes());
        all.extend_from_slice(opener.as_bytes());
        all.extend_from_slice(&input);
        let (served, output) = run_session_on(both_dialects(), &all);
        prop_assert!(served.is_ok(), "serve_io failed: {served:?}");
        if let Err(e) = stdio_output::check_line_output(&output) {
            prop_assert!(false, "{e}\ninput: {:?}\noutput: {}", String::from_utf8_lossy(&all), String::from_utf8_lossy(&output));
        }
    }

    /// Any bytes into a session: the output is only well-formed frames of
    /// JSON-RPC responses and notifications, and `serve_io` returns `Ok`.
    #[test]
    fn stdio_any_input_yields_only_well_formed_frames(input in stdio_input()) {
        let (served, output) = run_session(&input);
        prop_assert!(served.is_ok(), "serve_io failed: {served:?}");
        if let Err(e) = output_messages(&output) {
            prop_assert!(false, "{e}\noutput: {}", String::from_utf8_lossy(&output));
        }
    }

    /// After garbage and a blank line, the reader resynchronises at the next
    /// `Content-Length` header: every valid request framed after it is
    /// answered with its result, and the garbage gets nothing but `-32700`
    /// errors with id null (docs/mcp-v1.md §7).
    #[test]
    fn stdio_requests_after_garbage_are_served(
        rounds in prop::collection::vec((garbage(), any::<bool>(), text()), 1..6),
    ) {
        let mut input = handshake();
        let mut expected = BTreeMap::new();
        for (i, (garbage, list, arg)) in rounds.iter().enumerate() {
            input.extend_from_slice(garbage);
            input.extend_from_slice(b"\r\n\r\n");
            let id = if i % 2 == 0 { json!(100 + i) } else { json!(format!("r{i}")) };
            if *list {
                input.extend(request(&id, "mcp/listTools", None));
                expected.insert(id.to_string(), None);
            } else {
                let args = json!({"text": arg});
                input.extend(request(&id, "mcp/executeTool", Some(json!({"id": ECHO, "arguments": args}))));
                expected.insert(id.to_string(), Some(args));
            }
        }
        let (served, output) = run_session(&input);
        prop_assert!(served.is_ok(), "serve_io failed: {served:?}");
        let messages = match output_messages(&output) {
            Ok(messages) => messages,
            Err(e) => return Err(TestCaseError::fail(e)),
        };
        let mut answered = BTreeMap::new();
        for m in messages.iter().flat_map(|m| m.as_array().cloned().unwrap_or_else(|| vec![m.clone()])) {
            if m["id"] == json!(1) {
                prop_assert!(m["result"].is_object(), "initialize failed: {m}");
                continue;
            }
            if m["id"].is_null() {
                prop_assert_eq!(&m["error"]["code"], &json!(-32700), "garbage got {}", m);
                continue;
            }
            let key = m["id"].to_string();
            prop_assert!(expected.contains_key(&key), "a reply to no request: {m}");
            prop_assert!(answered.insert(key.clone(), m.clone()).is_none(), "two replies to {key}");
        }
        for (key, args) in &expected {
            let reply = answered.get(key);
            prop_assert!(reply.is_some(), "request {key} was not answered: {}", String::from_utf8_lossy(&output));
            let reply = reply.unwrap_or(&Value::Null);
            match args {
                Some(args) => prop_assert_eq!(&reply["result"]["output"], args, "{}", reply),
                None => prop_assert!(reply["result"].is_array(), "{reply}"),
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Regressions found by fuzzing (fuzz/README.md)
// ---------------------------------------------------------------------------

/// The `http_stream_body` fuzz target's minimised crash: limit 16, chunks
/// of 7 bytes. The value `{"…` never ends, so all of it is one oversize
/// value and nothing else. The decoder used to re-derive the value's kind
/// from the first byte of each new chunk while skipping: here it resumed at
/// a chunk starting with `\n`, took that for the end of a bare scalar and
/// handed the trailing `}` over as a message.
#[test]
fn json_stream_regression_oversize_value_skipped_across_chunks() {
    let stream = b"{\"\x17\x00\x00\x00\x00M}\n\xac\n}\n\xac\nMM\n}\n\n}";
    let whole = decode_chunked(JsonStreamDecoder::new(16), stream, &[stream.len()]);
    let chunked = decode_chunked(JsonStreamDecoder::new(16), stream, &[7]);
    assert!(matches!(whole[..], [Input::TooLarge { .. }]), "{whole:?}");
    assert!(
        matches!(chunked[..], [Input::TooLarge { .. }]),
        "{chunked:?}"
    );
}

/// The same bug as it hurt a streaming HTTP session: an oversize value with
/// white space in it, arriving in chunks, was not skipped whole; its tail
/// came out as messages (each answered `-32700`) and swallowed the valid
/// message after it, whose request then never got a reply.
#[test]
fn json_stream_regression_message_after_oversize_value_survives() {
    let stream = b"{\"m\": \"x x x x x x x x x x x x x x x x x x x x\"}\n{\"ok\":1}\n";
    for chunk in [1, 7, 8, 16, 33, stream.len()] {
        let out = decode_chunked(JsonStreamDecoder::new(16), stream, &[chunk]);
        assert!(
            matches!(out[..], [Input::TooLarge { .. }, Input::Message(ref m)] if &m[..] == b"{\"ok\":1}"),
            "chunks of {chunk}: {out:?}"
        );
    }
}
