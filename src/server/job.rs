//! One request's async work, run to exactly one reply: the tool's outcome,
//! or the error that stopped it — `-32003` when the client cancelled it,
//! `-32004` past its time limit, `-32005` when shutdown's grace period ran
//! out, `-32603` when it panicked.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use super::dispatch::{self, Work};
use super::session::Shared;
use crate::error::{ErrorCode, RpcError};
use crate::jsonrpc::{RequestId, encode_error};
use crate::tool::{CancelReason, Cancellation};

/// A request whose reply needs async work.
pub(super) struct Job {
    pub(super) id: RequestId,
    pub(super) method: &'static str,
    pub(super) work: Work,
    pub(super) cancel: Cancellation,
    /// When it was read, if trace is on.
    pub(super) started: Option<Instant>,
    /// The work may hold its thread: never run it on the reader.
    pub(super) may_block: bool,
}

/// A future that is pending on its first poll only, without asking to be
/// woken: for waits that can only end after the session polls the job a
/// second time (its cancellation, once registered; its time limit).
#[derive(Default)]
struct AfterFirstPoll(bool);

impl Future for AfterFirstPoll {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        Poll::Pending
    }
}

/// A handled request: its reply and, if trace is on, its trace line.
pub(super) struct Handled {
    pub(super) reply: Vec<u8>,
    pub(super) trace: Option<Vec<u8>>,
}

impl Job {
    /// Runs the work to its reply: the tool's outcome, or `-32003` when the
    /// client cancelled it, `-32004` past its time limit, `-32005` when the
    /// shutdown grace period ran out, `-32603` when it panicked.
    ///
    /// `inline`: the first poll is the session's own, before the job is
    /// registered for cancellation, and the job is polled again (in a task
    /// of its own) if it does not finish then; waiting for cancellation and
    /// for the time limit starts at that second poll, so a job that finishes
    /// at once never pays for them.
    pub(super) async fn run(self, shared: Arc<Shared>, inline: bool) -> Handled {
        let Job {
            id,
            method,
            work,
            cancel,
            started,
            ..
        } = self;
        let limit = work.time_limit(&shared.server);
        let tool = work.tool_index();
        let work = dispatch::perform(shared.server.clone(), id.clone(), work, cancel.clone());
        let expired = async {
            if inline {
                AfterFirstPoll::default().await;
            }
            match limit {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending().await,
            }
        };
        let cancelled = async {
            if inline {
                AfterFirstPoll::default().await;
            }
            cancel.cancelled().await;
        };
        let tool_id = || {
            tool.and_then(|i| shared.server.tools.get(i))
                .map_or("?", |t| t.mcp_id.as_str())
        };
        let stopped = || {
            let error = match cancel.reason() {
                Some(CancelReason::TimeLimit) => RpcError::new(
                    ErrorCode::REQUEST_TIMED_OUT,
                    format!(
                        "tool {} ran past its time limit of {:?}",
                        tool_id(),
                        limit.unwrap_or_default()
                    ),
                ),
                Some(CancelReason::Shutdown) => RpcError::shutting_down(
                    "the server is shutting down and the request did not finish within the grace period",
                ),
                Some(CancelReason::Gone) => {
                    RpcError::new(ErrorCode::REQUEST_CANCELLED, "the client is gone")
                }
                Some(CancelReason::Client) | None => RpcError::new(
                    ErrorCode::REQUEST_CANCELLED,
                    "the request was cancelled by $/cancelRequest",
                ),
            };
            encode_error(&id, &error)
        };
        let gone = async {
            if inline {
                AfterFirstPoll::default().await;
            }
            shared.out.closed().await;
        };
        let reply = tokio::select! {
            biased;
            () = cancelled => stopped(),
            outcome = CatchUnwind { inner: work } => match outcome {
                // A tool that saw the cancellation and returned is still cancelled.
                _ if cancel.is_cancelled() => stopped(),
                Ok(reply) => reply,
                Err(panic) => {
                    tracing::error!(%id, "a tool panicked: {panic}");
                    encode_error(&id, &RpcError::internal(format!("the tool panicked: {panic}")))
                }
            },
            () = expired => {
                cancel.cancel(CancelReason::TimeLimit); // tell work the tool handed elsewhere
                stopped()
            }
            () = gone => {
                // Nobody reads the reply (the HTTP client went away): stop the tool.
                cancel.cancel(CancelReason::Gone);
                stopped()
            }
        };
        let trace = shared.trace_line(method, &id, started, &reply);
        Handled { reply, trace }
    }

    /// Registers a (possibly half-run) job for cancellation now, and
    /// returns it wrapped to unregister when it is done.
    pub(super) fn registered(
        running: Pin<Box<dyn Future<Output = Handled> + Send>>,
        shared: &Arc<Shared>,
        id: &RequestId,
        cancel: &Cancellation,
    ) -> impl Future<Output = Handled> + Send + 'static {
        let registration = shared.register(id, cancel);
        let shared = shared.clone();
        async move {
            let handled = running.await;
            shared.unregister(&registration);
            handled
        }
    }
}

pin_project_lite::pin_project! {
    /// Turns a panic inside a request's future into an error value.
    struct CatchUnwind<F> {
        #[pin]
        inner: F,
    }
}

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, String>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.project().inner;
        match std::panic::catch_unwind(AssertUnwindSafe(move || inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Err(payload) => Poll::Ready(Err(payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_owned()))),
        }
    }
}
