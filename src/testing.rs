//! An in-process test client: connects to a [`Server`] over an in-memory
//! pipe (no process, no socket), speaks either dialect's stdio framing —
//! MCP v1.0's `Content-Length` frames ([`TestClient::connect`],
//! [`TestClient::initialized`]) or the Model Context Protocol's
//! newline-delimited JSON ([`TestClient::connect_model_context`],
//! [`TestClient::model_context`]) — and offers both typed calls and raw
//! `send`/`recv` for protocol-level tests.
//!
//! Compiled with the `testing` feature: turn it on in `[dev-dependencies]`
//! (`clawmcp = { version = "0.1", features = ["testing"] }`) so that it
//! is built for tests only.
//!
//! ```
//! use clawmcp::testing::TestClient;
//! use clawmcp::{Server, TextResource};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let server = Server::builder()
//!     .resource(TextResource::new("mcp://t/resources/a", "a", "A.", "text/plain", "hello"))
//!     .build()
//!     .unwrap();
//! let mut client = TestClient::initialized(&server).await;
//! let resources = client.list_resources().await.unwrap();
//! assert_eq!(resources[0].content, "hello");
//! # }
//! ```
//!
//! The client panics, with a message, when the pipe breaks or a reply does
//! not come within its timeout (10 s unless [`TestClient::set_timeout`]): it
//! is meant for tests, where a panic is a failure report.

// A test client fails the test that uses it when the server breaks the
// protocol, as `assert!` does; its indexing reads JSON it was sent.
#![allow(clippy::panic, clippy::indexing_slicing)]

use std::collections::VecDeque;
use std::time::Duration;

use bytes::BytesMut;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;
use tokio_util::codec::{Encoder, FramedRead};

use crate::definition::{PromptDefinition, ResourceDefinition, ToolDefinition};
use crate::error::{ErrorCode, RpcError};
use crate::principal::Principal;
use crate::server::{Input, Server};
use crate::transport::{FrameCodec, LineCodec};

/// The protocol version a Model Context Protocol test client asks for.
pub const MODEL_CONTEXT_VERSION: &str = "2025-11-25";

/// How the client frames messages: as the dialect it speaks does.
#[derive(Debug)]
enum ClientCodec {
    Frames(FrameCodec),
    Lines(LineCodec),
}

