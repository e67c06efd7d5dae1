//! One request's async work, run to its end: the work's outcome, or what
//! stopped it — the client cancelled it, it ran past its time limit,
//! shutdown's grace period ran out, the client went away — or its panic.
//! The session's dialect turns that end into the reply (or into none: the
//! Model Context Protocol does not answer a cancelled request).

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use serde_json::value::RawValue;

use tracing::Instrument;

use super::link::RoundSource;
use super::listen::Listening;
use super::outbox::Handled;
use super::shared::Shared;
use super::traced::Traced;
use crate::dialect::Listing;
use crate::dialect::{Dialect, Ended, JobInfo};
use crate::engine::operation::{self, Arguments, Done, Failure, Work};
use crate::handle::Cause;
use crate::in_flight::Reservation;
use crate::jsonrpc::RequestId;
use crate::principal::Caller;
use crate::round_trip::RoundTrip;
use crate::tool::{CancelReason, Cancellation, ContextSource, LazyContext, ToolContext};

/// What a request's work ended with: its result, or its panic's message.
type Outcome = Result<Result<Done, Failure>, String>;

/// A request's work under way, its panics caught.
type Running = Pin<Box<dyn Future<Output = Outcome> + Send>>;

/// The answer to a job polled again after it ended (no path does so).
const POLLED_AFTER_ITS_END: &str = "the request's work was polled after it ended";

/// How a job runs, besides its work: as `dialect` encodes it, with the
/// request's progress token, the time it was read (if trace is on), its
/// round (a 2026-07-28 request), its name in trace lines and whether the
/// changes it fires are captured as caused by it.
pub(crate) struct Run {
    pub(crate) dialect: Dialect,
    pub(crate) progress: Option<Box<RawValue>>,
    pub(crate) started: Option<Instant>,
    pub(crate) round: Option<Arc<RoundTrip>>,
    pub(crate) trace_name: &'static str,
    pub(crate) captures_causes: bool,
    /// Its span (feature `otel`).
    pub(crate) traced: Traced,
}

/// A request whose reply needs async work.
pub(crate) struct Job {
    /// The dialect its reply is encoded in (its session's, or the
    /// 2026-07-28 revision's for such a request).
    dialect: Dialect,
    pub(crate) id: RequestId,
    /// The method, for MCP v1.0's trace lines.
    method: &'static str,
    /// The request's cancellation signal: made with its context, or when
    /// the job is registered to run in a task (a tool call served on the
    /// reader by a function that takes no context needs none).
    cancel: Option<Cancellation>,
    /// When it was read, if trace is on.
    started: Option<Instant>,
    /// The work may hold its thread: never run it on the reader.
    may_block: bool,
    info: JobInfo,
    /// What the work causes, captured (Model Context Protocol sessions that
    /// subscribed to resources).
    cause: Option<Arc<Cause>>,
    stage: Stage,
    /// Who sent the request (its context's principal and HTTP head).
    caller: Caller,
    /// Its span (feature `otel`): the work runs in it, its end ends it.
    traced: Traced,
    /// Its request's bytes, counted against its principal while it is in
    /// flight (`ServerBuilder::max_in_flight_bytes_per_principal`): held
    /// for its drop.
    _reserved: Option<Box<Reservation>>,
}

/// Where a job's work stands.
enum Stage {
    /// A tool call, on the JSON path (the tool reads its arguments' text),
    /// not started: started on the reader, it costs no box of its own,
    /// and a context only if the tool's function takes one.
    Call {
        tool: usize,
        text: Box<str>,
        /// `_meta.progressToken`, for the context if one is made.
        progress: Option<Box<RawValue>>,
    },
    /// Work boxed, to poll (started or not).
    Running(Running),
    /// A listen stream, not started: its work is made where it runs
    /// (boxed: every other job's stage stays as small as it was).
    Listen(Box<Listening>),
    /// Finished: polled to its end.
    Done,
}

impl Job {
    /// Keeps its request's bytes counted until it ends.
    pub(crate) fn hold(&mut self, reserved: Box<Reservation>) {
        self._reserved = Some(reserved);
    }

