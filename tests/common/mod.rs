//! Shared fixtures for the integration tests: a server with one tool per
//! behaviour under test, a probe that lets a test see (and hold) what the
//! tools do, a strict raw-bytes client, and the docs/mcp-v1.md §2 table.
//!
//! Each `tests/*.rs` file compiles this module on its own and uses part of it.
#![allow(dead_code)]

#[cfg(all(feature = "http", feature = "schemars"))]
pub mod reference;
pub mod settle;

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use clawmcp::definition::{PromptDefinition, Role, ToolDefinition};
use clawmcp::testing::TestClient;
use clawmcp::{Server, ServerBuilder, TextResource, ToolContext, ToolError, tool_fn};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

/// How long a test waits for something that should happen before failing
/// (a hang guard, never a performance assertion).
pub const PATIENCE: Duration = Duration::from_secs(10);
/// How long a test listens to conclude that nothing more is coming.
pub const QUIET: Duration = Duration::from_millis(300);

pub const ECHO: &str = "mcp://test/tools/echo:v1";
pub const SLEEP: &str = "mcp://test/tools/sleep:v1";
pub const GATE: &str = "mcp://test/tools/gate:v1";
pub const PANIC: &str = "mcp://test/tools/panic:v1";
/// Panics (with a non-string payload) after awaiting, on its own task.
pub const PANIC_LATER: &str = "mcp://test/tools/panic-later:v1";
pub const FAIL: &str = "mcp://test/tools/fail:v1";
/// Blocks its thread (no `.await`) until cancelled or unblocked, polling
/// `ctx.is_cancelled()`; gives up after 5 s.
pub const SPIN: &str = "mcp://test/tools/spin:v1";
pub const BAD_OUTPUT: &str = "mcp://test/tools/bad-output:v1";
pub const TOUCH: &str = "mcp://test/tools/touch:v1";
pub const COUNT: &str = "mcp://test/tools/count:v1";
/// The reference's own example id, for the exact missing-property text.
pub const FILE_WRITER: &str = "mcp://acme-corp/tools/file-writer:v1";
pub const NOTES: &str = "mcp://test/resources/notes";
pub const PLANNER: &str = "mcp://test/prompts/planner:v1";

/// The message the fail tool's error carries.
pub const FAIL_MESSAGE: &str = "the tool failed on purpose";

/// A tool definition with the given schemas.
pub fn def(mcp_id: &str, input_schema: Value, output_schema: Value) -> ToolDefinition {
    let name = mcp_id
        .rsplit('/')
        .next()
        .unwrap_or(mcp_id)
        .split(':')
        .next()
        .unwrap_or(mcp_id);
    ToolDefinition {
        mcp_id: mcp_id.into(),
        name: name.into(),
        description: format!("The {name} test tool."),
        input_schema,
        output_schema,
    }
}

/// An object schema with these properties, `required` as given, no others allowed.
pub fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "additionalProperties": false,
           "required": required, "properties": properties})
}

/// A tool made of a closure with an open input schema and any output.
pub fn simple_tool<F, Fut>(mcp_id: &str, function: F) -> impl clawmcp::Tool
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    tool_fn(def(mcp_id, json!({"type": "object"}), json!({})), function)
}

/// What the tools of [`builder`] did, and a gate that holds the `gate` tool.
#[derive(Clone)]
pub struct Probe {
    /// The `gate` tool waits for one permit per call (starts with none).
    pub gate: Arc<Semaphore>,
    /// Calls of `gate` and `sleep` that started running.
    pub started: Arc<AtomicUsize>,
    /// Calls of `gate` and `sleep` whose cancellation token fired.
    pub cancelled: Arc<AtomicUsize>,
    /// Calls of `count`.
    pub executed: Arc<AtomicUsize>,
    /// Lets every `spin` call finish.
    pub unblock: Arc<std::sync::atomic::AtomicBool>,
}

impl Default for Probe {
    fn default() -> Self {
        Self {
            gate: Arc::new(Semaphore::new(0)),
            started: Arc::default(),
            cancelled: Arc::default(),
            executed: Arc::default(),
            unblock: Arc::default(),
        }
    }
}

impl Probe {
    /// Lets `n` held `gate` calls finish.
    pub fn release(&self, n: usize) {
        self.gate.add_permits(n);
    }

