//! Where a session's outgoing messages go: a channel its transport reads
//! (HTTP, which puts each message on a stream by what it is about), or
//! [`frames`] written straight into one buffer that the transport's writer
//! empties (stdio, where every message goes the same way).
//!
//! Frames cost a sender a copy into the queue's last chunk, under a lock
//! held for that copy only — no channel slot, and the message's own
//! allocation is freed at once, on the thread that made it. The writer
//! takes a chunk at a time: what a burst of small replies answers goes out
//! in one write, as the channel's writer gathered it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;

use atomic_waker::AtomicWaker;
use bytes::BytesMut;
use tokio::sync::mpsc::error::{SendError, TrySendError};
use tokio::sync::{Notify, SemaphorePermit, TryAcquireError};
use tokio_util::sync::CancellationToken;

use super::bounded::{BoundedReceiver, BoundedSender, Budget, Weighed};
use crate::jsonrpc::{Reply, RequestId};

/// How a message becomes bytes on the output (a frame or a line).
pub(crate) type FrameFn = fn(&[u8], &mut BytesMut);

/// Where a session's outgoing messages go.
#[derive(Clone)]
pub(crate) enum Outbox {
    /// A channel its transport reads, bounded by messages and by bytes
    /// ([`channel`]).
    Channel(BoundedSender<Outgoing>),
    /// Frames in a buffer its transport's writer empties, bounded by
    /// messages and by bytes ([`frames`]).
    Frames(FrameSender),
}

impl From<BoundedSender<Outgoing>> for Outbox {
    fn from(channel: BoundedSender<Outgoing>) -> Self {
        Self::Channel(channel)
    }
}

/// A session's outbox as a channel for its transport to read: at most
/// `messages` messages of at most `bytes` bytes wait for it (a larger
/// message waits alone), so a client that reads nothing holds that much
/// of the server's memory, and the session's senders, then its reader,
/// wait.
pub(crate) fn channel(
    messages: usize,
    bytes: usize,
) -> (BoundedSender<Outgoing>, BoundedReceiver<Outgoing>) {
    super::bounded::channel(messages, bytes)
}

impl Weighed for Outgoing {
    fn weight(&self) -> usize {
        self.bytes.len()
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
            Self::Frames(frames) => frames.0.writer_gone.load(Ordering::Acquire),
        }
    }
}

/// Frames waiting for a session's writer, shared with its senders.
struct Frames {
    waiting: Mutex<Backlog>,
    framing: FrameFn,
    /// How many messages may wait before senders wait in turn.
    limit: usize,
    /// How many bytes of weighed messages may wait before their senders
    /// wait in turn, in order (a larger message waits alone).
    bytes: Budget,
    /// The size from which a message is weighed; smaller ones are held by
    /// the count, within the share of the bound set aside for them.
    weighed_from: usize,
    /// How large a chunk grows before the next message starts another.
    chunk: usize,
    /// Live [`FrameSender`]s: at none, the writer finishes.
    senders: AtomicUsize,
    /// Wakes the writer: bytes wait, or the last sender left.
    filled: AtomicWaker,
    /// Wakes senders that wait for room (only ever when it was full).
    drained: Notify,
    /// Cancelled when the writer is gone.
    gone: CancellationToken,
    /// Set just before `gone` is cancelled: read at every message, where
    /// the token's own check takes a lock.
    writer_gone: AtomicBool,
}

/// What waits for the writer: chunks of frames, oldest first. A burst of
/// large replies fills several chunks, which the writer takes one at a
/// time while senders go on filling the last: what waits is held once.
struct Backlog {
    chunks: VecDeque<Chunk>,
    /// Chunks the writer has written, to be filled again.
    spare: Vec<BytesMut>,
    messages: usize,
    /// A sender was refused for want of room since the writer last
    /// emptied the queue: it may be waiting.
    refused: bool,
    /// Senders that wait for a place: until they have one, no other sender
    /// takes one.
    place_waiters: usize,
}