    /// The job for `work`, not started yet (futures do nothing until polled):
    /// its indices are into `listing`'s catalog, which it keeps.
    pub(crate) fn new(
        shared: &Arc<Shared>,
        listing: Arc<Listing>,
        id: RequestId,
        work: Work,
        run: Run,
        caller: &Caller,
    ) -> Self {
        let Run {
            dialect,
            progress,
            started,
            round,
            trace_name: method,
            captures_causes,
            traced,
        } = run;
        let catalog = &listing.catalog;
        let limit = work.time_limit(catalog);
        let may_block = work.may_block(catalog);
        let quick = |tool: usize| {
            catalog
                .tools
                .get(tool)
                .is_some_and(|t| t.quick_input.is_some())
        };
        let info = JobInfo {
            tool: work.tool_index(),
            limit,
            round,
            private: caller.principal.is_some(),
            listing: listing.clone(),
        };
        // A change a tool of this session fires goes on the request's
        // stream (docs/model-context.md §5): capture it, when the session could
        // want it at all.
        let cause = captures_causes.then(|| Cause::new(shared.push_number()));
        let mut job = Job {
            dialect,
            method,
            may_block,
            stage: Stage::Done,
            cause,
            info,
            id,
            cancel: None,
            started,
            caller: caller.clone(),
            traced,
            _reserved: None,
        };
        job.stage = match work {
            // The usual tool call: left to start where it runs.
            Work::CallTool {
                tool,
                arguments: Arguments::Text(text),
            } if job.cause.is_none() && !may_block && quick(tool) => Stage::Call {
                tool,
                text,
                progress,
            },
            // A tool call boxes a future of its own size (a few hundred
            // bytes fewer to write and copy than `perform`'s largest
            // branch).
            Work::CallTool { tool, arguments } => {
                Stage::Running(job.boxed_call(shared, tool, arguments, progress))
            }
            work => {
                let ctx = job.context(shared, progress);
                let perform = operation::perform(listing, work, ctx);
                Stage::Running(job.gated(running(perform, job.cause.as_ref())))
            }
        };
        job
    }

    /// A `subscriptions/listen` stream (2026-07-28) as a job: it ends when
    /// the client cancels it or goes away, or with its result when the
    /// server shuts down or its session's input ends. Its work starts
    /// where the job runs, on that session's output; a transport that runs
    /// the stream itself takes it back out ([`into_listening`](Self::into_listening)).
    pub(crate) fn listening(listening: Listening, caller: &Caller) -> Self {
        Job {
            dialect: Dialect::Revision2026,
            method: "",
            may_block: false,
            cause: None,
            info: JobInfo {
                tool: None,
                limit: None,
                round: None,
                private: caller.principal.is_some(),
                listing: listening.listing.clone(),
            },
            id: listening.id.clone(),
            cancel: None,
            started: listening.started,
            caller: caller.clone(),
            traced: Traced::default(),
            stage: Stage::Listen(Box::new(listening)),
            _reserved: None,
        }
    }

    /// A job whose work is `work`, made already: a task's start, or a
    /// task's tool call (`tool`, with its time limit), stopped by `cancel`.
    pub(crate) fn of_work<F>(
        listing: Arc<Listing>,
        id: RequestId,
        dialect: Dialect,
        caller: &Caller,
        (tool, cancel): (Option<usize>, Option<Cancellation>),
        work: F,
    ) -> Self
    where
        F: Future<Output = Result<Done, Failure>> + Send + 'static,
    {
        let limit = tool.and_then(|i| listing.catalog.tools.get(i)?.time_limit);
        Job {
            dialect,
            method: "",
            may_block: false,
            cause: None,
            info: JobInfo {
                tool,
                limit,
                round: None,
                private: caller.principal.is_some(),
                listing,
            },
            id,
            cancel,
            started: None,
            caller: caller.clone(),
            traced: Traced::default(),
            stage: Stage::Running(running(work, None)),
            _reserved: None,
        }
    }

    /// The job, encoded as a request of `round` (2026-07-28): its work
    /// may end it with the round's questions.
    pub(crate) fn in_round(mut self, round: Option<Arc<RoundTrip>>) -> Self {
        self.info.round = round;
        self
    }

