//! Streamable HTTP for the Model Context Protocol's 2026-07-28 revision
//! (docs/model-context.md §7): one `POST` per request, no session.
//!
//! - The headers mirror the body and are checked against it before the
//!   request is served: `MCP-Protocol-Version` (the `_meta` version),
//!   `Mcp-Method`, `Mcp-Name` (`params.name` or `params.uri`) and the
//!   `Mcp-Param-{Name}` of a tool's `x-mcp-header` arguments, each value
//!   plain or `=?base64?…?=`. A mismatch, or a header that is missing or
//!   malformed, is `400` with `-32020`.
//! - Errors carry their HTTP status: `-32601` is `404`; `-32602`,
//!   `-32020`, `-32021` and `-32022` are `400`.
//! - A reply known at once, or work that ends before it sends anything,
//!   is `application/json`; work that sends progress or log lines first is
//!   `text/event-stream` (with `X-Accel-Buffering: no`), ending with the
//!   reply. The stream carries only notifications of this request, never
//!   a request to the client. Closing it cancels the request.
//! - `GET` and `DELETE` are `405`: the revision has neither.

use crate::jsonrpc::RawText;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http::header::{ALLOW, HeaderName, HeaderValue};
use http::request::Parts;
use http::{Response, StatusCode};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::body::{Feed, McpBody};
use super::guard::one_of;
use super::{MCP_METHOD, McpService, PROTOCOL_VERSION, json, plain, sse};
use crate::dialect::{Dialect, HeadVersion, kept_meta, keys, methods, unsupported_version};
use crate::error::{ErrorCode, RpcError, clipped};
use crate::jsonrpc::{Incoming, RequestId};
use crate::principal::Caller;
use crate::session::bounded::BoundedReceiver;
use crate::session::outbox;
use crate::session::{About, Alone, Dispatched, Listening, Outgoing, Session, alone};

/// `Mcp-Name`.
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
/// Messages a request's stream holds before its work waits.
const OUTBOX: usize = 64;

/// `405` for a `GET` or `DELETE` in this revision.
pub(super) fn not_allowed() -> Response<McpBody> {
    let mut response = plain(
        StatusCode::METHOD_NOT_ALLOWED,
        "2026-07-28 has no GET or DELETE: POST each request (subscriptions/listen for notifications)",
    );
    response
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static("POST"));
    response
}

/// `400` with `-32020` (and no id: the body is not read) for a request
/// of this revision whose `MCP-Protocol-Version` came more than once.
pub(super) fn repeated_version() -> Response<McpBody> {
    let error = RpcError::new(
        ErrorCode::HEADER_MISMATCH,
        "a request carries at most one MCP-Protocol-Version header",
    );
    json(
        StatusCode::BAD_REQUEST,
        Dialect::ModelContext.error(None, &error).bytes,
    )
}

/// What the headers are checked against: the body's values, read once.
#[derive(Deserialize, Default)]
struct Mirrored<'a> {
    #[serde(default, borrow)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    uri: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow, rename = "taskId")]
    task_id: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow, rename = "_meta")]
    meta: Option<MetaVersion<'a>>,
    /// The arguments' text (read into values only for a tool that
    /// mirrors some into headers).
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
    /// The arguments' text when the one-pass reading of a call read them.
    #[serde(skip)]
    arguments_text: Option<&'a str>,
}

impl<'a> Mirrored<'a> {
    /// The values of request `message` its headers mirror. Params that
    /// are an object this cannot read (a member of another type, a member
    /// twice) are an `Err`: the headers could not be held to them, and the
    /// dialect, which reads fewer members, might still serve them.
    fn of(message: &'a Incoming<'a>) -> Result<Self, String> {
        let Incoming::Request { params, call, .. } = message else {
            return Ok(Self::default());
        };
        Ok(match (call, params) {
            (Some(p), _) => Self {
                name: Some(std::borrow::Cow::Borrowed(p.tool.as_ref())),
                meta: p.meta.map(|_| MetaVersion {
                    version: p.meta(kept_meta::PROTOCOL_VERSION),
                    progress: p.meta(kept_meta::PROGRESS_TOKEN),
                    log_level: p.meta(kept_meta::LOG_LEVEL),
                }),
                arguments_text: p.arguments.map(|a| a.get()),
                ..Self::default()
            },
            (_, Some(raw)) if raw.get().starts_with('{') => serde_json::from_str(raw.get())
                .map_err(|e| {
                    format!("the params cannot be read to hold the headers to them: {e}")
                })?,
            // Params that are no object are the dialect's to refuse.
            _ => Self::default(),
        })
    }

