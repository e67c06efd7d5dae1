//! Streamable HTTP, the Model Context Protocol's HTTP transport
//! (docs/model-context.md §5), on the same endpoint as MCP v1.0: which dialect a
//! request speaks follows from its headers and its first message (§1).
//!
//! - `POST`: one message. A request is answered `application/json` when its
//!   reply is the first thing it produces, `text/event-stream` when a
//!   notification or a request to the client comes first (the stream ends
//!   after the reply); a notification or a response: 202.
//! - `GET` with `Accept: text/event-stream`: the session's stream of
//!   messages tied to no request (one per session, keep-alive comments).
//! - `DELETE`: ends the session.
//!
//! Checks, in order: Origin and Host (403, shared with MCP v1.0), `Accept`
//! (406), the session id (400 when missing, 404 when unknown), then an
//! `MCP-Protocol-Version` this server does not speak at all (400,
//! `-32022`). A request that names 2026-07-28, or a version but no
//! session, is a 2026-07-28 one (`dialect::choice`).

use std::sync::Arc;

use bytes::Bytes;
use http::header::{ACCEPT, HeaderName, HeaderValue};
use http::request::Parts;
use http::{Response, StatusCode};

use super::body::McpBody;
use super::guard::one_of;
use super::sessions::{First, HttpSession, NotCreated, NotFound};
use super::{McpService, json, plain, retry_later, sse};
use crate::dialect::{Dialect, HeadVersion, Post, unsupported_version};
use crate::error::RpcError;
use crate::jsonrpc::{Incoming, Parsed, RequestId};
use crate::principal::Caller;
use crate::session::{Beside, beside};

/// `Mcp-Session-Id`.
pub(super) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// The media types an `Accept` value lists, parameters dropped, trimmed.
/// (Bytes, not `str`: a value that is not ASCII lists nothing it could
/// match anyway.)
pub(super) fn listed(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&b| b == b',').map(|item| {
        let media = item.split(|&b| b == b';').next().unwrap_or_default();
        media.trim_ascii()
    })
}

/// Whether `Accept` lists `media` (or a wildcard that covers it).
fn accepts(parts: &Parts, media: &str) -> bool {
    let media = media.as_bytes();
    let kind = media.split(|&b| b == b'/').next().unwrap_or(media);
    parts
        .headers
        .get_all(ACCEPT)
        .iter()
        .flat_map(|value| listed(value.as_bytes()))
        .any(|m| {
            m.eq_ignore_ascii_case(media)
                || m == b"*/*"
                || m.strip_suffix(b"/*")
                    .is_some_and(|k| k.eq_ignore_ascii_case(kind))
        })
}

/// The `Mcp-Session-Id` header: `Ok(None)` when absent, `Err` when repeated
/// or not visible ASCII.
fn session_header(parts: &Parts) -> Result<Option<&str>, ()> {
    match one_of(&parts.headers, &SESSION_ID)? {
        None => Ok(None),
        Some(value) => value
            .to_str()
            .ok()
            .filter(|v| !v.is_empty() && v.bytes().all(|b| (0x21..=0x7e).contains(&b)))
            .map(Some)
            .ok_or(()),
    }
}

