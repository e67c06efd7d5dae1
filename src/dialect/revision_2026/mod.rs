//! The Model Context Protocol's 2026-07-28 revision (docs/model-context.md
//! §7): stateless requests. There is no `initialize` and no session; every
//! request carries its protocol version and the client's capabilities in
//! `_meta`, so any process can serve any request.
//!
//! It serves the 2025-11-25 family's method table ([`model_context`]) with
//! these rules of its own:
//! - `server/discover` lists the versions, capabilities and instructions;
//! - a request's `_meta` must name `io.modelcontextprotocol/protocolVersion`
//!   (this revision's, else `-32022`) and `…/clientCapabilities` (else
//!   `-32602`); `…/logLevel` asks for its log lines;
//! - `initialize`, `ping`, `logging/setLevel` and `resources/subscribe`
//!   and `…/unsubscribe` are gone (`-32601`);
//! - every result says `resultType` and names the server in
//!   `_meta["io.modelcontextprotocol/serverInfo"]`; lists, reads and
//!   discovery carry `ttlMs` and `cacheScope`;
//! - an unknown resource is `-32602`;
//! - a tool that asks the client something (elicitation, sampling, roots)
//!   gets the answer from the request's `inputResponses`, or the request
//!   ends with an `InputRequiredResult` that carries the questions and a
//!   sealed `requestState` ([`seal`]); a question whose capability the
//!   client did not declare fails the request with `-32021`.

pub(crate) mod mirror;
pub(crate) mod seal;
pub(crate) mod tasks;

use crate::dialect::Listing;
use crate::handle::{ListKind, Push};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::model_context::{self, Revision, methods};
use super::{Ended, JobInfo, Request, ServerInner, SessionState, Step};
use super::{kept_meta, kept_params};
use crate::client::LogLevel;
use crate::engine::{Done, Failure};
use crate::error::{ErrorCode, RpcError};
use crate::jsonrpc::{RawText, Reply, RequestId, ToolCall, encode_error_with};
use crate::principal::{Principal, token_key};
use crate::round_trip::{Binding, RoundTrip};
use seal::RequestStateKeys;

/// This revision.
pub(crate) const VERSION: &str = "2026-07-28";
/// The versions this server speaks, newest first: this revision's stateless
/// requests, then the session revisions `initialize` negotiates.
pub(crate) const SUPPORTED: [&str; 4] = [VERSION, "2025-11-25", "2025-06-18", "2025-03-26"];

/// The `_meta` keys of this revision.
pub(crate) mod keys {
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
}

/// The method that subscribes to change notifications.
pub(crate) const LISTEN: &str = "subscriptions/listen";

/// How long clients may cache what this server lists and reads
/// ([`ServerBuilder::list_ttl`](crate::ServerBuilder::list_ttl) and the
/// others).
#[derive(Debug, Clone, Default)]
pub(crate) struct CacheHints {
    /// Lists and discovery.
    pub(crate) lists: Duration,
    /// Reads of resources without a time of their own.
    pub(crate) reads: Duration,
    /// Reads of these resources (by URI).
    pub(crate) per_resource: std::collections::HashMap<String, Duration>,
}

/// What a server keeps for this revision.
#[derive(Debug)]
pub(crate) struct Revision2026Settings {
    /// The keys that seal request state.
    pub(crate) keys: RequestStateKeys,
    /// How long a sealed state may be retried.
    pub(crate) request_state_ttl: Duration,
    /// The caching hints of results.
    pub(crate) cache: CacheHints,
    /// The server's name and version, as each result's `_meta` carries
    /// them.
    pub(crate) server_info: Box<RawValue>,
}

/// Whether this revision has a request `method`: discovery, listening,
/// the tasks extension's and the 2025-11-25 table's but the ones it
/// removed (`initialize`, `ping`, `logging/setLevel`,
/// `resources/subscribe` and `resources/unsubscribe`).
fn serves(method: &str) -> bool {
    matches!(method, methods::DISCOVER | LISTEN)
        || tasks::is_method(method)
        || matches!(
            method,
            methods::TOOLS_LIST
                | methods::TOOLS_CALL
                | methods::RESOURCES_LIST
                | methods::RESOURCES_READ
                | methods::RESOURCES_TEMPLATES_LIST
                | methods::PROMPTS_LIST
                | methods::PROMPTS_GET
                | methods::COMPLETE
        )
}

