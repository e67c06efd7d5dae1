//! What every task of one session shares: the output channel, the dialect
//! and its per-session state (MCP v1.0's trace level; the Model Context
//! Protocol's negotiated version, client capabilities, log level and
//! subscriptions), the handshake's "ready" flag, the registry of requests in
//! flight that a cancel reaches, and the peer for requests the server sends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Instant;

use std::future::Future;
use std::pin::Pin;
use tokio::sync::mpsc;

use super::outbox::{About, Handled, Outbox, Outgoing, reply_message};
use super::peer::Peer;
use super::slots::Slots;
use crate::client::LogLevel;
use crate::dialect::ServerInner;
use crate::dialect::TraceLevel;
use crate::dialect::{Change, ClientInfo, Dialect, SessionState, Subscriptions};
use crate::handle::PushRegistration;
use crate::id_hash::IdHasher;
use crate::jsonrpc::RequestId;
use crate::tool::{CancelReason, Cancellation};

/// Messages that wait for room in the outbox, to be awaited in order.
pub(crate) type RoomWait<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// What the whole session's tasks share.
pub(crate) struct Shared {
    /// The Streamable HTTP session's id, for its requests' spans (feature
    /// `otel`).
    #[cfg(feature = "otel")]
    pub(crate) session_id: OnceLock<Arc<str>>,
    pub(crate) server: Arc<ServerInner>,
    pub(crate) out: Outbox,
    pub(crate) dialect: Dialect,
    /// The session runs over HTTP (where 2024-11-05 is not served).
    pub(crate) over_http: bool,
    /// MCP v1.0: 0 off, 1 messages, 2 verbose.
    trace: AtomicU8,
    /// Past the client's `initialized`: server notifications may be sent.
    ready: AtomicBool,
    /// Woken when `ready` is set: a request to the client waits for it.
    readied: tokio::sync::Notify,
    /// Served `server/discover` before any `initialize`: until it
    /// initializes, its requests are read as 2026-07-28 ones.
    discovered: AtomicBool,
    /// Requests waiting for async work, by id (several may share an id),
    /// each with its registration number and cancellation token. A request
    /// that completes on its first poll is never registered: no cancel can
    /// be read while it runs.
    cancellable: Mutex<Cancellable>,
    /// Numbers the registrations in `cancellable`.
    registrations: AtomicU64,
    /// Keeps the session registered for pushes until the last task is done.
    pub(crate) push_registration: Mutex<Option<PushRegistration>>,
    /// The Model Context Protocol client, once initialized.
    pub(crate) client: OnceLock<ClientInfo>,
    /// The least severe [`LogLevel`] sent as `notifications/message`.
    log_level: AtomicU8,
    /// URIs whose `notifications/resources/updated` the client wants.
    pub(crate) subscriptions: Arc<Subscriptions>,
    /// Requests the server sent, waiting for the client's answer.
    pub(crate) peer: Peer,
    /// The session's request slots (`max_in_flight`).
    pub(crate) slots: Arc<Slots>,
    /// How many requests the reader holds parked (read-ahead).
    parked: AtomicUsize,
    /// How many batches' reply arrays are gathered and waiting for room in
    /// the outbox ([`UnsentBatch`]).
    unsent_batches: AtomicUsize,
    /// Told when a batch's reply array has gone to the outbox.
    batch_sent: tokio::sync::Notify,
    /// How many messages were handed to the outbox so far (counted over
    /// HTTP only).
    sent: AtomicU64,
    /// Cancelled when the session's input ends or it begins to shut down:
    /// its `subscriptions/listen` streams then end with their result.
    pub(crate) streams_end: tokio_util::sync::CancellationToken,
    /// Told after each change of what the session records of its client,
    /// and of each request sent to the client (the transport keeps them
    /// where other processes can read them).
    observer: OnceLock<Observer>,
}

/// A batch's reply array waiting for room in the outbox
/// ([`Shared::unsent_batch`]).
pub(crate) struct UnsentBatch<'a>(&'a Shared);

impl Drop for UnsentBatch<'_> {
    fn drop(&mut self) {
        self.0.unsent_batches.fetch_sub(1, Ordering::AcqRel);
        self.0.batch_sent.notify_one();
    }
}