impl tokio_util::codec::Decoder for ClientCodec {
    type Item = Input;
    type Error = std::io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> std::io::Result<Option<Input>> {
        match self {
            Self::Frames(codec) => codec.decode(src),
            Self::Lines(codec) => codec.decode(src),
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> std::io::Result<Option<Input>> {
        match self {
            Self::Frames(codec) => codec.decode_eof(src),
            Self::Lines(codec) => codec.decode_eof(src),
        }
    }
}

/// A client connected to a server over an in-memory pipe.
pub struct TestClient {
    writer: Option<WriteHalf<DuplexStream>>,
    reader: FramedRead<ReadHalf<DuplexStream>, ClientCodec>,
    /// Speaks the Model Context Protocol (else MCP v1.0).
    model_context: bool,
    /// Messages received but not yet asked for.
    inbox: VecDeque<Value>,
    next_id: i64,
    timeout: Duration,
    serving: JoinHandle<std::io::Result<()>>,
}

impl TestClient {
    /// Connects with MCP v1.0's framing, without a handshake (for
    /// handshake tests).
    pub async fn connect(server: &Server) -> Self {
        Self::connect_with(server, false, None)
    }

    /// Connects with the Model Context Protocol's framing
    /// (newline-delimited JSON), without a handshake.
    pub async fn connect_model_context(server: &Server) -> Self {
        Self::connect_with(server, true, None)
    }

    /// Connects as `principal`, in either dialect (`model_context`), without
    /// a handshake: every request is served as if a verified token named it,
    /// as over HTTP with OAuth — the items' scope rules
    /// ([`ServerBuilder::require_scopes`](crate::ServerBuilder::require_scopes))
    /// hold (`-32007` naming the scopes a refused request needs), tools see
    /// it ([`ToolContext::principal`](crate::ToolContext::principal)), and
    /// so do resource and completion handlers ([`Principal::current`]).
    ///
    /// ```
    /// use clawmcp::definition::ToolDefinition;
    /// use clawmcp::testing::TestClient;
    /// use clawmcp::tool::rich_tool_fn;
    /// use clawmcp::{Principal, Server, ToolContext, ToolOutput};
    /// use serde_json::{Value, json};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let whoami = ToolDefinition {
    ///     mcp_id: "mcp://t/tools/whoami:v1".into(),
    ///     name: "whoami".into(),
    ///     description: "Who calls.".into(),
    ///     input_schema: json!({"type": "object"}),
    ///     output_schema: json!({}),
    /// };
    /// let server = Server::builder()
    ///     .tool(rich_tool_fn(whoami, |_args: Value, ctx: ToolContext| async move {
    ///         let who = ctx.principal().and_then(|p| p.subject().map(str::to_owned));
    ///         Ok(ToolOutput::text(who.unwrap_or_default()))
    ///     }))
    ///     .require_scopes("whoami", ["profile"])
    ///     .build()
    ///     .unwrap();
    /// let ada = Principal::new("https://as.example").with_subject("ada").with_scopes(["profile"]);
    /// let mut client = TestClient::model_context_as(&server, json!({}), ada).await;
    /// let result = client.call_tool("whoami", json!({})).await.unwrap();
    /// assert_eq!(result["content"][0]["text"], "ada");
    ///
    /// let nobody = Principal::new("https://as.example").with_subject("bob");
    /// let mut client = TestClient::model_context_as(&server, json!({}), nobody).await;
    /// let refused = client.call_tool("whoami", json!({})).await.unwrap_err();
    /// assert_eq!(refused.code.0, -32007);
    /// # }
    /// ```
    pub async fn connect_as(server: &Server, model_context: bool, principal: Principal) -> Self {
        Self::connect_with(server, model_context, Some(principal))
    }

    /// [`initialized`](Self::initialized) (MCP v1.0), as `principal` (see
    /// [`connect_as`](Self::connect_as)).
    pub async fn initialized_as(server: &Server, principal: Principal) -> Self {
        Self::connect_as(server, false, principal)
            .await
            .v1_handshake()
            .await
    }

    /// [`model_context`](Self::model_context), as `principal` (see
    /// [`connect_as`](Self::connect_as)).
    pub async fn model_context_as(
        server: &Server,
        capabilities: Value,
        principal: Principal,
    ) -> Self {
        let client = Self::connect_as(server, true, principal).await;
        client.model_context_handshake(capabilities).await
    }

    fn connect_with(server: &Server, model_context: bool, principal: Option<Principal>) -> Self {
        let (client, server_end) = tokio::io::duplex(256 * 1024);
        let (server_read, server_write) = tokio::io::split(server_end);
        let server = server.clone();
        let serving = tokio::spawn(async move {
            match principal {
                Some(principal) => {
                    server
                        .serve_io_as(server_read, server_write, principal)
                        .await
                }
                None => server.serve_io(server_read, server_write).await,
            }
        });
        let (read, write) = tokio::io::split(client);
        let framing = if model_context {
            ClientCodec::Lines(LineCodec::new(usize::MAX))
        } else {
            ClientCodec::Frames(FrameCodec::new(usize::MAX))
        };
        Self {
            writer: Some(write),
            reader: FramedRead::new(read, framing),
            model_context,
            inbox: VecDeque::new(),
            next_id: 2,
            timeout: Duration::from_secs(10),
            serving,
        }
    }

    /// Connects and completes the Model Context Protocol's handshake
    /// (`initialize` for [`MODEL_CONTEXT_VERSION`] with `capabilities`, then
    /// `notifications/initialized`), and waits until the session is ready
    /// (one `ping`). Declare `{"elicitation": {}}`,
    /// `{"sampling": {}}` or `{"roots": {}}` to let tools ask for them.
    pub async fn model_context(server: &Server, capabilities: Value) -> Self {
        Self::connect_model_context(server)
            .await
            .model_context_handshake(capabilities)
            .await
    }

    /// The Model Context Protocol's handshake with `capabilities`, then a
    /// `ping` round trip.
    async fn model_context_handshake(mut self, capabilities: Value) -> Self {
        let client = &mut self;
        client
            .initialize_model_context(json!({
                "protocolVersion": MODEL_CONTEXT_VERSION,
                "capabilities": capabilities,
                "clientInfo": {"name": "clawmcp-test-client", "version": "1.0.0"},
            }))
            .await;
        // A round trip: the session has taken `initialized` in when this
        // returns, so what the test does next (a resource change, …) finds
        // it ready.
        let _ = client.call("ping", None).await;
        self
    }

    /// Sends the Model Context Protocol's `initialize` (id 1) with `params`,
    /// checks it succeeded, then sends `notifications/initialized`; returns
    /// the `initialize` result.
    pub async fn initialize_model_context(&mut self, params: Value) -> Value {
        self.handshake(params, "notifications/initialized").await
    }

    /// Connects and completes the handshake (`initialize` with id 1, then
    /// `initialized`), and waits until the session is ready (one
    /// `mcp/listTools` round trip): a change the test makes next reaches it.
    pub async fn initialized(server: &Server) -> Self {
        Self::connect(server).await.v1_handshake().await
    }

    /// MCP v1.0's handshake, then a round trip (MCP v1.0 has no ping; any
    /// answer will do): the session has taken `initialized` in when this
    /// returns.
    async fn v1_handshake(mut self) -> Self {
        self.initialize(json!({"clientCapabilities": {}})).await;
        let _ = self.call("mcp/listTools", None).await;
        self
    }

    /// Sends `initialize` (id 1) with `params`, checks it succeeded, then
    /// sends `initialized`; returns the `initialize` result.
    pub async fn initialize(&mut self, params: Value) -> Value {
        self.handshake(params, "initialized").await
    }

    /// `initialize` (id 1) with `params`, which must succeed, then the
    /// dialect's `initialized` notification; the `initialize` result.
    async fn handshake(&mut self, params: Value, initialized: &str) -> Value {
        let reply = self
            .call_with_id(json!(1), "initialize", Some(params))
            .await;
        let result = match reply {
            Ok(result) => result,
            Err(e) => panic!("initialize failed: {e}"),
        };
        self.notify(initialized, json!({})).await;
        result
    }

    /// Sets how long to wait for a message before panicking.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Sends one JSON value (a message or a batch) as a frame (MCP v1.0)
    /// or a line (the Model Context Protocol).
    pub async fn send(&mut self, message: &Value) {
        let body = message.to_string();
        let mut framed = BytesMut::new();
        let _ = if self.model_context {
            LineCodec::new(usize::MAX).encode(body.as_bytes(), &mut framed)
        } else {
            FrameCodec::new(usize::MAX).encode(body.as_bytes(), &mut framed)
        };
        self.send_raw(&framed).await;
    }

    /// Sends bytes as they are: frames, partial frames or garbage.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        let Some(writer) = self.writer.as_mut() else {
            panic!("send after close_input")
        };
        if let Err(e) = writer.write_all(bytes).await {
            panic!("the server's input is closed: {e}");
        }
    }

