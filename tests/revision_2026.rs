//! The Model Context Protocol's 2026-07-28 ("stateless") revision, at the
//! level of behaviour: discovery, the `_meta` every request carries, the
//! removed methods, result types and caching hints, the HTTP header
//! mirror, multi-round-trip requests with their sealed `requestState`,
//! missing client capabilities, log lines and progress, cancellation by
//! closing the response stream, and the per-request choice of revision on
//! one stdio connection. Each test is named after the rule it proves.
//!
//! Timeouts are hang guards only (`PATIENCE`); `QUIET` windows only ever
//! prove that something did *not* arrive, never how fast something did.

mod http_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use clawmcp::client::{ClientError, ElicitResult, Elicitation, LogLevel, Sampling};
use clawmcp::content::ResourceBody;
use clawmcp::definition::{PromptDefinition, Role, ToolDefinition};
use clawmcp::error::ErrorCode;
use clawmcp::template::resource_template;
use clawmcp::testing::TestClient;
use clawmcp::tool::rich_tool_fn;
use clawmcp::transport::HttpConfig;
use clawmcp::{Server, ServerBuilder, TextResource, ToolContext, ToolError, ToolOutput};
use http_support::{Client, Reply, ReqBody, empty, full};
use hyper::{Method, Request, StatusCode};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::time::timeout;

/// A hang guard, never a performance bound.
const PATIENCE: Duration = Duration::from_secs(10);
/// How long to listen to conclude that nothing (more) is coming.
const QUIET: Duration = Duration::from_millis(300);

const V: &str = "2026-07-28";
const PV: &str = "io.modelcontextprotocol/protocolVersion";
const CC: &str = "io.modelcontextprotocol/clientCapabilities";
const LL: &str = "io.modelcontextprotocol/logLevel";
const SI: &str = "io.modelcontextprotocol/serverInfo";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";

const NAME: &str = "rev2026-test";
const VERSION: &str = "2.6.0";
/// A resource read with the default read TTL.
const GREETING: &str = "test://greeting";
/// A resource with a TTL of its own.
const CACHED: &str = "test://cached";

/// The tools, in registration order.
const TOOLS: [&str; 12] = [
    "echo",
    "greet",
    "greet_again",
    "two_rounds",
    "two_at_once",
    "sample",
    "progress",
    "fails_with",
    "log",
    "mirrored",
    "slow",
    "ticker",
];

// ---------------------------------------------------------------- server --

/// What the tools did.
#[derive(Clone, Default)]
struct Probe {
    /// Calls of the asking tools that got past their questions.
    past_questions: Arc<AtomicUsize>,
    /// `slow` calls that started.
    slow_started: Arc<AtomicUsize>,
    /// `slow` calls that ended without finishing their sleep (cancelled,
    /// or their work dropped).
    slow_stopped: Arc<AtomicUsize>,
}

impl Probe {
    fn past(&self) -> usize {
        self.past_questions.load(Ordering::SeqCst)
    }
}

/// Counts a `slow` call that did not finish when it is dropped.
struct StopGuard {
    stopped: Arc<AtomicUsize>,
    finished: bool,
}

impl Drop for StopGuard {
    fn drop(&mut self) {
        if !self.finished {
            self.stopped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn def(name: &str, input_schema: Value) -> ToolDefinition {
    ToolDefinition {
        mcp_id: format!("mcp://rev2026/tools/{name}"),
        name: name.into(),
        description: format!("The {name} test tool."),
        input_schema,
        output_schema: json!({}),
    }
}

fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}})
}

/// A text field of an elicitation's answer (`"?"` when missing).
fn field(answer: &ElicitResult, name: &str) -> String {
    answer
        .content
        .as_ref()
        .and_then(|c| c.get(name))
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_owned()
}

fn name_form() -> Elicitation {
    Elicitation::new("Name?").text("name", "Your name", true)
}

fn color_form() -> Elicitation {
    Elicitation::new("Color?").text("color", "Your favourite color", true)
}

/// A tool that asks the user's name (key `name`) and greets them.
fn greet_tool(name: &str, probe: &Probe) -> impl clawmcp::Tool {
    let past = probe.past_questions.clone();
    rich_tool_fn(
        def(
            name,
            json!({"type": "object", "properties": {"greeting": {"type": "string"}}}),
        ),
        move |args: Value, ctx: ToolContext| {
            let past = past.clone();
            async move {
                let answer = ctx.keyed("name").elicit(name_form()).await?;
                past.fetch_add(1, Ordering::SeqCst);
                let greeting = args["greeting"].as_str().unwrap_or("Hello").to_owned();
                Ok(ToolOutput::text(format!(
                    "{greeting}, {}!",
                    field(&answer, "name")
                )))
            }
        },
    )
}

fn builder(probe: &Probe) -> ServerBuilder {
    let template = resource_template(
        "test://items/{id}",
        "item",
        "An item by id.",
        "text/plain",
        |_uri, vars| async move {
            let id = vars.get("id").unwrap_or_default().to_owned();
            Ok(ResourceBody::Text(format!("item {id}")))
        },
    )
    .expect("the template is valid");
    let (past_two, past_join) = (probe.past_questions.clone(), probe.past_questions.clone());
    let (started, stopped) = (probe.slow_started.clone(), probe.slow_stopped.clone());
    let (tick_started, tick_stopped) = (probe.slow_started.clone(), probe.slow_stopped.clone());
    Server::builder()
        .name(NAME)
        .version(VERSION)
        .tool(rich_tool_fn(
            def(
                "echo",
                json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            ),
            |args: Value, _ctx: ToolContext| async move {
                Ok(ToolOutput::text(
                    args["text"].as_str().unwrap_or_default().to_owned(),
                ))
            },
        ))
        .tool(greet_tool("greet", probe))
        .tool(greet_tool("greet_again", probe))
        .tool(rich_tool_fn(
            def("two_rounds", no_arguments()),
            move |_args: Value, ctx: ToolContext| {
                let past = past_two.clone();
                async move {
                    let name = ctx.keyed("first").elicit(name_form()).await?;
                    let color = ctx.keyed("second").elicit(color_form()).await?;
                    past.fetch_add(1, Ordering::SeqCst);
                    Ok(ToolOutput::text(format!(
                        "{} likes {}",
                        field(&name, "name"),
                        field(&color, "color")
                    )))
                }
            },
        ))
        .tool(rich_tool_fn(
            def("two_at_once", no_arguments()),
            move |_args: Value, ctx: ToolContext| {
                let past = past_join.clone();
                async move {
                    let (name, color) = tokio::join!(
                        ctx.keyed("name").elicit(name_form()),
                        ctx.keyed("color").elicit(color_form()),
                    );
                    let (name, color) = (name?, color?);
                    past.fetch_add(1, Ordering::SeqCst);
                    Ok(ToolOutput::text(format!(
                        "{} likes {}",
                        field(&name, "name"),
                        field(&color, "color")
                    )))
                }
            },
        ))
        .tool(rich_tool_fn(
            def("sample", no_arguments()),
            |_args: Value, ctx: ToolContext| async move {
                let answer = ctx
                    .keyed("question")
                    .sample(Sampling::new("What is the capital of France?", 50))
                    .await?;
                Ok(ToolOutput::text(format!("model says: {}", answer.text())))
            },
        ))
        .tool(rich_tool_fn(
            def("progress", no_arguments()),
            |_args: Value, ctx: ToolContext| async move {
                ctx.progress(1.0, Some(2.0), Some("half way")).await;
                ctx.progress(2.0, Some(2.0), Some("all done")).await;
                Ok(ToolOutput::text("progressed"))
            },
        ))
        .tool(rich_tool_fn(
            def(
                "fails_with",
                json!({"type": "object", "properties": {"code": {"type": "integer"}}}),
            ),
            |args: Value, _ctx: ToolContext| async move {
                let code = args["code"].as_i64().unwrap_or(-32000);
                let code = i32::try_from(code).unwrap_or(-32000);
                Err(ToolError::with_code(
                    ErrorCode(code),
                    format!("failed with {code}"),
                ))
            },
        ))
        .tool(rich_tool_fn(
            def("log", no_arguments()),
            |_args: Value, ctx: ToolContext| async move {
                ctx.log(LogLevel::Info, "starting").await;
                ctx.log(LogLevel::Info, "finishing").await;
                Ok(ToolOutput::text("logged"))
            },
        ))
        .tool(rich_tool_fn(
            def(
                "mirrored",
                json!({"type": "object", "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "n": {"type": "integer", "x-mcp-header": "N"},
                    "target": {"type": "object", "properties": {
                        "zone": {"type": "string", "x-mcp-header": "Zone"}
                    }}
                }}),
            ),
            |args: Value, _ctx: ToolContext| async move {
                Ok(ToolOutput::text(format!("called with {args}")))
            },
        ))
        .tool(rich_tool_fn(
            def("slow", no_arguments()),
            move |_args: Value, ctx: ToolContext| {
                let (started, stopped) = (started.clone(), stopped.clone());
                async move {
                    started.fetch_add(1, Ordering::SeqCst);
                    let mut guard = StopGuard {
                        stopped,
                        finished: false,
                    };
                    ctx.progress(1.0, None, Some("started")).await;
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(60)) => {
                            guard.finished = true;
                            Ok(ToolOutput::text("slept"))
                        }
                        () = ctx.cancelled() => Err(ToolError::new("cancelled")),
                    }
                }
            },
        ))
        .tool(rich_tool_fn(
            def("ticker", no_arguments()),
            move |_args: Value, ctx: ToolContext| {
                let (started, stopped) = (tick_started.clone(), tick_stopped.clone());
                async move {
                    started.fetch_add(1, Ordering::SeqCst);
                    let _guard = StopGuard {
                        stopped,
                        finished: false,
                    };
                    // Reports progress every 50 ms until it is stopped.
                    for step in 1..=1200 {
                        ctx.progress(f64::from(step), None, Some("ticking")).await;
                        tokio::select! {
                            () = tokio::time::sleep(Duration::from_millis(50)) => {}
                            () = ctx.cancelled() => return Err(ToolError::new("cancelled")),
                        }
                    }
                    Err(ToolError::new("never stopped"))
                }
            },
        ))
        .resource(TextResource::new(
            GREETING,
            "greeting",
            "A greeting.",
            "text/plain",
            "Hello, world.",
        ))
        .resource(TextResource::new(
            CACHED,
            "cached",
            "A resource that may be cached.",
            "text/plain",
            "Keep me.",
        ))
        .resource_ttl(CACHED, Duration::from_secs(5))
        .resource_template(template)
        .prompt(PromptDefinition {
            mcp_id: "mcp://rev2026/prompts/planner".into(),
            name: "planner".into(),
            description: Some("Plans before acting.".into()),
            role: Role::System,
            content: "Make a plan, then follow it.".into(),
        })
}

