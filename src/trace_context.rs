//! Trace context in `_meta` (feature `otel`): a request's server span,
//! whose parent is the W3C `traceparent`/`tracestate` its `_meta` carries
//! (and whose context takes its `baggage`), named and attributed as
//! OpenTelemetry's semantic conventions for MCP say; and the context of a
//! request to the client, written into its `_meta`.
//!
//! Spans are `tracing` spans: with no subscriber, or one without an
//! OpenTelemetry layer, they cost a check and record nothing. The fields
//! named `otel.*` are `tracing-opentelemetry`'s (name, kind, status).

use std::borrow::Cow;
use std::sync::LazyLock;

use opentelemetry::propagation::{
    Extractor, Injector, TextMapCompositePropagator, TextMapPropagator,
};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use serde_json::{Map, Value};
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::error::ErrorCode;
use crate::fast::prefilter::Prefilter;

/// The `tracing` target of the spans made here.
pub(crate) const TARGET: &str = "clawmcp::request";

/// The `_meta` keys that carry trace context (the 2026-07-28 revision
/// reserves them; OpenTelemetry's conventions use them in every revision).
pub(crate) const KEYS: [&str; 3] = ["traceparent", "tracestate", "baggage"];

/// The propagator of trace context in `_meta`.
static PROPAGATOR: LazyLock<TextMapCompositePropagator> = LazyLock::new(propagator);

/// W3C Trace Context, then W3C Baggage: how `_meta` carries a trace, and
/// what [`crate::otel::init`] makes the global propagator.
pub(crate) fn propagator() -> TextMapCompositePropagator {
    TextMapCompositePropagator::new(vec![
        Box::new(TraceContextPropagator::new()),
        Box::new(BaggagePropagator::new()),
    ])
}

/// What a request's `_meta` says of its trace: each of [`KEYS`], if a
/// string.
#[derive(Debug, Default)]
pub(crate) struct Carried<'a>(pub(crate) [Option<Cow<'a, str>>; 3]);

impl Extractor for Carried<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        let i = KEYS.iter().position(|k| k.eq_ignore_ascii_case(key))?;
        self.0.get(i)?.as_deref()
    }

    fn keys(&self) -> Vec<&str> {
        (KEYS.iter().zip(&self.0))
            .filter(|(_, v)| v.is_some())
            .map(|(k, _)| *k)
            .collect()
    }
}

/// A `_meta` object being written.
struct Written<'a>(&'a mut Map<String, Value>);

impl Injector for Written<'_> {
    fn set(&mut self, key: &str, value: String) {
        // (An empty `tracestate` says nothing: it is left out.)
        if !value.is_empty() {
            self.0.insert(key.to_owned(), Value::String(value));
        }
    }
}

/// Where a request came from, for its span.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Transport {
    /// Standard input and output (`network.transport` `pipe`).
    Stdio,
    /// HTTP over TCP: the request's HTTP version, its peer's address when
    /// known, and the client a trusted proxy forwarded it for.
    #[cfg(feature = "http")]
    Http {
        version: http::Version,
        peer: Option<std::net::SocketAddr>,
        forwarded_for: Option<std::net::IpAddr>,
    },
}

