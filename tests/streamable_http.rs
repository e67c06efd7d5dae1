//! Streamable HTTP, the Model Context Protocol's HTTP transport
//! (docs/model-context.md §1 and §5, transports.mdx of the 2025-11-25 revision),
//! against a real HTTP/1.1 client over loopback sockets: sessions, the
//! `Accept` and version rules, JSON or SSE answers, the `GET` stream,
//! `DELETE`, cancellation, elicitation, limits, dialect selection on the
//! shared endpoint, Origin/Host, and shutdown. Each test is named after the
//! rule it proves.
//!
//! Timeouts are hang guards only (`PATIENCE`); `QUIET` windows only ever
//! prove that something did *not* arrive, never how fast something did.

mod http_support;
mod model_context_support;

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use clawmcp::SharedResource;
use clawmcp::transport::HttpConfig;
use http_support::{Client, Reply, ReqBody, empty, full, head};
use hyper::body::Incoming;
use hyper::header::{HOST, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use model_context_support::{PATIENCE, Probe, QUIET, STATUS};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::timeout;

use http_body_util::BodyExt;

/// What a client of this transport must accept on every POST.
const ACCEPT_BOTH: &str = "application/json, text/event-stream";
const VERSION: &str = "2025-11-25";

// ---------------------------------------------------------------- server --

/// The Model Context Protocol fixtures served by `serve_http_on` on a
/// loopback port, with a shutdown switch.
struct McServer {
    addr: SocketAddr,
    probe: Probe,
    #[allow(dead_code)]
    status: SharedResource,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl McServer {
    async fn start(config: HttpConfig) -> Self {
        Self::start_with(config, |builder| builder).await
    }

    /// A server whose builder `adjust` changes first.
    async fn start_with(
        config: HttpConfig,
        adjust: impl FnOnce(clawmcp::ServerBuilder) -> clawmcp::ServerBuilder,
    ) -> Self {
        let probe = Probe::default();
        let status = model_context_support::status();
        let server = adjust(model_context_support::builder(&probe, &status))
            .build()
            .expect("the test server builds");
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("the bound address");
        let (shutdown, stop) = oneshot::channel::<()>();
        // Dropping the sender (a test that panics) also shuts the server down.
        let task = tokio::spawn(async move {
            server
                .serve_http_on(listener, config, async {
                    let _ = stop.await;
                })
                .await
        });
        Self {
            addr,
            probe,
            status,
            shutdown: Some(shutdown),
            task: Some(task),
        }
    }

    async fn default() -> Self {
        Self::start(HttpConfig::default()).await
    }

    fn shutdown(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }

    async fn join(&mut self) -> io::Result<()> {
        let task = self.task.take().expect("joined once");
        timeout(PATIENCE, task)
            .await
            .unwrap_or_else(|_| panic!("serve_http_on did not return within {PATIENCE:?}"))
            .expect("the server task did not panic")
    }

    async fn client(&self) -> Client {
        Client::connect(self.addr).await
    }

    /// One request on a fresh connection; the whole response.
    async fn exchange(&self, request: Request<ReqBody>) -> Reply {
        let mut client = self.client().await;
        client.exchange(request).await
    }

    /// One request on a fresh connection; the response head (the client is
    /// returned so that its connection stays up while the body is read).
    async fn send(&self, request: Request<ReqBody>) -> (Client, Response<Incoming>) {
        let mut client = self.client().await;
        let response = client.send(request).await;
        (client, response)
    }

    /// `initialize` with these client capabilities: the session id and the
    /// reply; then `notifications/initialized`.
    async fn open_session(&self, capabilities: Value) -> String {
        let reply = self.exchange(initialize_request(capabilities)).await;
        assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
        let id = reply
            .header("mcp-session-id")
            .unwrap_or_else(|| panic!("initialize carries Mcp-Session-Id: {reply:?}"))
            .to_owned();
        let done = self
            .exchange(post(
                Some(&id),
                &notification("notifications/initialized", json!({})),
            ))
            .await;
        assert_eq!(done.status, StatusCode::ACCEPTED, "{done:?}");
        id
    }

    async fn session(&self) -> String {
        self.open_session(json!({})).await
    }
}

// -------------------------------------------------------------- requests --

/// A request to `/mcp`; `Host: 127.0.0.1` unless `headers` name a Host.
fn build(method: Method, headers: &[(&str, &str)], body: ReqBody) -> Request<ReqBody> {
    let mut builder = Request::builder().method(method).uri("/mcp");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        builder = builder.header(HOST, "127.0.0.1");
    }
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(body).expect("a valid request")
}

/// A POST of `body` with exactly these headers (Host aside).
fn post_raw(headers: &[(&str, &str)], body: impl Into<bytes::Bytes>) -> Request<ReqBody> {
    build(Method::POST, headers, full(body))
}

/// A well-formed POST of one message (with the session id, if any).
fn post(session: Option<&str>, message: &Value) -> Request<ReqBody> {
    post_with(session, &[], message)
}

/// A well-formed POST of one message with extra headers.
fn post_with(session: Option<&str>, extra: &[(&str, &str)], message: &Value) -> Request<ReqBody> {
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", ACCEPT_BOTH),
    ];
    if let Some(id) = session {
        headers.push(("mcp-session-id", id));
    }
    headers.extend_from_slice(extra);
    post_raw(&headers, serde_json::to_vec(message).expect("serialisable"))
}

/// `GET` of the session's stream.
fn get_stream(session: &str) -> Request<ReqBody> {
    build(
        Method::GET,
        &[("accept", "text/event-stream"), ("mcp-session-id", session)],
        empty(),
    )
}

fn delete(session: &str) -> Request<ReqBody> {
    build(Method::DELETE, &[("mcp-session-id", session)], empty())
}

fn init_params(capabilities: Value) -> Value {
    json!({"protocolVersion": VERSION, "capabilities": capabilities,
           "clientInfo": {"name": "streamable-test", "version": "1"}})
}

fn initialize_request(capabilities: Value) -> Request<ReqBody> {
    post(
        None,
        &rpc(json!(1), "initialize", init_params(capabilities)),
    )
}

