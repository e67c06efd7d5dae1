//! The method table of MCP v1.0 (PROTOCOL.md §4): which method names exist,
//! how their params are read, and what each one does with the server's items.
//!
//! The table ([`route`]) and the operations are kept apart: the operations
//! know nothing of method names or wire shapes beyond their results, so a
//! second dialect would add its own table and result encoders and reuse
//! [`perform`] and the tools untouched.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tracing::Instrument;

use super::ServerInner;
use super::validate::{check_arguments, check_output};
use crate::error::RpcError;
use crate::jsonrpc::{RequestId, encode_error, encode_result};
use crate::protocol::{ResourceDefinition, methods};
use crate::tool::{Cancellation, ToolContext};

/// An operation of the server, independent of how it is named on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    ListTools,
    ListResources,
    ListPrompts,
    ExecuteTool,
}

/// The MCP v1.0 method table. Names are case-sensitive; `rpc.*` and
/// anything else unknown are not found.
pub(crate) fn route(method: &str) -> Option<Operation> {
    match method {
        methods::LIST_TOOLS => Some(Operation::ListTools),
        methods::LIST_RESOURCES => Some(Operation::ListResources),
        methods::LIST_PROMPTS => Some(Operation::ListPrompts),
        methods::EXECUTE_TOOL => Some(Operation::ExecuteTool),
        _ => None,
    }
}

impl ServerInner {
    /// Whether the server declared the capability behind `op`.
    fn provides(&self, op: Operation) -> bool {
        let caps = &self.capabilities;
        match op {
            Operation::ListTools => caps.list_tools_provider,
            Operation::ListResources => caps.list_resources_provider,
            Operation::ListPrompts => caps.list_prompts_provider,
            Operation::ExecuteTool => caps.execution_provider.as_ref().is_some_and(|e| e.execute),
        }
    }
}

/// What serving a request takes.
pub(crate) enum Step {
    /// The reply is known at once.
    Reply(Vec<u8>),
    /// The reply needs async work: run it concurrently with other requests.
    Run(Work),
}

/// Async work for one request.
pub(crate) enum Work {
    ListResources,
    Execute { tool: usize, arguments: Value },
}

impl Work {
    /// The method that asked for this work, for trace lines.
    pub(crate) fn method(&self) -> &'static str {
        match self {
            Self::ListResources => methods::LIST_RESOURCES,
            Self::Execute { .. } => methods::EXECUTE_TOOL,
        }
    }

    /// How long the work may run.
    pub(crate) fn time_limit(&self, server: &ServerInner) -> Option<std::time::Duration> {
        match self {
            Self::ListResources => None,
            Self::Execute { tool, .. } => server.tools.get(*tool).and_then(|t| t.time_limit),
        }
    }

    /// The index of the tool the work runs, if any.
    pub(crate) fn tool_index(&self) -> Option<usize> {
        match self {
            Self::ListResources => None,
            Self::Execute { tool, .. } => Some(*tool),
        }
    }

    /// Whether the work may hold its thread ([`Tool::may_block`](crate::Tool::may_block)).
    pub(crate) fn may_block(&self, server: &ServerInner) -> bool {
        match self {
            Self::ListResources => false,
            Self::Execute { tool, .. } => server.tools.get(*tool).is_some_and(|t| t.may_block),
        }
    }
}

/// Reads a request through the method table.
pub(crate) fn dispatch(
    server: &ServerInner,
    id: &RequestId,
    method: &str,
    params: Option<&RawValue>,
) -> Step {
    let Some(op) = route(method).filter(|op| server.provides(*op)) else {
        return Step::Reply(encode_error(id, &RpcError::method_not_found(method)));
    };
    let outcome =
        match op {
            Operation::ListTools => no_params(method, params)
                .map(|()| Step::Reply(encode_result(id, &*server.tool_list))),
            Operation::ListPrompts => no_params(method, params)
                .map(|()| Step::Reply(encode_result(id, &*server.prompt_list))),
            Operation::ListResources => {
                no_params(method, params).map(|()| Step::Run(Work::ListResources))
            }
            Operation::ExecuteTool => execute_params(server, params),
        };
    outcome.unwrap_or_else(|e| Step::Reply(encode_error(id, &e)))
}