/// The server span of a request: named by its method (its target is
/// recorded once it is known, [`target`]), its parent the context
/// `carried` in its `_meta` (none: a root span), not entered yet.
pub(crate) fn request_span(
    method: &str,
    id: Option<&str>,
    transport: Transport,
    session_id: Option<&str>,
    carried: &Carried<'_>,
) -> tracing::Span {
    let (network, protocol, protocol_version, peer, forwarded_for) = match transport {
        Transport::Stdio => (
            "pipe",
            None::<&str>,
            None::<&str>,
            None::<std::net::SocketAddr>,
            None::<std::net::IpAddr>,
        ),
        #[cfg(feature = "http")]
        Transport::Http {
            version,
            peer,
            forwarded_for,
        } => {
            let version = match version {
                http::Version::HTTP_09 => Some("0.9"),
                http::Version::HTTP_10 => Some("1.0"),
                http::Version::HTTP_11 => Some("1.1"),
                http::Version::HTTP_2 => Some("2"),
                http::Version::HTTP_3 => Some("3"),
                _ => None,
            };
            ("tcp", Some("http"), version, peer, forwarded_for)
        }
    };
    // Behind a trusted proxy the client is the one it forwarded for (its
    // port unknown), and the proxy is the network peer.
    let (client_address, client_port, network_peer) = match forwarded_for {
        Some(client) => (Some(client), None, peer),
        None => (peer.map(|p| p.ip()), peer.map(|p| p.port()), None),
    };
    let client_address = client_address.map(|ip| ip.to_canonical().to_string());
    let network_peer_address = network_peer.map(|p| p.ip().to_canonical().to_string());
    // (What a client wrote is bounded: a span holds no more of it than
    // `MOST_WRITTEN` bytes a value.)
    let method = bounded(method);
    let span = tracing::info_span!(
        target: TARGET,
        "request",
        otel.name = method,
        otel.kind = "server",
        otel.status_code = Empty,
        otel.status_description = Empty,
        mcp.method.name = method,
        mcp.protocol.version = Empty,
        mcp.session.id = session_id,
        jsonrpc.request.id = id.map(bounded),
        network.transport = network,
        network.protocol.name = protocol,
        network.protocol.version = protocol_version,
        client.address = client_address.as_deref(),
        client.port = client_port.map(i64::from),
        network.peer.address = network_peer_address.as_deref(),
        network.peer.port = network_peer.map(|p| i64::from(p.port())),
        gen_ai.operation.name = Empty,
        gen_ai.tool.name = Empty,
        gen_ai.prompt.name = Empty,
        mcp.resource.uri = Empty,
        error.type = Empty,
        rpc.response.status_code = Empty,
    );
    if carried.0.iter().any(Option::is_some) {
        // (`Err`: no OpenTelemetry layer is installed; nothing to parent.)
        let _ = span.set_parent(PROPAGATOR.extract(&carried.checked()));
    }
    span
}

impl Carried<'_> {
    /// The context as the extractor may read it: a `traceparent` that is
    /// not W3C's `version-traceid-parentid-flags` (2, 32, 16 and 2
    /// lowercase hex digits) is dropped with its `tracestate`, so that the
    /// request starts a trace of its own (the propagator would take some
    /// malformed ones).
    fn checked(&self) -> Carried<'_> {
        let [parent, state, baggage] = self.0.each_ref().map(|v| v.as_deref().map(Cow::Borrowed));
        match parent.filter(|p| is_traceparent(p)) {
            Some(parent) => Carried([Some(parent), state, baggage]),
            None => Carried([None, None, baggage]),
        }
    }
}

/// Whether `text` is written as a W3C `traceparent`: `00-` and the rest of
/// version 00, or a later version's first four fields (more may follow).
fn is_traceparent(text: &str) -> bool {
    let hex = |field: &str, len: usize| {
        field.len() == len
            && field
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    let mut fields = text.split('-');
    let (Some(version), Some(trace), Some(parent), Some(flags)) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return false;
    };
    let more = fields.next().is_some();
    hex(version, 2)
        && version != "ff"
        && !(version == "00" && more)
        && hex(trace, 32)
        && hex(parent, 16)
        && hex(flags, 2)
}

