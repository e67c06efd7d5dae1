//! A 2026-07-28 `subscriptions/listen` stream: its acknowledgement first,
//! then every change the filter opts in to, each tagged with the stream's
//! id ([`Listener`]), until the client closes the stream (HTTP) or cancels
//! the request (stdio), or the server shuts down, which ends it with its
//! result.
//!
//! A stream that asks for tasks' `notifications/tasks` has a watcher
//! ([`watch_tasks`]): it reads the tasks first (the acknowledgement names
//! those the caller may see), sends each one's state, then each new state
//! the store announces, from whichever process saved it, until the task
//! ends. It re-reads what it watches every 2 s too, so a task
//! whose process died reads, and is sent, as failed.
//!
//! A transport runs it one of two ways: over HTTP the response body reads
//! the [`Listener`] itself (no session, no task: an idle stream costs its
//! connection and little more); in a session (stdio) it is a request's
//! work, written to the session's output like any other ([`listen`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::sync::broadcast;

use super::bounded::{BoundedReceiver, BoundedSender};
use super::outbox::{About, Outgoing};
use super::shared::Shared;
use crate::dialect::{Filter, Listing, ServerInner};
use crate::engine::Done;
use crate::handle::{Push, PushRegistration};
use crate::jsonrpc::RequestId;
use crate::task::{TaskState, TaskStore};

/// How often a watcher re-reads the tasks it watches, whatever it hears:
/// a dead process's task reads as failed some 5 s after the death (its
/// liveness key's time), so a watcher sends that within 7 s, and the
/// rule is 10.
const REREAD: Duration = Duration::from_secs(2);

/// A `subscriptions/listen` request, dispatched and admitted: the
/// transport runs it as a [`Listener`] or as a job
/// ([`Job::listening`](super::job::Job::listening)).
pub(crate) struct Listening {
    pub(crate) id: RequestId,
    pub(crate) filter: Filter,
    /// The items it was dispatched with (a job keeps them).
    pub(crate) listing: Arc<Listing>,
    /// When it was read, if trace is on.
    pub(crate) started: Option<Instant>,
}

impl Listening {
    /// The stream on its own, registered for `server`'s changes now.
    #[cfg(feature = "http")]
    pub(crate) fn into_listener(self, server: &Arc<ServerInner>) -> Listener {
        Listener::new(server, self.id, self.filter, &self.listing)
    }
}

/// A listen stream's messages, in order: [`poll_next`](Self::poll_next)
/// gives its acknowledgement, then each change its filter wants; it is
/// registered from the moment it is made, so no change after that is
/// missed, and dropping it unregisters it.
pub(crate) struct Listener {
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    server: Arc<ServerInner>,
    id: RequestId,
    filter: Filter,
    acknowledged: bool,
    /// The changes taken from the queue and not yet given out.
    taken: std::vec::IntoIter<Push>,
    registration: PushRegistration,
    /// The task watcher's messages (its acknowledgement first), while it
    /// watches; dropping it stops the watcher.
    tasks: Option<BoundedReceiver<Vec<u8>>>,
}

impl Listener {
    /// Stream `id` with `filter`, registered for `server`'s changes, its
    /// tasks' watcher started (on the current runtime) if it asked for
    /// tasks.
    pub(crate) fn new(
        server: &Arc<ServerInner>,
        id: RequestId,
        filter: Filter,
        listing: &Arc<Listing>,
    ) -> Self {
        let (registration, _queue) = server.handle.registry().register();
        let tasks = match tokio::runtime::Handle::try_current() {
            Ok(runtime) if !filter.tasks.is_empty() => {
                // (A task's state can be large: its questions, its result.)
                let (tx, rx) = super::bounded::channel(8, server.limits.max_queued_output);
                let store = Arc::clone(&server.tasks.store);
                let watcher = watch_tasks(store, listing.clone(), id.clone(), filter.clone(), tx);
                runtime.spawn(watcher);
                Some(rx)
            }
            _ => None,
        };
        Self {
            server: server.clone(),
            id,
            filter,
            acknowledged: false,
            taken: Vec::new().into_iter(),
            registration,
            tasks,
        }
    }

