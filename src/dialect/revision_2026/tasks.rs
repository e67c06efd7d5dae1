//! The tasks extension (`io.modelcontextprotocol/tasks`) in this
//! revision: which `tools/call` becomes a task, the `tasks/*` methods, and
//! how a task is written (docs/model-context.md §8).
//!
//! Every rule is per request: a request gets a task, or may ask about one,
//! only when its own `_meta` client capabilities declare the extension.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::{Listing, ServerInner, Step};
use crate::engine::{TaskOp, TaskWork, Work};
use crate::error::{ErrorCode, RpcError};
use crate::jsonrpc::{Reply, RequestId, encode_error_with, encode_result};
use crate::principal::Principal;
use crate::task::{EXTENSION, TaskState, TaskStatus, TaskSupport, iso8601};

/// Reads a task.
pub(crate) const GET: &str = "tasks/get";
/// Answers a task's questions.
pub(crate) const UPDATE: &str = "tasks/update";
/// Stops a task.
pub(crate) const CANCEL: &str = "tasks/cancel";
/// A task's new state, on a listen stream that watches it.
const NOTIFICATION: &str = "notifications/tasks";

/// Whether client capabilities (an object's JSON text) declare the
/// extension.
pub(super) fn declares(capabilities: &str) -> bool {
    #[derive(Deserialize)]
    struct Capabilities {
        #[serde(default)]
        extensions: Option<Map<String, Value>>,
    }
    serde_json::from_str::<Capabilities>(capabilities)
        .ok()
        .and_then(|c| c.extensions)
        .is_some_and(|e| e.get(EXTENSION).is_some_and(Value::is_object))
}

/// `-32021`: the request needs the extension declared.
pub(super) fn missing_extension(id: &RequestId, why: &str) -> Reply {
    encode_error_with(
        Some(id),
        ErrorCode::MISSING_CLIENT_CAPABILITY.0,
        ErrorCode::MISSING_CLIENT_CAPABILITY.message(),
        &json!({
            "requiredCapabilities": {"extensions": {EXTENSION: {}}},
            "reason": why,
        }),
    )
}

/// Whether a tool call's work runs as a task: when its tool supports tasks
/// and the request declared the extension. A tool that requires a task
/// refuses a request that did not.
pub(super) fn for_call(
    listing: &Listing,
    work: &Work,
    capabilities: &str,
    id: &RequestId,
) -> Result<bool, Reply> {
    let Work::CallTool { tool, .. } = work else {
        return Ok(false);
    };
    let Some(tool) = listing.catalog.tools.get(*tool) else {
        return Ok(false);
    };
    match tool.task_support {
        TaskSupport::Never => Ok(false),
        TaskSupport::Optional => Ok(declares(capabilities)),
        TaskSupport::Required if declares(capabilities) => Ok(true),
        TaskSupport::Required => Err(missing_extension(
            id,
            &format!(
                "tool {} runs only as a task: declare {EXTENSION} in the request's client \
                 capabilities",
                tool.definition.name
            ),
        )),
    }
}

/// Whether `method` is one of the extension's.
pub(crate) fn is_method(method: &str) -> bool {
    matches!(method, GET | UPDATE | CANCEL)
}

/// A `tasks/*` request as work on the server's task store.
pub(super) fn route(
    server: &ServerInner,
    id: &RequestId,
    method: &str,
    params: Option<&RawValue>,
    principal: Option<&Principal>,
    capabilities: &str,
) -> Result<Step, Reply> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Params {
        task_id: String,
        #[serde(default)]
        input_responses: Option<Map<String, Value>>,
    }
    if !declares(capabilities) {
        return Err(missing_extension(
            id,
            &format!("{method} needs {EXTENSION} declared in the request's client capabilities"),
        ));
    }
    let refuse = |text: String| super::error(Some(id), &RpcError::invalid_params(text));
    let params: Params = params
        .ok_or_else(|| refuse(format!("{method} needs params.taskId")))
        .and_then(|raw| {
            serde_json::from_str(raw.get()).map_err(|e| refuse(format!("{method} params: {e}")))
        })?;
    let op =
        match method {
            GET => TaskOp::Get,
            CANCEL => TaskOp::Cancel,
            _ => TaskOp::Update(params.input_responses.ok_or_else(|| {
                refuse(format!("{UPDATE} needs params.inputResponses (an object)"))
            })?),
        };
    let work = TaskWork {
        store: Arc::clone(&server.tasks.store),
        task_id: params.task_id,
        owner: super::owner_key(principal),
        op,
    };
    Ok(Step::Run {
        work: Work::Task(Box::new(work)),
        progress: None,
        round: None,
        as_task: false,
    })
}

