//! One request's async work, run to its end: the work's outcome, or what
//! stopped it — the client cancelled it, it ran past its time limit,
//! shutdown's grace period ran out, the client went away — or its panic.
//! The session's dialect turns that end into the reply (or into none: the
//! Model Context Protocol does not answer a cancelled request).

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use serde_json::value::RawValue;

use super::operation::{self, Done, Failure, Work};
use super::peer::Link;
use super::push::Cause;
use super::shared::Shared;
use crate::dialect::{Dialect, Ended, JobInfo};
use crate::jsonrpc::RequestId;
use crate::tool::{CancelReason, Cancellation, ToolContext};

/// A request's work under way, its panics caught.
type Running = Pin<Box<dyn Future<Output = Result<Result<Done, Failure>, String>> + Send>>;

/// A request whose reply needs async work.
pub(super) struct Job {
    pub(super) id: RequestId,
    /// The method, for MCP v1.0's trace lines.
    method: &'static str,
    cancel: Cancellation,
    /// When it was read, if trace is on.
    started: Option<Instant>,
    /// The work may hold its thread: never run it on the reader.
    pub(super) may_block: bool,
    info: JobInfo,
    /// What the work causes, captured (Model Context Protocol sessions that
    /// subscribed to resources).
    cause: Option<Arc<Cause>>,
    running: Running,
}

/// A handled request: the notifications it caused, its reply (none for a
/// request the dialect does not answer) and, if trace is on, its trace line.
pub(crate) struct Handled {
    pub(crate) id: RequestId,
    pub(crate) caused: Vec<Vec<u8>>,
    pub(crate) reply: Option<Vec<u8>>,
    pub(crate) trace: Option<Vec<u8>>,
}

impl Handled {
    /// A reply known at once.
    pub(crate) fn reply(id: RequestId, reply: Option<Vec<u8>>) -> Self {
        Self {
            id,
            caused: Vec::new(),
            reply,
            trace: None,
        }
    }
}

impl Job {
    /// The job for `work`, not started yet (futures do nothing until polled).
    pub(super) fn new(
        shared: &Arc<Shared>,
        id: RequestId,
        work: Work,
        progress: Option<Box<RawValue>>,
        started: Option<Instant>,
    ) -> Self {
        let server = &shared.server;
        let cancel = Cancellation::new();
        let info = JobInfo {
            tool: work.tool_index(),
            limit: work.time_limit(server),
        };
        let span = match info.tool.and_then(|i| server.catalog.tools.get(i)) {
            Some(tool) => tracing::debug_span!("tool", request_id = %id, tool = %tool.mcp_id()),
            None => tracing::Span::none(),
        };
        // Only a Model Context Protocol session can carry progress, log
        // lines or requests to the client.
        let link = (shared.dialect == Dialect::ModelContext).then(|| Link::new(shared, progress));
        let ctx = ToolContext::new(id.clone(), cancel.clone(), server.clone(), span, link);
        let method = shared.dialect.trace_name(&work);
        let may_block = work.may_block(server);
        // A change a tool of this session fires goes on the request's
        // stream (MCP-DIALECT.md §5): capture it, when the session could
        // want it at all.
        let cause = (shared.dialect.captures_causes() && !shared.subscriptions.is_empty())
            .then(|| Cause::new(shared.push_number()));
        // A tool call boxes a future of its own size (a few hundred bytes
        // fewer to write and copy than `perform`'s largest branch).
        let running = match work {
            Work::CallTool { tool, arguments } => {
                let call = operation::call_tool(server.clone(), tool, arguments, ctx);
                running(call, cause.as_ref())
            }
            work => running(
                operation::perform(server.clone(), work, ctx),
                cause.as_ref(),
            ),
        };
        Job {
            method,
            may_block,
            running,
            cause,
            info,
            id,
            cancel,
            started,
        }
    }

    /// Polls the work once, without a waker: the reply if it finished (most
    /// tools finish without waiting, and then cost no task, no timer and no
    /// registration for cancellation), or the job to [`run`](Self::run) in a
    /// task of its own. Only for work that does not block its thread.
    // The job comes back by value: boxing it would cost an allocation on
    // the path that already spawns a task.
    #[allow(clippy::result_large_err)]
    pub(super) fn try_now(mut self, shared: &Shared) -> Result<Handled, Self> {
        let mut cx = Context::from_waker(Waker::noop());
        match self.running.as_mut().poll(&mut cx) {
            Poll::Ready(outcome) => Ok(self.finish(shared, Some(outcome))),
            Poll::Pending => Err(self),
        }
    }

    /// Runs the work to its end: its outcome, or what stopped it first (a
    /// cancel, the time limit, the end of shutdown's grace period, the
    /// client going away). The time limit counts from here.
    async fn run(mut self, shared: Arc<Shared>) -> Handled {
        let limit = self.info.limit;
        let expired = async {
            match limit {
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
                // Nobody reads the reply (the client went away): stop the tool.
                self.cancel.cancel(CancelReason::Gone);
                None
            }
        };
        self.finish(&shared, outcome)
    }

    /// The reply for the work's outcome (`None`: stopped before it ended).
    fn finish(
        self,
        shared: &Shared,
        outcome: Option<Result<Result<Done, Failure>, String>>,
    ) -> Handled {
        let ended = match outcome {
            // A tool that saw the cancellation and returned is still cancelled.
            Some(_) | None if self.cancel.is_cancelled() => {
                Ended::Stopped(self.cancel.reason().unwrap_or(CancelReason::Client))
            }
            None => Ended::Stopped(CancelReason::Client),
            Some(Ok(result)) => Ended::Finished(result),
            Some(Err(panic)) => Ended::Panicked(panic),
        };
        let reply = shared
            .dialect
            .encode_end(shared, &self.id, ended, &self.info);
        let trace = shared.trace_line(self.method, &self.id, self.started, reply.as_deref());
        let caused = self
            .cause
            .map(|cause| cause.take())
            .unwrap_or_default()
            .iter()
            .filter_map(|uri| shared.dialect.resource_changed(&shared.subscriptions, uri))
            .collect();
        Handled {
            id: self.id,
            caused,
            reply,
            trace,
        }
    }

    /// Answers a request that was cancelled before it started (it was
    /// parked): its work never runs.
    pub(super) fn cancel_unstarted(self, shared: &Shared) -> Handled {
        Handled::reply(
            self.id.clone(),
            shared.dialect.cancelled_unstarted(&self.id),
        )
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

/// `work` boxed, its panics caught, and its changes captured in `cause`.
fn running<F>(work: F, cause: Option<&Arc<Cause>>) -> Running
where
    F: Future<Output = Result<Done, Failure>> + Send + 'static,
{
    match cause {
        Some(cause) => Box::pin(CatchUnwind {
            inner: cause.scope(work),
        }),
        None => Box::pin(CatchUnwind { inner: work }),
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