/// The size from which a message of the frames' queue is weighed against
/// its byte bound: 16 KiB at most, and less when the bound is small (a
/// message count's worth of smaller ones takes at most half the bound).
/// Smaller ones are held by the count, within the share of the bound set
/// aside for them, which costs them no atomic operation; a large one that
/// waits for bytes is never passed by another large one, and small ones
/// take none of its bytes.
const WEIGHED_FROM: usize = 16 << 10;

/// Frames that wait, and what their messages took of the byte budget
/// (given back as the writer takes them).
struct Chunk {
    frames: BytesMut,
    taken: usize,
}

/// Written chunks kept for reuse (one burst's worth of small replies needs
/// one or two).
const SPARE_CHUNKS: usize = 2;

impl Frames {
    fn waiting(&self) -> std::sync::MutexGuard<'_, Backlog> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands `message` over if fewer than `limit` messages wait and, for a
    /// weighed one, its bytes fit (and no sender waits for bytes before
    /// it).
    fn try_send(&self, message: Outgoing) -> Result<(), TrySendError<Outgoing>> {
        if self.writer_gone.load(Ordering::Acquire) {
            return Err(TrySendError::Closed(message));
        }
        // A request that ended without a reply has nothing to write.
        if message.bytes.is_empty() {
            return Ok(());
        }
        let held = if message.bytes.len() < self.weighed_from {
            None
        } else {
            match self.bytes.try_take(message.bytes.len()) {
                Ok(held) => Some(held),
                Err(TryAcquireError::NoPermits) => return Err(TrySendError::Full(message)),
                Err(TryAcquireError::Closed) => return Err(TrySendError::Closed(message)),
            }
        };
        let mut waiting = self.waiting();
        // A place freed while senders wait is theirs.
        if waiting.messages >= self.limit || waiting.place_waiters > 0 {
            waiting.refused = true;
            return Err(TrySendError::Full(message));
        }
        self.enqueue(waiting, &message.bytes, held);
        Ok(())
    }

    /// Frames `message` into the last chunk (or a new one), which keeps
    /// what `held` took of the byte budget for the writer to give back;
    /// wakes the writer if nothing waited.
    fn enqueue(
        &self,
        mut waiting: std::sync::MutexGuard<'_, Backlog>,
        message: &[u8],
        held: Option<SemaphorePermit<'_>>,
    ) {
        let was_empty = waiting.chunks.is_empty();
        let fits = waiting
            .chunks
            .back()
            .is_some_and(|last| last.frames.len() + message.len() <= self.chunk);
        if !fits {
            let frames = waiting
                .spare
                .pop()
                .unwrap_or_else(|| BytesMut::with_capacity(self.chunk));
            waiting.chunks.push_back(Chunk { frames, taken: 0 });
        }
        if let Some(last) = waiting.chunks.back_mut() {
            (self.framing)(message, &mut last.frames);
            if let Some(held) = held {
                last.taken += held.num_permits();
                held.forget();
            }
        }
        waiting.messages += 1;
        drop(waiting);
        if was_empty {
            self.filled.wake();
        }
    }

    /// Hands `message` over, waiting for its bytes if it is weighed (in
    /// order with the other senders that wait for bytes), then for a
    /// place.
    async fn send(&self, message: Outgoing) -> Result<(), SendError<Outgoing>> {
        if message.bytes.is_empty() {
            return if self.writer_gone.load(Ordering::Acquire) {
                Err(SendError(message))
            } else {
                Ok(())
            };
        }
        // Forgotten once the message is queued: the writer gives its bytes
        // back as it takes them.
        let mut held = None;
        if message.bytes.len() >= self.weighed_from {
            let Ok(taken) = self.bytes.take(message.bytes.len()).await else {
                return Err(SendError(message));
            };
            held = Some(taken);
        }
        // Counted among the senders that wait for a place from its first
        // refusal, and no longer once it has one or is dropped.
        let mut place = PlaceWait {
            frames: self,
            counted: false,
        };
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if self.writer_gone.load(Ordering::Acquire) {
                return Err(SendError(message));
            }
            let queued = {
                let mut waiting = self.waiting();
                let first = place.counted || waiting.place_waiters == 0;
                if waiting.messages < self.limit && first {
                    if place.counted {
                        waiting.place_waiters -= 1;
                        place.counted = false;
                    }
                    // Senders that came while others waited wait for a
                    // wake: a place left over is theirs now.
                    let others = waiting.place_waiters > 0 && waiting.messages + 1 < self.limit;
                    self.enqueue(waiting, &message.bytes, held.take());
                    if others {
                        self.drained.notify_waiters();
                    }
                    true
                } else {
                    waiting.refused = true;
                    if !place.counted {
                        waiting.place_waiters += 1;
                        place.counted = true;
                    }
                    false
                }
            };
            if queued {
                return Ok(());
            }
            tokio::select! {
                () = drained => {}
                () = self.gone.cancelled() => {}
            }
        }
    }
}