    /// Sends a notification.
    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// The next message from the server (reply or notification), in
    /// arrival order; `None` when the server closed its output.
    pub async fn recv(&mut self) -> Option<Value> {
        if let Some(message) = self.inbox.pop_front() {
            return Some(message);
        }
        self.read_one().await
    }

    /// Waits `quiet` and returns every message that arrived meanwhile.
    pub async fn collect(&mut self, quiet: Duration) -> Vec<Value> {
        let mut got: Vec<Value> = self.inbox.drain(..).collect();
        let deadline = tokio::time::Instant::now() + quiet;
        while let Ok(Some(message)) =
            tokio::time::timeout_at(deadline, next_input(&mut self.reader)).await
        {
            got.push(decode(message));
        }
        got
    }

    /// The reply to request `id`; other messages that arrive first are kept
    /// for [`recv`](Self::recv) and [`next_notification`](Self::next_notification).
    pub async fn reply(&mut self, id: &Value) -> Value {
        if let Some(i) = self
            .inbox
            .iter()
            .position(|m| m.get("id") == Some(id) && m.get("method").is_none())
        {
            return self.inbox.remove(i).unwrap_or_default();
        }
        loop {
            let Some(message) = self.read_one().await else {
                panic!("the server closed its output before replying to {id}");
            };
            if message.get("id") == Some(id) && message.get("method").is_none() {
                return message;
            }
            self.inbox.push_back(message);
        }
    }

