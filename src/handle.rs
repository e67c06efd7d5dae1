//! The [`ServerHandle`]: a server's state values, its shutdown signal, its
//! items' edits at run time, and the registry of change queues that
//! announcements fill: one for each ready session and each 2026-07-28
//! listen stream. Each queue's one reader (the session layer's `push`
//! forwarder, or a listen stream's `Listener`) drains it and encodes what it
//! finds in its own dialect; nothing here knows a dialect or an output.
//!
//! A session's queue coalesces: a change already waiting to be sent is not
//! queued twice, so a client that reads slowly gets one notification per
//! resource or list, never an unbounded backlog.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::task::{Context, Poll, Waker};

use tokio_util::sync::CancellationToken;

use crate::error::BuildError;

pub(crate) use crate::bus::ListKind;
use crate::bus::{Bus, BusMessage, Delivery, Inbox, LocalBus};

/// A change announced to sessions: one resource's content, or a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Push {
    /// The content of the resource with this URI (mcpId) changed.
    Updated(Arc<str>),
    /// The items of a list changed.
    ListChanged(ListKind),
}

/// The built server, as the handle sees it (weakly: the server holds
/// the handle). Implemented a layer up, so that the handle knows nothing
/// of how items are compiled; edits reach it (downcast) through the
/// handle's `served`.
pub(crate) trait Served: Send + Sync + std::any::Any {
    /// Whether the server lists a resource with this URI (mcpId).
    fn lists_resource(&self, uri: &str) -> bool;
    /// The URIs of the resources the server lists.
    fn resource_uris(&self) -> Vec<String>;
    /// Gives resource `uri` the content another process set: whether the
    /// server lists it (then the change is announced, as the process that
    /// set it announced it, even when the content is the same).
    fn mirror(&self, uri: &str, content: &str) -> bool;
    /// The server, to downcast.
    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync>;
}

/// What the transport that holds Streamable HTTP sessions hears of the
/// other processes' sessions (implemented a layer up, by the HTTP
/// endpoint's session store).
pub(crate) trait SessionEvents: Send + Sync {
    /// Session `id`'s saved state changed.
    fn changed(&self, id: &str);
    /// Session `id`'s client set its log level.
    fn log_level_changed(&self, id: &str, level: crate::client::LogLevel);
    /// Session `id` subscribed to `uri` (`on`) or unsubscribed.
    fn subscription_changed(&self, id: &str, uri: &str, on: bool);
    /// Session `id` ended.
    fn ended(&self, id: &str);
    /// A client's response in session `session`, for whichever copy sent
    /// the request.
    fn client_response(&self, session: &str, message: &str);
    /// Announcements may have been lost: every session's saved state is
    /// read again.
    fn gap(&self);
}

/// A cloneable handle to a server, for announcing changes to every ready
/// session — from inside a tool ([`ToolContext::server`](crate::ToolContext::server))
/// or from anywhere else in the program ([`Server::handle`](crate::Server::handle)).
///
/// Cloning it costs one reference count: a tool call's context holds one.
#[derive(Clone)]
pub struct ServerHandle(Arc<HandleParts>);

struct HandleParts {
    registry: Arc<PushRegistry>,
    stop: Arc<CancellationToken>,
    states: crate::state::SharedStates,
    /// The built server (weak: the server holds this handle).
    served: OnceLock<Weak<dyn Served>>,
    /// How announcements reach the deployment's other processes.
    bus: OnceLock<Arc<dyn Bus>>,
    /// The HTTP endpoints' session stores, told of other processes'
    /// sessions.
    session_events: Mutex<Vec<Weak<dyn SessionEvents>>>,
}

impl fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerHandle")
            .field("sessions", &self.0.registry.session_count())
            .finish()
    }
}

impl ServerHandle {
    pub(crate) fn new() -> Self {
        Self(Arc::new(HandleParts {
            registry: Arc::new(PushRegistry::default()),
            stop: Arc::new(CancellationToken::new()),
            states: Arc::default(),
            served: OnceLock::new(),
            bus: OnceLock::new(),
            session_events: Mutex::default(),
        }))
    }

