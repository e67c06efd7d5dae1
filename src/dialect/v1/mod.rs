//! MCP v1.0, the Machine-to-Clawpedia Protocol (docs/mcp-v1.md): its
//! handshake (`initialize` with id 1, `-32002` before it), its method
//! table (`mcp/listTools`, `mcp/listResources`, `mcp/listPrompts`,
//! `mcp/executeTool`), its notifications (`initialized`, `$/cancelRequest`,
//! `$/setTrace`) and the error table of docs/mcp-v1.md §2.

pub(crate) mod schema;

use crate::dialect::Listing;
use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::Phase;
use super::{Admission, Control, Ended, JobInfo, Request, Step, TraceLevel};
use super::{Change, SessionState};
use crate::content::StructuredJson;
use crate::definition::{PromptDefinition, ServerInfo, ToolDefinition};
use crate::engine::access::Item;
use crate::engine::{Arguments, Catalog, Done, Failure, Work};
use crate::error::{ErrorCode, RpcError};
use crate::fast::arguments::TOKEN_REFUSED;
use crate::jsonrpc::{
    Reply, RequestId, ToolCall, encode_error, encode_notification, encode_result,
    encode_result_text,
};
use crate::tool::CancelReason;
use schema::{
    CancelParams, ExecutionProvider, InitializeParams, InitializeResult, LogTraceParams,
    ResourceDidChangeParams, ServerCapabilities, SetTraceParams, TraceValue, methods,
};

/// MCP v1.0's capabilities and fixed lists, serialised once at build.
pub(crate) struct Lists {
    pub(crate) capabilities: ServerCapabilities,
    /// The `initialize` result.
    initialize_result: Box<RawValue>,
    /// The `mcp/listTools` result.
    tool_list: Box<RawValue>,
    /// The `mcp/listPrompts` result.
    prompt_list: Box<RawValue>,
}

impl Lists {
    pub(crate) fn build(
        catalog: &Catalog,
        providers: crate::dialect::Providers,
        info: &ServerInfo,
    ) -> Self {
        let can_execute = providers.tools || !catalog.tools.is_empty();
        let capabilities = ServerCapabilities {
            list_tools_provider: can_execute,
            list_resources_provider: providers.resources || !catalog.resources.is_empty(),
            list_prompts_provider: providers.prompts || !catalog.prompts.is_empty(),
            execution_provider: can_execute.then_some(ExecutionProvider { execute: true }),
        };
        let tools: Vec<&ToolDefinition> = catalog
            .tools
            .iter()
            .filter(|t| t.by_id)
            .map(|t| &t.definition)
            .collect();
        let prompts: Vec<&PromptDefinition> =
            catalog.prompts.iter().map(|p| &p.definition).collect();
        Self {
            initialize_result: crate::dialect::raw(&InitializeResult {
                capabilities: capabilities.clone(),
                server_info: info.clone(),
            }),
            capabilities,
            tool_list: crate::dialect::raw(&tools),
            prompt_list: crate::dialect::raw(&prompts),
        }
    }
}

/// Whether `id` is the integer `1`, the only id `initialize` may carry.
fn is_one(id: &RequestId) -> bool {
    matches!(id, RequestId::Number(n) if &**n == "1")
}

/// docs/mcp-v1.md §3: before `initialize` (id 1) nothing is served.
pub(crate) fn admit(phase: Phase, method: &str, id: &RequestId) -> Admission {
    let is_initialize = method == methods::INITIALIZE;
    match phase {
        Phase::AwaitingInitialize if is_initialize && is_one(id) => Admission::Initialize,
        Phase::AwaitingInitialize if is_initialize => Admission::Reject(RpcError::invalid_request(
            format!("initialize must carry the integer id 1, not {id}"),
        )),
        Phase::AwaitingInitialize => Admission::Reject(RpcError::new(
            ErrorCode::SERVER_NOT_INITIALIZED,
            format!("'{method}' before initialize: the first request must be initialize"),
        )),
        Phase::InitializedSent | Phase::Ready if is_initialize => Admission::Reject(
            RpcError::invalid_request("the session is already initialized"),
        ),
        Phase::Implicit if is_initialize => Admission::Reject(RpcError::invalid_request(
            "initialize must be the first message of a session; this one is implicit \
             (an HTTP exchange whose first message was not initialize)",
        )),
        Phase::InitializedSent | Phase::Ready | Phase::Implicit => Admission::Serve,
    }
}