fn server(probe: &Probe) -> Server {
    builder(probe).build().expect("the test server builds")
}

// -------------------------------------------------------------- messages --

/// Capabilities that let every question be asked.
fn all_caps() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {}})
}

fn meta_with(caps: Value) -> Value {
    json!({ PV: V, CC: caps })
}

fn meta() -> Value {
    meta_with(all_caps())
}

/// `params` with this `_meta`.
fn with_meta(mut params: Value, meta: Value) -> Value {
    params["_meta"] = meta;
    params
}

fn next_id() -> Value {
    static NEXT: AtomicU64 = AtomicU64::new(100);
    json!(NEXT.fetch_add(1, Ordering::Relaxed))
}

fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": next_id(), "method": method, "params": params})
}

/// A 2026-07-28 request: `params` with the default `_meta`.
fn rpc26(method: &str, params: Value) -> Value {
    rpc(method, with_meta(params, meta()))
}

fn call_params(tool: &str, arguments: Value) -> Value {
    json!({"name": tool, "arguments": arguments})
}

/// A 2026-07-28 `tools/call`.
fn call26(tool: &str, arguments: Value) -> Value {
    rpc26("tools/call", call_params(tool, arguments))
}

/// The retry of a `tools/call` with answers and a state.
fn retry26(tool: &str, arguments: Value, responses: Value, state: Option<&str>) -> Value {
    let mut params = call_params(tool, arguments);
    params["inputResponses"] = responses;
    if let Some(state) = state {
        params["requestState"] = json!(state);
    }
    rpc26("tools/call", params)
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

fn result(reply: &Value) -> &Value {
    assert!(reply.get("error").is_none(), "an error reply: {reply}");
    reply
        .get("result")
        .unwrap_or_else(|| panic!("not a result: {reply}"))
}

fn code(reply: &Value) -> i64 {
    reply["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error reply: {reply}"))
}

/// The text of a complete `tools/call` result.
fn text(reply: &Value) -> String {
    let result = result(reply);
    assert_eq!(result["resultType"], "complete", "{reply}");
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {reply}"))
        .to_owned()
}

/// The `requestState` of an `input_required` result.
fn state(reply: &Value) -> String {
    let result = result(reply);
    assert_eq!(result["resultType"], "input_required", "{reply}");
    result["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("a requestState string: {reply}"))
        .to_owned()
}

/// The keys of an `input_required` result's `inputRequests`, sorted.
fn asked(reply: &Value) -> Vec<String> {
    let result = result(reply);
    assert_eq!(result["resultType"], "input_required", "{reply}");
    let mut keys: Vec<String> = result["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("inputRequests is an object: {reply}"))
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

/// Asserts the server's identity in a result's `_meta`.
fn assert_server_info(result: &Value) {
    assert_eq!(
        result["_meta"][SI],
        json!({"name": NAME, "version": VERSION}),
        "{result}"
    );
}

/// Asserts a caching hint: `ttlMs` a number ≥ 0 and `cacheScope` public.
fn assert_cacheable(result: &Value) {
    assert!(result["ttlMs"].as_u64().is_some(), "ttlMs: {result}");
    assert_eq!(result["cacheScope"], "public", "{result}");
}

/// `state` with one character in its middle changed.
fn flipped(state: &str) -> String {
    let mut bytes = state.as_bytes().to_vec();
    let i = bytes.len() / 2;
    bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
    String::from_utf8(bytes).expect("a state is ASCII")
}

// ----------------------------------------------------------------- stdio --

/// A Model Context Protocol stdio connection (newline-delimited JSON),
/// without a handshake.
async fn stdio(server: &Server) -> TestClient {
    TestClient::connect_model_context(server).await
}

/// Sends `message` and returns its whole reply.
async fn exchange(client: &mut TestClient, message: &Value) -> Value {
    client.send(message).await;
    client.reply(&message["id"]).await
}

/// Sends `message`; every message that arrived up to and with its reply,
/// and then for `QUIET` after it.
async fn exchange_all(client: &mut TestClient, message: &Value) -> Vec<Value> {
    client.send(message).await;
    let mut seen = Vec::new();
    loop {
        let got = timeout(PATIENCE, client.recv())
            .await
            .expect("a message within PATIENCE")
            .expect("the server's output is open");
        let done = got.get("id") == Some(&message["id"]) && got.get("method").is_none();
        seen.push(got);
        if done {
            break;
        }
    }
    seen.extend(client.collect(QUIET).await);
    seen
}

fn notifications<'a>(messages: &'a [Value], method: &str) -> Vec<&'a Value> {
    messages.iter().filter(|m| m["method"] == method).collect()
}

// ------------------------------------------------------------------ http --

/// The test server over HTTP on a loopback port; dropping it shuts the
/// server down.
struct Http {
    addr: SocketAddr,
    probe: Probe,
    _stop: oneshot::Sender<()>,
}

impl Http {
    async fn start() -> Self {
        Self::start_with(HttpConfig::default()).await
    }

    async fn start_with(config: HttpConfig) -> Self {
        let probe = Probe::default();
        let server = server(&probe);
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("the bound address");
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            server
                .serve_http_on(listener, config, async {
                    let _ = stopped.await;
                })
                .await
        });
        Self {
            addr,
            probe,
            _stop: stop,
        }
    }

    /// One request on a fresh connection; the whole response, which (as
    /// every response of the revision) carries no `Mcp-Session-Id`.
    async fn exchange(&self, request: Request<ReqBody>) -> Reply {
        let reply = Client::connect(self.addr).await.exchange(request).await;
        assert!(
            reply.header("mcp-session-id").is_none(),
            "a 2026-07-28 response carries no Mcp-Session-Id: {reply:?}"
        );
        reply
    }

    async fn post(&self, post: Post) -> Reply {
        self.exchange(post.request()).await
    }
}

/// A POST of one message with the headers that mirror it.
struct Post {
    headers: Vec<(String, String)>,
    body: Value,
}

impl Post {
    /// `message` with `Content-Type`, `Accept`, `MCP-Protocol-Version` (the
    /// `_meta` version, else this revision's), `Mcp-Method` and, where the
    /// method names an item, `Mcp-Name`.
    fn new(message: Value) -> Self {
        let params = &message["params"];
        let version = params["_meta"][PV].as_str().unwrap_or(V).to_owned();
        let method = message["method"].as_str().unwrap_or_default().to_owned();
        let mut headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("accept".to_owned(), ACCEPT_BOTH.to_owned()),
            ("mcp-protocol-version".to_owned(), version),
            ("mcp-method".to_owned(), method.clone()),
        ];
        let named = match method.as_str() {
            "tools/call" | "prompts/get" => params["name"].as_str(),
            "resources/read" => params["uri"].as_str(),
            _ => None,
        };
        if let Some(name) = named {
            headers.push(("mcp-name".to_owned(), name.to_owned()));
        }
        Self {
            headers,
            body: message,
        }
    }

    /// Sets header `name` (replacing any value it had).
    fn set(mut self, name: &str, value: &str) -> Self {
        self = self.remove(name);
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    fn remove(mut self, name: &str) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self
    }

    fn request(&self) -> Request<ReqBody> {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        http_support::request(
            Method::POST,
            "/mcp",
            &headers,
            full(serde_json::to_vec(&self.body).expect("serialisable")),
        )
    }

    /// The request as HTTP/1.1 text, its header names as `headers` spell
    /// them (the hyper client would lowercase them).
    fn raw(&self) -> Vec<u8> {
        let body = serde_json::to_vec(&self.body).expect("serialisable");
        let mut text = String::from("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        for (name, value) in &self.headers {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        text.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        ));
        let mut bytes = text.into_bytes();
        bytes.extend_from_slice(&body);
        bytes
    }
}

/// The media type of a reply (parameters dropped, lowercase).
fn media(reply: &Reply) -> String {
    reply
        .header("content-type")
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default()
}