impl McpService {
    /// A `POST` of the Model Context Protocol, its body read whole and
    /// parsed (`parsed` is `body`'s parse); `post` is what
    /// `dialect::choice` said it is (a session's request, or a 2026-07-28
    /// one), and `version` its verdict on `MCP-Protocol-Version`.
    pub(super) async fn streamable_post(
        &self,
        parts: &Parts,
        body: &Bytes,
        parsed: Parsed<'_>,
        (post, version): (Post, HeadVersion<'_>),
        caller: &Caller,
    ) -> Response<McpBody> {
        if !(accepts(parts, "application/json") && accepts(parts, "text/event-stream")) {
            return plain(
                StatusCode::NOT_ACCEPTABLE,
                "Accept must list application/json and text/event-stream",
            );
        }
        let message = match parsed {
            Parsed::Single(message) => message,
            Parsed::Batch(_) => {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    None,
                    &RpcError::invalid_request("a POST carries one JSON-RPC message, not a batch"),
                );
            }
            Parsed::Error(error) => return rpc_error(StatusCode::BAD_REQUEST, None, &error),
        };
        // The 2026-07-28 revision has no sessions: an `Mcp-Session-Id` on
        // its request is ignored.
        if post == Post::Revision2026 {
            return self
                .revision_2026_post(parts, body, message, version, caller)
                .await;
        }
        let Ok(session_id) = session_header(parts) else {
            return plain(
                StatusCode::BAD_REQUEST,
                "Mcp-Session-Id must be one visible-ASCII value",
            );
        };
        let session = match (&message, session_id) {
            (Incoming::Request { id, .. }, None) if post == (Post::Session { opens: true }) => {
                return self.open_session(parts, id, body.clone(), caller).await;
            }
            (_, None) => {
                return plain(
                    StatusCode::BAD_REQUEST,
                    "Mcp-Session-Id is required: send initialize first",
                );
            }
            (_, Some(id)) => match self.find_session(id, caller).await {
                Ok(session) => session,
                Err(not_found) => return not_served(not_found),
            },
        };
        let request_id = match &message {
            Incoming::Request { id, .. } => Some(id),
            _ => None,
        };
        if let Some(refusal) = unspoken_version(version, request_id) {
            return refusal;
        }
        match message {
            Incoming::Request { ref id, .. } => {
                let id = id.clone();
                let post = PostInfo {
                    parts,
                    caller,
                    opening: false,
                };
                self.request(&session, id, body.clone(), Some(message), post)
                    .await
            }
            Incoming::Notification { .. } => {
                if session.send(body.clone(), caller).await {
                    accepted()
                } else {
                    unknown_session()
                }
            }
            Incoming::Response { id, outcome } => {
                // Answers to the server's requests go straight to the
                // waiting tool (on whichever process it waits): they never
                // wait for an in-flight slot.
                if session.answer(id.as_ref(), outcome, body) {
                    accepted()
                } else {
                    unknown_session()
                }
            }
            Incoming::Invalid { id, reason } => rpc_error(
                StatusCode::BAD_REQUEST,
                Some(&id),
                &RpcError::invalid_request(reason),
            ),
        }
    }

