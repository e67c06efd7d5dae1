//! The bodies of the HTTP transport: a streaming request body read as
//! session inputs ([`BodyInputs`]) and the endpoint's response body
//! ([`McpBody`]): one JSON value, JSON lines as they are ready (an MCP
//! v1.0 streaming session), or server-sent events (Streamable HTTP).

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use std::time::Duration;

use tokio_util::codec::Decoder;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::quota::StreamSlot;
use crate::server::Input;
use crate::session::bounded::BoundedReceiver;
use crate::session::{Listener, Outgoing};
use crate::transport::json_stream::JsonStreamDecoder;

/// How a streaming response gathers ready messages into one chunk.
const CHUNK_BATCH: usize = 64 * 1024;

/// The next data chunk of a body (trailers are skipped).
pub(super) async fn next_data<B>(body: &mut Pin<Box<B>>) -> Option<Result<Bytes, B::Error>>
where
    B: Body<Data = Bytes>,
{
    loop {
        let frame = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await?;
        match frame {
            Ok(frame) => match frame.into_data() {
                Ok(data) => return Some(Ok(data)),
                Err(_trailers) => continue,
            },
            Err(e) => return Some(Err(e)),
        }
    }
}

/// The largest message whose buffer a streaming body keeps for the next.
const KEPT_BUFFER: usize = 64 * 1024;

/// A streaming request body as a stream of session inputs.
pub(super) struct BodyInputs<B> {
    pub(super) body: Pin<Box<B>>,
    pub(super) buf: BytesMut,
    pub(super) decoder: JsonStreamDecoder,
    /// The body has ended.
    pub(super) ended: bool,
    /// Every input has been handed out.
    pub(super) finished: bool,
}

impl<B> futures_core::Stream for BodyInputs<B>
where
    B: Body<Data = Bytes>,
    B::Error: std::fmt::Display,
{
    type Item = io::Result<Input>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.finished {
                return Poll::Ready(None);
            }
            if this.ended {
                let item = this.decoder.decode_eof(&mut this.buf).transpose();
                this.finished = item.is_none();
                return Poll::Ready(item);
            }
            match this.decoder.decode(&mut this.buf) {
                Ok(Some(item)) => {
                    // The buffer a large message grew shares its allocation
                    // with the message: let it go with the message, rather
                    // than hold it while the stream idles.
                    if matches!(&item, Input::Message(message) if message.len() > KEPT_BUFFER) {
                        this.buf = BytesMut::from(&this.buf[..]);
                    }
                    return Poll::Ready(Some(Ok(item)));
                }
                Ok(None) => {}
                Err(e) => return Poll::Ready(Some(Err(e))),
            }
            match this.body.as_mut().poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        this.buf.extend_from_slice(&data);
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    this.finished = true;
                    return Poll::Ready(Some(Err(io::Error::other(e.to_string()))));
                }
                Poll::Ready(None) => this.ended = true,
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// The response body of the MCP endpoint: one JSON value, a stream of
/// JSON lines (an MCP v1.0 streaming session), a server-sent event stream
/// (Streamable HTTP, 2026-07-28 streams), or a short text or empty body.
pub struct McpBody {
    kind: BodyKind,
}

enum BodyKind {
    Full(Option<Bytes>),
    Lines(BoundedReceiver<Outgoing>),
    Events(Box<Events>),
}

/// A server-sent event stream: each message one `message` event, comment
/// lines to keep an idle stream alive; it ends when its messages end or the
/// server stops.
struct Events {
    first: Option<Vec<u8>>,
    messages: Feed,
    keep_alive: tokio::time::Interval,
    stop: Pin<Box<WaitForCancellationFutureOwned>>,
    /// The stream has given its last chunk.
    ended: bool,
    /// The stream slot it holds (a `GET` or listen stream), freed when it
    /// ends.
    _slot: Option<StreamSlot>,
}

/// Where an event stream's messages come from.
pub(super) enum Feed {
    /// Messages a session's delivery task put there (a session's `GET` stream, a request's
    /// stream in a session).
    Delivered(BoundedReceiver<Vec<u8>>),
    /// A request's own session's output (a 2026-07-28 request): the body
    /// is the output's one reader, so dropping it (the client closed the
    /// stream) closes the output, which stops the request's work.
    Output(BoundedReceiver<Outgoing>),
    /// A 2026-07-28 listen stream, read here: no session and no task
    /// stand behind it; dropping it (the client closed the stream)
    /// unregisters it.
    Listen(Box<Listener>),
}

impl Feed {
    fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Vec<u8>>> {
        match self {
            Self::Delivered(messages) => messages.poll_recv(cx),
            Self::Output(output) => output.poll_recv(cx).map(|m| m.map(|m| m.bytes)),
            Self::Listen(listener) => listener.poll_next(cx).map(Some),
        }
    }