    pub fn started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }

    pub fn cancelled(&self) -> usize {
        self.cancelled.load(Ordering::SeqCst)
    }

    pub fn executed(&self) -> usize {
        self.executed.load(Ordering::SeqCst)
    }

    /// Waits until at least `n` gate/sleep calls have started.
    pub async fn wait_started(&self, n: usize) {
        wait_for(|| self.started() >= n, &format!("{n} tool calls to start")).await;
    }

    /// Waits until at least `n` gate/sleep calls have seen their cancellation.
    pub async fn wait_cancelled(&self, n: usize) {
        wait_for(
            || self.cancelled() >= n,
            &format!("{n} tool calls to see their cancellation"),
        )
        .await;
    }

    /// Marks a call as started and watches its cancellation token from a
    /// task of its own (the tool's future is dropped when it is cancelled).
    fn watch(&self, ctx: &ToolContext) -> tokio::sync::oneshot::Sender<()> {
        self.started.fetch_add(1, Ordering::SeqCst);
        let token = ctx.cancellation_token();
        let cancelled = self.cancelled.clone();
        let (done, finished) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            tokio::select! {
                biased;
                () = token.cancelled() => { cancelled.fetch_add(1, Ordering::SeqCst); }
                _ = finished => {}
            }
        });
        done
    }
}

