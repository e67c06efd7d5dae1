//! One request's async work, run to exactly one reply: the tool's outcome,
//! or the error that stopped it — `-32003` when the client cancelled it,
//! `-32004` past its time limit, `-32005` when shutdown's grace period ran
//! out, `-32603` when it panicked.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use super::dispatch::{self, Work};
use super::shared::Shared;
use crate::error::{ErrorCode, RpcError};
use crate::jsonrpc::{RequestId, encode_error};
use crate::tool::{CancelReason, Cancellation};

/// A request's work under way, its panics caught.
type Running = Pin<Box<dyn Future<Output = Result<Vec<u8>, String>> + Send>>;

/// A request whose reply needs async work.
pub(super) struct Job {
    pub(super) id: RequestId,
    method: &'static str,
    cancel: Cancellation,
    /// When it was read, if trace is on.
    started: Option<Instant>,
    /// The work may hold its thread: never run it on the reader.
    pub(super) may_block: bool,
    limit: Option<Duration>,
    tool: Option<usize>,
    running: Running,
}

/// A handled request: its reply and, if trace is on, its trace line.
pub(super) struct Handled {
    pub(super) reply: Vec<u8>,
    pub(super) trace: Option<Vec<u8>>,
}

impl Job {
    /// The job for `work`, not started yet (futures do nothing until polled).
    pub(super) fn new(
        shared: &Shared,
        id: RequestId,
        work: Work,
        started: Option<Instant>,
    ) -> Self {
        let server = &shared.server;
        let cancel = Cancellation::new();
        Job {
            method: work.method(),
            may_block: work.may_block(server),
            limit: work.time_limit(server),
            tool: work.tool_index(),
            running: Box::pin(CatchUnwind {
                inner: dispatch::perform(server.clone(), id.clone(), work, cancel.clone()),
            }),
            id,
            cancel,
            started,
        }
    }

    /// Polls the work once, without a waker: the reply if it finished (most
    /// tools finish without waiting, and then cost no task, no timer and no
    /// registration for cancellation), or the job to [`run`](Self::run) in a
    /// task of its own. Only for work that does not block its thread.
    pub(super) fn try_now(mut self, shared: &Shared) -> Result<Handled, Self> {
        let mut cx = Context::from_waker(Waker::noop());
        match self.running.as_mut().poll(&mut cx) {
            Poll::Ready(outcome) => Ok(self.finish(shared, Some(outcome))),
            Poll::Pending => Err(self),
        }
    }

    /// Runs the work to its reply: the tool's outcome, or `-32003` when the
    /// client cancelled it, `-32004` past its time limit, `-32005` when the
    /// shutdown grace period ran out, `-32603` when it panicked. The time
    /// limit counts from here.
    async fn run(mut self, shared: Arc<Shared>) -> Handled {
        let expired = async {
            match self.limit {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending().await,
            }
        };
        let outcome = tokio::select! {
            biased;
            () = self.cancel.cancelled() => None,
            outcome = self.running.as_mut() => Some(outcome),
            () = expired => {
                self.cancel.cancel(CancelReason::TimeLimit); // tell work the tool handed elsewhere
                None
            }
            () = shared.out.closed() => {
                // Nobody reads the reply (the HTTP client went away): stop the tool.
                self.cancel.cancel(CancelReason::Gone);
                None
            }
        };
        self.finish(&shared, outcome)
    }

    /// Answers a request that was cancelled before it started (it was
    /// parked): its work never runs.
    pub(super) fn cancel_unstarted(self, shared: &Shared) -> Handled {
        self.cancel.cancel(CancelReason::Client);
        self.finish(shared, None)
    }

    /// The reply for the work's outcome (`None`: stopped before it ended).
    fn finish(self, shared: &Shared, outcome: Option<Result<Vec<u8>, String>>) -> Handled {
        let reply = match outcome {
            // A tool that saw the cancellation and returned is still cancelled.
            Some(_) if self.cancel.is_cancelled() => self.stopped(shared),
            None => self.stopped(shared),
            Some(Ok(reply)) => reply,
            Some(Err(panic)) => {
                tracing::error!(id = %self.id, "a tool panicked: {panic}");
                encode_error(
                    &self.id,
                    &RpcError::internal(format!("the tool panicked: {panic}")),
                )
            }
        };
        let trace = shared.trace_line(self.method, &self.id, self.started, &reply);
        Handled { reply, trace }
    }

    /// The error for work stopped before it ended, by the reason it was.
    fn stopped(&self, shared: &Shared) -> Vec<u8> {
        let error = match self.cancel.reason() {
            Some(CancelReason::TimeLimit) => {
                let tool = self
                    .tool
                    .and_then(|i| shared.server.tools.get(i))
                    .map_or("?", |t| t.mcp_id.as_str());
                RpcError::new(
                    ErrorCode::REQUEST_TIMED_OUT,
                    format!(
                        "tool {tool} ran past its time limit of {:?}",
                        self.limit.unwrap_or_default()
                    ),
                )
            }
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
        encode_error(&self.id, &error)
    }

    /// Registers the job for cancellation now, and returns it running,
    /// wrapped to unregister when it is done.
    pub(super) fn registered(
        self,
        shared: &Arc<Shared>,
    ) -> impl Future<Output = Handled> + Send + 'static {
        let registration = shared.register(&self.id, &self.cancel);
        let shared = shared.clone();
        async move {
            let handled = self.run(shared.clone()).await;
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
