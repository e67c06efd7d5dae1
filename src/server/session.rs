//! One session: reads messages from a transport's input stream, runs the
//! handshake, serves requests concurrently and writes every outgoing message
//! to the transport's output channel (PROTOCOL.md §1, §3, §5).
//!
//! Concurrency: a request that needs async work is polled once on the
//! session's reader — most tools finish then, at no cost — and otherwise
//! (or when its tool [may block](crate::Tool::may_block)) runs on in a task
//! of its own ([`Job`]); replies go out in completion order. At most
//! `max_in_flight` requests run at once: the session takes a permit
//! *before* it reads the next message, so a full session simply stops
//! reading. The session's output channel
//! closes only when the reader and every request task are done, so a
//! transport that waits for the channel to close has flushed every reply.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use bytes::Bytes;
use futures_core::Stream;
use serde_json::value::RawValue;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::dispatch::{self, Step};
use super::handshake::{Admission, Phase};
use super::job::{Handled, Job};
use super::push::Subscription;
use super::{IdHasher, Server, ServerInner};
use crate::error::{ErrorCode, RpcError};
use crate::jsonrpc::{
    self, Incoming, Parsed, RequestId, encode_batch, encode_error, encode_notification,
    encode_result,
};
use crate::protocol::{
    CancelParams, InitializeParams, LogTraceParams, SetTraceParams, TraceValue, methods,
};
use crate::tool::{CancelReason, Cancellation};

/// One unit of input from a transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A whole message body (one JSON value: an object or a batch).
    Message(Bytes),
    /// A message over the size limit, skipped unread: answered `-32006`.
    TooLarge {
        /// The size the message announced (stdio), or the bytes of it seen
        /// before it crossed the limit (HTTP streaming).
        declared: usize,
    },
    /// Bytes the transport could not frame (a garbage header block):
    /// answered `-32700`.
    Unreadable(String),
}

/// What a message asks of the session.
enum Outcome {
    Nothing,
    Reply(Handled),
    Run(Job),
}

/// What the whole session's tasks share.
pub(super) struct Shared {
    pub(super) server: Arc<ServerInner>,
    pub(super) out: mpsc::Sender<Vec<u8>>,
    /// 0 off, 1 messages, 2 verbose.
    trace: AtomicU8,
    /// Past `initialized`: server notifications may be sent.
    ready: AtomicBool,
    /// Requests waiting for async work, by id (several may share an id),
    /// each with its registration number and cancellation token. A request
    /// that completes on its first poll is never registered: no
    /// `$/cancelRequest` can be read while it runs.
    in_flight: Mutex<InFlight>,
    /// Numbers the registrations of `in_flight`.
    registrations: AtomicU64,
    /// Keeps the session registered for pushes until the last task is done.
    subscription: Mutex<Option<Subscription>>,
}

impl Shared {
    async fn send(&self, message: Vec<u8>) {
        tracing::trace!("-> {}", String::from_utf8_lossy(&message));
        if self.out.send(message).await.is_err() {
            tracing::debug!("the transport's writer is gone; a message was dropped");
        }
    }

    fn in_flight(&self) -> std::sync::MutexGuard<'_, InFlight> {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a request that waits, so `$/cancelRequest` can reach it.
    pub(super) fn register(&self, id: &RequestId, cancel: &Cancellation) -> Registration {
        let number = self.registrations.fetch_add(1, Ordering::Relaxed);
        self.in_flight()
            .entry(id.clone())
            .or_default()
            .push((number, cancel.clone()));
        Registration {
            id: id.clone(),
            number,
        }
    }

    pub(super) fn unregister(&self, registration: &Registration) {
        let mut map = self.in_flight();
        if let Some(entries) = map.get_mut(&registration.id) {
            entries.retain(|(number, _)| *number != registration.number);
            if entries.is_empty() {
                map.remove(&registration.id);
            }
        }
    }

    /// Stops every request in flight (the shutdown grace period is over).
    fn cancel_all(&self) {
        for entries in self.in_flight().values() {
            for (_, token) in entries {
                token.cancel(CancelReason::Shutdown);
            }
        }
    }

