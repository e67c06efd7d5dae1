//! One session's reader: reads messages from a transport's input stream, runs the
//! handshake, serves requests concurrently and writes every outgoing message
//! to the transport's [`Outbox`] — a channel (HTTP) or a queue of frames
//! (stdio) (docs/mcp-v1.md §1, §3, §5).
//!
//! Concurrency: a request that needs async work is polled once on the
//! session's reader — most tools finish then, at no cost — and otherwise
//! (or when its tool [may block](crate::Tool::may_block)) runs on in a task
//! of its own ([`Job`]); replies go out in completion order. At most
//! `max_in_flight` requests run at once. A request read while every slot is
//! taken is *parked* (read-ahead, docs/mcp-v1.md §1): the session keeps reading
//! while it holds fewer than [`MAX_PARKED`] parked requests and less than one
//! message limit of their bytes, so that notifications — `$/cancelRequest`
//! above all — take effect at once; parked requests start in order as slots
//! free up, and a cancelled one is answered without running. Past that bound
//! the session reads nothing more. The session's outbox closes only when
//! the reader and every request task are done, so a transport that waits
//! for it to close has flushed every reply.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, PoisonError};

use bytes::Bytes;
use futures_core::Stream;
use tokio_util::sync::CancellationToken;

use super::batch::{BatchReplies, collect_batch, send_batch};
use super::dispatch::{Dispatched, Effect, dispatch, run_in_task};
use super::job::Job;
use super::outbox::{Handled, Outbox};
use super::shared::{RoomWait, Shared};
use super::slots::{Slot, Slots};
#[cfg(feature = "http")]
use crate::dialect::Change;
use crate::dialect::{Dialect, Phase, ServerInner};
use crate::error::{ErrorCode, RpcError};
use crate::jsonrpc::{Incoming, Parsed, RequestId};
use crate::principal::Caller;
use crate::tool::CancelReason;

/// How many requests a full session holds parked (read but not started)
/// before it stops reading (docs/mcp-v1.md §1).
pub const MAX_PARKED: usize = 64;

/// One unit of input from a transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A whole message body (one JSON value: an object or a batch).
    Message(Bytes),
    /// A message over the size limit, skipped unread: answered by the
    /// dialect's `too_large` (`-32006` in MCP v1.0, `-32600` in the Model
    /// Context Protocol).
    TooLarge {
        /// The size the message announced (stdio), or the bytes of it seen
        /// before it crossed the limit (HTTP streaming).
        declared: usize,
    },
    /// Bytes the transport could not frame (a garbage header block):
    /// answered `-32700`.
    Unreadable(String),
}

/// One unit of input as a session reads it, with who sent it when the
/// transport knows (a Streamable HTTP POST's verified caller).
pub(crate) trait Arrival {
    /// The input, and its caller if it has its own (`None`: the session's
    /// caller so far).
    fn into_parts(self) -> (Input, Option<Caller>);
}

impl Arrival for Input {
    fn into_parts(self) -> (Input, Option<Caller>) {
        (self, None)
    }
}

impl Arrival for (Input, Caller) {
    fn into_parts(self) -> (Input, Option<Caller>) {
        (self.0, Some(self.1))
    }
}

/// Where a request's reply goes.
#[derive(Clone)]
enum ReplyTo {
    /// Straight to the session's output.
    Session,
    /// Into the reply array of the batch it came in; the array is written
    /// once every sender is gone.
    Batch(BatchReplies),
}

/// A request read while every slot was taken.
struct Parked {
    job: Job,
    to: ReplyTo,
    /// The bytes of input it holds (its whole body for a single request,
    /// the batch's body for its first parked member).
    bytes: usize,
}

/// How a session whose input ended comes to its end.
enum Ending {
    /// Every request was answered.
    Finished,
    /// Nobody reads the replies any more.
    OutputGone,
    /// Shutdown began first.
    Stopped,
}

/// What a session created by another process is past its handshake.
#[cfg(feature = "http")]
pub(crate) struct Resumed {
    pub(crate) client: crate::dialect::ClientInfo,
    pub(crate) ready: bool,
    pub(crate) log_level: crate::client::LogLevel,
    pub(crate) subscriptions: Vec<String>,
    /// The id of its first request to the client.
    pub(crate) first_request_id: u64,
}