/// Answers `initialize`: `clientCapabilities` required, `trace` read.
pub(crate) fn initialize(
    session: &impl SessionState,
    id: &RequestId,
    params: Option<&RawValue>,
) -> Result<(Reply, Change), Reply> {
    let parsed = params
        .filter(|raw| raw.get().starts_with('{'))
        .ok_or_else(|| "initialize params must be an object with clientCapabilities".to_owned())
        .and_then(|raw| {
            serde_json::from_str::<InitializeParams>(raw.get())
                .map_err(|e| format!("initialize params: {e}"))
        });
    match parsed {
        Ok(params) => Ok((
            encode_result(id, &*session.server().listing().v1.initialize_result),
            Change::Trace(params.trace.map_or(TraceLevel::Off, TraceValue::level)),
        )),
        Err(why) => Err(encode_error(id, &RpcError::invalid_params(why))),
    }
}

/// An operation of MCP v1.0's method table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    ListTools,
    ListResources,
    ListPrompts,
    ExecuteTool,
}

/// The method table. Names are case-sensitive; `rpc.*` and anything else
/// unknown are not found.
fn operation(method: &str) -> Option<Operation> {
    match method {
        methods::LIST_TOOLS => Some(Operation::ListTools),
        methods::LIST_RESOURCES => Some(Operation::ListResources),
        methods::LIST_PROMPTS => Some(Operation::ListPrompts),
        methods::EXECUTE_TOOL => Some(Operation::ExecuteTool),
        _ => None,
    }
}

/// Whether the server declared the capability behind `op`.
fn provides(caps: &ServerCapabilities, op: Operation) -> bool {
    match op {
        Operation::ListTools => caps.list_tools_provider,
        Operation::ListResources => caps.list_resources_provider,
        Operation::ListPrompts => caps.list_prompts_provider,
        Operation::ExecuteTool => caps.execution_provider.as_ref().is_some_and(|e| e.execute),
    }
}

/// Reads a request through the method table.
pub(crate) fn route(listing: &Listing, request: Request<'_>) -> Step {
    let Request {
        id,
        method,
        params,
        call,
        principal,
    } = request;
    let lists = &listing.v1;
    let catalog = &listing.catalog;
    // Lists that hide what a token cannot use are made for it (docs/oauth.md §4).
    let hiding = principal.filter(|_| catalog.access.hide_unusable);
    let Some(op) = operation(method).filter(|op| provides(&lists.capabilities, *op)) else {
        return Step::Reply(encode_error(id, &RpcError::method_not_found(method)));
    };
    let outcome = match op {
        Operation::ListTools => no_params(method, params).map(|()| match hiding {
            None => Step::Reply(encode_result(id, &*lists.tool_list)),
            Some(principal) => {
                let shows = |i: usize| {
                    catalog.tools.get(i).is_some_and(|tool| tool.by_id)
                        && catalog.access.shows(Some(principal), Item::Tool(i))
                };
                let shown = super::visible(&catalog.tools, shows, |t| &t.definition);
                Step::Reply(encode_result(id, &shown))
            }
        }),
        // The list carries every prompt's text: what a token may not
        // get is always left out.
        Operation::ListPrompts => no_params(method, params).map(|()| match principal {
            None => Step::Reply(encode_result(id, &*lists.prompt_list)),
            Some(principal) => {
                let shows = |i| catalog.access.shows(Some(principal), Item::Prompt(i));
                let shown = super::visible(&catalog.prompts, shows, |p| &p.definition);
                Step::Reply(encode_result(id, &shown))
            }
        }),
        Operation::ListResources => no_params(method, params).map(|()| Step::Run {
            work: Work::ListResources,
            progress: None,
            round: None,
            as_task: false,
        }),
        Operation::ExecuteTool => match call {
            Some(read) => execute(catalog, read),
            _ => execute_params(catalog, params),
        },
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

/// The same params read with a value for arguments: read only to word a
/// refusal of the call's reading as a reading into a value words it.
#[derive(Deserialize)]
#[allow(dead_code)]
struct ExecuteParamsShape<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(default)]
    arguments: serde_json::Map<String, Value>,
}

/// `{"id": mcpId, "arguments": {...}}`, read from raw params.
fn execute_params(catalog: &Catalog, params: Option<&RawValue>) -> Result<Step, RpcError> {
    const SHAPE: &str =
        "mcp/executeTool params must be an object {\"id\": mcpId, \"arguments\": {...}}";
    let raw = params
        .filter(|raw| raw.get().starts_with('{'))
        .ok_or_else(|| RpcError::invalid_params(SHAPE))?;
    let params = super::read_call(&super::EXECUTE_TOOL, raw.get()).map_err(|e| {
        // Refused where the value reading refuses (tested in
        // `fast::arguments`), and worded by it, but for the raw-value
        // token, which it reads otherwise.
        let e = match serde_json::from_str::<ExecuteParamsShape<'_>>(raw.get()) {
            Err(shape) if !e.to_string().contains(TOKEN_REFUSED) => shape,
            _ => e,
        };
        RpcError::invalid_params(format!("{SHAPE}: {e}"))
    })?;
    execute(catalog, &params)
}

