//! Which protocol an incoming message or HTTP request speaks
//! (docs/model-context.md §1), decided here and nowhere else, for every
//! transport:
//!
//! - a stdio connection, by its first byte ([`Protocols::for_stdio`]);
//! - an HTTP request, by its head ([`Protocols::by_head`]), then a `POST`
//!   by its first message ([`Protocols::for_post`]);
//! - a body served with no transport (`Server::serve_message`), by its
//!   message's method ([`Protocols::for_message`]);
//! - each request of a Model Context Protocol connection, which may be a
//!   2026-07-28 one ([`Dialect::of_request`]).
//!
//! Each answer says what the rest needs: the dialect, and whether the
//! request opens a session, joins one, or has none. The transports read
//! the facts (a byte, headers, a parse) and act on the answer; they decide
//! nothing themselves.

use serde_json::value::RawValue;

use super::{Dialect, Protocols, model_context, revision_2026};
use crate::fast::prefilter::Prefilter;
use crate::jsonrpc::ToolCall;
use crate::jsonrpc::{Incoming, Parsed};

impl Protocols {
    /// The dialect of a stdio session whose first non-blank byte is
    /// `first` (`None`: the input ended first): a JSON line is the Model
    /// Context Protocol's, anything else a `Content-Length` frame (MCP
    /// v1.0).
    pub(crate) fn for_stdio(self, first: Option<u8>) -> Dialect {
        match self {
            Self::McpV1 => Dialect::McpV1,
            Self::ModelContext => Dialect::ModelContext,
            Self::Both if matches!(first, Some(b'{' | b'[')) => Dialect::ModelContext,
            Self::Both => Dialect::McpV1,
        }
    }

    /// The dialect a body served alone is served in (`Server::serve_message`:
    /// no transport, so no headers, and no session). A server that speaks
    /// only MCP v1.0 serves its single exchange; one that speaks only the
    /// Model Context Protocol serves the 2026-07-28 revision, that
    /// protocol's one form without a session. A server that speaks both
    /// serves one message whose method is the Model Context Protocol's
    /// (the 2026-07-28 tasks extension's among them) in that revision, and
    /// anything else (a batch, an MCP v1.0 method, whatever its params
    /// hold) in MCP v1.0.
    pub(crate) fn for_message(self, parsed: &Parsed<'_>) -> Dialect {
        let model_context = |message: &Incoming<'_>| {
            is_model_context(message)
                || matches!(message, Incoming::Request { method, .. }
                    if revision_2026::tasks::is_method(method))
        };
        match (self, parsed) {
            (Self::McpV1, _) => Dialect::McpV1,
            (Self::ModelContext, _) => Dialect::Revision2026,
            (Self::Both, Parsed::Single(message)) if model_context(message) => {
                Dialect::Revision2026
            }
            (Self::Both, _) => Dialect::McpV1,
        }
    }
}

impl Dialect {
    /// The dialect one request of a session in this dialect is served in:
    /// a Model Context Protocol connection serves 2026-07-28 requests in
    /// that revision. `discovered` says the connection was served
    /// `server/discover` and has not initialized: then every request but
    /// `initialize` and `ping` is a 2026-07-28 one (whose `_meta` must say
    /// its version and capabilities), not a request before the handshake.
    pub(super) fn of_request(
        self,
        method: &str,
        params: Option<&RawValue>,
        call: Option<&ToolCall<'_>>,
        discovered: bool,
    ) -> Self {
        if self != Self::ModelContext {
            return self;
        }
        let probed = discovered
            && !matches!(
                method,
                model_context::methods::INITIALIZE | model_context::methods::PING
            );
        if probed || claims_revision_2026(method, params, call) {
            Self::Revision2026
        } else {
            self
        }
    }

    /// Whether serving `method` in this dialect, before the handshake,
    /// makes the connection one that discovered the 2026-07-28 revision.
    pub(super) fn discovers(self, method: &str) -> bool {
        self == Self::Revision2026 && method == model_context::methods::DISCOVER
    }
}

