//! A channel bounded twice: by how many messages wait in it, and by how
//! many bytes they hold. A client that reads nothing holds at most the
//! byte bound of a session's output (and one message past it: a message
//! larger than the bound passes alone), whatever the size of each message,
//! and the senders wait, so the session reads no more input.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use tokio::sync::Notify;
use tokio::sync::mpsc::{self, error::SendError, error::TryRecvError, error::TrySendError};

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

/// The bytes in a channel, shared by its ends.
#[derive(Debug)]
struct Budget {
    /// The most bytes that wait (more when a message alone weighs more).
    most: usize,
    held: AtomicUsize,
    /// A sender found no room since the receiver last freed some: it may
    /// be waiting.
    refused: AtomicBool,
    freed: Notify,
}

impl Budget {
    /// Takes `weight` bytes if they fit, or if nothing is held.
    fn take(&self, weight: usize) -> bool {
        let fits = |held: usize| held == 0 || held.saturating_add(weight) <= self.most;
        let mut held = self.held.load(Ordering::SeqCst);
        loop {
            if !fits(held) {
                // Said before the look below, so that a receiver freeing
                // bytes in between sees it and wakes the waiter.
                self.refused.store(true, Ordering::SeqCst);
                held = self.held.load(Ordering::SeqCst);
                if !fits(held) {
                    return false;
                }
            }
            match self.held.compare_exchange_weak(
                held,
                held + weight,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return true,
                Err(now) => held = now,
            }
        }
    }

    fn give_back(&self, weight: usize) {
        self.held.fetch_sub(weight, Ordering::SeqCst);
        if self.refused.swap(false, Ordering::SeqCst) {
            self.freed.notify_waiters();
        }
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

/// The receiving end of [`channel`].
#[derive(Debug)]
pub(crate) struct BoundedReceiver<T> {
    channel: mpsc::Receiver<T>,
    budget: Arc<Budget>,
}

/// A channel in which at most `messages` messages of at most `bytes`
/// bytes wait (a larger message waits alone).
pub(crate) fn channel<T: Weighed>(
    messages: usize,
    bytes: usize,
) -> (BoundedSender<T>, BoundedReceiver<T>) {
    let (sender, receiver) = mpsc::channel(messages.max(1));
    let budget = Arc::new(Budget {
        most: bytes.max(1),
        held: AtomicUsize::new(0),
        refused: AtomicBool::new(false),
        freed: Notify::new(),
    });
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
    /// Hands `message` over if it fits; gives it back when it does not, or
    /// when the receiver is gone.
    pub(crate) fn try_send(&self, message: T) -> Result<(), TrySendError<T>> {
        if self.channel.is_closed() {
            return Err(TrySendError::Closed(message));
        }
        let weight = message.weight();
        if !self.budget.take(weight) {
            return Err(TrySendError::Full(message));
        }
        self.channel
            .try_send(message)
            .inspect_err(|_| self.budget.give_back(weight))
    }

    /// Hands `message` over, waiting for room; gives it back when the
    /// receiver is gone. Dropped while it waits, it holds nothing.
    pub(crate) async fn send(&self, message: T) -> Result<(), SendError<T>> {
        loop {
            let freed = self.budget.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            let Ok(place) = self.channel.reserve().await else {
                return Err(SendError(message));
            };
            if self.budget.take(message.weight()) {
                place.send(message);
                return Ok(());
            }
            drop(place);
            tokio::select! {
                () = freed => {}
                () = self.channel.closed() => return Err(SendError(message)),
            }
        }
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
            .map(|message| message.inspect(|m| self.budget.give_back(m.weight())))
    }

    /// The next message if one waits.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn try_recv(&mut self) -> Result<T, TryRecvError> {
        self.channel
            .try_recv()
            .inspect(|m| self.budget.give_back(m.weight()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
        let waiting = tokio::spawn({
            let sender = sender.clone();
            async move { sender.send(vec![0; 8]).await.is_ok() }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "it waits for bytes");
        assert_eq!(receiver.recv().await.map(|m| m.len()), Some(8));
        assert!(waiting.await.unwrap(), "the freed bytes let it send");
        // Full by places, not bytes.
        sender.try_send(vec![]).unwrap();
        let waiting = tokio::spawn({
            let sender = sender.clone();
            async move { sender.send(vec![1]).await.is_ok() }
        });
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
            assert!(receiver.budget.held.load(Ordering::SeqCst) <= 64);
            drop(message);
            tokio::task::yield_now().await;
        }
        assert_eq!(received, 1600);
        for s in senders {
            s.await.unwrap();
        }
    }
}