/// A session's reader side. See the module docs.
pub(crate) struct Session {
    shared: Arc<Shared>,
    phase: Phase,
    slots: Arc<Slots>,
    /// Cancelled when the session must shut down (shared, not cloned per
    /// session: cloning a token takes a lock).
    stop: Arc<CancellationToken>,
    /// The one input of an implicit session was not JSON (`-32700`).
    not_json: bool,
    /// Shutdown began: requests are refused (`Dialect::shutting_down`)
    /// instead of run.
    draining: bool,
    /// Requests waiting for a slot, in the order they were read.
    parked: VecDeque<Parked>,
    /// The input bytes `parked` holds.
    parked_bytes: usize,
    /// Who sent the input being read: the transport's caller of the whole
    /// session (a streaming MCP v1.0 POST), or of each input (a Streamable
    /// HTTP POST); none on stdio.
    caller: Caller,
}

impl Session {
    /// A session in `dialect` that starts with a handshake, writing to `out`.
    pub(crate) fn new(
        server: &Arc<ServerInner>,
        dialect: Dialect,
        out: impl Into<Outbox>,
        stop: Arc<CancellationToken>,
    ) -> Self {
        Self::with_phase(server, dialect, out, stop, Phase::AwaitingInitialize, false)
    }

    /// A session like [`new`](Self::new), served over HTTP: the Model
    /// Context Protocol's 2024-11-05 is not offered, and its requests may
    /// be served [`beside`](super::dispatch::beside) its reader (which counts what it sends).
    #[cfg(feature = "http")]
    pub(crate) fn over_http(
        server: &Arc<ServerInner>,
        dialect: Dialect,
        out: impl Into<Outbox>,
        stop: Arc<CancellationToken>,
    ) -> Self {
        Self::with_phase(server, dialect, out, stop, Phase::AwaitingInitialize, true)
    }

    /// A Model Context Protocol session over HTTP that another process
    /// created: past its handshake as `resumed` says, with its client, log
    /// level and subscriptions, and its requests to the client numbered
    /// apart from the original's.
    #[cfg(feature = "http")]
    pub(crate) fn resumed_over_http(
        server: &Arc<ServerInner>,
        out: impl Into<Outbox>,
        stop: Arc<CancellationToken>,
        resumed: Resumed,
    ) -> Self {
        let phase = if resumed.ready {
            Phase::Ready
        } else {
            Phase::InitializedSent
        };
        let mut shared = Shared::new(server.clone(), out.into(), Dialect::ModelContext);
        shared.over_http = true;
        shared.peer = super::peer::Peer::numbered_from(resumed.first_request_id);
        shared.record(Change::Client(Box::new(resumed.client)));
        shared.record(Change::LogLevel(resumed.log_level));
        for uri in resumed.subscriptions {
            shared.record(Change::Subscription { uri, on: true });
        }
        let session = Self::of(shared, stop, phase);
        if resumed.ready {
            session.become_ready();
        }
        session
    }

    /// An implicit, already-initialized MCP v1.0 session that never
    /// receives notifications (an HTTP single exchange).
    pub(crate) fn implicit(
        server: &Arc<ServerInner>,
        out: impl Into<Outbox>,
        stop: Arc<CancellationToken>,
    ) -> Self {
        Self::with_phase(server, Dialect::McpV1, out, stop, Phase::Implicit, false)
    }

    /// The session one 2026-07-28 request whose work waits runs in (over
    /// HTTP, or served alone by `Server::serve_message`): no handshake, its
    /// messages written to `out`.
    pub(crate) fn revision_2026(
        server: &Arc<ServerInner>,
        out: impl Into<Outbox>,
        stop: Arc<CancellationToken>,
        over_http: bool,
    ) -> Self {
        Self::with_phase(
            server,
            Dialect::Revision2026,
            out,
            stop,
            Phase::Implicit,
            over_http,
        )
    }

    fn with_phase(
        server: &Arc<ServerInner>,
        dialect: Dialect,
        out: impl Into<Outbox>,
        stop: Arc<CancellationToken>,
        phase: Phase,
        over_http: bool,
    ) -> Self {
        let mut shared = Shared::new(server.clone(), out.into(), dialect);
        shared.over_http = over_http;
        Self::of(shared, stop, phase)
    }