fn rpc(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

fn call(id: i64, tool: &str, arguments: Value) -> Value {
    rpc(
        json!(id),
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

fn list_tools(id: i64) -> Value {
    rpc(json!(id), "tools/list", json!({}))
}

/// The media type of a response (parameters dropped, lowercase).
fn media(headers: &hyper::HeaderMap) -> String {
    headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default()
}

fn assert_json_reply(reply: &Reply) -> Value {
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    assert_eq!(media(&reply.headers), "application/json", "{reply:?}");
    reply.json()
}

/// The text of the first content block of a `tools/call` result.
fn text_of(reply: &Value) -> String {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {reply}"))
        .to_owned()
}

fn is_response_to(message: &Value, id: &Value) -> bool {
    message.get("id") == Some(id) && message.get("method").is_none()
}

/// Waits for `condition` (a hang guard).
async fn eventually(what: &str, condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

// ------------------------------------------------------------------- SSE --

/// One server-sent event.
#[derive(Debug)]
enum Event {
    /// A `message` event carrying one JSON-RPC message.
    Message(Value),
    /// A block of comment lines only (keep-alive).
    Comment(String),
}

/// What [`Sse::within`] saw.
#[derive(Debug)]
enum Next {
    Message(Value),
    End,
    Nothing,
}

/// A `text/event-stream` response read event by event.
struct Sse {
    body: Incoming,
    buf: Vec<u8>,
    ended: bool,
    _client: Option<Client>,
}

impl Sse {
    /// Asserts `200 text/event-stream` and reads the body as events.
    fn new(response: Response<Incoming>, client: Option<Client>) -> Self {
        assert_eq!(response.status(), StatusCode::OK, "{response:?}");
        assert_eq!(
            media(response.headers()),
            "text/event-stream",
            "{response:?}"
        );
        Self {
            body: response.into_body(),
            buf: Vec::new(),
            ended: false,
            _client: client,
        }
    }

    /// The next event block (without its blank line); cancel-safe.
    async fn read_block(&mut self) -> Option<String> {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buf.drain(..i + 2).collect();
                return Some(String::from_utf8(block[..i].to_vec()).expect("UTF-8 events"));
            }
            if self.ended {
                assert!(
                    self.buf.iter().all(u8::is_ascii_whitespace),
                    "the stream ended in the middle of an event: {:?}",
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
                Some(Err(e)) => panic!("reading the event stream failed: {e}"),
                None => self.ended = true,
            }
        }
    }

    fn parse(block: &str) -> Event {
        let (mut data, mut comments, mut name) = (Vec::new(), Vec::new(), None);
        for line in block.split('\n').map(|l| l.trim_end_matches('\r')) {
            if let Some(comment) = line.strip_prefix(':') {
                comments.push(comment.trim().to_owned());
            } else if let Some(d) = line.strip_prefix("data:") {
                data.push(d.strip_prefix(' ').unwrap_or(d).to_owned());
            } else if let Some(e) = line.strip_prefix("event:") {
                name = Some(e.trim().to_owned());
            } else if line.starts_with("id:") || line.starts_with("retry:") || line.is_empty() {
            } else {
                panic!("not an SSE field line: {line:?} in {block:?}");
            }
        }
        if data.is_empty() {
            assert!(
                !comments.is_empty(),
                "an event with neither data nor comment: {block:?}"
            );
            return Event::Comment(comments.join("\n"));
        }
        assert!(
            name.as_deref().is_none_or(|n| n == "message"),
            "a JSON-RPC message travels as a `message` event: {block:?}"
        );
        let json = data.join("\n");
        let value: Value = serde_json::from_str(&json)
            .unwrap_or_else(|e| panic!("an event's data is not JSON ({e}): {block:?}"));
        assert!(
            value.is_object(),
            "one JSON-RPC message per event: {block:?}"
        );
        Event::Message(value)
    }

    /// The next event, or `None` at the end of the stream.
    async fn next_event(&mut self) -> Option<Event> {
        timeout(PATIENCE, self.read_block())
            .await
            .unwrap_or_else(|_| panic!("no event within {PATIENCE:?}"))
            .map(|b| Self::parse(&b))
    }

    /// The next message (comments skipped), or `None` at the end.
    async fn next(&mut self) -> Option<Value> {
        loop {
            match self.next_event().await? {
                Event::Message(message) => return Some(message),
                Event::Comment(_) => {}
            }
        }
    }

    /// The first message that satisfies `wanted`; others are returned too.
    async fn until(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let message = self
                .next()
                .await
                .unwrap_or_else(|| panic!("the stream ended before {what}; saw {seen:?}"));
            let done = wanted(&message);
            seen.push(message);
            if done {
                return seen;
            }
        }
    }

    /// What message (comments skipped) arrives within `wait`.
    async fn within(&mut self, wait: Duration) -> Next {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match tokio::time::timeout_at(deadline, self.read_block()).await {
                Err(_) => return Next::Nothing,
                Ok(None) => return Next::End,
                Ok(Some(block)) => match Self::parse(&block) {
                    Event::Message(m) => return Next::Message(m),
                    Event::Comment(_) => {}
                },
            }
        }
    }

    /// Every remaining message, to the end of the stream.
    async fn rest(&mut self) -> Vec<Value> {
        let mut all = Vec::new();
        while let Some(message) = self.next().await {
            all.push(message);
        }
        all
    }
}

/// A POST that is answered with an event stream.
async fn open_sse(server: &McServer, request: Request<ReqBody>) -> Sse {
    let (client, response) = server.send(request).await;
    Sse::new(response, Some(client))
}

// ================================================================ tests ==

// 1 -----------------------------------------------------------------------

#[tokio::test]
async fn initialize_is_answered_as_json_with_a_128_bit_visible_ascii_session_id() {
    let server = McServer::default().await;
    let reply = server.exchange(initialize_request(json!({}))).await;
    let body = assert_json_reply(&reply);
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["id"], 1, "{body}");
    assert_eq!(body["result"]["protocolVersion"], VERSION, "{body}");
    let first = reply
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("an Mcp-Session-Id header: {reply:?}"))
        .to_owned();
    assert!(
        first.len() >= 32,
        "a session id of at least 128 bits (32 hex digits): {first:?}"
    );
    assert!(
        first.bytes().all(|b| (0x21..=0x7e).contains(&b)),
        "a session id is visible ASCII: {first:?}"
    );

    let again = server.exchange(initialize_request(json!({}))).await;
    assert_json_reply(&again);
    let second = again.header("mcp-session-id").expect("a second session id");
    assert_ne!(first, second, "two sessions get different ids");
}

// 2 -----------------------------------------------------------------------