    /// The messages that end the stream when the server stops, if its
    /// feed has any (a listen stream's result).
    fn last(&mut self) -> Vec<Vec<u8>> {
        match self {
            Self::Listen(listener) => listener.end(),
            Self::Delivered(_) | Self::Output(_) => Vec::new(),
        }
    }
}

impl From<BoundedReceiver<Vec<u8>>> for Feed {
    fn from(messages: BoundedReceiver<Vec<u8>>) -> Self {
        Self::Delivered(messages)
    }
}

/// Appends one SSE `message` event carrying `json` (compact JSON: one line).
fn event(chunk: &mut Vec<u8>, json: &[u8]) {
    chunk.extend_from_slice(b"event: message\ndata: ");
    chunk.extend_from_slice(json);
    chunk.extend_from_slice(b"\n\n");
}

impl Default for McpBody {
    fn default() -> Self {
        Self::empty()
    }
}

impl std::fmt::Debug for McpBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            BodyKind::Full(bytes) => f.debug_tuple("McpBody::Full").field(bytes).finish(),
            BodyKind::Lines(_) => f.write_str("McpBody::Lines"),
            BodyKind::Events(_) => f.write_str("McpBody::Events"),
        }
    }
}

impl McpBody {
    pub(super) fn empty() -> Self {
        Self {
            kind: BodyKind::Full(None),
        }
    }

    pub(super) fn full(bytes: impl Into<Bytes>) -> Self {
        Self {
            kind: BodyKind::Full(Some(bytes.into())),
        }
    }

    pub(super) fn stream(outbox: BoundedReceiver<Outgoing>) -> Self {
        Self {
            kind: BodyKind::Lines(outbox),
        }
    }

    /// Server-sent events: `first`, then each of `messages` as it comes,
    /// with a comment line after `keep_alive` of silence; ends when
    /// `messages` ends or `stop` fires.
    pub(super) fn sse(
        first: Option<Vec<u8>>,
        messages: impl Into<Feed>,
        keep_alive: Duration,
        stop: CancellationToken,
        slot: Option<StreamSlot>,
    ) -> Self {
        // (tokio bounds an interval's period; its start is ours to bound.)
        let start = crate::poll::deadline_in(keep_alive);
        let mut keep_alive =
            tokio::time::interval_at(start, keep_alive.max(Duration::from_millis(1)));
        keep_alive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Self {
            kind: BodyKind::Events(Box::new(Events {
                first,
                messages: messages.into(),
                keep_alive,
                stop: Box::pin(stop.cancelled_owned()),
                ended: false,
                _slot: slot,
            })),
        }
    }
}

/// A whole body of text (the one-line refusals of a
/// [`GuardLayer`](super::GuardLayer)).
impl From<String> for McpBody {
    fn from(text: String) -> Self {
        Self::full(text)
    }
}

impl Body for McpBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.get_mut().kind {
            BodyKind::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            BodyKind::Lines(outbox) => loop {
                match outbox.poll_recv(cx) {
                    Poll::Ready(Some(first)) if first.bytes.is_empty() => continue,
                    Poll::Ready(Some(first)) => {
                        let mut chunk = first.bytes;
                        chunk.push(b'\n');
                        // Gather what else is ready into the same chunk.
                        while chunk.len() < CHUNK_BATCH {
                            match outbox.try_recv() {
                                Ok(more) if more.bytes.is_empty() => {}
                                Ok(more) => {
                                    chunk.extend_from_slice(&more.bytes);
                                    chunk.push(b'\n');
                                }
                                Err(_) => break,
                            }
                        }
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::from(chunk)))));
                    }
                    Poll::Ready(None) => return Poll::Ready(None),
                    Poll::Pending => return Poll::Pending,
                }
            },
            BodyKind::Events(events) => events.poll_chunk(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.kind, BodyKind::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            BodyKind::Full(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            BodyKind::Lines(_) | BodyKind::Events(_) => SizeHint::default(),
        }
    }
}

impl Events {
    /// The last chunk of a stream that ends: what is left, then the end.
    fn end(&mut self, chunk: Vec<u8>) -> Option<Result<Frame<Bytes>, Infallible>> {
        self.ended = true;
        (!chunk.is_empty()).then(|| Ok(Frame::data(Bytes::from(chunk))))
    }