    fn cancel(&self, id: &RequestId) {
        match self.in_flight().get(id) {
            Some(entries) => entries
                .iter()
                .for_each(|(_, token)| token.cancel(CancelReason::Client)),
            None => tracing::debug!(%id, "$/cancelRequest for a request not in flight"),
        }
    }

    fn set_trace(&self, value: TraceValue) {
        let level = match value {
            TraceValue::Off => 0,
            TraceValue::Messages | TraceValue::On => 1,
            TraceValue::Verbose => 2,
        };
        self.trace.store(level, Ordering::Relaxed);
    }

    /// The `$/logTrace` line for a handled request, when trace is on and the
    /// handshake is complete.
    pub(super) fn trace_line(
        &self,
        method: &str,
        id: &RequestId,
        started: Option<Instant>,
        reply: &[u8],
    ) -> Option<Vec<u8>> {
        let level = self.trace.load(Ordering::Relaxed);
        if level == 0 || !self.ready.load(Ordering::Acquire) {
            return None;
        }
        let params = LogTraceParams {
            message: format!(
                "Received request '{method} - ({id})'. Processed in {}µs.",
                started.map_or(0, |t| t.elapsed().as_micros())
            ),
            verbose: (level == 2).then(|| {
                let text = String::from_utf8_lossy(reply);
                let mut shown: String = text.chars().take(1000).collect();
                if shown.len() < text.len() {
                    shown.push('…');
                }
                format!("Reply: {shown}")
            }),
        };
        Some(encode_notification(methods::LOG_TRACE, &params))
    }

    async fn send_with_trace(&self, reply: Vec<u8>, trace: Option<Vec<u8>>) {
        self.send(reply).await;
        if let Some(trace) = trace {
            self.send(trace).await;
        }
    }
}

/// Requests in flight by id.
type InFlight = HashMap<RequestId, Vec<(u64, Cancellation)>, IdHasher>;

/// A request in [`Shared::in_flight`].
pub(super) struct Registration {
    id: RequestId,
    number: u64,
}

/// The `data` of a request refused during shutdown.
const SHUTTING_DOWN: &str = "the server is shutting down and takes no new requests";

/// A session's reader side. See the module docs.
pub(crate) struct Session {
    shared: Arc<Shared>,
    phase: Phase,
    permits: Arc<Semaphore>,
    /// Cancelled when the session must shut down (shared, not cloned per
    /// session: cloning a token takes a lock).
    stop: Arc<CancellationToken>,
    /// The one input of an implicit session was not JSON (`-32700`).
    not_json: bool,
    /// Shutdown began: requests are answered `-32005` instead of run.
    draining: bool,
}

impl Session {
    /// A session that starts with a handshake, writing to `out`.
    pub(crate) fn new(
        server: &Server,
        out: mpsc::Sender<Vec<u8>>,
        stop: Arc<CancellationToken>,
    ) -> Self {
        Self::with_phase(server, out, stop, Phase::AwaitingInitialize)
    }

    /// An implicit, already-initialized session that never receives
    /// notifications (an HTTP single exchange).
    pub(crate) fn implicit(
        server: &Server,
        out: mpsc::Sender<Vec<u8>>,
        stop: Arc<CancellationToken>,
    ) -> Self {
        Self::with_phase(server, out, stop, Phase::Implicit)
    }

    fn with_phase(
        server: &Server,
        out: mpsc::Sender<Vec<u8>>,
        stop: Arc<CancellationToken>,
        phase: Phase,
    ) -> Self {
        let inner = server.inner().clone();
        let permits = Arc::new(Semaphore::new(inner.limits.max_in_flight));
        Self {
            shared: Arc::new(Shared {
                server: inner,
                out,
                trace: AtomicU8::new(0),
                ready: AtomicBool::new(false),
                in_flight: Mutex::new(HashMap::default()),
                registrations: AtomicU64::new(0),
                subscription: Mutex::new(None),
            }),
            phase,
            permits,
            stop,
            not_json: false,
            draining: false,
        }
    }

