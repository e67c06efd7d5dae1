//! The standalone HTTP server: the accept loop, the connection limit,
//! graceful shutdown, and connection hygiene — an HTTP/2 client is refused
//! in its own protocol, and a connection is closed the way RFC 9112 §9.6
//! asks (half-close, then read what the client still sends) so that a
//! response sent before its request's body was read is never lost to a
//! reset.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Sleep;

use super::quota::Quota;
use super::{HttpConfig, McpService, PeerAddr};
use crate::principal::CountedAs;
use crate::server::Server;

/// How long a closing connection keeps reading (and discarding) what its
/// client still sends, so the client reads the last response before the
/// connection goes.
const LINGER: Duration = Duration::from_secs(2);

/// How many refusals of a busy peer's connections are written at once.
const REFUSALS: usize = 64;

impl Server {
    /// Serves HTTP on `addr` until `shutdown` completes, then stops
    /// accepting, lets requests in flight finish, ends open streaming
    /// sessions once their replies are written, and returns.
    ///
    /// # Errors
    /// Binding `addr` failed.
    pub async fn serve_http(
        &self,
        addr: SocketAddr,
        config: HttpConfig,
        shutdown: impl Future<Output = ()>,
    ) -> io::Result<()> {
        let listener = TcpListener::bind(addr).await?;
        self.serve_http_on(listener, config, shutdown).await
    }

    /// [`serve_http`](Self::serve_http) on a listener the caller bound
    /// (e.g. to port 0, reading the port back with `local_addr`). On a
    /// loopback address, requests must carry a loopback `Host` (or one
    /// allowed by [`HttpConfig::allow_host`]).
    ///
    /// # Errors
    /// None: a failed `accept` (out of file descriptors, say) is logged
    /// and tried again after 50 ms. The result mirrors
    /// [`serve_http`](Self::serve_http)'s.
    pub async fn serve_http_on(
        &self,
        listener: TcpListener,
        mut config: HttpConfig,
        shutdown: impl Future<Output = ()>,
    ) -> io::Result<()> {
        config.path.get_or_insert_with(|| "/mcp".to_owned());
        // hyper adds it to an instant: a longer one would panic there.
        let header_read_timeout = config.header_read_timeout.min(crate::poll::FAR_AWAY);
        let send_timeout = config.send_timeout;
        let connections = Arc::new(Semaphore::new(config.max_connections));
        // Refusals being written: a few at once, apart from the connection
        // limit, so that a peer's flood of refused connections takes no
        // place from other clients.
        let refusals = Arc::new(Semaphore::new(REFUSALS));
        let per_peer = Quota::new(
            config
                .max_connections_per_peer
                .unwrap_or(config.max_connections / 4),
        );
        // A trusted proxy's connections carry many clients: they are held
        // to the connection limit only.
        let trusted = config.trusted_proxies.clone();
        let local = listener.local_addr().ok().map(|a| a.ip());
        let service = self.http_service_on(config, local);
        let mut tasks = JoinSet::new();
        // Ends the accept loop: the caller's future, or the server's handle.
        let server_stop = self.handle().stop_token().clone();
        let shutdown = async {
            tokio::select! {
                () = shutdown => {}
                () = server_stop.cancelled() => {}
            }
        };
        tokio::pin!(shutdown);
        loop {
            let permit = tokio::select! {
                permit = connections.clone().acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break,
                },
                () = &mut shutdown => break,
            };
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors and the like: wait, go on.
                        tracing::warn!("accepting a connection failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            let counted = (!trusted.trusts(peer.ip())).then(|| CountedAs::address(peer.ip()));
            let Ok(held) = per_peer.take(counted) else {
                tracing::debug!(%peer, "refusing a connection: max_connections_per_peer");
                drop(permit);
                // (With too many refusals under way, closed unanswered.)
                if let Ok(refusing) = refusals.clone().try_acquire_owned() {
                    tasks.spawn(refuse_busy_peer(stream, refusing));
                }
                continue;
            };
            let _ = stream.set_nodelay(true);
            let service = service.clone();
            tasks.spawn(async move {
                match preface(&stream, header_read_timeout).await {
                    Preface::Http1 => {}
                    Preface::Http2 => {
                        tracing::debug!(%peer, "refusing an HTTP/2 connection");
                        refuse_http2(stream).await;
                        return;
                    }
                    Preface::Silent => return,
                }
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(header_read_timeout)
                    .serve_connection(
                        TokioIo::new(Lingering::new(stream, send_timeout)),
                        Connected {
                            service: service.clone(),
                            peer: PeerAddr(peer),
                        },
                    );
                tokio::pin!(connection);
                let result = tokio::select! {
                    result = connection.as_mut() => result,
                    () = service.0.stop.cancelled() => {
                        connection.as_mut().graceful_shutdown();
                        connection.await
                    }
                };
                if let Err(e) = result {
                    tracing::debug!(%peer, "connection ended: {e}");
                }
                drop((held, permit));
            });
            while tasks.try_join_next().is_some() {}
        }
        tracing::info!(
            "HTTP server shutting down: finishing {} connections",
            tasks.len()
        );
        service.0.stop.cancel();
        // Running tasks (the tasks extension) start their grace period now.
        let running = &self.inner().tasks.running;
        self.inner().tasks.stopping.cancel();
        // Requests in flight get the grace period (and a little time to
        // write); a client that stops reading cannot hold the server longer.
        let deadline = crate::poll::deadline_in(
            (self.inner().limits.shutdown_grace).saturating_add(Duration::from_secs(5)),
        );
        let drained = async { while tasks.join_next().await.is_some() {} };
        if tokio::time::timeout_at(deadline, drained).await.is_err() {
            tracing::warn!(
                "shutdown: {} connections did not finish in time; closing them",
                tasks.len()
            );
            tasks.shutdown().await;
        }
        // Tasks had the same grace period: each records its end, failed
        // if it had to be stopped (with a moment to record it, however
        // long the connections took).
        running.close();
        let recorded = deadline.max(tokio::time::Instant::now() + Duration::from_secs(1));
        if tokio::time::timeout_at(recorded, running.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                "shutdown: {} tasks did not record their end in time",
                running.len()
            );
        }
        Ok(())
    }
}