    /// The next notification the server sent — the whole message
    /// (`{"jsonrpc", "method", "params"}`) — skipping (and keeping) replies
    /// and requests; `None` when the server closed its output.
    pub async fn next_notification(&mut self) -> Option<Value> {
        self.next_matching(|m| m.get("method").is_some() && m.get("id").is_none())
            .await
    }

    /// The `params` of the next notification named `method` (`Value::Null`
    /// when it has none), skipping (and keeping) every other message;
    /// `None` when the server closed its output first.
    ///
    /// ```
    /// use clawmcp::testing::TestClient;
    /// use clawmcp::{Server, SharedResource};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let status = SharedResource::new("mcp://t/resources/status", "status", "Status.",
    ///     "text/plain", "starting");
    /// let server = Server::builder().resource(status.clone()).build().unwrap();
    /// let mut client = TestClient::initialized(&server).await;
    /// status.set("ready");
    /// let changed = client.notification("mcp/resourceDidChange").await.unwrap();
    /// assert_eq!(changed["mcpId"], "mcp://t/resources/status");
    /// # }
    /// ```
    pub async fn notification(&mut self, method: &str) -> Option<Value> {
        let mut message = self
            .next_matching(|m| m["method"] == method && m.get("id").is_none())
            .await?;
        Some(
            message
                .get_mut("params")
                .map(Value::take)
                .unwrap_or_default(),
        )
    }

    /// The next request the server sent (elicitation, sampling, roots: the
    /// whole message, with its `id`), skipping (and keeping) the rest;
    /// `None` when the server closed its output. Answer it with
    /// [`respond`](Self::respond).
    pub async fn next_request(&mut self) -> Option<Value> {
        self.next_matching(|m| m.get("method").is_some() && m.get("id").is_some())
            .await
    }

    async fn next_matching(&mut self, wanted: impl Fn(&Value) -> bool) -> Option<Value> {
        if let Some(i) = self.inbox.iter().position(&wanted) {
            return self.inbox.remove(i);
        }
        loop {
            let message = self.read_one().await?;
            if wanted(&message) {
                return Some(message);
            }
            self.inbox.push_back(message);
        }
    }

    /// Answers a request of the server's with `result`.
    pub async fn respond(&mut self, id: &Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
            .await;
    }