    /// Runs the job to its end on `shared` (which must outlive it), in
    /// this task: the reply its dialect encodes, if any.
    pub(crate) async fn run_to_end(self, shared: Arc<Shared>) -> Handled {
        self.run(shared).await
    }

    /// Whether the job is a listen stream, not started.
    pub(crate) fn is_listen(&self) -> bool {
        matches!(self.stage, Stage::Listen(_))
    }

    /// The listen stream this job is, not started, or the job itself.
    #[allow(clippy::result_large_err)]
    pub(crate) fn into_listening(mut self) -> Result<Listening, Self> {
        match std::mem::replace(&mut self.stage, Stage::Done) {
            Stage::Listen(listening) => Ok(*listening),
            stage => {
                self.stage = stage;
                Err(self)
            }
        }
    }

    /// The work of a stage not started yet, boxed to run on `shared`'s
    /// output; a started stage as it is.
    fn started(&mut self, shared: &Arc<Shared>, stage: Stage) -> Stage {
        match stage {
            Stage::Call {
                tool,
                text,
                progress,
            } => Stage::Running(self.boxed_call(shared, tool, Arguments::Text(text), progress)),
            Stage::Listen(listening) => {
                let work = super::listen::listen(shared.clone(), *listening);
                Stage::Running(running(work, None))
            }
            stage => stage,
        }
    }

    /// Tool `tool`'s call with `arguments`, boxed with a context made now
    /// (the whole path, trying the JSON path first).
    fn boxed_call(
        &mut self,
        shared: &Arc<Shared>,
        tool: usize,
        arguments: Arguments,
        progress: Option<Box<RawValue>>,
    ) -> Running {
        let ctx = self.context(shared, progress);
        let call = operation::call_tool(self.info.listing.clone(), tool, arguments, ctx, false);
        self.gated(running(call, self.cause.as_ref()))
    }

    /// `work`, stopped where its round waits for input (2026-07-28).
    fn gated(&self, work: Running) -> Running {
        match &self.info.round {
            Some(round) => Box::pin(InputGate {
                inner: work,
                round: round.clone(),
            }),
            None => work,
        }
    }

    /// The request's context, made now (with its cancellation signal).
    fn context(
        &mut self,
        shared: &Arc<Shared>,
        mut progress: Option<Box<RawValue>>,
    ) -> ToolContext {
        let span = self.span();
        let mut round_source = None;
        let source = source(shared, self.info.round.as_ref(), &mut round_source);
        self.lazy_context(source, &span, &mut progress).get()
    }