/// What is told of a session's recorded state after each change.
pub(crate) type Observer = Box<dyn Fn(&Shared, Observed<'_>) + Send + Sync>;

/// What a session tells its observer: a part of its recorded state that
/// changed, or a request it sent its client.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) enum Observed<'a> {
    /// Its client or readiness.
    State,
    /// Its log level, set to `level`.
    LogLevel(LogLevel),
    /// One subscription, added (`on`) or removed.
    Subscription { uri: &'a str, on: bool },
    /// It sent the client request numbered `request`, whose response may
    /// reach another copy of the session.
    Asked { request: u64 },
}

/// The requests registered for cancellation, by id.
type Cancellable = HashMap<RequestId, Vec<(u64, Cancellation)>, IdHasher>;

/// A request in [`Shared::cancellable`].
pub(crate) struct Registration {
    id: RequestId,
    number: u64,
}

impl Shared {
    pub(crate) fn new(server: Arc<ServerInner>, out: Outbox, dialect: Dialect) -> Self {
        Self {
            out,
            dialect,
            over_http: false,
            trace: AtomicU8::new(0),
            ready: AtomicBool::new(false),
            readied: tokio::sync::Notify::new(),
            discovered: AtomicBool::new(false),
            cancellable: Mutex::new(HashMap::default()),
            registrations: AtomicU64::new(0),
            push_registration: Mutex::new(None),
            client: OnceLock::new(),
            log_level: AtomicU8::new(LogLevel::Info as u8),
            subscriptions: Arc::default(),
            peer: Peer::default(),
            slots: Slots::new(server.limits.max_in_flight),
            parked: AtomicUsize::new(0),
            unsent_batches: AtomicUsize::new(0),
            batch_sent: tokio::sync::Notify::new(),
            sent: AtomicU64::new(0),
            streams_end: tokio_util::sync::CancellationToken::new(),
            observer: OnceLock::new(),
            #[cfg(feature = "otel")]
            session_id: OnceLock::new(),
            server,
        }
    }

    /// Tells `observer` of every later change of the session's recorded
    /// state (its client, log level, subscriptions, readiness).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn observe(&self, observer: Observer) {
        let _ = self.observer.set(observer);
    }

    pub(super) fn observed(&self, what: Observed<'_>) {
        if let Some(observer) = self.observer.get() {
            observer(self, what);
        }
    }

    /// The least severe level sent as `notifications/message`.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn log_level(&self) -> LogLevel {
        const LEVELS: [LogLevel; 8] = [
            LogLevel::Debug,
            LogLevel::Info,
            LogLevel::Notice,
            LogLevel::Warning,
            LogLevel::Error,
            LogLevel::Critical,
            LogLevel::Alert,
            LogLevel::Emergency,
        ];
        let level = usize::from(self.log_level.load(Ordering::Relaxed));
        LEVELS.get(level).copied().unwrap_or(LogLevel::Info)
    }

    /// Records how many requests the reader holds parked.
    pub(crate) fn set_parked(&self, parked: usize) {
        self.parked.store(parked, Ordering::Release);
    }

    /// Counts a batch's gathered reply array as waiting for room in the
    /// outbox until the guard is dropped. While one waits, the reader
    /// reads no more input, as it does while a single request's reply
    /// waits: a client that reads nothing holds no more of the server's
    /// memory by sending its requests in batches.
    pub(crate) fn unsent_batch(&self) -> UnsentBatch<'_> {
        self.unsent_batches.fetch_add(1, Ordering::AcqRel);
        UnsentBatch(self)
    }

    /// Whether a batch's reply array waits for room in the outbox.
    pub(crate) fn batch_unsent(&self) -> bool {
        self.unsent_batches.load(Ordering::Acquire) > 0
    }

    /// Ready once a batch's reply array has gone to the outbox since the
    /// last time it was (at once if one went while nobody waited).
    pub(crate) async fn batch_sent(&self) {
        self.batch_sent.notified().await;
    }

    /// How many requests the reader holds parked.
    #[cfg(feature = "http")]
    pub(crate) fn parked(&self) -> usize {
        self.parked.load(Ordering::Acquire)
    }

    /// How many messages were handed to the outbox so far: unchanged
    /// across some work means it sent nothing. Counted in sessions served
    /// over HTTP only.
    #[cfg(feature = "http")]
    pub(crate) fn sent(&self) -> u64 {
        debug_assert!(self.over_http, "sent messages are counted over HTTP only");
        self.sent.load(Ordering::Acquire)
    }

    /// A session state whose outbox is closed from the start: for requests
    /// served without a session ([`alone`](super::dispatch::alone)), which send
    /// nothing. Anything sent through it is dropped (and logged).
    pub(crate) fn sessionless(server: Arc<ServerInner>, dialect: Dialect) -> Self {
        let (out, _) = super::outbox::channel(1, usize::MAX);
        Self::new(server, out.into(), dialect)
    }

    /// A session state for work that runs detached from any request (a
    /// task): nothing reads its outbox, which stays open while the
    /// receiver returned with it lives, so the work is never stopped as if
    /// its client had gone.
    pub(crate) fn unread(
        server: Arc<ServerInner>,
        dialect: Dialect,
    ) -> (Self, super::bounded::BoundedReceiver<Outgoing>) {
        let (out, unread) = super::outbox::channel(1, usize::MAX);
        (Self::new(server, out.into(), dialect), unread)
    }

    /// Sends one message; dropped (and logged) when the transport is gone.
    /// While the outbox has room (the common case) the message is handed
    /// over at once, and the future returned is a few bytes: it waits
    /// (boxed) only when the outbox is full.
    pub(crate) fn send(&self, message: Outgoing) -> impl Future<Output = ()> + Send + '_ {
        let waiting = self
            .offer(message)
            .map(|message| self.send_waiting(message));
        async move {
            if let Some(waiting) = waiting {
                waiting.await;
            }
        }
    }

    /// Hands `message` over if the outbox has room (or drops it, logged,
    /// when the transport is gone); gives it back when the outbox is full.
    fn offer(&self, message: Outgoing) -> Option<Outgoing> {
        // Only [`beside`](super::dispatch::beside), on HTTP, asks; an
        // atomic add per message is not free.
        if self.over_http {
            self.sent.fetch_add(1, Ordering::AcqRel);
        }
        if tracing::enabled!(tracing::Level::TRACE) && !message.bytes.is_empty() {
            tracing::trace!("-> {}", String::from_utf8_lossy(&message.bytes));
        }
        match self.out.try_send(message) {
            Ok(()) => None,
            Err(mpsc::error::TrySendError::Full(message)) => Some(message),
            Err(mpsc::error::TrySendError::Closed(_)) => {
                tracing::debug!("the transport's writer is gone; a message was dropped");
                None
            }
        }
    }

    /// Waits for room in the outbox for `message` (boxed: rare).
    fn send_waiting(&self, message: Outgoing) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            if self.out.send(message).await.is_err() {
                tracing::debug!("the transport's writer is gone; a message was dropped");
            }
        })
    }

    /// Sends a message about nothing in particular.
    pub(crate) fn send_unrelated(&self, bytes: Vec<u8>) -> impl Future<Output = ()> + Send + '_ {
        self.send(Outgoing {
            bytes,
            about: About::Session,
        })
    }

    /// Sends what a request caused, its reply (or says it has none), then
    /// its trace line — in that order, at once while the outbox has room.
    pub(crate) fn send_handled(&self, handled: Handled) -> impl Future<Output = ()> + Send + '_ {
        let waiting = self.hand_on(handled);
        async move {
            if let Some(waiting) = waiting {
                waiting.await;
            }
        }
    }

    /// [`send_handled`](Self::send_handled) without a future for the
    /// usual case: what it hands over at once is sent when this returns,
    /// and the rest (in order) is left to the future returned, which must
    /// be awaited.
    pub(crate) fn hand_on(&self, handled: Handled) -> Option<RoomWait<'_>> {
        let id = handled.id;
        if handled.caused.is_empty() && handled.trace.is_none() {
            // The usual case: the reply alone.
            let reply = reply_message(handled.reply, id, handled.refused);
            self.offer(reply).map(|reply| self.send_waiting(reply))
        } else {
            let caused: Vec<Outgoing> = handled
                .caused
                .into_iter()
                .map(|bytes| Outgoing {
                    bytes,
                    about: About::CausedBy(id.clone()),
                })
                .collect();
            let reply = reply_message(handled.reply, id, handled.refused);
            let trace = handled.trace.map(|bytes| Outgoing {
                bytes,
                about: About::Session,
            });
            let mut messages = caused
                .into_iter()
                .chain(std::iter::once(reply))
                .chain(trace);
            // Hand over what fits now; the rest (from the first that
            // did not fit, in order) waits.
            messages.by_ref().find_map(|m| self.offer(m)).map(|first| {
                let rest: Vec<Outgoing> = messages.collect();
                Box::pin(async move {
                    self.send_waiting(first).await;
                    for message in rest {
                        self.send_waiting(message).await;
                    }
                }) as RoomWait<'_>
            })
        }
    }

    fn cancellable(&self) -> std::sync::MutexGuard<'_, Cancellable> {
        self.cancellable
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a request that waits, so a cancel can reach it.
    pub(crate) fn register(&self, id: &RequestId, cancel: &Cancellation) -> Registration {
        let number = self.registrations.fetch_add(1, Ordering::Relaxed);
        self.cancellable()
            .entry(id.clone())
            .or_default()
            .push((number, cancel.clone()));
        Registration {
            id: id.clone(),
            number,
        }
    }

    pub(crate) fn unregister(&self, registration: &Registration) {
        let mut map = self.cancellable();
        if let Some(entries) = map.get_mut(&registration.id) {
            entries.retain(|(number, _)| *number != registration.number);
            if entries.is_empty() {
                map.remove(&registration.id);
            }
        }
    }

    /// Stops every request in flight, for `reason` (the shutdown grace
    /// period is over, or the client is gone).
    pub(crate) fn cancel_all(&self, reason: CancelReason) {
        for entries in self.cancellable().values() {
            for (_, token) in entries {
                token.cancel(reason);
            }
        }
    }

    /// Fires the cancellation of the requests in flight with `id`; says
    /// whether there was one.
    pub(crate) fn cancel(&self, id: &RequestId) -> bool {
        match self.cancellable().get(id) {
            Some(entries) => {
                entries
                    .iter()
                    .for_each(|(_, token)| token.cancel(CancelReason::Client));
                true
            }
            None => false,
        }
    }

    pub(crate) fn trace_on(&self) -> bool {
        self.trace.load(Ordering::Relaxed) > 0
    }

    pub(crate) fn set_trace(&self, value: TraceLevel) {
        let level = match value {
            TraceLevel::Off => 0,
            TraceLevel::Messages => 1,
            TraceLevel::Verbose => 2,
        };
        self.trace.store(level, Ordering::Relaxed);
    }

    pub(crate) fn set_ready(&self) {
        self.ready.store(true, Ordering::Release);
        self.readied.notify_waiters();
        self.observed(Observed::State);
    }

    /// Returns once the session is past the handshake.
    pub(crate) async fn until_ready(&self) {
        loop {
            let readied = self.readied.notified();
            tokio::pin!(readied);
            // Registered before the flag is read: a `set_ready` between
            // the two still wakes it.
            readied.as_mut().enable();
            if self.is_ready() {
                return;
            }
            readied.await;
        }
    }

    /// Past the handshake: notifications of the server's own may be sent.
    pub(crate) fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// The session's number among those receiving pushes, once ready.
    pub(crate) fn push_number(&self) -> Option<u64> {
        self.push_registration
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(PushRegistration::number)
    }

    /// Sets the least severe level of log notifications sent.
    pub(crate) fn set_log_level(&self, level: LogLevel) {
        self.log_level.store(level as u8, Ordering::Relaxed);
    }

    /// Whether a log notification at `level` is sent.
    pub(crate) fn logs(&self, level: LogLevel) -> bool {
        level as u8 >= self.log_level.load(Ordering::Relaxed)
    }

    /// The `$/logTrace` line for a handled request (MCP v1.0), when trace
    /// is on and the handshake is complete.
    pub(crate) fn trace_line(
        &self,
        method: &str,
        id: &RequestId,
        started: Option<Instant>,
        reply: Option<&[u8]>,
    ) -> Option<Vec<u8>> {
        let level = self.trace.load(Ordering::Relaxed);
        if level == 0 || !self.is_ready() {
            return None;
        }
        let elapsed = started.map_or(0, |t| t.elapsed().as_micros());
        let verbose = (level == 2).then(|| reply.unwrap_or_default());
        self.dialect.trace_line(method, id, elapsed, verbose)
    }
}