/// A sender counted among those that wait for a place: dropped while
/// still counted (its future was dropped), it is counted no more, and the
/// others are told, since no drain may come to wake them.
struct PlaceWait<'f> {
    frames: &'f Frames,
    counted: bool,
}

impl Drop for PlaceWait<'_> {
    fn drop(&mut self) {
        if self.counted {
            self.frames.waiting().place_waiters -= 1;
            self.frames.drained.notify_waiters();
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
        self.0.writer_gone.store(true, Ordering::Release);
        self.0.bytes.close();
        self.0.gone.cancel();
    }
}

impl FrameWriter {
    /// Waits for the oldest chunk of frames (hand it back with
    /// [`written`](Self::written)); `None` once every sender is gone and
    /// nothing waits.
    pub(crate) async fn next(&mut self) -> Option<BytesMut> {
        std::future::poll_fn(|cx| {
            if let Some(next) = self.take() {
                return Poll::Ready(next);
            }
            self.0.filled.register(cx.waker());
            // Again: a sender may have filled it (or left) meanwhile.
            match self.take() {
                Some(next) => Poll::Ready(next),
                None => Poll::Pending,
            }
        })
        .await
    }

    /// A written chunk, kept to be filled again (while few are kept).
    pub(crate) fn written(&mut self, mut chunk: BytesMut) {
        chunk.clear();
        let mut waiting = self.0.waiting();
        if waiting.spare.len() < SPARE_CHUNKS && chunk.capacity() <= self.0.chunk * 2 {
            waiting.spare.push(chunk);
        }
    }

    /// `Some(Some(chunk))`: the oldest chunk; `Some(None)`: nothing waits
    /// and no sender is left; `None`: nothing waits yet.
    fn take(&self) -> Option<Option<BytesMut>> {
        // Read before the queue: a sender queues before it leaves, so with
        // none left, what it queued is seen below.
        let no_senders = self.0.senders.load(Ordering::Acquire) == 0;
        let mut waiting = self.0.waiting();
        if let Some(chunk) = waiting.chunks.pop_front() {
            let refused = waiting.chunks.is_empty() && std::mem::take(&mut waiting.refused);
            if waiting.chunks.is_empty() {
                waiting.messages = 0;
            }
            drop(waiting);
            self.0.bytes.give_back(chunk.taken);
            if refused {
                self.0.drained.notify_waiters();
            }
            return Some(Some(chunk.frames));
        }
        drop(waiting);
        no_senders.then_some(None)
    }
}

