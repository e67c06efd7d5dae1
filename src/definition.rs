//! The definitions of a server's items — tools, resources, prompts — and
//! of the server itself, as a server author writes them and both protocols
//! list them. They serialise with MCP v1.0's spelling (`mcpId`,
//! `inputSchema`, …); the Model Context Protocol maps them once, when the
//! server is built.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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

/// `serverInfo` in the `initialize` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// The server's name.
    pub name: String,
    /// The server's version.
    pub version: String,
}
