//! Every `POST`: its body read until its first JSON value is complete,
//! then served as Streamable HTTP, a 2026-07-28 request, or MCP v1.0 over
//! HTTP (docs/mcp-v1.md §8), where a `POST` whose first message is
//! `initialize` opens a streaming session and any other is a single
//! exchange.

use std::pin::Pin;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::header::CONTENT_TYPE;
use http::request::Parts;
use http::{Response, StatusCode};
use http_body::Body;
use serde::de::IgnoredAny;
use tokio::time::Instant;

use super::body::{BodyInputs, McpBody, next_data};
use super::{Leftover, McpService, json, plain};
use crate::dialect::{Dialect, HeadVerdict, Post};
use crate::error::RpcError;
use crate::fast::prefilter::Prefilter;
use crate::fast::value_end::FirstValue;
use crate::jsonrpc::{Parsed, RequestId, encode_error};
use crate::principal::{Caller, Revocation};
use crate::server::Exchanged;
use crate::session::{Session, outbox};
use crate::transport::json_stream::JsonStreamDecoder;

/// Messages waiting for a streaming response before request tasks wait.
const OUTBOX: usize = 256;
/// How long a streaming session whose token was revoked waits for its next
/// request (refused `-32008`) before it ends.
const REVOKED_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

impl McpService {
    /// Reads the body until its first JSON value is complete, then serves it
    /// as `dialect::choice` says of its head (`head`) and its message (an
    /// `initialize` by the first value, any other by the whole body):
    /// Streamable HTTP, a 2026-07-28 request, an MCP v1.0 streaming
    /// session (first message `initialize`) or a single exchange. The body
    /// is read whole but for a streaming session: within the body timeout
    /// in all, stalling no longer than the header-read timeout.
    pub(super) async fn post<B>(
        &self,
        parts: &Parts,
        mut body: Pin<Box<B>>,
        head: HeadVerdict<'_>,
        caller: &Caller,
    ) -> (Response<McpBody>, Leftover<B>)
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: std::fmt::Display,
    {
        let limit = self.0.server.max_message_size();
        let mut buf = BytesMut::new();
        let mut ended = false;
        // The common case: the whole body came with the headers. It is then
        // parsed once, with no scan for its first value and no timer.
        let first_chunk = match crate::poll::ready_now(next_data(&mut body)).await {
            Some(Some(Ok(data))) => Some(data),
            Some(None) => {
                ended = true;
                None
            }
            Some(Some(Err(e))) => return (unreadable(&e), Leftover::Broken),
            None => None,
        };
        if let Some(data) = first_chunk {
            if body.is_end_stream()
                && data.len() <= limit
                && let Some(answered) = self.whole(parts, &data, head, caller).await
            {
                return (answered, Leftover::Done);
            }
            ended = body.is_end_stream();
            buf.extend_from_slice(&data);
        }
        let deadline = crate::poll::deadline_in(self.0.config.body_timeout);
        let mut first_value = FirstValue::default();
        let first = loop {
            if let Some(end) = first_value.find(&buf) {
                break Some(end);
            }
            if buf.len() > limit {
                return (
                    too_large(head.protocol.dialect(), buf.len(), limit),
                    Leftover::Broken,
                );
            }
            if ended {
                break None;
            }
            match self.next_chunk(&mut body, deadline).await {
                Ok(Some(data)) => buf.extend_from_slice(&data),
                Ok(None) => {
                    ended = true;
                    break None;
                }
                Err(response) => return (response, Leftover::Broken),
            }
        };
        let protocols = self.0.server.inner().protocols;
        // Only an `initialize` opens a session (a streaming one in MCP
        // v1.0), and it is decided by the first value; any other body is
        // decided from the whole body's parse. (The prefilter only skips
        // reading a first value that cannot be an `initialize`: the
        // decision is the same either way.)
        let opening = first
            .and_then(|end| buf.get(..end))
            .filter(|value| may_initialize(value))
            .map(|value| protocols.for_post(&head, &crate::dialect::parse(value)))
            .filter(|post| {
                matches!(
                    post,
                    Post::McpV1 { streaming: true } | Post::Session { opens: true }
                )
            });
        if opening == Some(Post::McpV1 { streaming: true }) {
            return self.stream(body, buf, ended, caller);
        }
        // Read whole (not a streaming session): within the message limit,
        // refused in the dialect of what is known of it.
        let dialect = opening.map_or(head.protocol.dialect(), Post::dialect);
        if buf.len() > limit {
            return (too_large(dialect, buf.len(), limit), Leftover::Broken);
        }
        while !ended {
            match self.next_chunk(&mut body, deadline).await {
                Ok(Some(data)) => buf.extend_from_slice(&data),
                Ok(None) => ended = true,
                Err(response) => return (response, Leftover::Broken),
            }
            if buf.len() > limit {
                return (too_large(dialect, buf.len(), limit), Leftover::Broken);
            }
        }
        let body = buf.freeze();
        let parsed = crate::dialect::parse(&body);
        let post = opening.unwrap_or_else(|| protocols.for_post(&head, &parsed));
        let response = match post {
            Post::McpV1 { .. } => self.single(parts, &body, parsed, first, caller).await,
            post => {
                Box::pin(self.streamable_post(parts, &body, parsed, (post, head.version), caller))
                    .await
            }
        };
        (response, Leftover::Done)
    }