/// The members of a request's `_meta` this revision reads, each as its
/// JSON text.
#[derive(Deserialize, Default)]
pub(super) struct Meta<'a> {
    #[serde(default, borrow, rename = "io.modelcontextprotocol/protocolVersion")]
    pub(super) protocol_version: Option<RawText<'a>>,
    #[serde(default, borrow, rename = "io.modelcontextprotocol/clientCapabilities")]
    client_capabilities: Option<RawText<'a>>,
    #[serde(default, borrow, rename = "io.modelcontextprotocol/logLevel")]
    log_level: Option<RawText<'a>>,
}

/// The members every request of this revision reads from its params.
#[derive(Deserialize, Default)]
struct Members<'a> {
    #[serde(default, borrow, rename = "_meta")]
    meta: Option<Meta<'a>>,
    #[serde(default, borrow, rename = "inputResponses")]
    input_responses: Option<RawText<'a>>,
    #[serde(default, borrow, rename = "requestState")]
    request_state: Option<RawText<'a>>,
    /// `tools/call` and `prompts/get`.
    #[serde(default, borrow)]
    name: Option<std::borrow::Cow<'a, str>>,
    /// `resources/read`.
    #[serde(default, borrow)]
    uri: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
}

/// What a request's `_meta` declares: its capabilities (the JSON text of
/// an object) and the log level it asks for.
struct Declared {
    capabilities: String,
    log_level: Option<LogLevel>,
}

/// Reads a request through the method table, by this revision's rules.
pub(crate) fn route(session: &impl SessionState, listing: &Listing, request: Request<'_>) -> Step {
    match prepare(session, listing, request) {
        Ok(step) => step,
        Err(reply) => Step::Reply(reply),
    }
}

fn prepare(
    session: &impl SessionState,
    listing: &Listing,
    request: Request<'_>,
) -> Result<Step, Reply> {
    let Request {
        id,
        method,
        params,
        call,
        principal,
    } = request;
    let server = session.server();
    // A method this revision does not have is that before anything its
    // body holds (docs/model-context.md §7.3).
    if !serves(method) {
        return Err(error(Some(id), &RpcError::method_not_found(method)));
    }
    let members = members(method, params, call).map_err(|e| error(Some(id), &e))?;
    let declared = declared(id, members.meta.as_ref())?;
    match method {
        methods::DISCOVER => return Ok(Step::Reply(discover(server, listing, id))),
        LISTEN => {
            tasks::check_listen(id, params, &declared.capabilities)?;
            return filter(listing, &server.limits, params, principal)
                .map(|filter| Step::Listen(Box::new(filter)))
                .map_err(|e| error(Some(id), &e));
        }
        method if tasks::is_method(method) => {
            return tasks::route(
                server,
                id,
                method,
                params,
                principal,
                &declared.capabilities,
            );
        }
        _ => {}
    }
    let round_trips = matches!(
        method,
        methods::TOOLS_CALL | methods::PROMPTS_GET | methods::RESOURCES_READ
    );
    let (answers, binding) = if round_trips {
        let binding = binding(method, &members, call, principal);
        let answers = answers(server, &binding, &members).map_err(|e| error(Some(id), &e))?;
        (answers, binding)
    } else {
        (Map::new(), Binding::default())
    };
    let request = Request {
        id,
        method,
        params,
        call,
        principal,
    };
    let step = model_context::route(Revision::V2026_07_28, listing, request);
    Ok(match step {
        // (The table records nothing and initializes nothing here.)
        Step::Reply(reply) | Step::Record(reply, _) | Step::Initialized(reply, _) => {
            let cache = cache_for(server, listing, method, principal);
            Step::Reply(finish(server, reply, cache))
        }
        // (The table has no listen.)
        Step::Listen(filter) => Step::Listen(filter),
        Step::Run { work, progress, .. } => {
            let as_task = tasks::for_call(listing, &work, &declared.capabilities, id)?;
            let round = RoundTrip::new(declared.capabilities, declared.log_level, answers, binding);
            Step::Run {
                work,
                progress,
                round: Some(Arc::new(round)),
                as_task,
            }
        }
    })
}

/// What a `subscriptions/listen` stream carries: the notification types
/// it opted in to that this server honours.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Filter {
    /// `notifications/tools/list_changed`.
    pub(crate) tools: bool,
    /// `notifications/prompts/list_changed`.
    pub(crate) prompts: bool,
    /// `notifications/resources/list_changed`.
    pub(crate) resources_list: bool,
    /// The resources whose `notifications/resources/updated` it wants
    /// (ones this server has, and the caller may read).
    pub(crate) resources: Vec<String>,
    /// The tasks whose `notifications/tasks` it asked for (well-formed
    /// ids, within `max_subscriptions`); the stream agrees to those the
    /// caller may see ([`Filter::may_watch`]).
    pub(crate) tasks: Vec<String>,
    /// Whose tasks the caller may see.
    pub(crate) task_owner: String,
    /// The caller, whose scopes a watched task's tool needs.
    pub(crate) caller: Option<Principal>,
}