/// The tool of read `mcp/executeTool` params, looked up.
fn execute(catalog: &Catalog, params: &ToolCall<'_>) -> Result<Step, RpcError> {
    let tool = *catalog
        .tool_index
        .get(&*params.tool)
        .ok_or_else(|| RpcError::unknown_mcp_id("tool", &params.tool))?;
    let arguments = match params.arguments {
        Some(text) => Arguments::for_tool(catalog, tool, text).map_err(|e| {
            RpcError::invalid_params(format!("mcp/executeTool params: arguments: {e}"))
        })?,
        None => Arguments::none(),
    };
    Ok(Step::Run {
        work: Work::CallTool { tool, arguments },
        progress: None,
        round: None,
        as_task: false,
    })
}

/// Reads a notification: `initialized`, `$/cancelRequest`, `$/setTrace`.
pub(crate) fn control(method: &str, params: Option<&RawValue>) -> Control {
    let params_text = params.map_or("{}", |raw| raw.get());
    match method {
        methods::INITIALIZED => Control::Initialized,
        methods::CANCEL_REQUEST => match serde_json::from_str::<CancelParams>(params_text) {
            Ok(p) => Control::Cancel(p.id),
            Err(e) => {
                tracing::warn!("ignoring $/cancelRequest with bad params: {e}");
                Control::Ignore
            }
        },
        methods::SET_TRACE => match serde_json::from_str::<SetTraceParams>(params_text) {
            Ok(p) => Control::SetTrace(p.value.level()),
            Err(e) => {
                tracing::warn!("ignoring $/setTrace with bad params: {e}");
                Control::Ignore
            }
        },
        other => {
            tracing::info!(method = other, "ignoring an unknown notification");
            Control::Ignore
        }
    }
}

#[derive(Serialize)]
struct ExecuteResult<T> {
    output: T,
}