    /// The bus, once the server is built.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn bus(&self) -> Option<&Arc<dyn Bus>> {
        self.0.bus.get()
    }

    /// Lets an HTTP endpoint's session store hear of other processes'
    /// sessions (while it lives).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn add_session_events(&self, events: Weak<dyn SessionEvents>) {
        let mut all = (self.0.session_events.lock()).unwrap_or_else(PoisonError::into_inner);
        all.retain(|e| e.strong_count() > 0);
        all.push(events);
    }

    /// Sets the bus (before the server is built; the first one set stays).
    pub(crate) fn set_bus(&self, bus: Arc<dyn Bus>) {
        let _ = self.0.bus.set(bus);
    }

    /// Starts the bus's deliveries into this handle (when the server is
    /// built).
    pub(crate) fn start_bus(&self) {
        let bus = self.0.bus.get_or_init(|| Arc::new(LocalBus));
        bus.start(Inbox::new(Arc::new(Delivered(Arc::downgrade(&self.0)))));
    }

    /// Hands `message` to the other processes.
    pub(crate) fn publish(&self, message: BusMessage) {
        if let Some(bus) = self.0.bus.get() {
            bus.publish(message);
        }
    }

    /// Announces that a [`SharedResource`](crate::SharedResource)'s content
    /// changed to `content`: here as [`resource_changed`](Self::resource_changed)
    /// does, and to the other processes with the content.
    pub(crate) fn content_changed(&self, mcp_id: &str, content: &str) {
        if self.announce_update(mcp_id) {
            self.publish(BusMessage::ResourceContent {
                uri: mcp_id.to_owned(),
                content: content.to_owned(),
            });
        }
    }

    /// Ties the handle to the server built with it.
    pub(crate) fn set_served(&self, served: Weak<dyn Served>) {
        let _ = self.0.served.set(served);
    }

    /// The server built with this handle, while it lives.
    pub(crate) fn served(&self) -> Result<Arc<dyn Served>, BuildError> {
        self.0
            .served
            .get()
            .and_then(Weak::upgrade)
            .ok_or(BuildError::NotBuilt)
    }

    /// Queues a list's change for every ready session, and tells the
    /// other processes.
    pub(crate) fn announce_list(&self, list: ListKind) {
        self.0.registry.broadcast(&Push::ListChanged(list), None);
        self.publish(BusMessage::ListChanged { list });
    }

    /// The state value of type `S` registered with
    /// [`ServerBuilder::state`](crate::ServerBuilder::state), if any.
    pub fn state<S: Send + Sync + 'static>(&self) -> Option<&S> {
        self.0.states.get::<S>()
    }

    pub(crate) fn states(&self) -> &crate::state::States {
        &self.0.states
    }

    /// Begins shutting down every session of the server, on every transport:
    /// requests that arrive from now on are refused (`-32005` in MCP v1.0,
    /// `-32603` with `data` "server shutting down" in the Model Context
    /// Protocol),
    /// requests in flight get the grace period
    /// ([`ServerBuilder::shutdown_grace`](crate::ServerBuilder::shutdown_grace))
    /// to finish (then they are stopped and answered the same way), and
    /// each session ends once every reply is written.
    pub fn shutdown(&self) {
        self.0.stop.cancel();
    }

    /// A future that waits for `signal`, then begins the shutdown
    /// ([`shutdown`](Self::shutdown)): for a host app's own graceful
    /// shutdown, so that this server's streams end with its connections.
    ///
    /// ```no_run
    /// # async fn app(server: clawmcp::Server, listener: tokio::net::TcpListener, router: axum::Router) {
    /// axum::serve(listener, router)
    ///     .with_graceful_shutdown(server.handle().shutdown_on(async {
    ///         let _ = tokio::signal::ctrl_c().await;
    ///     }))
    ///     .await
    ///     .unwrap();
    /// # }
    /// ```
    pub fn shutdown_on(
        &self,
        signal: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let handle = self.clone();
        async move {
            signal.await;
            handle.shutdown();
        }
    }

    /// Whether [`shutdown`](Self::shutdown) was called.
    pub fn is_shutting_down(&self) -> bool {
        self.0.stop.is_cancelled()
    }

    /// A token that is cancelled when the server shuts down.
    pub(crate) fn stop_token(&self) -> &Arc<CancellationToken> {
        &self.0.stop
    }

    pub(crate) fn registry(&self) -> &Arc<PushRegistry> {
        &self.0.registry
    }

    /// Announces that the content of resource `mcp_id` changed: every MCP
    /// v1.0 session past its handshake receives `mcp/resourceDidChange`,
    /// every Model Context Protocol session that subscribed to the URI
    /// receives `notifications/resources/updated`. Sessions still in their
    /// handshake get nothing (docs/mcp-v1.md §5). An id the server does not
    /// list is logged and ignored.
    pub fn resource_changed(&self, mcp_id: &str) {
        if self.announce_update(mcp_id) {
            self.publish(BusMessage::ResourceUpdated {
                uri: mcp_id.to_owned(),
            });
        }
    }

    /// Queues resource `mcp_id`'s update for this process's sessions:
    /// whether the server lists it.
    fn announce_update(&self, mcp_id: &str) -> bool {
        if let Ok(served) = self.served()
            && !served.lists_resource(mcp_id)
        {
            tracing::warn!(
                mcp_id,
                "resource_changed for a resource the server does not list"
            );
            return false;
        }
        let uri: Arc<str> = mcp_id.into();
        // Fired by a request of a session that captures what its requests
        // cause: that session hears of it on the request's own stream.
        let causing = CAUSE
            .try_with(|cause| {
                cause.capture(&uri);
                cause.session
            })
            .ok()
            .flatten();
        self.0.registry.broadcast(&Push::Updated(uri), causing);
        true
    }

    /// How many sessions currently receive notifications, counting each
    /// open 2026-07-28 `subscriptions/listen` stream as one.
    pub fn ready_sessions(&self) -> usize {
        self.0.registry.session_count()
    }
}