/// The JSON body of an `application/json` reply with this status.
fn json_reply(reply: &Reply, status: StatusCode) -> Value {
    assert_eq!(reply.status, status, "{reply:?}");
    assert_eq!(media(reply), "application/json", "{reply:?}");
    reply.json()
}

/// Asserts `400` with `-32020` (a header that does not mirror the body).
fn assert_mismatch(reply: &Reply) {
    let body = json_reply(reply, StatusCode::BAD_REQUEST);
    assert_eq!(code(&body), -32020, "{body}");
}

/// The JSON-RPC messages of a `text/event-stream` body.
fn events(body: &[u8]) -> Vec<Value> {
    let text = String::from_utf8(body.to_vec()).expect("UTF-8 events");
    text.replace("\r\n", "\n")
        .split("\n\n")
        .filter_map(|block| {
            let data: Vec<&str> = block
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            (!data.is_empty()).then(|| {
                let json = data.join("\n");
                serde_json::from_str(&json)
                    .unwrap_or_else(|e| panic!("an event's data is not JSON ({e}): {block:?}"))
            })
        })
        .collect()
}

/// A raw HTTP/1.1 exchange (the request says `Connection: close`): the
/// status and the head as text, and the body (de-chunked).
async fn raw_exchange(addr: SocketAddr, request: &[u8]) -> (u16, String, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request).await.expect("write the request");
    let mut bytes = Vec::new();
    timeout(PATIENCE, stream.read_to_end(&mut bytes))
        .await
        .expect("the response within PATIENCE")
        .expect("read the response");
    let split = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("a response head: {:?}", String::from_utf8_lossy(&bytes)));
    let head = String::from_utf8_lossy(&bytes[..split]).into_owned();
    let mut body = bytes[split + 4..].to_vec();
    let status: u16 = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {head}"));
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    (status, head, body)
}

fn dechunk(mut chunked: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(line_end) = chunked.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = std::str::from_utf8(&chunked[..line_end])
            .ok()
            .and_then(|s| usize::from_str_radix(s.trim(), 16).ok())
            .unwrap_or(0);
        if size == 0 {
            return out;
        }
        let start = line_end + 2;
        out.extend_from_slice(&chunked[start..start + size]);
        chunked = &chunked[start + size + 2..];
    }
}

// ------------------------------------------------------- 1. discovery --

#[tokio::test]
async fn server_discover_lists_2026_first_with_capabilities_identity_and_a_caching_hint() {
    let server = server(&Probe::default());
    let mut client = stdio(&server).await;
    let reply = exchange(&mut client, &rpc26("server/discover", json!({}))).await;
    let result = result(&reply);
    assert_eq!(result["supportedVersions"][0], V, "{result}");
    assert!(result["capabilities"].is_object(), "{result}");
    assert!(result["capabilities"]["tools"].is_object(), "{result}");
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_server_info(result);
    assert_cacheable(result);
}

#[tokio::test]
async fn server_discover_over_http_is_200_json_with_the_same_result() {
    let http = Http::start().await;
    let reply = http
        .post(Post::new(rpc26("server/discover", json!({}))))
        .await;
    let body = json_reply(&reply, StatusCode::OK);
    let result = result(&body);
    assert_eq!(result["supportedVersions"][0], V, "{result}");
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_server_info(result);
    assert_cacheable(result);
}

// -------------------------------------------------------- 2. _meta --

#[tokio::test]
async fn a_request_without_meta_or_its_version_or_capabilities_is_32602() {
    let server = server(&Probe::default());
    let mut client = stdio(&server).await;
    // Without `_meta` only a method of this revision alone claims it.
    let reply = exchange(&mut client, &rpc("server/discover", json!({}))).await;
    assert_eq!(code(&reply), -32602, "no _meta: {reply}");
    let no_version = rpc("server/discover", json!({"_meta": { CC: {} }}));
    let reply = exchange(&mut client, &no_version).await;
    assert_eq!(code(&reply), -32602, "no protocolVersion: {reply}");
    let no_caps = rpc(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}, "_meta": { PV: V }}),
    );
    let reply = exchange(&mut client, &no_caps).await;
    assert_eq!(code(&reply), -32602, "no clientCapabilities: {reply}");
}

/// A request's capabilities go with its task and its sealed state: past
/// 64 KiB they are refused before its tool runs.
#[tokio::test]
async fn client_capabilities_past_what_the_server_keeps_are_32602() {
    let probe = Probe::default();
    let server = server(&probe);
    let mut client = stdio(&server).await;
    let caps = json!({"experimental": {"padding": "x".repeat(64 * 1024)}});
    let message = rpc(
        "tools/call",
        with_meta(call_params("echo", json!({"text": "x"})), meta_with(caps)),
    );
    let reply = exchange(&mut client, &message).await;
    assert_eq!(code(&reply), -32602, "{reply:.300}");
    let data = reply["error"]["data"].as_str().unwrap_or_default();
    assert!(
        data.contains("clientCapabilities") && data.contains("65536 bytes"),
        "{data}"
    );
    let reply = exchange(&mut client, &call26("echo", json!({"text": "x"}))).await;
    assert!(reply.get("result").is_some(), "{reply}");
}

#[tokio::test]
async fn an_unsupported_protocol_version_is_32022_naming_the_supported_and_requested() {
    let server = server(&Probe::default());
    let mut client = stdio(&server).await;
    let message = rpc("tools/list", json!({"_meta": { PV: "1999-01-01", CC: {} }}));
    let reply = exchange(&mut client, &message).await;
    assert_eq!(code(&reply), -32022, "{reply}");
    let data = &reply["error"]["data"];
    let supported = data["supported"]
        .as_array()
        .unwrap_or_else(|| panic!("data.supported is an array: {reply}"));
    assert!(supported.contains(&json!(V)), "{reply}");
    assert_eq!(data["requested"], "1999-01-01", "{reply}");
}

#[tokio::test]
async fn over_http_meta_errors_are_400_with_their_codes() {
    let http = Http::start().await;
    // No _meta at all: the header says the revision.
    let reply = http.post(Post::new(rpc("tools/list", json!({})))).await;
    assert_eq!(
        code(&json_reply(&reply, StatusCode::BAD_REQUEST)),
        -32602,
        "no _meta"
    );
    let reply = http
        .post(Post::new(rpc("tools/list", json!({"_meta": { CC: {} }}))))
        .await;
    assert_eq!(
        code(&json_reply(&reply, StatusCode::BAD_REQUEST)),
        -32602,
        "no protocolVersion"
    );
    let reply = http
        .post(Post::new(rpc("tools/list", json!({"_meta": { PV: V }}))))
        .await;
    assert_eq!(
        code(&json_reply(&reply, StatusCode::BAD_REQUEST)),
        -32602,
        "no clientCapabilities"
    );
    let old = rpc("tools/list", json!({"_meta": { PV: "1999-01-01", CC: {} }}));
    let reply = http.post(Post::new(old)).await;
    let body = json_reply(&reply, StatusCode::BAD_REQUEST);
    assert_eq!(code(&body), -32022, "{body}");
    let supported = body["error"]["data"]["supported"]
        .as_array()
        .unwrap_or_else(|| panic!("data.supported is an array: {body}"));
    assert!(supported.contains(&json!(V)), "{body}");
    assert_eq!(body["error"]["data"]["requested"], "1999-01-01", "{body}");
}

// ----------------------------------------------- 3. removed methods --

/// The removed methods and an unknown one, as 2026-07-28 requests.
fn gone_requests() -> Vec<Value> {
    vec![
        rpc26("initialize", json!({})),
        rpc26("ping", json!({})),
        rpc26("logging/setLevel", json!({"level": "info"})),
        rpc26("resources/subscribe", json!({"uri": GREETING})),
        rpc26("resources/unsubscribe", json!({"uri": GREETING})),
        rpc26("no/such/method", json!({})),
    ]
}

#[tokio::test]
async fn initialize_ping_set_level_subscribe_and_unknown_methods_are_32601() {
    let server = server(&Probe::default());
    let mut client = stdio(&server).await;
    for message in gone_requests() {
        let reply = exchange(&mut client, &message).await;
        assert_eq!(code(&reply), -32601, "{} → {reply}", message["method"]);
    }
}

#[tokio::test]
async fn over_http_removed_and_unknown_methods_are_404_with_32601() {
    let http = Http::start().await;
    for message in gone_requests() {
        let method = message["method"].clone();
        let reply = http.post(Post::new(message)).await;
        let body = json_reply(&reply, StatusCode::NOT_FOUND);
        assert_eq!(code(&body), -32601, "{method} → {body}");
    }
}

// ------------------------------------------- 4. results and caching --

#[tokio::test]
async fn every_result_says_its_result_type_and_names_the_server() {
    let server = server(&Probe::default());
    let mut client = stdio(&server).await;
    for message in [
        rpc26("server/discover", json!({})),
        rpc26("tools/list", json!({})),
        rpc26("resources/list", json!({})),
        rpc26("resources/templates/list", json!({})),
        rpc26("prompts/list", json!({})),
        rpc26("prompts/get", json!({"name": "planner"})),
        rpc26("resources/read", json!({"uri": GREETING})),
        rpc26("resources/read", json!({"uri": "test://items/7"})),
        call26("echo", json!({"text": "hi"})),
        call26("greet", json!({})),
    ] {
        let reply = exchange(&mut client, &message).await;
        let result = result(&reply);
        let kind = result["resultType"].as_str();
        assert!(
            matches!(kind, Some("complete" | "input_required")),
            "{} → {reply}",
            message["method"]
        );
        assert_server_info(result);
    }
}

