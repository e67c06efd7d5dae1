//! The checker of stdio output shared by the property tests
//! (tests/properties.rs) and the fuzz targets (fuzz/src/lib.rs), which
//! include this file by path: docs/mcp-v1.md §7, nothing but
//! `Content-Length: N\r\n\r\n` + N bytes of compact JSON-RPC; and
//! docs/model-context.md §4, nothing but lines of compact JSON-RPC.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

/// Checks stdio output: nothing but `Content-Length: N\r\n\r\n` + N bytes
/// of compact UTF-8 JSON, each a JSON-RPC response, a notification or a
/// non-empty batch of responses. Returns the frames' bodies.
pub fn check_stdio_output(output: &[u8]) -> Result<Vec<&[u8]>, String> {
    let mut rest = output;
    let mut frames = Vec::new();
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
        check_body(body, false)?;
        frames.push(body);
        rest = tail;
    }
    Ok(frames)
}

/// Checks newline-delimited output (the Model Context Protocol on stdio):
/// nothing but lines of compact UTF-8 JSON ending `\n`, each a JSON-RPC
/// response (an error about an unreadable message has no `id`; no `id` is
/// ever `null`), a notification, or a request the server sends. Returns the
/// lines.
pub fn check_line_output(output: &[u8]) -> Result<Vec<&[u8]>, String> {
    if output.is_empty() {
        return Ok(Vec::new());
    }
    let body = output
        .strip_suffix(b"\n")
        .ok_or_else(|| format!("output does not end with a newline: {:?}", shown(output)))?;
    body.split(|b| *b == b'\n')
        .map(|line| {
            if line.is_empty() {
                return Err("an empty line".to_owned());
            }
            check_body(line, true).map(|()| line)
        })
        .collect()
}

fn shown(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(120)]).into_owned()
}

type Members = BTreeMap<String, Box<RawValue>>;

/// One outgoing body: compact UTF-8 JSON, a response, a notification or a
/// non-empty batch of responses (`lines`: the Model Context Protocol's
/// rules for ids). Read through `RawValue`, so that echoed integer ids of
/// any length are checked as written.
fn check_body(body: &[u8], lines: bool) -> Result<(), String> {
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
        return items.iter().try_for_each(|r| check_response(r, lines));
    }
    let object: Members =
        serde_json::from_str(text).map_err(|e| format!("not a JSON object {text}: {e}"))?;
    match (object.contains_key("method"), object.contains_key("id")) {
        (true, true) if lines => check_request(&object),
        (true, _) => check_notification(&object),
        (false, _) => check_response(&object, lines),
    }
}

/// A request the server sends (Model Context Protocol): an integer id.
fn check_request(object: &Members) -> Result<(), String> {
    let raw = |k: &str| object.get(k).map(|v| v.get());
    let integer =
        raw("id").is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()));
    if raw("jsonrpc") != Some("\"2.0\"") || !integer {
        return Err(format!("bad request from the server: {object:?}"));
    }
    Ok(())
}

fn check_response(object: &Members, lines: bool) -> Result<(), String> {
    let raw = |k: &str| object.get(k).map(|v| v.get());
    if raw("jsonrpc") != Some("\"2.0\"") {
        return Err(format!("jsonrpc is not \"2.0\": {object:?}"));
    }
    if lines && raw("id") == Some("null") {
        return Err(format!(
            "a null id (the Model Context Protocol omits it): {object:?}"
        ));
    }
    if lines && raw("id").is_none() && raw("error").is_some() {
        return check_error_object(raw("error").unwrap_or_default());
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
        (None, Some(error)) => check_error_object(error),
        _ => Err(format!("not exactly one of result and error: {object:?}")),
    }
}

fn check_error_object(error: &str) -> Result<(), String> {
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
