//! The HTTP/1.1 transport on hyper (PROTOCOL.md §8): `POST /mcp` as a
//! single exchange or a streaming session, as a hyper service to mount in
//! an existing app ([`McpService`]) or a standalone server
//! ([`Server::serve_http`]).

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::{ALLOW, AUTHORIZATION, CONTENT_TYPE, HeaderValue, ORIGIN, WWW_AUTHENTICATE};
use http::{Method, Request, Response, StatusCode};
use http_body::Body;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::de::IgnoredAny;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

use tokio_util::sync::CancellationToken;

use super::http_body::{BodyInputs, McpBody, next_data};
use super::json_stream::{JsonStreamDecoder, ValueScanner};
use crate::error::{ErrorCode, RpcError};
use crate::jsonrpc::{self, Incoming, Parsed, RequestId, encode_error};
use crate::protocol::methods;
use crate::server::{Server, Session};

/// Messages waiting for a streaming response before request tasks wait.
const OUTBOX: usize = 256;

/// Settings of the HTTP transport. Every setter states its default.
///
/// ```
/// use std::time::Duration;
/// use clawmcp::transport::HttpConfig;
///
/// let config = HttpConfig::default()
///     .path("/api/mcp")
///     .allow_origin("https://app.example.com")
///     .bearer_token("s3cret")
///     .header_read_timeout(Duration::from_secs(5))
///     .max_connections(256);
/// # let _ = config;
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct HttpConfig {
    path: String,
    allowed_origins: Vec<String>,
    bearer_token: Option<String>,
    header_read_timeout: Duration,
    max_connections: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            path: "/mcp".into(),
            allowed_origins: Vec::new(),
            bearer_token: None,
            header_read_timeout: Duration::from_secs(10),
            max_connections: 1024,
        }
    }
}

impl HttpConfig {
    /// The endpoint's path (default `/mcp`). Other paths get 404.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Allows browser requests from `origin` (e.g. `https://app.example.com`,
    /// or a bare host such as `app.example.com`). By default only loopback
    /// origins (`localhost`, `127.0.0.1`, `[::1]`) are allowed; a request
    /// with any other `Origin` gets 403 (DNS-rebinding defence). Requests
    /// without `Origin` are not affected.
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins
            .push(origin.into().to_ascii_lowercase());
        self
    }

    /// Requires `Authorization: Bearer <token>` on every request (default:
    /// none); a request without it gets 401.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// How long a client may take to send a request's headers, how long a
    /// kept-alive connection may stay idle between requests (standalone
    /// server only, [`Server::serve_http`]), and how long a body that is
    /// read whole may stall between two chunks (`408`) (default 10 s).
    /// A streaming session's body may idle as long as the client likes.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// How many connections the standalone server keeps open at once
    /// (default 1024); past it, it accepts no more until one closes.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }
}

/// The MCP endpoint as a hyper [`Service`](hyper::service::Service): mount
/// it next to an application's own routes, or let [`Server::serve_http`] run
/// it alone. Cheap to clone.
#[derive(Clone)]
pub struct McpService {
    server: Server,
    config: Arc<HttpConfig>,
    /// Cancelled when a standalone server shuts down (or the server's
    /// handle does): sessions drain and end once their replies are written.
    stop: Arc<CancellationToken>,
}

impl std::fmt::Debug for McpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpService")
            .field("config", &self.config)
            .finish()
    }
}