    /// The reader of `shared`, in `phase`.
    fn of(shared: Shared, stop: Arc<CancellationToken>, phase: Phase) -> Self {
        let shared = Arc::new(shared);
        Self {
            slots: shared.slots.clone(),
            shared,
            phase,
            stop,
            not_json: false,
            draining: false,
            parked: VecDeque::new(),
            parked_bytes: 0,
            caller: Caller::default(),
        }
    }

    /// The session as sent by `caller` (until an input says otherwise).
    pub(crate) fn with_caller(mut self, caller: Caller) -> Self {
        self.caller = caller;
        self
    }

    /// The session's shared state, for a transport that reaches into it
    /// (Streamable HTTP routes the client's responses there directly).
    #[cfg(feature = "http")]
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Reads `input` to its end, serving every message, then waits for the
    /// requests still parked or in flight and returns; where the dialect
    /// bounds that wait ([`Dialect::bounds_work_after_input`]), at the
    /// shutdown grace period's end those in flight are stopped and those
    /// parked refused. It returns at once
    /// when the output is gone (the client stopped reading): requests in
    /// flight are then stopped. When the session's stop token fires —
    /// before or after the end of the input — it drains instead (see
    /// [`drain`](Self::drain)). The outbox closes when the last
    /// task holding it (a batch's collector, a push forwarder) is done.
    pub(crate) async fn run<S, I>(mut self, mut input: S)
    where
        S: Stream<Item = io::Result<I>> + Unpin,
        I: Arrival,
    {
        // One future each for the whole loop, not one per message.
        // Both rarely fire: polled only when they are woken, not at every
        // message read.
        let stop = self.stop.clone();
        let stopped = crate::poll::OnWake::new(stop.cancelled());
        let shared = self.shared.clone();
        let gone = crate::poll::OnWake::new(shared.out.closed());
        tokio::pin!(stopped, gone);
        loop {
            if self.shared.out.is_closed() {
                return self.output_gone();
            }
            self.start_parked().await;
            // Read once: a batch sent between two reads would leave the
            // reader neither reading nor waiting for the batch.
            let batch_unsent = self.shared.batch_unsent();
            let may_read = !batch_unsent && self.may_read_ahead();
            if batch_unsent {
                // A batch's replies wait for room in the output, as a single
                // reply's request would in its slot: nothing more is read or
                // started until they are out.
                tokio::select! {
                    biased;
                    () = &mut stopped => break,
                    () = shared.batch_sent() => continue,
                    () = &mut gone => return self.output_gone(),
                }
            }
            // A stop first (a flag check until its waker fires), then
            // input: while input flows, the branches after it are not
            // polled (the closed output is caught above); they wake an
            // idle reader.
            let item = tokio::select! {
                biased;
                () = &mut stopped => break,
                item = crate::poll::next(&mut input), if may_read => item,
                slot = self.slots.take(), if !self.parked.is_empty() => {
                    self.start_next(slot).await;
                    continue;
                }
                () = &mut gone => return self.output_gone(),
            };
            match item {
                Some(Ok(item)) => self.on_input(item).await,
                end => {
                    match end {
                        Some(Err(e)) => tracing::warn!("reading the session's input failed: {e}"),
                        _ => tracing::debug!("session input ended"),
                    }
                    // Nothing the client sends can be read any more, nor
                    // can it cancel a listen stream: those end now.
                    self.shared.peer.close();
                    self.shared.streams_end.cancel();
                    // Parked requests and those in flight finish, unless
                    // shutdown begins (or the output goes) first. Where the
                    // dialect bounds them, at the grace period's end those in
                    // flight are stopped and those parked refused; a request
                    // being started (its reply waiting for room) is not
                    // dropped.
                    let grace_over = CancellationToken::new();
                    let timer = {
                        let bounded = self.shared.dialect.bounds_work_after_input();
                        let grace = self.shared.server.limits.shutdown_grace;
                        let (shared, grace_over) = (self.shared.clone(), grace_over.clone());
                        async move {
                            if !bounded {
                                return std::future::pending().await;
                            }
                            tokio::time::sleep(grace).await;
                            tracing::debug!(
                                "requests outlived the grace period after the input ended"
                            );
                            grace_over.cancel();
                            shared.cancel_all(CancelReason::Shutdown);
                        }
                    };
                    let ending = tokio::select! {
                        biased;
                        () = &mut gone => Ending::OutputGone,
                        () = &mut stopped => Ending::Stopped,
                        () = async {
                            let finishing = async {
                                self.finish_parked(Some(&grace_over)).await;
                                self.slots.all_free().await;
                            };
                            tokio::pin!(finishing, timer);
                            let mut timed = false;
                            loop {
                                tokio::select! {
                                    biased;
                                    () = &mut finishing => break,
                                    () = &mut timer, if !timed => timed = true,
                                }
                            }
                        } => Ending::Finished,
                    };
                    match ending {
                        Ending::Finished => {}
                        Ending::OutputGone => self.output_gone(),
                        Ending::Stopped => self.drain::<futures_never::Never, Input>(None).await,
                    }
                    return;
                }
            }
        }
        self.drain(Some(&mut input)).await;
    }