#[tokio::test]
async fn initialized_notification_is_accepted_with_202_and_an_empty_body() {
    let server = McServer::default().await;
    let reply = server.exchange(initialize_request(json!({}))).await;
    assert_json_reply(&reply);
    let id = reply.header("mcp-session-id").expect("a session id");
    let done = server
        .exchange(post(
            Some(id),
            &notification("notifications/initialized", json!({})),
        ))
        .await;
    assert_eq!(done.status, StatusCode::ACCEPTED, "{done:?}");
    assert!(done.body.is_empty(), "a 202 has no body: {done:?}");
}

// 3 -----------------------------------------------------------------------

#[tokio::test]
async fn a_request_without_session_id_is_400_and_with_an_unknown_one_404() {
    let server = McServer::default().await;
    let session = server.session().await;

    let missing = server.exchange(post(None, &list_tools(2))).await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST, "{missing:?}");

    let unknown = server
        .exchange(post(
            Some("0123456789abcdef0123456789abcdef"),
            &list_tools(3),
        ))
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{unknown:?}");

    // The same for the GET stream.
    let get = server
        .exchange(build(
            Method::GET,
            &[("accept", "text/event-stream")],
            empty(),
        ))
        .await;
    assert_eq!(get.status, StatusCode::BAD_REQUEST, "{get:?}");
    let get = server
        .exchange(get_stream("0123456789abcdef0123456789abcdef"))
        .await;
    assert_eq!(get.status, StatusCode::NOT_FOUND, "{get:?}");

    // The session itself still works.
    let ok = server.exchange(post(Some(&session), &list_tools(4))).await;
    let body = assert_json_reply(&ok);
    assert!(body["result"]["tools"].is_array(), "{body}");
}

#[tokio::test]
async fn protocol_version_header_must_be_absent_or_a_version_served_over_http() {
    let server = McServer::default().await;
    let session = server.session().await;

    let bad = server
        .exchange(post_with(
            Some(&session),
            &[("mcp-protocol-version", "2099-01-01")],
            &list_tools(2),
        ))
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{bad:?}");
    // A version this server does not speak: -32022, listing those it does
    // (2026-07-28's negotiation), once the session id is known good.
    let body = bad.json();
    assert_eq!(body["error"]["code"], -32022, "{body}");
    assert_eq!(body["id"], 2, "{body}");
    assert_eq!(body["error"]["data"]["requested"], "2099-01-01", "{body}");
    assert_eq!(
        body["error"]["data"]["supported"],
        json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]),
        "{body}"
    );
    // The session id is checked first: an unknown one is 404.
    let unknown = server
        .exchange(post_with(
            Some("0123456789abcdef0123456789abcdef"),
            &[("mcp-protocol-version", "2099-01-01")],
            &list_tools(3),
        ))
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{unknown:?}");
    // GET and DELETE of the session: 400, and the session lives on.
    let bad_version = [("mcp-protocol-version", "2099-01-01")];
    let mut get = vec![
        ("accept", "text/event-stream"),
        ("mcp-session-id", session.as_str()),
    ];
    get.extend_from_slice(&bad_version);
    let reply = server.exchange(build(Method::GET, &get, empty())).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "GET: {reply:?}");
    assert_eq!(reply.json()["error"]["code"], -32022);
    let mut delete = vec![("mcp-session-id", session.as_str())];
    delete.extend_from_slice(&bad_version);
    let reply = server
        .exchange(build(Method::DELETE, &delete, empty()))
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "DELETE: {reply:?}");
    let delete_unknown = [
        ("mcp-session-id", "0123456789abcdef0123456789abcdef"),
        bad_version[0],
    ];
    let reply = server
        .exchange(build(Method::DELETE, &delete_unknown, empty()))
        .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "DELETE: {reply:?}");
    // Bytes that are not a visible-ASCII version are no version it speaks:
    // 400 for each, and the session is not ended.
    let not_ascii = HeaderValue::from_bytes("2025-11-25\u{e9}".as_bytes()).expect("opaque bytes");
    for method in [Method::POST, Method::GET, Method::DELETE] {
        let mut request = match method {
            Method::POST => post(Some(&session), &list_tools(4)),
            _ => build(
                method.clone(),
                &[
                    ("accept", "text/event-stream"),
                    ("mcp-session-id", session.as_str()),
                ],
                empty(),
            ),
        };
        request
            .headers_mut()
            .insert("mcp-protocol-version", not_ascii.clone());
        let reply = server.exchange(request).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{method}: {reply:?}");
        assert_eq!(reply.json()["error"]["code"], -32022, "{method}");
    }
    let alive = server.exchange(post(Some(&session), &list_tools(5))).await;
    let body = assert_json_reply(&alive);
    assert!(
        body["result"]["tools"].is_array(),
        "the session lives on: {body}"
    );

    for (n, version) in ["2025-03-26", "2025-06-18", "2025-11-25"]
        .into_iter()
        .enumerate()
    {
        let reply = server
            .exchange(post_with(
                Some(&session),
                &[("mcp-protocol-version", version)],
                &list_tools(10 + n as i64),
            ))
            .await;
        let body = assert_json_reply(&reply);
        assert_eq!(body["id"], 10 + n as i64, "{version}: {body}");
        assert!(body["result"]["tools"].is_array(), "{version}: {body}");
    }

    let absent = server.exchange(post(Some(&session), &list_tools(20))).await;
    let body = assert_json_reply(&absent);
    assert!(body["result"]["tools"].is_array(), "{body}");
}

// 4 -----------------------------------------------------------------------

#[tokio::test]
async fn a_post_whose_accept_lacks_json_or_event_stream_is_406() {
    let server = McServer::default().await;
    let session = server.session().await;
    let body = serde_json::to_vec(&list_tools(2)).expect("serialisable");
    for accept in [
        Some("application/json"),
        Some("text/event-stream"),
        Some("text/plain"),
        None,
    ] {
        let mut headers = vec![
            ("content-type", "application/json"),
            ("mcp-session-id", session.as_str()),
        ];
        if let Some(accept) = accept {
            headers.push(("accept", accept));
        }
        let reply = server.exchange(post_raw(&headers, body.clone())).await;
        assert_eq!(
            reply.status,
            StatusCode::NOT_ACCEPTABLE,
            "Accept {accept:?}: {reply:?}"
        );
    }

    let reversed = server
        .exchange(post_raw(
            &[
                ("content-type", "application/json"),
                ("accept", "text/event-stream, application/json"),
                ("mcp-session-id", session.as_str()),
            ],
            body,
        ))
        .await;
    let reply = assert_json_reply(&reversed);
    assert!(reply["result"]["tools"].is_array(), "{reply}");
}