impl Server {
    /// The HTTP endpoint of this server, as a hyper service.
    pub fn http_service(&self, config: HttpConfig) -> McpService {
        McpService {
            server: self.clone(),
            config: Arc::new(config),
            stop: Arc::new(self.handle().stop_token().child_token()),
        }
    }

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
    /// (e.g. to port 0, reading the port back with `local_addr`).
    ///
    /// # Errors
    /// None today; the signature leaves room for listener failures.
    pub async fn serve_http_on(
        &self,
        listener: TcpListener,
        config: HttpConfig,
        shutdown: impl Future<Output = ()>,
    ) -> io::Result<()> {
        let header_read_timeout = config.header_read_timeout;
        let connections = Arc::new(Semaphore::new(config.max_connections));
        let service = self.http_service(config);
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
            let _ = stream.set_nodelay(true);
            let service = service.clone();
            tasks.spawn(async move {
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(header_read_timeout)
                    .serve_connection(TokioIo::new(stream), service.clone());
                tokio::pin!(connection);
                let result = tokio::select! {
                    result = connection.as_mut() => result,
                    () = service.stop.cancelled() => {
                        connection.as_mut().graceful_shutdown();
                        connection.await
                    }
                };
                if let Err(e) = result {
                    tracing::debug!(%peer, "connection ended: {e}");
                }
                drop(permit);
            });
            while tasks.try_join_next().is_some() {}
        }
        tracing::info!(
            "HTTP server shutting down: finishing {} connections",
            tasks.len()
        );
        service.stop.cancel();
        // Requests in flight get the grace period (and a little time to
        // write); a client that stops reading cannot hold the server longer.
        let grace = self.inner().limits.shutdown_grace + Duration::from_secs(5);
        let drained = async { while tasks.join_next().await.is_some() {} };
        if tokio::time::timeout(grace, drained).await.is_err() {
            tracing::warn!(
                "shutdown: {} connections did not finish in time; closing them",
                tasks.len()
            );
            tasks.shutdown().await;
        }
        Ok(())
    }
}

impl<B> hyper::service::Service<Request<B>> for McpService
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: std::fmt::Display,
{
    type Response = Response<McpBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<McpBody>, Infallible>> + Send>>;

    fn call(&self, request: Request<B>) -> Self::Future {
        let service = self.clone();
        Box::pin(async move { Ok(service.handle(request).await) })
    }
}