/// Refuses a listen that asks for task notifications without the
/// extension declared.
pub(super) fn check_listen(
    id: &RequestId,
    params: Option<&RawValue>,
    capabilities: &str,
) -> Result<(), Reply> {
    #[derive(Deserialize, Default)]
    struct Params {
        #[serde(default)]
        notifications: Option<Notifications>,
    }
    #[derive(Deserialize, Default)]
    #[serde(rename_all = "camelCase")]
    struct Notifications {
        #[serde(default)]
        task_ids: Option<Value>,
    }
    let asks = params
        .and_then(|raw| serde_json::from_str::<Params>(raw.get()).ok())
        .and_then(|p| p.notifications)
        .is_some_and(|n| n.task_ids.is_some());
    if asks && !declares(capabilities) {
        return Err(missing_extension(
            id,
            &format!("task notifications need {EXTENSION} declared"),
        ));
    }
    Ok(())
}

/// A task as the wire shows it: its metadata, then what its status
/// carries (`detailed`: `tasks/get` and `notifications/tasks`; else a
/// `CreateTaskResult`, which carries none of it).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Shown<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    result_type: Option<&'static str>,
    task_id: &'a str,
    status: TaskStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    status_message: Option<&'a str>,
    created_at: String,
    last_updated_at: String,
    ttl_ms: Option<u64>,
    poll_interval_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_requests: Option<&'a Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a Value>,
}

fn shown(task: &TaskState, detailed: bool) -> Shown<'_> {
    let status = task.status;
    Shown {
        result_type: (!detailed).then_some("task"),
        task_id: &task.task_id,
        status,
        status_message: task.status_message.as_deref(),
        created_at: iso8601(task.created_at_ms),
        last_updated_at: iso8601(task.last_updated_at_ms),
        // A running task is kept at least its time to live past now: from
        // its creation that is longer every moment (never a past expiry).
        ttl_ms: match task.status.is_terminal() {
            true => task.ttl_ms,
            false => task.ttl_ms.map(|ttl| {
                ttl.saturating_add(crate::task::now_ms().saturating_sub(task.created_at_ms))
            }),
        },
        poll_interval_ms: task.poll_interval_ms,
        input_requests: (detailed && status == TaskStatus::InputRequired)
            .then_some(&task.input_requests),
        result: task
            .result
            .as_ref()
            .filter(|_| detailed && status == TaskStatus::Completed),
        error: task
            .error
            .as_ref()
            .filter(|_| detailed && status == TaskStatus::Failed),
    }
}

/// The `CreateTaskResult` for a new task (`resultType: "task"`).
pub(super) fn created(id: &RequestId, task: &TaskState) -> Reply {
    encode_result(id, &shown(task, false))
}

/// The `notifications/tasks` of a task's state on listen stream `id`: the
/// task as `tasks/get` shows it.
pub(super) fn notification(id: &RequestId, task: &TaskState) -> Vec<u8> {
    #[derive(Serialize)]
    struct Params<'a> {
        #[serde(flatten)]
        task: Shown<'a>,
        #[serde(rename = "_meta")]
        meta: Value,
    }
    crate::jsonrpc::encode_notification(
        NOTIFICATION,
        &Params {
            task: shown(task, true),
            meta: json!({super::keys::SUBSCRIPTION_ID: id}),
        },
    )
}

/// The `tasks/get` result for a task: the task with what its status
/// carries (its `resultType` is written by the revision's finish).
pub(super) fn detailed(id: &RequestId, task: &TaskState) -> Reply {
    encode_result(id, &shown(task, true))
}