    /// The request's context, made only when asked for, in `source`'s
    /// session: the one place a job's context is put together.
    fn lazy_context<'j>(
        &'j mut self,
        source: &'j dyn ContextSource,
        span: &'j tracing::Span,
        progress: &'j mut Option<Box<RawValue>>,
    ) -> LazyContext<'j> {
        LazyContext::of_parts(
            &self.id,
            &mut self.cancel,
            source,
            span,
            progress,
            &self.caller,
        )
    }

    /// The tracing span of the request's work: its request's (feature
    /// `otel`), else `tool` at debug level, for a tool call.
    fn span(&self) -> tracing::Span {
        if let Some(span) = self.traced.span() {
            return span.clone();
        }
        match (self.info.tool).and_then(|i| self.info.listing.catalog.tools.get(i)) {
            Some(tool) => {
                tracing::debug_span!("tool", request_id = %self.id, tool = %tool.mcp_id())
            }
            None => tracing::Span::none(),
        }
    }

    /// The one executor policy: the work is polled once where it was
    /// dispatched, without a waker, unless its tool may block. The reply if
    /// it finished (most tools finish without waiting, and then cost no
    /// task, no timer and no registration for cancellation), or the job to
    /// [`run`](Self::run) on in a task of its own
    /// ([`run_in_task`](super::dispatch::run_in_task), or, for an HTTP
    /// single exchange, in a session of its own).
    // The job comes back by value: boxing it would cost an allocation on
    // the path that already spawns a task.
    #[allow(clippy::result_large_err)]
    pub(crate) fn poll_once(mut self, shared: &Arc<Shared>) -> Result<Handled, Self> {
        if self.may_block {
            return Err(self);
        }
        let mut cx = Context::from_waker(Waker::noop());
        let polled = match std::mem::replace(&mut self.stage, Stage::Done) {
            Stage::Call {
                tool,
                text,
                progress,
            } => self.call_now(shared, tool, text, progress),
            Stage::Running(mut running) => match running.as_mut().poll(&mut cx) {
                Poll::Ready(outcome) => Ok(outcome),
                Poll::Pending => Err(running),
            },
            listen @ Stage::Listen(_) => match self.started(shared, listen) {
                Stage::Running(mut running) => match running.as_mut().poll(&mut cx) {
                    Poll::Ready(outcome) => Ok(outcome),
                    Poll::Pending => Err(running),
                },
                _ => Ok(Err(POLLED_AFTER_ITS_END.to_owned())),
            },
            Stage::Done => Ok(Err(POLLED_AFTER_ITS_END.to_owned())),
        };
        match polled {
            Ok(outcome) => Ok(self.finish(shared, Some(outcome))),
            Err(running) => {
                self.stage = Stage::Running(running);
                Err(self)
            }
        }
    }

    /// Starts a tool call on the JSON path and polls it once, here: its
    /// outcome, or the call boxed to run on (it waits). A context is made
    /// only if the tool's function takes one; a call the tool hands back
    /// takes the whole path. Panics are caught as in a task.
    fn call_now(
        &mut self,
        shared: &Arc<Shared>,
        index: usize,
        text: Box<str>,
        mut progress: Option<Box<RawValue>>,
    ) -> Result<Outcome, Running> {
        let listing = self.info.listing.clone();
        let Some(tool) = listing.catalog.tools.get(index) else {
            return Ok(Ok(Err(operation::tool_out_of_range())));
        };
        let mut cx = Context::from_waker(Waker::noop());
        let span = self.span();
        let round = self.info.round.clone();
        let mut round_source = None;
        let source = source(shared, round.as_ref(), &mut round_source);
        // A round whose work asked what it cannot answer ends now.
        let waits = || round.as_ref().is_some_and(|r| r.waits_for_input());
        let ctx = self.lazy_context(source, &span, &mut progress);
        let started = catch_unwind(AssertUnwindSafe(|| {
            operation::start_json_call(tool, &text, ctx, &span)
        }));
        let mut calling = match started {
            Ok(Ok(calling)) => calling,
            Ok(Err(ctx)) => {
                let ctx = ctx.get();
                let call =
                    operation::call_tool(listing.clone(), index, Arguments::Text(text), ctx, true);
                let mut running = running(call, None);
                return match running.as_mut().poll(&mut cx) {
                    Poll::Ready(outcome) => Ok(outcome),
                    Poll::Pending if waits() => Ok(Ok(Err(Failure::InputRequired))),
                    Poll::Pending => Err(self.gated(running)),
                };
            }
            Err(payload) => return Ok(Err(panic_message(&*payload))),
        };
        let polled = catch_unwind(AssertUnwindSafe(|| {
            let polled = {
                let _in_span = span.enter();
                calling.as_mut().poll(&mut cx)
            };
            polled.map(|ended| operation::finish_json_call(tool, ended))
        }));
        match polled {
            Ok(Poll::Ready(result)) => Ok(Ok(result.map(Done::Tool))),
            Ok(Poll::Pending) if waits() => Ok(Ok(Err(Failure::InputRequired))),
            Ok(Poll::Pending) => {
                let listing = listing.clone();
                let call = async move {
                    let ended = calling.instrument(span).await;
                    match listing.catalog.tools.get(index) {
                        Some(tool) => operation::finish_json_call(tool, ended).map(Done::Tool),
                        None => Err(operation::tool_out_of_range()),
                    }
                };
                Err(self.gated(running(call, None)))
            }
            Err(payload) => Ok(Err(panic_message(&*payload))),
        }
    }

    /// Runs the work to its end: its outcome, or what stopped it first (a
    /// cancel, the time limit, the end of shutdown's grace period, the
    /// client going away). The time limit counts from here.
    async fn run(mut self, shared: Arc<Shared>) -> Handled {
        // A tool call not started on the reader, or a listen stream, starts here.
        let stage = std::mem::replace(&mut self.stage, Stage::Done);
        self.stage = self.started(&shared, stage);
        let cancel = self.cancel.get_or_insert_with(Cancellation::new).clone();
        let Stage::Running(work) = &mut self.stage else {
            return self.finish(&shared, Some(Err(POLLED_AFTER_ITS_END.to_owned())));
        };
        let limit = self.info.limit;
        let expired = async {
            match limit {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending().await,
            }
        };
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            outcome = work.as_mut() => Some(outcome),
            () = expired => {
                cancel.cancel(CancelReason::TimeLimit); // tell work the tool handed elsewhere
                None
            }
            () = shared.out.closed() => {
                // Nobody reads the reply (the client went away): stop the tool.
                cancel.cancel(CancelReason::Gone);
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
            Some(_) | None if self.cancel.as_ref().is_some_and(Cancellation::is_cancelled) => {
                Ended::Stopped(
                    self.cancel
                        .as_ref()
                        .and_then(Cancellation::reason)
                        .unwrap_or(CancelReason::Client),
                )
            }
            None => Ended::Stopped(CancelReason::Client),
            Some(Ok(result)) => Ended::Finished(result),
            Some(Err(panic)) => Ended::Panicked(panic),
        };
        // A context the tool kept past its call sends the client nothing
        // from now on.
        if let Some(cancel) = &self.cancel {
            cancel.end();
        }
        let failure = self.traced.failure_of(&ended);
        let reply = self.dialect.encode_end(shared, &self.id, ended, &self.info);
        self.traced.ended(reply.as_ref(), failure);
        let trace = shared.trace_line(
            self.method,
            &self.id,
            self.started,
            reply.as_ref().map(|r| r.bytes.as_slice()),
        );
        let caused = self
            .cause
            .map(|cause| cause.take())
            .unwrap_or_default()
            .iter()
            .filter_map(|uri| {
                let change = crate::handle::Push::Updated(uri.clone());
                shared.dialect.pushed(&shared.subscriptions, &change)
            })
            .collect();
        Handled {
            id: self.id,
            caused,
            reply,
            trace,
            refused: None,
        }
    }

    /// Answers a request that was cancelled before it started (it was
    /// parked): its work never runs.
    pub(crate) fn cancel_unstarted(self) -> Handled {
        Handled::reply(self.id.clone(), self.dialect.cancelled_unstarted(&self.id))
    }

    /// Registers the job for cancellation now, and returns it running,
    /// wrapped to unregister when it is done.
    pub(crate) fn registered(
        mut self,
        shared: &Arc<Shared>,
    ) -> impl Future<Output = Handled> + Send + 'static {
        let cancel = self.cancel.get_or_insert_with(Cancellation::new);
        let registration = shared.register(&self.id, cancel);
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