/// Polls `condition` until it holds; panics after [`PATIENCE`].
pub async fn wait_for(condition: impl Fn() -> bool, what: &str) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !condition() {
        if tokio::time::Instant::now() > deadline {
            panic!("gave up waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A builder with every test tool, the notes resource and a prompt.
pub fn builder(probe: &Probe) -> ServerBuilder {
    let sleep_probe = probe.clone();
    let gate_probe = probe.clone();
    let count_probe = probe.clone();
    let spin_probe = probe.clone();
    Server::builder()
        .name("clawmcp-tests")
        .version("9.9.9")
        .tool(tool_fn(
            def(
                ECHO,
                object(json!({"message": {"type": "string"}}), &["message"]),
                object(json!({"message": {"type": "string"}}), &["message"]),
            ),
            |args: Value, _ctx: ToolContext| async move {
                Ok(json!({"message": args["message"]}))
            },
        ))
        .tool(tool_fn(
            def(
                SLEEP,
                object(
                    json!({"ms": {"type": "integer", "minimum": 0, "maximum": 60000}}),
                    &["ms"],
                ),
                object(json!({"sleptMs": {"type": "integer"}}), &["sleptMs"]),
            ),
            move |args: Value, ctx: ToolContext| {
                let probe = sleep_probe.clone();
                async move {
                    let _done = probe.watch(&ctx);
                    let ms = args["ms"].as_u64().unwrap_or(0);
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(ms)) => Ok(json!({"sleptMs": ms})),
                        () = ctx.cancelled() => Err(ToolError::new("cancelled")),
                    }
                }
            },
        ))
        .tool(tool_fn(
            def(GATE, json!({"type": "object"}), json!({"type": "object"})),
            move |args: Value, ctx: ToolContext| {
                let probe = gate_probe.clone();
                async move {
                    let _done = probe.watch(&ctx);
                    let permit = probe
                        .gate
                        .clone()
                        .acquire_owned()
                        .await
                        .map_err(|e| ToolError::new(e.to_string()))?;
                    permit.forget();
                    Ok(json!({"tag": args.get("tag").cloned().unwrap_or(Value::Null)}))
                }
            },
        ))
        .tool(tool_fn(
            def(PANIC, json!({"type": "object"}), json!({})),
            |_args: Value, _ctx: ToolContext| async move {
                if std::hint::black_box(true) {
                    panic!("the panic tool panics");
                }
                Ok(Value::Null)
            },
        ))
        .tool(tool_fn(
            def(PANIC_LATER, json!({"type": "object"}), json!({})),
            |_args: Value, _ctx: ToolContext| async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                if std::hint::black_box(true) {
                    std::panic::panic_any(42_u32);
                }
                Ok(Value::Null)
            },
        ))
        .tool(tool_fn(
            def(SPIN, json!({"type": "object"}), json!({"type": "object"})),
            move |_args: Value, ctx: ToolContext| {
                let probe = spin_probe.clone();
                async move {
                    let _done = probe.watch(&ctx);
                    let deadline = std::time::Instant::now() + Duration::from_secs(5);
                    // Synchronous work that checks for cancellation as it goes.
                    while !ctx.is_cancelled() && !probe.unblock.load(Ordering::SeqCst) {
                        if std::time::Instant::now() > deadline {
                            return Err(ToolError::new("spun 5 s without being cancelled or unblocked"));
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Ok(json!({"cancelled": ctx.is_cancelled()}))
                }
            },
        ).blocking())
        .tool(tool_fn(
            def(FAIL, json!({"type": "object"}), json!({})),
            |_args: Value, _ctx: ToolContext| async move { Err(ToolError::new(FAIL_MESSAGE)) },
        ))
        .tool(tool_fn(
            def(
                BAD_OUTPUT,
                json!({"type": "object"}),
                object(json!({"count": {"type": "integer"}}), &["count"]),
            ),
            |_args: Value, _ctx: ToolContext| async move { Ok(json!({"count": "not a number"})) },
        ))
        .tool(tool_fn(
            def(TOUCH, json!({"type": "object"}), json!({"type": "object"})),
            |_args: Value, ctx: ToolContext| async move {
                ctx.server().resource_changed(NOTES);
                Ok(json!({}))
            },
        ))
        .tool(tool_fn(
            def(
                COUNT,
                object(json!({"pad": {"type": "string"}}), &[]),
                json!({"type": "object"}),
            ),
            move |_args: Value, _ctx: ToolContext| {
                let probe = count_probe.clone();
                async move {
                    let n = probe.executed.fetch_add(1, Ordering::SeqCst) + 1;
                    Ok(json!({"count": n}))
                }
            },
        ))
        .tool(tool_fn(
            def(
                FILE_WRITER,
                object(
                    json!({"path": {"type": "string"}, "content": {"type": "string"},
                           "mode": {"type": "integer", "minimum": 0, "maximum": 511},
                           "options": {"type": "object", "properties": {"retries": {"type": "integer"}}}}),
                    &["path", "content"],
                ),
                object(
                    json!({"status": {"type": "string"}, "bytesWritten": {"type": "integer"}}),
                    &["status", "bytesWritten"],
                ),
            ),
            |args: Value, _ctx: ToolContext| async move {
                let n = args["content"].as_str().map_or(0, str::len);
                Ok(json!({"status": "success", "bytesWritten": n}))
            },
        ))
        .resource(TextResource::new(
            NOTES,
            "notes",
            "Some notes.",
            "text/plain",
            "hello",
        ))
        .prompt(PromptDefinition {
            mcp_id: PLANNER.into(),
            name: "planner".into(),
            description: Some("Plans.".into()),
            role: Role::System,
            content: "Make a plan.".into(),
        })
}

/// The full test server and its probe.
pub fn server() -> (Server, Probe) {
    let probe = Probe::default();
    let server = builder(&probe).build().expect("the test server builds");
    (server, probe)
}

/// A client past the handshake whose `initialized` has certainly been
/// read by the server (a request sent after it has been answered).
pub async fn ready_client(server: &Server) -> TestClient {
    let mut client = TestClient::initialized(server).await;
    sync(&mut client).await;
    client
}

/// The next message, a batch's reply: its replies, ordered by id.
pub async fn batch_reply(client: &mut TestClient) -> Vec<Value> {
    let reply = client.recv().await.expect("the batch reply");
    let mut replies = reply
        .as_array()
        .unwrap_or_else(|| panic!("a batch reply is an array: {reply}"))
        .clone();
    replies.sort_by_key(|r| r["id"].to_string());
    replies
}

/// A round trip: every message sent before it has been read by the session.
pub async fn sync(client: &mut TestClient) {
    let reply = client
        .call("$/sync-probe-unknown", None)
        .await
        .expect_err("an unknown method");
    assert_eq!(reply.code.0, -32601);
}

/// A request object.
pub fn request(id: Value, method: &str, params: Option<Value>) -> Value {
    let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
    if let Some(params) = params {
        message["params"] = params;
    }
    message
}

/// An `mcp/executeTool` request object.
pub fn execute(id: Value, mcp_id: &str, arguments: Value) -> Value {
    request(
        id,
        "mcp/executeTool",
        Some(json!({"id": mcp_id, "arguments": arguments})),
    )
}

/// The `message` docs/mcp-v1.md §2 gives each code (spelled here, not taken
/// from the crate, so the test checks the crate against the table).
pub fn table_message(code: i64) -> &'static str {
    match code {
        -32700 => "Parse error",
        -32600 => "Invalid Request",
        -32601 => "Method not found",
        -32602 => "Invalid params",
        -32603 => "Internal error",
        -32000 => "Tool execution failed",
        -32001 => "Unknown mcpId",
        -32002 => "Server not initialized",
        -32003 => "Request cancelled",
        -32004 => "Request timed out",
        -32005 => "Server shutting down",
        -32006 => "Message too large",
        other => panic!("{other} is not in the table"),
    }
}

/// Checks that `reply` is exactly an error response to `id` with `code`,
/// the table's message and a string `data`; returns the data.
#[track_caller]
pub fn assert_error(reply: &Value, id: &Value, code: i64) -> String {
    let object = reply
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {reply}"));
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["error", "id", "jsonrpc"], "members of {reply}");
    assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
    assert_eq!(&reply["id"], id, "id of {reply}");
    let error = &reply["error"];
    assert_eq!(error["code"], json!(code), "code of {reply}");
    assert_eq!(error["message"], table_message(code), "message of {reply}");
    let data = error["data"]
        .as_str()
        .unwrap_or_else(|| panic!("data is not a string in {reply}"));
    assert!(!data.is_empty(), "empty data in {reply}");
    data.to_owned()
}

