//! The Model Context Protocol's sessions over Streamable HTTP
//! (docs/model-context.md §5): each is a core session fed by the POSTs that carry
//! its id, and a delivery task that puts every message the session writes on
//! exactly one stream — the reply (and what came before it) on its
//! request's response, messages of no request on the `GET` stream, or
//! nowhere. The store bounds how many sessions live at once and ends those
//! idle for too long.
//!
//! With a bus that shares sessions ([`Bus::shares_sessions`]), every
//! session's state is saved where every process reads it, after each
//! change (and its life renewed while it is used, so it does not
//! expire): a request or a `GET` naming a session this process does not
//! have adopts it — a local copy past its handshake with the saved
//! client, log level and subscriptions — so any process serves any
//! session. Copies hear of each
//! other's changes through the bus, and a client's response to a request
//! another copy sent goes to that copy.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::quota::{Held, Quota};
use crate::bus::{Bus, BusMessage, SessionRecord, StreamClaim};
use crate::client::LogLevel;
use crate::dialect::{Change, ClientInfo, Dialect};
use crate::handle::SessionEvents;
use crate::jsonrpc::{Incoming, RequestId};
use crate::principal::{Caller, CountedAs, TokenId};
use crate::server::{Input, Server};
use crate::session::bounded::{self, BoundedReceiver, BoundedSender};
use crate::session::outbox;
use crate::session::{About, Observed, Outgoing, Peer, Resumed, Session, Shared};
use crate::tool::CancelReason;

/// How long a request waits for a session's saved state.
const LOAD_PATIENCE: Duration = Duration::from_secs(2);

/// Messages waiting for the delivery task before the session's tasks wait.
const OUTBOX: usize = 256;
/// Inputs waiting for the session's reader before POSTs wait.
const POST_INPUTS: usize = 64;
/// Events waiting for a stream's client before the delivery task waits (a request's
/// stream) or drops them (the `GET` stream).
const STREAM_BACKLOG: usize = 256;

/// What a request's POST gets first.
pub(super) enum First {
    /// Its reply, before anything else: answered as JSON; its error's
    /// code, if it is an error.
    Reply(Vec<u8>, Option<i32>),
    /// A notification or request first: an SSE stream starting with this
    /// message, then the rest (the reply last).
    Stream(Vec<u8>, BoundedReceiver<Vec<u8>>),
    /// No reply at all (the client cancelled it).
    Unanswered,
    /// Refused for want of these scopes, before anything else: answered
    /// with a challenge (or, without OAuth, the JSON-RPC error).
    Refused(Vec<u8>, Box<[String]>),
}

/// Where a request's messages go.
enum Destination {
    /// Nothing sent yet.
    AwaitingFirst(oneshot::Sender<First>),
    /// Its SSE stream is open.
    Streaming(BoundedSender<Vec<u8>>),
}

#[derive(Default)]
struct Destinations {
    requests: HashMap<RequestId, Destination>,
    /// The `GET` stream, when one is open.
    get: Option<BoundedSender<Vec<u8>>>,
}

/// One session, as the HTTP layer holds it.
pub(super) struct HttpSession {
    pub(super) id: String,
    /// Feeds the core session's reader; dropped to end it.
    input: Mutex<Option<mpsc::Sender<(Input, Caller)>>>,
    /// Who opened it (issuer, subject, client), when its endpoint
    /// verifies tokens: the only principal it serves.
    owner: Option<TokenId>,
    /// The core session's state, while it runs.
    shared: Weak<Shared>,
    /// Cancelled when the core session shuts down.
    stop: Arc<CancellationToken>,
    destinations: Mutex<Destinations>,
    last_active: Mutex<Instant>,
    /// Saves the session's state for the other processes (a bus that
    /// shares sessions).
    saver: Option<Arc<Saver>>,
    /// Its place in its principal's quota of sessions, while it lives on
    /// this process (an adopted copy takes one too).
    held: Mutex<Option<Held>>,
    /// Held while a `GET` stream is claimed and opened, so that two `GET`s
    /// on this process cannot both claim it.
    pub(super) opening_get: tokio::sync::Mutex<()>,
    /// How many bytes may wait on each of its streams for the client
    /// (`max_queued_output`).
    stream_bytes: usize,
}

/// Saves one session's state through the bus, and tells the other
/// processes it changed.
struct Saver {
    id: String,
    owner: Option<(String, Option<String>, Option<String>)>,
    bus: Arc<dyn Bus>,
    ttl: Duration,
    saved: Mutex<Instant>,
    /// The store, which reads the saved state again for a renewal by a
    /// copy not ready (`Sessions::resync`).
    sessions: Weak<Sessions>,
    /// How many log levels this copy took (its client's, or another
    /// copy's news): a read of the saved state begun before the last one
    /// does not set the level back.
    levels_taken: AtomicU64,
}