    /// `initialize` without a session id: a new session.
    async fn open_session(
        &self,
        parts: &Parts,
        id: &RequestId,
        body: Bytes,
        caller: &Caller,
    ) -> Response<McpBody> {
        if caller
            .principal
            .as_deref()
            .is_some_and(|p| p.subject().is_none() && p.client_id().is_none())
        {
            // Its owner could not be told from any other such token's.
            return plain(
                StatusCode::FORBIDDEN,
                "this access token names no subject and no client: it cannot own a session",
            );
        }
        let session = match self.0.sessions.create(&self.0.server, &self.0.stop, caller) {
            Ok(session) => session,
            Err(NotCreated::Full) => {
                return retry_later(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too many sessions are open; try again later",
                    "5",
                );
            }
            Err(NotCreated::PrincipalFull) => {
                return retry_later(
                    StatusCode::TOO_MANY_REQUESTS,
                    "you hold as many sessions as one client may (max_sessions_per_principal): \
                     end one with DELETE, or try again later",
                    "5",
                );
            }
            Err(NotCreated::NoRandom) => {
                return plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "no session id can be issued: the system's random source failed",
                );
            }
        };
        let post = PostInfo {
            parts,
            caller,
            opening: true,
        };
        let mut response = self.request(&session, id.clone(), body, None, post).await;
        if response.status() == StatusCode::OK {
            if let Ok(value) = HeaderValue::from_str(&session.id) {
                response.headers_mut().insert(SESSION_ID, value);
            }
        } else {
            self.0.sessions.remove(&session.id);
        }
        response
    }

    /// A request: waits for what it produces first, then answers JSON (its
    /// reply) or SSE (everything up to its reply). The request `message`
    /// read from `body` is served on this task when it can be (see
    /// [`beside`]), else by the session's reader.
    /// For `initialize`, a reply that is an error is a 400 without a
    /// session (`opening`).
    async fn request(
        &self,
        session: &Arc<HttpSession>,
        id: RequestId,
        body: Bytes,
        message: Option<Incoming<'_>>,
        post: PostInfo<'_>,
    ) -> Response<McpBody> {
        let PostInfo {
            parts,
            caller,
            opening,
        } = post;
        let Ok(expected) = session.expect(&id) else {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                Some(&id),
                &RpcError::invalid_request(format!(
                    "a request with id {id} is already in flight in this session"
                )),
            );
        };
        let to_reader = match (message, session.serving()) {
            (Some(message), Some(shared)) => {
                match beside(&shared, || session.stopping(), message, caller).await {
                    // Answered here: the guard forgets the request.
                    Beside::Answered(reply) => {
                        drop(expected);
                        return json(StatusCode::OK, reply.bytes);
                    }
                    Beside::Forbidden(reply, needed) => {
                        drop(expected);
                        return self.forbidden(parts, &needed, reply.bytes);
                    }
                    Beside::Sent => false,
                    Beside::Not => true,
                }
            }
            _ => true,
        };
        if to_reader && !session.send(body, caller).await {
            return unknown_session();
        }
        match expected.handed().await {
            Ok(First::Reply(reply, error)) => {
                // A failed initialize opens no session.
                let status = if opening && error.is_some() {
                    StatusCode::BAD_REQUEST
                } else {
                    StatusCode::OK
                };
                json(status, reply)
            }
            // A request's stream ends with its reply, which the session's
            // drain gives within the grace period: shutdown does not end it.
            Ok(First::Stream(first, rest)) => sse(McpBody::sse(
                Some(first),
                rest,
                self.0.config.sse_keep_alive,
                tokio_util::sync::CancellationToken::new(),
                None,
            )),
            Ok(First::Unanswered) => sse(McpBody::empty()),
            Ok(First::Refused(reply, needed)) => self.forbidden(parts, &needed, reply),
            Err(_) => unknown_session(),
        }
    }

    /// The session with this id, this process's or adopted from its saved
    /// state (a bus that shares sessions).
    async fn find_session(&self, id: &str, caller: &Caller) -> Result<Arc<HttpSession>, NotFound> {
        (self.0.sessions)
            .find(id, &self.0.server, &self.0.stop, caller)
            .await
    }

    /// `GET`: the session's stream of messages tied to no request.
    pub(super) async fn streamable_get(
        &self,
        parts: &Parts,
        caller: &Caller,
        version: HeadVersion<'_>,
    ) -> Response<McpBody> {
        if !accepts(parts, "text/event-stream") {
            return plain(
                StatusCode::NOT_ACCEPTABLE,
                "Accept must list text/event-stream",
            );
        }
        let session = match session_header(parts) {
            Ok(Some(id)) => match self.find_session(id, caller).await {
                Ok(session) => session,
                Err(not_found) => return not_served(not_found),
            },
            Ok(None) => {
                return plain(StatusCode::BAD_REQUEST, "Mcp-Session-Id is required");
            }
            Err(()) => {
                return plain(
                    StatusCode::BAD_REQUEST,
                    "Mcp-Session-Id must be one visible-ASCII value",
                );
            }
        };
        if let Some(refusal) = unspoken_version(version, None) {
            return refusal;
        }
        if self.0.stop.is_cancelled() {
            return plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "the server is shutting down",
            );
        }
        let mut slot = match self.stream_slot(caller) {
            Ok(slot) => slot,
            Err(why) => return super::too_many_streams(&why),
        };
        // One `GET` stream per session in the whole deployment: claimed,
        // under the session's lock, before it opens here; kept while it is
        // open, given up when it ends.
        let opening = session.opening_get.lock().await;
        if session.get_is_open() {
            return plain(
                StatusCode::CONFLICT,
                "this session's stream is already open",
            );
        }
        let claim = stream_claim();
        if !self.0.sessions.claim_get(&session.id, &claim).await {
            return retry_later(
                StatusCode::CONFLICT,
                "this session's stream is already open (on another process of the deployment)",
                "5",
            );
        }
        let Some(events) = session.open_get() else {
            return plain(
                StatusCode::CONFLICT,
                "this session's stream is already open",
            );
        };
        drop(opening);
        self.0.sessions.keep_get_claim(&session, claim, &mut slot);
        self.long_lived_sse(caller, slot, events)
    }

    /// `DELETE`: ends the session; its requests in flight are cancelled.
    pub(super) async fn streamable_delete(
        &self,
        parts: &Parts,
        caller: &Caller,
        version: HeadVersion<'_>,
    ) -> Response<McpBody> {
        if let Ok(Some(id)) = session_header(parts)
            && let Some(refusal) = unspoken_version(version, None)
        {
            // (The id first: an unknown one is 404 whatever the version.)
            return if self.0.sessions.owned_by(id, caller).await {
                refusal
            } else {
                unknown_session()
            };
        }
        match session_header(parts) {
            Ok(Some(id)) if self.0.sessions.end_everywhere(id, caller).await => Response::builder()
                .status(StatusCode::NO_CONTENT)
                .body(McpBody::empty())
                .unwrap_or_default(),
            Ok(Some(_)) => unknown_session(),
            _ => plain(StatusCode::BAD_REQUEST, "Mcp-Session-Id is required"),
        }
    }
}