    /// Serves one parsed body, waits for the requests it started, and ends
    /// the session (an HTTP single exchange, parsed once by its transport to
    /// find its dialect). Returns whether the body was not JSON at all
    /// (answered `-32700`).
    pub(crate) async fn run_parsed(mut self, body: &[u8], parsed: Parsed<'_>) -> bool {
        self.draining = self.stop.is_cancelled();
        tracing::trace!("<- {}", String::from_utf8_lossy(body));
        self.on_parsed(parsed, body.len()).await;
        self.finish_one().await
    }

    /// Dispatches the one message of an implicit session on the caller's
    /// task, where its body is (it is parsed once): what
    /// [`run_dispatched`](Self::run_dispatched) then runs.
    #[cfg(feature = "http")]
    pub(crate) fn dispatch_one(&self, message: Incoming<'_>) -> Dispatched {
        let draining = self.stop.is_cancelled();
        dispatch(&self.shared, self.phase, draining, message, &self.caller)
    }

    /// Runs what the one message of an implicit session dispatched to — a
    /// job [`alone`](super::dispatch::alone) could not finish at once, or a request whose stream
    /// may carry notifications before its reply — then ends the session.
    pub(crate) async fn run_dispatched(mut self, dispatched: Dispatched, bytes: usize) {
        self.submit(dispatched, bytes).await;
        self.finish_one().await;
    }

    /// Waits for what the one input started, then ends the session.
    async fn finish_one(self) -> bool {
        if self.parked.is_empty() && self.slots.all_are_free() {
            return self.not_json; // everything finished inline
        }
        // Boxed: the common case above keeps the caller's future small.
        Box::pin(self.wait_for_one()).await
    }

    /// Waits for the requests the one input started, then ends the session.
    async fn wait_for_one(mut self) -> bool {
        let stop = self.stop.clone();
        let stopped = tokio::select! {
            () = async {
                self.finish_parked(None).await;
                self.slots.all_free().await;
            } => false,
            () = stop.cancelled() => true,
        };
        if stopped {
            self.drain::<futures_never::Never, Input>(None).await;
        }
        self.not_json
    }

    /// Whether the reader may read more input as far as its parked
    /// requests go: always while nothing is parked, else while they stay
    /// under their bound. (Nothing is read while a batch's replies wait
    /// for room in the outbox either: the loop asks that first.)
    fn may_read_ahead(&self) -> bool {
        self.parked.is_empty()
            || (self.parked.len() < MAX_PARKED
                && self.parked_bytes < self.shared.server.limits.max_message_size)
    }

    /// The output is gone: nobody reads replies any more. Requests in
    /// flight are stopped and parked ones dropped.
    fn output_gone(&mut self) {
        tracing::debug!("output closed; the session stops reading");
        self.parked.clear();
        self.parked_bytes = 0;
        self.shared.set_parked(0);
        self.shared.peer.close();
        self.shared.cancel_all(CancelReason::Gone);
    }