// 5 -----------------------------------------------------------------------

#[tokio::test]
async fn a_call_whose_reply_comes_first_is_answered_as_json() {
    let server = McServer::default().await;
    let session = server.session().await;
    let reply = server
        .exchange(post(
            Some(&session),
            &call(7, "echo", json!({"message": "hello"})),
        ))
        .await;
    let body = assert_json_reply(&reply);
    assert_eq!(body["id"], 7, "{body}");
    assert_eq!(
        body["result"]["structuredContent"]["message"], "hello",
        "{body}"
    );
}

/// A body over the message limit is refused with `413` before it is read
/// whole, with the error the dialect its head names gives a message over
/// the size limit: the Model Context Protocol's `-32600` (not MCP v1.0's
/// `-32006`), without an `id` member (the request's is unknown). The
/// server serves the next request.
#[tokio::test]
async fn a_body_over_the_message_limit_is_413_with_the_model_context_protocols_error() {
    let server = McServer::start_with(HttpConfig::default(), |b| b.max_message_size(1024)).await;
    let session = server.session().await;
    let big = call(2, "echo", json!({"message": "x".repeat(2000)}));
    let revision_2026 = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "echo"),
    ];
    for (what, request) in [
        ("in a session", post(Some(&session), &big)),
        ("2026-07-28", post_with(None, &revision_2026, &big)),
    ] {
        let reply = server.exchange(request).await;
        assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE, "{what}");
        let body = reply.json();
        assert_eq!(body["error"]["code"], -32600, "{what}: {body}");
        assert!(body.get("id").is_none(), "{what}: {body}");
    }
    let reply = server
        .exchange(post(
            Some(&session),
            &call(3, "echo", json!({"message": "after"})),
        ))
        .await;
    assert_eq!(assert_json_reply(&reply)["id"], 3);
}

/// Sends `request` on a connection of its own; its reply is read in a
/// task.
async fn in_background(
    server: &McServer,
    request: Request<ReqBody>,
) -> tokio::task::JoinHandle<Reply> {
    let mut client = server.client().await;
    let pending = client.start(request).await;
    tokio::spawn(async move {
        let reply = Reply::read(head(pending).await).await;
        drop(client);
        reply
    })
}

/// A session serves at most `max_in_flight` requests at once, whichever
/// POSTs carry them: one past the limit waits for a slot (and is answered
/// once it gets one), and a request sent after it does not overtake it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_past_the_in_flight_limit_wait_in_order_for_a_slot() {
    let server = McServer::start_with(HttpConfig::default(), |b| b.max_in_flight(1)).await;
    let session = server.session().await;
    let start = |id: i64, tool: &'static str, arguments: Value| {
        let request = post(Some(&session), &call(id, tool, arguments));
        in_background(&server, request)
    };
    let gated = start(1, "gate", json!({})).await;
    server
        .probe
        .wait_for("the gate tool runs", |p| p.started() == 1)
        .await;
    let waiting = start(2, "gate", json!({})).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let after = start(3, "echo", json!({"message": "late"})).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        server.probe.started(),
        1,
        "a second request ran past the limit"
    );
    assert!(
        !waiting.is_finished() && !after.is_finished(),
        "answered past the limit"
    );

    server.probe.gate.add_permits(1);
    assert_eq!(assert_json_reply(&gated.await.unwrap())["id"], 1);
    server
        .probe
        .wait_for("the parked request runs", |p| p.started() == 2)
        .await;
    assert!(!after.is_finished(), "the echo overtook the parked request");
    server.probe.gate.add_permits(1);
    assert_eq!(assert_json_reply(&waiting.await.unwrap())["id"], 2);
    let late = assert_json_reply(&after.await.unwrap());
    assert_eq!(
        late["result"]["structuredContent"]["message"], "late",
        "{late}"
    );
}

/// A POST whose client goes while its message waits for room in the
/// session's input is forgotten: its id is free again, and the session
/// is not left with a request in flight that nothing will answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_gone_before_its_message_reached_the_session_leaves_no_request_in_flight() {
    let server = McServer::start_with(HttpConfig::default(), |b| {
        b.max_in_flight(1).max_message_size(1024)
    })
    .await;
    let session = server.session().await;
    let padded = |id: i64| call(id, "echo", json!({"message": "p".repeat(500)}));
    let gated = in_background(&server, post(Some(&session), &call(1, "gate", json!({})))).await;
    server
        .probe
        .wait_for("the gate tool runs", |p| p.started() == 1)
        .await;
    // Two requests parked past the read-ahead bound, then the session's
    // input queue filled: the reader reads no more.
    let mut waiting = Vec::new();
    for id in 2..70 {
        waiting.push(in_background(&server, post(Some(&session), &padded(id))).await);
        if id < 4 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let gone = in_background(&server, post(Some(&session), &padded(999))).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    gone.abort();
    let _ = gone.await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    server.probe.gate.add_permits(1);
    assert_eq!(assert_json_reply(&gated.await.unwrap())["id"], 1);
    for (request, id) in waiting.into_iter().zip(2..) {
        assert_eq!(assert_json_reply(&request.await.unwrap())["id"], id);
    }
    let again = server.exchange(post(Some(&session), &padded(999))).await;
    assert_eq!(
        assert_json_reply(&again)["id"],
        999,
        "the id of the POST that went is free"
    );
}

/// `DELETE` ends the session's work: the request in flight is cancelled,
/// and those parked behind it, or waiting in its input, never run (their
/// clients, told the session is gone, would send them again elsewhere).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_cancels_the_request_in_flight_and_runs_none_parked_behind_it() {
    let server = McServer::start_with(HttpConfig::default(), |b| b.max_in_flight(1)).await;
    let session = server.session().await;
    let running = in_background(&server, post(Some(&session), &call(1, "gate", json!({})))).await;
    server
        .probe
        .wait_for("the gate tool runs", |p| p.started() == 1)
        .await;
    let mut parked = Vec::new();
    for id in 2..5 {
        parked
            .push(in_background(&server, post(Some(&session), &call(id, "gate", json!({})))).await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        server.exchange(delete(&session)).await.status,
        StatusCode::NO_CONTENT
    );
    server.probe.gate.add_permits(8);
    let _ = running.await;
    for request in parked {
        let reply = request.await.unwrap();
        assert_eq!(
            reply.status,
            StatusCode::NOT_FOUND,
            "a parked POST: {reply:?}"
        );
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        server.probe.started(),
        1,
        "a request parked in a deleted session ran"
    );
}