/// A queue of frames: at most `limit` messages and `byte_limit` bytes wait
/// for the writer (a larger message waits alone; see [`WEIGHED_FROM`] for
/// how the bytes are shared), each written by `framing` into chunks of
/// about `chunk` bytes (a larger message takes one of its own). A place
/// freed while senders wait for one goes to them.
pub(crate) fn frames(
    framing: FrameFn,
    limit: usize,
    byte_limit: usize,
    chunk: usize,
) -> (FrameSender, FrameWriter) {
    // What `limit` unweighed messages may hold is set aside from the bound.
    let weighed_from = WEIGHED_FROM
        .min(byte_limit / limit.max(1).saturating_mul(2))
        .max(1);
    let unweighed_share = limit.saturating_mul(weighed_from - 1);
    let frames = Arc::new(Frames {
        waiting: Mutex::new(Backlog {
            chunks: VecDeque::new(),
            spare: Vec::new(),
            messages: 0,
            refused: false,
            place_waiters: 0,
        }),
        framing,
        limit,
        bytes: Budget::new(byte_limit.saturating_sub(unweighed_share)),
        weighed_from,
        chunk,
        senders: AtomicUsize::new(1),
        filled: AtomicWaker::new(),
        drained: Notify::new(),
        gone: CancellationToken::new(),
        writer_gone: AtomicBool::new(false),
    });
    (FrameSender(frames.clone()), FrameWriter(frames))
}

/// One message for the transport to write, and what it is about — so that
/// Streamable HTTP can put it on the right stream.
#[derive(Debug)]
pub(crate) struct Outgoing {
    pub(crate) bytes: Vec<u8>,
    /// Read by Streamable HTTP, and to tell a reply from what came before
    /// it.
    pub(crate) about: About,
}

impl Outgoing {
    /// Whether this answers what was read: a request's reply (a result,
    /// an error or a refusal), a batch's replies, or the error about
    /// unreadable input. Not a notification or request sent before a
    /// reply, nor the empty stand-in for a reply never sent.
    pub(crate) fn is_answer(&self) -> bool {
        matches!(
            self.about,
            About::Reply(..) | About::Refused(..) | About::Session
        )
    }
}

/// A request's reply as an outgoing message (an empty one, about the
/// request, when the dialect does not answer it).
pub(crate) fn reply_message(
    reply: Option<Reply>,
    id: RequestId,
    refused: Option<Box<[String]>>,
) -> Outgoing {
    match (reply, refused) {
        (Some(reply), Some(needed)) => Outgoing {
            bytes: reply.bytes,
            about: About::Refused(id, needed),
        },
        (Some(reply), None) => Outgoing {
            bytes: reply.bytes,
            about: About::Reply(id, reply.error),
        },
        (None, _) => Outgoing {
            bytes: Vec::new(),
            about: About::Unanswered(id),
        },
    }
}

/// What an outgoing message is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum About {
    /// The reply to this request, and its error's code (`None`: a
    /// result).
    Reply(RequestId, Option<i32>),
    /// The reply to this request, a refusal for want of these scopes
    /// (docs/oauth.md §3).
    Refused(RequestId, Box<[String]>),
    /// A notification or request caused by this request (progress, a log
    /// line, an elicitation), sent before its reply.
    Related(RequestId),
    /// A notification this request caused without being about it (a
    /// resource it changed): on the `GET` stream when one is open, else on
    /// the request's own stream.
    CausedBy(RequestId),
    /// Nothing in particular (a push, a batch's replies, an error about
    /// unreadable input).
    Session,
    /// This request ended without a reply (a cancelled request of the Model
    /// Context Protocol); `bytes` is empty.
    Unanswered(RequestId),
}

/// A handled request: the notifications it caused, its reply (none for a
/// request the dialect does not answer) and, if trace is on, its trace line.
pub(crate) struct Handled {
    pub(crate) id: RequestId,
    pub(crate) caused: Vec<Vec<u8>>,
    pub(crate) reply: Option<Reply>,
    pub(crate) trace: Option<Vec<u8>>,
    /// The request was refused for want of these scopes (its reply is the
    /// JSON-RPC error): a transport that has sent nothing for it yet
    /// answers with a challenge instead.
    pub(crate) refused: Option<Box<[String]>>,
}

