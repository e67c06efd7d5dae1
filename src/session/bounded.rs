//! A channel bounded twice: by how many messages wait in it, and by how
//! many bytes they hold. A client that reads nothing holds at most the
//! byte bound of a session's output (and one message past it: a message
//! larger than the bound passes alone), whatever the size of each message,
//! and the senders wait, so the session reads no more input.

use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::sync::mpsc::{self, error::SendError, error::TryRecvError, error::TrySendError};
use tokio::sync::{AcquireError, Semaphore, SemaphorePermit, TryAcquireError};

/// What a message weighs against the byte bound: its length.
pub(crate) trait Weighed {
    /// Its size in bytes.
    fn weight(&self) -> usize;
}

impl Weighed for Vec<u8> {
    fn weight(&self) -> usize {
        self.len()
    }
}

/// The bytes that wait in a queue, shared by its ends: a semaphore of
/// bytes, so that senders waiting for room are served in order (a small
/// message never passes a large one that waits), and a message weighs at
/// most the whole bound (a larger one passes alone). What a sender takes
/// it forgets; the reader gives it back as it takes the message.
#[derive(Debug)]
pub(crate) struct Budget {
    bytes: Semaphore,
    /// The bound, in bytes (as many permits as a semaphore holds at most).
    most: usize,
}

impl Budget {
    /// A budget of `bytes` (at least 1).
    pub(crate) fn new(bytes: usize) -> Self {
        let most = bytes.clamp(1, (u32::MAX as usize).min(Semaphore::MAX_PERMITS));
        Self {
            bytes: Semaphore::new(most),
            most,
        }
    }

    /// The permits a message of `weight` bytes takes.
    fn permits(&self, weight: usize) -> u32 {
        u32::try_from(weight.min(self.most)).unwrap_or(u32::MAX)
    }

    /// Room for `weight` bytes now, if no sender waits before it.
    pub(crate) fn try_take(&self, weight: usize) -> Result<SemaphorePermit<'_>, TryAcquireError> {
        self.bytes.try_acquire_many(self.permits(weight))
    }

    /// Room for `weight` bytes, in order with the senders that wait;
    /// `Err` once the budget is closed.
    pub(crate) async fn take(&self, weight: usize) -> Result<SemaphorePermit<'_>, AcquireError> {
        self.bytes.acquire_many(self.permits(weight)).await
    }

    /// Gives back `permits`: what messages took (by [`taken`](Self::taken),
    /// or a forgotten permit's count).
    pub(crate) fn give_back(&self, permits: usize) {
        self.bytes.add_permits(permits);
    }

    /// What a message of `weight` bytes takes, to give back later.
    pub(crate) fn taken(&self, weight: usize) -> usize {
        self.permits(weight) as usize
    }

    /// Turns every sender away, those that wait too.
    pub(crate) fn close(&self) {
        self.bytes.close();
    }

    /// Bytes held by messages in the queue.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.most - self.bytes.available_permits()
    }
}

/// The sending end of [`channel`].
#[derive(Debug)]
pub(crate) struct BoundedSender<T> {
    channel: mpsc::Sender<T>,
    budget: Arc<Budget>,
}

impl<T> Clone for BoundedSender<T> {
    fn clone(&self) -> Self {
        Self {
            channel: self.channel.clone(),
            budget: self.budget.clone(),
        }
    }
}

/// The receiving end of [`channel`]; dropping it turns senders away.
#[derive(Debug)]
pub(crate) struct BoundedReceiver<T> {
    channel: mpsc::Receiver<T>,
    budget: Arc<Budget>,
}

impl<T> Drop for BoundedReceiver<T> {
    fn drop(&mut self) {
        self.budget.close();
    }
}

/// A channel in which at most `messages` messages of at most `bytes`
/// bytes wait (a larger message waits alone).
pub(crate) fn channel<T: Weighed>(
    messages: usize,
    bytes: usize,
) -> (BoundedSender<T>, BoundedReceiver<T>) {
    let (sender, receiver) = mpsc::channel(messages.max(1));
    let budget = Arc::new(Budget::new(bytes));
    (
        BoundedSender {
            channel: sender,
            budget: budget.clone(),
        },
        BoundedReceiver {
            channel: receiver,
            budget,
        },
    )
}

impl<T: Weighed> BoundedSender<T> {
    /// Hands `message` over if it fits and no sender waits before it;
    /// gives it back when it does not, or when the receiver is gone.
    pub(crate) fn try_send(&self, message: T) -> Result<(), TrySendError<T>> {
        let held = match self.budget.try_take(message.weight()) {
            Ok(held) => held,
            Err(TryAcquireError::NoPermits) => return Err(TrySendError::Full(message)),
            Err(TryAcquireError::Closed) => return Err(TrySendError::Closed(message)),
        };
        self.channel.try_send(message)?;
        // Given back by the receiver, as it takes the message.
        held.forget();
        Ok(())
    }