/// What an HTTP request's head says of its protocol: the facts the HTTP
/// transport reads, in one pass over the headers.
#[cfg(feature = "http")]
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct HttpHead<'a> {
    /// An `Mcp-Session-Id` header is present.
    pub(crate) session_id: bool,
    /// The `MCP-Protocol-Version` header's value, if present: `Ok` with
    /// its text, trimmed, or `Err` with a value that is not visible ASCII
    /// (a byte past ASCII or a control character: no version).
    pub(crate) version: Option<Result<&'a str, &'a [u8]>>,
    /// `MCP-Protocol-Version` came more than once (the request is refused).
    pub(crate) version_repeated: bool,
    /// An `Mcp-Method` header (2026-07-28) is present.
    pub(crate) method_header: bool,
    /// `Accept` lists `text/event-stream` by name (a wildcard such as
    /// curl's `*/*` does not count).
    pub(crate) accepts_event_stream: bool,
}

/// What an HTTP request is, by its head alone.
#[cfg(feature = "http")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ByHead {
    /// The 2026-07-28 revision's: its version is one no session speaks
    /// (such a `GET` or `DELETE` is refused).
    Revision2026,
    /// Streamable HTTP (the Model Context Protocol).
    ModelContext,
    /// MCP v1.0, unless a `POST`'s first message says otherwise.
    McpV1,
}

/// How a `POST` is served, by its head and its first message.
#[cfg(feature = "http")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Post {
    /// MCP v1.0: a streaming session when its first message is MCP
    /// v1.0's `initialize`, else a single exchange.
    McpV1 {
        /// The body is a streaming session.
        streaming: bool,
    },
    /// A request of a Streamable HTTP session.
    Session {
        /// It is the `initialize` (without a session id) that opens one.
        opens: bool,
    },
    /// A 2026-07-28 request, served without a session.
    Revision2026,
}

/// What [`Protocols::by_head`] makes of a request's head: the protocol,
/// and the verdict on its `MCP-Protocol-Version`, which whatever answers
/// the request acts on and does not work out again.
#[cfg(feature = "http")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct HeadVerdict<'a> {
    /// What the request is by its head.
    pub(crate) protocol: ByHead,
    /// Its `MCP-Protocol-Version`.
    pub(crate) version: HeadVersion<'a>,
    /// It names a session (`Mcp-Session-Id`).
    pub(crate) session_id: bool,
}