    /// The arguments' text, however they were read.
    fn arguments(&self) -> Option<&'a str> {
        self.arguments_text.or(self.arguments.map(RawValue::get))
    }

    /// Whether a request of `method` may send notifications before its
    /// reply (it asked for progress or log lines), and so needs a session
    /// whose output is its stream. (A listen stream is nothing but
    /// notifications, yet it needs no session: `alone` hands it back for
    /// the body to read.)
    fn streams(&self, method: &str) -> bool {
        method != crate::dialect::LISTEN
            && (self.meta.as_ref()).is_some_and(|m| m.progress.is_some() || m.log_level.is_some())
    }
}

#[derive(Deserialize, Default)]
struct MetaVersion<'a> {
    #[serde(default, borrow, rename = "io.modelcontextprotocol/protocolVersion")]
    version: Option<RawText<'a>>,
    #[serde(default, borrow, rename = "progressToken")]
    progress: Option<RawText<'a>>,
    #[serde(default, borrow, rename = "io.modelcontextprotocol/logLevel")]
    log_level: Option<RawText<'a>>,
}

impl McpService {
    /// A `POST` of the 2026-07-28 revision, its body parsed (`message`);
    /// `version` is `dialect::choice`'s verdict on its
    /// `MCP-Protocol-Version`.
    pub(super) async fn revision_2026_post(
        &self,
        parts: &Parts,
        body: &Bytes,
        message: Incoming<'_>,
        version: HeadVersion<'_>,
        caller: &Caller,
    ) -> Response<McpBody> {
        // A version this server does not speak at all is refused with the
        // list of those it does, whatever the message: before its kind is
        // looked at, and before its headers are held to its body.
        if let HeadVersion::Unspoken(version) = version {
            let id = match &message {
                Incoming::Request { id, .. } => Some(id),
                Incoming::Invalid { id, .. } => (*id != RequestId::Null).then_some(id),
                _ => None,
            };
            let reply = unsupported_version(id, version);
            return json(status_of(reply.error), reply.bytes);
        }
        let (id, method) = match &message {
            Incoming::Request { id, method, .. } => (id.clone(), method.as_ref()),
            // The revision has no client notifications over HTTP (closing a
            // stream cancels its request): taken and dropped.
            Incoming::Notification { .. } => {
                return Response::builder()
                    .status(StatusCode::ACCEPTED)
                    .body(McpBody::empty())
                    .unwrap_or_default();
            }
            Incoming::Response { .. } => {
                return json(
                    StatusCode::BAD_REQUEST,
                    Dialect::ModelContext
                        .error(
                            None,
                            &RpcError::invalid_request(
                                "2026-07-28 has no requests to the client: a response has nothing to answer",
                            ),
                        )
                        .bytes,
                );
            }
            Incoming::Invalid { id, reason } => {
                let error = RpcError::invalid_request(reason.clone());
                let known = (*id != RequestId::Null).then_some(id);
                return json(
                    StatusCode::BAD_REQUEST,
                    Dialect::ModelContext.error(known, &error).bytes,
                );
            }
        };
        tracing::trace!("<- {}", String::from_utf8_lossy(body));
        // (An unspoken version was refused above.)
        let header_version = match version {
            HeadVersion::Absent => Ok(None),
            HeadVersion::Spoken(version) | HeadVersion::Unspoken(version) => Ok(Some(version)),
            HeadVersion::Unreadable(_) => Err(format!(
                "the {PROTOCOL_VERSION} header has characters a header may not carry"
            )),
        };
        let checked = Mirrored::of(&message).and_then(|mirrored| {
            let version = header_version?;
            self.check_headers(parts, version, method, &mirrored)
                .map(|()| mirrored)
        });
        let mirrored = match checked {
            Ok(mirrored) => mirrored,
            Err(mismatch) => {
                let error = RpcError::new(ErrorCode::HEADER_MISMATCH, mismatch);
                return json(
                    StatusCode::BAD_REQUEST,
                    Dialect::ModelContext.error(Some(&id), &error).bytes,
                );
            }
        };
        let streams = mirrored.streams(method);
        if self.0.stop.is_cancelled() {
            // Once shutdown began, a request is answered as a draining
            // session answers it (`-32603`, "server shutting down"); no
            // new stream opens.
            let reply = Dialect::Revision2026.shutting_down(&id);
            return json(status_of(reply.error), reply.bytes);
        }
        // The session a request runs in when something may come before
        // its reply; most requests are answered without one.
        let session = || {
            let bytes = self.0.server.inner().limits.max_queued_output;
            let (out, outbox) = outbox::channel(OUTBOX, bytes);
            let session =
                Session::revision_2026(self.0.server.inner(), out, self.0.stop.clone(), true)
                    .with_caller(caller.clone());
            (session, outbox)
        };
        if streams {
            // Progress or log lines may come first: the request is served
            // in a session of its own from the start, so that they reach
            // its stream (dispatched here, from the one parse of its body).
            let (session, outbox) = session();
            let dispatched = session.dispatch_one(message);
            tokio::spawn(session.run_dispatched(dispatched, body.len()));
            return self.respond_from(parts, &id, outbox).await;
        }
        match alone(self.0.server.sessionless_2026(), message, caller) {
            Alone::Answered(Some(reply)) => json(status_of(reply.error), reply.bytes),
            Alone::Answered(None) => json(StatusCode::ACCEPTED, Vec::new()),
            Alone::Forbidden(reply, needed) => self.forbidden(parts, &needed, reply.bytes),
            Alone::Running(job) => {
                let (session, outbox) = session();
                tokio::spawn(session.run_dispatched(Dispatched::Run(job), body.len()));
                self.respond_from(parts, &id, outbox).await
            }
            Alone::Listening(listening) => self.listen_stream(listening, caller),
        }
    }

