//! The server's operations, independent of how any dialect names them on
//! the wire: the async [`Work`] a request needs, and what it ends with —
//! [`Done`] or a [`Failure`]. A dialect reads params into `Work` and
//! encodes the outcome; tools, resources and prompts never know which
//! dialect called them.

use std::sync::Arc;

use serde_json::Value;
use tracing::Instrument;

use super::access::Item;
use super::catalog::{Catalog, CompiledTool};
use super::validate::{check_arguments, check_output};
use crate::completion::{Complete, Completion, CompletionContext};
use crate::content::{ResourceContents, ToolOutput, output_not_json};
use crate::definition::ResourceDefinition;
use crate::error::{ErrorCode, RpcError, ToolError};
use crate::jsonrpc::ArgumentsText;
use crate::principal::Principal;
use crate::prompt::{PromptArguments, PromptMessage};
use crate::task::{TaskSignal, TaskState, TaskStore};
use crate::tool::{CallFailure, Calling, LazyContext, ToolContext};

/// Async work for one request.
pub(crate) enum Work {
    /// Lists every resource the caller may read, each with its content.
    ListResources,
    /// Reads one resource, registered or matched by a template.
    ReadResource { uri: String },
    /// Runs tool `tool` (an index into the catalog).
    CallTool { tool: usize, arguments: Arguments },
    /// Renders prompt `prompt` with its arguments (every required one present).
    GetPrompt {
        prompt: usize,
        arguments: PromptArguments,
    },
    /// Asks a completer (boxed: completions are rare, and every other
    /// work is smaller).
    Complete(Box<Completing>),
    /// Reads or signals a task (`tasks/get`, `tasks/update`,
    /// `tasks/cancel`).
    Task(Box<TaskWork>),
}

/// What a `tasks/*` request does with a task of `owner`'s, in `store`.
pub(crate) struct TaskWork {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) task_id: String,
    pub(crate) owner: String,
    pub(crate) op: TaskOp,
}

/// What is done with a task.
pub(crate) enum TaskOp {
    /// Read it.
    Get,
    /// Hand these answers to its questions to the process running it.
    Update(serde_json::Map<String, Value>),
    /// Ask the process running it to stop it.
    Cancel,
}

/// A completion to ask for: a completer of `item`'s (a prompt's argument
/// or a template's variable).
pub(crate) struct Completing {
    pub(crate) completer: Arc<dyn Complete>,
    pub(crate) value: String,
    pub(crate) context: CompletionContext,
    pub(crate) item: Item,
}

/// A tool call's arguments (a JSON object).
pub(crate) enum Arguments {
    /// As the request wrote them, for a tool that reads JSON text (a typed
    /// tool).
    Text(Box<str>),
    Value(Value),
}

impl Arguments {
    /// What tool `tool` gets of arguments `text`: the text itself (a tool
    /// with a quick check reads JSON text), or the value read from it
    /// (which does not fail: the text reads as a value).
    pub(crate) fn for_tool(
        catalog: &Catalog,
        tool: usize,
        text: ArgumentsText<'_>,
    ) -> Result<Self, serde_json::Error> {
        match catalog.tools.get(tool) {
            Some(compiled) if compiled.quick_input.is_some() => Ok(Self::Text(text.get().into())),
            _ => serde_json::from_str(text.get()).map(Self::Value),
        }
    }

    /// No arguments: `{}`.
    pub(crate) fn none() -> Self {
        Self::Value(Value::Object(serde_json::Map::new()))
    }
}

/// What finished work produced.
pub(crate) enum Done {
    Resources(Vec<ResourceDefinition>),
    Contents(ResourceContents),
    Tool(ToolOutput),
    Messages {
        description: Option<String>,
        messages: Vec<PromptMessage>,
    },
    Completion(Completion),
    /// A subscription stream (2026-07-28 `subscriptions/listen`) ended
    /// because the server shuts down.
    SubscriptionEnded,
    /// A task was created for the request; its work runs on.
    TaskCreated(Box<TaskState>),
    /// A task, as `tasks/get` read it.
    Task(Box<TaskState>),
    /// A signal was handed on (`tasks/update`, `tasks/cancel`).
    Acknowledged,
}