    /// Reads `input` to its end, serving every message, then waits for the
    /// requests still in flight and returns (at once if the output is gone).
    /// When the session's stop token fires — before or after the end of the
    /// input — it drains instead (see [`drain`](Self::drain)). The output
    /// channel closes when the last task holding it (a batch's collector, a
    /// push forwarder) is done.
    pub(crate) async fn run<S>(mut self, mut input: S)
    where
        S: Stream<Item = io::Result<Input>> + Unpin,
    {
        // One cancellation future for the whole loop, not one per message.
        let stop = self.stop.clone();
        let stopped = stop.cancelled();
        tokio::pin!(stopped);
        loop {
            let permit = match self.permits.clone().try_acquire_owned() {
                Ok(permit) => permit,
                Err(_) => tokio::select! {
                    biased;
                    () = &mut stopped => break,
                    permit = self.permits.clone().acquire_owned() => match permit {
                        Ok(permit) => permit,
                        Err(_) => return,
                    },
                },
            };
            if self.shared.out.is_closed() {
                tracing::debug!("output closed; the session stops reading");
                return;
            }
            let item = tokio::select! {
                biased;
                () = &mut stopped => break,
                item = crate::poll::next(&mut input) => item,
            };
            match item {
                Some(Ok(item)) => self.on_input(item, Some(permit)).await,
                end => {
                    match end {
                        Some(Err(e)) => tracing::warn!("reading the session's input failed: {e}"),
                        _ => tracing::debug!("session input ended"),
                    }
                    drop(permit);
                    // The requests in flight finish, unless shutdown begins first.
                    let max = self.permits_total();
                    let permits = self.permits.clone();
                    tokio::select! {
                        _ = permits.acquire_many(max) => return,
                        () = &mut stopped => {}
                    }
                    return self.drain::<futures_never::Never>(None).await;
                }
            }
        }
        self.drain(Some(&mut input)).await;
    }

    /// Serves one input, waits for the requests it started, and ends the
    /// session (an HTTP single exchange). Returns whether the input was not
    /// JSON at all (answered `-32700`).
    pub(crate) async fn run_one(mut self, input: Input) -> bool {
        self.draining = self.stop.is_cancelled();
        let Ok(permit) = self.permits.clone().acquire_owned().await else {
            return self.not_json;
        };
        self.on_input(input, Some(permit)).await;
        let max = self.permits_total();
        if self.permits.available_permits() == max as usize {
            return self.not_json; // everything finished inline
        }
        let stop = self.stop.clone();
        tokio::select! {
            _ = self.permits.acquire_many(max) => return self.not_json,
            () = stop.cancelled() => {}
        }
        self.drain::<futures_never::Never>(None).await;
        self.not_json
    }

    /// Shutdown: requests that arrive from now on are answered `-32005`;
    /// requests in flight get the grace period to finish, then are stopped
    /// and answered `-32005`; returns once none is left.
    async fn drain<S>(&mut self, mut input: Option<&mut S>)
    where
        S: Stream<Item = io::Result<Input>> + Unpin,
    {
        tracing::debug!("session shutting down");
        self.draining = true;
        let max = self.permits_total();
        let permits = self.permits.clone();
        let all_done = permits.acquire_many(max);
        let grace = tokio::time::sleep(self.shared.server.limits.shutdown_grace);
        tokio::pin!(all_done, grace);
        let mut grace_over = false;
        loop {
            tokio::select! {
                _ = &mut all_done => return,
                () = &mut grace, if !grace_over => {
                    grace_over = true;
                    self.shared.cancel_all();
                }
                item = next_of(&mut input), if input.is_some() => match item {
                    Some(Ok(item)) => self.on_input(item, None).await,
                    Some(Err(_)) | None => input = None,
                },
            }
        }
    }

    /// A permit for the next request of a batch, or `None` if shutdown
    /// begins first.
    async fn batch_permit(&self) -> Option<OwnedSemaphorePermit> {
        if let Ok(permit) = self.permits.clone().try_acquire_owned() {
            return Some(permit);
        }
        tokio::select! {
            permit = self.permits.clone().acquire_owned() => permit.ok(),
            () = self.stop.cancelled() => None,
        }
    }

    fn permits_total(&self) -> u32 {
        u32::try_from(self.shared.server.limits.max_in_flight).unwrap_or(u32::MAX)
    }