/// What a job's context is made from: its session, or, in a round of a
/// 2026-07-28 request, the round's source (kept in `slot`).
fn source<'s>(
    shared: &'s Arc<Shared>,
    round: Option<&Arc<RoundTrip>>,
    slot: &'s mut Option<RoundSource>,
) -> &'s dyn ContextSource {
    match round {
        Some(round) => slot.insert(RoundSource {
            shared: shared.clone(),
            round: round.clone(),
        }),
        None => shared,
    }
}

/// A 2026-07-28 request's work, stopped at the end of a poll in which it
/// asked the client a question its round has no answer for: the request
/// then ends with the questions (`round_trip`). A question asked from a
/// task the work spawned wakes it, so that it is stopped then too.
struct InputGate {
    inner: Running,
    round: Arc<RoundTrip>,
}

impl Future for InputGate {
    type Output = Outcome;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome> {
        self.round.wake_on_question(cx.waker());
        match self.inner.as_mut().poll(cx) {
            Poll::Pending if self.round.waits_for_input() => {
                Poll::Ready(Ok(Err(Failure::InputRequired)))
            }
            polled => polled,
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
            Err(payload) => Poll::Ready(Err(panic_message(&*payload))),
        }
    }
}

/// A panic's message, as a request's reply words it.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}