/// A request's `MCP-Protocol-Version`, as this server takes it.
#[cfg(feature = "http")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeadVersion<'a> {
    /// The header is absent.
    Absent,
    /// A version this server speaks in some form (a session's, or
    /// 2026-07-28), trimmed.
    Spoken(&'a str),
    /// Text naming a version this server does not speak at all: refused,
    /// where the order of checks reaches it, with the 2026-07-28
    /// revision's `-32022`, which lists those it speaks.
    Unspoken(&'a str),
    /// A value that is not visible ASCII: no version it speaks.
    Unreadable(&'a [u8]),
}

#[cfg(feature = "http")]
impl<'a> HeadVersion<'a> {
    /// The version named, when this server does not speak it, as text
    /// (a value that is not visible ASCII, lossily, trimmed).
    pub(crate) fn unspoken(self) -> Option<std::borrow::Cow<'a, str>> {
        match self {
            Self::Unspoken(version) => Some(version.into()),
            Self::Unreadable(bytes) => Some(
                String::from_utf8_lossy(bytes.trim_ascii())
                    .into_owned()
                    .into(),
            ),
            Self::Absent | Self::Spoken(_) => None,
        }
    }
}

#[cfg(feature = "http")]
impl ByHead {
    /// The dialect a request is refused in before its body is read (a
    /// body over the size limit).
    pub(crate) fn dialect(self) -> Dialect {
        match self {
            Self::Revision2026 => Dialect::Revision2026,
            Self::ModelContext => Dialect::ModelContext,
            Self::McpV1 => Dialect::McpV1,
        }
    }
}

#[cfg(feature = "http")]
impl Post {
    /// The dialect the `POST` is answered in.
    pub(crate) fn dialect(self) -> Dialect {
        match self {
            Self::McpV1 { .. } => Dialect::McpV1,
            Self::Session { .. } => Dialect::ModelContext,
            Self::Revision2026 => Dialect::Revision2026,
        }
    }
}

#[cfg(feature = "http")]
impl Protocols {
    /// What an HTTP request is by its head, for a server speaking these
    /// protocols. MCP v1.0 when the server does not speak the Model
    /// Context Protocol. Else the 2026-07-28 revision when its
    /// `MCP-Protocol-Version` names a version no session speaks
    /// (2026-07-28, one this server does not know, or a value that is not
    /// visible ASCII), unless it names a session and a version this
    /// server does not speak at all (or a value that is not visible
    /// ASCII): that is the session's request, whose id is checked before
    /// its version. Else Streamable HTTP when the server speaks only the
    /// Model Context Protocol, or a session id, a protocol version, a
    /// method header or an `Accept` naming event streams says so; MCP v1.0
    /// otherwise. With it, the verdict on the version, which nothing after
    /// works out again.
    pub(crate) fn by_head<'a>(self, head: &HttpHead<'a>) -> HeadVerdict<'a> {
        let version = match head.version {
            None => HeadVersion::Absent,
            Some(Ok(version)) if revision_2026::SUPPORTED.contains(&version) => {
                HeadVersion::Spoken(version)
            }
            Some(Ok(version)) => HeadVersion::Unspoken(version),
            Some(Err(bytes)) => HeadVersion::Unreadable(bytes),
        };
        let verdict = |protocol| HeadVerdict {
            protocol,
            version,
            session_id: head.session_id,
        };
        if !self.model_context() {
            return verdict(ByHead::McpV1);
        }
        let sessions_speak =
            matches!(version, HeadVersion::Spoken(v) if model_context::supported_over_http(v));
        // With a session id, a version no form speaks (or a value that is
        // not visible ASCII) is the session's request's, refused once its
        // id is checked.
        let revision_2026 = match version {
            HeadVersion::Absent => false,
            HeadVersion::Spoken(_) => !sessions_speak,
            HeadVersion::Unspoken(_) | HeadVersion::Unreadable(_) => !head.session_id,
        };
        if revision_2026 {
            return verdict(ByHead::Revision2026);
        }
        let says_so = head.session_id
            || head.version.is_some()
            || head.method_header
            || head.accepts_event_stream;
        if !self.mcp_v1() || says_so {
            verdict(ByHead::ModelContext)
        } else {
            verdict(ByHead::McpV1)
        }
    }

    /// How a `POST` is served: by its head (what
    /// [`by_head`](Self::by_head) said of it), and where that leaves MCP v1.0
    /// open, by its first message (`first`: the parse of its body, or of
    /// its first JSON value): an `initialize` names its protocol (a
    /// `protocolVersion` is the Model Context Protocol's), and so does a
    /// method of the Model Context Protocol. A Model Context Protocol
    /// `POST` without a session id is a 2026-07-28 request when it is not
    /// a session's `initialize` and its message says so (a method only
    /// that revision has, or a `_meta` that names a version); one that
    /// says nothing is a session request that lost its session. A
    /// `subscriptions/listen` that says so is that revision's even with a
    /// session id: its stream is counted as the revision's, and holds no
    /// session open.
    pub(crate) fn for_post(self, head: &HeadVerdict<'_>, first: &Parsed<'_>) -> Post {
        let by_head = head.protocol;
        let message = match first {
            Parsed::Single(message) => Some(message),
            Parsed::Batch(messages) => messages.first(),
            Parsed::Error(_) => None,
        };
        if by_head == ByHead::Revision2026 {
            return Post::Revision2026;
        }
        let opening = message.map_or(Opening::Other, opening);
        let model_context = match by_head {
            ByHead::Revision2026 | ByHead::ModelContext => true,
            ByHead::McpV1 => {
                self.model_context()
                    && (opening == Opening::ModelContext || message.is_some_and(is_model_context))
            }
        };
        if !model_context {
            return Post::McpV1 {
                streaming: opening == Opening::V1,
            };
        }
        let single = match first {
            Parsed::Single(message) => Some(message),
            _ => None,
        };
        // A listen stream is the revision's alone, with or without a session
        // id: it counts against the stream limits, and ends with its body,
        // holding no session open.
        if (!head.session_id || single.is_some_and(is_listen))
            && opening != Opening::ModelContext
            && single.is_some_and(message_claims_revision_2026)
        {
            return Post::Revision2026;
        }
        Post::Session {
            opens: !head.session_id
                && single.is_some_and(|m| {
                    matches!(m, Incoming::Request { method, .. }
                        if method == model_context::methods::INITIALIZE)
                }),
        }
    }
}

/// What a body's first message opens.
#[cfg(feature = "http")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opening {
    /// MCP v1.0's `initialize` (no `protocolVersion`).
    V1,
    /// The Model Context Protocol's `initialize` (its params name
    /// `protocolVersion`).
    ModelContext,
    /// Anything else.
    Other,
}