/// What a request acts on, once its dialect read it.
pub(crate) enum Target<'a> {
    /// A tool: the span is named `tools/call echo`.
    Tool(&'a str),
    /// A prompt: `prompts/get planner`.
    Prompt(&'a str),
    /// A resource, by URI (an attribute only: the conventions keep URIs
    /// out of span names).
    Resource(&'a str),
}

/// Records the target, and names `span` after its method and a tool or
/// prompt.
pub(crate) fn target(span: &tracing::Span, method: &str, target: Target<'_>) {
    let (name, field) = match target {
        Target::Tool(name) => {
            span.record("gen_ai.operation.name", "execute_tool");
            (name, "gen_ai.tool.name")
        }
        Target::Prompt(name) => (name, "gen_ai.prompt.name"),
        Target::Resource(uri) => {
            span.record("mcp.resource.uri", bounded(uri));
            return;
        }
    };
    span.record(field, name);
    span.record("otel.name", format!("{method} {name}"));
}

/// Records the protocol version a request speaks.
pub(crate) fn version(span: &tracing::Span, version: &str) {
    span.record("mcp.protocol.version", version);
}

/// How a request ended, as its span records it.
pub(crate) enum SpanEnd<'a> {
    /// A result.
    Result,
    /// A result the tool marked an error (`isError`), with its text.
    ToolError(&'a str),
    /// A JSON-RPC error, with its code and message.
    Error(i32, &'a str),
    /// Another failure (a client's request timed out, say): its kind and
    /// text.
    Failed(&'a str, &'a str),
}

/// Records `outcome` on `span`: an error sets `error.type` (the JSON-RPC
/// code, or `tool_error`) and the span's status.
pub(crate) fn ended(span: &tracing::Span, outcome: SpanEnd<'_>) {
    let (kind, description) = match outcome {
        SpanEnd::Result => return,
        SpanEnd::ToolError(text) => ("tool_error".to_owned(), text),
        SpanEnd::Error(code, message) => {
            if code == ErrorCode::METHOD_NOT_FOUND.0 {
                // A method the server does not serve is any text a client
                // sends: it would make as many span names as clients like.
                span.record("otel.name", OTHER_METHOD);
            }
            let code = code.to_string();
            span.record("rpc.response.status_code", code.as_str());
            (code, message)
        }
        SpanEnd::Failed(kind, text) => (kind.to_owned(), text),
    };
    span.record("error.type", kind.as_str());
    span.record("otel.status_code", "ERROR");
    span.record("otel.status_description", bounded(description));
}

/// The most bytes of a client's text (a method, an id, a URI, an error's
/// message) a span records in one value.
const MOST_WRITTEN: usize = 256;

/// The span name of a request answered "method not found" (`-32601`), as
/// the semantic conventions name an unknown HTTP method: its method stays
/// in `mcp.method.name`.
const OTHER_METHOD: &str = "_OTHER";

/// `text`, cut to at most [`MOST_WRITTEN`] bytes at a character boundary.
fn bounded(text: &str) -> &str {
    if text.len() <= MOST_WRITTEN {
        return text;
    }
    let end = (0..=MOST_WRITTEN)
        .rev()
        .find(|&at| text.is_char_boundary(at))
        .unwrap_or(0);
    text.get(..end).unwrap_or_default()
}

/// The name of a request to the client's span (its `otel.name` is the
/// method).
const TO_CLIENT_SPAN: &str = "request to the client";

/// The client span of a request to the client (`elicitation/create` and
/// the like), a child of `parent`, with its context written into
/// `params`' `_meta` (made when missing): the client can continue the
/// trace. `params` that are not an object are left as they are.
pub(crate) fn to_client(parent: &tracing::Span, method: &str, params: &mut Value) -> tracing::Span {
    let span = tracing::info_span!(
        target: TARGET,
        parent: parent,
        TO_CLIENT_SPAN,
        otel.name = method,
        otel.kind = "client",
        otel.status_code = Empty,
        otel.status_description = Empty,
        mcp.method.name = method,
        jsonrpc.request.id = Empty,
        error.type = Empty,
        rpc.response.status_code = Empty,
    );
    // (Nothing is written when the span records nothing: no subscriber.)
    let mut carried = Map::new();
    PROPAGATOR.inject_context(&span.context(), &mut Written(&mut carried));
    if let Some(object) = params.as_object_mut().filter(|_| !carried.is_empty()) {
        let meta = object
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            meta.extend(carried);
        }
    }
    span
}

/// Records `id` on `span` if it is the client span of a request to the
/// client ([`to_client`]), the JSON-RPC id its session gave the request.
pub(crate) fn record_client_request_id(span: &tracing::Span, id: u64) {
    if span
        .metadata()
        .is_some_and(|m| m.name() == TO_CLIENT_SPAN && m.target() == TARGET)
    {
        span.record("jsonrpc.request.id", id.to_string().as_str());
    }
}

/// The span of a task's run (the tasks extension), a child of the span of
/// the request that created it: named as its call, with the task's id.
pub(crate) fn task_span(parent: &tracing::Span, tool: &str, task_id: &str) -> tracing::Span {
    tracing::info_span!(
        target: TARGET,
        parent: parent,
        "task",
        otel.name = format!("tools/call {tool}"),
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        mcp.task.id = task_id,
        error.type = Empty,
        rpc.response.status_code = Empty,
    )
}

/// The trace context members of `params`' `_meta`, read from its JSON
/// text: each of [`KEYS`] that is a string.
pub(crate) fn carried_by(params: Option<&str>) -> Carried<'_> {
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(default, borrow, rename = "_meta")]
        meta: Option<std::collections::HashMap<&'a str, &'a serde_json::value::RawValue>>,
    }
    // (A quick look first: most requests carry no trace.)
    static TRACEPARENT: LazyLock<Prefilter> = LazyLock::new(|| Prefilter::new("traceparent"));
    static BAGGAGE: LazyLock<Prefilter> = LazyLock::new(|| Prefilter::new("baggage"));
    let Some(text) =
        params.filter(|t| TRACEPARENT.may_hold(t.as_bytes()) || BAGGAGE.may_hold(t.as_bytes()))
    else {
        return Carried::default();
    };
    match serde_json::from_str::<Params<'_>>(text) {
        Ok(Params { meta: Some(meta) }) => {
            Carried(KEYS.map(|key| meta.get(key).and_then(|raw| json_str(raw.get()))))
        }
        _ => Carried::default(),
    }
}

