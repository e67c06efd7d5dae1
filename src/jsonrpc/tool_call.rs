//! The params of the two tool calls, as read with their envelope in one
//! pass (`jsonrpc::parse`): MCP v1.0's `mcp/executeTool` and the Model
//! Context Protocol's `tools/call`, each with its arguments kept as text.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::fast::arguments::ArgumentsText;

/// The params of a tool call, read with its envelope in one pass.
#[derive(Debug)]
pub(crate) enum ToolCall<'a> {
    /// `mcp/executeTool` params.
    V1(ExecuteParams<'a>),
    /// `tools/call` params.
    ModelContext(CallToolParams<'a>),
}

/// `mcp/executeTool` params (`{"id": mcpId, "arguments": {...}}`), its id
/// and its arguments' text borrowed.
#[derive(Debug, Deserialize)]
pub(crate) struct ExecuteParams<'a> {
    #[serde(borrow)]
    pub(crate) id: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "crate::fast::arguments::object")]
    pub(crate) arguments: Option<ArgumentsText<'a>>,
}

impl<'a> ExecuteParams<'a> {
    /// Params read by the hot path's own reader (`fast::plain_call`).
    pub(crate) fn new(id: &'a str, arguments: ArgumentsText<'a>) -> Self {
        Self {
            id: Cow::Borrowed(id),
            arguments: Some(arguments),
        }
    }
}

/// `tools/call` params.
#[derive(Debug, Deserialize)]
pub(crate) struct CallToolParams<'a> {
    #[serde(borrow)]
    pub(crate) name: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(crate) arguments: Option<ArgumentsText<'a>>,
    #[serde(default, borrow, rename = "_meta")]
    pub(crate) meta: Option<RequestMeta<'a>>,
    /// The answers to the questions of an earlier round (2026-07-28).
    #[serde(default, borrow, rename = "inputResponses")]
    pub(crate) input_responses: Option<&'a RawValue>,
    /// The state an earlier round sealed (2026-07-28).
    #[serde(default, borrow, rename = "requestState")]
    pub(crate) request_state: Option<&'a RawValue>,
}

impl<'a> CallToolParams<'a> {
    /// Params read by the hot path's own reader (`fast::plain_call`).
    pub(crate) fn new(name: &'a str, arguments: ArgumentsText<'a>) -> Self {
        Self {
            name: Cow::Borrowed(name),
            arguments: Some(arguments),
            meta: None,
            input_responses: None,
            request_state: None,
        }
    }
}

/// `_meta` of a request's params: the progress token, and what a
/// 2026-07-28 request carries in it (each kept as its JSON text).
#[derive(Debug, Deserialize, Default)]
pub(crate) struct RequestMeta<'a> {
    #[serde(default, borrow, rename = "progressToken")]
    pub(crate) progress_token: Option<RawText<'a>>,
    #[serde(default, borrow, rename = "io.modelcontextprotocol/protocolVersion")]
    pub(crate) protocol_version: Option<RawText<'a>>,
    #[serde(default, borrow, rename = "io.modelcontextprotocol/clientCapabilities")]
    pub(crate) client_capabilities: Option<RawText<'a>>,
    #[serde(default, borrow, rename = "io.modelcontextprotocol/logLevel")]
    pub(crate) log_level: Option<RawText<'a>>,
}

/// A value's JSON text as written (what a borrowed `RawValue` holds): read
/// by serde, or by the plain reader, which checked it as serde would.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawText<'a>(&'a str);

impl<'a> RawText<'a> {
    /// Text the plain reader checked reads as a value.
    pub(crate) fn checked(text: &'a str) -> Self {
        Self(text)
    }

    /// The text.
    pub(crate) fn get(self) -> &'a str {
        self.0
    }

    /// The value, owned.
    pub(crate) fn to_raw_value(self) -> Option<Box<RawValue>> {
        RawValue::from_string(self.0.to_owned()).ok()
    }
}

impl std::fmt::Debug for RawText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawText<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <&'de RawValue>::deserialize(deserializer).map(|raw| Self(raw.get()))
    }
}