impl Filter {
    /// Whether the stream wants to hear of `push`.
    pub(crate) fn wants(&self, push: &Push) -> bool {
        match push {
            Push::Updated(uri) => self.resources.iter().any(|r| **r == **uri),
            Push::ListChanged(ListKind::Tools) => self.tools,
            Push::ListChanged(ListKind::Prompts) => self.prompts,
            Push::ListChanged(ListKind::Resources) => self.resources_list,
        }
    }
}

/// The filter of a `subscriptions/listen`: the list-changed types asked
/// for, of the lists this server has (its capabilities), and of
/// `resourceSubscriptions` the URIs the server has and the caller may
/// read.
fn filter(
    listing: &Listing,
    limits: &crate::dialect::Limits,
    params: Option<&RawValue>,
    principal: Option<&Principal>,
) -> Result<Filter, RpcError> {
    #[derive(Deserialize, Default)]
    struct Params {
        #[serde(default)]
        notifications: Option<Requested>,
    }
    #[derive(Deserialize, Default)]
    #[serde(rename_all = "camelCase")]
    struct Requested {
        #[serde(default)]
        tools_list_changed: bool,
        #[serde(default)]
        prompts_list_changed: bool,
        #[serde(default)]
        resources_list_changed: bool,
        #[serde(default)]
        resource_subscriptions: Vec<String>,
        #[serde(default)]
        task_ids: Vec<String>,
    }
    let params: Params = match params {
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|e| RpcError::invalid_params(format!("{LISTEN} params: {e}")))?,
        None => Params::default(),
    };
    let Some(requested) = params.notifications else {
        return Err(RpcError::invalid_params(format!(
            "{LISTEN} params.notifications is required: the notification types to receive"
        )));
    };
    if requested.task_ids.len() > limits.max_subscriptions {
        return Err(RpcError::invalid_params(format!(
            "{LISTEN} asks for {} tasks' notifications, over the limit of {} \
             (max_subscriptions)",
            requested.task_ids.len(),
            limits.max_subscriptions
        )));
    }
    let asked = &requested.resource_subscriptions;
    if asked.len() > limits.max_subscriptions {
        return Err(RpcError::invalid_params(format!(
            "{LISTEN} asks for {} resource subscriptions, over the limit of {} \
             (max_subscriptions)",
            asked.len(),
            limits.max_subscriptions
        )));
    }
    if let Some(long) = asked.iter().find(|uri| uri.len() > limits.max_uri_length) {
        return Err(RpcError::invalid_params(format!(
            "{LISTEN} asks for a URI of {} bytes, over the limit of {} bytes for a \
             subscription (max_uri_length)",
            long.len(),
            limits.max_uri_length
        )));
    }
    let catalog = &listing.catalog;
    let resources = requested
        .resource_subscriptions
        .into_iter()
        .filter(|uri| {
            catalog.knows_uri(uri)
                && crate::engine::operation::refused_uri(catalog, uri, principal).is_none()
        })
        .collect();
    let provides = listing.model_context.provides;
    let mut tasks = requested.task_ids;
    let mut seen = std::collections::HashSet::new();
    tasks.retain(|id| crate::task::is_task_id(id) && seen.insert(id.clone()));
    Ok(Filter {
        tools: requested.tools_list_changed && provides.tools,
        prompts: requested.prompts_list_changed && provides.prompts,
        resources_list: requested.resources_list_changed && provides.resources,
        resources,
        task_owner: owner_key(principal),
        caller: principal.cloned(),
        tasks,
    })
}

/// The messages of a listen stream, asked for through its filter (the
/// session holds the filter, and reaches the revision through nothing
/// else).
impl Filter {
    /// The stream's acknowledgement: what it will carry (of the tasks it
    /// asked for, none).
    pub(crate) fn acknowledged(&self, id: &RequestId) -> Vec<u8> {
        acknowledged(id, self, &[])
    }

    /// The acknowledgement of a stream that watches the `agreed` tasks.
    pub(crate) fn acknowledged_watching(&self, id: &RequestId, agreed: &[&str]) -> Vec<u8> {
        acknowledged(id, self, agreed)
    }

