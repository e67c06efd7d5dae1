//! An in-process test client: connects to a [`Server`] over an in-memory
//! pipe (no process, no socket), speaks stdio framing, and offers both
//! typed calls and raw `send`/`recv` for protocol-level tests.
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

use std::collections::VecDeque;
use std::time::Duration;

use bytes::BytesMut;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;
use tokio_util::codec::{Encoder, FramedRead};

use crate::error::{ErrorCode, RpcError};
use crate::protocol::{PromptDefinition, ResourceDefinition, ToolDefinition};
use crate::server::{Input, Server};
use crate::transport::FrameCodec;

/// A client connected to a server over an in-memory pipe.
pub struct TestClient {
    writer: Option<WriteHalf<DuplexStream>>,
    reader: FramedRead<ReadHalf<DuplexStream>, FrameCodec>,
    /// Messages received but not yet asked for.
    inbox: VecDeque<Value>,
    next_id: i64,
    timeout: Duration,
    serving: JoinHandle<std::io::Result<()>>,
}

impl TestClient {
    /// Connects without a handshake (for handshake tests).
    pub async fn connect(server: &Server) -> Self {
        let (client, server_end) = tokio::io::duplex(256 * 1024);
        let (server_read, server_write) = tokio::io::split(server_end);
        let server = server.clone();
        let serving = tokio::spawn(async move { server.serve_io(server_read, server_write).await });
        let (read, write) = tokio::io::split(client);
        Self {
            writer: Some(write),
            reader: FramedRead::new(read, FrameCodec::new(usize::MAX)),
            inbox: VecDeque::new(),
            next_id: 2,
            timeout: Duration::from_secs(10),
            serving,
        }
    }

    /// Connects and completes the handshake (`initialize` with id 1, then
    /// `initialized`).
    pub async fn initialized(server: &Server) -> Self {
        let mut client = Self::connect(server).await;
        client.initialize(json!({"clientCapabilities": {}})).await;
        client
    }

    /// Sends `initialize` (id 1) with `params`, checks it succeeded, then
    /// sends `initialized`; returns the `initialize` result.
    pub async fn initialize(&mut self, params: Value) -> Value {
        let reply = self
            .call_with_id(json!(1), "initialize", Some(params))
            .await;
        let result = match reply {
            Ok(result) => result,
            Err(e) => panic!("initialize failed: {e}"),
        };
        self.notify("initialized", json!({})).await;
        result
    }

    /// Sets how long to wait for a message before panicking.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Sends one JSON value (a message or a batch) as a frame.
    pub async fn send(&mut self, message: &Value) {
        let body = message.to_string();
        let mut frame = BytesMut::new();
        let _ = FrameCodec::new(usize::MAX).encode(body.as_bytes(), &mut frame);
        self.send_raw(&frame).await;
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

    /// The next server notification, skipping (and keeping) replies.
    pub async fn next_notification(&mut self) -> Option<Value> {
        if let Some(i) = self.inbox.iter().position(|m| m.get("method").is_some()) {
            return self.inbox.remove(i);
        }
        loop {
            let message = self.read_one().await?;
            if message.get("method").is_some() {
                return Some(message);
            }
            self.inbox.push_back(message);
        }
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
        return Err(RpcError::new(
            ErrorCode(i32::try_from(code).unwrap_or(0)),
            error["data"].as_str().unwrap_or_default(),
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