impl Saver {
    /// Saves what changed: the record, or one subscription; notes a
    /// request sent to the client.
    fn observed(&self, shared: &Shared, what: Observed<'_>) {
        match what {
            Observed::State => self.save(
                shared,
                BusMessage::SessionChanged {
                    id: self.id.clone(),
                },
            ),
            // The level travels: no copy reads the state again for it.
            Observed::LogLevel(level) => {
                self.levels_taken.fetch_add(1, Ordering::AcqRel);
                self.save(
                    shared,
                    BusMessage::LogLevelChanged {
                        session: self.id.clone(),
                        level,
                    },
                );
            }
            Observed::Subscription { uri, on } => {
                if shared.client.get().is_none() {
                    return;
                }
                self.bus.save_subscription(&self.id, uri, on, self.ttl);
                self.bus.publish(BusMessage::SubscriptionChanged {
                    session: self.id.clone(),
                    uri: uri.to_owned(),
                    on,
                });
            }
            Observed::Asked { request } => {
                let kept = shared.server.limits.client_request_timeout;
                self.bus.save_client_request(&self.id, request, kept);
            }
        }
    }

    /// This copy's state, as the bus keeps it (its subscriptions are
    /// saved one by one); `None` before the handshake.
    fn record(&self, shared: &Shared) -> Option<SessionRecord> {
        // Not initialized yet: nothing another process could serve.
        let client = shared.client.get()?;
        Some(SessionRecord {
            version: client.version().to_owned(),
            capabilities: client.capabilities.clone(),
            owner: self.owner.clone(),
            ready: shared.is_ready(),
            log_level: shared.log_level(),
            subscriptions: Vec::new(),
            ended: false,
        })
    }

    /// Saves the record, and tells the other copies what changed.
    fn save(&self, shared: &Shared, change: BusMessage) {
        let Some(record) = self.record(shared) else {
            return;
        };
        self.bus.save_session(&self.id, &record, self.ttl);
        self.bus.publish(change);
        *self.saved.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    /// Renews the saved state's life when the last save or renewal is a
    /// quarter of the time to live old: a session in use never expires.
    /// The store keeps what it holds (`Bus::renew_session`), so a copy
    /// that missed another's change never writes its own over it; a copy
    /// that has not heard `initialized` reads the saved state first
    /// (another copy may have heard it), and is readied by it.
    fn renew(&self, shared: &Shared) {
        let mut saved = self.saved.lock().unwrap_or_else(PoisonError::into_inner);
        if saved.elapsed() <= self.ttl / 4 {
            return;
        }
        // (Marked now, under the lock: two requests at once renew once.)
        *saved = Instant::now();
        drop(saved);
        if shared.is_ready() {
            self.renew_saved(shared);
            return;
        }
        if let Some(sessions) = self.sessions.upgrade() {
            sessions.resync(&self.id, Resync::Renew);
        }
    }

    /// Renews the saved state's life (`Bus::renew_session`), saving this
    /// copy's only if none is stored. Nothing changed: nobody is told.
    fn renew_saved(&self, shared: &Shared) {
        if let Some(record) = self.record(shared) {
            self.bus.renew_session(&self.id, &record, self.ttl);
        }
    }
}

impl HttpSession {
    fn destinations(&self) -> std::sync::MutexGuard<'_, Destinations> {
        self.destinations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn touch(&self) {
        *self
            .last_active
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
        if let (Some(saver), Some(shared)) = (&self.saver, self.shared()) {
            saver.renew(&shared);
        }
    }

    /// Hands the client's response to a request the server sent: to this
    /// copy when it sent it, else to the copy on another process that did
    /// (through the bus). `false` when the session has ended.
    pub(super) fn answer(
        &self,
        id: Option<&RequestId>,
        outcome: Result<&serde_json::value::RawValue, &serde_json::value::RawValue>,
        body: &Bytes,
    ) -> bool {
        let Some(shared) = self.shared() else {
            return false;
        };
        match &self.saver {
            Some(saver) if !shared.peer.waits_for(id) => {
                // No copy's request has another id than a number.
                let Some(request) = Peer::number_of(id) else {
                    return true;
                };
                let kept = shared.server.limits.client_request_timeout;
                let response = String::from_utf8_lossy(body);
                saver
                    .bus
                    .hand_client_response(&self.id, request, &response, kept);
            }
            _ => shared.peer.answer(id, outcome),
        }
        true
    }

    /// The core session's state, if it still runs.
    pub(super) fn shared(&self) -> Option<Arc<Shared>> {
        self.shared.upgrade()
    }