    /// Whether the stream's caller may hear of `task`: as for `tasks/get`.
    pub(crate) fn may_watch(&self, listing: &Listing, task: &crate::task::TaskState) -> bool {
        crate::engine::operation::sees_task(
            &listing.catalog,
            task,
            &self.task_owner,
            self.caller.as_ref(),
        )
        .is_ok()
    }

    /// The `notifications/tasks` of `task`'s state on stream `id`.
    pub(crate) fn task_pushed(id: &RequestId, task: &crate::task::TaskState) -> Vec<u8> {
        tasks::notification(id, task)
    }

    /// The notification of `push` on stream `id`.
    pub(crate) fn pushed(id: &RequestId, push: &Push) -> Vec<u8> {
        pushed(id, push)
    }

    /// The result that ends stream `id` gracefully.
    pub(crate) fn ended(server: &ServerInner, id: &RequestId) -> Reply {
        subscription_ended(server, id)
    }
}

/// `notifications/subscriptions/acknowledged` for stream `id`: what it
/// will carry.
fn acknowledged(id: &RequestId, filter: &Filter, tasks: &[&str]) -> Vec<u8> {
    let mut notifications = Map::new();
    for (on, name) in [
        (filter.tools, "toolsListChanged"),
        (filter.prompts, "promptsListChanged"),
        (filter.resources_list, "resourcesListChanged"),
    ] {
        if on {
            notifications.insert(name.into(), Value::Bool(true));
        }
    }
    if !filter.resources.is_empty() {
        notifications.insert("resourceSubscriptions".into(), json!(filter.resources));
    }
    if !tasks.is_empty() {
        notifications.insert("taskIds".into(), json!(tasks));
    }
    crate::jsonrpc::encode_notification(
        "notifications/subscriptions/acknowledged",
        &json!({
            "notifications": notifications,
            "_meta": {keys::SUBSCRIPTION_ID: id},
        }),
    )
}