    /// Shutdown: requests that arrive from now on, and those still parked,
    /// are refused (`Dialect::shutting_down`: `-32005` in MCP v1.0,
    /// `-32603` in the Model Context Protocol); requests in flight get the
    /// grace period to finish, then are stopped and answered the same way;
    /// returns once none is left.
    async fn drain<S, I>(&mut self, mut input: Option<&mut S>)
    where
        S: Stream<Item = io::Result<I>> + Unpin,
        I: Arrival,
    {
        tracing::debug!("session shutting down");
        self.draining = true;
        self.shared.streams_end.cancel();
        self.refuse_parked().await;
        let slots = self.slots.clone();
        let all_done = slots.all_free();
        let grace = tokio::time::sleep(self.shared.server.limits.shutdown_grace);
        tokio::pin!(all_done, grace);
        let mut grace_over = false;
        loop {
            tokio::select! {
                _ = &mut all_done => return,
                () = &mut grace, if !grace_over => {
                    grace_over = true;
                    self.shared.cancel_all(CancelReason::Shutdown);
                }
                item = next_of(&mut input), if input.is_some() => match item {
                    Some(Ok(item)) => self.on_input(item).await,
                    Some(Err(_)) | None => input = None,
                },
            }
        }
    }

    /// Answers every parked request as one that arrives after shutdown
    /// began; none of them runs.
    async fn refuse_parked(&mut self) {
        while let Some(parked) = self.parked.pop_front() {
            self.shared.set_parked(self.parked.len());
            let id = parked.job.id;
            let reply = Some(self.shared.dialect.shutting_down(&id));
            deliver(&self.shared, parked.to, Handled::reply(id, reply)).await;
        }
        self.parked_bytes = 0;
    }

    /// Starts parked requests, in order, while slots are free; none once
    /// the session is stopping (the drain refuses them).
    async fn start_parked(&mut self) {
        while !self.parked.is_empty() && !self.stop.is_cancelled() {
            let Some(slot) = self.slots.try_take().map(Slot::owned) else {
                return;
            };
            self.start_next(slot).await;
        }
    }

    /// Starts every parked request, waiting for slots as they free up;
    /// once `refuse` (if any) is cancelled, refuses those still parked
    /// instead.
    async fn finish_parked(&mut self, refuse: Option<&CancellationToken>) {
        while !self.parked.is_empty() {
            let refused = async {
                match refuse {
                    Some(refuse) => refuse.cancelled().await,
                    None => std::future::pending().await,
                }
            };
            let slot = tokio::select! {
                biased;
                () = refused => return self.refuse_parked().await,
                slot = self.slots.take() => slot,
            };
            self.start_next(slot).await;
        }
    }

    /// Starts the first parked request in `slot`.
    async fn start_next(&mut self, slot: Slot<'static>) {
        if let Some(parked) = self.parked.pop_front() {
            self.shared.set_parked(self.parked.len());
            self.parked_bytes -= parked.bytes;
            // A batch member whose batch's replies passed their bound while
            // it was parked does not run.
            if let ReplyTo::Batch(replies) = &parked.to
                && let Some(refused) = replies.refused(&parked.job.id)
            {
                replies.hand_in_unrun(refused);
                return;
            }
            if let Some(waiting) = start(&self.shared, parked.job, parked.to, slot) {
                waiting.await;
            }
        }
    }