/// Checks that `reply` is exactly a success response to `id`; returns the result.
#[track_caller]
pub fn assert_result(reply: &Value, id: &Value) -> Value {
    let object = reply
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {reply}"));
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["id", "jsonrpc", "result"], "members of {reply}");
    assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
    assert_eq!(&reply["id"], id, "id of {reply}");
    reply["result"].clone()
}

/// `Content-Length: N\r\n\r\n` and the body.
pub fn frame(body: &str) -> Vec<u8> {
    frame_bytes(body.as_bytes())
}

pub fn frame_bytes(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Whether JSON text has no white space outside its strings.
pub fn is_compact(json: &str) -> bool {
    let mut in_string = false;
    let mut escaped = false;
    for c in json.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if c.is_whitespace() {
            return false;
        }
    }
    true
}

/// Splits server output into frame bodies, demanding that it is nothing but
/// `Content-Length: N\r\n\r\n` + N bytes of compact JSON, frame after frame.
/// Returns the bodies and the bytes of an unfinished frame at the end.
pub fn split_frames(mut bytes: &[u8]) -> (Vec<String>, Vec<u8>) {
    const PREFIX: &[u8] = b"Content-Length: ";
    let mut bodies = Vec::new();
    loop {
        if bytes.is_empty() {
            return (bodies, Vec::new());
        }
        let head = &bytes[..bytes.len().min(PREFIX.len())];
        assert!(
            PREFIX.starts_with(head),
            "output is not a frame here: {:?}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(80)])
        );
        if bytes.len() <= PREFIX.len() {
            return (bodies, bytes.to_vec());
        }
        let rest = &bytes[PREFIX.len()..];
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == rest.len() {
            return (bodies, bytes.to_vec());
        }
        assert!(digits > 0, "Content-Length without digits");
        assert!(
            rest[0] != b'0' || digits == 1,
            "Content-Length with a leading zero"
        );
        let n: usize = std::str::from_utf8(&rest[..digits])
            .expect("digits")
            .parse()
            .expect("a length");
        let after = &rest[digits..];
        let sep = &after[..after.len().min(4)];
        assert!(
            b"\r\n\r\n".starts_with(sep),
            "after Content-Length: {:?} instead of \\r\\n\\r\\n",
            String::from_utf8_lossy(sep)
        );
        if after.len() < 4 + n {
            return (bodies, bytes.to_vec());
        }
        let body = &after[4..4 + n];
        let text = std::str::from_utf8(body)
            .unwrap_or_else(|e| panic!("a frame body is not UTF-8: {e}"))
            .to_owned();
        serde_json::from_str::<serde::de::IgnoredAny>(&text)
            .unwrap_or_else(|e| panic!("a frame body is not one JSON value ({e}): {text}"));
        assert!(
            is_compact(&text),
            "a frame body is not compact JSON: {text}"
        );
        bodies.push(text);
        bytes = &after[4 + n..];
    }
}

