//! The Model Context Protocol's sessions over Streamable HTTP
//! (docs/model-context.md §5): each is a core session fed by the POSTs that carry
//! its id, and a router that puts every message the session writes on
//! exactly one stream — the reply (and what came before it) on its
//! request's response, messages of no request on the `GET` stream, or
//! nowhere. The store bounds how many sessions live at once and ends those
//! idle for too long.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::dialect::Dialect;
use crate::jsonrpc::RequestId;
use crate::principal::{Caller, Principal};
use crate::server::{Input, Server};
use crate::session::{About, Outgoing, Session, Shared};
use crate::tool::CancelReason;

/// Messages waiting for the router before the session's tasks wait.
const OUTBOX: usize = 256;
/// Inputs waiting for the session's reader before POSTs wait.
const INBOX: usize = 64;
/// Events waiting for a stream's client before the router waits (a request's
/// stream) or drops them (the `GET` stream).
const STREAM_BACKLOG: usize = 256;

/// What a request's POST gets first.
pub(super) enum First {
    /// Its reply, before anything else: answered as JSON.
    Reply(Vec<u8>),
    /// A notification or request first: an SSE stream starting with this
    /// message, then the rest (the reply last).
    Stream(Vec<u8>, mpsc::Receiver<Vec<u8>>),
    /// No reply at all (the client cancelled it).
    Unanswered,
    /// Refused for want of these scopes, before anything else: answered
    /// with a challenge (or, without OAuth, the JSON-RPC error).
    Refused(Vec<u8>, Box<[String]>),
}

/// Where a request's messages go.
enum Route {
    /// Nothing sent yet.
    Waiting(oneshot::Sender<First>),
    /// Its SSE stream is open.
    Streaming(mpsc::Sender<Vec<u8>>),
}

#[derive(Default)]
struct Routes {
    requests: HashMap<RequestId, Route>,
    /// The `GET` stream, when one is open.
    get: Option<mpsc::Sender<Vec<u8>>>,
}

/// One session, as the HTTP layer holds it.
pub(super) struct HttpSession {
    pub(super) id: String,
    /// Feeds the core session's reader; dropped to end it.
    input: Mutex<Option<mpsc::Sender<(Input, Caller)>>>,
    /// Who opened it (issuer, subject, client), when its endpoint
    /// verifies tokens: the only principal it serves.
    owner: Option<Owner>,
    /// The core session's state, while it runs.
    shared: Weak<Shared>,
    /// Cancelled when the core session shuts down.
    stop: Arc<CancellationToken>,
    routes: Mutex<Routes>,
    last_active: Mutex<Instant>,
}