/// A `subscriptions/listen` is the 2026-07-28 revision's over HTTP even
/// with a session id: without that revision's headers it is refused (400),
/// never opened as an uncounted stream that would hold its session open;
/// with them (a route the headers alone decide) it takes one of
/// `max_streams`, 503 past it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_posted_with_a_session_id_is_a_counted_2026_stream_or_refused() {
    let server = McServer::start_with(HttpConfig::default().max_streams(1), |b| b).await;
    let session = server.session().await;
    let listen = |id: &str| {
        rpc(
            json!(id),
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true},
                   "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}}}),
        )
    };
    let in_session = server
        .exchange(post(Some(&session), &listen("in-session")))
        .await;
    assert_eq!(in_session.status, StatusCode::BAD_REQUEST, "{in_session:?}");

    let revision_2026 = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "subscriptions/listen"),
        ("mcp-session-id", session.as_str()),
    ];
    let (_first, open) = server
        .send(post_with(None, &revision_2026, &listen("A")))
        .await;
    assert_eq!(open.status(), StatusCode::OK);
    let refused = server
        .exchange(post_with(None, &revision_2026, &listen("B")))
        .await;
    assert_eq!(
        refused.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "the one stream slot is taken"
    );
}

#[tokio::test]
async fn progress_first_makes_the_answer_an_event_stream_that_ends_after_the_reply() {
    let server = McServer::default().await;
    let session = server.session().await;
    let request = rpc(
        json!(8),
        "tools/call",
        json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": "p-1"}}),
    );
    let mut stream = open_sse(&server, post(Some(&session), &request)).await;
    let all = stream.rest().await;
    assert_eq!(
        all.len(),
        4,
        "3 progress notifications, then the reply: {all:?}"
    );
    let mut last = f64::NEG_INFINITY;
    for note in &all[..3] {
        assert_eq!(note["method"], "notifications/progress", "{note}");
        assert_eq!(note["params"]["progressToken"], "p-1", "{note}");
        let progress = note["params"]["progress"].as_f64().expect("a number");
        assert!(progress > last, "progress strictly increases: {all:?}");
        last = progress;
    }
    let values: Vec<f64> = all[..3]
        .iter()
        .map(|n| n["params"]["progress"].as_f64().unwrap_or_default())
        .collect();
    assert_eq!(values, [0.0, 50.0, 100.0], "{all:?}");
    let reply = &all[3];
    assert!(
        is_response_to(reply, &json!(8)),
        "the reply is last: {all:?}"
    );
    assert_eq!(text_of(reply), "done", "{reply}");
}

#[tokio::test]
async fn tool_logs_travel_on_the_event_stream_before_the_reply() {
    let server = McServer::default().await;
    let session = server.session().await;
    let mut stream = open_sse(&server, post(Some(&session), &call(9, "log", json!({})))).await;
    let all = stream.rest().await;
    let (reply, logs) = all.split_last().expect("at least the reply");
    assert!(
        is_response_to(reply, &json!(9)),
        "the reply is last: {all:?}"
    );
    assert_eq!(text_of(reply), "logged", "{reply}");
    assert!(!logs.is_empty(), "log lines come first: {all:?}");
    for log in logs {
        assert_eq!(log["method"], "notifications/message", "{all:?}");
    }
    assert!(
        logs.iter().any(|l| l["params"]["data"] == "an info line"),
        "{all:?}"
    );
    assert!(
        logs.iter()
            .any(|l| l["params"]["data"] == json!({"code": 7})),
        "{all:?}"
    );
}

// 6 -----------------------------------------------------------------------

#[tokio::test]
async fn get_opens_the_sessions_event_stream_and_a_second_get_is_409() {
    let server = McServer::default().await;
    let session = server.session().await;
    let (client, response) = server.send(get_stream(&session)).await;
    let mut stream = Sse::new(response, Some(client));

    let second = server.exchange(get_stream(&session)).await;
    assert_eq!(second.status, StatusCode::CONFLICT, "{second:?}");

    // The first stream is still open.
    assert!(
        matches!(stream.within(QUIET).await, Next::Nothing),
        "the first GET stream stays open"
    );
}

#[tokio::test]
async fn a_subscribed_resource_update_arrives_on_the_get_stream() {
    let server = McServer::default().await;
    let session = server.session().await;
    let (client, response) = server.send(get_stream(&session)).await;
    let mut stream = Sse::new(response, Some(client));

    let subscribed = server
        .exchange(post(
            Some(&session),
            &rpc(json!(2), "resources/subscribe", json!({"uri": STATUS})),
        ))
        .await;
    let body = assert_json_reply(&subscribed);
    assert!(body.get("error").is_none(), "{body}");

    let touched = server
        .exchange(post(Some(&session), &call(3, "touch", json!({}))))
        .await;
    assert_eq!(touched.status, StatusCode::OK, "{touched:?}");

    let seen = stream
        .until("notifications/resources/updated", |m| {
            m["method"] == "notifications/resources/updated"
        })
        .await;
    let update = seen.last().expect("the update");
    assert_eq!(update["params"]["uri"], STATUS, "{update}");
}

#[tokio::test]
async fn without_a_get_stream_a_change_a_request_causes_goes_on_its_own_stream_before_the_reply() {
    // docs/model-context.md §5: the GET stream when one is open; else the stream
    // of the request that caused it.
    let server = McServer::default().await;
    let session = server.session().await;
    let subscribed = server
        .exchange(post(
            Some(&session),
            &rpc(json!(2), "resources/subscribe", json!({"uri": STATUS})),
        ))
        .await;
    assert!(assert_json_reply(&subscribed).get("error").is_none());
    let mut stream = open_sse(&server, post(Some(&session), &call(3, "touch", json!({})))).await;
    let messages = stream.rest().await;
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0]["method"], "notifications/resources/updated");
    assert_eq!(messages[0]["params"]["uri"], STATUS);
    assert!(is_response_to(&messages[1], &json!(3)), "{messages:?}");
}