    fn poll_chunk(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let mut chunk = Vec::new();
        if let Some(first) = self.first.take() {
            event(&mut chunk, &first);
        }
        if self.stop.as_mut().poll(cx).is_ready() {
            for last in self.messages.last() {
                event(&mut chunk, &last);
            }
            return Poll::Ready(self.end(chunk));
        }
        loop {
            match self.messages.poll_recv(cx) {
                Poll::Ready(Some(message)) => {
                    event(&mut chunk, &message);
                    if chunk.len() >= CHUNK_BATCH {
                        break;
                    }
                }
                Poll::Ready(None) => return Poll::Ready(self.end(chunk)),
                Poll::Pending => break,
            }
        }
        if !chunk.is_empty() {
            self.keep_alive.reset();
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from(chunk)))));
        }
        match self.keep_alive.poll_tick(cx) {
            Poll::Ready(_) => Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(
                b": keep-alive\n\n",
            ))))),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::Filter;
    use crate::jsonrpc::RequestId;

    /// Every frame the body gives, polled without waiting, until it ends or
    /// would wait.
    fn frames(body: &mut McpBody) -> (Vec<String>, bool) {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut seen = Vec::new();
        loop {
            match Pin::new(&mut *body).poll_frame(&mut cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        seen.push(String::from_utf8_lossy(&data).into_owned());
                    }
                }
                Poll::Ready(None) => return (seen, true),
                Poll::Pending => return (seen, false),
            }
        }
    }

    /// A listen stream's body, on a server of its own, ended by `stop`.
    fn listen_body(stop: &CancellationToken) -> McpBody {
        let server = crate::Server::builder().build().expect("builds");
        let listing = server.inner().listing();
        let listener = Listener::new(
            server.inner(),
            RequestId::String("L".into()),
            Filter::default(),
            &listing,
        );
        McpBody::sse(
            None,
            Feed::Listen(Box::new(listener)),
            Duration::from_secs(15),
            stop.clone(),
            None,
        )
    }

    #[tokio::test]
    async fn a_keep_alive_of_duration_max_is_very_long_not_a_panic_when_an_event_goes() {
        let (tx, rx) = crate::session::bounded::channel(4, 1 << 10);
        let _ = tx.try_send(b"{\"later\":1}".to_vec());
        let mut body = McpBody::sse(
            Some(b"{\"first\":1}".to_vec()),
            Feed::Delivered(rx),
            Duration::MAX,
            CancellationToken::new(),
            None,
        );
        let (seen, ended) = frames(&mut body);
        assert!(!ended);
        let all = seen.concat();
        assert!(all.contains("first") && all.contains("later"), "{all}");
    }

    #[tokio::test]
    async fn a_listen_stream_stopped_before_its_first_poll_still_begins_with_its_acknowledgement() {
        let stop = CancellationToken::new();
        stop.cancel();
        let mut body = listen_body(&stop);
        let (seen, ended) = frames(&mut body);
        assert!(ended, "the stream ends: {seen:?}");
        let all = seen.concat();
        let ack = all
            .find("notifications/subscriptions/acknowledged")
            .unwrap_or_else(|| panic!("the acknowledgement: {all}"));
        let result = all
            .find(r#""result""#)
            .unwrap_or_else(|| panic!("the result: {all}"));
        assert!(ack < result, "{all}");
        assert_eq!(all.matches(r#""result""#).count(), 1, "one result: {all}");
    }

    #[tokio::test]
    async fn a_listen_stream_stopped_after_its_acknowledgement_ends_with_its_result_once() {
        let stop = CancellationToken::new();
        let mut body = listen_body(&stop);
        let (seen, ended) = frames(&mut body);
        assert!(!ended);
        assert!(seen.concat().contains("acknowledged"), "{seen:?}");
        stop.cancel();
        let (seen, ended) = frames(&mut body);
        assert!(ended);
        let all = seen.concat();
        assert!(!all.contains("acknowledged"), "{all}");
        assert_eq!(all.matches(r#""result""#).count(), 1, "{all}");
    }

    /// A large message's buffer goes with the message: the stream keeps
    /// no share of it for the next (small) one.
    #[tokio::test]
    async fn a_streamed_body_keeps_no_share_of_a_large_messages_buffer() {
        use futures_core::Stream;
        let large = format!("{{\"pad\":\"{}\"}}", "x".repeat(KEPT_BUFFER + 1));
        let text = format!("{large}\n{{\"small\":1}}\n");
        let mut inputs = BodyInputs {
            body: Box::pin(http_body_util::Full::new(Bytes::from(text))),
            buf: BytesMut::new(),
            decoder: JsonStreamDecoder::new(1 << 20),
            ended: false,
            finished: false,
        };
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let Poll::Ready(Some(Ok(Input::Message(first)))) = Pin::new(&mut inputs).poll_next(&mut cx)
        else {
            panic!("the large message first");
        };
        assert_eq!(first.len(), large.len());
        assert!(first.is_unique(), "the stream's buffer still shares it");
        let Poll::Ready(Some(Ok(Input::Message(second)))) =
            Pin::new(&mut inputs).poll_next(&mut cx)
        else {
            panic!("then the small one");
        };
        assert_eq!(&second[..], br#"{"small":1}"#);
    }
}