    /// Starts `job` now if a slot is free and nothing is parked before it;
    /// parks it otherwise. What it returns, if anything, hands on a reply
    /// that did not fit the outbox at once: await it before reading on.
    #[must_use]
    fn start_or_park(&mut self, job: Job, to: ReplyTo, bytes: usize) -> Option<RoomWait<'_>> {
        if let Some(slot) = self.slots.take_in_order(self.parked.len()) {
            start(&self.shared, job, to, slot)
        } else {
            self.parked_bytes += bytes;
            self.parked.push_back(Parked { job, to, bytes });
            self.shared.set_parked(self.parked.len());
            None
        }
    }

    async fn on_input(&mut self, arrival: impl Arrival) {
        let (input, caller) = arrival.into_parts();
        if let Some(caller) = caller {
            self.caller = caller;
        }
        let dialect = self.shared.dialect;
        match input {
            Input::TooLarge { declared } => {
                let limit = self.shared.server.limits.max_message_size;
                let error = dialect.too_large(declared, limit);
                self.shared
                    .send_unrelated(dialect.error(None, &error).bytes)
                    .await;
            }
            Input::Unreadable(why) => {
                let error = RpcError::parse_error(why);
                self.shared
                    .send_unrelated(dialect.error(None, &error).bytes)
                    .await;
            }
            Input::Message(body) => {
                tracing::trace!("<- {}", String::from_utf8_lossy(&body));
                let bytes = body.len();
                // One message, the usual input, is dispatched here and its
                // job started or parked by this match, not `submit`'s: a message or
                // a job (about 200 bytes each) passed to a nested `async fn`
                // is copied into its future's state, twice or more.
                match crate::dialect::parse(&body) {
                    Parsed::Single(message) => match self.dispatch(message) {
                        Dispatched::Run(job) => {
                            if let Some(waiting) = self.start_or_park(job, ReplyTo::Session, bytes)
                            {
                                waiting.await;
                            }
                        }
                        dispatched => self.submit(dispatched, bytes).await,
                    },
                    parsed => self.on_parsed(parsed, bytes).await,
                }
            }
        }
    }

    /// What `message` asks of this session, in its phase.
    fn dispatch(&self, message: Incoming<'_>) -> Dispatched {
        dispatch(
            &self.shared,
            self.phase,
            self.draining,
            message,
            &self.caller,
        )
    }

    /// Serves one parsed body of `bytes` bytes.
    async fn on_parsed(&mut self, parsed: Parsed<'_>, bytes: usize) {
        let dialect = self.shared.dialect;
        match parsed {
            Parsed::Error(error) => {
                self.not_json = error.code == ErrorCode::PARSE_ERROR;
                self.shared
                    .send_unrelated(dialect.error(None, &error).bytes)
                    .await;
            }
            Parsed::Single(message) => {
                let dispatched = self.dispatch(message);
                self.submit(dispatched, bytes).await;
            }
            Parsed::Batch(_) if !dialect.allows_batches(&*self.shared) => {
                let error = RpcError::invalid_request(
                    "a batch (a JSON array of messages) is not allowed in this protocol version; \
                     send one message at a time",
                );
                self.shared
                    .send_unrelated(dialect.error(None, &error).bytes)
                    .await;
            }
            // Boxed: batches are rare, and their future is large.
            Parsed::Batch(messages) => Box::pin(self.on_batch(messages, bytes)).await,
        }
    }

    /// A batch: its requests meet the executor policy one by one, each in
    /// its own slot (parked like any other when none is free) — those that
    /// finish on their first poll are done then, the rest run on
    /// concurrently in tasks — and their replies go out together as one
    /// array, once the last is done.
    async fn on_batch(&mut self, messages: Vec<Incoming<'_>>, bytes: usize) {
        let (replies, collected) = BatchReplies::new(&self.shared, messages.len());
        let mut done = Vec::new();
        let mut jobs = Vec::new();
        for message in messages {
            if let Incoming::Request { id, .. } = &message
                && let Some(refused) = replies.refused(id)
            {
                done.push(refused);
                continue;
            }
            match self.dispatch(message) {
                Dispatched::Nothing => {}
                Dispatched::Reply(handled) | Dispatched::Forbidden(handled) => {
                    done.push(replies.count(handled));
                }
                Dispatched::Run(job) => jobs.push(job),
                // A cancel also stops the requests before it in the batch
                // that it names: they never run, as parked ones would not.
                Dispatched::Effect(Effect::Cancel(id)) => {
                    let (named, others): (Vec<Job>, Vec<Job>) =
                        jobs.into_iter().partition(|job| job.id == id);
                    jobs = others;
                    done.extend(named.into_iter().map(Job::cancel_unstarted));
                    if let Some(handled) = self.apply(Effect::Cancel(id)).await {
                        done.push(replies.count(handled));
                    }
                }
                Dispatched::Effect(effect) => {
                    if let Some(handled) = self.apply(effect).await {
                        done.push(replies.count(handled));
                    }
                }
            }
        }
        if jobs.is_empty() {
            if !done.is_empty() {
                send_batch(&self.shared, done).await;
            }
            return;
        }
        tokio::spawn(collect_batch(self.shared.clone(), done, collected));
        let mut bytes = bytes;
        for job in jobs {
            // A member not started before the batch's replies passed their
            // bound does not run (a parked one: `start_next`).
            if let Some(refused) = replies.refused(&job.id) {
                replies.hand_in_unrun(refused);
                continue;
            }
            let to = ReplyTo::Batch(replies.clone());
            if let Some(waiting) = self.start_or_park(job, to, std::mem::take(&mut bytes)) {
                waiting.await;
            }
        }
    }

    /// Submits what a single message dispatched to: a reply is handed on,
    /// a job started (or parked), an effect applied.
    async fn submit(&mut self, dispatched: Dispatched, bytes: usize) {
        let handled = match dispatched {
            Dispatched::Nothing => return,
            Dispatched::Reply(handled) | Dispatched::Forbidden(handled) => handled,
            Dispatched::Run(job) => {
                if let Some(waiting) = self.start_or_park(job, ReplyTo::Session, bytes) {
                    waiting.await;
                }
                return;
            }
            Dispatched::Effect(effect) => match self.apply(effect).await {
                Some(handled) => handled,
                None => return,
            },
        };
        if let Some(waiting) = self.shared.hand_on(handled) {
            waiting.await;
        }
    }

    /// Applies an effect; what it returns is a reply for the caller to send
    /// (or to put in its batch's array).
    async fn apply(&mut self, effect: Effect) -> Option<Handled> {
        match effect {
            Effect::Initialized(reply) => {
                self.phase = self.phase.after_initialize();
                return Some(reply);
            }
            Effect::Ready => {
                let before = self.phase;
                self.phase = self.phase.after_initialized();
                if before != self.phase {
                    self.become_ready();
                }
            }
            Effect::Cancel(id) => {
                for (to, handled) in self.cancel(&id) {
                    deliver(&self.shared, to, handled).await;
                }
            }
            Effect::SetTrace(value) => self.shared.set_trace(value),
        }
        None
    }

    /// Registers the session for pushes: it hears the changes announced
    /// from now on.
    fn become_ready(&self) {
        let registration = super::push::forward_pushes(
            self.shared.server.handle.registry(),
            self.shared.out.clone(),
            self.shared.dialect,
            self.shared.subscriptions.clone(),
        );
        *self
            .shared
            .push_registration
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(registration);
        self.shared.set_ready();
    }

    /// Cancels the requests with `id`: those in flight are told to stop
    /// (their jobs answer); parked ones are answered here, without running.
    fn cancel(&mut self, id: &RequestId) -> Vec<(ReplyTo, Handled)> {
        let mut answered = Vec::new();
        let mut kept = VecDeque::with_capacity(self.parked.len());
        for parked in self.parked.drain(..) {
            if parked.job.id == *id {
                self.parked_bytes -= parked.bytes;
                answered.push((parked.to, parked.job.cancel_unstarted()));
            } else {
                kept.push_back(parked);
            }
        }
        self.parked = kept;
        self.shared.set_parked(self.parked.len());
        if !self.shared.cancel(id) && answered.is_empty() {
            tracing::debug!(%id, "$/cancelRequest for a request not in flight");
        }
        answered
    }
}