    /// The core session's state, when a request may be served beside its
    /// reader ([`beside`](crate::session::beside)): the session runs, is
    /// not ending or shutting down, and nothing waits for its reader (a
    /// request handed to it earlier is not overtaken).
    pub(super) fn serving(&self) -> Option<Arc<Shared>> {
        self.touch();
        let reader_idle = self
            .input
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_some_and(|input| input.capacity() == POST_INPUTS);
        self.shared().filter(|_| reader_idle && !self.stopping())
    }

    /// Whether the core session began to shut down.
    pub(super) fn stopping(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// Whether `caller` may use this session: the principal that opened it
    /// (the same issuer, subject and client), or anyone for a session
    /// opened without one.
    pub(super) fn serves(&self, caller: &Caller) -> bool {
        owner_serves(self.owner.as_ref(), caller)
    }

    /// How many log levels this copy took ([`Saver::levels_taken`]).
    fn levels_taken(&self) -> u64 {
        (self.saver.as_ref()).map_or(0, |s| s.levels_taken.load(Ordering::Acquire))
    }

    /// Hands a message from `caller` to the session's reader; `false` when
    /// the session has ended.
    pub(super) async fn send(&self, body: Bytes, caller: &Caller) -> bool {
        self.touch();
        let input = self
            .input
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match input {
            Some(input) => input
                .send((Input::Message(body), caller.clone()))
                .await
                .is_ok(),
            None => false,
        }
    }

    /// Waits for what request `id` produces first; `Err` when a request
    /// with this id is already in flight. Until [`Expected::handed`], the
    /// request is the POST's alone: dropping the guard forgets it (answered
    /// beside the reader, its POST gone while the session's input was
    /// full, or its message not delivered), so that it holds neither its
    /// id nor the session's idleness.
    pub(super) fn expect(&self, id: &RequestId) -> Result<Expected<'_>, ()> {
        let mut destinations = self.destinations();
        if destinations.requests.contains_key(id) {
            return Err(());
        }
        let (first, receiver) = oneshot::channel();
        destinations
            .requests
            .insert(id.clone(), Destination::AwaitingFirst(first));
        Ok(Expected {
            session: self,
            id: id.clone(),
            first: Some(receiver),
        })
    }

    /// Opens the `GET` stream; `None` when one is open already.
    pub(super) fn open_get(&self) -> Option<BoundedReceiver<Vec<u8>>> {
        self.touch();
        let mut destinations = self.destinations();
        if destinations.get.as_ref().is_some_and(|g| !g.is_closed()) {
            return None;
        }
        let (sender, receiver) = bounded::channel(STREAM_BACKLOG, self.stream_bytes);
        destinations.get = Some(sender);
        Some(receiver)
    }

    /// Ends the `GET` stream, if one is open (its claim was lost).
    fn close_get(&self) {
        self.destinations().get = None;
    }

    /// Whether the `GET` stream is open.
    pub(super) fn get_is_open(&self) -> bool {
        self.destinations()
            .get
            .as_ref()
            .is_some_and(|g| !g.is_closed())
    }

    /// Ends the session: its requests in flight are cancelled (they get no
    /// reply), its reader ends, its streams close. Requests parked, or
    /// waiting in its input, never run: its reader drains (refusing them,
    /// to nobody) before the cancellation, so that no slot the cancelled
    /// ones free starts another.
    pub(super) fn end(&self) {
        // The POSTs first: what the drain answers reaches none of them.
        self.input
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let mut destinations = self.destinations();
        destinations.get = None;
        destinations.requests.clear();
        drop(destinations);
        self.stop.cancel();
        if let Some(shared) = self.shared() {
            shared.peer.close();
            shared.cancel_all(CancelReason::Gone);
        }
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    /// Idle: nothing in flight, no `GET` stream, no request since `since`.
    fn idle_since(&self, since: Instant) -> bool {
        let destinations = self.destinations();
        destinations.requests.is_empty()
            && destinations
                .get
                .as_ref()
                .is_none_or(BoundedSender::is_closed)
            && *self
                .last_active
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                < since
    }
}

/// A request a POST waits for ([`HttpSession::expect`]): forgotten when
/// dropped before it was handed to the session.
pub(super) struct Expected<'a> {
    session: &'a HttpSession,
    id: RequestId,
    /// `None` once handed over.
    first: Option<oneshot::Receiver<First>>,
}

impl Expected<'_> {
    /// The request has reached the session (its reader has its message,
    /// or it was answered beside it): what it produces first.
    pub(super) fn handed(mut self) -> oneshot::Receiver<First> {
        match self.first.take() {
            Some(first) => first,
            // Taken only here, and `self` is consumed.
            None => oneshot::channel().1,
        }
    }
}