impl SessionState for Shared {
    fn server(&self) -> &ServerInner {
        &self.server
    }

    fn over_http(&self) -> bool {
        self.over_http
    }

    fn client(&self) -> Option<&ClientInfo> {
        self.client.get()
    }

    fn discovered(&self) -> bool {
        self.discovered.load(Ordering::Relaxed)
    }

    fn subscribes(&self) -> bool {
        !self.subscriptions.is_empty()
    }
}

impl Shared {
    /// Records what a dialect asked for with a reply.
    pub(crate) fn record(&self, change: Change) {
        if let Change::Subscription { uri, on } = &change {
            // A subscription was taken, within its bounds, before it is
            // recorded; an unsubscription from a resource not subscribed
            // to changes nothing, and nothing is told of it.
            if self.subscriptions.set(uri, *on) || *on {
                self.observed(Observed::Subscription { uri, on: *on });
            }
            return;
        }
        // (Whether a connection discovered the 2026-07-28 revision is its
        // own: no other copy of its session reads it. A log level set
        // again as it is changes nothing.)
        let told = match &change {
            Change::Discovered => None,
            Change::LogLevel(level) if *level == self.log_level() => None,
            Change::LogLevel(level) => Some(Observed::LogLevel(*level)),
            _ => Some(Observed::State),
        };
        self.restore(change);
        if let Some(told) = told {
            self.observed(told);
        }
    }

    /// Applies `change` as [`record`](Self::record) does, but tells the
    /// observer nothing: a change another copy of the session made.
    pub(crate) fn restore(&self, change: Change) {
        match change {
            Change::Client(client) => {
                let _ = self.client.set(*client);
            }
            Change::Trace(value) => self.set_trace(value),
            Change::LogLevel(level) => self.set_log_level(level),
            Change::Subscription { uri, on } => {
                self.subscriptions.set(&uri, on);
            }
            Change::Discovered => self.discovered.store(true, Ordering::Relaxed),
        }
    }
}