impl Handled {
    /// A reply known at once.
    pub(crate) fn reply(id: RequestId, reply: Option<Reply>) -> Self {
        Self {
            id,
            caused: Vec::new(),
            reply,
            trace: None,
            refused: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::About;

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

    /// What senders hand over while the writer is busy goes out together,
    /// in order; the writer finishes once every sender is gone.
    #[tokio::test]
    async fn frames_gather_in_order_and_end_with_the_last_sender() {
        let (sender, mut writer) = frames(line, 8, usize::MAX, 1024);
        let other = Outbox::Frames(sender.clone());
        let first = Outbox::Frames(sender);
        first.try_send(message("a")).unwrap();
        other.send(message("b")).await.unwrap();
        first.try_send(message("")).unwrap(); // nothing to write
        let chunk = writer.next().await.expect("a chunk");
        assert_eq!(&chunk[..], b"a\nb\n");
        writer.written(chunk);
        drop((first, other));
        assert!(writer.next().await.is_none());
    }

    /// Past a chunk's size the next message starts another chunk, a larger
    /// message takes one of its own, and the writer takes them in order.
    #[tokio::test]
    async fn chunks_fill_in_order_and_a_large_message_takes_its_own() {
        let (sender, mut writer) = frames(line, 100, usize::MAX, 8);
        let outbox = Outbox::Frames(sender);
        for text in ["123", "456", "789", "a message over the chunk size", "z"] {
            outbox.try_send(message(text)).unwrap();
        }
        let mut written = Vec::new();
        for _ in 0..4 {
            let chunk = writer.next().await.expect("a chunk");
            written.push(String::from_utf8(chunk.to_vec()).unwrap());
            writer.written(chunk);
        }
        assert_eq!(
            written,
            [
                "123\n456\n",
                "789\n",
                "a message over the chunk size\n",
                "z\n"
            ]
        );
    }

    /// At the limit a sender waits until the writer has taken what waits;
    /// with the writer gone, messages come back and `closed` completes.
    #[tokio::test]
    async fn a_full_queue_holds_senders_and_a_gone_writer_refuses_them() {
        let (sender, mut writer) = frames(line, 1, usize::MAX, 1024);
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
        let chunk = writer.next().await.expect("a chunk");
        assert_eq!(&chunk[..], b"1\n");
        assert!(waiting.await.unwrap());
        let chunk = writer.next().await.expect("a chunk");
        assert_eq!(&chunk[..], b"2\n");
        assert!(!outbox.is_closed());
        drop(writer);
        outbox.closed().await;
        assert!(matches!(
            outbox.try_send(message("3")),
            Err(TrySendError::Closed(_))
        ));
        assert!(outbox.send(message("4")).await.is_err());
    }

    /// The queue is bounded by the bytes of its weighed messages too, in
    /// order: past `byte_limit` a sender waits until the writer has taken
    /// enough, a weighed message does not pass a larger one that waits, a
    /// message larger than the bound passes alone, and small messages take
    /// no bytes.
    #[tokio::test]
    async fn past_its_bytes_senders_wait_in_order_and_a_larger_message_passes_alone() {
        let kib = |n: usize, fill: &str| fill.repeat(n << 10);
        let (sender, mut writer) = frames(line, 100, 40 << 10, 1024);
        let outbox = Outbox::Frames(sender);
        outbox.try_send(message(&kib(24, "a"))).unwrap();
        assert!(
            matches!(
                outbox.try_send(message(&kib(20, "b"))),
                Err(TrySendError::Full(_))
            ),
            "44 KiB would wait, over 40"
        );
        let large = tokio::spawn({
            let outbox = outbox.clone();
            let text = kib(50, "c");
            async move { outbox.send(message(&text)).await.is_ok() }
        });
        tokio::task::yield_now().await;
        assert!(!large.is_finished(), "it waits for bytes");
        assert!(
            matches!(
                outbox.try_send(message(&kib(16, "d"))),
                Err(TrySendError::Full(_))
            ),
            "a weighed message that fits waits behind the large one"
        );
        outbox.try_send(message("9")).unwrap();
        let chunk = writer.next().await.expect("a chunk");
        assert_eq!(chunk.len(), (24 << 10) + 1);
        writer.written(chunk);
        let passed = tokio::time::timeout(std::time::Duration::from_secs(10), large).await;
        assert!(
            matches!(passed, Ok(Ok(true))),
            "the freed bytes let it pass, alone"
        );
        assert!(
            matches!(
                outbox.try_send(message(&kib(16, "d"))),
                Err(TrySendError::Full(_))
            ),
            "it holds the whole bound"
        );
        assert_eq!(&writer.next().await.expect("a chunk")[..], b"9\n");
        let chunk = writer.next().await.expect("a chunk");
        assert_eq!(chunk.len(), (50 << 10) + 1);
        writer.written(chunk);
        outbox.try_send(message(&kib(16, "d"))).unwrap();
    }

    /// A place freed while senders wait for one goes to them, not to a
    /// sender that comes later; a waiter whose future is dropped gives its
    /// turn up.
    #[tokio::test]
    async fn a_freed_place_goes_to_the_senders_that_wait_for_one() {
        let (sender, mut writer) = frames(line, 1, usize::MAX, 1024);
        let outbox = Outbox::Frames(sender);
        outbox.try_send(message("1")).unwrap();
        let waiter = tokio::spawn({
            let outbox = outbox.clone();
            async move { outbox.send(message("2")).await.is_ok() }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "it waits for a place");
        assert_eq!(&writer.next().await.expect("a chunk")[..], b"1\n");
        assert!(
            matches!(outbox.try_send(message("3")), Err(TrySendError::Full(_))),
            "the freed place is the waiter's"
        );
        assert!(waiter.await.unwrap());
        assert_eq!(&writer.next().await.expect("a chunk")[..], b"2\n");
        // A waiter dropped while it waits is waited for no more.
        outbox.try_send(message("4")).unwrap();
        let dropped = tokio::spawn({
            let outbox = outbox.clone();
            async move { outbox.send(message("never")).await.is_ok() }
        });
        tokio::task::yield_now().await;
        dropped.abort();
        assert!(dropped.await.is_err(), "aborted");
        assert_eq!(&writer.next().await.expect("a chunk")[..], b"4\n");
        outbox.try_send(message("5")).unwrap();
        assert_eq!(&writer.next().await.expect("a chunk")[..], b"5\n");
    }

    /// Small and weighed messages together hold no more than the byte
    /// bound, whatever their mix: what small ones may take (half the bound
    /// at most) is set aside from it. Past the bound only a message larger
    /// than the weighed share waits, alone among the weighed ones.
    #[tokio::test]
    async fn what_waits_never_passes_the_byte_bound() {
        for sizes in [
            vec![500, 61, 500, 61, 61, 61, 61, 61],
            vec![61, 61, 61, 61, 61, 61, 500, 500],
            vec![1, 62, 300, 61, 200, 61, 100, 9],
            vec![900, 61, 61, 61, 61, 61, 61, 61],
        ] {
            let (sender, _writer) = frames(line, 8, 1000, 64);
            let outbox = Outbox::Frames(sender);
            let (mut held, mut largest) = (0, 0);
            for size in sizes.iter().cycle().take(24) {
                if outbox.try_send(message(&"x".repeat(*size))).is_ok() {
                    held += size;
                    largest = largest.max(*size);
                }
            }
            assert!(held > 0);
            assert!(
                held <= 1000.max(largest + 500),
                "{sizes:?}: {held} bytes wait, over 1000"
            );
        }
    }

    /// A message queued just before its sender, the last, leaves is
    /// written: the writer never ends on an empty look that raced it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_last_senders_last_message_is_never_lost() {
        for round in 0..500 {
            let (sender, mut writer) = frames(line, 8, usize::MAX, 1024);
            let last = tokio::spawn(async move {
                tokio::task::yield_now().await;
                let outbox = Outbox::Frames(sender);
                outbox.try_send(message("last")).unwrap();
            });
            let mut seen = Vec::new();
            while let Some(chunk) = writer.next().await {
                seen.extend_from_slice(&chunk);
                writer.written(chunk);
            }
            last.await.unwrap();
            assert_eq!(&seen[..], b"last\n", "round {round}");
        }
    }
}