    /// The stream's request id.
    pub(crate) fn id(&self) -> &RequestId {
        &self.id
    }

    /// The next message: the acknowledgement at once, then a change's
    /// notification when one the filter wants comes. What it has taken
    /// from the queue stays here between polls: a poll dropped midway
    /// loses nothing.
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Vec<u8>> {
        if !self.acknowledged {
            // (A watcher's first message is the acknowledgement.)
            if let Some(watcher) = &mut self.tasks {
                match watcher.poll_recv(cx) {
                    Poll::Ready(Some(acknowledgement)) => {
                        self.acknowledged = true;
                        return Poll::Ready(acknowledgement);
                    }
                    Poll::Ready(None) => self.tasks = None,
                    Poll::Pending => return Poll::Pending,
                }
            }
            self.acknowledged = true;
            return Poll::Ready(self.filter.acknowledged(&self.id));
        }
        if let Some(watcher) = &mut self.tasks {
            match watcher.poll_recv(cx) {
                Poll::Ready(Some(state)) => return Poll::Ready(state),
                Poll::Ready(None) => self.tasks = None,
                Poll::Pending => {}
            }
        }
        loop {
            if let Some(change) = self.taken.find(|change| self.filter.wants(change)) {
                return Poll::Ready(Filter::pushed(&self.id, &change));
            }
            match self.registration.queue().poll_next_batch(cx) {
                Poll::Ready(Some(batch)) => self.taken = batch.into_iter(),
                // (Its queue closes only when its registration is dropped,
                // which this holds.)
                Poll::Ready(None) | Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// The next message, as [`poll_next`](Self::poll_next) gives it.
    pub(crate) async fn next(&mut self) -> Vec<u8> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }

    /// The messages that end the stream gracefully: its result, after
    /// its acknowledgement if that has not gone out yet (the stream always
    /// begins with it).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn end(&mut self) -> Vec<Vec<u8>> {
        let mut last = Vec::with_capacity(2);
        if !self.acknowledged {
            self.acknowledged = true;
            last.push(self.filter.acknowledged(&self.id));
        }
        last.push(Filter::ended(&self.server, &self.id).bytes);
        last
    }
}

/// Watches `filter`'s tasks for stream `id`, sending on `tx`: the
/// acknowledgement (naming the tasks the caller may see), each task's
/// state, then each new state, until every watched task has ended or the
/// stream is gone.
async fn watch_tasks(
    store: Arc<dyn TaskStore>,
    listing: Arc<Listing>,
    id: RequestId,
    filter: Filter,
    tx: BoundedSender<Vec<u8>>,
) {
    // Heard from before the first read: no state saved after it is missed.
    let mut changes = store.changes();
    // Each watched task's last state told, as its fingerprint (`None`:
    // none yet). The stream keeps no state itself: one can be large (its
    // questions, its result), and is read again when it is told.
    let mut watched: HashMap<String, Option<u64>> = HashMap::new();
    for task_id in &filter.tasks {
        match store.get(task_id).await {
            Ok(Some(task)) if filter.may_watch(&listing, &task) => {
                watched.insert(task_id.clone(), None);
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("a listen stream cannot read task {task_id}: {e}"),
        }
    }
    let agreed: Vec<String> = (filter.tasks.iter())
        .filter(|t| watched.contains_key(*t))
        .cloned()
        .collect();
    let acknowledgement = {
        let agreed: Vec<&str> = agreed.iter().map(String::as_str).collect();
        filter.acknowledged_watching(&id, &agreed)
    };
    if tx.send(acknowledgement).await.is_err() {
        return;
    }
    for task_id in agreed {
        if tell(&*store, &id, &tx, &mut watched, task_id)
            .await
            .is_err()
        {
            return;
        }
    }
    let mut reread = tokio::time::interval_at(tokio::time::Instant::now() + REREAD, REREAD);
    while !watched.is_empty() {
        let due: Vec<String> = tokio::select! {
            () = tx.closed() => return,
            heard = changes.recv() => match heard {
                Ok(task_id) if watched.contains_key(&*task_id) => vec![task_id.to_string()],
                Ok(_) => continue,
                Err(broadcast::error::RecvError::Lagged(_)) => watched.keys().cloned().collect(),
                // (The store, which this holds, keeps the sender.)
                Err(broadcast::error::RecvError::Closed) => return,
            },
            _ = reread.tick() => watched.keys().cloned().collect(),
        };
        for task_id in due {
            if tell(&*store, &id, &tx, &mut watched, task_id)
                .await
                .is_err()
            {
                return;
            }
        }
    }
}

/// Reads watched task `task_id` and tells stream `id` its state if it is
/// new; an ended or expired task is watched no more. `Err`: the stream is
/// gone.
async fn tell(
    store: &dyn TaskStore,
    id: &RequestId,
    tx: &BoundedSender<Vec<u8>>,
    watched: &mut HashMap<String, Option<u64>>,
    task_id: String,
) -> Result<(), ()> {
    match store.get(&task_id).await {
        Ok(Some(task)) => {
            let said = fingerprint(&task);
            if watched.get(&task_id) == Some(&Some(said)) {
                return Ok(());
            }
            tx.send(Filter::task_pushed(id, &task))
                .await
                .map_err(|_| ())?;
            if task.status.is_terminal() {
                watched.remove(&task_id);
            } else {
                watched.insert(task_id, Some(said));
            }
        }
        // (Expired: there is nothing more to hear of it.)
        Ok(None) => {
            watched.remove(&task_id);
        }
        Err(e) => tracing::warn!("a listen stream cannot read task {task_id}: {e}"),
    }
    Ok(())
}

/// A task's stored state in 64 bits (keyed at random per process): a
/// watched task is told again only when it differs, and a stream keeps no
/// copy of a state, which can be large (its questions, its result).
/// The state's JSON text is hashed as it is written, never held whole.
fn fingerprint(task: &TaskState) -> u64 {
    use std::hash::{BuildHasher, Hasher, RandomState};
    /// Feeds what serde_json writes to a hasher.
    struct Hashing<H>(H);
    impl<H: Hasher> std::io::Write for Hashing<H> {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.write(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    static KEYS: std::sync::OnceLock<RandomState> = std::sync::OnceLock::new();
    let mut hashing = Hashing(KEYS.get_or_init(RandomState::new).build_hasher());
    // (A state always serialises: its maps have string keys.)
    let _ = serde_json::to_writer(&mut hashing, task);
    hashing.0.finish()
}

/// The stream as a session request's work, on the request's own output:
/// `Ok` when the server shut down or the session's input ended (its
/// graceful end, answered with its result).
pub(crate) async fn listen(
    shared: Arc<Shared>,
    listening: Listening,
) -> Result<Done, crate::engine::Failure> {
    let Listening {
        id,
        filter,
        listing,
        ..
    } = listening;
    let mut listener = Listener::new(&shared.server, id, filter, &listing);
    let about = |listener: &Listener| About::Related(listener.id().clone());
    // The acknowledgement goes out whatever comes next.
    let bytes = listener.next().await;
    shared
        .send(Outgoing {
            bytes,
            about: about(&listener),
        })
        .await;
    let stop = shared.server.handle.stop_token().clone();
    loop {
        let bytes = tokio::select! {
            bytes = listener.next() => bytes,
            () = stop.cancelled() => break,
            () = shared.streams_end.cancelled() => break,
        };
        shared
            .send(Outgoing {
                bytes,
                about: about(&listener),
            })
            .await;
    }
    Ok(Done::SubscriptionEnded)
}
