//! Fixtures for `tests/http.rs`: a server with the tools the HTTP tests
//! need, a standalone HTTP server on a loopback port with a shutdown switch,
//! and a real HTTP/1.1 client (hyper's connection-level client) with
//! streaming request bodies and a line-by-line reader of streaming responses.
#![allow(dead_code)]

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use clawmcp::definition::{PromptDefinition, Role, ToolDefinition};
use clawmcp::resource::ResourceInfo;
use clawmcp::transport::HttpConfig;
use clawmcp::{
    Resource, Server, ServerBuilder, TextResource, ToolContext, ToolError, async_trait, tool_fn,
};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Frame, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{CONTENT_TYPE, HOST, HeaderMap};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::timeout;

/// How long a test waits for something that should happen before failing
/// (a hang guard, never a performance assertion).
pub const PATIENCE: Duration = Duration::from_secs(10);
/// How long a test listens to conclude that nothing (more) is coming.
pub const QUIET: Duration = Duration::from_millis(300);

pub const ECHO: &str = "mcp://http-test/tools/echo:v1";
pub const SLEEP: &str = "mcp://http-test/tools/sleep:v1";
/// Fires `resource_changed` for the `mcpId` argument.
pub const TOUCH: &str = "mcp://http-test/tools/touch:v1";
/// Increments [`COUNTER`] and fires `resource_changed` for it.
pub const BUMP: &str = "mcp://http-test/tools/bump:v1";
/// A [`TextResource`].
pub const NOTES: &str = "mcp://http-test/resources/notes.txt";
/// A custom [`Resource`] whose content is a counter.
pub const COUNTER: &str = "mcp://http-test/resources/counter";
pub const PLANNER: &str = "mcp://http-test/prompts/planner:v1";

// ---------------------------------------------------------------- server --

/// What the tools did: lets a test wait until a request is really running.
#[derive(Clone, Default)]
pub struct Probe {
    /// `sleep` calls that started.
    pub started: Arc<AtomicUsize>,
    /// `sleep` calls that saw their cancellation.
    pub cancelled: Arc<AtomicUsize>,
}