/// JSON may write any character of a key by an escape: a `_meta` version
/// key written with `\/` or `\u` claims the request for this revision as
/// the plain key does, in a session's connection too.
#[tokio::test]
async fn a_meta_version_key_written_with_escapes_still_claims_the_request() {
    let server = server(&Probe::default());
    let mut client = stdio(&server).await;
    for (id, key) in [
        (1, r"io.modelcontextprotocol\/protocolVersion"),
        (2, r"\u0069o.modelcontextprotocol/protocolVersion"),
    ] {
        let message = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{"_meta":{{"{key}":"{V}","{CC}":{{}}}}}}}}"#
        );
        client.send_raw(format!("{message}\n").as_bytes()).await;
        let reply = client.reply(&json!(id)).await;
        assert_eq!(result(&reply)["resultType"], "complete", "{key}: {reply}");
    }
}

#[tokio::test]
async fn lists_carry_ttl_ms_and_a_public_cache_scope() {
    let server = server(&Probe::default());
    let mut client = stdio(&server).await;
    for (method, list) in [
        ("tools/list", "tools"),
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
        ("prompts/list", "prompts"),
    ] {
        let reply = exchange(&mut client, &rpc26(method, json!({}))).await;
        let result = result(&reply);
        assert_eq!(result["resultType"], "complete", "{method}: {result}");
        assert_cacheable(result);
        assert!(
            result[list].as_array().is_some_and(|l| !l.is_empty()),
            "{method}: {result}"
        );
    }
}

#[tokio::test]
async fn tools_list_is_in_registration_order_and_the_same_on_every_call() {
    let server = server(&Probe::default());
    let mut client = stdio(&server).await;
    let names = |reply: &Value| -> Vec<String> {
        result(reply)["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("a tools list: {reply}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let first = exchange(&mut client, &rpc26("tools/list", json!({}))).await;
    let second = exchange(&mut client, &rpc26("tools/list", json!({}))).await;
    assert_eq!(names(&first), TOOLS);
    assert_eq!(result(&first)["tools"], result(&second)["tools"]);
}

#[tokio::test]
async fn resources_read_carries_ttl_ms_and_a_public_cache_scope_per_resource() {
    let server = server(&Probe::default());
    let mut client = stdio(&server).await;
    let reply = exchange(
        &mut client,
        &rpc26("resources/read", json!({"uri": GREETING})),
    )
    .await;
    let read = result(&reply);
    assert_eq!(read["resultType"], "complete", "{read}");
    assert_eq!(read["contents"][0]["text"], "Hello, world.", "{read}");
    assert_cacheable(read);
    let reply = exchange(
        &mut client,
        &rpc26("resources/read", json!({"uri": CACHED})),
    )
    .await;
    let read = result(&reply);
    assert_cacheable(read);
    assert_eq!(read["ttlMs"], 5000, "resource_ttl: {read}");
}

#[tokio::test]
async fn an_unknown_resource_is_32602_with_its_uri() {
    let server = server(&Probe::default());
    let mut client = stdio(&server).await;
    let reply = exchange(
        &mut client,
        &rpc26("resources/read", json!({"uri": "test://none"})),
    )
    .await;
    assert_eq!(code(&reply), -32602, "{reply}");
    assert_eq!(reply["error"]["data"]["uri"], "test://none", "{reply}");
}

// ------------------------------------------------ 5. HTTP headers --

#[tokio::test]
async fn a_protocol_version_header_that_differs_from_meta_or_is_missing_is_400_32020() {
    let http = Http::start().await;
    let message = rpc26("tools/list", json!({}));
    let ok = http.post(Post::new(message.clone())).await;
    assert_eq!(
        result(&json_reply(&ok, StatusCode::OK))["resultType"],
        "complete"
    );
    let reply = http
        .post(Post::new(message.clone()).set("mcp-protocol-version", "2025-11-25"))
        .await;
    assert_mismatch(&reply);
    let reply = http
        .post(Post::new(message).remove("mcp-protocol-version"))
        .await;
    assert_mismatch(&reply);
}

#[tokio::test]
async fn an_mcp_method_header_that_is_missing_or_differs_even_in_case_is_400_32020() {
    let http = Http::start().await;
    let message = call26("echo", json!({"text": "hi"}));
    let reply = http.post(Post::new(message.clone())).await;
    assert_eq!(text(&json_reply(&reply, StatusCode::OK)), "hi");
    let reply = http
        .post(Post::new(message.clone()).remove("mcp-method"))
        .await;
    assert_mismatch(&reply);
    let reply = http
        .post(Post::new(message.clone()).set("mcp-method", "Tools/call"))
        .await;
    assert_mismatch(&reply);
    let reply = http
        .post(Post::new(message).set("mcp-method", "tools/list"))
        .await;
    assert_mismatch(&reply);
}

#[tokio::test]
async fn an_mcp_name_header_that_is_missing_or_differs_is_400_32020() {
    let http = Http::start().await;
    let message = call26("echo", json!({"text": "hi"}));
    let reply = http
        .post(Post::new(message.clone()).set("mcp-name", "greet"))
        .await;
    assert_mismatch(&reply);
    let reply = http.post(Post::new(message).remove("mcp-name")).await;
    assert_mismatch(&reply);
    let read = rpc26("resources/read", json!({"uri": GREETING}));
    let reply = http.post(Post::new(read.clone())).await;
    assert_eq!(
        result(&json_reply(&reply, StatusCode::OK))["resultType"],
        "complete"
    );
    let reply = http
        .post(Post::new(read).set("mcp-name", "test://other"))
        .await;
    assert_mismatch(&reply);
    let prompt = rpc26("prompts/get", json!({"name": "planner"}));
    let reply = http.post(Post::new(prompt).set("mcp-name", "other")).await;
    assert_mismatch(&reply);
}

#[tokio::test]
async fn header_names_are_case_insensitive_and_values_may_have_surrounding_whitespace() {
    let http = Http::start().await;
    let post = Post::new(call26("echo", json!({"text": "hi"})))
        .remove("mcp-protocol-version")
        .remove("mcp-method")
        .remove("mcp-name")
        .set("MCP-PROTOCOL-VERSION", &format!("  {V} "))
        .set("mCP-mEtHoD", " tools/call\t")
        .set("MCP-NAME", "  echo  ");
    let (status, head, body) = raw_exchange(http.addr, &post.raw()).await;
    assert_eq!(status, 200, "{head}\n{}", String::from_utf8_lossy(&body));
    assert!(
        !head.to_ascii_lowercase().contains("mcp-session-id"),
        "{head}"
    );
    let reply: Value = serde_json::from_slice(&body).expect("a JSON body");
    assert_eq!(text(&reply), "hi");
}

#[tokio::test]
async fn a_protocol_version_header_that_is_not_text_is_a_header_mismatch_and_an_unknown_one_32022()
{
    let http = Http::start().await;
    // Bytes past ASCII (here `é`) are no version: the header cannot match
    // the body's `_meta` version.
    let post = Post::new(call26("echo", json!({"text": "hi"})))
        .set("mcp-protocol-version", &format!("{V}\u{e9}"));
    let (status, head, body) = raw_exchange(http.addr, &post.raw()).await;
    assert_eq!(status, 400, "{head}");
    let reply: Value = serde_json::from_slice(&body).expect("a JSON body");
    assert_eq!(code(&reply), -32020, "{reply}");
    // A version the server does not speak: refused before the headers are
    // held to the body, with the versions it does.
    let post =
        Post::new(call26("echo", json!({"text": "hi"}))).set("mcp-protocol-version", "2099-01-01");
    let body = json_reply(&http.post(post).await, StatusCode::BAD_REQUEST);
    assert_eq!(code(&body), -32022, "{body}");
    assert_eq!(body["error"]["data"]["requested"], "2099-01-01", "{body}");
    // A notification too: the version is refused before the message's kind
    // is looked at (a notification is otherwise taken with 202).
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1}});
    let post = Post::new(notification).set("mcp-protocol-version", "2099-01-01");
    let body = json_reply(&http.post(post).await, StatusCode::BAD_REQUEST);
    assert_eq!(code(&body), -32022, "{body}");
    assert_eq!(body["id"], Value::Null, "{body}");
}

#[tokio::test]
async fn params_the_header_check_cannot_read_are_a_mismatch_not_a_request_served_unchecked() {
    let http = Http::start().await;
    // `taskId` means nothing to resources/read, which is served without
    // it; a header check that could not read the params compared nothing,
    // and the read was served by its body while routed by its header.
    let mut read = rpc26("resources/read", json!({"uri": GREETING}));
    read["params"]["taskId"] = json!(0);
    let reply = http
        .post(Post::new(read).set("mcp-name", "test://other"))
        .await;
    assert_mismatch(&reply);
    // The same for a call the one-pass reader leaves to serde (its
    // arguments name MCP v1.0's method), with a header naming another tool.
    let mut call = call26("echo", json!({"text": "mcp/executeTool"}));
    call["params"]["taskId"] = json!(0);
    let reply = http.post(Post::new(call).set("mcp-name", "greet")).await;
    assert_mismatch(&reply);
    // Params readable, headers matching: served.
    let call = call26("echo", json!({"text": "mcp/executeTool"}));
    let reply = http.post(Post::new(call)).await;
    assert_eq!(text(&json_reply(&reply, StatusCode::OK)), "mcp/executeTool");
}