    async fn on_input(&mut self, input: Input, permit: Option<OwnedSemaphorePermit>) {
        match input {
            Input::TooLarge { declared } => {
                let limit = self.shared.server.limits.max_message_size;
                let error = RpcError::new(
                    ErrorCode::MESSAGE_TOO_LARGE,
                    format!(
                        "a message of at least {declared} bytes is over the limit of {limit} bytes; it was skipped"
                    ),
                );
                self.shared
                    .send(encode_error(&RequestId::Null, &error))
                    .await;
            }
            Input::Unreadable(why) => {
                let error = RpcError::parse_error(why);
                self.shared
                    .send(encode_error(&RequestId::Null, &error))
                    .await;
            }
            Input::Message(body) => {
                tracing::trace!("<- {}", String::from_utf8_lossy(&body));
                self.on_message(&body, permit).await
            }
        }
    }

    async fn on_message(&mut self, body: &[u8], permit: Option<OwnedSemaphorePermit>) {
        match jsonrpc::parse(body) {
            Parsed::Error(error) => {
                self.not_json = error.code == ErrorCode::PARSE_ERROR;
                self.shared
                    .send(encode_error(&RequestId::Null, &error))
                    .await;
            }
            Parsed::Single(message) => match self.step(message) {
                Outcome::Nothing => {}
                Outcome::Reply(h) => self.shared.send_with_trace(h.reply, h.trace).await,
                Outcome::Run(job) => {
                    // A tool that finishes without waiting (most do) is
                    // answered here and costs no task; one that waits, or
                    // may block its thread, moves to a task of its own.
                    let job = if job.may_block {
                        job
                    } else {
                        match job.try_now(&self.shared) {
                            Ok(handled) => {
                                self.shared
                                    .send_with_trace(handled.reply, handled.trace)
                                    .await;
                                return;
                            }
                            Err(job) => job,
                        }
                    };
                    let running = job.registered(&self.shared);
                    let shared = self.shared.clone();
                    tokio::spawn(async move {
                        let handled = running.await;
                        shared.send_with_trace(handled.reply, handled.trace).await;
                        drop(permit);
                    });
                }
            },
            Parsed::Batch(messages) => self.on_batch(messages, permit).await,
        }
    }

    /// A batch: its requests run concurrently (each with its own permit) and
    /// their replies go out together as one array.
    async fn on_batch(
        &mut self,
        messages: Vec<Incoming<'_>>,
        mut permit: Option<OwnedSemaphorePermit>,
    ) {
        let mut done = Vec::new();
        let mut jobs = JoinSet::new();
        for message in messages {
            match self.step(message) {
                Outcome::Nothing => {}
                Outcome::Reply(handled) => done.push(handled),
                Outcome::Run(job) => {
                    let permit = match permit.take() {
                        Some(p) => p,
                        None => match self.batch_permit().await {
                            Some(p) => p,
                            None => {
                                // Shutdown began while the batch waited: the
                                // rest of it is answered -32005.
                                self.draining = true;
                                done.push(Handled {
                                    reply: encode_error(
                                        &job.id,
                                        &RpcError::shutting_down(SHUTTING_DOWN),
                                    ),
                                    trace: None,
                                });
                                continue;
                            }
                        },
                    };
                    let running = job.registered(&self.shared);
                    jobs.spawn(async move {
                        let handled = running.await;
                        drop(permit);
                        handled
                    });
                }
            }
        }
        let shared = self.shared.clone();
        let finish = async move {
            while let Some(joined) = jobs.join_next().await {
                match joined {
                    Ok(handled) => done.push(handled),
                    Err(e) => tracing::error!("a batch request task failed: {e}"),
                }
            }
            if done.is_empty() {
                return; // only notifications: no reply at all
            }
            let replies: Vec<Vec<u8>> = done
                .iter_mut()
                .map(|h| std::mem::take(&mut h.reply))
                .collect();
            shared.send(encode_batch(&replies)).await;
            for trace in done.into_iter().filter_map(|h| h.trace) {
                shared.send(trace).await;
            }
        };
        tokio::spawn(finish);
    }