impl Probe {
    pub fn started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }

    pub fn cancelled(&self) -> usize {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Waits until at least `n` sleep calls have started.
    pub async fn wait_started(&self, n: usize) {
        timeout(PATIENCE, async {
            while self.started() < n {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{n} sleep calls did not start within {PATIENCE:?}"));
    }
}

fn object(properties: Value) -> Value {
    let required: Vec<String> = properties
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    json!({"type": "object", "additionalProperties": false,
           "required": required, "properties": properties})
}

fn def(mcp_id: &str, name: &str, input: Value, output: Value) -> ToolDefinition {
    ToolDefinition {
        mcp_id: mcp_id.into(),
        name: name.into(),
        description: format!("The {name} test tool."),
        input_schema: object(input),
        output_schema: object(output),
    }
}

/// The counter resource: its content is the number of `bump` calls.
struct Counter(Arc<AtomicU64>);

#[async_trait]
impl Resource for Counter {
    fn info(&self) -> ResourceInfo {
        ResourceInfo {
            mcp_id: COUNTER.into(),
            name: "counter".into(),
            description: "How many times bump ran.".into(),
            media_type: "text/plain".into(),
        }
    }

    async fn content(&self) -> Result<String, ToolError> {
        Ok(self.0.load(Ordering::SeqCst).to_string())
    }
}

/// The test server's items: echo, sleep, touch, bump, two resources, a prompt.
pub fn builder(probe: &Probe) -> ServerBuilder {
    let counter = Arc::new(AtomicU64::new(0));
    let bump_counter = counter.clone();
    let probe = probe.clone();
    Server::builder()
        .name("http-test")
        .version("0.0.1")
        .tool(tool_fn(
            def(
                ECHO,
                "echo",
                json!({"message": {"type": "string"}}),
                json!({"message": {"type": "string"}}),
            ),
            |args, _ctx| async move { Ok(json!({ "message": args["message"] })) },
        ))
        .tool(tool_fn(
            def(
                SLEEP,
                "sleep",
                json!({"ms": {"type": "integer", "minimum": 0, "maximum": 60000}}),
                json!({"sleptMs": {"type": "integer"}}),
            ),
            move |args, ctx: ToolContext| {
                let probe = probe.clone();
                async move {
                    let ms = args["ms"].as_u64().unwrap_or(0);
                    probe.started.fetch_add(1, Ordering::SeqCst);
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(ms)) => Ok(json!({ "sleptMs": ms })),
                        () = ctx.cancelled() => {
                            probe.cancelled.fetch_add(1, Ordering::SeqCst);
                            Err(ToolError::new("cancelled"))
                        }
                    }
                }
            },
        ))
        .tool(tool_fn(
            def(
                TOUCH,
                "touch",
                json!({"mcpId": {"type": "string"}}),
                json!({"touched": {"type": "string"}}),
            ),
            |args, ctx: ToolContext| async move {
                let id = args["mcpId"].as_str().unwrap_or_default().to_owned();
                ctx.server().resource_changed(&id);
                Ok(json!({ "touched": id }))
            },
        ))
        .tool(tool_fn(
            def(BUMP, "bump", json!({}), json!({"count": {"type": "integer"}})),
            move |_args, ctx: ToolContext| {
                let counter = bump_counter.clone();
                async move {
                    let count = counter.fetch_add(1, Ordering::SeqCst) + 1;
                    ctx.server().resource_changed(COUNTER);
                    Ok(json!({ "count": count }))
                }
            },
        ))
        .resource(TextResource::new(
            NOTES,
            "notes",
            "Some notes.",
            "text/plain",
            "Remember the milk.",
        ))
        .resource(Counter(counter))
        .prompt(PromptDefinition {
            mcp_id: PLANNER.into(),
            name: "planner".into(),
            description: Some("Plans before acting.".into()),
            role: Role::System,
            content: "Make a plan, then follow it.".into(),
        })
}

/// A standalone HTTP server (`serve_http_on`) on a loopback port.
pub struct TestServer {
    pub addr: SocketAddr,
    pub server: Server,
    pub probe: Probe,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl TestServer {
    /// The test server's items with default limits.
    pub async fn start(config: HttpConfig) -> Self {
        Self::start_with(config, |b| b).await
    }

    /// The test server's items, with the builder adjusted by `adjust`.
    pub async fn start_with(
        config: HttpConfig,
        adjust: impl FnOnce(ServerBuilder) -> ServerBuilder,
    ) -> Self {
        let probe = Probe::default();
        let server = adjust(builder(&probe))
            .build()
            .expect("the test server builds");
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("the bound address");
        let (shutdown, stop) = oneshot::channel::<()>();
        let serving = server.clone();
        // Dropping the sender (a test that panics) also shuts the server down.
        let task = tokio::spawn(async move {
            serving
                .serve_http_on(listener, config, async {
                    let _ = stop.await;
                })
                .await
        });
        Self {
            addr,
            server,
            probe,
            shutdown: Some(shutdown),
            task: Some(task),
        }
    }

    /// Triggers the shutdown future.
    pub fn shutdown(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }

    /// Waits for `serve_http_on` to return (after [`shutdown`](Self::shutdown)).
    pub async fn join(&mut self) -> io::Result<()> {
        let task = self.task.take().expect("joined once");
        timeout(PATIENCE, task)
            .await
            .unwrap_or_else(|_| panic!("serve_http_on did not return within {PATIENCE:?}"))
            .expect("the server task did not panic")
    }

    pub async fn client(&self) -> Client {
        Client::connect(self.addr).await
    }
}

// ---------------------------------------------------------------- client --

/// The request body type of every test request.
pub type ReqBody = BoxBody<Bytes, Infallible>;

pub fn full(bytes: impl Into<Bytes>) -> ReqBody {
    Full::new(bytes.into()).boxed()
}

pub fn empty() -> ReqBody {
    full(Bytes::new())
}

/// A request body fed through a channel: chunked on the wire (no known
/// length), open until the [`BodyWriter`] is dropped or ended.
struct ChannelBody(mpsc::UnboundedReceiver<Bytes>);

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
    }
}

/// The writing end of a streaming request body.
pub struct BodyWriter(mpsc::UnboundedSender<Bytes>);

impl BodyWriter {
    /// Sends one chunk of the body.
    pub fn send(&self, bytes: impl Into<Bytes>) {
        self.0
            .send(bytes.into())
            .expect("the request body is still being sent");
    }

    /// Sends one chunk of the body; false if the connection is gone.
    pub fn try_send(&self, bytes: impl Into<Bytes>) -> bool {
        self.0.send(bytes.into()).is_ok()
    }

    /// Sends a message as one compact JSON line.
    pub fn line(&self, message: &Value) {
        let mut line = serde_json::to_vec(message).expect("serialisable");
        line.push(b'\n');
        self.send(line);
    }

    /// Ends the body.
    pub fn end(self) {}
}