#[tokio::test]
async fn an_idle_get_stream_carries_keep_alive_comments() {
    let server =
        McServer::start(HttpConfig::default().sse_keep_alive(Duration::from_millis(100))).await;
    let session = server.session().await;
    let (client, response) = server.send(get_stream(&session)).await;
    let mut stream = Sse::new(response, Some(client));
    let mut comments = Vec::new();
    for _ in 0..2 {
        match stream.next_event().await {
            Some(Event::Comment(text)) => comments.push(text),
            other => panic!("a keep-alive comment on an idle stream, not {other:?}"),
        }
    }
    assert_eq!(comments.len(), 2, "{comments:?}");
}

#[tokio::test]
async fn a_plain_get_is_405_allowing_get_post_delete() {
    let server = McServer::default().await;
    let reply = server.exchange(build(Method::GET, &[], empty())).await;
    assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED, "{reply:?}");
    assert_eq!(
        reply.header("allow"),
        Some("GET, POST, DELETE"),
        "{reply:?}"
    );
}

// 7 -----------------------------------------------------------------------

#[tokio::test]
async fn delete_ends_the_session_with_204_and_its_id_is_then_404() {
    let server = McServer::default().await;
    let session = server.session().await;
    let deleted = server.exchange(delete(&session)).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{deleted:?}");

    let after = server.exchange(post(Some(&session), &list_tools(2))).await;
    assert_eq!(after.status, StatusCode::NOT_FOUND, "{after:?}");

    let again = server.exchange(delete(&session)).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND, "{again:?}");
}

/// A `DELETE` that says it is the Model Context Protocol's (its version
/// header) but names no session is 400, as a session request without its
/// id is; a bare one is 405 (MCP v1.0 has no `DELETE`).
#[tokio::test]
async fn a_delete_without_a_session_id_is_400() {
    let server = McServer::default().await;
    let reply = server
        .exchange(build(
            Method::DELETE,
            &[("mcp-protocol-version", VERSION)],
            empty(),
        ))
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{reply:?}");
    let bare = server.exchange(build(Method::DELETE, &[], empty())).await;
    assert_eq!(bare.status, StatusCode::METHOD_NOT_ALLOWED, "{bare:?}");
}

#[tokio::test]
async fn delete_with_an_unknown_id_is_404() {
    let server = McServer::default().await;
    let _session = server.session().await;
    let reply = server
        .exchange(delete("ffffffffffffffffffffffffffffffff"))
        .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "{reply:?}");
}

#[tokio::test]
async fn delete_cancels_the_sessions_requests_in_flight() {
    let server = McServer::default().await;
    let session = server.session().await;
    let mut client = server.client().await;
    let pending = client
        .start(post(Some(&session), &call(5, "gate", json!({}))))
        .await;
    let gated = tokio::spawn(async move { Reply::read(head(pending).await).await });
    let probe = server.probe.clone();
    eventually("the gate call to start", || probe.started() == 1).await;

    let deleted = server.exchange(delete(&session)).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{deleted:?}");
    eventually("the gate call to see its cancellation", || {
        probe.cancelled() == 1
    })
    .await;

    // Its POST ends (however), never with the tool's result.
    let ended = timeout(PATIENCE, gated)
        .await
        .expect("the in-flight POST ends after DELETE")
        .expect("the POST task did not panic");
    assert!(
        !String::from_utf8_lossy(&ended.body).contains("opened"),
        "a cancelled request is not answered: {ended:?}"
    );
    server.probe.gate.add_permits(10);
}

// 8 -----------------------------------------------------------------------

#[tokio::test]
async fn a_request_cancelled_by_notification_ends_its_post_as_an_empty_event_stream() {
    let server = McServer::default().await;
    let session = server.session().await;
    let (get_client, get_response) = server.send(get_stream(&session)).await;
    let mut get = Sse::new(get_response, Some(get_client));

    let mut client = server.client().await;
    let pending = client
        .start(post(Some(&session), &call(5, "gate", json!({}))))
        .await;
    let gated = tokio::spawn(async move { Reply::read(head(pending).await).await });
    let probe = server.probe.clone();
    eventually("the gate call to start", || probe.started() == 1).await;

    let cancel = server
        .exchange(post(
            Some(&session),
            &notification(
                "notifications/cancelled",
                json!({"requestId": 5, "reason": "changed my mind"}),
            ),
        ))
        .await;
    assert_eq!(cancel.status, StatusCode::ACCEPTED, "{cancel:?}");
    eventually("the gate call to see its cancellation", || {
        probe.cancelled() == 1
    })
    .await;

    let ended = timeout(PATIENCE, gated)
        .await
        .expect("the cancelled request's POST ends")
        .expect("the POST task did not panic");
    assert_eq!(ended.status, StatusCode::OK, "{ended:?}");
    assert_eq!(media(&ended.headers), "text/event-stream", "{ended:?}");
    assert!(
        !String::from_utf8_lossy(&ended.body).contains("data:"),
        "no reply event: {:?}",
        String::from_utf8_lossy(&ended.body)
    );

    // Were the tool to go on, its reply must still go nowhere.
    server.probe.gate.add_permits(10);
    match get.within(QUIET).await {
        Next::Nothing => {}
        Next::Message(m) => assert!(
            !is_response_to(&m, &json!(5)),
            "no response for a cancelled request: {m}"
        ),
        Next::End => panic!("the GET stream ended"),
    }

    // The session goes on.
    let reply = server
        .exchange(post(
            Some(&session),
            &call(6, "echo", json!({"message": "again"})),
        ))
        .await;
    let body = assert_json_reply(&reply);
    assert_eq!(
        body["result"]["structuredContent"]["message"], "again",
        "{body}"
    );
}

// 9 -----------------------------------------------------------------------

#[tokio::test]
async fn elicitation_round_trips_over_the_requests_event_stream() {
    let server = McServer::default().await;
    let session = server.open_session(json!({"elicitation": {}})).await;
    let mut stream = open_sse(&server, post(Some(&session), &call(11, "ask", json!({})))).await;

    let ask = stream.next().await.expect("a first event");
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    let ask_id = ask.get("id").cloned().expect("a request, with an id");
    assert!(!ask_id.is_null(), "{ask}");

    let answer = server
        .exchange(post(
            Some(&session),
            &json!({"jsonrpc": "2.0", "id": ask_id,
                    "result": {"action": "accept", "content": {"name": "Ada"}}}),
        ))
        .await;
    assert_eq!(answer.status, StatusCode::ACCEPTED, "{answer:?}");
    assert!(answer.body.is_empty(), "{answer:?}");

    let rest = stream.rest().await;
    let reply = rest.last().expect("the reply");
    assert!(
        is_response_to(reply, &json!(11)),
        "the reply ends the stream: {rest:?}"
    );
    let text = text_of(reply);
    assert!(
        text.contains("Accept") && text.contains("Ada"),
        "the tool saw the answer: {text}"
    );
}