    /// The next chunk of a body that is being read whole: `408` when the
    /// client sends nothing for the header-read timeout or the whole body
    /// is not there by `deadline`, `400` when reading fails.
    async fn next_chunk<B>(
        &self,
        body: &mut Pin<Box<B>>,
        deadline: Instant,
    ) -> Result<Option<Bytes>, Response<McpBody>>
    where
        B: Body<Data = Bytes>,
        B::Error: std::fmt::Display,
    {
        let stall = crate::poll::deadline_in(self.0.config.header_read_timeout);
        match tokio::time::timeout_at(stall.min(deadline), next_data(body)).await {
            Ok(Some(Ok(data))) => Ok(Some(data)),
            Ok(None) => Ok(None),
            Ok(Some(Err(e))) => Err(unreadable(&e)),
            Err(_) if Instant::now() >= deadline => Err(plain(
                StatusCode::REQUEST_TIMEOUT,
                "the body did not arrive within the body timeout",
            )),
            Err(_) => Err(plain(StatusCode::REQUEST_TIMEOUT, "the body stalled")),
        }
    }

    /// Serves a body that arrived whole and parses as one JSON value — a
    /// single exchange, or a Model Context Protocol POST — from that one
    /// parse. `None` for anything else (an MCP v1.0 `initialize`, which
    /// opens a streaming session, or a body that is not one JSON-RPC
    /// value), which the caller serves as a body read in pieces, so that
    /// its errors are the same.
    async fn whole(
        &self,
        parts: &Parts,
        body: &Bytes,
        head: HeadVerdict<'_>,
        caller: &Caller,
    ) -> Option<Response<McpBody>> {
        let parsed = crate::dialect::parse(body);
        if matches!(parsed, Parsed::Error(_)) {
            return None;
        }
        let protocols = self.0.server.inner().protocols;
        Some(match protocols.for_post(&head, &parsed) {
            Post::McpV1 { streaming: true } => return None,
            Post::McpV1 { streaming: false } => {
                self.single_parsed(parts, body, parsed, caller).await
            }
            post => {
                Box::pin(self.streamable_post(parts, body, parsed, (post, head.version), caller))
                    .await
            }
        })
    }

    /// A single exchange: one JSON value, an implicit initialized session,
    /// one JSON reply (or 202 for notifications only) — unless its message
    /// is the Model Context Protocol's (docs/model-context.md §1), read from the
    /// same parse the session then serves.
    async fn single(
        &self,
        parts: &Parts,
        body: &Bytes,
        parsed: Parsed<'_>,
        first_end: Option<usize>,
        caller: &Caller,
    ) -> Response<McpBody> {
        // One value, as the body scanner found it: the session parses it (and
        // says if it is not JSON). Anything after it is looked at closely.
        let one_value = first_end
            .and_then(|end| body.get(end..))
            .is_some_and(|rest| rest.iter().all(u8::is_ascii_whitespace));
        if !one_value {
            let mut values = serde_json::Deserializer::from_slice(body).into_iter::<IgnoredAny>();
            let error = match (values.next(), values.next()) {
                (Some(Ok(_)), None) => None,
                (Some(Ok(_)), Some(Ok(_))) => Some(RpcError::invalid_request(
                    "a single exchange carries one JSON value (an object or a batch); \
                     to send several, open a streaming session with initialize",
                )),
                (Some(Err(e)), _) | (Some(Ok(_)), Some(Err(e))) => Some(RpcError::parse_error(
                    format!("body is not valid JSON: {e}"),
                )),
                (None, _) => Some(RpcError::parse_error("the body is empty")),
            };
            if let Some(error) = error {
                return json(
                    StatusCode::BAD_REQUEST,
                    encode_error(&RequestId::Null, &error).bytes,
                );
            }
        }
        self.single_parsed(parts, body, parsed, caller).await
    }

