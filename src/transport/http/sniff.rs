//! Which protocol an HTTP request speaks (docs/model-context.md §1),
//! decided here and nowhere else, in two steps: by its headers, before the
//! body is read ([`by_headers`]), and, for a `POST` the headers left to MCP
//! v1.0, by its first message's method once the body is parsed
//! ([`by_body`]).

use http::header::ACCEPT;
use http::request::Parts;

use super::streamable::{SESSION_ID, listed};
use super::{MCP_METHOD, PROTOCOL_VERSION};
use crate::dialect::Protocols;
use crate::jsonrpc::{Incoming, Parsed};

/// Whether a request is Streamable HTTP (the Model Context Protocol) by its
/// headers, for a server speaking `protocols`: always when it speaks only
/// that protocol, never when it does not speak it.
pub(super) fn by_headers(protocols: Protocols, parts: &Parts) -> bool {
    protocols.model_context() && (!protocols.mcp_v1() || headers_say_so(parts))
}

/// Whether a request's headers say it speaks the Model Context Protocol
/// (docs/model-context.md §1): a session id, a protocol version or a method
/// header, or an `Accept` that lists `text/event-stream` by name (a
/// wildcard such as curl's `*/*` does not).
fn headers_say_so(parts: &Parts) -> bool {
    // One pass over the few headers a request has (no hashing of names).
    parts.headers.iter().any(|(name, value)| {
        if name == ACCEPT {
            return listed(value.as_bytes()).any(|m| m.eq_ignore_ascii_case(b"text/event-stream"));
        }
        *name == SESSION_ID || *name == PROTOCOL_VERSION || *name == MCP_METHOD
    })
}

/// Whether a parsed `POST` body the headers left to MCP v1.0 is the Model
/// Context Protocol's after all, for a server speaking `protocols`: its
/// (first) message is one of that protocol's methods.
pub(super) fn by_body(protocols: Protocols, parsed: &Parsed<'_>) -> bool {
    protocols.model_context() && speaks_model_context(parsed)
}

/// Whether a parsed body's (first) message is a method of the Model
/// Context Protocol (docs/model-context.md §1).
fn speaks_model_context(parsed: &Parsed<'_>) -> bool {
    let ours = |m: &Incoming<'_>| match m {
        Incoming::Request { method, .. } | Incoming::Notification { method, .. } => {
            crate::dialect::model_context::is_method(method)
        }
        _ => false,
    };
    match parsed {
        Parsed::Single(message) => ours(message),
        Parsed::Batch(messages) => messages.first().is_some_and(ours),
        Parsed::Error(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::http::streamable::tests::with_accept;

    #[test]
    fn an_accept_naming_event_streams_is_streamable_http_and_a_wildcard_is_not() {
        let both = with_accept(&["application/json;q=0.9 , TEXT/Event-Stream"]);
        assert!(by_headers(Protocols::Both, &both));
        let wild = with_accept(&["text/*, */*;q=0.1"]);
        assert!(
            !by_headers(Protocols::Both, &wild),
            "a wildcard does not make a request Streamable HTTP"
        );
        assert!(by_headers(Protocols::ModelContext, &wild));
        assert!(!by_headers(Protocols::McpV1, &both));
    }
}
