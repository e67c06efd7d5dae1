//! Shared pieces of the fuzz targets: how an input is read as a
//! configuration, a chunking and a byte stream, a chunked decoding driver
//! that checks the decoders' resource invariants, and a checker for stdio
//! output (PROTOCOL.md §7: nothing but `Content-Length: N\r\n\r\n` + N bytes
//! of compact JSON-RPC).
//!
//! Input layout (every target):
//!
//! ```text
//! byte 0:        bits 0-2 `choice` (target-specific: limits, buffer size),
//!                bits 3-5 `k`, the number of chunk-size bytes (0-7),
//!                bit 6    `flag` (target-specific)
//! bytes 1..=k:   chunk sizes, each byte b meaning b + 1 bytes, used cyclically
//!                (k = 0: the whole stream in one chunk)
//! the rest:      the byte stream
//! ```

use std::collections::BTreeMap;
use std::io;

use bytes::BytesMut;
use clawmcp::Input;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio_util::codec::Decoder;

/// An input split into its configuration and its byte stream.
#[derive(Debug)]
pub struct Plan<'a> {
    /// Target-specific choice, 0-7.
    pub choice: usize,
    /// Target-specific flag.
    pub flag: bool,
    /// Chunk sizes (each at least 1), used cyclically; empty means one chunk.
    pub chunks: Vec<usize>,
    /// The byte stream.
    pub data: &'a [u8],
}

/// Reads `input` as a [`Plan`].
pub fn plan(input: &[u8]) -> Plan<'_> {
    let Some((&head, rest)) = input.split_first() else {
        return Plan {
            choice: 0,
            flag: false,
            chunks: Vec::new(),
            data: &[],
        };
    };
    let k = usize::from((head >> 3) & 7).min(rest.len());
    Plan {
        choice: usize::from(head & 7),
        flag: head & 0x40 != 0,
        chunks: rest[..k].iter().map(|&b| usize::from(b) + 1).collect(),
        data: &rest[k..],
    }
}

/// Splits `data` into pieces of the plan's chunk sizes (cyclically).
pub fn pieces<'a>(data: &'a [u8], chunks: &[usize]) -> Vec<&'a [u8]> {
    if chunks.is_empty() {
        return vec![data];
    }
    let mut out = Vec::new();
    let mut rest = data;
    let mut sizes = chunks.iter().copied().cycle();
    while !rest.is_empty() {
        let n = sizes.next().unwrap_or(1).clamp(1, rest.len());
        out.push(&rest[..n]);
        rest = &rest[n..];
    }
    out
}

/// What a chunked decoding produced.
#[derive(Debug)]
pub struct Decoded {
    /// Every item, in order.
    pub items: Vec<Input>,
    /// The most bytes left buffered after a `decode` that asked for more.
    pub max_buffered: usize,
}

impl Decoded {
    /// The items that carry content (messages and oversize reports), for
    /// comparing decodings of the same stream; `Unreadable` reasons and
    /// counts may legitimately differ with the chunking.
    pub fn content(&self) -> Vec<&Input> {
        self.items
            .iter()
            .filter(|i| !matches!(i, Input::Unreadable(_)))
            .collect()
    }
}

/// Feeds `data` to `decoder` in `chunks`, draining after each, then ends
/// the input. Panics if the decoder errs or yields items without consuming
/// input (more items than bytes: a loop).
pub fn decode_chunked<D>(mut decoder: D, data: &[u8], chunks: &[usize]) -> Decoded
where
    D: Decoder<Item = Input, Error = io::Error>,
{
    let bound = data.len() + 2;
    let mut buf = BytesMut::new();
    let mut items = Vec::new();
    let mut max_buffered = 0;
    for piece in pieces(data, chunks) {
        buf.extend_from_slice(piece);
        loop {
            match decoder.decode(&mut buf).expect("decode never fails") {
                Some(item) => {
                    items.push(item);
                    assert!(items.len() <= bound, "the decoder yields without consuming");
                }
                None => {
                    max_buffered = max_buffered.max(buf.len());
                    break;
                }
            }
        }
    }
    while let Some(item) = decoder
        .decode_eof(&mut buf)
        .expect("decode_eof never fails")
    {
        items.push(item);
        assert!(
            items.len() <= bound,
            "the decoder yields without consuming at EOF"
        );
    }
    Decoded {
        items,
        max_buffered,
    }
}

/// Where `needle` first occurs in `haystack`.
pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Checks that every message's bytes occur in `data`, in order, without
/// overlapping.
pub fn assert_in_order_slices(items: &[Input], data: &[u8]) {
    let mut at = 0;
    for item in items {
        if let Input::Message(bytes) = item {
            let found = find(&data[at..], bytes)
                .unwrap_or_else(|| panic!("message {bytes:?} is not in the rest of the input"));
            at += found + bytes.len();
        }
    }
}