    /// A single exchange from its parse.
    async fn single_parsed(
        &self,
        parts: &Parts,
        body: &Bytes,
        parsed: Parsed<'_>,
        caller: &Caller,
    ) -> Response<McpBody> {
        let exchanged = self
            .0
            .server
            .serve_parsed_until(Dialect::McpV1, body, parsed, &self.0.stop, caller)
            .await;
        match exchanged {
            Exchanged {
                reply: Some(reply),
                forbidden: Some(needed),
                ..
            } => self.forbidden(parts, &needed, reply),
            Exchanged {
                reply: Some(reply),
                not_json: true,
                ..
            } => json(StatusCode::BAD_REQUEST, reply),
            Exchanged {
                reply: Some(reply), ..
            } => json(StatusCode::OK, reply),
            Exchanged { reply: None, .. } => Response::builder()
                .status(StatusCode::ACCEPTED)
                .body(McpBody::empty())
                .unwrap_or_default(),
        }
    }

    /// A streaming session: the body's values are served as they arrive and
    /// every outgoing message is one line of the chunked response. It holds
    /// one of the stream slots until it ends; with none free, `503`.
    fn stream<B>(
        &self,
        body: Pin<Box<B>>,
        buf: BytesMut,
        ended: bool,
        caller: &Caller,
    ) -> (Response<McpBody>, Leftover<B>)
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: std::fmt::Display,
    {
        let mut slot = match self.stream_slot(caller) {
            Ok(slot) => slot,
            Err(why) => return (super::too_many_streams(&why), Leftover::Broken),
        };
        let bytes = self.0.server.inner().limits.max_queued_output;
        let (out, outbox) = outbox::channel(OUTBOX, bytes);
        let stop = Arc::new(self.0.stop.child_token());
        // Once its token is revoked, its next request is refused `-32008`,
        // then the session ends (or after a short wait for one).
        let revocation = Arc::new(Revocation::default());
        self.watch_token(caller, &mut slot, {
            let (revocation, stop) = (revocation.clone(), stop.clone());
            move || {
                revocation.revoke();
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(REVOKED_GRACE, revocation.until_refused()).await;
                    stop.cancel();
                });
            }
        });
        let mut caller = caller.clone();
        caller.revocation = Some(revocation);
        let session = Session::new(
            self.0.server.inner(),
            crate::dialect::Dialect::McpV1,
            out,
            stop,
        )
        .with_caller(caller);
        let input = BodyInputs {
            body,
            buf,
            decoder: JsonStreamDecoder::new(self.0.server.max_message_size()),
            ended,
            finished: false,
        };
        tokio::spawn(async move {
            session.run(input).await;
            drop(slot);
        });
        let response = Response::builder()
            .status(StatusCode::OK)
            .header(CONTENT_TYPE, "application/json")
            .body(McpBody::stream(outbox))
            .unwrap_or_default();
        (response, Leftover::Done)
    }
}

/// Whether a body's first value may be an `initialize` (the common case
/// needs no parse).
fn may_initialize(first: &[u8]) -> bool {
    static INITIALIZE: std::sync::LazyLock<Prefilter> =
        std::sync::LazyLock::new(|| Prefilter::new("initialize"));
    INITIALIZE.may_hold(first)
}

/// `400` for a body that could not be read.
fn unreadable(error: &impl std::fmt::Display) -> Response<McpBody> {
    plain(
        StatusCode::BAD_REQUEST,
        &format!("reading the body failed: {error}"),
    )
}

/// `413` for a body of at least `declared` bytes, over the message
/// `limit`: the error that `dialect` gives a message over the size limit,
/// as it writes an error whose request is unknown (MCP v1.0: id `null`;
/// the Model Context Protocol: no `id` member).
fn too_large(dialect: Dialect, declared: usize, limit: usize) -> Response<McpBody> {
    let error = dialect.too_large(declared, limit);
    json(
        StatusCode::PAYLOAD_TOO_LARGE,
        dialect.error(None, &error).bytes,
    )
}