/// How a connection opens.
#[derive(Debug, PartialEq, Eq)]
enum Preface {
    /// Anything but HTTP/2: hyper reads it (and answers bad requests).
    Http1,
    /// The HTTP/2 connection preface (prior knowledge).
    Http2,
    /// Nothing within the header-read timeout, or the client left.
    Silent,
}

/// The HTTP/2 client connection preface (RFC 9113 §3.4).
const HTTP2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Looks at a connection's first bytes without taking them.
async fn preface(stream: &TcpStream, wait: Duration) -> Preface {
    let deadline = crate::poll::deadline_in(wait);
    let mut buf = [0u8; 5];
    loop {
        let n = match tokio::time::timeout_at(deadline, stream.peek(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => n,
            _ => return Preface::Silent,
        };
        if !buf
            .get(..n)
            .is_some_and(|seen| HTTP2_PREFACE.starts_with(seen))
        {
            return Preface::Http1;
        }
        if n == buf.len() {
            return Preface::Http2; // `PRI *` begins nothing else
        }
        // A prefix of `PRI *` so far: wait for the rest.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Refuses a connection from a peer that holds `max_connections_per_peer`:
/// `429` with `Retry-After`, then the connection is closed (gracefully:
/// its request, unread, does not reset the answer), within a second,
/// holding one of the [`REFUSALS`] places (`_refusing`).
async fn refuse_busy_peer(stream: TcpStream, _refusing: tokio::sync::OwnedSemaphorePermit) {
    const BODY: &str = "this address holds as many connections as one client may \
                        (max_connections_per_peer): close one, or try again later\n";
    let refusal = format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: text/plain; charset=utf-8\r\n\
         retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{BODY}",
        BODY.len()
    );
    let mut io = Lingering::new(stream, Duration::from_secs(1));
    let write = async {
        io.write_all(refusal.as_bytes()).await?;
        io.shutdown().await
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
}

/// Refuses an HTTP/2 client in its own protocol: the server's preface (an
/// empty SETTINGS frame), then GOAWAY with HTTP_1_1_REQUIRED (RFC 9113 §7).
async fn refuse_http2(stream: TcpStream) {
    const REFUSAL: [u8; 26] = [
        0, 0, 0, 0x04, 0, 0, 0, 0, 0, // SETTINGS, empty, stream 0
        0, 0, 8, 0x07, 0, 0, 0, 0, 0, // GOAWAY, 8 bytes, stream 0
        0, 0, 0, 0, // last stream id 0
        0, 0, 0, 0x0d, // HTTP_1_1_REQUIRED
    ];
    let mut io = Lingering::new(stream, Duration::from_secs(1));
    if io.write_all(&REFUSAL).await.is_ok() {
        let _ = io.shutdown().await;
    }
}

pin_project_lite::pin_project! {
    /// A connection that closes gracefully: on shutdown it sends FIN, then
    /// reads and discards what the client still sends, until the client
    /// closes too or [`LINGER`] passes — so that data the server never read
    /// does not make the kernel answer with a reset that destroys the
    /// response the client has not read yet. A write that waits
    /// `send_timeout` for the client to read fails (`TimedOut`), which
    /// ends the connection.
    struct Lingering {
        #[pin]
        stream: TcpStream,
        closing: Closing,
        send_timeout: Duration,
        // Since a write began to wait, when it gives up.
        stalled: Option<Pin<Box<Sleep>>>,
    }
}

enum Closing {
    Open,
    Draining(Pin<Box<Sleep>>),
    Closed,
}

impl Lingering {
    fn new(stream: TcpStream, send_timeout: Duration) -> Self {
        Self {
            stream,
            closing: Closing::Open,
            send_timeout,
            stalled: None,
        }
    }
}

/// What a write came to, with the send timeout applied: one that waits
/// starts the timer (boxed: only a client that does not read pays for
/// it), one that goes on stops it, and one still waiting when the timer
/// fires fails.
fn timed_write<T>(
    written: Poll<io::Result<T>>,
    stalled: &mut Option<Pin<Box<Sleep>>>,
    send_timeout: Duration,
    cx: &mut Context<'_>,
) -> Poll<io::Result<T>> {
    if written.is_ready() {
        if stalled.is_some() {
            *stalled = None;
        }
        return written;
    }
    let timer = stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(send_timeout)));
    ready!(timer.as_mut().poll(cx));
    Poll::Ready(Err(io::Error::new(
        io::ErrorKind::TimedOut,
        "the client read nothing for the send timeout",
    )))
}

impl AsyncRead for Lingering {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.project().stream.poll_read(cx, buf)
    }
}