#[tokio::test]
async fn a_tool_cannot_send_a_code_the_revision_forbids_or_reserves() {
    let http = Http::start().await;
    // -32002 (replaced by -32602) and -32020 to -32099 (the
    // specification's, each with its meaning) become the tool's failure
    // for the model to read: a result with isError, status 200.
    for code in [-32002, -32020, -32021, -32042, -32099] {
        let reply = http
            .post(Post::new(call26("fails_with", json!({ "code": code }))))
            .await;
        let body = json_reply(&reply, StatusCode::OK);
        assert_eq!(result(&body)["isError"], true, "{code}: {body}");
        assert_eq!(text(&body), format!("failed with {code}"), "{code}");
    }
    // Any other code of the tool's is its JSON-RPC error, as in a session.
    for sent in [-32001, -32100, 42] {
        let reply = http
            .post(Post::new(call26("fails_with", json!({ "code": sent }))))
            .await;
        let body = json_reply(&reply, StatusCode::OK);
        assert_eq!(code(&body), sent, "{body}");
    }
}

#[tokio::test]
async fn an_mcp_session_id_on_a_2026_request_is_ignored_even_when_malformed() {
    let http = Http::start().await;
    let mut post = Post::new(call26("echo", json!({"text": "hi"})));
    for id in ["one", "two"] {
        post.headers
            .push(("mcp-session-id".to_owned(), id.to_owned()));
    }
    let (status, head, body) = raw_exchange(http.addr, &post.raw()).await;
    assert_eq!(status, 200, "{head}");
    assert!(
        !head.to_ascii_lowercase().contains("mcp-session-id"),
        "{head}"
    );
    let reply: Value = serde_json::from_slice(&body).expect("a JSON body");
    assert_eq!(text(&reply), "hi");
}

#[tokio::test]
async fn a_repeated_protocol_version_of_this_revision_is_a_json_32020() {
    let http = Http::start().await;
    let mut post = Post::new(call26("echo", json!({"text": "hi"})));
    post.headers
        .push(("mcp-protocol-version".to_owned(), V.to_owned()));
    let (status, head, body) = raw_exchange(http.addr, &post.raw()).await;
    assert_eq!(status, 400, "{head}");
    let reply: Value = serde_json::from_slice(&body).expect("a JSON-RPC error");
    assert_eq!(code(&reply), -32020, "{reply}");
    assert_eq!(reply["id"], Value::Null, "the body is not read: {reply}");
}

#[tokio::test]
async fn a_mirrored_argument_header_must_match_its_argument() {
    let http = Http::start().await;
    let message = call26("mirrored", json!({"region": "us-west1"}));
    let ok = http
        .post(Post::new(message.clone()).set("mcp-param-region", "us-west1"))
        .await;
    assert!(
        text(&json_reply(&ok, StatusCode::OK)).contains("us-west1"),
        "{ok:?}"
    );
    let reply = http
        .post(Post::new(message.clone()).set("Mcp-Param-Region", "eu-west1"))
        .await;
    assert_mismatch(&reply);
}

#[tokio::test]
async fn a_mirrored_argument_with_a_value_needs_its_header() {
    let http = Http::start().await;
    let reply = http
        .post(Post::new(call26("mirrored", json!({"region": "us-west1"}))))
        .await;
    assert_mismatch(&reply);
    // Neither the argument nor the header: nothing to mirror.
    let reply = http.post(Post::new(call26("mirrored", json!({})))).await;
    assert_eq!(
        result(&json_reply(&reply, StatusCode::OK))["resultType"],
        "complete"
    );
    // A header without its argument.
    let reply = http
        .post(Post::new(call26("mirrored", json!({}))).set("mcp-param-region", "us-west1"))
        .await;
    assert_mismatch(&reply);
}

#[tokio::test]
async fn a_base64_mirrored_header_is_decoded_and_invalid_base64_is_refused() {
    let http = Http::start().await;
    let region = "Zürich-1";
    let message = call26("mirrored", json!({ "region": region }));
    let encoded = format!("=?base64?{}?=", STANDARD.encode(region));
    let reply = http
        .post(Post::new(message.clone()).set("mcp-param-region", &encoded))
        .await;
    assert!(
        text(&json_reply(&reply, StatusCode::OK)).contains(region),
        "{reply:?}"
    );
    let other = format!("=?base64?{}?=", STANDARD.encode("Genève-2"));
    let reply = http
        .post(Post::new(message.clone()).set("mcp-param-region", &other))
        .await;
    assert_mismatch(&reply);
    let reply = http
        .post(Post::new(message).set("mcp-param-region", "=?base64?not*base64!?="))
        .await;
    assert_mismatch(&reply);
}

#[tokio::test]
async fn an_integer_mirrored_header_is_compared_as_a_number() {
    let http = Http::start().await;
    let message = call26("mirrored", json!({"n": 42}));
    for same in ["42", "42.0"] {
        let reply = http
            .post(Post::new(message.clone()).set("mcp-param-n", same))
            .await;
        assert_eq!(
            result(&json_reply(&reply, StatusCode::OK))["resultType"],
            "complete",
            "{same}"
        );
    }
    let reply = http.post(Post::new(message).set("mcp-param-n", "43")).await;
    assert_mismatch(&reply);
}

#[tokio::test]
async fn a_mirrored_argument_nested_in_properties_is_held_to_its_header() {
    let http = Http::start().await;
    let message = call26("mirrored", json!({"target": {"zone": "z1"}}));
    let ok = http
        .post(Post::new(message.clone()).set("mcp-param-zone", "z1"))
        .await;
    assert!(
        text(&json_reply(&ok, StatusCode::OK)).contains("z1"),
        "{ok:?}"
    );
    let other = http
        .post(Post::new(message.clone()).set("mcp-param-zone", "z2"))
        .await;
    assert_mismatch(&other);
    assert_mismatch(&http.post(Post::new(message)).await);
}