/// Delivers the other processes' announcements to this process's
/// sessions (weakly: the bus that holds it is the handle's).
struct Delivered(Weak<HandleParts>);

impl Delivery for Delivered {
    fn deliver(&self, message: BusMessage) {
        let Some(parts) = self.0.upgrade() else {
            return;
        };
        let served = parts.served.get().and_then(Weak::upgrade);
        let sessions = || {
            let all = (parts.session_events.lock()).unwrap_or_else(PoisonError::into_inner);
            all.iter().filter_map(Weak::upgrade).collect::<Vec<_>>()
        };
        let change = match message {
            BusMessage::SessionChanged { id } => {
                sessions().iter().for_each(|s| s.changed(&id));
                return;
            }
            BusMessage::LogLevelChanged { session, level } => {
                sessions()
                    .iter()
                    .for_each(|s| s.log_level_changed(&session, level));
                return;
            }
            BusMessage::SubscriptionChanged { session, uri, on } => {
                sessions()
                    .iter()
                    .for_each(|s| s.subscription_changed(&session, &uri, on));
                return;
            }
            BusMessage::SessionEnded { id } => {
                sessions().iter().for_each(|s| s.ended(&id));
                return;
            }
            BusMessage::ClientResponse { session, message } => {
                sessions()
                    .iter()
                    .for_each(|s| s.client_response(&session, &message));
                return;
            }
            BusMessage::ResourceUpdated { uri } => {
                if !served.is_some_and(|s| s.lists_resource(&uri)) {
                    return;
                }
                Push::Updated(uri.into())
            }
            BusMessage::ResourceContent { uri, content } => {
                if !served.is_some_and(|s| s.mirror(&uri, &content)) {
                    return;
                }
                Push::Updated(uri.into())
            }
            BusMessage::ListChanged { list } => Push::ListChanged(list),
        };
        parts.registry.broadcast(&change, None);
    }

    fn gap(&self) {
        let Some(parts) = self.0.upgrade() else {
            return;
        };
        let sessions: Vec<_> = {
            let all = (parts.session_events.lock()).unwrap_or_else(PoisonError::into_inner);
            all.iter().filter_map(Weak::upgrade).collect()
        };
        sessions.iter().for_each(|s| s.gap());
        for list in [ListKind::Tools, ListKind::Prompts, ListKind::Resources] {
            parts.registry.broadcast(&Push::ListChanged(list), None);
        }
        let uris = (parts.served.get().and_then(Weak::upgrade)).map(|s| s.resource_uris());
        for uri in uris.unwrap_or_default() {
            parts.registry.broadcast(&Push::Updated(uri.into()), None);
        }
    }
}

/// Every ready session's and listen stream's queue, by registration
/// number.
#[derive(Default)]
pub(crate) struct PushRegistry {
    sessions: Mutex<HashMap<u64, Arc<PushQueue>>>,
    next_session: AtomicU64,
}

impl PushRegistry {
    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<PushQueue>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn session_count(&self) -> usize {
        self.sessions().len()
    }

    /// Queues a change for every ready session but `skip`.
    fn broadcast(&self, change: &Push, skip: Option<u64>) {
        for (number, queue) in self.sessions().iter() {
            if Some(*number) != skip {
                queue.push(change);
            }
        }
    }

