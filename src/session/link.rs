//! The session's [`ClientLink`]: what carries a
//! [`ToolContext`](crate::ToolContext)'s progress, log lines and requests
//! to the client (Model Context Protocol sessions only), and the
//! [`ContextSource`] a context is made from.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::outbox::{About, Outgoing};
use super::peer::Answer;
use super::shared::{Observed, Shared};
use crate::client::{ClientError, LogLevel};
use crate::dialect::{ClientInfo, Dialect, ToClient};
use crate::handle::ServerHandle;
use crate::jsonrpc::{RequestId, encode_request};
use crate::round_trip::{Question, RoundTrip};
use crate::tool::{Cancellation, ClientLink, ClientRequest, ContextSource};

/// Removes a pending request however its wait ends; when the wait is
/// abandoned before an answer (a time limit, a cancel, the tool's future
/// dropped), tells the client to stop working on it (best effort).
struct PendingAsk<'a> {
    session: &'a Shared,
    id: u64,
    related: &'a RequestId,
    answered: bool,
}

impl Drop for PendingAsk<'_> {
    fn drop(&mut self) {
        self.session.peer.forget(self.id);
        if self.answered {
            return;
        }
        let Some(to_client) = self.session.dialect.to_client() else {
            return;
        };
        let _ = self.session.out.try_send(Outgoing {
            bytes: (to_client.stopped_waiting)(self.id),
            about: About::Related(self.related.clone()),
        });
    }
}

impl Shared {
    /// Sends request `method` to the client on behalf of request `related`
    /// and waits for the answer, the client request timeout, or `cancel`.
    async fn ask<P: Serialize + ?Sized>(
        &self,
        related: &RequestId,
        method: &str,
        params: &P,
        cancel: &Cancellation,
    ) -> Answer {
        // No request goes to a client before its `initialized` (a tool
        // called between `initialize` and `initialized` may ask): the
        // request waits for it, within the client request timeout.
        let timeout = self.server.limits.client_request_timeout;
        let deadline = crate::poll::deadline_in(timeout);
        if !self.is_ready() {
            tokio::select! {
                () = self.until_ready() => {}
                () = tokio::time::sleep_until(deadline) => return Err(ClientError::TimedOut(timeout)),
                () = cancel.cancelled_or_ended() => return Err(ClientError::Cancelled),
            }
        }
        let (id, answer) = self.peer.start()?;
        self.observed(Observed::Asked { request: id });
        // The request's id is known only now: its client span (the one the
        // asking future runs in, feature `otel`) records it — that span
        // only, not a request's span around it when it is filtered out.
        #[cfg(feature = "otel")]
        crate::trace_context::record_client_request_id(&tracing::Span::current(), id);
        let mut waiting = PendingAsk {
            session: self,
            id,
            related,
            answered: false,
        };
        self.send(Outgoing {
            bytes: encode_request(id, method, params),
            about: About::Related(related.clone()),
        })
        .await;
        // An answer that came is taken, though the request ended with it.
        let outcome = tokio::select! {
            biased;
            answer = answer => answer.unwrap_or(Err(ClientError::Gone)),
            () = tokio::time::sleep_until(deadline) => Err(ClientError::TimedOut(timeout)),
            () = cancel.cancelled_or_ended() => Err(ClientError::Cancelled),
        };
        waiting.answered = !matches!(
            outcome,
            Err(ClientError::TimedOut(_) | ClientError::Cancelled)
        );
        outcome
    }

    /// The client's capability `name`, when it declared it.
    fn capability(&self, name: &str) -> Option<&Value> {
        self.client.get()?.capabilities.get(name)
    }
}

/// A tool execution's way back to its session (Model Context Protocol
/// sessions only: MCP v1.0 carries nothing back).
#[derive(Debug)]
pub(crate) struct Link {
    shared: Weak<Shared>,
    /// What the session's dialect sends the client.
    to_client: &'static ToClient,
    /// `_meta.progressToken` of the request, with the last progress sent.
    progress: Option<(Box<RawValue>, Mutex<Option<f64>>)>,
}

impl Link {
    /// The session, if it still exists (a link is made only for a session
    /// that asks its client on the session itself).
    fn model_context(&self) -> Option<Arc<Shared>> {
        self.shared.upgrade()
    }
}

impl ContextSource for Arc<Shared> {
    fn handle(&self) -> &ServerHandle {
        &self.server.handle
    }

    fn link(&self, progress: Option<Box<RawValue>>) -> Option<Arc<dyn ClientLink>> {
        // Only a session that asks its client on itself carries progress,
        // log lines and requests to the client here (a 2026-07-28 request
        // has its round's source instead).
        let to_client = self.dialect.to_client()?;
        self.dialect.asks_on_session().then(|| {
            Arc::new(Link {
                shared: Arc::downgrade(self),
                to_client,
                progress: progress.map(|token| (token, Mutex::new(None))),
            }) as Arc<dyn ClientLink>
        })
    }
}

#[async_trait::async_trait]
impl ClientLink for Link {
    async fn progress(
        &self,
        related: &RequestId,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) {
        let Some((token, last)) = &self.progress else {
            return;
        };
        let Some(shared) = self.model_context() else {
            return;
        };
        {
            let mut last = last.lock().unwrap_or_else(PoisonError::into_inner);
            if last.is_some_and(|l| progress <= l) || !progress.is_finite() {
                tracing::debug!(progress, "progress that does not grow is not sent");
                return;
            }
            *last = Some(progress);
        }
        shared
            .send(Outgoing {
                bytes: (self.to_client.progress)(token, progress, total, message),
                about: About::Related(related.clone()),
            })
            .await;
    }