#[tokio::test]
async fn a_tool_whose_x_mcp_header_breaks_a_rule_is_refused_at_build_and_when_added() {
    let annotated = |annotation: Value| {
        rich_tool_fn(
            def(
                "bad",
                json!({"type": "object", "properties": {"p": annotation}}),
            ),
            |_args: Value, _ctx: ToolContext| async move { Ok(ToolOutput::text("never")) },
        )
    };
    let refused = Server::builder()
        .tools_provider(true)
        .tool(annotated(
            json!({"type": "number", "x-mcp-header": "Score"}),
        ))
        .build();
    let Err(error) = refused else {
        panic!("a number-typed x-mcp-header is refused at build");
    };
    assert!(
        matches!(error, clawmcp::BuildError::InvalidHeaderMirror { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("x-mcp-header"), "{error}");
    let server = Server::builder()
        .tools_provider(true)
        .build()
        .expect("built");
    let added = server.handle().add_tool(annotated(
        json!({"type": "string", "x-mcp-header": "My Region"}),
    ));
    assert!(
        matches!(added, Err(clawmcp::BuildError::InvalidHeaderMirror { .. })),
        "refused when added at run time: {added:?}"
    );
    // A server that speaks only MCP v1.0 has no such headers to check.
    let v1_only = Server::builder()
        .tools_provider(true)
        .protocols(clawmcp::server::Protocols::McpV1)
        .tool(annotated(
            json!({"type": "number", "x-mcp-header": "Score"}),
        ))
        .build();
    assert!(v1_only.is_ok());
}

// ------------------------------------------------- 6. GET and DELETE --

#[tokio::test]
async fn get_and_delete_with_the_2026_version_are_405() {
    let http = Http::start().await;
    for method in [Method::GET, Method::DELETE] {
        let request = http_support::request(
            method.clone(),
            "/mcp",
            &[("accept", "text/event-stream"), ("mcp-protocol-version", V)],
            empty(),
        );
        let reply = http.exchange(request).await;
        assert_eq!(
            reply.status,
            StatusCode::METHOD_NOT_ALLOWED,
            "{method}: {reply:?}"
        );
        assert_eq!(reply.header("allow"), Some("POST"), "{method}: {reply:?}");
    }
}

// ------------------------------------------- 7. multi-round trips --

#[tokio::test]
async fn a_tool_that_elicits_returns_input_required_and_its_retry_completes() {
    let probe = Probe::default();
    let server = server(&probe);
    let mut client = stdio(&server).await;
    let first = exchange(&mut client, &call26("greet", json!({"greeting": "Hi"}))).await;
    assert_eq!(asked(&first), ["name"]);
    let request = &result(&first)["inputRequests"]["name"];
    assert_eq!(request["method"], "elicitation/create", "{first}");
    assert_eq!(request["params"]["message"], "Name?", "{first}");
    assert_server_info(result(&first));
    let state = state(&first);
    assert_eq!(probe.past(), 0, "the tool stopped at its question");
    let retry = retry26(
        "greet",
        json!({"greeting": "Hi"}),
        json!({"name": accept(json!({"name": "Ada"}))}),
        Some(&state),
    );
    let done = exchange(&mut client, &retry).await;
    assert_eq!(text(&done), "Hi, Ada!");
    assert_eq!(probe.past(), 1);
}

#[tokio::test]
async fn a_tool_that_asks_in_sequence_needs_two_rounds_each_with_a_new_state() {
    let probe = Probe::default();
    let server = server(&probe);
    let mut client = stdio(&server).await;
    let round1 = exchange(&mut client, &call26("two_rounds", json!({}))).await;
    assert_eq!(asked(&round1), ["first"]);
    let state1 = state(&round1);
    let round2 = exchange(
        &mut client,
        &retry26(
            "two_rounds",
            json!({}),
            json!({"first": accept(json!({"name": "Ada"}))}),
            Some(&state1),
        ),
    )
    .await;
    assert_eq!(asked(&round2), ["second"], "only the unanswered question");
    let state2 = state(&round2);
    assert_ne!(state1, state2);
    assert_eq!(probe.past(), 0);
    // The first answer travels in the second state: the retry brings only
    // the second.
    let done = exchange(
        &mut client,
        &retry26(
            "two_rounds",
            json!({}),
            json!({"second": accept(json!({"color": "teal"}))}),
            Some(&state2),
        ),
    )
    .await;
    assert_eq!(text(&done), "Ada likes teal");
    assert_eq!(probe.past(), 1);
}

/// A question asked from a task the tool spawned (the tool awaits it)
/// ends the round as one the tool asked itself: the request ends with it,
/// the spawned question, still in flight, gets `Cancelled`, and the retry
/// that brings the answer finishes the call.
#[tokio::test]
async fn a_question_asked_from_a_spawned_task_ends_the_round_with_it() {
    let probe = Probe::default();
    let (answered, mut answers) = tokio::sync::mpsc::unbounded_channel();
    let server = builder(&probe)
        .tool(rich_tool_fn(
            def("asks_from_a_task", no_arguments()),
            move |_args: Value, ctx: ToolContext| {
                let answered = answered.clone();
                async move {
                    // (It asks once the call waits for it.)
                    let asking = tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        let answer = ctx.keyed("spawned").elicit(name_form()).await;
                        let _ = answered.send(match &answer {
                            Ok(_) => "answered",
                            Err(ClientError::Cancelled) => "cancelled",
                            Err(_) => "failed",
                        });
                        answer
                    });
                    let name = asking.await.expect("the asking task ran")?;
                    Ok(ToolOutput::text(format!("Hi, {}!", field(&name, "name"))))
                }
            },
        ))
        .build()
        .expect("builds");
    let mut client = stdio(&server).await;
    let round = timeout(
        PATIENCE,
        exchange(&mut client, &call26("asks_from_a_task", json!({}))),
    )
    .await
    .expect("the round ends with the question");
    assert_eq!(asked(&round), ["spawned"]);
    let in_flight = timeout(PATIENCE, answers.recv()).await;
    assert_eq!(
        in_flight.expect("the spawned question ends with its request"),
        Some("cancelled")
    );
    let retry = retry26(
        "asks_from_a_task",
        json!({}),
        json!({"spawned": accept(json!({"name": "Ada"}))}),
        Some(&state(&round)),
    );
    let done = exchange(&mut client, &retry).await;
    assert_eq!(text(&done), "Hi, Ada!");
    assert_eq!(answers.recv().await, Some("answered"));
}

#[tokio::test]
async fn questions_asked_together_travel_in_one_round() {
    let probe = Probe::default();
    let server = server(&probe);
    let mut client = stdio(&server).await;
    let round = exchange(&mut client, &call26("two_at_once", json!({}))).await;
    assert_eq!(asked(&round), ["color", "name"]);
    let state = state(&round);
    // With one answer only, only the other question is asked again.
    let partial = exchange(
        &mut client,
        &retry26(
            "two_at_once",
            json!({}),
            json!({"name": accept(json!({"name": "Ada"}))}),
            Some(&state),
        ),
    )
    .await;
    assert_eq!(asked(&partial), ["color"]);
    let done = exchange(
        &mut client,
        &retry26(
            "two_at_once",
            json!({}),
            json!({
                "name": accept(json!({"name": "Ada"})),
                "color": accept(json!({"color": "teal"})),
            }),
            Some(&state),
        ),
    )
    .await;
    assert_eq!(text(&done), "Ada likes teal");
    assert_eq!(probe.past(), 1);
}

#[tokio::test]
async fn a_sampling_question_is_answered_from_input_responses() {
    let server = server(&Probe::default());
    let mut client = stdio(&server).await;
    let round = exchange(&mut client, &call26("sample", json!({}))).await;
    assert_eq!(asked(&round), ["question"]);
    assert_eq!(
        result(&round)["inputRequests"]["question"]["method"],
        "sampling/createMessage"
    );
    let answer = json!({"role": "assistant", "content": {"type": "text", "text": "Paris"},
                        "model": "test-model"});
    let done = exchange(
        &mut client,
        &retry26(
            "sample",
            json!({}),
            json!({ "question": answer }),
            Some(&state(&round)),
        ),
    )
    .await;
    assert_eq!(text(&done), "model says: Paris");
}

#[tokio::test]
async fn a_tampered_or_truncated_state_is_32602_and_the_tool_does_not_complete() {
    let probe = Probe::default();
    let server = server(&probe);
    let mut client = stdio(&server).await;
    let args = json!({"greeting": "Hi"});
    let state = state(&exchange(&mut client, &call26("greet", args.clone())).await);
    let answers = json!({"name": accept(json!({"name": "Ada"}))});
    for bad in [
        flipped(&state),
        state[..state.len() - 4].to_owned(),
        "v1.".to_owned(),
        "garbage".to_owned(),
    ] {
        let reply = exchange(
            &mut client,
            &retry26("greet", args.clone(), answers.clone(), Some(&bad)),
        )
        .await;
        assert_eq!(code(&reply), -32602, "{bad}: {reply}");
    }
    assert_eq!(probe.past(), 0, "no refused retry ran the tool");
    // The untouched state still opens (the counter counts).
    let done = exchange(&mut client, &retry26("greet", args, answers, Some(&state))).await;
    assert_eq!(text(&done), "Hi, Ada!");
    assert_eq!(probe.past(), 1);
}

#[tokio::test]
async fn a_state_is_bound_to_its_arguments_and_its_tool() {
    let probe = Probe::default();
    let server = server(&probe);
    let mut client = stdio(&server).await;
    let state = state(&exchange(&mut client, &call26("greet", json!({"greeting": "Hi"}))).await);
    let answers = json!({"name": accept(json!({"name": "Ada"}))});
    let other_args = retry26(
        "greet",
        json!({"greeting": "Bye"}),
        answers.clone(),
        Some(&state),
    );
    let reply = exchange(&mut client, &other_args).await;
    assert_eq!(code(&reply), -32602, "other arguments: {reply}");
    let other_tool = retry26(
        "greet_again",
        json!({"greeting": "Hi"}),
        answers,
        Some(&state),
    );
    let reply = exchange(&mut client, &other_tool).await;
    assert_eq!(code(&reply), -32602, "another tool: {reply}");
    assert_eq!(probe.past(), 0, "no refused retry ran a tool");
}

#[tokio::test]
async fn a_state_sealed_by_another_server_with_its_own_random_key_is_32602() {
    let probe = Probe::default();
    let (one, two) = (server(&probe), server(&probe));
    let mut first = stdio(&one).await;
    let state = state(&exchange(&mut first, &call26("greet", json!({}))).await);
    let mut second = stdio(&two).await;
    let reply = exchange(
        &mut second,
        &retry26(
            "greet",
            json!({}),
            json!({"name": accept(json!({"name": "Ada"}))}),
            Some(&state),
        ),
    )
    .await;
    assert_eq!(code(&reply), -32602, "{reply}");
    assert_eq!(probe.past(), 0);
}

#[tokio::test]
async fn an_expired_state_is_32602() {
    let probe = Probe::default();
    let server = builder(&probe)
        .request_state_ttl(Duration::ZERO)
        .build()
        .expect("the test server builds");
    let mut client = stdio(&server).await;
    let state = state(&exchange(&mut client, &call26("greet", json!({}))).await);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let reply = exchange(
        &mut client,
        &retry26(
            "greet",
            json!({}),
            json!({"name": accept(json!({"name": "Ada"}))}),
            Some(&state),
        ),
    )
    .await;
    assert_eq!(code(&reply), -32602, "{reply}");
    assert_eq!(probe.past(), 0);
}

#[tokio::test]
async fn servers_sharing_a_key_list_open_each_others_states() {
    let probe = Probe::default();
    let shared = |probe: &Probe| {
        builder(probe)
            .request_state_keys([[7u8; 32]])
            .build()
            .expect("the test server builds")
    };
    let (one, two) = (shared(&probe), shared(&probe));
    let mut first = stdio(&one).await;
    let state = state(&exchange(&mut first, &call26("greet", json!({}))).await);
    let mut second = stdio(&two).await;
    let done = exchange(
        &mut second,
        &retry26(
            "greet",
            json!({}),
            json!({"name": accept(json!({"name": "Ada"}))}),
            Some(&state),
        ),
    )
    .await;
    assert_eq!(text(&done), "Hello, Ada!");
    assert_eq!(probe.past(), 1);
}