    /// Registers a session that became ready, or a listen stream: its
    /// queue, which the caller drains, and the guard that unregisters it.
    pub(crate) fn register(self: &Arc<Self>) -> (PushRegistration, Arc<PushQueue>) {
        let number = self.next_session.fetch_add(1, Ordering::Relaxed);
        let queue = Arc::new(PushQueue::default());
        self.sessions().insert(number, queue.clone());
        let registration = PushRegistration {
            registry: self.clone(),
            number,
            queue: queue.clone(),
        };
        (registration, queue)
    }
}

/// A ready session's (or listen stream's) pending changes, and the waker
/// of its one reader.
#[derive(Default)]
pub(crate) struct PushQueue {
    state: Mutex<QueueState>,
    closed: AtomicBool,
}

/// What a [`PushQueue`] holds under its lock: a change and the reader's
/// waker are never seen apart, so no change is missed between a reader's
/// look and its sleep.
#[derive(Default)]
struct QueueState {
    pending: Vec<Push>,
    reader: Option<Waker>,
}

impl PushQueue {
    /// Waits for a change, then takes every pending one; `None` once the
    /// session was unregistered and nothing is left.
    pub(crate) async fn next_batch(&self) -> Option<Vec<Push>> {
        std::future::poll_fn(|cx| self.poll_next_batch(cx)).await
    }

    /// [`next_batch`](Self::next_batch) as a poll: each queue has one
    /// reader, whose waker the latest poll leaves.
    pub(crate) fn poll_next_batch(&self, cx: &mut Context<'_>) -> Poll<Option<Vec<Push>>> {
        let mut state = self.state();
        if !state.pending.is_empty() {
            return Poll::Ready(Some(std::mem::take(&mut state.pending)));
        }
        if self.closed.load(Ordering::Acquire) {
            return Poll::Ready(None);
        }
        match &mut state.reader {
            Some(waker) => waker.clone_from(cx.waker()),
            reader => *reader = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    fn state(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, change: &Push) {
        let mut state = self.state();
        if !state.pending.contains(change) {
            state.pending.push(change.clone());
        }
        let reader = state.reader.take();
        drop(state);
        reader.into_iter().for_each(Waker::wake);
    }

    /// Ends the queue: its reader sees the end once the rest is taken.
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let reader = self.state().reader.take();
        reader.into_iter().for_each(Waker::wake);
    }
}

tokio::task_local! {
    /// The request whose work is running (Model Context Protocol sessions
    /// with subscriptions): the changes it fires are captured for its reply.
    static CAUSE: Arc<Cause>;
}

/// What a running request caused (docs/model-context.md §5: a notification caused
/// by a request goes on that request's stream when no `GET` stream is open).
#[derive(Debug, Default)]
pub(crate) struct Cause {
    /// The push number of the request's session, once it is ready.
    session: Option<u64>,
    changed: Mutex<Vec<Arc<str>>>,
}

impl Cause {
    pub(crate) fn new(session: Option<u64>) -> Arc<Self> {
        Arc::new(Self {
            session,
            changed: Mutex::default(),
        })
    }

    fn capture(&self, uri: &Arc<str>) {
        let mut changed = self.changed.lock().unwrap_or_else(PoisonError::into_inner);
        if !changed.iter().any(|u| **u == **uri) {
            changed.push(uri.clone());
        }
    }

    /// The changes captured so far.
    pub(crate) fn take(&self) -> Vec<Arc<str>> {
        std::mem::take(&mut *self.changed.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Runs `work` with its changes captured here.
    pub(crate) fn scope<F: std::future::Future>(
        self: &Arc<Self>,
        work: F,
    ) -> tokio::task::futures::TaskLocalFuture<Arc<Cause>, F> {
        CAUSE.scope(self.clone(), work)
    }
}

/// Keeps a session or listen stream registered for notifications;
/// dropping it unregisters it and closes its queue: a session's forwarder
/// then sends what is queued and stops (a listen stream's listener, which
/// holds it, is gone with it).
pub(crate) struct PushRegistration {
    registry: Arc<PushRegistry>,
    number: u64,
    queue: Arc<PushQueue>,
}

impl PushRegistration {
    /// The session's number in the registry.
    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// The queue it registered.
    pub(crate) fn queue(&self) -> &PushQueue {
        &self.queue
    }
}

impl Drop for PushRegistration {
    fn drop(&mut self) {
        self.registry.sessions().remove(&self.number);
        self.queue.close();
    }
}