impl HttpSession {
    fn routes(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn touch(&self) {
        *self
            .last_active
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
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
            .is_some_and(|input| input.capacity() == INBOX);
        self.shared().filter(|_| reader_idle && !self.stopping())
    }

    /// Whether the core session began to shut down.
    pub(super) fn stopping(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// Forgets request `id`, answered beside the reader with nothing sent
    /// before its reply.
    pub(super) fn answered(&self, id: &RequestId) {
        self.routes().requests.remove(id);
    }

    /// Whether `caller` may use this session: the principal that opened it
    /// (the same issuer, subject and client), or anyone for a session
    /// opened without one.
    pub(super) fn serves(&self, caller: &Caller) -> bool {
        match (&self.owner, &caller.principal) {
            (None, _) => true,
            (Some(owner), Some(principal)) => owner.is(principal),
            (Some(_), None) => false,
        }
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
    /// with this id is already in flight.
    pub(super) fn expect(&self, id: &RequestId) -> Result<oneshot::Receiver<First>, ()> {
        let mut routes = self.routes();
        if routes.requests.contains_key(id) {
            return Err(());
        }
        let (first, receiver) = oneshot::channel();
        routes.requests.insert(id.clone(), Route::Waiting(first));
        Ok(receiver)
    }

    /// Forgets a request whose POST went away before anything came.
    pub(super) fn forget(&self, id: &RequestId) {
        let mut routes = self.routes();
        if matches!(routes.requests.get(id), Some(Route::Waiting(w)) if w.is_closed()) {
            routes.requests.remove(id);
        }
    }

    /// Opens the `GET` stream; `None` when one is open already.
    pub(super) fn open_get(&self) -> Option<mpsc::Receiver<Vec<u8>>> {
        self.touch();
        let mut routes = self.routes();
        if routes.get.as_ref().is_some_and(|g| !g.is_closed()) {
            return None;
        }
        let (sender, receiver) = mpsc::channel(STREAM_BACKLOG);
        routes.get = Some(sender);
        Some(receiver)
    }

    /// Whether the `GET` stream is open.
    fn get_is_open(&self) -> bool {
        self.routes().get.as_ref().is_some_and(|g| !g.is_closed())
    }

    /// Ends the session: its requests in flight are cancelled (they get no
    /// reply), its reader ends, its streams close.
    pub(super) fn end(&self) {
        if let Some(shared) = self.shared() {
            shared.peer.close();
            shared.cancel_all(CancelReason::Gone);
        }
        self.input
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let mut routes = self.routes();
        routes.get = None;
        routes.requests.clear();
    }

    /// Idle: nothing in flight, no `GET` stream, no request since `since`.
    fn idle_since(&self, since: Instant) -> bool {
        let routes = self.routes();
        routes.requests.is_empty()
            && routes.get.as_ref().is_none_or(mpsc::Sender::is_closed)
            && *self
                .last_active
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                < since
    }
}

/// The live sessions of one endpoint.
pub(super) struct Sessions {
    map: Mutex<HashMap<String, Arc<HttpSession>>>,
    max: usize,
    idle: Duration,
    /// The sweeper that ends idle sessions runs.
    sweeping: std::sync::atomic::AtomicBool,
}

/// Why a session could not be created.
pub(super) enum Refused {
    /// The store holds its maximum of sessions.
    Full,
    /// The operating system's random source failed: no id can be issued.
    NoRandom,
}

impl Sessions {
    pub(super) fn new(max: usize, idle: Duration) -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            max,
            idle,
            sweeping: std::sync::atomic::AtomicBool::new(false),
        }
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

    /// Starts a session of `server` (its core session and its router), or
    /// refuses when the store is full.
    pub(super) fn create(
        self: &Arc<Self>,
        server: &Server,
        stop: &CancellationToken,
        caller: &Caller,
    ) -> Result<Arc<HttpSession>, Refused> {
        self.sweep();
        let id = session_id().ok_or(Refused::NoRandom)?;
        let mut map = self.map();
        if map.len() >= self.max {
            return Err(Refused::Full);
        }
        let (out, outbox) = mpsc::channel(OUTBOX);
        let (input, inbox) = mpsc::channel(INBOX);
        let stop = Arc::new(stop.child_token());
        let session = Session::over_http(server.inner(), Dialect::ModelContext, out, stop.clone());
        let http = Arc::new(HttpSession {
            id,
            input: Mutex::new(Some(input)),
            shared: Arc::downgrade(session.shared()),
            owner: caller.principal.as_deref().map(Owner::of),
            stop,
            routes: Mutex::new(Routes::default()),
            last_active: Mutex::new(Instant::now()),
        });
        map.insert(http.id.clone(), http.clone());
        drop(map);
        tokio::spawn(session.run(Inbox(inbox)));
        tokio::spawn(route(Arc::downgrade(&http), outbox));
        self.start_sweeper();
        Ok(http)
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
fn session_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    if let Err(e) = getrandom::fill(&mut bytes) {
        tracing::error!("the operating system's random source failed: {e}");
        return None;
    }
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Who a session belongs to.
#[derive(Debug, PartialEq, Eq)]
struct Owner {
    issuer: String,
    subject: Option<String>,
    client: Option<String>,
}

impl Owner {
    fn of(principal: &Principal) -> Self {
        let (issuer, subject, client) = principal.binding();
        Self {
            issuer: issuer.to_owned(),
            subject: subject.map(str::to_owned),
            client: client.map(str::to_owned),
        }
    }

    fn is(&self, principal: &Principal) -> bool {
        principal.binding()
            == (
                &*self.issuer,
                self.subject.as_deref(),
                self.client.as_deref(),
            )
    }
}

/// The core session's input: the messages POSTs hand over, each with its
/// POST's caller.
struct Inbox(mpsc::Receiver<(Input, Caller)>);

impl futures_core::Stream for Inbox {
    type Item = io::Result<(Input, Caller)>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx).map(|item| item.map(Ok))
    }
}

/// Puts every message the session writes on its stream, until the session
/// ends (every sender of `outbox` is gone).
async fn route(session: Weak<HttpSession>, mut outbox: mpsc::Receiver<Outgoing>) {
    while let Some(message) = outbox.recv().await {
        let Some(session) = session.upgrade() else {
            continue; // ended: messages go nowhere until the core session stops
        };
        let Outgoing { bytes, about } = message;
        match about {
            About::Reply(id) => {
                let route = session.routes().requests.remove(&id);
                match route {
                    Some(Route::Waiting(first)) => {
                        let _ = first.send(First::Reply(bytes));
                    }
                    Some(Route::Streaming(stream)) => {
                        let _ = stream.send(bytes).await;
                    }
                    None => tracing::debug!(%id, "a reply whose POST is gone was dropped"),
                }
            }
            About::Refused(id, needed) => {
                let route = session.routes().requests.remove(&id);
                match route {
                    Some(Route::Waiting(first)) => {
                        let _ = first.send(First::Refused(bytes, needed));
                    }
                    Some(Route::Streaming(stream)) => {
                        let _ = stream.send(bytes).await;
                    }
                    None => tracing::debug!(%id, "a reply whose POST is gone was dropped"),
                }
            }
            About::Unanswered(id) => {
                let route = session.routes().requests.remove(&id);
                if let Some(Route::Waiting(first)) = route {
                    let _ = first.send(First::Unanswered);
                }
            }
            About::CausedBy(_) if session.get_is_open() => to_get_stream(&session, bytes),
            About::Related(id) | About::CausedBy(id) => {
                let stream = {
                    let mut routes = session.routes();
                    match routes.requests.remove(&id) {
                        Some(Route::Waiting(first)) => {
                            let (stream, events) = mpsc::channel(STREAM_BACKLOG);
                            if first.send(First::Stream(bytes, events)).is_ok() {
                                routes.requests.insert(id, Route::Streaming(stream));
                            }
                            continue;
                        }
                        Some(Route::Streaming(stream)) => {
                            routes.requests.insert(id, Route::Streaming(stream.clone()));
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

/// Sends a message on the `GET` stream, or drops it when none is open (or
/// its client reads too slowly).
fn to_get_stream(session: &HttpSession, bytes: Vec<u8>) {
    let get = session.routes().get.clone();
    match get {
        Some(get) => {
            if get.try_send(bytes).is_err() {
                tracing::debug!("no room on the GET stream; a message was dropped");
            }
        }
        None => tracing::debug!("no GET stream open; a message was dropped"),
    }
}