impl Drop for Expected<'_> {
    fn drop(&mut self) {
        if self.first.is_some() {
            let mut destinations = self.session.destinations();
            if matches!(
                destinations.requests.get(&self.id),
                Some(Destination::AwaitingFirst(_))
            ) {
                destinations.requests.remove(&self.id);
            }
        }
    }
}

/// The live sessions of one endpoint.
pub(super) struct Sessions {
    map: Mutex<HashMap<String, Arc<HttpSession>>>,
    max: usize,
    /// The sessions each principal holds.
    quota: Arc<Quota>,
    idle: Duration,
    /// The sweeper that ends idle sessions runs.
    sweeping: std::sync::atomic::AtomicBool,
    /// The bus, when it keeps sessions where every process reads them.
    shared_by: Option<Arc<dyn Bus>>,
}

/// Why a session could not be created.
pub(super) enum NotCreated {
    /// The store holds its maximum of sessions.
    Full,
    /// The caller's principal holds its maximum of sessions.
    PrincipalFull,
    /// The operating system's random source failed: no id can be issued.
    NoRandom,
}

/// Why a request's session is not served here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NotFound {
    /// No such session serves the caller: unknown, expired, ended, or
    /// another principal's.
    Unknown,
    /// Another process's session, which this process, holding its
    /// maximum of sessions, cannot adopt now.
    Full,
    /// Another process's session, which the caller, holding its maximum
    /// of sessions here, cannot have adopted now.
    PrincipalFull,
}

impl Sessions {
    /// The sessions of an endpoint of `server`: shared with the other
    /// processes when its bus shares sessions.
    pub(super) fn new(
        max: usize,
        per_principal: usize,
        idle: Duration,
        server: &Server,
    ) -> Arc<Self> {
        let handle = server.handle();
        let shared_by = handle.bus().filter(|bus| bus.shares_sessions()).cloned();
        let sessions = Arc::new(Self {
            map: Mutex::new(HashMap::new()),
            max,
            quota: Quota::new(per_principal),
            idle,
            sweeping: std::sync::atomic::AtomicBool::new(false),
            shared_by,
        });
        if sessions.shared_by.is_some() {
            let events: Arc<dyn SessionEvents> = sessions.clone();
            handle.add_session_events(Arc::downgrade(&events));
        }
        sessions
    }

    /// Claims session `id`'s `GET` stream, for the stream named `claim`
    /// (a bus that shares sessions), across the deployment: `false` when
    /// another stream holds it. A bus that cannot tell leaves it to this
    /// process. The caller holds `opening_get` and no stream of the session.
    pub(super) async fn claim_get(&self, id: &str, claim: &str) -> bool {
        let Some(bus) = &self.shared_by else {
            return true;
        };
        let claimed = bus
            .claim_stream(id, claim, self.idle.max(Duration::from_secs(4)))
            .await;
        tracing::debug!(session = id, ?claimed, "claimed the session's GET stream");
        match claimed {
            StreamClaim::HeldElsewhere => false,
            StreamClaim::Granted | StreamClaim::Unknown => true,
        }
    }