/// Why work failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The arguments failed the tool's `inputSchema` (the exact text).
    InvalidArguments(String),
    /// The tool returned an error.
    Tool(ToolError),
    /// The tool's output failed its own `outputSchema` (the exact text).
    BadOutput(String),
    /// No resource has this URI.
    ResourceNotFound(String),
    /// A resource, prompt or completer failed (its error, with what failed).
    Item { what: String, error: ToolError },
    /// A 2026-07-28 round stopped the work: it asked the client questions
    /// the round has no answers for (`round_trip`).
    InputRequired,
    /// A protocol error, worded already (an unknown task, say).
    Rpc(RpcError),
}

impl Work {
    /// How long the work may run.
    pub(crate) fn time_limit(&self, catalog: &Catalog) -> Option<std::time::Duration> {
        match self {
            Self::CallTool { tool, .. } => catalog.tools.get(*tool).and_then(|t| t.time_limit),
            _ => None,
        }
    }

    /// The index of the tool the work runs, if any.
    pub(crate) fn tool_index(&self) -> Option<usize> {
        match self {
            Self::CallTool { tool, .. } => Some(*tool),
            _ => None,
        }
    }

    /// Whether the work may hold its thread ([`Tool::may_block`](crate::Tool::may_block)).
    pub(crate) fn may_block(&self, catalog: &Catalog) -> bool {
        match self {
            Self::CallTool { tool, .. } => catalog.tools.get(*tool).is_some_and(|t| t.may_block),
            _ => false,
        }
    }
}

/// The scopes `work` needs, when `principal` lacks one of them (`None`:
/// allowed; a request without a principal is not asked). Work that names
/// no item (completion, MCP v1.0's list of resources, which leaves out
/// what it may not show) needs none.
pub(crate) fn refused<'a>(
    catalog: &'a Catalog,
    work: &Work,
    principal: &Principal,
) -> Option<&'a [String]> {
    let item = match work {
        Work::CallTool { tool, .. } => Item::Tool(*tool),
        Work::GetPrompt { prompt, .. } => Item::Prompt(*prompt),
        Work::Complete(completing) => completing.item,
        Work::ReadResource { uri } => return refused_uri(catalog, uri, Some(principal)),
        // (A task's tool is known once it is read: `task_op` checks.)
        Work::ListResources | Work::Task(_) => return None,
    };
    refused_item(catalog, item, principal)
}

/// The scopes the resource `uri` needs (registered, or the first template
/// that matches it), when `principal` lacks one of them: for reading it
/// and for subscribing to it.
pub(crate) fn refused_uri<'a>(
    catalog: &'a Catalog,
    uri: &str,
    principal: Option<&Principal>,
) -> Option<&'a [String]> {
    let principal = principal?;
    let item = match catalog.resource_index.get(uri) {
        Some(&i) => Item::Resource(i),
        None => Item::Template(
            catalog
                .templates
                .iter()
                .position(|t| t.template.matches(uri).is_some())?,
        ),
    };
    refused_item(catalog, item, principal)
}

fn refused_item<'a>(
    catalog: &'a Catalog,
    item: Item,
    principal: &Principal,
) -> Option<&'a [String]> {
    let needed = catalog.access.needs(item);
    (!catalog.access.allows(principal, needed)).then_some(needed)
}