/// The list methods take params absent, `null` or `{}`; anything else is `-32602`.
fn no_params(method: &str, params: Option<&RawValue>) -> Result<(), RpcError> {
    let Some(raw) = params else { return Ok(()) };
    let empty = match raw.get().as_bytes().first() {
        Some(b'n') => true,
        Some(b'{') => serde_json::from_str::<serde_json::Map<String, Value>>(raw.get())
            .is_ok_and(|m| m.is_empty()),
        _ => false,
    };
    if empty {
        Ok(())
    } else {
        Err(RpcError::invalid_params(format!(
            "{method} takes no params: send them absent, null or {{}}"
        )))
    }
}

/// [`ExecuteToolParams`](crate::protocol::ExecuteToolParams), its id borrowed.
#[derive(serde::Deserialize)]
struct ExecuteParams<'a> {
    #[serde(borrow)]
    id: std::borrow::Cow<'a, str>,
    #[serde(default)]
    arguments: serde_json::Map<String, Value>,
}

/// `{"id": mcpId, "arguments": {...}}`, the tool looked up.
fn execute_params(server: &ServerInner, params: Option<&RawValue>) -> Result<Step, RpcError> {
    const SHAPE: &str =
        "mcp/executeTool params must be an object {\"id\": mcpId, \"arguments\": {...}}";
    let raw = params
        .filter(|raw| raw.get().starts_with('{'))
        .ok_or_else(|| RpcError::invalid_params(SHAPE))?;
    let params: ExecuteParams<'_> = serde_json::from_str(raw.get())
        .map_err(|e| RpcError::invalid_params(format!("{SHAPE}: {e}")))?;
    let tool = *server
        .tool_index
        .get(&*params.id)
        .ok_or_else(|| RpcError::unknown_mcp_id("tool", &params.id))?;
    Ok(Step::Run(Work::Execute {
        tool,
        arguments: Value::Object(params.arguments),
    }))
}

/// Performs async work and encodes its reply.
pub(crate) async fn perform(
    server: Arc<ServerInner>,
    id: RequestId,
    work: Work,
    cancel: Cancellation,
) -> Vec<u8> {
    let result = match work {
        Work::ListResources => list_resources(&server)
            .await
            .map(|list| encode_result(&id, &list)),
        Work::Execute { tool, arguments } => execute(&server, &id, tool, arguments, cancel)
            .await
            .map(|output| encode_result(&id, &ExecuteResult { output: &output })),
    };
    result.unwrap_or_else(|e| encode_error(&id, &e))
}

#[derive(Serialize)]
struct ExecuteResult<'a> {
    output: &'a Value,
}

async fn list_resources(server: &ServerInner) -> Result<Vec<ResourceDefinition>, RpcError> {
    let mut list = Vec::with_capacity(server.resources.len());
    for (info, resource) in &server.resources {
        let content = resource.content().await.map_err(|e| {
            RpcError::internal(format!("resource {} could not be read: {e}", info.mcp_id))
        })?;
        list.push(ResourceDefinition {
            mcp_id: info.mcp_id.clone(),
            name: info.name.clone(),
            description: info.description.clone(),
            media_type: info.media_type.clone(),
            content,
        });
    }
    Ok(list)
}

async fn execute(
    server: &ServerInner,
    id: &RequestId,
    index: usize,
    arguments: Value,
    cancel: Cancellation,
) -> Result<Value, RpcError> {
    let tool = server
        .tools
        .get(index)
        .ok_or_else(|| RpcError::internal("tool index out of range"))?;
    check_arguments(&tool.input, &arguments, &tool.mcp_id)?;
    let span = tracing::debug_span!("tool", request_id = %id, tool = %tool.mcp_id);
    let ctx = ToolContext::new(id.clone(), cancel, server.handle.clone(), span.clone());
    // Time limits, cancellation and panics are the session's (`Job::run`).
    let output = tool
        .tool
        .call(arguments, ctx)
        .instrument(span)
        .await
        .map_err(|e| RpcError::new(e.code(), e.message()))?;
    check_output(&tool.output, &output, &tool.mcp_id)?;
    Ok(output)
}