/// A streaming request body and its writer.
pub fn channel_body() -> (BodyWriter, ReqBody) {
    let (tx, rx) = mpsc::unbounded_channel();
    (BodyWriter(tx), ChannelBody(rx).boxed())
}

/// A request to `path` with a `Host` header and the given extra headers.
pub fn request(
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: ReqBody,
) -> Request<ReqBody> {
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .header(HOST, "127.0.0.1");
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(body).expect("a valid request")
}

/// `POST /mcp` with `Content-Type: application/json` and `body`.
pub fn post(body: ReqBody) -> Request<ReqBody> {
    post_with(&[], body)
}

/// `POST /mcp` with `Content-Type: application/json`, extra headers and `body`.
pub fn post_with(headers: &[(&str, &str)], body: ReqBody) -> Request<ReqBody> {
    let mut all = vec![("content-type", "application/json")];
    all.extend_from_slice(headers);
    request(Method::POST, "/mcp", &all, body)
}

/// `POST /mcp` with one JSON value as a `Content-Length` body.
pub fn post_json(message: &Value) -> Request<ReqBody> {
    post(full(serde_json::to_vec(message).expect("serialisable")))
}

/// One HTTP/1.1 connection.
pub struct Client {
    sender: SendRequest<ReqBody>,
    connection: JoinHandle<Result<(), hyper::Error>>,
}

impl Client {
    pub async fn connect(addr: SocketAddr) -> Self {
        let stream = timeout(PATIENCE, TcpStream::connect(addr))
            .await
            .expect("connect within PATIENCE")
            .expect("connect to the test server");
        Self::over(stream).await
    }

    /// A connection from `source` (another loopback address, say
    /// `127.0.0.2`: another peer, so another principal without OAuth).
    #[allow(dead_code)]
    pub async fn connect_from(addr: SocketAddr, source: std::net::IpAddr) -> Self {
        let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
        socket
            .bind(SocketAddr::new(source, 0))
            .expect("bind the source address");
        let stream = timeout(PATIENCE, socket.connect(addr))
            .await
            .expect("connect within PATIENCE")
            .expect("connect to the test server");
        Self::over(stream).await
    }

    async fn over(stream: TcpStream) -> Self {
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("an HTTP/1.1 handshake");
        Self {
            sender,
            connection: tokio::spawn(connection),
        }
    }

    /// Sends a request and returns the pending response: the request is on
    /// its way when this returns, so a streaming body can be written next.
    pub async fn start(
        &mut self,
        request: Request<ReqBody>,
    ) -> impl Future<Output = hyper::Result<Response<Incoming>>> + Send + 'static + use<> {
        timeout(PATIENCE, self.sender.ready())
            .await
            .expect("the connection became ready within PATIENCE")
            .expect("the connection is usable");
        self.sender.send_request(request)
    }

    /// Sends a request and waits for the response head.
    pub async fn send(&mut self, request: Request<ReqBody>) -> Response<Incoming> {
        let pending = self.start(request).await;
        head(pending).await
    }

    /// Sends a request and reads the whole response.
    pub async fn exchange(&mut self, request: Request<ReqBody>) -> Reply {
        let response = self.send(request).await;
        Reply::read(response).await
    }

    /// `POST /mcp` with one JSON value; the whole response.
    pub async fn post(&mut self, message: &Value) -> Reply {
        self.exchange(post_json(message)).await
    }

    /// Closes the connection (drops the sender) and waits until it is closed.
    pub async fn close(self) {
        drop(self.sender);
        let _ = timeout(PATIENCE, self.connection)
            .await
            .expect("the connection closed within PATIENCE");
    }
}

/// Waits for a pending response's head.
pub async fn head(
    pending: impl Future<Output = hyper::Result<Response<Incoming>>>,
) -> Response<Incoming> {
    timeout(PATIENCE, pending)
        .await
        .expect("a response head within PATIENCE")
        .expect("a response, not an HTTP error")
}

/// A whole response.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub async fn read(response: Response<Incoming>) -> Self {
        let (parts, body) = response.into_parts();
        let body = timeout(PATIENCE, body.collect())
            .await
            .expect("the whole response body within PATIENCE")
            .expect("a readable response body")
            .to_bytes();
        Self {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "the body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts `Content-Type: application/json` (parameters allowed).
    pub fn assert_json_content_type(&self) {
        assert_json_content_type(&self.headers);
    }
}

/// Asserts `Content-Type: application/json` (parameters allowed).
pub fn assert_json_content_type(headers: &HeaderMap) {
    let value = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .expect("a Content-Type header");
    let media = value.split(';').next().unwrap_or_default().trim();
    assert!(
        media.eq_ignore_ascii_case("application/json"),
        "Content-Type is {value:?}, not application/json"
    );
}

