//! The stdio transport over any `AsyncRead` + `AsyncWrite` pair — the
//! process's stdin and stdout, or an in-memory pipe in tests: MCP v1.0's
//! `Content-Length` frames (docs/mcp-v1.md §7) or the Model Context
//! Protocol's newline-delimited JSON (docs/model-context.md §4), chosen by the
//! first byte the client sends.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;

use super::frame::FrameCodec;
use super::ndjson::LineCodec;
use crate::dialect::Dialect;
use crate::server::Server;
use crate::session::Session;
use crate::session::outbox::{FrameWriter, Outbox};

/// How many outgoing messages may wait for the writer before request tasks
/// wait for it in turn.
const OUTBOX: usize = 256;
/// The size of a chunk of outgoing frames, written at once (a pipe's
/// buffer holds as much).
const WRITE_BATCH: usize = 64 * 1024;
/// The size of the input buffer: what a pipe holds, so that one read
/// takes in a whole burst of pipelined requests (with tokio-util's default
/// of 8 KiB, 64 small calls in flight took two or three reads).
const READ_BUFFER: usize = 64 * 1024;

impl Server {
    /// Serves one session on the process's stdin and stdout until stdin
    /// ends; requests in flight then finish (in the Model Context Protocol,
    /// within [`shutdown_grace`](crate::ServerBuilder::shutdown_grace), past
    /// which they are stopped and those parked refused), every reply is
    /// flushed, and the call returns. stdout carries frames only: log
    /// through `tracing` to stderr.
    ///
    /// # Errors
    /// Writing to stdout failed.
    ///
    /// When stdin and stdout are pipes (as when a client spawns the server),
    /// they are read and written directly by the reactor; otherwise (a
    /// terminal, a file) through tokio's blocking stdio.
    pub async fn serve_stdio(&self) -> io::Result<()> {
        self.serve_stdio_until(std::future::pending()).await
    }