    /// Answers a request of the server's with an error.
    pub async fn respond_error(&mut self, id: &Value, code: i64, message: &str) {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        )
        .await;
    }

    /// Sends a request with a fresh integer id and waits for its reply:
    /// the `result`, or the error object as an [`RpcError`].
    pub async fn call(&mut self, method: &str, params: Option<Value>) -> Result<Value, RpcError> {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.call_with_id(id, method, params).await
    }

    async fn call_with_id(
        &mut self,
        id: Value,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, RpcError> {
        let mut request = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(params) = params {
            request["params"] = params;
        }
        self.send(&request).await;
        into_result(self.reply(&id).await)
    }

    /// `mcp/listTools`.
    pub async fn list_tools(&mut self) -> Result<Vec<ToolDefinition>, RpcError> {
        typed(self.call("mcp/listTools", None).await?)
    }

    /// `mcp/listResources`.
    pub async fn list_resources(&mut self) -> Result<Vec<ResourceDefinition>, RpcError> {
        typed(self.call("mcp/listResources", None).await?)
    }

    /// `mcp/listPrompts`.
    pub async fn list_prompts(&mut self) -> Result<Vec<PromptDefinition>, RpcError> {
        typed(self.call("mcp/listPrompts", None).await?)
    }

    /// `tools/call` (Model Context Protocol): the whole result
    /// (`content`, `structuredContent`, `isError`), or the JSON-RPC error.
    pub async fn call_tool(&mut self, name: &str, arguments: Value) -> Result<Value, RpcError> {
        self.call(
            "tools/call",
            Some(json!({"name": name, "arguments": arguments})),
        )
        .await
    }

    /// `resources/read` (Model Context Protocol): the first of `contents`.
    pub async fn read_resource(&mut self, uri: &str) -> Result<Value, RpcError> {
        let result = self
            .call("resources/read", Some(json!({"uri": uri})))
            .await?;
        Ok(result["contents"][0].clone())
    }

    /// `prompts/get` (Model Context Protocol): the whole result.
    pub async fn get_prompt(&mut self, name: &str, arguments: Value) -> Result<Value, RpcError> {
        self.call(
            "prompts/get",
            Some(json!({"name": name, "arguments": arguments})),
        )
        .await
    }

    /// `mcp/executeTool`: the tool's `output`, or the error.
    pub async fn execute(&mut self, mcp_id: &str, arguments: Value) -> Result<Value, RpcError> {
        let result = self
            .call(
                "mcp/executeTool",
                Some(json!({"id": mcp_id, "arguments": arguments})),
            )
            .await?;
        Ok(result.get("output").cloned().unwrap_or(Value::Null))
    }

    /// `mcp/executeTool` (MCP v1.0) with typed arguments, the tool's
    /// `output` deserialised as `O`. A tool's failure is the JSON-RPC
    /// error (`-32000` with its text) in [`CallError::Rpc`].
    ///
    /// ```
    /// use clawmcp::testing::TestClient;
    /// use clawmcp::typed::typed_tool;
    /// use clawmcp::{Server, ToolError};
    ///
    /// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// struct Sum { total: i64 }
    /// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// struct Add { a: i64, b: i64 }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let add = typed_tool("mcp://t/tools/add:v1", "add", "Adds.",
    ///     |x: Add| async move { Ok::<_, ToolError>(Sum { total: x.a + x.b }) });
    /// let server = Server::builder().tool(add).build().unwrap();
    ///
    /// let mut v1 = TestClient::initialized(&server).await;
    /// let sum: Sum = v1.execute_as("mcp://t/tools/add:v1", &Add { a: 2, b: 3 }).await.unwrap();
    /// assert_eq!(sum.total, 5);
    ///
    /// let mut mc = TestClient::model_context(&server, serde_json::json!({})).await;
    /// let sum: Sum = mc.call_tool_as("add", &Add { a: 2, b: 3 }).await.unwrap();
    /// assert_eq!(sum.total, 5);
    /// # }
    /// ```
    pub async fn execute_as<O: DeserializeOwned>(
        &mut self,
        mcp_id: &str,
        arguments: &(impl Serialize + ?Sized),
    ) -> Result<O, CallError> {
        let arguments = serde_json::to_value(arguments).map_err(CallError::Arguments)?;
        let output = self.execute(mcp_id, arguments).await?;
        serde_json::from_value(output).map_err(CallError::Output)
    }

    /// `tools/call` (Model Context Protocol) with typed arguments, the
    /// result's `structuredContent` (or, for a tool without one, the JSON
    /// of its first text block) deserialised as `O`. A result with
    /// `isError` is [`CallError::Tool`] with its text (a tool's error, or
    /// arguments its input schema refuses); a protocol error (an unknown
    /// tool, arguments that are not an object) is [`CallError::Rpc`]. See
    /// [`execute_as`](Self::execute_as) for an example.
    pub async fn call_tool_as<O: DeserializeOwned>(
        &mut self,
        name: &str,
        arguments: &(impl Serialize + ?Sized),
    ) -> Result<O, CallError> {
        let arguments = serde_json::to_value(arguments).map_err(CallError::Arguments)?;
        let mut result = self.call_tool(name, arguments).await?;
        let first_text = result["content"]
            .as_array()
            .and_then(|blocks| blocks.iter().find_map(|b| b["text"].as_str()))
            .map(str::to_owned);
        if result["isError"] == Value::Bool(true) {
            return Err(CallError::Tool(first_text.unwrap_or_default()));
        }
        let output = match (result.get_mut("structuredContent"), first_text) {
            (Some(structured), _) => structured.take(),
            (None, Some(text)) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
            (None, None) => Value::Null,
        };
        serde_json::from_value(output).map_err(CallError::Output)
    }

    /// Ends the server's input (like closing stdin), then returns every
    /// message the server still wrote, until it closed its output, and the
    /// serving call's result.
    pub async fn close(mut self) -> (Vec<Value>, std::io::Result<()>) {
        self.close_input().await;
        let mut rest: Vec<Value> = self.inbox.drain(..).collect();
        while let Some(message) = self.read_one().await {
            rest.push(message);
        }
        let served = match tokio::time::timeout(self.timeout, &mut self.serving).await {
            Ok(Ok(result)) => result,
            Ok(Err(e)) => panic!("the serving task failed: {e}"),
            Err(_) => panic!("the server did not return after its input ended"),
        };
        (rest, served)
    }

    /// Ends the server's input; replies to requests in flight still arrive.
    pub async fn close_input(&mut self) {
        if let Some(mut writer) = self.writer.take() {
            let _ = writer.shutdown().await;
        }
    }

    async fn read_one(&mut self) -> Option<Value> {
        match tokio::time::timeout(self.timeout, next_input(&mut self.reader)).await {
            Ok(message) => message.map(decode),
            Err(_) => panic!("no message from the server within {:?}", self.timeout),
        }
    }
}

