//! Where a session's outgoing messages go: a channel its transport reads
//! (HTTP, which puts each message on a stream by what it is about), or
//! [`frames`] written straight into one buffer that the transport's writer
//! empties (stdio, where every message goes the same way).
//!
//! Frames cost a sender a copy into the buffer, under a lock held for that
//! copy only — no channel slot, and the message's own allocation is freed
//! at once, on the thread that made it. The writer takes the whole buffer
//! in one swap: what a burst of requests answers goes out in one write, as
//! the channel's writer gathered it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;

use atomic_waker::AtomicWaker;
use bytes::BytesMut;
use tokio::sync::Notify;
use tokio::sync::mpsc::{self, error::SendError, error::TrySendError};
use tokio_util::sync::CancellationToken;

use super::shared::Outgoing;

/// How a message becomes bytes on the output (a frame or a line).
pub(crate) type Framing = fn(&[u8], &mut BytesMut);

/// Where a session's outgoing messages go.
#[derive(Clone)]
pub(crate) enum Outbox {
    /// A channel its transport reads.
    Channel(mpsc::Sender<Outgoing>),
    /// Frames in a buffer its transport's writer empties.
    Frames(FrameSender),
}

impl From<mpsc::Sender<Outgoing>> for Outbox {
    fn from(channel: mpsc::Sender<Outgoing>) -> Self {
        Self::Channel(channel)
    }
}

impl Outbox {
    /// Hands `message` over if there is room; gives it back when there is
    /// none, or when the transport is gone.
    pub(crate) fn try_send(&self, message: Outgoing) -> Result<(), TrySendError<Outgoing>> {
        match self {
            Self::Channel(channel) => channel.try_send(message),
            Self::Frames(frames) => frames.0.try_send(message),
        }
    }

    /// Hands `message` over, waiting for room; gives it back when the
    /// transport is gone.
    pub(crate) async fn send(&self, message: Outgoing) -> Result<(), SendError<Outgoing>> {
        match self {
            Self::Channel(channel) => channel.send(message).await,
            Self::Frames(frames) => frames.0.send(message).await,
        }
    }

    /// Completes when the transport no longer takes messages.
    pub(crate) async fn closed(&self) {
        match self {
            Self::Channel(channel) => channel.closed().await,
            Self::Frames(frames) => frames.0.gone.cancelled().await,
        }
    }

    /// Whether the transport no longer takes messages.
    pub(crate) fn is_closed(&self) -> bool {
        match self {
            Self::Channel(channel) => channel.is_closed(),
            Self::Frames(frames) => frames.0.gone.is_cancelled(),
        }
    }
}

/// A buffer of frames, shared by a session's senders and its writer.
struct Frames {
    waiting: Mutex<Waiting>,
    framing: Framing,
    /// How many messages may wait before senders wait in turn.
    limit: usize,
    /// How many bytes may wait before senders wait in turn (a message
    /// larger than this still goes, alone).
    max_bytes: usize,
    /// Live [`FrameSender`]s: at none, the writer finishes.
    senders: AtomicUsize,
    /// Wakes the writer: bytes wait, or the last sender left.
    filled: AtomicWaker,
    /// Wakes senders that wait for room (only ever when it was full).
    drained: Notify,
    /// Cancelled when the writer is gone.
    gone: CancellationToken,
}

/// What waits for the writer.
struct Waiting {
    bytes: BytesMut,
    messages: usize,
    /// A sender was refused for want of room since the writer last took
    /// the bytes: it may be waiting.
    refused: bool,
}

impl Frames {
    fn waiting(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn try_send(&self, message: Outgoing) -> Result<(), TrySendError<Outgoing>> {
        if self.gone.is_cancelled() {
            return Err(TrySendError::Closed(message));
        }
        // A request that ended without a reply has nothing to write.
        if message.bytes.is_empty() {
            return Ok(());
        }
        let was_empty = {
            let mut waiting = self.waiting();
            let bytes = waiting.bytes.len();
            if waiting.messages >= self.limit
                || (bytes > 0 && bytes + message.bytes.len() > self.max_bytes)
            {
                waiting.refused = true;
                return Err(TrySendError::Full(message));
            }
            let was_empty = waiting.bytes.is_empty();
            (self.framing)(&message.bytes, &mut waiting.bytes);
            waiting.messages += 1;
            was_empty
        };
        if was_empty {
            self.filled.wake();
        }
        Ok(())
    }

    async fn send(&self, mut message: Outgoing) -> Result<(), SendError<Outgoing>> {
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            match self.try_send(message) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Closed(back)) => return Err(SendError(back)),
                Err(TrySendError::Full(back)) => message = back,
            }
            tokio::select! {
                () = drained => {}
                () = self.gone.cancelled() => {}
            }
        }
    }
}

/// A sender of frames (see [`frames`]).
pub(crate) struct FrameSender(Arc<Frames>);

impl Clone for FrameSender {
    fn clone(&self) -> Self {
        self.0.senders.fetch_add(1, Ordering::Relaxed);
        Self(self.0.clone())
    }
}

impl Drop for FrameSender {
    fn drop(&mut self) {
        if self.0.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.filled.wake();
        }
    }
}

/// The writer's end of [`frames`]: dropping it tells senders the
/// transport is gone.
pub(crate) struct FrameWriter(Arc<Frames>);

