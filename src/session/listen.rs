//! A 2026-07-28 `subscriptions/listen` stream: its acknowledgement first,
//! then every change the filter opts in to, each tagged with the stream's
//! id ([`Listener`]), until the client closes the stream (HTTP) or cancels
//! the request (stdio), or the server shuts down, which ends it with its
//! result.
//!
//! A transport runs it one of two ways: over HTTP the response body reads
//! the [`Listener`] itself (no session, no task: an idle stream costs its
//! connection and little more); in a session (stdio) it is a request's
//! work, written to the session's output like any other ([`listen`]).

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use super::outbox::{About, Outgoing};
use super::shared::Shared;
use crate::dialect::{Filter, Listing, ServerInner};
use crate::engine::Done;
use crate::handle::{Push, Subscription};
use crate::jsonrpc::RequestId;

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
    pub(crate) fn into_listener(self, server: &Arc<ServerInner>) -> Listener {
        Listener::new(server, self.id, self.filter)
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
    subscription: Subscription,
}

impl Listener {
    /// Stream `id` with `filter`, registered for `server`'s changes.
    pub(crate) fn new(server: &Arc<ServerInner>, id: RequestId, filter: Filter) -> Self {
        let (subscription, _queue) = server.handle.registry().register();
        Self {
            server: server.clone(),
            id,
            filter,
            acknowledged: false,
            taken: Vec::new().into_iter(),
            subscription,
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
            self.acknowledged = true;
            return Poll::Ready(self.filter.acknowledged(&self.id));
        }
        loop {
            if let Some(change) = self.taken.find(|change| self.filter.wants(change)) {
                return Poll::Ready(Filter::pushed(&self.id, &change));
            }
            match self.subscription.queue().poll_next_batch(cx) {
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
        last.push(Filter::ended(&self.server, &self.id));
        last
    }
}

/// The stream as a session request's work, on the request's own output:
/// `Ok` when the server shut down or the session's input ended (its
/// graceful end, answered with its result).
pub(crate) async fn listen(
    shared: Arc<Shared>,
    id: RequestId,
    filter: Filter,
) -> Result<Done, crate::engine::Failure> {
    let mut listener = Listener::new(&shared.server, id, filter);
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