/// Why a typed call ([`TestClient::execute_as`],
/// [`TestClient::call_tool_as`]) returned no output.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The server answered with a JSON-RPC error: its code (compare with
    /// the [`ErrorCode`] constants) and text.
    #[error("{0}")]
    Rpc(#[from] RpcError),
    /// The tool ran and failed (a Model Context Protocol result with
    /// `isError: true`): its text.
    #[error("the tool failed: {0}")]
    Tool(String),
    /// The arguments did not serialise to JSON.
    #[error("the arguments are not JSON: {0}")]
    Arguments(serde_json::Error),
    /// The output did not deserialise as the type asked for.
    #[error("the output does not fit the type asked for: {0}")]
    Output(serde_json::Error),
}

impl CallError {
    /// The JSON-RPC error code, for [`CallError::Rpc`].
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Self::Rpc(e) => Some(e.code),
            _ => None,
        }
    }
}

/// A frame's body as JSON (frames the server writes are always JSON).
fn decode(input: Input) -> Value {
    match input {
        Input::Message(body) => serde_json::from_slice(&body).unwrap_or_else(|e| {
            panic!("the server wrote a frame that is not JSON ({e}): {body:?}")
        }),
        other => panic!("the server wrote something that is not a frame: {other:?}"),
    }
}

fn into_result(reply: Value) -> Result<Value, RpcError> {
    if let Some(error) = reply.get("error") {
        let code = error["code"].as_i64().unwrap_or(0);
        // MCP v1.0 says what went wrong in `data`; the Model Context
        // Protocol mostly in `message`.
        let data = match &error["data"] {
            Value::String(text) => text.clone(),
            Value::Null => error["message"].as_str().unwrap_or_default().to_owned(),
            other => other.to_string(),
        };
        return Err(RpcError::new(
            ErrorCode(i32::try_from(code).unwrap_or(0)),
            data,
        ));
    }
    Ok(reply.get("result").cloned().unwrap_or(Value::Null))
}

fn typed<T: DeserializeOwned>(value: Value) -> Result<T, RpcError> {
    serde_json::from_value(value)
        .map_err(|e| RpcError::internal(format!("unexpected result shape: {e}")))
}

/// The next frame the server wrote, `None` at the end of its output.
async fn next_input<S>(stream: &mut S) -> Option<Input>
where
    S: futures_core::Stream<Item = std::io::Result<Input>> + Unpin,
{
    crate::poll::next(stream).await.and_then(Result::ok)
}