#[tokio::test]
async fn elicitation_without_the_declared_capability_fails_in_the_tool() {
    let server = McServer::default().await;
    let session = server.session().await;
    let reply = server
        .exchange(post(Some(&session), &call(12, "ask", json!({}))))
        .await;
    let body = assert_json_reply(&reply);
    assert_eq!(body["id"], 12, "{body}");
    let text = text_of(&body);
    assert!(text.starts_with("error:"), "capability missing: {text}");
}

// 10 ----------------------------------------------------------------------

#[tokio::test]
async fn server_discover_without_headers_or_meta_is_refused_and_opens_no_session() {
    let server = McServer::default().await;
    let discover = rpc(json!("d-1"), "server/discover", json!({}));
    // A 2026-07-28 request must name its method in Mcp-Method (400, -32020)…
    let reply = server.exchange(post(None, &discover)).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{reply:?}");
    assert_eq!(reply.json()["error"]["code"], -32020, "{reply:?}");
    // …and its version in _meta (400, -32602).
    let reply = server
        .exchange(post_with(
            None,
            &[("mcp-method", "server/discover")],
            &discover,
        ))
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{reply:?}");
    let body = reply.json();
    assert_eq!(body["id"], "d-1", "{body}");
    assert_eq!(body["error"]["code"], -32602, "{body}");
    assert!(reply.header("mcp-session-id").is_none(), "{reply:?}");
}

// 11 ----------------------------------------------------------------------

#[tokio::test]
async fn sessions_are_bounded_and_a_deleted_one_frees_its_slot() {
    // (One client holds them all: its own bound is the endpoint's.)
    let config = HttpConfig::default()
        .max_sessions(2)
        .max_sessions_per_principal(2);
    let server = McServer::start(config).await;
    let first = server.session().await;
    let _second = server.session().await;

    let third = server.exchange(initialize_request(json!({}))).await;
    assert_eq!(third.status, StatusCode::SERVICE_UNAVAILABLE, "{third:?}");
    assert!(third.header("retry-after").is_some(), "{third:?}");
    assert!(third.header("mcp-session-id").is_none(), "{third:?}");

    let deleted = server.exchange(delete(&first)).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{deleted:?}");
    let again = server.exchange(initialize_request(json!({}))).await;
    assert_json_reply(&again);
    assert!(again.header("mcp-session-id").is_some(), "{again:?}");
}

#[tokio::test]
async fn an_idle_session_expires_and_its_id_becomes_404() {
    let server =
        McServer::start(HttpConfig::default().session_idle_timeout(Duration::from_millis(200)))
            .await;
    let session = server.session().await;
    // Idle for five timeouts (a precondition, not an assertion on timing).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let reply = server.exchange(post(Some(&session), &list_tools(2))).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "{reply:?}");
}

// 12 ----------------------------------------------------------------------

#[tokio::test]
async fn one_endpoint_serves_v1_exchanges_and_classifies_model_context_bodies() {
    let server = McServer::default().await;

    // MCP v1.0: a single exchange, only Content-Type.
    let v1 = server
        .exchange(post_raw(
            &[("content-type", "application/json")],
            r#"{"jsonrpc":"2.0","method":"mcp/listTools","id":1}"#,
        ))
        .await;
    let body = assert_json_reply(&v1);
    assert_eq!(body["id"], 1, "{body}");
    assert!(body["result"].is_array(), "a v1.0 tool list: {body}");
    assert!(v1.header("mcp-session-id").is_none(), "{v1:?}");

    // A Model Context Protocol method without its headers is still this
    // dialect's: the Accept check (406) comes before the session check.
    let tools_list = r#"{"jsonrpc":"2.0","method":"tools/list","id":2}"#;
    let no_accept = server
        .exchange(post_raw(
            &[("content-type", "application/json")],
            tools_list,
        ))
        .await;
    assert_eq!(
        no_accept.status,
        StatusCode::NOT_ACCEPTABLE,
        "docs/model-context.md §1: Accept (406) before session id (400): {no_accept:?}"
    );

    let no_session = server
        .exchange(post_raw(
            &[
                ("content-type", "application/json"),
                ("accept", ACCEPT_BOTH),
            ],
            tools_list,
        ))
        .await;
    assert_eq!(no_session.status, StatusCode::BAD_REQUEST, "{no_session:?}");
}

// 13 ----------------------------------------------------------------------

#[tokio::test]
async fn a_foreign_host_or_origin_is_403_and_loopback_ones_are_served() {
    let server = McServer::default().await;
    let session = server.session().await;
    let body = serde_json::to_vec(&list_tools(2)).expect("serialisable");
    let port = server.addr.port();
    let loopback_host = format!("127.0.0.1:{port}");
    let loopback_origin = format!("http://127.0.0.1:{port}");
    let with = |extra: &[(&str, &str)]| {
        let mut headers = vec![
            ("content-type", "application/json"),
            ("accept", ACCEPT_BOTH),
            ("mcp-session-id", session.as_str()),
        ];
        headers.extend_from_slice(extra);
        post_raw(&headers, body.clone())
    };

    let host = server.exchange(with(&[("host", "evil.example.com")])).await;
    assert_eq!(host.status, StatusCode::FORBIDDEN, "{host:?}");

    let origin = server
        .exchange(with(&[("origin", "http://evil.example.com")]))
        .await;
    assert_eq!(origin.status, StatusCode::FORBIDDEN, "{origin:?}");

    let ok = server
        .exchange(with(&[
            ("host", loopback_host.as_str()),
            ("origin", loopback_origin.as_str()),
        ]))
        .await;
    let reply = assert_json_reply(&ok);
    assert!(reply["result"]["tools"].is_array(), "{reply}");

    // GET and DELETE are guarded the same way.
    let get = server
        .exchange(build(
            Method::GET,
            &[
                ("accept", "text/event-stream"),
                ("mcp-session-id", session.as_str()),
                ("origin", "http://evil.example.com"),
            ],
            empty(),
        ))
        .await;
    assert_eq!(get.status, StatusCode::FORBIDDEN, "{get:?}");
    let delete = server
        .exchange(build(
            Method::DELETE,
            &[
                ("mcp-session-id", session.as_str()),
                ("host", "evil.example.com"),
            ],
            empty(),
        ))
        .await;
    assert_eq!(delete.status, StatusCode::FORBIDDEN, "{delete:?}");
    let still = server.exchange(with(&[])).await;
    assert_json_reply(&still);

    // An initialize from a foreign origin opens no session.
    let init = server
        .exchange(post_with(
            None,
            &[("origin", "http://evil.example.com")],
            &rpc(json!(1), "initialize", init_params(json!({}))),
        ))
        .await;
    assert_eq!(init.status, StatusCode::FORBIDDEN, "{init:?}");
    assert!(init.header("mcp-session-id").is_none(), "{init:?}");
}