    /// Hands `message` over, waiting for room (in order with the other
    /// senders that wait); gives it back when the receiver is gone.
    /// Dropped while it waits, it holds nothing.
    pub(crate) async fn send(&self, message: T) -> Result<(), SendError<T>> {
        let Ok(held) = self.budget.take(message.weight()).await else {
            return Err(SendError(message));
        };
        let Ok(place) = self.channel.reserve().await else {
            return Err(SendError(message));
        };
        place.send(message);
        held.forget();
        Ok(())
    }

    /// Completes when the receiver is gone.
    pub(crate) async fn closed(&self) {
        self.channel.closed().await;
    }

    /// Whether the receiver is gone.
    pub(crate) fn is_closed(&self) -> bool {
        self.channel.is_closed()
    }
}

impl<T: Weighed> BoundedReceiver<T> {
    /// The next message; `None` once every sender is gone and none waits.
    pub(crate) async fn recv(&mut self) -> Option<T> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// [`recv`](Self::recv) as a poll.
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.channel
            .poll_recv(cx)
            .map(|message| message.inspect(|m| self.give_back(m)))
    }

    /// The next message if one waits.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn try_recv(&mut self) -> Result<T, TryRecvError> {
        self.channel.try_recv().inspect(|m| self.give_back(m))
    }

    fn give_back(&self, message: &T) {
        self.budget.give_back(self.budget.taken(message.weight()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// `message` sent (waiting for room) on a task of its own: whether it
    /// was taken.
    fn sending(sender: &BoundedSender<Vec<u8>>, message: Vec<u8>) -> tokio::task::JoinHandle<bool> {
        let sender = sender.clone();
        tokio::spawn(async move { sender.send(message).await.is_ok() })
    }

    #[tokio::test]
    async fn what_waits_is_bounded_by_bytes_and_a_larger_message_passes_alone() {
        let (sender, mut receiver) = channel::<Vec<u8>>(100, 10);
        sender.try_send(vec![0; 6]).unwrap();
        assert!(
            matches!(sender.try_send(vec![0; 6]), Err(TrySendError::Full(_))),
            "12 bytes would wait, over 10"
        );
        sender.try_send(vec![0; 4]).unwrap();
        assert_eq!(receiver.recv().await.map(|m| m.len()), Some(6));
        assert_eq!(receiver.try_recv().map(|m| m.len()), Ok(4));
        sender.try_send(vec![0; 50]).unwrap();
        assert!(matches!(
            sender.try_send(vec![0; 1]),
            Err(TrySendError::Full(_))
        ));
        assert_eq!(receiver.recv().await.map(|m| m.len()), Some(50));
        sender.try_send(vec![0; 1]).unwrap();
    }

    #[tokio::test]
    async fn a_waiting_sender_goes_on_when_bytes_or_places_are_freed() {
        let (sender, mut receiver) = channel::<Vec<u8>>(2, 10);
        sender.try_send(vec![0; 8]).unwrap();
        let waiting = sending(&sender, vec![0; 8]);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "it waits for bytes");
        assert_eq!(receiver.recv().await.map(|m| m.len()), Some(8));
        assert!(waiting.await.unwrap(), "the freed bytes let it send");
        // Full by places, not bytes.
        sender.try_send(vec![]).unwrap();
        let waiting = sending(&sender, vec![1]);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "it waits for a place");
        assert_eq!(receiver.recv().await.map(|m| m.len()), Some(8));
        assert!(waiting.await.unwrap());
        drop(receiver);
        assert!(matches!(
            sender.try_send(vec![0]),
            Err(TrySendError::Closed(_))
        ));
        assert!(
            sender.send(vec![0]).await.is_err(),
            "a gone receiver refuses"
        );
    }

    #[tokio::test]
    async fn a_waiting_large_message_is_not_passed_by_small_ones() {
        let (sender, mut receiver) = channel::<Vec<u8>>(100, 10);
        sender.try_send(vec![0; 8]).unwrap();
        let large = sending(&sender, vec![1; 10]);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(
            matches!(sender.try_send(vec![2]), Err(TrySendError::Full(_))),
            "a small message waits behind the large one"
        );
        assert_eq!(receiver.recv().await.map(|m| m.len()), Some(8));
        assert!(large.await.unwrap());
        assert_eq!(receiver.recv().await.map(|m| m.len()), Some(10));
        sender.try_send(vec![2]).unwrap();
    }

    #[tokio::test]
    async fn many_senders_never_hold_more_than_the_bound_past_one_message() {
        let (sender, mut receiver) = channel::<Vec<u8>>(1000, 64);
        let senders: Vec<_> = (0..8)
            .map(|_| {
                let sender = sender.clone();
                tokio::spawn(async move {
                    for n in 0..200usize {
                        sender.send(vec![0; 1 + n % 40]).await.unwrap();
                    }
                })
            })
            .collect();
        drop(sender);
        let mut received = 0;
        while let Some(message) = receiver.recv().await {
            received += 1;
            assert!(receiver.budget.held() <= 64);
            drop(message);
            tokio::task::yield_now().await;
        }
        assert_eq!(received, 1600);
        for s in senders {
            s.await.unwrap();
        }
    }
}