#[tokio::test]
async fn request_state_keys_from_hex_reads_a_list_whose_every_key_opens_and_refuses_bad_hex() {
    let keys = clawmcp::server::request_state_keys_from_hex(&format!(
        "{}, {}",
        "ab".repeat(32),
        "07".repeat(32)
    ))
    .expect("a valid key list");
    assert_eq!(keys, vec![[0xab; 32], [7; 32]]);
    assert!(clawmcp::server::request_state_keys_from_hex("not hex").is_err());
    assert!(clawmcp::server::request_state_keys_from_hex(&"zz".repeat(32)).is_err());
    // A rotated server (new key first, old one second) opens a state sealed
    // under the old key.
    let probe = Probe::default();
    let old = builder(&probe)
        .request_state_keys([[7u8; 32]])
        .build()
        .expect("the test server builds");
    let rotated = builder(&probe)
        .request_state_keys(keys)
        .build()
        .expect("the test server builds");
    let mut first = stdio(&old).await;
    let state = state(&exchange(&mut first, &call26("greet", json!({}))).await);
    let mut second = stdio(&rotated).await;
    let done = exchange(
        &mut second,
        &retry26(
            "greet",
            json!({}),
            json!({"name": accept(json!({"name": "Ada"}))}),
            Some(&state),
        ),
    )
    .await;
    assert_eq!(text(&done), "Hello, Ada!");
}

#[tokio::test]
async fn over_http_a_round_trip_is_two_json_posts_without_a_session() {
    let http = Http::start().await;
    let reply = http.post(Post::new(call26("greet", json!({})))).await;
    let first = json_reply(&reply, StatusCode::OK);
    assert_eq!(asked(&first), ["name"]);
    let retry = retry26(
        "greet",
        json!({}),
        json!({"name": accept(json!({"name": "Ada"}))}),
        Some(&state(&first)),
    );
    let reply = http.post(Post::new(retry)).await;
    assert_eq!(text(&json_reply(&reply, StatusCode::OK)), "Hello, Ada!");
    assert_eq!(http.probe.past(), 1);
}

// ------------------------------------------ 8. missing capabilities --