// 14 ----------------------------------------------------------------------

#[tokio::test]
async fn a_batch_is_400_invalid_request_and_bad_json_is_400_parse_error_without_id() {
    let server = McServer::default().await;
    let session = server.session().await;
    let headers = [
        ("content-type", "application/json"),
        ("accept", ACCEPT_BOTH),
        ("mcp-session-id", session.as_str()),
    ];

    let batch = serde_json::to_vec(&json!([list_tools(2), list_tools(3)])).expect("serialisable");
    let reply = server.exchange(post_raw(&headers, batch)).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{reply:?}");
    assert_eq!(media(&reply.headers), "application/json", "{reply:?}");
    let body = reply.json();
    assert_eq!(body["error"]["code"], -32600, "{body}");

    let reply = server
        .exchange(post_raw(&headers, r#"{"jsonrpc":"2.0","method":"#))
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{reply:?}");
    assert_eq!(media(&reply.headers), "application/json", "{reply:?}");
    let body = reply.json();
    assert_eq!(body["error"]["code"], -32700, "{body}");
    assert!(
        body.get("id").is_none(),
        "a parse error has no id member: {body}"
    );
}

// 15 ----------------------------------------------------------------------

#[tokio::test]
async fn a_client_that_drops_its_event_stream_does_not_cancel_the_request() {
    let server = McServer::default().await;
    let session = server.open_session(json!({"elicitation": {}})).await;

    // A raw connection, so that dropping it really closes the socket.
    let body = serde_json::to_string(&call(13, "ask", json!({}))).expect("serialisable");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: {ACCEPT_BOTH}\r\nMcp-Session-Id: {session}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut socket = timeout(PATIENCE, TcpStream::connect(server.addr))
        .await
        .expect("connect within PATIENCE")
        .expect("connect");
    socket
        .write_all(format!("{head}{body}").as_bytes())
        .await
        .expect("send the request");
    let mut seen = Vec::new();
    let ask: Value = timeout(PATIENCE, async {
        loop {
            let text = String::from_utf8_lossy(&seen).into_owned();
            if let Some(start) = text.find("data: {")
                && let Some(len) = text[start..].find('\n')
            {
                let json = &text[start + "data: ".len()..start + len];
                return serde_json::from_str(json).expect("an event's data is JSON");
            }
            let mut buf = [0u8; 4096];
            let n = socket.read(&mut buf).await.expect("read the response");
            assert!(n > 0, "the response ended before its first event: {text:?}");
            seen.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .expect("the first event within PATIENCE");
    let text = String::from_utf8_lossy(&seen).into_owned();
    assert!(text.starts_with("HTTP/1.1 200"), "{text:?}");
    assert!(
        text.to_ascii_lowercase()
            .contains("content-type: text/event-stream"),
        "{text:?}"
    );
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    let ask_id = ask["id"].clone();
    drop(socket);

    let answer = server
        .exchange(post(
            Some(&session),
            &json!({"jsonrpc": "2.0", "id": ask_id,
                    "result": {"action": "accept", "content": {"name": "Ada"}}}),
        ))
        .await;
    assert_eq!(answer.status, StatusCode::ACCEPTED, "{answer:?}");

    let probe = server.probe.clone();
    eventually("the tool to finish with the answer", || {
        probe
            .answers()
            .iter()
            .any(|a| a.contains("Accept") && a.contains("Ada"))
    })
    .await;
    assert_eq!(server.probe.cancelled(), 0);
}

// 16 ----------------------------------------------------------------------

/// Shutdown lets a request answered as an event stream finish within the
/// grace period: its stream carries its reply, then ends (the stream is
/// the request's, not one the shutdown closes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_a_request_answered_as_an_event_stream_end_with_its_reply() {
    let mut server = McServer::start_with(HttpConfig::default(), |b| {
        b.shutdown_grace(Duration::from_secs(5))
            .tool(clawmcp::tool::rich_tool_fn(
                clawmcp::definition::ToolDefinition {
                    mcp_id: "mcp://mc-test/tools/slow-progress".into(),
                    name: "slow-progress".into(),
                    description: "Progress, then a while, then its result.".into(),
                    input_schema: json!({"type": "object"}),
                    output_schema: json!({}),
                },
                |_args: Value, ctx: clawmcp::ToolContext| async move {
                    ctx.progress(1.0, Some(2.0), None).await;
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    Ok(clawmcp::ToolOutput::text("finished"))
                },
            ))
    })
    .await;
    let session = server.session().await;
    let request = rpc(
        json!(9),
        "tools/call",
        json!({"name": "slow-progress", "arguments": {}, "_meta": {"progressToken": "p"}}),
    );
    let mut stream = open_sse(&server, post(Some(&session), &request)).await;
    let Next::Message(progress) = stream.within(PATIENCE).await else {
        panic!("the progress notification first");
    };
    assert_eq!(progress["method"], "notifications/progress", "{progress}");
    server.shutdown();
    let rest = stream.rest().await;
    let reply = rest.last().expect("the reply before the stream ends");
    assert_eq!(reply["id"], 9, "{rest:?}");
    assert_eq!(reply["result"]["content"][0]["text"], "finished", "{reply}");
    server.join().await.expect("serve_http_on returns Ok");
}

#[tokio::test]
async fn shutdown_ends_an_open_get_stream_and_serve_returns() {
    let mut server = McServer::default().await;
    let session = server.session().await;
    let (client, response) = server.send(get_stream(&session)).await;
    let mut stream = Sse::new(response, Some(client));
    assert!(
        matches!(stream.within(QUIET).await, Next::Nothing),
        "the stream is open before the shutdown"
    );

    server.shutdown();
    let rest = stream.rest().await;
    assert!(
        rest.is_empty(),
        "nothing was pending on the stream: {rest:?}"
    );
    server.join().await.expect("serve_http_on returns Ok");
}