/// Performs the work. Time limits, cancellation and panics are the job's
/// (`Job::run`).
///
/// `server` is whatever holds the catalog (the session layer's built
/// server), kept alive for as long as the work runs.
pub(crate) async fn perform<S: AsRef<Catalog> + Send + Sync + 'static>(
    server: Arc<S>,
    work: Work,
    ctx: ToolContext,
) -> Result<Done, Failure> {
    let catalog: &Catalog = (*server).as_ref();
    match work {
        Work::CallTool { tool, arguments } => run_tool(catalog, tool, arguments, ctx, false)
            .await
            .map(Done::Tool),
        // Resource and completion handlers take no context (a prompt may):
        // they find their caller's principal in the task
        // (`Principal::current`).
        work => {
            let caller = ctx.caller().clone();
            let principal = caller.principal.clone();
            caller
                .scope(perform_item(catalog, work, principal.as_deref(), &ctx))
                .await
        }
    }
}

/// Performs work that is not a tool call.
async fn perform_item(
    catalog: &Catalog,
    work: Work,
    principal: Option<&Principal>,
    ctx: &ToolContext,
) -> Result<Done, Failure> {
    match work {
        Work::CallTool { .. } => Err(internal("a tool call is not an item's work")),
        Work::ListResources => list_resources(catalog, principal)
            .await
            .map(Done::Resources),
        Work::ReadResource { uri } => read_resource(catalog, uri).await.map(Done::Contents),
        Work::GetPrompt { prompt, arguments } => {
            let Some(compiled) = catalog.prompts.get(prompt) else {
                return Err(internal("prompt index out of range"));
            };
            let messages = compiled
                .prompt
                .messages_with(&arguments, ctx)
                .await
                .map_err(|error| Failure::Item {
                    what: format!("prompt {}", compiled.definition.name),
                    error,
                })?;
            Ok(Done::Messages {
                description: compiled.definition.description.clone(),
                messages,
            })
        }
        Work::Complete(completing) => completing
            .completer
            .complete(&completing.value, &completing.context)
            .await
            .map(Done::Completion)
            .map_err(|error| Failure::Item {
                what: "the completer".into(),
                error,
            }),
        Work::Task(work) => task_op(catalog, *work, principal).await,
    }
}

/// Reads a task, or hands a signal to the process running it. A task of
/// another owner's is not found, as one that never existed; one whose tool
/// `principal` may no longer call is refused as the call would be.
async fn task_op(
    catalog: &Catalog,
    work: TaskWork,
    principal: Option<&Principal>,
) -> Result<Done, Failure> {
    let TaskWork {
        store,
        task_id,
        owner,
        op,
    } = work;
    let failed = |e: crate::task::TaskError| Failure::Rpc(RpcError::internal(e.to_string()));
    let found = match crate::task::is_task_id(&task_id) {
        true => store.get(&task_id).await.map_err(failed)?,
        false => None,
    };
    let Some(task) = found else {
        return Err(Failure::Rpc(not_found(&task_id)));
    };
    sees_task(catalog, &task, &owner, principal).map_err(Failure::Rpc)?;
    let (signal, answered) = match op {
        TaskOp::Get => return Ok(Done::Task(Box::new(task))),
        // An ended task hears nothing more: the ack is the same.
        _ if task.status.is_terminal() => return Ok(Done::Acknowledged),
        TaskOp::Update(responses) => {
            let answered: Vec<String> = (responses.keys())
                .filter(|key| task.input_requests.contains_key(*key))
                .cloned()
                .collect();
            (TaskSignal::Answers { responses }, answered)
        }
        TaskOp::Cancel => (TaskSignal::Cancel, Vec::new()),
    };
    // Heard before the signal goes, so that no save of its answer is missed.
    let changes = store.changes();
    store.signal(&task_id, signal).await.map_err(failed)?;
    if !answered.is_empty() {
        answers_seen(store.as_ref(), &task_id, &answered, changes).await;
    }
    Ok(Done::Acknowledged)
}

/// How long an answer's acknowledgement waits for the task's saved state
/// to show it.
const ANSWER_SEEN_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);