    /// Keeps `session`'s claim `claim` of its `GET` stream while `slot` is
    /// held: renewed every quarter of its lease (a stream may outlive the
    /// idle timeout), given up when the stream ends; a renewal that finds
    /// the claim taken (this process was thought gone) ends the stream.
    pub(super) fn keep_get_claim(
        &self,
        session: &Arc<HttpSession>,
        claim: String,
        slot: &mut super::quota::StreamSlot,
    ) {
        let Some(bus) = self.shared_by.clone() else {
            return;
        };
        let done = CancellationToken::new();
        slot.on_end({
            let (done, bus, id, claim) =
                (done.clone(), bus.clone(), session.id.clone(), claim.clone());
            move || {
                done.cancel();
                bus.release_stream(&id, &claim);
            }
        });
        // (At least a second between renewals, whatever the idle timeout.)
        let lease = self.idle.max(Duration::from_secs(4));
        let weak = Arc::downgrade(session);
        let id = session.id.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = done.cancelled() => return,
                    () = tokio::time::sleep(lease / 4) => {}
                }
                if bus.claim_stream(&id, &claim, lease).await == StreamClaim::HeldElsewhere {
                    tracing::warn!(session = id, "a GET stream lost its claim: it ends");
                    if let Some(session) = weak.upgrade() {
                        session.close_get();
                    }
                    return;
                }
            }
        });
    }

    /// Whether session `id`, here or in the saved states, is one `caller`
    /// may end. Nothing is adopted.
    pub(super) async fn owned_by(&self, id: &str, caller: &Caller) -> bool {
        match (self.get(id), &self.shared_by) {
            (Some(session), _) => session.serves(caller),
            (None, Some(bus)) if is_session_id(id) => match load(bus, id).await {
                Some(record) if !record.ended => owner_serves(owner_of(&record).as_ref(), caller),
                _ => false,
            },
            (None, _) => false,
        }
    }

    /// Forgets a session everywhere (its saved state, and every process's
    /// copy); `true` when there was one here or in the saved states that
    /// `caller` may end.
    pub(super) async fn end_everywhere(&self, id: &str, caller: &Caller) -> bool {
        if !self.owned_by(id, caller).await {
            return false;
        }
        self.remove(id);
        if let Some(bus) = &self.shared_by {
            bus.remove_session(id);
            bus.publish(BusMessage::SessionEnded { id: id.to_owned() });
        }
        true
    }

    /// The session with this id that serves `caller`: this process's, or
    /// one another process created, adopted now from its saved state.
    /// An adopted copy takes a place in `caller`'s quota of sessions, as a
    /// session it opened here would: a principal cannot fill every
    /// process with copies of its sessions.
    pub(super) async fn find(
        self: &Arc<Self>,
        id: &str,
        server: &Server,
        stop: &CancellationToken,
        caller: &Caller,
    ) -> Result<Arc<HttpSession>, NotFound> {
        let found = match self.get(id) {
            Some(session) => session,
            None => self.adopt(id, server, stop, caller).await?,
        };
        if found.serves(caller) {
            Ok(found)
        } else {
            Err(NotFound::Unknown)
        }
    }

    /// Session `id`, as another process saved it, adopted for `caller`.
    async fn adopt(
        self: &Arc<Self>,
        id: &str,
        server: &Server,
        stop: &CancellationToken,
        caller: &Caller,
    ) -> Result<Arc<HttpSession>, NotFound> {
        let bus = (self.shared_by.as_ref())
            .filter(|_| is_session_id(id))
            .ok_or(NotFound::Unknown)?;
        // A session created a moment ago may not be saved yet: a few short
        // tries before it is unknown.
        let mut record = None;
        for wait in [0, 20, 60, 120] {
            tokio::time::sleep(Duration::from_millis(wait)).await;
            record = load(bus, id).await;
            if record.is_some() {
                break;
            }
        }
        let record = record.filter(|r| !r.ended).ok_or(NotFound::Unknown)?;
        let owner = owner_of(&record);
        if !owner_serves(owner.as_ref(), caller) {
            return Err(NotFound::Unknown);
        }
        let Some(client) = ClientInfo::saved(&record.version, record.capabilities.clone()) else {
            tracing::warn!(
                session = id,
                version = record.version,
                "a saved session of an unknown version"
            );
            return Err(NotFound::Unknown);
        };
        let mut first = [0u8; 4];
        getrandom::fill(&mut first).map_err(|_| NotFound::Unknown)?;
        let resumed = Resumed {
            client,
            ready: record.ready,
            log_level: record.log_level,
            subscriptions: record.subscriptions.clone(),
            // Apart from the original's ids (from 0) and likely from every
            // other copy's.
            first_request_id: u64::from(u32::from_le_bytes(first)) << 20,
        };
        // Idle copies give their places back first, as for `create`.
        self.sweep();
        let mut map = self.map();
        if let Some(session) = map.get(id) {
            return Ok(session.clone()); // adopted meanwhile
        }
        if map.len() >= self.max {
            return Err(NotFound::Full);
        }
        let held =
            (self.quota.take(CountedAs::of(caller))).map_err(|()| NotFound::PrincipalFull)?;
        let (out, outbox) = outbox::channel(OUTBOX, server.inner().limits.max_queued_output);
        let (input, inputs) = mpsc::channel(POST_INPUTS);
        let stop = Arc::new(stop.child_token());
        let session = Session::resumed_over_http(server.inner(), out, stop.clone(), resumed);
        let http = self.start(id.to_owned(), owner, &session, input, stop, outbox);
        *http.held.lock().unwrap_or_else(PoisonError::into_inner) = held;
        map.insert(http.id.clone(), http.clone());
        drop(map);
        tokio::spawn(session.run(PostInputs(inputs)));
        tracing::debug!(session = id, "adopted a session another process created");
        // Read once more: the session may have ended elsewhere between the
        // read and the insert, its `SessionEnded` heard before there was a
        // copy to end (the mark is written before the news is sent).
        self.resync(id, Resync::Changed);
        Ok(http)
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<HttpSession>>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session with this id.
    pub(super) fn get(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.map().get(id).cloned()
    }

    /// Removes and ends the session with this id; `false` when there is none.
    pub(super) fn remove(&self, id: &str) -> bool {
        let removed = self.map().remove(id);
        match removed {
            Some(session) => {
                session.end();
                true
            }
            None => false,
        }
    }

    /// Starts a session of `server` (its core session and its delivery task), or
    /// refuses when the store is full.
    pub(super) fn create(
        self: &Arc<Self>,
        server: &Server,
        stop: &CancellationToken,
        caller: &Caller,
    ) -> Result<Arc<HttpSession>, NotCreated> {
        self.sweep();
        let id = session_id().ok_or(NotCreated::NoRandom)?;
        let mut map = self.map();
        if map.len() >= self.max {
            return Err(NotCreated::Full);
        }
        let held = self
            .quota
            .take(CountedAs::of(caller))
            .map_err(|()| NotCreated::PrincipalFull)?;
        let (out, outbox) = outbox::channel(OUTBOX, server.inner().limits.max_queued_output);
        let (input, inputs) = mpsc::channel(POST_INPUTS);
        let stop = Arc::new(stop.child_token());
        let session = Session::over_http(server.inner(), Dialect::ModelContext, out, stop.clone());
        let owner = caller.principal.as_deref().map(TokenId::of);
        let http = self.start(id, owner, &session, input, stop, outbox);
        *http.held.lock().unwrap_or_else(PoisonError::into_inner) = held;
        map.insert(http.id.clone(), http.clone());
        drop(map);
        tokio::spawn(session.run(PostInputs(inputs)));
        Ok(http)
    }

    /// The HTTP side of core session `session`: its delivery task started, and
    /// (with a bus that shares sessions) its state saved after each change.
    fn start(
        self: &Arc<Self>,
        id: String,
        owner: Option<TokenId>,
        session: &Session,
        input: mpsc::Sender<(Input, Caller)>,
        stop: Arc<CancellationToken>,
        outbox: BoundedReceiver<Outgoing>,
    ) -> Arc<HttpSession> {
        // (Its requests' spans name it: `mcp.session.id`.)
        #[cfg(feature = "otel")]
        let _ = session.shared().session_id.set(id.as_str().into());
        let saver = self.shared_by.clone().map(|bus| {
            Arc::new(Saver {
                id: id.clone(),
                owner: owner
                    .as_ref()
                    .map(|o| (o.issuer.clone(), o.subject.clone(), o.client.clone())),
                bus,
                ttl: self.idle,
                saved: Mutex::new(Instant::now()),
                sessions: Arc::downgrade(self),
                levels_taken: AtomicU64::new(0),
            })
        });
        if let Some(saver) = &saver {
            let saver = saver.clone();
            session
                .shared()
                .observe(Box::new(move |shared, what| saver.observed(shared, what)));
        }
        let http = Arc::new(HttpSession {
            id,
            input: Mutex::new(Some(input)),
            shared: Arc::downgrade(session.shared()),
            owner,
            stop,
            destinations: Mutex::new(Destinations::default()),
            last_active: Mutex::new(Instant::now()),
            saver,
            held: Mutex::new(None),
            opening_get: tokio::sync::Mutex::new(()),
            stream_bytes: session.shared().server.limits.max_queued_output,
        });
        tokio::spawn(deliver(Arc::downgrade(&http), outbox));
        self.start_sweeper();
        http
    }

    /// Ends the sessions idle for longer than the idle timeout.
    fn sweep(&self) {
        let Some(since) = Instant::now().checked_sub(self.idle) else {
            return;
        };
        let idle: Vec<Arc<HttpSession>> = {
            let mut map = self.map();
            let ids: Vec<String> = map
                .iter()
                .filter(|(_, s)| s.idle_since(since))
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| map.remove(id)).collect()
        };
        for session in idle {
            tracing::debug!(session = %session.id, "an idle session expired");
            session.end();
        }
    }

    /// A task that sweeps idle sessions while the store lives.
    fn start_sweeper(self: &Arc<Self>) {
        if self
            .sweeping
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            return;
        }
        let store = Arc::downgrade(self);
        let every = (self.idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                match store.upgrade() {
                    Some(store) => store.sweep(),
                    None => return,
                }
            }
        });
    }
}