/// The reply to a request whose work ended (docs/mcp-v1.md §2).
pub(crate) fn encode_end(id: &RequestId, ended: Ended, job: &JobInfo) -> Reply {
    let error = match ended {
        Ended::Finished(Ok(Done::Resources(list))) => return encode_result(id, &list),
        Ended::Finished(Ok(Done::Tool(output))) => {
            return match output.structured_json() {
                // As the tool serialised it: written around, not through serde.
                Some(StructuredJson::Ordered(text)) => {
                    encode_result_text(id, &[r#"{"output":"#, text, "}"])
                }
                Some(structured) => encode_result(id, &ExecuteResult { output: structured }),
                None => encode_result(
                    id,
                    &ExecuteResult {
                        output: output.schema_value(),
                    },
                ),
            };
        }
        Ended::Finished(Ok(_)) => RpcError::internal("an operation MCP v1.0 does not have"),
        Ended::Finished(Err(failure)) => failure_error(failure),
        Ended::Stopped(reason) => stopped_error(reason, job),
        Ended::Panicked(panic) => {
            tracing::error!(%id, "a tool panicked: {panic}");
            RpcError::internal(format!("the tool panicked: {panic}"))
        }
    };
    encode_error(id, &error)
}

fn failure_error(failure: Failure) -> RpcError {
    match failure {
        Failure::InvalidArguments(text) => RpcError::invalid_params(text),
        Failure::Tool(e) => RpcError::new(e.code(), e.message()),
        Failure::BadOutput(text) => RpcError::internal(text),
        Failure::ResourceNotFound(uri) => RpcError::unknown_mcp_id("resource", &uri),
        Failure::Item { what, error } => {
            RpcError::internal(format!("{what} could not be read: {error}"))
        }
        // (Only a 2026-07-28 round stops for input.)
        Failure::InputRequired => RpcError::internal("a request waited for a round trip"),
        Failure::Rpc(e) => e,
    }
}

/// The error for work stopped before it ended, by the reason it was.
fn stopped_error(reason: CancelReason, job: &JobInfo) -> RpcError {
    match reason {
        CancelReason::TimeLimit => {
            let tool = job
                .tool
                .and_then(|i| job.listing.catalog.tools.get(i))
                .map_or("?", |t| t.mcp_id());
            RpcError::new(
                ErrorCode::REQUEST_TIMED_OUT,
                format!(
                    "tool {tool} ran past its time limit of {:?}",
                    job.limit.unwrap_or_default()
                ),
            )
        }
        CancelReason::Shutdown => RpcError::shutting_down(
            "the server is shutting down and the request did not finish within the grace period",
        ),
        CancelReason::Gone => RpcError::new(ErrorCode::REQUEST_CANCELLED, "the client is gone"),
        CancelReason::Client => RpcError::new(
            ErrorCode::REQUEST_CANCELLED,
            "the request was cancelled by $/cancelRequest",
        ),
    }
}

/// The reply to a request cancelled before it started.
pub(crate) fn cancelled(id: &RequestId) -> Reply {
    encode_error(
        id,
        &RpcError::new(
            ErrorCode::REQUEST_CANCELLED,
            "the request was cancelled by $/cancelRequest",
        ),
    )
}

/// An error with the id, or `null` when it could not be read.
pub(crate) fn error(id: Option<&RequestId>, error: &RpcError) -> Reply {
    encode_error(id.unwrap_or(&RequestId::Null), error)
}

/// `-32006`: a message over the size limit, skipped.
pub(crate) fn too_large(declared: usize, limit: usize) -> RpcError {
    RpcError::new(
        ErrorCode::MESSAGE_TOO_LARGE,
        format!(
            "a message of at least {declared} bytes is over the limit of {limit} bytes; it was skipped"
        ),
    )
}

/// `-32006`: a batch member past the bound of its batch's replies.
pub(crate) fn batch_over(limit: usize, ran: bool) -> RpcError {
    RpcError::new(
        ErrorCode::MESSAGE_TOO_LARGE,
        super::batch_over_text(limit, ran),
    )
}

/// `-32006`: a request refused because its principal's requests in
/// flight hold too many bytes.
pub(crate) fn too_much_in_flight(why: &crate::in_flight::OverBudget) -> RpcError {
    RpcError::new(ErrorCode::MESSAGE_TOO_LARGE, why.to_string())
}

/// `-32005` for a request that arrived after shutdown began.
pub(crate) fn shutting_down(id: &RequestId) -> Reply {
    encode_error(
        id,
        &RpcError::shutting_down("the server is shutting down and takes no new requests"),
    )
}

/// `mcp/resourceDidChange`.
pub(crate) fn resource_changed(mcp_id: &str) -> Vec<u8> {
    encode_notification(
        methods::RESOURCE_DID_CHANGE,
        &ResourceDidChangeParams {
            mcp_id: mcp_id.to_owned(),
        },
    )
}

/// The method a request's work answers, for `$/logTrace` lines.
pub(crate) fn trace_name(work: &Work) -> &'static str {
    match work {
        Work::ListResources => methods::LIST_RESOURCES,
        _ => methods::EXECUTE_TOOL,
    }
}

/// `$/logTrace` for a handled request: its method and id, how long it took
/// (µs), and at the verbose level the start of its reply.
pub(crate) fn trace_line(
    method: &str,
    id: &RequestId,
    elapsed_us: u128,
    verbose_reply: Option<&[u8]>,
) -> Vec<u8> {
    let params = LogTraceParams {
        message: format!("Received request '{method} - ({id})'. Processed in {elapsed_us}µs."),
        verbose: verbose_reply.map(|reply| {
            let text = String::from_utf8_lossy(reply);
            let mut shown: String = text.chars().take(1000).collect();
            if shown.len() < text.len() {
                shown.push('…');
            }
            format!("Reply: {shown}")
        }),
    };
    encode_notification(methods::LOG_TRACE, &params)
}

#[cfg(test)]
mod tests {
    use super::Admission::*;
    use super::Phase::*;
    use super::*;

    fn code(a: Admission) -> i32 {
        match a {
            Reject(e) => e.code.0,
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    #[test]
    fn initialize_with_id_1_starts_the_handshake() {
        assert_eq!(
            admit(AwaitingInitialize, "initialize", &RequestId::from(1)),
            Initialize
        );
    }

    #[test]
    fn initialize_with_another_id_is_invalid_and_keeps_waiting() {
        for id in [RequestId::from(2), RequestId::from("1"), RequestId::Null] {
            assert_eq!(code(admit(AwaitingInitialize, "initialize", &id)), -32600);
        }
    }

    #[test]
    fn any_other_request_before_initialize_is_not_initialized() {
        for method in ["mcp/listTools", "mcp/executeTool", "foo/bar", "rpc.x"] {
            assert_eq!(
                code(admit(AwaitingInitialize, method, &RequestId::from(3))),
                -32002
            );
        }
    }

    #[test]
    fn second_initialize_is_invalid_in_every_later_phase() {
        for phase in [InitializedSent, Ready] {
            assert_eq!(
                code(admit(phase, "initialize", &RequestId::from(1))),
                -32600
            );
        }
    }

    #[test]
    fn requests_before_initialized_are_served() {
        assert_eq!(
            admit(InitializedSent, "mcp/listTools", &RequestId::from(2)),
            Serve
        );
    }

    #[test]
    fn implicit_sessions_serve_at_once_but_refuse_initialize() {
        assert_eq!(admit(Implicit, "mcp/listTools", &RequestId::from(2)), Serve);
        assert_eq!(
            code(admit(Implicit, "initialize", &RequestId::from(1))),
            -32600
        );
    }
}