    /// Handles one message: the handshake and notifications here, requests
    /// through the method table.
    fn step(&mut self, message: Incoming<'_>) -> Outcome {
        match message {
            Incoming::Request { id, .. } if self.draining => Outcome::Reply(Handled {
                reply: encode_error(&id, &RpcError::shutting_down(SHUTTING_DOWN)),
                trace: None,
            }),
            Incoming::Request { id, method, params } => {
                // The clock is read only when trace lines need it.
                let started = (self.shared.trace.load(Ordering::Relaxed) > 0).then(Instant::now);
                let reply = match self.phase.admit(&method, &id) {
                    Admission::Reject(error) => encode_error(&id, &error),
                    Admission::Initialize => self.initialize(&id, params),
                    Admission::Serve => {
                        match dispatch::dispatch(&self.shared.server, &id, &method, params) {
                            Step::Reply(reply) => reply,
                            Step::Run(work) => {
                                return Outcome::Run(Job::new(&self.shared, id, work, started));
                            }
                        }
                    }
                };
                let trace = self.shared.trace_line(&method, &id, started, &reply);
                Outcome::Reply(Handled { reply, trace })
            }
            Incoming::Notification { method, params } => {
                self.notification(&method, params);
                Outcome::Nothing
            }
            Incoming::Response => {
                tracing::debug!("ignoring a response object from the client");
                Outcome::Nothing
            }
            Incoming::Invalid { id, reason } => Outcome::Reply(Handled {
                reply: encode_error(&id, &RpcError::invalid_request(reason)),
                trace: None,
            }),
        }
    }

    fn initialize(&mut self, id: &RequestId, params: Option<&RawValue>) -> Vec<u8> {
        let parsed = params
            .filter(|raw| raw.get().starts_with('{'))
            .ok_or_else(|| "initialize params must be an object with clientCapabilities".to_owned())
            .and_then(|raw| {
                serde_json::from_str::<InitializeParams>(raw.get())
                    .map_err(|e| format!("initialize params: {e}"))
            });
        match parsed {
            Ok(params) => {
                self.phase = self.phase.after_initialize();
                self.shared
                    .set_trace(params.trace.unwrap_or(TraceValue::Off));
                encode_result(id, &*self.shared.server.initialize_result)
            }
            Err(why) => encode_error(id, &RpcError::invalid_params(why)),
        }
    }

    fn notification(&mut self, method: &str, params: Option<&RawValue>) {
        if !self.phase.hears_notifications() {
            tracing::debug!(method, "notification before initialize dropped");
            return;
        }
        let params_text = params.map_or("{}", |raw| raw.get());
        match method {
            methods::INITIALIZED => {
                let before = self.phase;
                self.phase = self.phase.after_initialized();
                if before != self.phase {
                    let subscription = self
                        .shared
                        .server
                        .handle
                        .registry()
                        .subscribe(self.shared.out.clone());
                    *self
                        .shared
                        .subscription
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = Some(subscription);
                    self.shared.ready.store(true, Ordering::Release);
                }
            }
            methods::CANCEL_REQUEST => match serde_json::from_str::<CancelParams>(params_text) {
                Ok(p) => self.shared.cancel(&p.id),
                Err(e) => tracing::warn!("ignoring $/cancelRequest with bad params: {e}"),
            },
            methods::SET_TRACE => match serde_json::from_str::<SetTraceParams>(params_text) {
                Ok(p) => self.shared.set_trace(p.value),
                Err(e) => tracing::warn!("ignoring $/setTrace with bad params: {e}"),
            },
            other => tracing::info!(method = other, "ignoring an unknown notification"),
        }
    }
}

/// The next item of `input`, or never when there is no input.
async fn next_of<S>(input: &mut Option<&mut S>) -> Option<S::Item>
where
    S: Stream + Unpin,
{
    match input {
        Some(stream) => crate::poll::next(stream).await,
        None => std::future::pending().await,
    }
}

/// A stream type for sessions without one.
mod futures_never {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// A stream that never yields.
    pub(super) enum Never {}

    impl futures_core::Stream for Never {
        type Item = std::io::Result<super::Input>;

        fn poll_next(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            match *self {}
        }
    }
}