    fn logs(&self, level: LogLevel) -> bool {
        self.model_context()
            .is_some_and(|shared| shared.logs(level))
    }

    async fn log(&self, related: &RequestId, level: LogLevel, data: Box<RawValue>) {
        let Some(shared) = self.model_context() else {
            return;
        };
        shared
            .send(Outgoing {
                bytes: (self.to_client.log_line)(level, data),
                about: About::Related(related.clone()),
            })
            .await;
    }

    fn can_ask(&self, request: ClientRequest) -> Result<(), ClientError> {
        self.session_for(request).map(drop)
    }

    async fn ask(
        &self,
        related: &RequestId,
        request: ClientRequest,
        params: Box<RawValue>,
        _key: Option<&str>,
        cancel: &Cancellation,
    ) -> Result<Value, ClientError> {
        let shared = self.session_for(request)?;
        shared
            .ask(related, (self.to_client.method)(request), &params, cancel)
            .await
    }

    fn client_capabilities(&self) -> Option<Value> {
        let shared = self.model_context()?;
        shared.client.get().map(|c| c.capabilities.clone())
    }

    fn carries_apps(&self) -> bool {
        (self.model_context()).is_some_and(|s| s.client.get().is_some_and(ClientInfo::carries_apps))
    }
}

impl Link {
    /// The session, when it can carry `request` now.
    fn session_for(&self, request: ClientRequest) -> Result<Arc<Shared>, ClientError> {
        let shared = self.shared.upgrade().ok_or(ClientError::Gone)?;
        if !shared.dialect.asks_on_session() || shared.client.get().is_none() {
            return Err(ClientError::Unsupported);
        }
        request.check_capability(shared.capability(request.capability()))?;
        Ok(shared)
    }
}

/// What a 2026-07-28 request's context is made from: its session (for
/// progress and log lines on the request's own stream) and its round.
pub(crate) struct RoundSource {
    pub(crate) shared: Arc<Shared>,
    pub(crate) round: Arc<RoundTrip>,
}

impl ContextSource for RoundSource {
    fn handle(&self) -> &ServerHandle {
        &self.shared.server.handle
    }

    fn link(&self, progress: Option<Box<RawValue>>) -> Option<Arc<dyn ClientLink>> {
        Some(Arc::new(RoundLink {
            stream: Link {
                shared: Arc::downgrade(&self.shared),
                to_client: Dialect::Revision2026.to_client()?,
                progress: progress.map(|token| (token, Mutex::new(None))),
            },
            round: self.round.clone(),
        }))
    }
}

/// A 2026-07-28 request's way back to its client: progress and log lines
/// (at the level its `_meta` asked for) on the request's own stream, and
/// questions answered from its round, or recorded to end it
/// (`round_trip`).
#[derive(Debug)]
struct RoundLink {
    stream: Link,
    round: Arc<RoundTrip>,
}

#[async_trait::async_trait]
impl ClientLink for RoundLink {
    async fn progress(
        &self,
        related: &RequestId,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) {
        self.stream
            .progress(related, progress, total, message)
            .await;
    }

    fn logs(&self, level: LogLevel) -> bool {
        self.round.logs(level)
    }

    async fn log(&self, related: &RequestId, level: LogLevel, data: Box<RawValue>) {
        self.stream.log(related, level, data).await;
    }

    fn can_ask(&self, request: ClientRequest) -> Result<(), ClientError> {
        let checked = request.check_capability(self.round.declared(request.capability()));
        // Not declared, or declared without what the request needs (the
        // form mode): the request then fails with `-32021`.
        if checked.is_err() {
            self.round.lacks(request.capability());
        }
        checked
    }

    async fn ask(
        &self,
        _related: &RequestId,
        request: ClientRequest,
        params: Box<RawValue>,
        key: Option<&str>,
        cancel: &Cancellation,
    ) -> Result<Value, ClientError> {
        self.can_ask(request)?;
        let method = (self.stream.to_client.method)(request);
        // (Only a round that becomes a task is closed.)
        (ask_in_round(&self.round, method, params, key, cancel).await)
            .unwrap_or(Err(ClientError::Cancelled))
    }

    fn client_capabilities(&self) -> Option<Value> {
        Some(Value::Object(self.round.capabilities().clone()))
    }
}

/// A question asked in a round of a 2026-07-28 request: answered from the
/// round when it brought the answer, else recorded for the request's reply
/// (an `InputRequiredResult`), which ends the round at the end of this poll;
/// the work is dropped there, or here when it is cancelled first.
/// A round that was [closed](RoundTrip::close) takes no question: it gives
/// back the question's params (`Err`).
pub(crate) async fn ask_in_round(
    round: &RoundTrip,
    method: &'static str,
    params: Box<RawValue>,
    key: Option<&str>,
    cancel: &Cancellation,
) -> Result<Result<Value, ClientError>, Box<RawValue>> {
    let key = round.key(key);
    if let Some(answer) = round.answer(&key) {
        return Ok(Ok(answer.clone()));
    }
    let question = Question {
        key,
        method,
        params,
    };
    if let Err(question) = round.ask(question) {
        return Err(question.params);
    }
    // (A context kept past the request asks too late: its request has
    // ended, and no round will bring the answer.)
    cancel.cancelled_or_ended().await;
    Ok(Err(ClientError::Cancelled))
}