/// A fresh session id: 128 bits from the operating system's random
/// source, as 32 hex digits; `None` when the source fails (never a
/// guessable id).
/// Whether `id` is one [`session_id`] could have made (32 lowercase hex
/// digits): any other is no session, without asking the bus.
fn is_session_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn session_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    if let Err(e) = getrandom::fill(&mut bytes) {
        tracing::error!("the operating system's random source failed: {e}");
        return None;
    }
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether a session opened by `owner` (none: no verified token) serves
/// `caller`: only its owner's principal, when it has one.
fn owner_serves(owner: Option<&TokenId>, caller: &Caller) -> bool {
    match (owner, &caller.principal) {
        (None, _) => true,
        (Some(owner), Some(principal)) => owner.is(principal),
        (Some(_), None) => false,
    }
}

/// The owner a saved session names.
fn owner_of(record: &SessionRecord) -> Option<TokenId> {
    record
        .owner
        .clone()
        .map(|(issuer, subject, client)| TokenId {
            issuer,
            subject,
            client,
        })
}

/// Session `id`'s saved state, if it can be read in time.
async fn load(bus: &Arc<dyn Bus>, id: &str) -> Option<SessionRecord> {
    match tokio::time::timeout(LOAD_PATIENCE, bus.load_session(id)).await {
        Ok(record) => record,
        Err(_) => {
            tracing::warn!(session = id, "a saved session could not be read in time");
            None
        }
    }
}

