//! The types of the MCP v1.0 reference, serialised exactly as it spells
//! them (`mcpId`, `inputSchema`, `listToolsProvider`, …).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::jsonrpc::RequestId;

/// The `capabilities` object of the `initialize` result.
///
/// ```
/// use clawmcp::protocol::{ExecutionProvider, ServerCapabilities};
///
/// let caps = ServerCapabilities {
///     list_tools_provider: true,
///     list_resources_provider: false,
///     list_prompts_provider: false,
///     execution_provider: Some(ExecutionProvider { execute: true }),
/// };
/// assert_eq!(
///     serde_json::to_string(&caps).unwrap(),
///     r#"{"listToolsProvider":true,"listResourcesProvider":false,"listPromptsProvider":false,"executionProvider":{"execute":true}}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerCapabilities {
    /// `mcp/listTools` is served.
    pub list_tools_provider: bool,
    /// `mcp/listResources` is served.
    pub list_resources_provider: bool,
    /// `mcp/listPrompts` is served.
    pub list_prompts_provider: bool,
    /// Present when `mcp/executeTool` is served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_provider: Option<ExecutionProvider>,
}

/// The `executionProvider` member of [`ServerCapabilities`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionProvider {
    /// Tools can be executed with `mcp/executeTool`.
    pub execute: bool,
}

/// A tool as `mcp/listTools` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    /// A unique, stable URI, e.g. `mcp://acme-corp/tools/file-writer:v1`.
    pub mcp_id: String,
    /// A short human-readable name.
    pub name: String,
    /// What the tool does, its parameters and its output.
    pub description: String,
    /// The JSON Schema of `arguments` (an object schema).
    pub input_schema: Value,
    /// The JSON Schema of `output`.
    pub output_schema: Value,
}

/// A resource as `mcp/listResources` lists it, content included.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDefinition {
    /// A unique, stable URI, e.g. `mcp://my-server/resources/config.json`.
    pub mcp_id: String,
    /// A short human-readable name.
    pub name: String,
    /// The resource's purpose and content.
    pub description: String,
    /// The IANA media type of `content`, e.g. `text/plain`.
    pub media_type: String,
    /// The full content.
    pub content: String,
}

/// The role of a prompt's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A system instruction.
    System,
    /// A user message.
    User,
    /// An assistant message.
    Assistant,
}

/// A prompt as `mcp/listPrompts` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptDefinition {
    /// A unique, stable URI, e.g. `mcp://my-prompts/system/planner-v2`.
    pub mcp_id: String,
    /// A short human-readable name.
    pub name: String,
    /// The prompt's purpose and expected use (optional in the reference).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The role of the content.
    pub role: Role,
    /// The text of the prompt.
    pub content: String,
}

/// The trace level a client asks for (`initialize`'s `trace`, `$/setTrace`'s `value`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceValue {
    /// No `$/logTrace`.
    Off,
    /// `$/logTrace` with a message per request.
    Messages,
    /// `$/logTrace` with a message and the request's params and result.
    Verbose,
    /// The reference's spelling of "messages".
    On,
}

impl TraceValue {
    /// Whether `$/logTrace` notifications are sent at this level.
    pub fn is_on(self) -> bool {
        self != Self::Off
    }
}

/// The params of `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The client's features (may be `{}` in v1.0).
    pub client_capabilities: serde_json::Map<String, Value>,
    /// The workspace root, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_uri: Option<String>,
    /// The trace level; absent means off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceValue>,
}

/// `serverInfo` in the `initialize` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// The server's name.
    pub name: String,
    /// The server's version.
    pub version: String,
}

/// The result of `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// What the server provides.
    pub capabilities: ServerCapabilities,
    /// Who the server is.
    pub server_info: ServerInfo,
}

/// The params of `mcp/executeTool`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecuteToolParams {
    /// The tool's `mcpId`.
    pub id: String,
    /// The arguments, an object; omitted means `{}`.
    #[serde(default)]
    pub arguments: serde_json::Map<String, Value>,
}

/// The result of `mcp/executeTool`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecuteToolResult {
    /// The tool's output, matching its `outputSchema`.
    pub output: Value,
}

/// The params of the `mcp/resourceDidChange` notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDidChangeParams {
    /// The resource whose content changed.
    pub mcp_id: String,
}

/// The params of the `$/logTrace` notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogTraceParams {
    /// One line about a handled request.
    pub message: String,
    /// More detail (params and result) when the trace level is verbose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbose: Option<String>,
}

/// The params of the `$/cancelRequest` notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelParams {
    /// The id of the request to cancel.
    pub id: RequestId,
}

/// The params of the `$/setTrace` notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetTraceParams {
    /// The new trace level.
    pub value: TraceValue,
}

/// Method and notification names of MCP v1.0.
pub mod methods {
    /// The handshake request.
    pub const INITIALIZE: &str = "initialize";
    /// The client's notification that ends the handshake.
    pub const INITIALIZED: &str = "initialized";
    /// Lists tools.
    pub const LIST_TOOLS: &str = "mcp/listTools";
    /// Lists resources.
    pub const LIST_RESOURCES: &str = "mcp/listResources";
    /// Lists prompts.
    pub const LIST_PROMPTS: &str = "mcp/listPrompts";
    /// Executes a tool.
    pub const EXECUTE_TOOL: &str = "mcp/executeTool";
    /// Cancels a request in flight.
    pub const CANCEL_REQUEST: &str = "$/cancelRequest";
    /// Changes the trace level.
    pub const SET_TRACE: &str = "$/setTrace";
    /// A trace line from the server.
    pub const LOG_TRACE: &str = "$/logTrace";
    /// A resource's content changed.
    pub const RESOURCE_DID_CHANGE: &str = "mcp/resourceDidChange";
}