/// Asserts that a line is compact JSON: no white space outside strings.
pub fn assert_compact(line: &str) {
    let (mut in_string, mut escaped) = (false, false);
    for c in line.chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
        } else {
            assert!(!c.is_whitespace(), "the line is not compact JSON: {line:?}");
        }
    }
}

/// A streaming response read line by line, every line checked to be one
/// compact JSON message.
pub struct Lines {
    body: Incoming,
    buf: Vec<u8>,
    ended: bool,
    /// Messages read past while looking for a given reply.
    pub skipped: Vec<Value>,
}

/// What [`Lines::within`] saw.
#[derive(Debug)]
pub enum Next {
    Message(Value),
    End,
    Nothing,
}

impl Lines {
    pub fn new(response: Response<Incoming>) -> Self {
        Self {
            body: response.into_body(),
            buf: Vec::new(),
            ended: false,
            skipped: Vec::new(),
        }
    }

    /// Cancel-safe: data already received stays in `buf`.
    async fn read_line(&mut self) -> Option<String> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                let line = String::from_utf8(line[..i].to_vec()).expect("UTF-8 lines");
                return Some(line);
            }
            if self.ended {
                assert!(
                    self.buf.is_empty(),
                    "the stream ended in the middle of a line: {:?}",
                    String::from_utf8_lossy(&self.buf)
                );
                return None;
            }
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
                Some(Err(e)) => panic!("reading the streaming response failed: {e}"),
                None => self.ended = true,
            }
        }
    }

    fn parse(line: &str) -> Value {
        assert!(!line.is_empty(), "an empty line in the stream");
        assert_compact(line);
        let value: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("a line is not one JSON message ({e}): {line:?}"));
        assert!(value.is_object() || value.is_array(), "{line:?}");
        value
    }

    /// The next message, or `None` at the end of the response.
    pub async fn next(&mut self) -> Option<Value> {
        let line = timeout(PATIENCE, self.read_line())
            .await
            .unwrap_or_else(|_| panic!("no message within {PATIENCE:?}"));
        line.map(|l| Self::parse(&l))
    }

    /// What arrives within `wait`.
    pub async fn within(&mut self, wait: Duration) -> Next {
        match timeout(wait, self.read_line()).await {
            Ok(Some(line)) => Next::Message(Self::parse(&line)),
            Ok(None) => Next::End,
            Err(_) => Next::Nothing,
        }
    }

    /// The reply with this id; other messages are kept in `skipped`.
    pub async fn reply(&mut self, id: Value) -> Value {
        if let Some(i) = self.skipped.iter().position(|m| m.get("id") == Some(&id)) {
            return self.skipped.remove(i);
        }
        loop {
            let message = self
                .next()
                .await
                .unwrap_or_else(|| panic!("the stream ended without the reply to {id}"));
            if message.get("id") == Some(&id) && message.get("method").is_none() {
                return message;
            }
            self.skipped.push(message);
        }
    }

    /// Every remaining message, to the end of the response.
    pub async fn rest(&mut self) -> Vec<Value> {
        let mut all = std::mem::take(&mut self.skipped);
        while let Some(message) = self.next().await {
            all.push(message);
        }
        all
    }
}

// ------------------------------------------------------------- messages --

pub fn request_msg(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id})
}

pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

pub fn execute(id: i64, tool: &str, arguments: Value) -> Value {
    request_msg(
        json!(id),
        "mcp/executeTool",
        json!({"id": tool, "arguments": arguments}),
    )
}

pub fn echo(id: i64, message: &str) -> Value {
    execute(id, ECHO, json!({ "message": message }))
}

pub fn sleep(id: i64, ms: u64) -> Value {
    execute(id, SLEEP, json!({ "ms": ms }))
}

pub fn initialize() -> Value {
    request_msg(json!(1), "initialize", json!({"clientCapabilities": {}}))
}

pub fn initialized() -> Value {
    notification("initialized", json!({}))
}

pub fn resource_did_change(mcp_id: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": "mcp/resourceDidChange", "params": {"mcpId": mcp_id}})
}

/// The error code of an error reply.
pub fn error_code(reply: &Value) -> i64 {
    reply["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error reply: {reply}"))
}

/// Asserts a successful reply with this id and returns its result.
pub fn result(reply: &Value, id: i64) -> &Value {
    assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
    assert_eq!(reply["id"], json!(id), "{reply}");
    assert!(reply.get("error").is_none(), "an error reply: {reply}");
    &reply["result"]
}