    /// Serves one session over `reader` and `writer` with stdio framing,
    /// until `reader` ends; requests in flight then finish (within the
    /// shutdown grace period in the Model Context Protocol, as for
    /// [`serve_stdio`](Self::serve_stdio)), every reply is flushed, and the
    /// call returns.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use tokio::io::{AsyncReadExt, AsyncWriteExt};
    ///
    /// let server = clawmcp::Server::builder().build().unwrap();
    /// let (client, server_end) = tokio::io::duplex(64 * 1024);
    /// let (reader, writer) = tokio::io::split(server_end);
    /// let serving = tokio::spawn(async move { server.serve_io(reader, writer).await });
    ///
    /// let (mut from_server, mut to_server) = tokio::io::split(client);
    /// let body = r#"{"jsonrpc":"2.0","method":"initialize","params":{"clientCapabilities":{}},"id":1}"#;
    /// to_server.write_all(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes()).await?;
    /// to_server.shutdown().await?; // end of input: the session ends after its replies
    ///
    /// let mut out = String::new();
    /// from_server.read_to_string(&mut out).await?;
    /// assert!(out.starts_with("Content-Length: "));
    /// assert!(out.contains(r#""result":{"capabilities":"#));
    /// serving.await.unwrap()
    /// # }
    /// ```
    ///
    /// # Errors
    /// Writing to `writer` failed.
    pub async fn serve_io<R, W>(&self, reader: R, writer: W) -> io::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        self.serve_io_until(reader, writer, std::future::pending())
            .await
    }

    /// [`serve_stdio`](Self::serve_stdio) until `shutdown` completes (or the
    /// server's [`ServerHandle::shutdown`](crate::ServerHandle::shutdown)).
    /// Then requests that arrive are refused (as
    /// [`ServerHandle::shutdown`](crate::ServerHandle::shutdown) says),
    /// requests in flight get the grace period to finish, every reply is
    /// flushed, and the call returns.
    ///
    /// # Errors
    /// Writing to stdout failed.
    pub async fn serve_stdio_until(&self, shutdown: impl Future<Output = ()>) -> io::Result<()> {
        #[cfg(unix)]
        if let Some((reader, writer, watch)) = unix_pipes() {
            return self
                .serve_framed(reader, writer, shutdown, output_closed(watch), None)
                .await;
        }
        self.serve_io_until(tokio::io::stdin(), tokio::io::stdout(), shutdown)
            .await
    }

    /// [`serve_io`](Self::serve_io) until `shutdown` completes; see
    /// [`serve_stdio_until`](Self::serve_stdio_until).
    ///
    /// # Errors
    /// Writing to `writer` failed.
    pub async fn serve_io_until<R, W>(
        &self,
        reader: R,
        writer: W,
        shutdown: impl Future<Output = ()>,
    ) -> io::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        self.serve_framed(reader, writer, shutdown, std::future::pending(), None)
            .await
    }

    /// [`serve_io`](Self::serve_io) with every request served as if a
    /// verified token named `principal` (the test client's
    /// `TestClient::connect_as`): its scopes decide what it may use.
    #[cfg(feature = "testing")]
    pub(crate) async fn serve_io_as<R, W>(
        &self,
        reader: R,
        writer: W,
        principal: crate::Principal,
    ) -> io::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let caller = crate::principal::Caller {
            principal: Some(Arc::new(principal)),
            ..Default::default()
        };
        self.serve_framed(
            reader,
            writer,
            std::future::pending(),
            std::future::pending(),
            Some(caller),
        )
        .await
    }

    /// Serves one session; `output_gone` completes when the transport learns
    /// that nobody reads `writer` any more (before a write fails). The
    /// session's dialect — and so its framing — follows from the first
    /// non-blank byte (docs/model-context.md §1): `{` or `[` is the Model Context
    /// Protocol (newline-delimited JSON), anything else MCP v1.0
    /// (`Content-Length` frames).
    async fn serve_framed<R, W>(
        &self,
        mut reader: R,
        writer: W,
        shutdown: impl Future<Output = ()>,
        output_gone: impl Future<Output = ()>,
        caller: Option<crate::principal::Caller>,
    ) -> io::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        tokio::pin!(shutdown, output_gone);
        let mut head = BytesMut::new();
        // Before its first byte the client has asked nothing: shutdown
        // (either way) or a closed output ends the call at once.
        let stop = self.handle();
        let first = tokio::select! {
            first = first_byte(&mut reader, &mut head) => first?,
            () = &mut shutdown => return Ok(()),
            () = stop.stop_token().cancelled() => return Ok(()),
            () = &mut output_gone => {
                tracing::warn!("stdout's reader is gone before the first message; the session ends");
                return Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "the output's reader is gone",
                ));
            }
        };
        let dialect = self.inner().protocols.for_stdio(first);
        let reader = std::io::Cursor::new(head).chain(reader);
        match dialect {
            Dialect::McpV1 => {
                let codec = FrameCodec::new(self.max_message_size())
                    .with_max_header_size(self.max_header_size());
                let input = FramedRead::with_capacity(reader, codec, READ_BUFFER);
                self.serve_session(
                    dialect,
                    input,
                    writer,
                    Framing::Frames,
                    (shutdown, output_gone),
                    caller,
                )
                .await
            }
            // (A connection is never opened in the 2026-07-28 revision: its
            // requests arrive on a Model Context Protocol one.)
            Dialect::ModelContext | Dialect::Revision2026 => {
                let input = FramedRead::with_capacity(
                    reader,
                    LineCodec::new(self.max_message_size()),
                    READ_BUFFER,
                );
                self.serve_session(
                    dialect,
                    input,
                    writer,
                    Framing::Lines,
                    (shutdown, output_gone),
                    caller,
                )
                .await
            }
        }
    }

    /// Runs one session over `input`, writing its messages to `writer`,
    /// until the first of `ends` (shutdown) or the output is gone (the
    /// second); its requests are `caller`'s (stdio's: nobody's).
    async fn serve_session<S, W>(
        &self,
        dialect: Dialect,
        input: S,
        writer: W,
        framing: Framing,
        ends: (impl Future<Output = ()>, impl Future<Output = ()>),
        caller: Option<crate::principal::Caller>,
    ) -> io::Result<()>
    where
        S: futures_core::Stream<Item = io::Result<crate::server::Input>> + Unpin,
        W: AsyncWrite + Unpin,
    {
        let (out, frames) = crate::session::outbox::frames(
            framing.encoder(),
            OUTBOX,
            self.inner().limits.max_queued_output,
            WRITE_BATCH,
        );
        let stop = Arc::new(self.handle().stop_token().child_token());
        let ended = CancellationToken::new();
        let (shutdown, output_gone) = ends;
        let mut session = Session::new(self.inner(), dialect, Outbox::Frames(out), stop.clone());
        if let Some(caller) = caller {
            session = session.with_caller(caller);
        }
        let run = async {
            session.run(input).await;
            ended.cancel();
        };
        // Polled only when a signal or the session's end wakes it, not at
        // every message the session reads or writes.
        let watch = crate::poll::OnWake::new(async {
            tokio::select! {
                () = shutdown => stop.cancel(),
                () = ended.cancelled() => {}
            }
        });
        let served =
            async { tokio::join!(run, write_messages(writer, frames, output_gone), watch).1 };
        // Once shutdown begins, a client that stops reading cannot hold the
        // server past the grace period (and a little time to write).
        let give_up = crate::poll::OnWake::new(async {
            stop.cancelled().await;
            tokio::time::sleep(
                (self.inner().limits.shutdown_grace).saturating_add(Duration::from_secs(5)),
            )
            .await;
        });
        tokio::select! {
            written = served => written,
            () = give_up => {
                tracing::warn!("shutdown: the replies could not all be written in time; giving up");
                Ok(())
            }
        }
    }
}