/// What a request's POST brought besides its message.
struct PostInfo<'a> {
    parts: &'a Parts,
    caller: &'a Caller,
    /// `initialize` opening its session: a reply that is an error is a
    /// 400 without a session.
    opening: bool,
}

/// `400` with `-32022`, naming the versions this server speaks, when a
/// session's request names in `MCP-Protocol-Version` a version this
/// server does not speak at all (`dialect::choice`'s verdict, `version`):
/// checked once its session id is, as the order of checks says.
/// (`dialect::choice` sends a request that names 2026-07-28, or a version
/// but no session, to the 2026-07-28 revision.)
fn unspoken_version(version: HeadVersion<'_>, id: Option<&RequestId>) -> Option<Response<McpBody>> {
    let version = version.unspoken()?;
    let reply = unsupported_version(id, &version);
    Some(json(StatusCode::BAD_REQUEST, reply.bytes))
}

/// An error response in this dialect's table, with `status`.
fn rpc_error(status: StatusCode, id: Option<&RequestId>, error: &RpcError) -> Response<McpBody> {
    json(status, Dialect::ModelContext.error(id, error).bytes)
}

fn accepted() -> Response<McpBody> {
    Response::builder()
        .status(StatusCode::ACCEPTED)
        .body(McpBody::empty())
        .unwrap_or_default()
}

/// The answer to a request whose session is not served here.
fn not_served(why: NotFound) -> Response<McpBody> {
    match why {
        NotFound::Unknown => unknown_session(),
        NotFound::Full => retry_later(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many sessions are open on this server; try again later",
            "5",
        ),
        NotFound::PrincipalFull => retry_later(
            StatusCode::TOO_MANY_REQUESTS,
            "you hold as many sessions as one client may here (max_sessions_per_principal): \
             end one with DELETE, or try again later",
            "5",
        ),
    }
}

fn unknown_session() -> Response<McpBody> {
    plain(
        StatusCode::NOT_FOUND,
        "no such session (unknown, expired or deleted): send initialize to open a new one",
    )
}

/// A name for one `GET` stream's claim, unique on this process (the bus
/// tells processes apart).
fn stream_claim() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed).to_string()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A request's head with these `Accept` values.
    pub(in crate::transport::http) fn with_accept(values: &[&str]) -> Parts {
        let mut request = http::Request::builder();
        for value in values {
            request = request.header(ACCEPT, *value);
        }
        request.body(()).unwrap().into_parts().0
    }

    #[test]
    fn accept_lists_media_types_across_values_parameters_and_wildcards() {
        let both = with_accept(&["application/json;q=0.9 , TEXT/Event-Stream"]);
        assert!(accepts(&both, "application/json") && accepts(&both, "text/event-stream"));
        let split = with_accept(&["application/json", "text/event-stream; q=1"]);
        assert!(accepts(&split, "text/event-stream"));
        let wild = with_accept(&["text/*, */*;q=0.1"]);
        assert!(accepts(&wild, "text/event-stream") && accepts(&wild, "application/json"));
        let neither = with_accept(&["text/html, application/jsonx"]);
        assert!(!accepts(&neither, "application/json") && !accepts(&neither, "text/event-stream"));
    }
}
