//! MCP v1.0's wire shapes that only this dialect reads and writes, spelled
//! as its reference spells them (`listToolsProvider`, `$/logTrace`, …).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::definition::ServerInfo;
use crate::jsonrpc::RequestId;

/// The `capabilities` object of the `initialize` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ServerCapabilities {
    /// `mcp/listTools` is served.
    pub(crate) list_tools_provider: bool,
    /// `mcp/listResources` is served.
    pub(crate) list_resources_provider: bool,
    /// `mcp/listPrompts` is served.
    pub(crate) list_prompts_provider: bool,
    /// Present when `mcp/executeTool` is served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) execution_provider: Option<ExecutionProvider>,
}

/// The `executionProvider` member of [`ServerCapabilities`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ExecutionProvider {
    /// Tools can be executed with `mcp/executeTool`.
    pub(crate) execute: bool,
}

/// The trace level a client asks for (`initialize`'s `trace`, `$/setTrace`'s `value`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum TraceValue {
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
    /// The level it asks for.
    pub(crate) fn level(self) -> super::TraceLevel {
        match self {
            Self::Off => super::TraceLevel::Off,
            Self::Messages | Self::On => super::TraceLevel::Messages,
            Self::Verbose => super::TraceLevel::Verbose,
        }
    }
}

/// The params of `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InitializeParams {
    /// The client's features (may be `{}` in v1.0).
    pub(crate) client_capabilities: serde_json::Map<String, Value>,
    /// The workspace root, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) root_uri: Option<String>,
    /// The trace level; absent means off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) trace: Option<TraceValue>,
}

/// The result of `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InitializeResult {
    /// What the server provides.
    pub(crate) capabilities: ServerCapabilities,
    /// Who the server is.
    pub(crate) server_info: ServerInfo,
}

/// The params of the `mcp/resourceDidChange` notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResourceDidChangeParams {
    /// The resource whose content changed.
    pub(crate) mcp_id: String,
}

/// The params of the `$/logTrace` notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LogTraceParams {
    /// One line about a handled request.
    pub(crate) message: String,
    /// More detail (params and result) when the trace level is verbose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) verbose: Option<String>,
}

/// The params of the `$/cancelRequest` notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CancelParams {
    /// The id of the request to cancel.
    pub(crate) id: RequestId,
}

/// The params of the `$/setTrace` notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SetTraceParams {
    /// The new trace level.
    pub(crate) value: TraceValue,
}

/// Method and notification names of MCP v1.0.
pub(crate) mod methods {
    /// The handshake request.
    pub(crate) const INITIALIZE: &str = "initialize";
    /// The client's notification that ends the handshake.
    pub(crate) const INITIALIZED: &str = "initialized";
    /// Lists tools.
    pub(crate) const LIST_TOOLS: &str = "mcp/listTools";
    /// Lists resources.
    pub(crate) const LIST_RESOURCES: &str = "mcp/listResources";
    /// Lists prompts.
    pub(crate) const LIST_PROMPTS: &str = "mcp/listPrompts";
    /// Executes a tool.
    pub(crate) const EXECUTE_TOOL: &str = "mcp/executeTool";
    /// Cancels a request in flight.
    pub(crate) const CANCEL_REQUEST: &str = "$/cancelRequest";
    /// Changes the trace level.
    pub(crate) const SET_TRACE: &str = "$/setTrace";
    /// A trace line from the server.
    pub(crate) const LOG_TRACE: &str = "$/logTrace";
    /// A resource's content changed.
    pub(crate) const RESOURCE_DID_CHANGE: &str = "mcp/resourceDidChange";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_are_spelled_as_the_reference_spells_them() {
        let caps = ServerCapabilities {
            list_tools_provider: true,
            list_resources_provider: false,
            list_prompts_provider: false,
            execution_provider: Some(ExecutionProvider { execute: true }),
        };
        assert_eq!(
            serde_json::to_string(&caps).unwrap(),
            r#"{"listToolsProvider":true,"listResourcesProvider":false,"listPromptsProvider":false,"executionProvider":{"execute":true}}"#
        );
    }
}