impl AsyncWrite for Lingering {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        let written = this.stream.poll_write(cx, buf);
        timed_write(written, this.stalled, *this.send_timeout, cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        let written = this.stream.poll_write_vectored(cx, bufs);
        timed_write(written, this.stalled, *this.send_timeout, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().stream.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut this = self.project();
        loop {
            match this.closing {
                Closing::Open => {
                    // FIN: the client reads the response, then sees the end.
                    let _ = ready!(this.stream.as_mut().poll_shutdown(cx));
                    *this.closing = Closing::Draining(Box::pin(tokio::time::sleep(LINGER)));
                }
                Closing::Draining(linger) => {
                    let mut scratch = [0u8; 4096];
                    let mut buf = ReadBuf::new(&mut scratch);
                    match this.stream.as_mut().poll_read(cx, &mut buf) {
                        // More of what the client sent: discard it, read on.
                        Poll::Ready(Ok(())) if !buf.filled().is_empty() => continue,
                        // The client closed too (or the connection broke).
                        Poll::Ready(_) => *this.closing = Closing::Closed,
                        Poll::Pending => {
                            ready!(linger.as_mut().poll(cx));
                            *this.closing = Closing::Closed;
                        }
                    }
                }
                Closing::Closed => return Poll::Ready(Ok(())),
            }
        }
    }
}

/// The endpoint, as one connection serves it: each request carries its
/// peer's address, which the limits per principal count without OAuth.
#[derive(Clone)]
struct Connected {
    service: McpService,
    peer: PeerAddr,
}

impl hyper::service::Service<http::Request<hyper::body::Incoming>> for Connected {
    type Response = http::Response<super::McpBody>;
    type Error = std::convert::Infallible;
    type Future = super::Responding;

    fn call(&self, request: http::Request<hyper::body::Incoming>) -> Self::Future {
        let (service, peer) = (self.service.clone(), self.peer);
        Box::pin(async move { Ok(service.respond_to(request, Some(peer)).await) })
    }
}