/// The raw text of a message's `id` member, exactly as the server wrote it.
pub fn raw_id(body: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Id<'a> {
        #[serde(borrow)]
        id: &'a serde_json::value::RawValue,
    }
    let id: Id<'_> = serde_json::from_str(body).unwrap_or_else(|e| panic!("no id in {body}: {e}"));
    id.id.get().to_owned()
}

/// A client that speaks raw bytes to a server over an in-memory pipe and
/// checks every byte the server writes (frames are exact, bodies compact).
pub struct RawClient {
    to_server: Option<WriteHalf<DuplexStream>>,
    from_server: ReadHalf<DuplexStream>,
    /// Output read but not yet split into frames.
    pending: Vec<u8>,
    /// Frame bodies split but not yet returned.
    bodies: std::collections::VecDeque<String>,
    serving: JoinHandle<io::Result<()>>,
}

impl RawClient {
    pub fn connect(server: &Server) -> Self {
        let (client, server_end) = tokio::io::duplex(256 * 1024);
        let (server_read, server_write) = tokio::io::split(server_end);
        let server = server.clone();
        let serving = tokio::spawn(async move { server.serve_io(server_read, server_write).await });
        let (from_server, to_server) = tokio::io::split(client);
        Self {
            to_server: Some(to_server),
            from_server,
            pending: Vec::new(),
            bodies: std::collections::VecDeque::new(),
            serving,
        }
    }

    /// Connects and completes the handshake.
    pub async fn initialized(server: &Server) -> Self {
        let mut client = Self::connect(server);
        client
            .write(&frame(
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{}}}"#,
            ))
            .await;
        let reply = client.next_body().await.expect("an initialize reply");
        assert!(reply.contains(r#""result""#), "initialize failed: {reply}");
        client
            .write(&frame(
                r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#,
            ))
            .await;
        client
    }

    pub async fn write(&mut self, bytes: &[u8]) {
        let writer = self.to_server.as_mut().expect("input still open");
        writer.write_all(bytes).await.expect("the server reads");
        writer.flush().await.expect("flush");
    }

    /// Writes the frames one byte per write, pausing between bytes so the
    /// server really sees them one at a time.
    pub async fn write_bytewise(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write(std::slice::from_ref(b)).await;
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
    }

    /// The next frame body the server wrote; `None` when it closed its output.
    pub async fn next_body(&mut self) -> Option<String> {
        loop {
            if let Some(body) = self.bodies.pop_front() {
                return Some(body);
            }
            let mut buf = [0u8; 16 * 1024];
            let n = tokio::time::timeout(PATIENCE, self.from_server.read(&mut buf))
                .await
                .expect("no output from the server within the patience limit")
                .expect("reading the server's output");
            if n == 0 {
                assert!(
                    self.pending.is_empty(),
                    "the server's output ended inside a frame: {:?}",
                    String::from_utf8_lossy(&self.pending)
                );
                return None;
            }
            self.pending.extend_from_slice(&buf[..n]);
            let (bodies, rest) = split_frames(&self.pending);
            self.bodies.extend(bodies);
            self.pending = rest;
        }
    }

    /// The next frame body, parsed.
    pub async fn next(&mut self) -> Value {
        let body = self.next_body().await.expect("a message");
        serde_json::from_str(&body).expect("JSON")
    }

    /// Every frame body that arrives within `quiet`.
    pub async fn collect(&mut self, quiet: Duration) -> Vec<String> {
        let mut got: Vec<String> = self.bodies.drain(..).collect();
        let deadline = tokio::time::Instant::now() + quiet;
        loop {
            let mut buf = [0u8; 16 * 1024];
            match tokio::time::timeout_at(deadline, self.from_server.read(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => {
                    self.pending.extend_from_slice(&buf[..n]);
                    let (bodies, rest) = split_frames(&self.pending);
                    got.extend(bodies);
                    self.pending = rest;
                }
                _ => return got,
            }
        }
    }

    /// Ends the input; returns every body still written and the serving result.
    pub async fn close(mut self) -> (Vec<String>, io::Result<()>) {
        if let Some(mut writer) = self.to_server.take() {
            let _ = writer.shutdown().await;
        }
        let mut rest = Vec::new();
        while let Some(body) = self.next_body().await {
            rest.push(body);
        }
        let served = tokio::time::timeout(PATIENCE, self.serving)
            .await
            .expect("the server returns after its input ended")
            .expect("the serving task does not panic");
        (rest, served)
    }
}