#[tokio::test]
async fn a_question_whose_capability_was_not_declared_is_32021_naming_it() {
    let server = server(&Probe::default());
    let mut client = stdio(&server).await;
    let message = rpc(
        "tools/call",
        with_meta(
            call_params("sample", json!({})),
            meta_with(json!({"elicitation": {}})),
        ),
    );
    let reply = exchange(&mut client, &message).await;
    assert_eq!(code(&reply), -32021, "{reply}");
    assert_eq!(
        reply["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}}),
        "{reply}"
    );
}

#[tokio::test]
async fn over_http_a_missing_capability_is_400_with_32021() {
    let http = Http::start().await;
    let message = rpc(
        "tools/call",
        with_meta(call_params("greet", json!({})), meta_with(json!({}))),
    );
    let reply = http.post(Post::new(message)).await;
    let body = json_reply(&reply, StatusCode::BAD_REQUEST);
    assert_eq!(code(&body), -32021, "{body}");
    assert_eq!(
        body["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {"form": {}}}),
        "{body}"
    );
    // Declared, but only URL mode: a form still needs the form mode.
    let message = rpc(
        "tools/call",
        with_meta(
            call_params("greet", json!({})),
            meta_with(json!({"elicitation": {"url": {}}})),
        ),
    );
    let body = json_reply(
        &http.post(Post::new(message)).await,
        StatusCode::BAD_REQUEST,
    );
    assert_eq!(code(&body), -32021, "{body}");
    assert_eq!(
        body["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {"form": {}}}),
        "{body}"
    );
}

// ------------------------------------------------------ 9. log lines --

#[tokio::test]
async fn log_lines_are_sent_only_when_meta_asks_for_a_level() {
    let server = server(&Probe::default());
    let mut client = stdio(&server).await;
    let silent = exchange_all(&mut client, &call26("log", json!({}))).await;
    assert!(
        notifications(&silent, "notifications/message").is_empty(),
        "{silent:?}"
    );
    let mut asking = meta();
    asking[LL] = json!("info");
    let message = rpc(
        "tools/call",
        with_meta(call_params("log", json!({})), asking),
    );
    let logged = exchange_all(&mut client, &message).await;
    let lines = notifications(&logged, "notifications/message");
    assert_eq!(lines.len(), 2, "{logged:?}");
    assert_eq!(lines[0]["params"]["level"], "info", "{logged:?}");
    assert_eq!(lines[0]["params"]["data"], "starting", "{logged:?}");
    // Lines below the level asked for are not sent.
    let mut above = meta();
    above[LL] = json!("warning");
    let message = rpc(
        "tools/call",
        with_meta(call_params("log", json!({})), above),
    );
    let quiet = exchange_all(&mut client, &message).await;
    assert!(
        notifications(&quiet, "notifications/message").is_empty(),
        "{quiet:?}"
    );
}

#[tokio::test]
async fn over_http_log_lines_stream_only_when_meta_asks_for_a_level() {
    let http = Http::start().await;
    let reply = http.post(Post::new(call26("log", json!({})))).await;
    assert_eq!(text(&json_reply(&reply, StatusCode::OK)), "logged");
    let mut asking = meta();
    asking[LL] = json!("info");
    let message = rpc(
        "tools/call",
        with_meta(call_params("log", json!({})), asking),
    );
    let id = message["id"].clone();
    let reply = http.post(Post::new(message)).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    assert_eq!(media(&reply), "text/event-stream", "{reply:?}");
    let messages = events(&reply.body);
    let lines = notifications(&messages, "notifications/message");
    assert_eq!(lines.len(), 2, "{messages:?}");
    let last = messages.last().expect("the stream ends with the reply");
    assert_eq!(last["id"], id, "{messages:?}");
    assert_eq!(text(last), "logged");
}

// ------------------------------------------------------- 10. progress --

#[tokio::test]
async fn over_http_progress_streams_as_sse_before_the_result_and_without_a_token_it_is_json() {
    let http = Http::start().await;
    let mut with_token = meta();
    with_token["progressToken"] = json!("p-1");
    let message = rpc(
        "tools/call",
        with_meta(call_params("progress", json!({})), with_token),
    );
    let id = message["id"].clone();
    let reply = http.post(Post::new(message)).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    assert_eq!(media(&reply), "text/event-stream", "{reply:?}");
    assert_eq!(reply.header("x-accel-buffering"), Some("no"), "{reply:?}");
    let messages = events(&reply.body);
    let progress = notifications(&messages, "notifications/progress");
    assert_eq!(progress.len(), 2, "{messages:?}");
    assert_eq!(
        progress[0]["params"]["progressToken"], "p-1",
        "{messages:?}"
    );
    assert_eq!(progress[0]["params"]["progress"], 1.0, "{messages:?}");
    let last = messages.last().expect("the stream ends with the reply");
    assert_eq!(last["id"], id, "{messages:?}");
    assert_eq!(text(last), "progressed");
    // Without a token: one JSON reply.
    let reply = http.post(Post::new(call26("progress", json!({})))).await;
    assert_eq!(text(&json_reply(&reply, StatusCode::OK)), "progressed");
}

// ---------------------------------------------------- 11. cancellation --

/// Starts `tool` with a progress token over a raw connection, reads up to
/// its first progress event, closes the connection, and waits up to 5 s
/// for the tool's work to stop: whether it did.
async fn close_mid_stream(http: &Http, tool: &str) -> bool {
    let mut with_token = meta();
    with_token["progressToken"] = json!("stream-1");
    let message = rpc(
        "tools/call",
        with_meta(call_params(tool, json!({})), with_token),
    );
    let mut stream = TcpStream::connect(http.addr).await.expect("connect");
    stream
        .write_all(&Post::new(message).raw())
        .await
        .expect("write the request");
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("notifications/progress") {
        let n = timeout(PATIENCE, stream.read(&mut buf))
            .await
            .expect("the first event within PATIENCE")
            .expect("read the stream");
        assert!(
            n > 0,
            "the stream ended before its first event: {:?}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&seen).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("text/event-stream"), "{head}");
    assert!(!head.contains("mcp-session-id"), "{head}");
    assert_eq!(http.probe.slow_started.load(Ordering::SeqCst), 1);
    assert_eq!(http.probe.slow_stopped.load(Ordering::SeqCst), 0);
    drop(stream);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while http.probe.slow_stopped.load(Ordering::SeqCst) == 0 {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

#[tokio::test]
async fn closing_a_2026_response_stream_mid_call_cancels_the_request() {
    // The tool sends one progress event, then waits (sends nothing more)
    // until it is cancelled.
    let http = Http::start().await;
    assert!(
        close_mid_stream(&http, "slow").await,
        "the slow tool was not cancelled within 5 s of its stream closing"
    );
}

#[tokio::test]
async fn closing_a_2026_response_stream_cancels_the_request_even_between_keep_alives() {
    // Keep-alive comments are written every 50 ms: the server writes to the
    // closed connection long before the wait ends.
    let http =
        Http::start_with(HttpConfig::default().sse_keep_alive(Duration::from_millis(50))).await;
    assert!(
        close_mid_stream(&http, "slow").await,
        "the slow tool was not cancelled within 5 s of its stream closing \
         (keep-alive every 50 ms)"
    );
}

#[tokio::test]
async fn closing_a_2026_response_stream_cancels_a_request_that_keeps_streaming() {
    let http = Http::start().await;
    assert!(
        close_mid_stream(&http, "ticker").await,
        "the ticker tool was not cancelled within 5 s of its stream closing"
    );
}

#[tokio::test]
async fn closing_the_connection_of_a_2026_request_answered_as_json_cancels_its_work() {
    // No progress asked: the reply would be plain JSON, and nothing is
    // written before it. The client goes away while the tool waits.
    let http = Http::start().await;
    let message = call26("slow", json!({}));
    let mut stream = TcpStream::connect(http.addr).await.expect("connect");
    stream
        .write_all(&Post::new(message).raw())
        .await
        .expect("write the request");
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while http.probe.slow_started.load(Ordering::SeqCst) == 0 {
        assert!(tokio::time::Instant::now() < deadline, "the tool started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(stream);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while http.probe.slow_stopped.load(Ordering::SeqCst) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the slow tool was not cancelled within 5 s of its client going away"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// ------------------------------------------ 12. per-request revision --

#[tokio::test]
async fn after_server_discover_a_request_without_its_meta_is_32602_naming_what_is_missing() {
    let server = server(&Probe::default());
    let mut client = stdio(&server).await;
    let discover = exchange(&mut client, &rpc26("server/discover", json!({}))).await;
    assert!(
        result(&discover)["supportedVersions"].is_array(),
        "{discover}"
    );
    // No `_meta` at all: -32602 naming it, not "not initialized" (-32600).
    let bare = exchange(&mut client, &rpc("tools/list", json!({}))).await;
    assert_eq!(code(&bare), -32602, "{bare}");
    let data = bare["error"]["data"].as_str().unwrap_or_default();
    assert!(data.contains("_meta"), "{bare}");
    // A `_meta` without the version, or without the capabilities.
    let no_version = exchange(
        &mut client,
        &rpc("tools/list", json!({"_meta": {CC: all_caps()}})),
    )
    .await;
    assert_eq!(code(&no_version), -32602, "{no_version}");
    assert!(
        no_version["error"]["data"]
            .as_str()
            .unwrap_or_default()
            .contains(PV),
        "{no_version}"
    );
    let no_caps = exchange(&mut client, &rpc("tools/list", json!({"_meta": {PV: V}}))).await;
    assert_eq!(code(&no_caps), -32602, "{no_caps}");
    assert!(
        no_caps["error"]["data"]
            .as_str()
            .unwrap_or_default()
            .contains(CC),
        "{no_caps}"
    );
    // A whole 2026-07-28 request is served; `initialize` still opens a
    // 2025-11-25 session on the same connection.
    let listed = exchange(&mut client, &rpc26("tools/list", json!({}))).await;
    assert!(result(&listed)["tools"].is_array(), "{listed}");
    let init = exchange(
        &mut client,
        &rpc(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                                  "clientInfo": {"name": "t", "version": "1"}}),
        ),
    )
    .await;
    assert_eq!(result(&init)["protocolVersion"], "2025-11-25", "{init}");
}

#[tokio::test]
async fn one_stdio_connection_serves_a_2026_request_and_then_a_2025_session() {
    let server = server(&Probe::default());
    let mut client = stdio(&server).await;
    let reply = exchange(&mut client, &call26("echo", json!({"text": "stateless"}))).await;
    assert_eq!(text(&reply), "stateless");
    let init = client
        .initialize_model_context(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }))
        .await;
    assert_eq!(init["protocolVersion"], "2025-11-25", "{init}");
    let session = exchange(
        &mut client,
        &rpc(
            "tools/call",
            call_params("echo", json!({"text": "session"})),
        ),
    )
    .await;
    let session = result(&session);
    assert_eq!(session["content"][0]["text"], "session", "{session}");
    assert!(
        session.get("resultType").is_none(),
        "a session result is the 2025-11-25 shape: {session}"
    );
    let ping = exchange(&mut client, &rpc("ping", json!({}))).await;
    assert_eq!(result(&ping), &json!({}));
    // And a 2026-07-28 request after the handshake is still that revision's.
    let reply = exchange(&mut client, &call26("echo", json!({"text": "again"}))).await;
    assert_eq!(text(&reply), "again");
    assert_server_info(result(&reply));
}

// --------------------------------------------------------- serve_message --

/// `Server::serve_message` (a transport of one's own) serves the
/// 2026-07-28 revision, the Model Context Protocol's form without a
/// session: a request answered at once, one whose work waits, and one
/// that asks the client (`input_required`). What comes before a reply
/// (progress) has no stream to go to: the reply alone is returned.
#[tokio::test]
async fn serve_message_serves_a_2026_07_28_request_and_returns_its_reply_alone() {
    let waits = rich_tool_fn(
        def("waits", no_arguments()),
        |_args: Value, ctx: ToolContext| async move {
            ctx.progress(1.0, Some(2.0), Some("started")).await;
            tokio::time::sleep(Duration::from_millis(5)).await;
            ctx.progress(2.0, Some(2.0), Some("done")).await;
            Ok(ToolOutput::text("waited"))
        },
    );
    // A tool that may block is not polled before it is handed to a
    // session of its own: its reply comes back from there.
    let blocks = rich_tool_fn(
        def("blocks", no_arguments()),
        |_args: Value, ctx: ToolContext| async move {
            ctx.progress(1.0, Some(1.0), None).await;
            Ok(ToolOutput::text("blocked"))
        },
    )
    .blocking();
    let server = builder(&Probe::default())
        .tool(waits)
        .tool(blocks)
        .build()
        .expect("builds");
    let serve = |message: Value| {
        let server = server.clone();
        async move {
            let reply = timeout(PATIENCE, server.serve_message(message.to_string()))
                .await
                .expect("answered");
            serde_json::from_slice::<Value>(&reply.expect("a reply")).expect("JSON")
        }
    };
    let reply = serve(call26("echo", json!({"text": "hi"}))).await;
    assert_eq!(text(&reply), "hi");
    assert_server_info(result(&reply));

    // It reports progress around a wait: the reply alone comes back.
    let mut waits = call26("waits", json!({}));
    waits["params"]["_meta"]["progressToken"] = json!("p1");
    let id = waits["id"].clone();
    let reply = serve(waits).await;
    assert_eq!(reply["id"], id, "{reply}");
    assert_eq!(text(&reply), "waited");

    let mut blocks = call26("blocks", json!({}));
    blocks["params"]["_meta"]["progressToken"] = json!("p2");
    let reply = serve(blocks).await;
    assert_eq!(text(&reply), "blocked");

    let reply = serve(call26("two_rounds", json!({}))).await;
    assert_eq!(asked(&reply), ["first"]);
}

/// Which protocol a body served alone speaks: with both spoken, a message
/// with a method of the Model Context Protocol is a 2026-07-28 request
/// (one without `_meta` is refused by its rules), one with an MCP v1.0
/// method is MCP v1.0's whatever its params hold; a server restricted to one protocol
/// serves every body in it. A listen stream, which needs a stream of its
/// own, is refused.
#[tokio::test]
async fn serve_message_serves_each_body_in_the_protocol_the_server_and_the_body_say() {
    use clawmcp::server::Protocols;
    let serve = |server: Server, message: Value| async move {
        let reply = server.serve_message(message.to_string()).await;
        serde_json::from_slice::<Value>(&reply.expect("a reply")).expect("JSON")
    };
    let probe = Probe::default();
    let both = server(&probe);
    let v1_list = json!({"jsonrpc": "2.0", "id": 1, "method": "mcp/listTools"});
    let reply = serve(both.clone(), v1_list.clone()).await;
    assert!(reply["result"].is_array(), "MCP v1.0: {reply}");
    // Its method decides, not what its params hold.
    let v1_with_meta = json!({"jsonrpc": "2.0", "id": 2, "method": "mcp/listTools",
                              "params": {"_meta": meta()}});
    let reply = serve(both.clone(), v1_with_meta).await;
    let data = reply["error"]["data"].as_str().unwrap_or_default();
    assert!(
        data.contains("mcp/listTools takes no params"),
        "MCP v1.0's rule: {reply}"
    );
    let bare = rpc("tools/list", json!({}));
    let reply = serve(both.clone(), bare.clone()).await;
    assert_eq!(code(&reply), -32602, "2026-07-28 needs its _meta: {reply}");
    assert!(reply["error"]["message"].as_str().is_some(), "{reply}");
    let reply = serve(both.clone(), rpc26("tools/list", json!({}))).await;
    assert_eq!(
        result(&reply)["tools"].as_array().map(Vec::len),
        Some(TOOLS.len())
    );
    let listen = rpc26(
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let reply = serve(both.clone(), listen).await;
    assert_eq!(code(&reply), -32600, "{reply}");
    assert!(reply.to_string().contains("stream"), "{reply}");

    let model_context = builder(&probe)
        .protocols(Protocols::ModelContext)
        .build()
        .expect("builds");
    let reply = serve(model_context, v1_list).await;
    assert!(
        reply.get("error").is_some(),
        "MCP v1.0 is not spoken: {reply}"
    );

    let v1 = builder(&probe)
        .protocols(Protocols::McpV1)
        .build()
        .expect("builds");
    let reply = serve(v1, rpc26("tools/list", json!({}))).await;
    assert_eq!(
        code(&reply),
        -32601,
        "tools/list is no MCP v1.0 method: {reply}"
    );
}