    /// A listen stream's response: its events, read from the listener by
    /// the body itself, in one of the long-lived stream slots (`503` with
    /// `Retry-After` when none is free). At shutdown it ends with its
    /// result; a client that closes it drops the listener, which
    /// unregisters it.
    fn listen_stream(&self, listening: Listening, caller: &Caller) -> Response<McpBody> {
        let slot = match self.stream_slot(caller) {
            Ok(slot) => slot,
            Err(why) => return super::too_many_streams(&why),
        };
        // Registered from here: no change after it is missed. It ends with
        // its result at shutdown.
        let listener = listening.into_listener(self.0.server.inner());
        self.long_lived_sse(caller, slot, Feed::Listen(Box::new(listener)))
    }

    /// The response to request `id` from what its session writes: JSON when
    /// the reply comes first (its status by its outcome; a refusal for
    /// want of scopes is the `403` challenge, as for a request answered at
    /// once), else a stream of its notifications ending with the reply.
    /// When the client closes the stream, the body (the output's one
    /// reader) is dropped, the session's output closes, and the work is
    /// cancelled.
    async fn respond_from(
        &self,
        parts: &Parts,
        id: &RequestId,
        mut outbox: BoundedReceiver<Outgoing>,
    ) -> Response<McpBody> {
        let Some(first) = outbox.recv().await else {
            let error = RpcError::internal("the request ended without a reply");
            return json(
                StatusCode::INTERNAL_SERVER_ERROR,
                Dialect::ModelContext.error(Some(id), &error).bytes,
            );
        };
        match first.about {
            About::Reply(_, error) => return json(status_of(error), first.bytes),
            About::Refused(_, needed) => return self.forbidden(parts, &needed, first.bytes),
            _ => {}
        }
        // The body reads the session's output itself: a stream the client
        // closes drops it, which the work sees at once (its output closed).
        // Shutdown does not end it: it ends with the request's reply, which
        // the session's drain gives within the grace period.
        sse(McpBody::sse(
            Some(first.bytes),
            Feed::Output(outbox),
            self.0.config.sse_keep_alive,
            tokio_util::sync::CancellationToken::new(),
            None,
        ))
    }

    /// The headers of a request of `method`, whose `MCP-Protocol-Version`
    /// is `header_version`, against the values of its body they mirror:
    /// `Err` says what does not match.
    fn check_headers(
        &self,
        parts: &Parts,
        header_version: Option<&str>,
        method: &str,
        mirrored: &Mirrored<'_>,
    ) -> Result<(), String> {
        // The version: only a body that names one can be compared.
        if let Some(body_version) = mirrored
            .meta
            .as_ref()
            .and_then(|m| m.version)
            .and_then(|v| serde_json::from_str::<String>(v.get()).ok())
        {
            match header_version {
                None => return Err("the MCP-Protocol-Version header is required".into()),
                Some(v) if v != body_version => {
                    return Err(format!(
                        "MCP-Protocol-Version header value '{}' does not match _meta[\"{}\"] '{}'",
                        clipped(v),
                        keys::PROTOCOL_VERSION,
                        clipped(&body_version)
                    ));
                }
                Some(_) => {}
            }
        }
        match header(parts, &MCP_METHOD)? {
            None => return Err("the Mcp-Method header is required".into()),
            Some(v) if v != method => {
                return Err(format!(
                    "Mcp-Method header value '{}' does not match body method '{}'",
                    clipped(v),
                    clipped(method)
                ));
            }
            Some(_) => {}
        }
        let named = match method {
            methods::TOOLS_CALL | methods::PROMPTS_GET => mirrored.name.as_deref(),
            methods::RESOURCES_READ => mirrored.uri.as_deref(),
            // (So that a balancer can route a task's requests by its id.)
            method if crate::dialect::is_task_method(method) => mirrored.task_id.as_deref(),
            _ => None,
        };
        if let Some(body_name) = named {
            match header(parts, &MCP_NAME)?.map(decoded).transpose()? {
                None => return Err("the Mcp-Name header is required".into()),
                Some(v) if v != body_name => {
                    return Err(format!(
                        "Mcp-Name header value '{}' does not match body value '{}'",
                        clipped(&v),
                        clipped(body_name)
                    ));
                }
                Some(_) => {}
            }
        }
        if method == methods::TOOLS_CALL
            && let Some(name) = mirrored.name.as_deref()
        {
            self.check_params(parts, name, mirrored.arguments())?;
        }
        Ok(())
    }

