//! The Model Context Protocol's wire shapes this dialect reads and writes,
//! spelled as `schema.ts` (2025-11-25) spells them. Params are read with
//! borrowed strings; results are written from borrowed parts.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::content::{Content, ResourceContents, StructuredJson};
use crate::definition::{Icon, ToolAnnotations};
use crate::prompt::{PromptArgument, PromptMessage};

/// `initialize` params.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct InitializeParams<'a> {
    #[serde(borrow)]
    pub(super) protocol_version: Cow<'a, str>,
    pub(super) capabilities: Map<String, Value>,
    pub(super) client_info: Implementation<'a>,
}

/// `clientInfo`: a name and a version (others ignored).
#[derive(Deserialize)]
pub(super) struct Implementation<'a> {
    #[serde(borrow)]
    pub(super) name: Cow<'a, str>,
    #[serde(borrow)]
    pub(super) version: Cow<'a, str>,
}

/// The `initialize` result, its fixed parts serialised once.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct InitializeResult<'a> {
    pub(super) protocol_version: &'a str,
    pub(super) capabilities: &'a RawValue,
    pub(super) server_info: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) instructions: Option<&'a str>,
}

/// Params of the list methods.
#[derive(Deserialize, Default)]
pub(super) struct ListParams<'a> {
    #[serde(default, borrow)]
    pub(super) cursor: Option<Cow<'a, str>>,
}

/// The same params read with a value for arguments: read only to word a
/// refusal of the call's reading as a reading into a value words it.
#[derive(Deserialize)]
#[allow(dead_code)]
pub(super) struct CallToolParamsShape<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default, rename = "_meta")]
    meta: Option<Map<String, Value>>,
}

/// `resources/read`, `resources/subscribe` and `resources/unsubscribe`
/// params.
#[derive(Deserialize)]
pub(super) struct UriParams<'a> {
    #[serde(borrow)]
    pub(super) uri: Cow<'a, str>,
}

/// `prompts/get` params.
#[derive(Deserialize)]
pub(super) struct GetPromptParams<'a> {
    #[serde(borrow)]
    pub(super) name: Cow<'a, str>,
    #[serde(default)]
    pub(super) arguments: Option<HashMap<String, String>>,
}

/// `logging/setLevel` params.
#[derive(Deserialize)]
pub(super) struct SetLevelParams {
    pub(super) level: crate::client::LogLevel,
}

/// `completion/complete` params.
#[derive(Deserialize)]
pub(super) struct CompleteParams<'a> {
    #[serde(borrow, rename = "ref")]
    pub(super) reference: Reference<'a>,
    pub(super) argument: CompleteArgument,
    #[serde(default)]
    pub(super) context: Option<CompleteContext>,
}

/// What a completion is for.
#[derive(Deserialize)]
#[serde(tag = "type")]
pub(super) enum Reference<'a> {
    #[serde(rename = "ref/prompt")]
    Prompt {
        #[serde(borrow)]
        name: Cow<'a, str>,
    },
    #[serde(rename = "ref/resource")]
    Resource {
        #[serde(borrow)]
        uri: Cow<'a, str>,
    },
}

#[derive(Deserialize)]
pub(super) struct CompleteArgument {
    pub(super) name: String,
    pub(super) value: String,
}

#[derive(Deserialize, Default)]
pub(super) struct CompleteContext {
    #[serde(default)]
    pub(super) arguments: std::collections::BTreeMap<String, String>,
}

/// `notifications/cancelled` params.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CancelledParams {
    pub(super) request_id: crate::jsonrpc::RequestId,
}

/// A tool as `tools/list` lists it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Tool<'a> {
    pub(super) name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) title: Option<&'a str>,
    pub(super) description: &'a str,
    pub(super) input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) output_schema: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) annotations: Option<Cow<'a, ToolAnnotations>>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub(super) icons: &'a [Icon],
    /// Its app page's link (MCP Apps).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map<String, Value>>,
}

/// A resource as `resources/list` lists it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Resource<'a> {
    pub(super) uri: &'a str,
    pub(super) name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) title: Option<String>,
    pub(super) description: &'a str,
    pub(super) mime_type: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) icons: Vec<Icon>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map<String, Value>>,
}

/// A template as `resources/templates/list` lists it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResourceTemplate<'a> {
    pub(super) uri_template: &'a str,
    pub(super) name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) title: Option<&'a str>,
    pub(super) description: &'a str,
    pub(super) mime_type: &'a str,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub(super) icons: &'a [Icon],
}

/// A prompt as `prompts/list` lists it.
#[derive(Serialize)]
pub(super) struct Prompt<'a> {
    pub(super) name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) description: Option<&'a str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub(super) arguments: &'a [PromptArgument],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub(super) icons: &'a [Icon],
}

/// The result of `tools/call`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CallToolResult<'a> {
    pub(super) content: &'a [Content],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) structured_content: Option<StructuredContent<'a>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) is_error: bool,
}

/// A `tools/call` result's `structuredContent`: the tool's structured
/// output, or for blocks alone `{"content": [blocks]}` (the value its
/// output schema held), written from the blocks with no value built.
pub(super) enum StructuredContent<'a> {
    Output(StructuredJson<'a>),
    Blocks(&'a [Content]),
}

impl Serialize for StructuredContent<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Self::Output(output) => output.serialize(serializer),
            Self::Blocks(blocks) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("content", blocks)?;
                map.end()
            }
        }
    }
}

/// The result of `resources/read`.
#[derive(Serialize)]
pub(super) struct ReadResourceResult<'a> {
    pub(super) contents: [&'a ResourceContents; 1],
}

/// The result of `prompts/get`.
#[derive(Serialize)]
pub(super) struct GetPromptResult<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) description: Option<&'a str>,
    pub(super) messages: &'a [PromptMessage],
}

/// The result of `completion/complete`.
#[derive(Serialize)]
pub(super) struct CompleteResult<'a> {
    pub(super) completion: CompletionBody<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CompletionBody<'a> {
    pub(super) values: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) total: Option<usize>,
    pub(super) has_more: bool,
}