/// The waits before a copy reads its saved state again when its read
/// after a gap found nothing (Redis slow as it comes back).
const GAP_REREADS: [Duration; 3] = [
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_secs(2),
];

/// Why a copy reads its session's saved state again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resync {
    /// Another copy changed it.
    Changed,
    /// The bus may have lost messages: besides the state, this copy
    /// takes the subscriptions saved beside it (a subscription made
    /// through another copy meanwhile; one given up meanwhile stays here,
    /// since a subscription this copy made a moment ago may not be saved
    /// yet, and an update too many is better than one lost).
    Gap,
    /// This copy, not ready, renews it: it renews the saved state after,
    /// unless the saved state readied it (whose save renews it), or could
    /// not be read (the next renewal tries again).
    Renew,
}

impl Sessions {
    /// Reads session `id`'s saved state again and applies it to this copy.
    fn resync(&self, id: &str, why: Resync) {
        let (Some(session), Some(bus)) = (self.get(id), self.shared_by.clone()) else {
            return;
        };
        let id = id.to_owned();
        let levels_before = session.levels_taken();
        tokio::spawn(async move {
            let mut record = load(&bus, &id).await;
            // After a gap Redis may still be slow: what the lost messages
            // said is read again a few times before this copy goes on
            // without it.
            if why == Resync::Gap {
                for wait in GAP_REREADS {
                    if record.is_some() {
                        break;
                    }
                    tokio::time::sleep(wait).await;
                    record = load(&bus, &id).await;
                }
            }
            let Some(shared) = session.shared() else {
                return;
            };
            // Unread (gone, or the bus slow): nothing is written over a
            // state this copy could not see.
            let Some(record) = record else {
                return;
            };
            if record.ended {
                // Ended on another process; this copy missed the news.
                if let Some(sessions) = session.saver.as_ref().and_then(|s| s.sessions.upgrade()) {
                    sessions.remove(&id);
                }
                return;
            }
            // Applied without saving again (the copy that changed saved
            // it); subscriptions come one by one (`subscription_changed`),
            // unless the messages that carried them may be lost. A level
            // this copy took while it read is newer than the one read.
            if session.levels_taken() == levels_before {
                shared.restore(Change::LogLevel(record.log_level));
            }
            if why == Resync::Gap {
                for uri in record.subscriptions {
                    shared.restore(Change::Subscription { uri, on: true });
                }
                // The client's responses whose announcement was lost.
                for response in bus.load_client_responses(&id).await {
                    take_client_response(&shared, &response);
                }
            }
            if record.ready && !shared.is_ready() {
                // The client's `initialized` reached another copy: this
                // one's reader takes it as its own (and saves it).
                let initialized = Bytes::from_static(
                    br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                );
                session.send(initialized, &Caller::default()).await;
            } else if why == Resync::Renew
                && let Some(saver) = &session.saver
            {
                saver.renew_saved(&shared);
            }
        });
    }
}

impl SessionEvents for Sessions {
    fn changed(&self, id: &str) {
        self.resync(id, Resync::Changed);
    }

    fn log_level_changed(&self, id: &str, level: LogLevel) {
        let Some(session) = self.get(id) else {
            return;
        };
        if let Some(saver) = &session.saver {
            saver.levels_taken.fetch_add(1, Ordering::AcqRel);
        }
        if let Some(shared) = session.shared() {
            // Applied without saving again: the copy that changed saved it.
            shared.restore(Change::LogLevel(level));
        }
    }

    fn subscription_changed(&self, id: &str, uri: &str, on: bool) {
        if let Some(shared) = self.get(id).and_then(|s| s.shared()) {
            // Applied without saving again: the copy that changed saved it.
            shared.restore(Change::Subscription {
                uri: uri.to_owned(),
                on,
            });
        }
    }