/// A JSON string's contents, or `None` when `text` is not a JSON string.
/// Most have no escape, and are borrowed; a `tracestate` may need one
/// (its values may hold `"` and `\`), and some writers escape `/`.
pub(crate) fn json_str(text: &str) -> Option<Cow<'_, str>> {
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains(['\\', '"']) {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(text).ok().map(Cow::Owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_context_is_read_from_meta_strings_only() {
        let carried = carried_by(Some(
            r#"{"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"k=v","baggage":7}}"#,
        ));
        assert_eq!(
            carried.get("traceparent"),
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        );
        assert_eq!(carried.get("tracestate"), Some("k=v"));
        assert_eq!(carried.get("baggage"), None, "not a string");
        assert!(
            carried_by(Some(r#"{"name":"x"}"#))
                .0
                .iter()
                .all(Option::is_none)
        );
        assert!(
            carried_by(Some(r#"{"traceparent":1,"_meta":[]}"#))
                .0
                .iter()
                .all(Option::is_none)
        );
        assert!(carried_by(None).0.iter().all(Option::is_none));
    }

    #[test]
    fn a_span_holds_at_most_so_many_bytes_of_a_clients_text_cut_at_a_character() {
        assert_eq!(bounded("tools/call"), "tools/call");
        let long = "é".repeat(MOST_WRITTEN);
        let cut = bounded(&long);
        assert!(cut.len() <= MOST_WRITTEN && cut.len() > MOST_WRITTEN - 2);
        assert!(long.starts_with(cut));
        assert_eq!(bounded(&"a".repeat(MOST_WRITTEN + 1)).len(), MOST_WRITTEN);
    }

    #[test]
    fn a_trace_context_string_with_escapes_is_read_decoded() {
        assert_eq!(json_str(r#""k=v""#).as_deref(), Some("k=v"));
        assert_eq!(json_str(r#""a\/b=c\"d""#).as_deref(), Some("a/b=c\"d"));
        assert_eq!(json_str("7"), None);
    }
}