/// The notification of `push` on stream `id`, written straight to bytes:
/// one is made per stream for every push, so it builds no JSON value.
fn pushed(id: &RequestId, push: &Push) -> Vec<u8> {
    let method = match push {
        Push::Updated(_) => methods::RESOURCE_UPDATED,
        Push::ListChanged(kind) => model_context::list_changed_method(*kind),
    };
    let mut out = Vec::with_capacity(192);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
    crate::jsonrpc::write_json(&mut out, method);
    out.extend_from_slice(br#","params":{"#);
    if let Push::Updated(uri) = push {
        out.extend_from_slice(br#""uri":"#);
        crate::jsonrpc::write_json(&mut out, &**uri);
        out.push(b',');
    }
    out.extend_from_slice(br#""_meta":{"#);
    crate::jsonrpc::write_json(&mut out, keys::SUBSCRIPTION_ID);
    out.push(b':');
    crate::jsonrpc::write_id(&mut out, id);
    out.extend_from_slice(b"}}}");
    out
}

/// The members of a request's params this revision reads.
fn members<'a>(
    method: &str,
    params: Option<&'a RawValue>,
    call: Option<&'a ToolCall<'a>>,
) -> Result<Members<'a>, RpcError> {
    if let Some(p) = call.filter(|_| method == methods::TOOLS_CALL) {
        return Ok(Members {
            meta: p.meta.map(|_| Meta {
                protocol_version: p.meta(kept_meta::PROTOCOL_VERSION),
                client_capabilities: p.meta(kept_meta::CLIENT_CAPABILITIES),
                log_level: p.meta(kept_meta::LOG_LEVEL),
            }),
            input_responses: p.kept(kept_params::INPUT_RESPONSES),
            request_state: p.kept(kept_params::REQUEST_STATE),
            name: Some(std::borrow::Cow::Borrowed(p.tool.as_ref())),
            uri: None,
            // (The binding reads the call's own arguments.)
            arguments: None,
        });
    }
    match params {
        Some(raw) if raw.get().starts_with('{') => serde_json::from_str(raw.get())
            .map_err(|e| RpcError::invalid_params(format!("{method} params: {e}"))),
        Some(raw) if raw.get() != "null" => Err(RpcError::invalid_params(format!(
            "{method} params must be an object"
        ))),
        _ => Ok(Members::default()),
    }
}

/// What the request's `_meta` declares, or the error that refuses it.
fn declared(id: &RequestId, meta: Option<&Meta<'_>>) -> Result<Declared, Reply> {
    let refuse = |text: String| error(Some(id), &RpcError::invalid_params(text));
    let Some(meta) = meta else {
        return Err(refuse(format!(
            "params._meta is required in {VERSION}: it names {} and {}",
            keys::PROTOCOL_VERSION,
            keys::CLIENT_CAPABILITIES
        )));
    };
    let Some(version) = meta.protocol_version else {
        return Err(refuse(format!(
            "_meta[\"{}\"] is required",
            keys::PROTOCOL_VERSION
        )));
    };
    // (Compared as written first: the usual spelling needs no reading.)
    if version.get() != concat!('"', "2026-07-28", '"') {
        match serde_json::from_str::<String>(version.get()) {
            Ok(version) if version == VERSION => {}
            Ok(version) => return Err(unsupported_version(Some(id), &version)),
            Err(_) => {
                return Err(refuse(format!(
                    "_meta[\"{}\"] must be a string",
                    keys::PROTOCOL_VERSION
                )));
            }
        }
    }
    let capabilities = match meta.client_capabilities {
        Some(raw) if raw.get().len() > super::MAX_CLIENT_CAPABILITIES => {
            return Err(capabilities_refused(id, raw.get().len()));
        }
        Some(raw) if raw.get().starts_with('{') => raw.get().to_owned(),
        Some(_) => {
            return Err(refuse(format!(
                "_meta[\"{}\"] must be an object",
                keys::CLIENT_CAPABILITIES
            )));
        }
        None => {
            return Err(refuse(format!(
                "_meta[\"{}\"] is required (an empty object declares none)",
                keys::CLIENT_CAPABILITIES
            )));
        }
    };
    let log_level = match meta
        .log_level
        .map(|l| serde_json::from_str::<LogLevel>(l.get()))
    {
        None => None,
        Some(Ok(level)) => Some(level),
        Some(Err(_)) => {
            return Err(refuse(
                "_meta[\"io.modelcontextprotocol/logLevel\"] must be a log level (debug … emergency)"
                    .into(),
            ));
        }
    };
    Ok(Declared {
        capabilities,
        log_level,
    })
}

/// `-32602` for a request's `clientCapabilities` of `bytes` bytes, past
/// what the server keeps.
#[cold]
fn capabilities_refused(id: &RequestId, bytes: usize) -> Reply {
    let what = format!("_meta[\"{}\"]", keys::CLIENT_CAPABILITIES);
    error(Some(id), &super::capabilities_too_large(&what, bytes))
}

/// `-32022` with the versions this server speaks and the one asked for.
pub(crate) fn unsupported_version(id: Option<&RequestId>, requested: &str) -> Reply {
    encode_error_with(
        id,
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.0,
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.message(),
        &json!({"supported": SUPPORTED, "requested": requested}),
    )
}

/// Who a request's state and tasks belong to: the token's issuer, subject
/// and client; empty without a token.
fn owner_key(principal: Option<&Principal>) -> String {
    principal.map_or_else(String::new, |p| {
        let (issuer, subject, client) = p.identity();
        token_key(issuer, subject, client)
    })
}

/// What a sealed state names: the call it continues and who made it. The
/// item is what the method acts on: the URI a `resources/read` reads, the
/// name a `tools/call` or `prompts/get` calls (any other member is not
/// part of it, so it cannot stand in for the item).
fn binding(
    method: &str,
    members: &Members<'_>,
    call: Option<&ToolCall<'_>>,
    principal: Option<&Principal>,
) -> Binding {
    let (item, arguments) = match call {
        Some(p) if method == methods::TOOLS_CALL => (
            p.tool.as_ref(),
            p.arguments.map(|a| a.get()).unwrap_or_default(),
        ),
        _ => {
            let item = match method {
                methods::RESOURCES_READ => members.uri.as_deref(),
                _ => members.name.as_deref(),
            };
            (
                item.unwrap_or_default(),
                members.arguments.map(RawValue::get).unwrap_or_default(),
            )
        }
    };
    Binding::new(method, item, arguments, &owner_key(principal))
}

/// A sealed state's plaintext (its answers borrowed when it is written).
#[derive(Serialize, Deserialize)]
struct StatePlaintext<'a> {
    /// When it expires, in seconds since the Unix epoch.
    exp: u64,
    /// Every answer the earlier rounds brought, by key.
    answers: std::borrow::Cow<'a, Map<String, Value>>,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The answers a round brings: the ones its state sealed, and its
/// `inputResponses` (which win).
fn answers(
    server: &ServerInner,
    binding: &Binding,
    members: &Members<'_>,
) -> Result<Map<String, Value>, RpcError> {
    let mut answers = Map::new();
    if let Some(raw) = members.request_state {
        let state: String = serde_json::from_str(raw.get())
            .map_err(|_| RpcError::invalid_params("requestState must be a string"))?;
        let plain = server
            .revision_2026
            .keys
            .open(&binding.bytes(), &state)
            .map_err(|e| RpcError::invalid_params(e.to_string()))?;
        let sealed: StatePlaintext<'_> = serde_json::from_slice(&plain)
            .map_err(|_| RpcError::invalid_params(seal::Unsealed::Invalid.to_string()))?;
        if sealed.exp < now_secs() {
            return Err(RpcError::invalid_params(
                seal::Unsealed::Expired.to_string(),
            ));
        }
        answers = sealed.answers.into_owned();
    }
    if let Some(raw) = members.input_responses {
        let responses: Map<String, Value> = serde_json::from_str(raw.get()).map_err(|_| {
            RpcError::invalid_params("inputResponses must be an object of results by key")
        })?;
        if let Some((key, _)) = responses.iter().find(|(_, v)| !v.is_object()) {
            return Err(RpcError::invalid_params(format!(
                "inputResponses[\"{key}\"] must be a result object"
            )));
        }
        answers.extend(responses);
    }
    Ok(answers)
}

/// How a result may be cached: `ttlMs` and `cacheScope`.
#[derive(Debug, Clone, Copy)]
struct Cache {
    ttl: Duration,
    private: bool,
}

/// The caching hint of `method`'s result, if it is cacheable. A result is
/// private when it may depend on who asked: a list that hides what the
/// token cannot use, or a read with a token.
fn cache_for(
    server: &ServerInner,
    listing: &Listing,
    method: &str,
    principal: Option<&Principal>,
) -> Option<Cache> {
    let hints = &server.revision_2026.cache;
    match method {
        methods::TOOLS_LIST
        | methods::RESOURCES_LIST
        | methods::RESOURCES_TEMPLATES_LIST
        | methods::PROMPTS_LIST => Some(Cache {
            ttl: hints.lists,
            private: principal.is_some() && listing.catalog.access.hide_unusable,
        }),
        _ => None,
    }
}

/// A reply of the table as this revision writes it: a result gets
/// `resultType`, the server's identity in `_meta` and, if cacheable, its
/// caching hint; an error is left as it is.
fn finish(server: &ServerInner, reply: Reply, cache: Option<Cache>) -> Reply {
    finish_with(server, reply, cache, None, Some("complete"))
}

/// [`finish`], its `_meta` naming the subscription stream it ends, if
/// any, and writing `resultType` as `result_type` (`None`: the result has
/// its own).
fn finish_with(
    server: &ServerInner,
    reply: Reply,
    cache: Option<Cache>,
    subscription: Option<&RequestId>,
    result_type: Option<&str>,
) -> Reply {
    // (An error is left as it is; a result's object opens where its
    // encoder said.)
    let open = reply.result_at + 1;
    let split = reply.bytes.split_at_checked(open);
    let Some((head @ [.., b'{'], rest)) = split.filter(|_| reply.error.is_none()) else {
        return reply;
    };
    let mut out = Vec::with_capacity(head.len() + rest.len() + 160);
    out.extend_from_slice(head);
    if let Some(result_type) = result_type {
        out.extend_from_slice(br#""resultType":""#);
        out.extend_from_slice(result_type.as_bytes());
        out.extend_from_slice(br#"","#);
    }
    if let Some(cache) = cache {
        write_cache(&mut out, cache);
    }
    write_meta(&mut out, server, subscription);
    if rest.first() != Some(&b'}') {
        out.push(b',');
    }
    out.extend_from_slice(rest);
    Reply {
        bytes: out,
        error: None,
        result_at: reply.result_at,
    }
}

fn write_cache(out: &mut Vec<u8>, cache: Cache) {
    let ttl = u64::try_from(cache.ttl.as_millis()).unwrap_or(u64::MAX);
    out.extend_from_slice(br#""ttlMs":"#);
    out.extend_from_slice(itoa::Buffer::new().format(ttl).as_bytes());
    out.extend_from_slice(if cache.private {
        br#","cacheScope":"private","#
    } else {
        br#","cacheScope":"public","#
    });
}

fn write_meta(out: &mut Vec<u8>, server: &ServerInner, subscription: Option<&RequestId>) {
    out.extend_from_slice(br#""_meta":{""#);
    if let Some(id) = subscription {
        out.extend_from_slice(keys::SUBSCRIPTION_ID.as_bytes());
        out.extend_from_slice(br#"":"#);
        out.extend_from_slice(&crate::jsonrpc::id_json(id));
        out.extend_from_slice(br#",""#);
    }
    out.extend_from_slice(keys::SERVER_INFO.as_bytes());
    out.extend_from_slice(br#"":"#);
    out.extend_from_slice(server.revision_2026.server_info.get().as_bytes());
    out.push(b'}');
}

/// The `server/discover` result.
fn discover(server: &ServerInner, listing: &Listing, id: &RequestId) -> Reply {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Discovered<'a> {
        supported_versions: &'a [&'a str],
        capabilities: &'a RawValue,
        #[serde(skip_serializing_if = "Option::is_none")]
        instructions: Option<&'a str>,
    }
    let lists = &listing.model_context;
    let reply = crate::jsonrpc::encode_result(
        id,
        &Discovered {
            supported_versions: &SUPPORTED,
            capabilities: lists.revision_2026_capabilities(),
            instructions: lists.instructions(),
        },
    );
    let cache = Cache {
        ttl: server.revision_2026.cache.lists,
        private: false,
    };
    finish(server, reply, Some(cache))
}

/// The result that ends listen stream `id` gracefully: it names the
/// subscription.
fn subscription_ended(server: &ServerInner, id: &RequestId) -> Reply {
    let reply = crate::jsonrpc::encode_result(id, &json!({}));
    finish_with(server, reply, None, Some(id), Some("complete"))
}

/// The reply to a request whose work ended.
pub(crate) fn encode_end(
    server: &ServerInner,
    id: &RequestId,
    ended: Ended,
    job: &JobInfo,
) -> Option<Reply> {
    match &ended {
        Ended::Finished(Ok(Done::SubscriptionEnded)) => {
            return Some(subscription_ended(server, id));
        }
        // (Written whole: its `resultType` is `task`.)
        Ended::Finished(Ok(Done::TaskCreated(task))) => {
            return Some(finish_with(
                server,
                tasks::created(id, task),
                None,
                None,
                None,
            ));
        }
        Ended::Finished(Ok(Done::Task(task))) => {
            return Some(finish(server, tasks::detailed(id, task), None));
        }
        Ended::Finished(Ok(Done::Acknowledged)) => {
            return Some(finish(
                server,
                crate::jsonrpc::encode_result(id, &json!({})),
                None,
            ));
        }
        _ => {}
    }
    if let Some(round) = job.round.as_deref() {
        let missing = round.missing();
        if !missing.is_empty() {
            return Some(missing_capability(id, &missing));
        }
        if matches!(ended, Ended::Finished(Err(Failure::InputRequired))) {
            return Some(input_required(server, id, round));
        }
    }
    let cache = match &ended {
        Ended::Finished(Ok(Done::Contents(contents))) => {
            let hints = &server.revision_2026.cache;
            let ttl = hints
                .per_resource
                .get(&contents.uri)
                .copied()
                .unwrap_or(hints.reads);
            Some(Cache {
                ttl,
                private: job.private,
            })
        }
        _ => None,
    };
    let reply = model_context::encode_end(Revision::V2026_07_28, id, ended, job)?;
    Some(finish(server, reply, cache))
}

/// `-32021` naming the capabilities the request needed.
fn missing_capability(id: &RequestId, missing: &[&str]) -> Reply {
    // An elicitation is a form: the client must declare that mode.
    let required: Map<String, Value> = missing
        .iter()
        .map(|&name| match name {
            "elicitation" => (name.to_owned(), json!({"form": {}})),
            _ => (name.to_owned(), json!({})),
        })
        .collect();
    encode_error_with(
        Some(id),
        ErrorCode::MISSING_CLIENT_CAPABILITY.0,
        ErrorCode::MISSING_CLIENT_CAPABILITY.message(),
        &json!({ "requiredCapabilities": required }),
    )
}

/// The `InputRequiredResult` of a round whose work asked questions: the
/// questions, and the state that carries every answer so far to the retry.
fn input_required(server: &ServerInner, id: &RequestId, round: &RoundTrip) -> Reply {
    #[derive(Serialize)]
    struct Request<'a> {
        method: &'a str,
        params: &'a RawValue,
    }
    /// The questions, in the order they were asked.
    struct Requests<'a>(&'a [crate::round_trip::Question]);
    impl Serialize for Requests<'_> {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut map = serializer.serialize_map(Some(self.0.len()))?;
            for q in self.0 {
                let request = Request {
                    method: q.method,
                    params: &q.params,
                };
                map.serialize_entry(&q.key, &request)?;
            }
            map.end()
        }
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct InputRequired<'a> {
        result_type: &'static str,
        input_requests: Requests<'a>,
        request_state: &'a str,
    }
    let questions = round.take_questions();
    let sealing = StatePlaintext {
        exp: now_secs().saturating_add(server.revision_2026.request_state_ttl.as_secs()),
        answers: std::borrow::Cow::Borrowed(round.answers()),
    };
    let Some(request_state) = serde_json::to_vec(&sealing).ok().and_then(|plain| {
        server
            .revision_2026
            .keys
            .seal(&round.binding().bytes(), &plain)
    }) else {
        return error(
            Some(id),
            &RpcError::internal("the request's state could not be sealed"),
        );
    };
    let reply = crate::jsonrpc::encode_result(
        id,
        &InputRequired {
            result_type: "input_required",
            input_requests: Requests(&questions),
            request_state: &request_state,
        },
    );
    // The server's identity, as every result of the revision carries it
    // (after the result's own `resultType`, its first member).
    const TYPE: &[u8] = br#"{"resultType":"input_required","#;
    let end = reply.result_at + TYPE.len();
    let Some((head, rest)) = reply
        .bytes
        .split_at_checked(end)
        .filter(|(head, _)| reply.error.is_none() && head.get(reply.result_at..) == Some(TYPE))
    else {
        return reply;
    };
    let mut out = Vec::with_capacity(reply.bytes.len() + 96);
    out.extend_from_slice(head);
    write_meta(&mut out, server, None);
    out.push(b',');
    out.extend_from_slice(rest);
    Reply {
        bytes: out,
        ..reply
    }
}

/// An error response (the Model Context Protocol's table).
pub(crate) fn error(id: Option<&RequestId>, error: &RpcError) -> Reply {
    model_context::error(id, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The notification as a JSON value, built the slow way.
    fn as_value(id: &RequestId, push: &Push) -> Value {
        let tag = json!({keys::SUBSCRIPTION_ID: id});
        match push {
            Push::Updated(uri) => json!({"jsonrpc": "2.0", "method": methods::RESOURCE_UPDATED,
                                         "params": {"uri": &**uri, "_meta": tag}}),
            Push::ListChanged(kind) => json!({"jsonrpc": "2.0",
                                              "method": model_context::list_changed_method(*kind),
                                              "params": {"_meta": tag}}),
        }
    }

    #[test]
    fn a_pushed_notification_written_as_bytes_is_the_json_value_it_stands_for() {
        let ids = [
            RequestId::String("L".into()),
            RequestId::String("quote \" back\\slash \u{e9} \u{1f600}".into()),
            RequestId::Number("-42".into()),
        ];
        let pushes = [
            Push::Updated("file:///a%20b/\"c\".txt".into()),
            Push::Updated("mcp://x/\u{2028}\n".into()),
            Push::ListChanged(ListKind::Tools),
            Push::ListChanged(ListKind::Prompts),
            Push::ListChanged(ListKind::Resources),
        ];
        for id in &ids {
            for push in &pushes {
                let bytes = pushed(id, push);
                let read: Value = serde_json::from_slice(&bytes)
                    .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&bytes)));
                assert_eq!(read, as_value(id, push));
                assert!(
                    !bytes.contains(&b'\n'),
                    "one line, as an SSE data field needs"
                );
            }
        }
    }

    /// The binding of a request with `params` (no tool call read by the
    /// plain reader).
    fn bound(method: &str, params: &Value) -> Vec<u8> {
        let raw = serde_json::value::to_raw_value(params).unwrap();
        let members = members(method, Some(&raw), None).unwrap();
        binding(method, &members, None, None).bytes()
    }

    #[test]
    fn a_state_is_bound_to_what_is_actually_read() {
        let read = methods::RESOURCES_READ;
        let a = bound(read, &json!({"uri": "test://a"}));
        // A `name` member beside another URI does not stand in for it.
        assert_ne!(
            a,
            bound(read, &json!({"uri": "test://b", "name": "test://a"}))
        );
        assert_eq!(a, bound(read, &json!({"uri": "test://a", "name": "other"})));
        let prompt = bound(methods::PROMPTS_GET, &json!({"name": "p"}));
        assert_ne!(
            prompt,
            bound(methods::PROMPTS_GET, &json!({"name": "q", "uri": "p"}))
        );
        assert_ne!(a, bound(methods::PROMPTS_GET, &json!({"name": "test://a"})));
    }
}