/// Checks stdio output: nothing but `Content-Length: N\r\n\r\n` + N bytes
/// of compact UTF-8 JSON, each a JSON-RPC response, a notification or a
/// non-empty batch of responses. Returns the number of frames.
pub fn check_stdio_output(output: &[u8]) -> Result<usize, String> {
    let mut rest = output;
    let mut frames = 0;
    while !rest.is_empty() {
        let after = rest
            .strip_prefix(b"Content-Length: ")
            .ok_or_else(|| format!("not a frame header at {:?}", shown(rest)))?;
        let digits = after.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || (digits > 1 && after[0] == b'0') || digits > 15 {
            return Err(format!("bad length in {:?}", shown(rest)));
        }
        let n: usize = std::str::from_utf8(&after[..digits])
            .ok()
            .and_then(|d| d.parse().ok())
            .ok_or_else(|| format!("bad length in {:?}", shown(rest)))?;
        let body_start = after[digits..]
            .strip_prefix(b"\r\n\r\n")
            .ok_or_else(|| format!("header not ended by CRLF CRLF: {:?}", shown(rest)))?;
        if body_start.len() < n {
            return Err(format!("frame of {n} bytes cut short: {:?}", shown(rest)));
        }
        let (body, tail) = body_start.split_at(n);
        check_body(body)?;
        frames += 1;
        rest = tail;
    }
    Ok(frames)
}

fn shown(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(120)]).into_owned()
}

type Members = BTreeMap<String, Box<RawValue>>;

fn check_body(body: &[u8]) -> Result<(), String> {
    let text = std::str::from_utf8(body).map_err(|e| format!("not UTF-8: {e}"))?;
    if !is_compact(body) {
        return Err(format!("not compact: {text}"));
    }
    if text.starts_with('[') {
        let items: Vec<Members> =
            serde_json::from_str(text).map_err(|e| format!("bad batch {text}: {e}"))?;
        if items.is_empty() {
            return Err("an empty batch reply".into());
        }
        return items.iter().try_for_each(check_response);
    }
    let object: Members =
        serde_json::from_str(text).map_err(|e| format!("not a JSON object {text}: {e}"))?;
    if object.contains_key("method") {
        check_notification(&object)
    } else {
        check_response(&object)
    }
}

fn check_response(object: &Members) -> Result<(), String> {
    let raw = |k: &str| object.get(k).map(|v| v.get());
    if raw("jsonrpc") != Some("\"2.0\"") {
        return Err(format!("jsonrpc is not \"2.0\": {object:?}"));
    }
    let id = raw("id").ok_or_else(|| format!("a response without id: {object:?}"))?;
    let integer = id.strip_prefix('-').unwrap_or(id);
    let id_ok = id == "null"
        || serde_json::from_str::<String>(id).is_ok()
        || (!integer.is_empty() && integer.bytes().all(|b| b.is_ascii_digit()));
    if !id_ok {
        return Err(format!("id {id} is not a string, an integer or null"));
    }
    if object
        .keys()
        .any(|k| !["jsonrpc", "id", "result", "error"].contains(&k.as_str()))
    {
        return Err(format!("unexpected member in a response: {object:?}"));
    }
    match (raw("result"), raw("error")) {
        (Some(_), None) => Ok(()),
        (None, Some(error)) => {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            #[allow(dead_code)]
            struct ErrorObject {
                code: i64,
                message: String,
                #[serde(default)]
                data: Option<Box<RawValue>>,
            }
            serde_json::from_str::<ErrorObject>(error)
                .map(drop)
                .map_err(|e| format!("bad error object {error}: {e}"))
        }
        _ => Err(format!("not exactly one of result and error: {object:?}")),
    }
}

fn check_notification(object: &Members) -> Result<(), String> {
    let raw = |k: &str| object.get(k).map(|v| v.get());
    if raw("jsonrpc") != Some("\"2.0\"") || object.contains_key("id") {
        return Err(format!("bad notification: {object:?}"));
    }
    raw("method")
        .and_then(|m| serde_json::from_str::<String>(m).ok())
        .ok_or_else(|| format!("notification method is not a string: {object:?}"))?;
    match raw("params").map(|p| p.as_bytes()[0]) {
        None | Some(b'{' | b'[') => Ok(()),
        _ => Err(format!("notification params not structured: {object:?}")),
    }
}

/// No white space outside strings.
fn is_compact(body: &[u8]) -> bool {
    let (mut in_string, mut escaped) = (false, false);
    for &b in body {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            return false;
        }
    }
    !in_string
}
