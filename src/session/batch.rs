//! A batch's replies (a JSON array of messages, MCP v1.0 and the
//! 2025-03-26 revision): gathered as its members finish, bounded in bytes,
//! and sent as one array once the last is done.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::mpsc;

use super::outbox::Handled;
use super::shared::Shared;
use crate::dialect::Dialect;
use crate::jsonrpc::{RequestId, encode_batch};

/// The bytes of one batch's replies, bounded by the session's
/// `max_queued_output`: a small batch of reads of a large item would
/// otherwise make a reply of gigabytes. Past the bound a member not yet
/// started does not run, and one that finishes gets an error in place
/// of its reply; the first reply passes whatever its size, as a message
/// alone does. Members run concurrently: "later" is in the order they
/// start and finish, not in the batch's array.
struct BatchBudget {
    dialect: Dialect,
    most: usize,
    held: AtomicUsize,
}

impl BatchBudget {
    /// The reply of a member not served because the batch's replies have
    /// passed the bound, or `None` while there is room.
    fn refused(&self, id: &RequestId) -> Option<Handled> {
        if self.held.load(Ordering::Acquire) < self.most {
            return None;
        }
        let error = self.dialect.batch_over(self.most, false);
        Some(Handled::reply(
            id.clone(),
            Some(self.dialect.error(Some(id), &error)),
        ))
    }

    /// Counts a finished member's reply, or puts an error in its place
    /// when it would take the batch's replies past the bound.
    fn count(&self, mut handled: Handled) -> Handled {
        let Some(reply) = &handled.reply else {
            return handled;
        };
        let size = reply.bytes.len();
        let room = |held: usize| {
            (held == 0 || held.saturating_add(size) <= self.most).then(|| held.saturating_add(size))
        };
        if self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, room)
            .is_ok()
        {
            return handled;
        }
        // Full: the members not yet served do not run.
        self.held.fetch_max(self.most, Ordering::AcqRel);
        let error = self.dialect.batch_over(self.most, true);
        handled.reply = Some(self.dialect.error(Some(&handled.id), &error));
        handled
    }
}

/// Where a batch's members hand their replies: counted against the
/// batch's bound as they come, then gathered by [`collect_batch`].
#[derive(Clone)]
pub(super) struct BatchReplies {
    tx: mpsc::Sender<Handled>,
    budget: Arc<BatchBudget>,
}

impl BatchReplies {
    /// Replies for `members` requests of a session's batch, gathered by
    /// the receiver.
    pub(super) fn new(shared: &Shared, members: usize) -> (Self, mpsc::Receiver<Handled>) {
        let (tx, rx) = mpsc::channel(members.max(1));
        let budget = Arc::new(BatchBudget {
            dialect: shared.dialect,
            most: shared.server.limits.max_queued_output,
            held: AtomicUsize::new(0),
        });
        (Self { tx, budget }, rx)
    }

    /// The reply of a member not to be served, the batch's replies having
    /// passed the bound; `None` while there is room.
    pub(super) fn refused(&self, id: &RequestId) -> Option<Handled> {
        self.budget.refused(id)
    }

    /// A member's reply, counted; see [`send`](Self::send).
    pub(super) fn count(&self, handled: Handled) -> Handled {
        self.budget.count(handled)
    }

    /// Hands a member's reply in, counted, without waiting.
    pub(super) fn hand_in(&self, handled: Handled) {
        self.put(self.count(handled));
    }

    /// Hands in, uncounted, the reply of a member that did not run (refused
    /// past the bound, cancelled while parked, or at shutdown), without
    /// waiting.
    pub(super) fn hand_in_unrun(&self, handled: Handled) {
        self.put(handled);
    }

    /// There is room for every member's one reply; were there none, it
    /// would wait for room in a task rather than be lost.
    fn put(&self, handled: Handled) {
        if let Err(mpsc::error::TrySendError::Full(handled)) = self.tx.try_send(handled) {
            let tx = self.tx.clone();
            tokio::spawn(async move {
                let _ = tx.send(handled).await;
            });
        }
    }

    /// Hands a member's reply in, counted.
    pub(super) async fn send(&self, handled: Handled) {
        let _ = self.tx.send(self.count(handled)).await;
    }
}

/// Gathers the replies of a batch's requests and writes them as one array
/// once every request is answered (every sender of `replies` is gone).
/// Once gathered, the array counts as unsent ([`Shared::unsent_batch`])
/// until the outbox has it: the reader reads no more meanwhile.
pub(super) async fn collect_batch(
    shared: Arc<Shared>,
    mut done: Vec<Handled>,
    mut replies: mpsc::Receiver<Handled>,
) {
    while let Some(handled) = replies.recv().await {
        done.push(handled);
    }
    if !done.is_empty() {
        let _unsent = shared.unsent_batch();
        send_batch(&shared, done).await;
    }
}

/// Writes the changes a batch's requests caused (a subscribed session
/// hears its own changes from them, before their replies), its replies as
/// one array, then their trace lines.
pub(super) async fn send_batch(shared: &Shared, mut done: Vec<Handled>) {
    for caused in (done.iter_mut()).flat_map(|h| std::mem::take(&mut h.caused)) {
        shared.send_unrelated(caused).await;
    }
    let replies: Vec<Vec<u8>> = (done.iter_mut())
        .filter_map(|h| h.reply.take().map(|r| r.bytes))
        .collect();
    if !replies.is_empty() {
        shared.send_unrelated(encode_batch(&replies)).await;
    }
    for trace in done.into_iter().filter_map(|h| h.trace) {
        shared.send_unrelated(trace).await;
    }
}