/// Waits (at most [`ANSWER_SEEN_WITHIN`]) until the stored state of task
/// `task_id` no longer asks the `answered` questions, or has ended or
/// gone: the `tasks/get` a client sends after its `tasks/update` is
/// acknowledged then reads its answers taken (the runner, in whichever
/// process, takes them and saves the state in its own time).
async fn answers_seen(
    store: &dyn TaskStore,
    task_id: &str,
    answered: &[String],
    mut changes: tokio::sync::broadcast::Receiver<std::sync::Arc<str>>,
) {
    let seen = async {
        loop {
            match store.get(task_id).await {
                Ok(Some(task))
                    if !task.status.is_terminal()
                        && answered.iter().any(|k| task.input_requests.contains_key(k)) => {}
                // Taken, ended, gone, or the store cannot say: no more waiting.
                _ => return,
            }
            loop {
                match changes.recv().await {
                    Ok(changed) if &*changed != task_id => continue,
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => break,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        }
    };
    let _ = tokio::time::timeout(ANSWER_SEEN_WITHIN, seen).await;
}

/// Whether the caller (`owner`, with `principal`'s scopes) may see
/// `task`: its own, with the scopes its tool's call needs. Another's task
/// is not found, as an unknown one is.
pub(crate) fn sees_task(
    catalog: &Catalog,
    task: &crate::task::TaskState,
    owner: &str,
    principal: Option<&Principal>,
) -> Result<(), RpcError> {
    if task.owner != owner {
        return Err(not_found(&task.task_id));
    }
    if let (Some(&tool), Some(principal)) = (catalog.tool_names.get(task.tool.as_str()), principal)
        && let Some(needed) = refused_item(catalog, Item::Tool(tool), principal)
    {
        return Err(RpcError::insufficient_scope(needed));
    }
    Ok(())
}

fn not_found(task_id: &str) -> RpcError {
    // (The id is the client's: at most its first 64 characters are said.)
    let shown = crate::error::clipped(task_id);
    RpcError::invalid_params(format!(
        "Failed to retrieve task: Task not found: {shown} (unknown, expired, or not yours)"
    ))
}

fn internal(why: &str) -> Failure {
    Failure::Item {
        what: "the server".into(),
        error: ToolError::with_code(ErrorCode::INTERNAL_ERROR, why),
    }
}

/// MCP v1.0's list of resources, content and all: without the resources
/// `principal` lacks the scopes for, whose content it may not read.
async fn list_resources(
    catalog: &Catalog,
    principal: Option<&Principal>,
) -> Result<Vec<ResourceDefinition>, Failure> {
    let mut list = Vec::with_capacity(catalog.resources.len());
    for (i, (info, resource)) in catalog.resources.iter().enumerate() {
        // (App pages are the Model Context Protocol's: hosts of this list
        // render none.)
        if !catalog.access.shows(principal, Item::Resource(i))
            || info.media_type == crate::app::MIME_TYPE
        {
            continue;
        }
        let content = resource.content().await.map_err(|error| Failure::Item {
            what: format!("resource {}", info.mcp_id),
            error,
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

async fn read_resource(catalog: &Catalog, uri: String) -> Result<ResourceContents, Failure> {
    if let Some((info, resource)) = catalog
        .resource_index
        .get(&uri)
        .and_then(|&i| catalog.resources.get(i))
    {
        let body = resource.read().await.map_err(|error| Failure::Item {
            what: format!("resource {uri}"),
            error,
        })?;
        return Ok(ResourceContents {
            uri,
            mime_type: Some(info.media_type.clone()),
            body,
            meta: resource.meta(),
        });
    }
    let Some((template, variables)) = catalog.template_for(&uri) else {
        return Err(Failure::ResourceNotFound(uri));
    };
    let body = template
        .reader
        .read(&uri, &variables)
        .await
        .map_err(|error| Failure::Item {
            what: format!("resource {uri}"),
            error,
        })?;
    Ok(ResourceContents {
        mime_type: Some(template.mime_type.clone()),
        uri,
        body,
        meta: None,
    })
}

/// Runs tool `index` with `arguments`, on the JSON path when it can
/// (unless `json_tried`: a caller that tried it already and was handed the
/// call back).
pub(crate) async fn call_tool(
    server: Arc<impl AsRef<Catalog> + Send + Sync + 'static>,
    index: usize,
    arguments: Arguments,
    ctx: ToolContext,
    json_tried: bool,
) -> Result<Done, Failure> {
    run_tool((*server).as_ref(), index, arguments, ctx, json_tried)
        .await
        .map(Done::Tool)
}

async fn run_tool(
    catalog: &Catalog,
    index: usize,
    arguments: Arguments,
    ctx: ToolContext,
    json_tried: bool,
) -> Result<ToolOutput, Failure> {
    let Some(tool) = catalog.tools.get(index) else {
        return Err(tool_out_of_range());
    };
    let span = ctx.span().clone();
    let (arguments, ctx) = match arguments {
        Arguments::Text(text) => {
            let ctx = if json_tried {
                ctx
            } else {
                match start_json_call(tool, &text, LazyContext::made(ctx), &span) {
                    Ok(calling) => return finish_json_call(tool, calling.instrument(span).await),
                    Err(ctx) => ctx.get(),
                }
            };
            let arguments = serde_json::from_str(&text).map_err(|e| {
                Failure::InvalidArguments(format!(
                    "Invalid value at '': {e} in arguments for tool {}",
                    tool.mcp_id()
                ))
            })?;
            (arguments, ctx)
        }
        Arguments::Value(arguments) => (arguments, ctx),
    };
    check_arguments(&tool.input, &arguments, tool.mcp_id()).map_err(Failure::InvalidArguments)?;
    let output = tool
        .tool
        .call(arguments, ctx)
        .instrument(span)
        .await
        .map_err(Failure::Tool)?;
    checked_output(tool, output)
}

/// The error for a tool index the catalog does not hold.
pub(crate) fn tool_out_of_range() -> Failure {
    internal("tool index out of range")
}

/// The hot path: a call of a tool that reads its arguments' text, started
/// when the input schema's quick check admits `text` (in the tool's span,
/// as `call` runs: the handler is called, and its type read, here). The
/// call under way, or the context back: the call then takes the whole
/// path (a `Value` and [`Tool::call`](crate::Tool::call)).
pub(crate) fn start_json_call<'c>(
    tool: &CompiledTool,
    text: &str,
    ctx: LazyContext<'c>,
    span: &tracing::Span,
) -> Result<Calling, LazyContext<'c>> {
    if !tool.quick_input.as_ref().is_some_and(|q| q.admits(text)) {
        return Err(ctx);
    }
    let _in_span = span.enter();
    #[cfg(feature = "schemars")]
    if let Some(typed) = &tool.typed {
        return typed.call_text(text, ctx);
    }
    Err(ctx)
}

/// What a call started by [`start_json_call`] ended with, worded as the
/// whole path words it.
pub(crate) fn finish_json_call(
    tool: &CompiledTool,
    ended: Result<ToolOutput, CallFailure>,
) -> Result<ToolOutput, Failure> {
    match ended {
        Ok(output) => checked_output(tool, output),
        Err(CallFailure::Tool(error)) => Err(Failure::Tool(error)),
        Err(CallFailure::NotJson(error)) => {
            Err(Failure::Tool(output_not_json(tool.mcp_id(), &error)))
        }
    }
}

/// `output`, once it matches the tool's output schema: admitted by the
/// quick check when it is text the check covers, else read back (when
/// serialised) and validated in full.
fn checked_output(tool: &CompiledTool, output: ToolOutput) -> Result<ToolOutput, Failure> {
    if let (Some(quick), Some(text)) = (&tool.quick_output, output.ordered_text())
        && quick.admits(text)
    {
        return Ok(output);
    }
    output
        .read_back()
        .map_err(|e| Failure::Tool(output_not_json(tool.mcp_id(), &e)))?;
    check_output(&tool.output, &output.schema_value(), tool.mcp_id())
        .map_err(Failure::BadOutput)?;
    Ok(output)
}