    /// A tool's mirrored arguments (`x-mcp-header`) against their
    /// `Mcp-Param-*` headers, by the rule of `mirror::Mirror::check`.
    fn check_params(
        &self,
        parts: &Parts,
        tool: &str,
        arguments: Option<&str>,
    ) -> Result<(), String> {
        let listing = self.0.server.inner().listing();
        let Some(&index) = listing.catalog.tool_names.get(tool) else {
            return Ok(()); // an unknown tool is the dialect's to refuse
        };
        let mirrors = listing.mirrors.of(index);
        if mirrors.is_empty() {
            return Ok(());
        }
        let arguments: serde_json::Map<String, Value> = arguments
            .and_then(|a| serde_json::from_str(a).ok())
            .unwrap_or_default();
        for mirror in mirrors {
            let name = HeaderName::from_bytes(mirror.header().as_bytes())
                .map_err(|_| format!("{} is no header name", mirror.header()))?;
            let value = header(parts, &name)?.map(decoded).transpose()?;
            mirror.check(value.as_deref(), &arguments)?;
        }
        Ok(())
    }
}

/// A header's one value, trimmed; `Err` when it is repeated or is not
/// visible ASCII.
fn header<'p>(parts: &'p Parts, name: &HeaderName) -> Result<Option<&'p str>, String> {
    let value =
        one_of(&parts.headers, name).map_err(|()| format!("the {name} header is repeated"))?;
    let Some(value) = value else {
        return Ok(None);
    };
    value
        .to_str()
        .map(|v| Some(v.trim()))
        .map_err(|_| format!("the {name} header has characters a header may not carry"))
}

/// A mirrored value as written: plain, or `=?base64?…?=` decoded.
fn decoded(value: &str) -> Result<String, String> {
    let Some(encoded) = value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Ok(value.to_owned());
    };
    STANDARD
        .decode(encoded)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| format!("'{}' is not valid base64 of UTF-8 text", clipped(value)))
}

/// The HTTP status of a reply whose error's code is `error` (`None`: a
/// result), by this revision's table (a result, and any other error, is
/// `200`).
fn status_of(error: Option<i32>) -> StatusCode {
    match error {
        Some(-32601) => StatusCode::NOT_FOUND,
        Some(-32602 | -32020 | -32021 | -32022) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn mirrored_values_may_be_base64_of_utf8_text() {
        assert_eq!(decoded("us-west1").unwrap(), "us-west1");
        assert_eq!(
            decoded("=?base64?SGVsbG8sIOS4lueVjA==?=").unwrap(),
            "Hello, 世界"
        );
        assert!(decoded("=?base64?not base64!?=").is_err());
        assert!(
            decoded("=?base64?SGVsbG8?=").is_err(),
            "padding is required"
        );
    }

    #[test]
    fn statuses_follow_the_error_code_of_the_outcome_not_what_a_result_holds() {
        let id = RequestId::Number("1".into());
        let error = |code: i32| {
            Dialect::ModelContext.error(Some(&id), &RpcError::new(ErrorCode(code), "m"))
        };
        assert_eq!(status_of(error(-32601).error), StatusCode::NOT_FOUND);
        for code in [-32602, -32020, -32021, -32022] {
            assert_eq!(status_of(error(code).error), StatusCode::BAD_REQUEST);
        }
        assert_eq!(status_of(error(-32603).error), StatusCode::OK);
        let null =
            Dialect::ModelContext.error(Some(&RequestId::Null), &RpcError::invalid_params("m"));
        assert_eq!(status_of(null.error), StatusCode::BAD_REQUEST);
        // A result whose content holds what an error looks like is a result:
        // its outcome was said by its encoder, not read from its bytes.
        let holds = json!({"structuredContent": {"a": 1, "error": {"code": -32601}},
                           "content": [{"type": "text", "text": ",\"error\":{\"code\":-32602"}]});
        let result = crate::jsonrpc::encode_result(&id, &holds);
        assert!(memchr::memmem::find(&result.bytes, br#","error":{"code":-32601"#).is_some());
        assert_eq!(status_of(result.error), StatusCode::OK);
        let text = RequestId::String(r#"x","error":{"code":-32601"#.into());
        assert_eq!(
            status_of(crate::jsonrpc::encode_result(&text, &holds).error),
            StatusCode::OK
        );
    }
}