    fn ended(&self, id: &str) {
        self.remove(id);
    }

    fn gap(&self) {
        // A lost `SessionChanged` may have held back a copy's readiness
        // (the client's `initialized` reached another copy) or its log
        // level, a lost `SubscriptionChanged` a subscription: each copy
        // reads its saved state again.
        let ids: Vec<String> = self.map().keys().cloned().collect();
        for id in ids {
            self.resync(&id, Resync::Gap);
        }
    }

    fn client_response(&self, session: &str, message: &str) {
        if let Some(shared) = self.get(session).and_then(|s| s.shared()) {
            take_client_response(&shared, message);
        }
    }
}

/// Answers this copy's request to the client with `message`, the client's
/// response that reached another process, if this copy waits for it.
fn take_client_response(shared: &Shared, message: &str) {
    let crate::jsonrpc::Parsed::Single(Incoming::Response { id, outcome }) =
        crate::dialect::parse(message.as_bytes())
    else {
        return;
    };
    if shared.peer.waits_for(id.as_ref()) {
        shared.peer.answer(id.as_ref(), outcome);
    }
}

/// The core session's input: the messages POSTs hand over, each with its
/// POST's caller.
struct PostInputs(mpsc::Receiver<(Input, Caller)>);

impl futures_core::Stream for PostInputs {
    type Item = io::Result<(Input, Caller)>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx).map(|item| item.map(Ok))
    }
}

/// Puts every message the session writes on its stream, until the session
/// ends (every sender of `outbox` is gone).
async fn deliver(session: Weak<HttpSession>, mut outbox: BoundedReceiver<Outgoing>) {
    while let Some(message) = outbox.recv().await {
        let Some(session) = session.upgrade() else {
            continue; // ended: messages go nowhere until the core session stops
        };
        let Outgoing { bytes, about } = message;
        match about {
            About::Reply(id, error) => {
                to_request(&session, &id, bytes, |bytes| First::Reply(bytes, error)).await;
            }
            About::Refused(id, needed) => {
                to_request(&session, &id, bytes, |bytes| First::Refused(bytes, needed)).await;
            }
            About::Unanswered(id) => {
                let destination = session.destinations().requests.remove(&id);
                if let Some(Destination::AwaitingFirst(first)) = destination {
                    let _ = first.send(First::Unanswered);
                }
            }
            About::CausedBy(_) if session.get_is_open() => to_get_stream(&session, bytes),
            About::Related(id) | About::CausedBy(id) => {
                let stream = {
                    let mut destinations = session.destinations();
                    match destinations.requests.remove(&id) {
                        Some(Destination::AwaitingFirst(first)) => {
                            let (stream, events) =
                                bounded::channel(STREAM_BACKLOG, session.stream_bytes);
                            if first.send(First::Stream(bytes, events)).is_ok() {
                                destinations
                                    .requests
                                    .insert(id, Destination::Streaming(stream));
                            }
                            continue;
                        }
                        Some(Destination::Streaming(stream)) => {
                            destinations
                                .requests
                                .insert(id, Destination::Streaming(stream.clone()));
                            Some(stream)
                        }
                        None => None,
                    }
                };
                match stream {
                    Some(stream) => {
                        let _ = stream.send(bytes).await;
                    }
                    None => to_get_stream(&session, bytes),
                }
            }
            About::Session => to_get_stream(&session, bytes),
        }
    }
}

/// Hands a reply to its request's POST: as the first thing it gets (built
/// by `first`), or last on the stream it answers with; dropped when the
/// POST is gone.
async fn to_request(
    session: &HttpSession,
    id: &RequestId,
    bytes: Vec<u8>,
    first: impl FnOnce(Vec<u8>) -> First,
) {
    let destination = session.destinations().requests.remove(id);
    match destination {
        Some(Destination::AwaitingFirst(waiting)) => {
            let _ = waiting.send(first(bytes));
        }
        Some(Destination::Streaming(stream)) => {
            let _ = stream.send(bytes).await;
        }
        None => tracing::debug!(%id, "a reply whose POST is gone was dropped"),
    }
}

/// Sends a message on the `GET` stream, or drops it when none is open (or
/// its client reads too slowly).
fn to_get_stream(session: &HttpSession, bytes: Vec<u8>) {
    let get = session.destinations().get.clone();
    match get {
        Some(get) => {
            if get.try_send(bytes).is_err() {
                tracing::debug!("no room on the GET stream; a message was dropped");
            }
        }
        None => tracing::debug!("no GET stream open; a message was dropped"),
    }
}