impl McpService {
    /// Answers one HTTP request (PROTOCOL.md §8): for an application that
    /// routes requests itself and hands this endpoint's to it.
    pub async fn handle<B>(&self, request: Request<B>) -> Response<McpBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: std::fmt::Display,
    {
        if request.uri().path() != self.config.path {
            return plain(
                StatusCode::NOT_FOUND,
                "not found: the MCP endpoint is elsewhere",
            );
        }
        if request.method() != Method::POST {
            let mut response = plain(
                StatusCode::METHOD_NOT_ALLOWED,
                "the MCP endpoint takes POST",
            );
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("POST"));
            return response;
        }
        if let Some(origin) = request.headers().get(ORIGIN)
            && !self.origin_allowed(origin)
        {
            return plain(StatusCode::FORBIDDEN, "this Origin is not allowed");
        }
        if !self.authorized(request.headers().get(AUTHORIZATION)) {
            let mut response = plain(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
            response
                .headers_mut()
                .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
        if !is_json(request.headers().get(CONTENT_TYPE)) {
            return plain(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Content-Type must be application/json",
            );
        }
        self.exchange(Box::pin(request.into_body())).await
    }

    fn origin_allowed(&self, origin: &HeaderValue) -> bool {
        let Ok(origin) = origin.to_str() else {
            return false;
        };
        let origin = origin.trim().to_ascii_lowercase();
        let host = origin_host(&origin);
        matches!(host, "localhost" | "127.0.0.1" | "[::1]")
            || self
                .config
                .allowed_origins
                .iter()
                .any(|allowed| *allowed == origin || allowed == host)
    }

    fn authorized(&self, header: Option<&HeaderValue>) -> bool {
        let Some(token) = &self.config.bearer_token else {
            return true;
        };
        let given = header
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.trim().split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map_or("", |(_, token)| token);
        constant_time_eq(given.trim().as_bytes(), token.as_bytes())
    }

    /// Reads the body until its first JSON value is complete, then serves it
    /// as a streaming session (first message `initialize`) or a single exchange.
    async fn exchange<B>(&self, mut body: Pin<Box<B>>) -> Response<McpBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: std::fmt::Display,
    {
        let limit = self.server.max_message_size();
        let mut buf = BytesMut::new();
        let mut scanner = ValueScanner::default();
        let mut ended = false;
        let first = loop {
            let lead = buf.iter().take_while(|b| b.is_ascii_whitespace()).count();
            if lead < buf.len()
                && let Some(end) = scanner.scan(&buf[lead..])
            {
                break Some(lead + end);
            }
            if buf.len() > limit {
                return too_large(limit);
            }
            match self.next_chunk(&mut body).await {
                Ok(Some(data)) => buf.extend_from_slice(&data),
                Ok(None) => {
                    ended = true;
                    break None;
                }
                Err(response) => return response,
            }
        };
        if first.is_some_and(|end| opens_session(&buf[..end])) {
            return self.stream(body, buf, ended);
        }
        while !ended {
            match self.next_chunk(&mut body).await {
                Ok(Some(data)) => buf.extend_from_slice(&data),
                Ok(None) => ended = true,
                Err(response) => return response,
            }
            if buf.len() > limit {
                return too_large(limit);
            }
        }
        self.single(buf.freeze(), first).await
    }

    /// The next chunk of a body that is being read whole: `408` when the
    /// client sends nothing for the header-read timeout, `400` when reading
    /// fails.
    async fn next_chunk<B>(
        &self,
        body: &mut Pin<Box<B>>,
    ) -> Result<Option<Bytes>, Response<McpBody>>
    where
        B: Body<Data = Bytes>,
        B::Error: std::fmt::Display,
    {
        match tokio::time::timeout(self.config.header_read_timeout, next_data(body)).await {
            Ok(Some(Ok(data))) => Ok(Some(data)),
            Ok(None) => Ok(None),
            Ok(Some(Err(e))) => Err(plain(
                StatusCode::BAD_REQUEST,
                &format!("reading the body failed: {e}"),
            )),
            Err(_) => Err(plain(StatusCode::REQUEST_TIMEOUT, "the body stalled")),
        }
    }

    /// A single exchange: one JSON value, an implicit initialized session,
    /// one JSON reply (or 202 for notifications only).
    async fn single(&self, body: Bytes, first_end: Option<usize>) -> Response<McpBody> {
        // One value, as the body scanner found it: the session parses it (and
        // says if it is not JSON). Anything after it is looked at closely.
        let one_value =
            first_end.is_some_and(|end| body[end..].iter().all(u8::is_ascii_whitespace));
        if !one_value {
            let mut values = serde_json::Deserializer::from_slice(&body).into_iter::<IgnoredAny>();
            let error = match (values.next(), values.next()) {
                (Some(Ok(_)), None) => None,
                (Some(Ok(_)), Some(Ok(_))) => Some(RpcError::invalid_request(
                    "a single exchange carries one JSON value (an object or a batch); \
                     to send several, open a streaming session with initialize",
                )),
                (Some(Err(e)), _) | (Some(Ok(_)), Some(Err(e))) => Some(RpcError::parse_error(
                    format!("body is not valid JSON: {e}"),
                )),
                (None, _) => Some(RpcError::parse_error("the body is empty")),
            };
            if let Some(error) = error {
                return json(
                    StatusCode::BAD_REQUEST,
                    encode_error(&RequestId::Null, &error),
                );
            }
        }
        match self.server.handle_message_until(body, &self.stop).await {
            (Some(reply), true) => json(StatusCode::BAD_REQUEST, reply),
            (Some(reply), false) => json(StatusCode::OK, reply),
            (None, _) => Response::builder()
                .status(StatusCode::ACCEPTED)
                .body(McpBody::empty())
                .unwrap_or_default(),
        }
    }

    /// A streaming session: the body's values are served as they arrive and
    /// every outgoing message is one line of the chunked response.
    fn stream<B>(&self, body: Pin<Box<B>>, buf: BytesMut, ended: bool) -> Response<McpBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: std::fmt::Display,
    {
        let (out, outbox) = mpsc::channel(OUTBOX);
        let session = Session::new(&self.server, out, Arc::new(self.stop.child_token()));
        let input = BodyInputs {
            body,
            buf,
            decoder: JsonStreamDecoder::new(self.server.max_message_size()),
            ended,
            finished: false,
        };
        tokio::spawn(session.run(input));
        Response::builder()
            .status(StatusCode::OK)
            .header(CONTENT_TYPE, "application/json")
            .body(McpBody::stream(outbox))
            .unwrap_or_default()
    }
}

/// Whether the first message of a body is `initialize`.
fn opens_session(first: &[u8]) -> bool {
    let holds = |needle: &[u8]| memchr::memmem::find(first, needle).is_some();
    if !holds(b"initialize") && !holds(b"\\u") {
        return false; // the common case, without parsing
    }
    let is_initialize = |m: &Incoming<'_>| matches!(m, Incoming::Request { method, .. } if method == methods::INITIALIZE);
    match jsonrpc::parse(first) {
        Parsed::Single(message) => is_initialize(&message),
        Parsed::Batch(messages) => messages.first().is_some_and(is_initialize),
        Parsed::Error(_) => false,
    }
}

fn plain(status: StatusCode, text: &str) -> Response<McpBody> {
    Response::builder()
        .status(status)
        .header(CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(McpBody::full(format!("{text}\n")))
        .unwrap_or_default()
}

fn json(status: StatusCode, body: Vec<u8>) -> Response<McpBody> {
    Response::builder()
        .status(status)
        .header(CONTENT_TYPE, "application/json")
        .body(McpBody::full(body))
        .unwrap_or_default()
}

fn too_large(limit: usize) -> Response<McpBody> {
    let error = RpcError::new(
        ErrorCode::MESSAGE_TOO_LARGE,
        format!("the body is over the limit of {limit} bytes"),
    );
    json(
        StatusCode::PAYLOAD_TOO_LARGE,
        encode_error(&RequestId::Null, &error),
    )
}

/// `application/json`, with any parameters.
fn is_json(content_type: Option<&HeaderValue>) -> bool {
    content_type
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// The host of an origin (`scheme://host[:port]`), brackets kept for IPv6.
fn origin_host(origin: &str) -> &str {
    let rest = origin.split_once("://").map_or(origin, |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or(rest);
    if authority.starts_with('[') {
        return authority.split_inclusive(']').next().unwrap_or(authority);
    }
    authority.split(':').next().unwrap_or(authority)
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_hosts() {
        assert_eq!(origin_host("http://localhost:3000"), "localhost");
        assert_eq!(origin_host("http://[::1]:8080"), "[::1]");
        assert_eq!(origin_host("https://evil.example"), "evil.example");
        assert_eq!(origin_host("null"), "null");
    }

    #[test]
    fn json_content_types() {
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON;charset=UTF-8",
        ] {
            assert!(is_json(Some(&HeaderValue::from_static(ok))), "{ok}");
        }
        for bad in [
            "text/plain",
            "application/jsonl",
            "application/x-www-form-urlencoded",
        ] {
            assert!(!is_json(Some(&HeaderValue::from_static(bad))), "{bad}");
        }
        assert!(!is_json(None));
    }

    #[test]
    fn first_message_initialize_opens_a_session() {
        assert!(opens_session(
            br#"{"jsonrpc":"2.0","method":"initialize","params":{},"id":1}"#
        ));
        assert!(opens_session(
            br#"[{"jsonrpc":"2.0","method":"initialize","id":1}]"#
        ));
        assert!(!opens_session(
            br#"{"jsonrpc":"2.0","method":"mcp/listTools","id":1}"#
        ));
        assert!(!opens_session(
            br#"{"jsonrpc":"2.0","method":"initialize"}"#
        ));
        assert!(!opens_session(b"{not json"));
    }
}