/// Whether `message` is an `initialize`, and whose.
#[cfg(feature = "http")]
fn opening(message: &Incoming<'_>) -> Opening {
    #[derive(serde::Deserialize)]
    struct Initialize<'a> {
        #[serde(borrow, rename = "protocolVersion")]
        version: Option<&'a RawValue>,
    }
    match message {
        Incoming::Request { method, params, .. }
            if method == model_context::methods::INITIALIZE =>
        {
            let versioned = params.is_some_and(|p| {
                serde_json::from_str::<Initialize<'_>>(p.get()).is_ok_and(|i| i.version.is_some())
            });
            if versioned {
                Opening::ModelContext
            } else {
                Opening::V1
            }
        }
        _ => Opening::Other,
    }
}

/// Whether a message is a method of the Model Context Protocol.
fn is_model_context(message: &Incoming<'_>) -> bool {
    match message {
        Incoming::Request { method, .. } | Incoming::Notification { method, .. } => {
            model_context::is_method(method)
        }
        _ => false,
    }
}

/// Whether `message` is a `subscriptions/listen` request.
#[cfg(feature = "http")]
fn is_listen(message: &Incoming<'_>) -> bool {
    matches!(message, Incoming::Request { method, .. } if method == revision_2026::LISTEN)
}

/// Whether a message says it is the 2026-07-28 revision's.
#[cfg(feature = "http")]
fn message_claims_revision_2026(message: &Incoming<'_>) -> bool {
    match message {
        Incoming::Request {
            method,
            params,
            call,
            ..
        } => claims_revision_2026(method, *params, call.as_ref()),
        _ => false,
    }
}

/// Whether a request is the 2026-07-28 revision's: its method is one only
/// that revision has, or its `_meta` names a protocol version (which no
/// session request carries).
fn claims_revision_2026(
    method: &str,
    params: Option<&RawValue>,
    call: Option<&ToolCall<'_>>,
) -> bool {
    use model_context::methods;
    if matches!(method, methods::DISCOVER | revision_2026::LISTEN) {
        return true;
    }
    if let Some(call) = call.filter(|_| method == methods::TOOLS_CALL) {
        return call.meta(super::kept_meta::PROTOCOL_VERSION).is_some();
    }
    // A quick look for the key first; then `_meta` itself must name it (an
    // argument that merely holds the text does not count).
    static KEY: std::sync::LazyLock<Prefilter> =
        std::sync::LazyLock::new(|| Prefilter::new(revision_2026::keys::PROTOCOL_VERSION));
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(default, borrow, rename = "_meta")]
        meta: Option<revision_2026::Meta<'a>>,
    }
    params.is_some_and(|raw| {
        KEY.may_hold(raw.get().as_bytes())
            && serde_json::from_str::<Params<'_>>(raw.get())
                .is_ok_and(|p| p.meta.is_some_and(|m| m.protocol_version.is_some()))
    })
}

#[cfg(all(test, feature = "http"))]
mod tests {
    use super::*;
    use crate::dialect::parse;

    fn post(protocols: Protocols, head: HttpHead<'_>, body: &str) -> Post {
        protocols.for_post(&protocols.by_head(&head), &parse(body.as_bytes()))
    }

    #[test]
    fn a_first_initialize_names_its_protocol_and_a_v1_one_streams() {
        let none = HttpHead::default();
        let v1 = r#"{"jsonrpc":"2.0","method":"initialize","params":{},"id":1}"#;
        assert_eq!(
            post(Protocols::Both, none, v1),
            Post::McpV1 { streaming: true }
        );
        let batch = r#"[{"jsonrpc":"2.0","method":"initialize","id":1}]"#;
        assert_eq!(
            post(Protocols::Both, none, batch),
            Post::McpV1 { streaming: true }
        );
        let mc = r#"{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-11-25"},"id":1}"#;
        assert_eq!(
            post(Protocols::Both, none, mc),
            Post::Session { opens: true }
        );
        assert_eq!(
            post(Protocols::McpV1, none, mc),
            Post::McpV1 { streaming: false }
        );
        let other = r#"{"jsonrpc":"2.0","method":"mcp/listTools","id":1}"#;
        assert_eq!(
            post(Protocols::Both, none, other),
            Post::McpV1 { streaming: false }
        );
        let notification = r#"{"jsonrpc":"2.0","method":"initialize"}"#;
        assert_eq!(
            post(Protocols::Both, none, notification),
            Post::McpV1 { streaming: false }
        );
        assert_eq!(
            post(Protocols::Both, none, "{not json"),
            Post::McpV1 { streaming: false }
        );
    }

