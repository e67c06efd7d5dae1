//! What an HTTP request's head says of its protocol, read in one pass over
//! its headers; `dialect::choice` decides from it (docs/model-context.md
//! §1).

use http::header::ACCEPT;
use http::request::Parts;

use super::streamable::{SESSION_ID, listed};
use super::{MCP_METHOD, PROTOCOL_VERSION};
use crate::dialect::HttpHead;

/// The facts of `parts` that choose a protocol.
pub(super) fn head(parts: &Parts) -> HttpHead<'_> {
    let mut head = HttpHead::default();
    // One pass over the few headers a request has (no hashing of names).
    for (name, value) in &parts.headers {
        if name == ACCEPT {
            head.accepts_event_stream |=
                listed(value.as_bytes()).any(|m| m.eq_ignore_ascii_case(b"text/event-stream"));
        } else if *name == SESSION_ID {
            head.session_id = true;
        } else if *name == PROTOCOL_VERSION {
            head.version_repeated |= head.version.is_some();
            head.version
                .get_or_insert(value.to_str().map(str::trim).map_err(|_| value.as_bytes()));
        } else if *name == MCP_METHOD {
            head.method_header = true;
        }
    }
    head
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::{ByHead, Protocols};
    use crate::transport::http::streamable::tests::with_accept;

    #[test]
    fn an_accept_naming_event_streams_is_streamable_http_and_a_wildcard_is_not() {
        let both = with_accept(&["application/json;q=0.9 , TEXT/Event-Stream"]);
        assert_eq!(
            Protocols::Both.by_head(&head(&both)).protocol,
            ByHead::ModelContext
        );
        let wild = with_accept(&["text/*, */*;q=0.1"]);
        assert_eq!(
            Protocols::Both.by_head(&head(&wild)).protocol,
            ByHead::McpV1,
            "a wildcard does not make a request Streamable HTTP"
        );
        assert_eq!(
            Protocols::ModelContext.by_head(&head(&wild)).protocol,
            ByHead::ModelContext
        );
        assert_eq!(
            Protocols::McpV1.by_head(&head(&both)).protocol,
            ByHead::McpV1
        );
    }

    #[test]
    fn a_protocol_version_header_is_trimmed_text_or_the_bytes_of_no_version() {
        let mut parts = with_accept(&[]);
        parts.headers.insert(
            PROTOCOL_VERSION,
            http::HeaderValue::from_static(" 2025-11-25 "),
        );
        assert_eq!(head(&parts).version, Some(Ok("2025-11-25")));
        let unreadable = http::HeaderValue::from_bytes(b"2025-11-25\xff").expect("a value");
        parts.headers.insert(PROTOCOL_VERSION, unreadable);
        assert_eq!(head(&parts).version, Some(Err(&b"2025-11-25\xff"[..])));
        // HTTP trims spaces and tabs only: a no-break space after a version
        // makes a value that names none.
        let padded = http::HeaderValue::from_bytes("2025-11-25\u{a0}".as_bytes()).expect("a value");
        parts.headers.insert(PROTOCOL_VERSION, padded);
        assert_eq!(
            head(&parts).version,
            Some(Err("2025-11-25\u{a0}".as_bytes()))
        );
    }
}