impl Drop for FrameWriter {
    fn drop(&mut self) {
        self.0.gone.cancel();
    }
}

impl FrameWriter {
    /// Waits for bytes and swaps them for `batch` (which the caller wrote
    /// and emptied); `false` once every sender is gone and nothing waits.
    pub(crate) async fn next(&mut self, batch: &mut BytesMut) -> bool {
        std::future::poll_fn(|cx| {
            if let Some(more) = self.take(batch) {
                return Poll::Ready(more);
            }
            self.0.filled.register(cx.waker());
            // Again: a sender may have filled it (or left) meanwhile.
            match self.take(batch) {
                Some(more) => Poll::Ready(more),
                None => Poll::Pending,
            }
        })
        .await
    }

    /// Swaps what waits into `batch`: `Some(true)`; `Some(false)` when
    /// nothing waits and no sender is left; `None` when nothing waits yet.
    fn take(&self, batch: &mut BytesMut) -> Option<bool> {
        let mut waiting = self.0.waiting();
        if !waiting.bytes.is_empty() {
            std::mem::swap(&mut waiting.bytes, batch);
            let refused = std::mem::take(&mut waiting.refused);
            waiting.messages = 0;
            drop(waiting);
            if refused {
                self.0.drained.notify_waiters();
            }
            return Some(true);
        }
        drop(waiting);
        (self.0.senders.load(Ordering::Acquire) == 0).then_some(false)
    }
}

/// A buffer of frames: at most `limit` messages and `max_bytes` bytes wait
/// for the writer, each message written by `framing`.
pub(crate) fn frames(
    framing: Framing,
    limit: usize,
    max_bytes: usize,
) -> (FrameSender, FrameWriter) {
    let frames = Arc::new(Frames {
        waiting: Mutex::new(Waiting {
            bytes: BytesMut::new(),
            messages: 0,
            refused: false,
        }),
        framing,
        limit,
        max_bytes,
        senders: AtomicUsize::new(1),
        filled: AtomicWaker::new(),
        drained: Notify::new(),
        gone: CancellationToken::new(),
    });
    (FrameSender(frames.clone()), FrameWriter(frames))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::About;

    fn line(body: &[u8], out: &mut BytesMut) {
        out.extend_from_slice(body);
        out.extend_from_slice(b"\n");
    }

    fn message(text: &str) -> Outgoing {
        Outgoing {
            bytes: text.as_bytes().to_vec(),
            about: About::Session,
        }
    }

    /// What senders hand over while the writer is busy goes out in one
    /// batch, in order; the writer finishes once every sender is gone.
    #[tokio::test]
    async fn frames_gather_in_order_and_end_with_the_last_sender() {
        let (sender, mut writer) = frames(line, 8, 1024);
        let other = Outbox::Frames(sender.clone());
        let first = Outbox::Frames(sender);
        first.try_send(message("a")).unwrap();
        other.send(message("b")).await.unwrap();
        first.try_send(message("")).unwrap(); // nothing to write
        let mut batch = BytesMut::new();
        assert!(writer.next(&mut batch).await);
        assert_eq!(&batch[..], b"a\nb\n");
        batch.clear();
        drop((first, other));
        assert!(!writer.next(&mut batch).await);
    }

    /// At the limit a sender waits until the writer takes the batch; with
    /// the writer gone, messages come back and `closed` completes.
    #[tokio::test]
    async fn a_full_buffer_holds_senders_and_a_gone_writer_refuses_them() {
        let (sender, mut writer) = frames(line, 1, 1024);
        let outbox = Outbox::Frames(sender);
        outbox.try_send(message("1")).unwrap();
        assert!(matches!(
            outbox.try_send(message("2")),
            Err(TrySendError::Full(_))
        ));
        let waiting = tokio::spawn({
            let outbox = outbox.clone();
            async move { outbox.send(message("2")).await.is_ok() }
        });
        let mut batch = BytesMut::new();
        assert!(writer.next(&mut batch).await);
        assert_eq!(&batch[..], b"1\n");
        assert!(waiting.await.unwrap());
        batch.clear();
        assert!(writer.next(&mut batch).await);
        assert_eq!(&batch[..], b"2\n");
        assert!(!outbox.is_closed());
        drop(writer);
        outbox.closed().await;
        assert!(matches!(
            outbox.try_send(message("3")),
            Err(TrySendError::Closed(_))
        ));
        assert!(outbox.send(message("4")).await.is_err());
    }

    /// Past `max_bytes` a sender waits too, but a message larger than the
    /// bound still goes when nothing else waits.
    #[tokio::test]
    async fn bytes_bound_the_buffer_and_a_large_message_goes_alone() {
        let (sender, mut writer) = frames(line, 100, 8);
        let outbox = Outbox::Frames(sender);
        outbox.try_send(message("12345")).unwrap();
        assert!(matches!(
            outbox.try_send(message("678")),
            Err(TrySendError::Full(_))
        ));
        let mut batch = BytesMut::new();
        assert!(writer.next(&mut batch).await);
        assert_eq!(&batch[..], b"12345\n");
        outbox
            .try_send(message("a message over the bound"))
            .unwrap();
        batch.clear();
        assert!(writer.next(&mut batch).await);
        assert_eq!(&batch[..], b"a message over the bound\n");
    }
}