    #[test]
    fn a_method_of_the_model_context_protocol_is_streamable_http_without_headers() {
        let none = HttpHead::default();
        let list = r#"{"jsonrpc":"2.0","method":"tools/list","id":1}"#;
        assert_eq!(
            post(Protocols::Both, none, list),
            Post::Session { opens: false }
        );
        assert_eq!(
            post(Protocols::McpV1, none, list),
            Post::McpV1 { streaming: false }
        );
    }

    #[test]
    fn a_version_no_session_speaks_is_the_2026_revision_by_its_head() {
        let head = HttpHead {
            version: Some(Ok("2026-07-28")),
            ..HttpHead::default()
        };
        assert_eq!(
            Protocols::Both.by_head(&head).protocol,
            ByHead::Revision2026
        );
        assert_eq!(Protocols::McpV1.by_head(&head).protocol, ByHead::McpV1);
        let session = HttpHead {
            version: Some(Ok("2025-11-25")),
            ..HttpHead::default()
        };
        assert_eq!(
            Protocols::Both.by_head(&session).protocol,
            ByHead::ModelContext
        );
        let unreadable = HttpHead {
            version: Some(Err(b"\xff")),
            ..HttpHead::default()
        };
        assert_eq!(
            Protocols::Both.by_head(&unreadable).protocol,
            ByHead::Revision2026
        );
        // A version the server does not speak at all: a 2026-07-28 request
        // (refused with the versions it speaks), unless it names a session,
        // whose id is checked first; 2026-07-28 itself, session id or not.
        let unknown = HttpHead {
            version: Some(Ok("2099-01-01")),
            ..HttpHead::default()
        };
        assert_eq!(
            Protocols::Both.by_head(&unknown).protocol,
            ByHead::Revision2026
        );
        let in_session = HttpHead {
            session_id: true,
            ..unknown
        };
        assert_eq!(
            Protocols::Both.by_head(&in_session).protocol,
            ByHead::ModelContext
        );
        let unreadable_in_session = HttpHead {
            session_id: true,
            ..unreadable
        };
        assert_eq!(
            Protocols::Both.by_head(&unreadable_in_session).protocol,
            ByHead::ModelContext
        );
        let revision_in_session = HttpHead {
            session_id: true,
            ..head
        };
        assert_eq!(
            Protocols::Both.by_head(&revision_in_session).protocol,
            ByHead::Revision2026
        );
        // The verdict on the version goes with the protocol, so that what
        // answers the request refuses a version it does not speak without
        // asking again.
        assert_eq!(
            Protocols::Both.by_head(&head).version,
            HeadVersion::Spoken("2026-07-28")
        );
        assert_eq!(
            Protocols::Both.by_head(&in_session).version.unspoken(),
            Some("2099-01-01".into())
        );
        assert_eq!(
            Protocols::Both
                .by_head(&unreadable_in_session)
                .version
                .unspoken(),
            Some("\u{fffd}".into())
        );
        assert_eq!(Protocols::Both.by_head(&session).version.unspoken(), None);
        assert_eq!(
            Protocols::Both.by_head(&HttpHead::default()).version,
            HeadVersion::Absent
        );
    }

    #[test]
    fn without_a_session_a_request_whose_meta_names_a_version_is_the_2026_revision() {
        let head = HttpHead {
            accepts_event_stream: true,
            ..HttpHead::default()
        };
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        assert_eq!(post(Protocols::Both, head, call), Post::Revision2026);
        let with_session = HttpHead {
            session_id: true,
            ..head
        };
        assert_eq!(
            post(Protocols::Both, with_session, call),
            Post::Session { opens: false }
        );
        let plain = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        assert_eq!(
            post(Protocols::Both, head, plain),
            Post::Session { opens: false }
        );
        let discover = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover"}"#;
        assert_eq!(post(Protocols::Both, head, discover), Post::Revision2026);
    }

    #[test]
    fn a_stdio_connection_is_chosen_by_its_first_byte() {
        assert_eq!(Protocols::Both.for_stdio(Some(b'{')), Dialect::ModelContext);
        assert_eq!(Protocols::Both.for_stdio(Some(b'C')), Dialect::McpV1);
        assert_eq!(Protocols::Both.for_stdio(None), Dialect::McpV1);
        assert_eq!(
            Protocols::ModelContext.for_stdio(Some(b'C')),
            Dialect::ModelContext
        );
    }
}