/// Runs `job` in `slot` by the executor policy ([`Job::poll_once`]), for a
/// single request and a batch's member alike. The slot is freed once the
/// reply is handed on: at once, or, for a reply that does not fit the
/// outbox, by what this returns, which holds the slot until it has, and is
/// awaited before the reader reads on. A batch member's reply goes to its
/// batch's collector, which sends the replies as one array.
#[must_use]
fn start<'a>(
    shared: &'a Arc<Shared>,
    job: Job,
    to: ReplyTo,
    slot: Slot<'a>,
) -> Option<RoomWait<'a>> {
    match (job.poll_once(shared), to) {
        (Ok(handled), ReplyTo::Session) => {
            let waiting = shared.hand_on(handled)?;
            Some(Box::pin(async move {
                waiting.await;
                drop(slot);
            }))
        }
        (Ok(handled), ReplyTo::Batch(replies)) => {
            replies.hand_in(handled);
            None
        }
        (Err(job), ReplyTo::Session) => {
            run_in_task(shared, job, Some(slot.owned()));
            None
        }
        (Err(job), ReplyTo::Batch(replies)) => {
            let running = job.registered(shared);
            let slot = slot.owned();
            tokio::spawn(async move {
                let handled = running.await;
                drop(slot);
                replies.send(handled).await;
            });
            None
        }
    }
}

/// Hands a reply to where it goes.
async fn deliver(shared: &Shared, to: ReplyTo, handled: Handled) {
    match to {
        ReplyTo::Session => shared.send_handled(handled).await,
        ReplyTo::Batch(replies) => replies.hand_in_unrun(handled),
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
    pub(crate) enum Never {}

    impl futures_core::Stream for Never {
        type Item = std::io::Result<super::Input>;

        fn poll_next(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            match *self {}
        }
    }
}