/// Reads until the first byte that is not blank (space, tab, CR, LF) and
/// returns it (`None` at the end of input); the bytes from it on are left
/// in `head`, the blanks before it dropped.
async fn first_byte<R: AsyncRead + Unpin>(
    reader: &mut R,
    head: &mut BytesMut,
) -> io::Result<Option<u8>> {
    loop {
        if let Some(i) = head
            .iter()
            .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        {
            let _ = head.split_to(i);
            return Ok(head.first().copied());
        }
        head.clear();
        if reader.read_buf(head).await? == 0 {
            return Ok(None);
        }
    }
}

/// How messages are framed on the output.
#[derive(Debug, Clone, Copy)]
enum Framing {
    /// `Content-Length` frames (MCP v1.0).
    Frames,
    /// One JSON line each (the Model Context Protocol).
    Lines,
}

impl Framing {
    /// The function that appends one message so framed.
    fn encoder(self) -> crate::session::outbox::FrameFn {
        match self {
            Self::Frames => super::frame::put_frame,
            Self::Lines => super::ndjson::put_line,
        }
    }
}

/// Writes what the session's senders framed, a chunk at a time (a burst
/// of small replies fits one: one write, one flush); returns when every
/// sender is gone, or with `BrokenPipe` as soon as `output_gone` completes
/// or a write fails (dropping the writer's end, which ends the session).
async fn write_messages<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut frames: FrameWriter,
    output_gone: impl Future<Output = ()>,
) -> io::Result<()> {
    tokio::pin!(output_gone);
    loop {
        let chunk = tokio::select! {
            biased;
            chunk = frames.next() => chunk,
            () = &mut output_gone => {
                tracing::warn!("stdout's reader is gone; the session ends");
                return Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "the output's reader is gone",
                ));
            }
        };
        let Some(chunk) = chunk else { break };
        tracing::trace!(bytes = chunk.len(), "frames written");
        let written = match writer.write_all(&chunk).await {
            Ok(()) => writer.flush().await,
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            // The peer is gone: dropping the writer's end stops the session.
            drop(frames);
            return Err(e);
        }
        frames.written(chunk);
    }
    writer.flush().await
}

/// Completes when the pipe whose write end `fd` is has no reader left: the
/// kernel then reports an error condition on it (`EPOLLERR`), even while
/// nothing is being written.
#[cfg(unix)]
async fn output_closed(fd: std::os::fd::OwnedFd) {
    let Ok(pipe) = tokio::net::unix::pipe::Sender::from_owned_fd(fd) else {
        return std::future::pending().await;
    };
    if pipe.ready(tokio::io::Interest::ERROR).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Stdin and stdout as non-blocking pipes on the reactor, if both are pipes,
/// and a second descriptor of stdout to watch for its reader going away.
#[cfg(unix)]
fn unix_pipes() -> Option<(
    tokio::net::unix::pipe::Receiver,
    tokio::net::unix::pipe::Sender,
    std::os::fd::OwnedFd,
)> {
    use std::os::fd::AsFd;
    let is_fifo = |fd: std::os::fd::BorrowedFd<'_>| {
        std::fs::File::from(fd.try_clone_to_owned().ok()?)
            .metadata()
            .ok()
            .map(|m| std::os::unix::fs::FileTypeExt::is_fifo(&m.file_type()))
    };
    let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
    if is_fifo(stdin.as_fd()) != Some(true) || is_fifo(stdout.as_fd()) != Some(true) {
        return None;
    }
    let input = std::fs::File::from(stdin.as_fd().try_clone_to_owned().ok()?);
    let output = std::fs::File::from(stdout.as_fd().try_clone_to_owned().ok()?);
    let watch = stdout.as_fd().try_clone_to_owned().ok()?;
    let reader = tokio::net::unix::pipe::Receiver::from_file(input).ok()?;
    let writer = tokio::net::unix::pipe::Sender::from_file(output).ok()?;
    Some((reader, writer, watch))
}
