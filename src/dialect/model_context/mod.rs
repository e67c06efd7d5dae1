//! The Model Context Protocol (modelcontextprotocol.io), revisions of the
//! 2025-11-25 family (docs/model-context.md): `initialize` with version
//! negotiation, `ping`, tools, resources (with templates and
//! subscriptions), prompts with arguments, completion, logging, progress
//! and cancellation; lists paginated with checked cursors. Errors follow
//! the mapping of docs/model-context.md §3: a tool's failure is a result with `isError`,
//! a cancelled request gets no response at all.

mod cursor;
mod revision;
mod schema;
pub(crate) mod to_client;

pub(crate) use revision::Revision;

use crate::dialect::Listing;
use crate::handle::{ListKind, Push};
use crate::jsonrpc::{RawText, Reply};
use std::borrow::Cow;
use std::sync::OnceLock;

use serde::Serialize;
use serde_json::json;
use serde_json::value::RawValue;

use super::Phase;
use super::{
    Admission, Change, ClientInfo, Control, Ended, JobInfo, Providers, Request, SessionState, Step,
    Subscriptions,
};
use crate::app;
use crate::completion::CompletionContext;
use crate::content::{Content, StructuredJson, ToolOutput};
use crate::definition::{ServerInfo, ToolAnnotations};
use crate::engine::access::Item;
use crate::engine::catalog::{CompiledPrompt, CompiledTool};
use crate::engine::operation::Completing;
use crate::engine::{Arguments, Catalog, CompletionRef, Done, Failure, Work};
use crate::error::{ErrorCode, RpcError};
use crate::fast::arguments::TOKEN_REFUSED;
use crate::jsonrpc::{
    RequestId, ToolCall, encode_error_with, encode_notification, encode_result, encode_result_text,
};
use crate::principal::Principal;
use crate::resource::{Resource, ResourceInfo};
use crate::template::ResourceTemplate;
use crate::tool::CancelReason;
use schema::{
    CallToolResult, CancelledParams, CompleteParams, CompleteResult, CompletionBody,
    GetPromptParams, GetPromptResult, InitializeParams, InitializeResult, ListParams,
    ReadResourceResult, Reference, SetLevelParams, StructuredContent, UriParams,
};

/// Method and notification names.
pub(crate) mod methods {
    /// The handshake request.
    pub const INITIALIZE: &str = "initialize";
    /// The client's notification that ends the handshake.
    pub const INITIALIZED: &str = "notifications/initialized";
    /// Liveness check, served in every phase.
    pub const PING: &str = "ping";
    /// The 2026-07-28 revision's discovery (`dialect::revision_2026`).
    pub const DISCOVER: &str = "server/discover";
    pub const TOOLS_LIST: &str = "tools/list";
    pub const TOOLS_CALL: &str = "tools/call";
    pub const RESOURCES_LIST: &str = "resources/list";
    pub const RESOURCES_READ: &str = "resources/read";
    pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
    pub const PROMPTS_LIST: &str = "prompts/list";
    pub const PROMPTS_GET: &str = "prompts/get";
    pub const COMPLETE: &str = "completion/complete";
    pub const SET_LEVEL: &str = "logging/setLevel";
    pub const CANCELLED: &str = "notifications/cancelled";
    pub const PROGRESS: &str = "notifications/progress";
    pub const MESSAGE: &str = "notifications/message";
    pub const RESOURCE_UPDATED: &str = "notifications/resources/updated";
    pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
    pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
}

/// Whether `version` is one this server speaks over Streamable HTTP (the
/// `MCP-Protocol-Version` header's check): a revision that opens sessions
/// there (`Revision::is_served_over_http`, which a test holds it to).
#[cfg(feature = "http")]
pub(crate) fn supported_over_http(version: &str) -> bool {
    matches!(version, "2025-11-25" | "2025-06-18" | "2025-03-26")
}

/// Whether the first message of a body is this protocol's, by its method
/// (docs/model-context.md §1): every name of the table and any `notifications/…`.
pub(crate) fn is_method(method: &str) -> bool {
    [
        "tools/",
        "resources/",
        "prompts/",
        "notifications/",
        "subscriptions/",
        "completion/",
    ]
    .iter()
    .any(|prefix| method.starts_with(prefix))
        || matches!(
            method,
            methods::PING | methods::DISCOVER | methods::SET_LEVEL
        )
}

/// What the server offers, from what is registered.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Provides {
    pub(crate) tools: bool,
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
    pub(crate) completions: bool,
}

/// The capabilities and the pages of every list, serialised once at build
/// in the latest revision's shapes, and for an older revision when a
/// session of it first asks.
pub(crate) struct Lists {
    pub(crate) provides: Provides,
    /// The capabilities `initialize` answers: from 2025-06-18 on; in
    /// 2025-03-26, without the apps extension (its tools and pages carry
    /// no `_meta` there); in 2024-11-05, also without `completions`.
    capabilities: [Box<RawValue>; 3],
    /// The capabilities `server/discover` lists (2026-07-28).
    revision_2026_capabilities: Box<RawValue>,
    server_info: Box<RawValue>,
    instructions: Option<String>,
    /// In 2025-11-25's shapes (2026-07-28's too).
    pages: Pages,
    /// In 2024-11-05's, 2025-03-26's and 2025-06-18's, by `older`.
    older_pages: [OnceLock<Pages>; 3],
    page_size: usize,
}

/// The four lists, cut into pages, in one revision's shapes.
struct Pages {
    tools: Vec<Box<RawValue>>,
    resources: Vec<Box<RawValue>>,
    templates: Vec<Box<RawValue>>,
    prompts: Vec<Box<RawValue>>,
}

impl Pages {
    fn build(catalog: &Catalog, revision: Revision, page_size: usize) -> Self {
        let tools: Vec<_> = catalog
            .tools
            .iter()
            .map(|t| tool_item(t, revision))
            .collect();
        let resources: Vec<_> = catalog
            .resources
            .iter()
            .map(|(info, resource)| resource_item(info, &**resource, revision))
            .collect();
        let templates: Vec<_> = (catalog.templates.iter())
            .map(|t| template_item(t, revision))
            .collect();
        let prompts: Vec<_> = (catalog.prompts.iter())
            .map(|p| prompt_item(p, revision))
            .collect();
        Self {
            tools: pages("tools", &tools, page_size),
            resources: pages("resources", &resources, page_size),
            templates: pages("resourceTemplates", &templates, page_size),
            prompts: pages("prompts", &prompts, page_size),
        }
    }

    fn of(&self, kind: PagedList) -> &[Box<RawValue>] {
        match kind {
            PagedList::Tools => &self.tools,
            PagedList::Resources => &self.resources,
            PagedList::Templates => &self.templates,
            PagedList::Prompts => &self.prompts,
        }
    }
}

/// The place of an older revision's pages in `Lists::older_pages`.
fn older(revision: Revision) -> Option<usize> {
    match revision {
        Revision::V2024_11_05 => Some(0),
        Revision::V2025_03_26 => Some(1),
        Revision::V2025_06_18 => Some(2),
        Revision::V2025_11_25 | Revision::V2026_07_28 => None,
    }
}

/// Which list a method pages through.
#[derive(Debug, Clone, Copy)]
enum PagedList {
    Tools,
    Resources,
    Templates,
    Prompts,
}

impl PagedList {
    fn key(self) -> &'static str {
        match self {
            Self::Tools => "tools",
            Self::Resources => "resources",
            Self::Templates => "resourceTemplates",
            Self::Prompts => "prompts",
        }
    }
}

impl Lists {
    /// The capabilities `server/discover` lists.
    pub(crate) fn revision_2026_capabilities(&self) -> &RawValue {
        &self.revision_2026_capabilities
    }

    /// The server's instructions, if any.
    pub(crate) fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }

    /// The pages in `revision`'s shapes; `catalog` is the one they were
    /// built from (the same listing's).
    fn pages(&self, catalog: &Catalog, revision: Revision) -> &Pages {
        match older(revision).and_then(|i| self.older_pages.get(i)) {
            Some(cell) => cell.get_or_init(|| Pages::build(catalog, revision, self.page_size)),
            None => &self.pages,
        }
    }
}

/// The pages of a list that a request sees: the ones cached at build, or,
/// when lists hide what a token cannot use (docs/oauth.md §4), the pages
/// of what `principal` may use, made now.
fn seen<'a>(
    lists: &'a Lists,
    catalog: &Catalog,
    principal: Option<&Principal>,
    kind: PagedList,
    revision: Revision,
) -> Cow<'a, [Box<RawValue>]> {
    let access = &catalog.access;
    let Some(principal) = principal.filter(|_| access.hide_unusable) else {
        return Cow::Borrowed(lists.pages(catalog, revision).of(kind));
    };
    let shows = |item| access.shows(Some(principal), item);
    let (key, size) = (kind.key(), lists.page_size);
    Cow::Owned(match kind {
        PagedList::Tools => {
            let items = super::visible(
                &catalog.tools,
                |i| shows(Item::Tool(i)),
                |t| tool_item(t, revision),
            );
            pages(key, &items, size)
        }
        PagedList::Resources => {
            let items = super::visible(
                &catalog.resources,
                |i| shows(Item::Resource(i)),
                |r| resource_item(&r.0, &*r.1, revision),
            );
            pages(key, &items, size)
        }
        PagedList::Templates => {
            let items = super::visible(
                &catalog.templates,
                |i| shows(Item::Template(i)),
                |t| template_item(t, revision),
            );
            pages(key, &items, size)
        }
        PagedList::Prompts => {
            let items = super::visible(
                &catalog.prompts,
                |i| shows(Item::Prompt(i)),
                |p| prompt_item(p, revision),
            );
            pages(key, &items, size)
        }
    })
}

/// A tool as `revision` lists it: `title`, `outputSchema` and `_meta`
/// from 2025-06-18, `annotations` from 2025-03-26 (where, before
/// 2025-06-18, `annotations.title` is the one title a host reads: the
/// tool's own when the annotations name none), `icons` from 2025-11-25.
fn tool_item(t: &CompiledTool, revision: Revision) -> schema::Tool<'_> {
    let since_2025_06_18 = revision.has_structured_content();
    let annotations = match (&t.metadata.annotations, &t.metadata.title) {
        _ if !revision.has_tool_annotations() => None,
        (Some(a), _) if since_2025_06_18 || a.title.is_some() => Some(Cow::Borrowed(a)),
        (None, _) if since_2025_06_18 => None,
        (annotations, Some(title)) => Some(Cow::Owned(ToolAnnotations {
            title: Some(title.clone()),
            ..annotations.clone().unwrap_or_default()
        })),
        (annotations, None) => annotations.as_ref().map(Cow::Borrowed),
    };
    schema::Tool {
        name: &t.definition.name,
        title: t.metadata.title.as_deref().filter(|_| since_2025_06_18),
        description: &t.definition.description,
        input_schema: &t.definition.input_schema,
        output_schema: (t.lists_output && since_2025_06_18).then_some(&t.definition.output_schema),
        annotations,
        icons: if revision.has_icons() {
            &t.metadata.icons
        } else {
            &[]
        },
        meta: (t.metadata.app.as_ref())
            .filter(|_| since_2025_06_18)
            .map(crate::definition::ToolApp::meta),
    }
}

/// A resource as `revision` lists it: `title` and `_meta` from
/// 2025-06-18, `icons` from 2025-11-25.
fn resource_item<'a>(
    info: &'a ResourceInfo,
    resource: &dyn Resource,
    revision: Revision,
) -> schema::Resource<'a> {
    let presentation = resource.presentation();
    let since_2025_06_18 = revision.has_structured_content();
    schema::Resource {
        uri: &info.mcp_id,
        name: &info.name,
        title: presentation.title.filter(|_| since_2025_06_18),
        description: &info.description,
        mime_type: &info.media_type,
        icons: if revision.has_icons() {
            presentation.icons
        } else {
            Vec::new()
        },
        meta: resource.meta().filter(|_| since_2025_06_18),
    }
}

/// A template as `revision` lists it (as a resource is).
fn template_item(t: &ResourceTemplate, revision: Revision) -> schema::ResourceTemplate<'_> {
    schema::ResourceTemplate {
        uri_template: t.template.as_str(),
        name: &t.name,
        title: (t.presentation.title.as_deref()).filter(|_| revision.has_structured_content()),
        description: &t.description,
        mime_type: &t.mime_type,
        icons: if revision.has_icons() {
            &t.presentation.icons
        } else {
            &[]
        },
    }
}

/// A prompt as `revision` lists it (`title` from 2025-06-18, `icons` from
/// 2025-11-25).
fn prompt_item(p: &CompiledPrompt, revision: Revision) -> schema::Prompt<'_> {
    schema::Prompt {
        name: &p.definition.name,
        title: (p.presentation.title.as_deref()).filter(|_| revision.has_structured_content()),
        description: p.definition.description.as_deref(),
        arguments: &p.arguments,
        icons: if revision.has_icons() {
            &p.presentation.icons
        } else {
            &[]
        },
    }
}

impl Lists {
    pub(crate) fn build(
        catalog: &Catalog,
        providers: Providers,
        info: &ServerInfo,
        instructions: Option<&str>,
        page_size: usize,
        extensions: &serde_json::Map<String, serde_json::Value>,
    ) -> Self {
        let provides = Provides {
            tools: providers.tools || !catalog.tools.is_empty(),
            resources: providers.resources
                || !catalog.resources.is_empty()
                || !catalog.templates.is_empty(),
            prompts: providers.prompts || !catalog.prompts.is_empty(),
            completions: !catalog.completers.is_empty(),
        };
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("logging".into(), json!({}));
        if provides.completions {
            capabilities.insert("completions".into(), json!({}));
        }
        if provides.prompts {
            capabilities.insert("prompts".into(), json!({"listChanged": true}));
        }
        if provides.resources {
            capabilities.insert(
                "resources".into(),
                json!({"subscribe": true, "listChanged": true}),
            );
        }
        if provides.tools {
            capabilities.insert("tools".into(), json!({"listChanged": true}));
        }
        let mut extensions = extensions.clone();
        // A server with an app page says so (MCP Apps), in every revision.
        let apps = (catalog.resources.iter()).any(|(info, _)| info.media_type == app::MIME_TYPE);
        if apps {
            extensions.insert(app::EXTENSION.into(), json!({}));
        }
        if !extensions.is_empty() {
            capabilities.insert("extensions".into(), serde_json::Value::Object(extensions));
        }
        let mut capabilities_2025_03_26 = capabilities.clone();
        if let Some(serde_json::Value::Object(extensions)) =
            capabilities_2025_03_26.get_mut("extensions")
        {
            extensions.remove(app::EXTENSION);
            if extensions.is_empty() {
                capabilities_2025_03_26.remove("extensions");
            }
        }
        let mut capabilities_2024_11_05 = capabilities_2025_03_26.clone();
        capabilities_2024_11_05.remove("completions");
        // 2026-07-28 hears of the same changes through
        // `subscriptions/listen` streams, and offers tasks when a tool runs
        // as one.
        let mut revision_2026 = capabilities.clone();
        if catalog
            .tools
            .iter()
            .any(|t| t.task_support != crate::task::TaskSupport::Never)
        {
            let extensions = revision_2026
                .entry("extensions")
                .or_insert_with(|| json!({}));
            if let Some(extensions) = extensions.as_object_mut() {
                extensions.insert(crate::task::EXTENSION.into(), json!({}));
            }
        }
        Self {
            provides,
            capabilities: [
                crate::dialect::raw(&capabilities_2024_11_05),
                crate::dialect::raw(&capabilities_2025_03_26),
                crate::dialect::raw(&capabilities),
            ],
            revision_2026_capabilities: crate::dialect::raw(&revision_2026),
            server_info: crate::dialect::raw(info),
            instructions: instructions.map(str::to_owned),
            pages: Pages::build(catalog, Revision::LATEST_SESSION, page_size),
            older_pages: Default::default(),
            page_size,
        }
    }
}

/// A list cut into pages, each a whole result (`{"<key>": [...],
/// "nextCursor": ...}`); an empty list is one empty page.
fn pages<T: Serialize>(key: &'static str, items: &[T], page_size: usize) -> Vec<Box<RawValue>> {
    let chunks: Vec<&[T]> = if items.is_empty() {
        vec![&[]]
    } else {
        items.chunks(page_size).collect()
    };
    let count = chunks.len();
    chunks
        .into_iter()
        .enumerate()
        .map(|(i, items)| {
            crate::dialect::raw(&Page {
                key,
                items,
                next_cursor: (i + 1 < count).then(|| cursor::encode(key, i + 1)),
            })
        })
        .collect()
}

/// One page of a list.
struct Page<'a, T> {
    key: &'static str,
    items: &'a [T],
    next_cursor: Option<String>,
}

impl<T: Serialize> Serialize for Page<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry(self.key, self.items)?;
        if let Some(cursor) = &self.next_cursor {
            map.serialize_entry("nextCursor", cursor)?;
        }
        map.end()
    }
}

/// Before `initialize` only `ping` is served (docs/model-context.md §2).
/// (`server/discover` never comes here: it is always the 2026-07-28
/// revision's request, `Dialect::of_request`.)
pub(crate) fn admit(phase: Phase, method: &str) -> Admission {
    let is_initialize = method == methods::INITIALIZE;
    match phase {
        Phase::AwaitingInitialize if is_initialize => Admission::Initialize,
        Phase::AwaitingInitialize if method == methods::PING => Admission::Serve,
        Phase::AwaitingInitialize => Admission::Reject(RpcError::invalid_request(format!(
            "the session is not initialized: '{method}' must wait for initialize"
        ))),
        _ if is_initialize => Admission::Reject(RpcError::invalid_request(
            "the session is already initialized",
        )),
        _ => Admission::Serve,
    }
}

/// Answers `initialize`: negotiates the version and keeps the client's
/// capabilities.
pub(crate) fn initialize(
    session: &impl SessionState,
    id: &RequestId,
    params: Option<&RawValue>,
) -> Result<(Reply, Change), Reply> {
    let bytes = params.map_or(0, |raw| raw.get().len());
    if bytes > super::MAX_CLIENT_CAPABILITIES {
        let refusal = super::capabilities_too_large("initialize params", bytes);
        return Err(error(Some(id), &refusal));
    }
    let params: InitializeParams<'_> =
        read(methods::INITIALIZE, params).map_err(|e| error(Some(id), &e))?;
    let asked = params.protocol_version.as_ref();
    tracing::debug!(
        client = %params.client_info.name,
        client_version = %params.client_info.version,
        asked,
        "initialize"
    );
    let revision = Revision::negotiate(asked, session.over_http());
    let listing = session.server().listing();
    let lists = &listing.model_context;
    let [before_2025_03_26, before_2025_06_18, since_2025_06_18] = &lists.capabilities;
    let capabilities = if revision.has_structured_content() {
        since_2025_06_18
    } else if revision.has_tool_annotations() {
        before_2025_06_18
    } else {
        before_2025_03_26
    };
    let reply = encode_result(
        id,
        &InitializeResult {
            protocol_version: revision.as_str(),
            capabilities,
            server_info: &lists.server_info,
            instructions: lists.instructions.as_deref(),
        },
    );
    let client = ClientInfo {
        revision,
        capabilities: serde_json::Value::Object(params.capabilities),
    };
    Ok((reply, Change::Client(Box::new(client))))
}

/// Reads params into `T`: they must be an object.
fn read<'a, T: serde::Deserialize<'a>>(
    method: &str,
    params: Option<&'a RawValue>,
) -> Result<T, RpcError> {
    let raw = params
        .filter(|raw| raw.get().starts_with('{'))
        .ok_or_else(|| RpcError::invalid_params(format!("{method} params must be an object")))?;
    serde_json::from_str(raw.get())
        .map_err(|e| RpcError::invalid_params(format!("{method} params: {e}")))
}

/// Reads `tools/call` params the one-pass reading left (an object).
fn read_call<'a>(method: &str, params: Option<&'a RawValue>) -> Result<ToolCall<'a>, RpcError> {
    let raw = params
        .filter(|raw| raw.get().starts_with('{'))
        .ok_or_else(|| RpcError::invalid_params(format!("{method} params must be an object")))?;
    super::read_call(&super::TOOLS_CALL, raw.get())
        .map_err(|e| RpcError::invalid_params(format!("{method} params: {e}")))
}

/// Reads optional params (absent or `null` means the default).
fn read_optional<'a, T: serde::Deserialize<'a> + Default>(
    method: &str,
    params: Option<&'a RawValue>,
) -> Result<T, RpcError> {
    match params {
        None => Ok(T::default()),
        Some(raw) if raw.get() == "null" => Ok(T::default()),
        Some(_) => read(method, params),
    }
}

/// The empty result.
const EMPTY: &str = "{}";

/// The revision whose shapes a session's replies take: the one it
/// negotiated (2025-11-25 before `initialize`, when only `ping` is served).
pub(crate) fn revision_of(session: &impl SessionState) -> Revision {
    session
        .client()
        .map_or(Revision::LATEST_SESSION, |c| c.revision)
}

/// Whether a tool's failure of `code` is answered as a result with
/// `isError` (its text for the model to read) rather than as a JSON-RPC
/// error of that code: `-32000` and `-32602`, and in the 2026-07-28
/// revision also the codes it forbids a server to send, `-32002` (which
/// it replaced by `-32602`) and `-32020` to `-32099` (which only the
/// specification defines, each with its own meaning).
fn is_tool_result(revision: Revision, code: ErrorCode) -> bool {
    // (-32002 is "resource not found" to the revisions before.)
    let forbidden = code.0 == -32002 || (-32099..=-32020).contains(&code.0);
    matches!(
        code,
        ErrorCode::TOOL_EXECUTION_FAILED | ErrorCode::INVALID_PARAMS
    ) || (revision == Revision::V2026_07_28 && forbidden)
}

/// Reads a request of `revision` (a session's, or 2026-07-28's stateless
/// one, `dialect::revision_2026`, which serves this table with a few
/// rules of its own) through the method table.
pub(crate) fn route(revision: Revision, listing: &Listing, request: Request<'_>) -> Step {
    let Request {
        id,
        method,
        params,
        call,
        principal,
    } = request;
    let catalog = &listing.catalog;
    let lists = &listing.model_context;
    let provides = lists.provides;
    let outcome = match method {
        methods::PING => Ok(Step::Reply(empty(id))),
        methods::SET_LEVEL => read::<SetLevelParams>(method, params)
            .map(|p| Step::Record(empty(id), Change::LogLevel(p.level))),
        methods::TOOLS_LIST if provides.tools => page(
            id,
            method,
            params,
            "tools",
            &seen(lists, catalog, principal, PagedList::Tools, revision),
        ),
        methods::TOOLS_CALL if provides.tools => match call {
            Some(read) => call_tool_with(catalog, read),
            None => read_call(method, params)
                .or_else(|e| {
                    // Refused where the value reading refuses (tested in
                    // `fast::arguments`), and worded by it, but for the
                    // raw-value token, which it reads otherwise.
                    if e.data.contains(TOKEN_REFUSED) {
                        return Err(e);
                    }
                    read::<schema::CallToolParamsShape<'_>>(method, params).and(Err(e))
                })
                .and_then(|p| call_tool_with(catalog, &p)),
        },
        methods::RESOURCES_LIST if provides.resources => {
            let pages = seen(lists, catalog, principal, PagedList::Resources, revision);
            page(id, method, params, "resources", &pages)
        }
        methods::RESOURCES_TEMPLATES_LIST if provides.resources => {
            let pages = seen(lists, catalog, principal, PagedList::Templates, revision);
            page(id, method, params, "resourceTemplates", &pages)
        }
        methods::RESOURCES_READ if provides.resources => {
            read::<UriParams<'_>>(method, params).map(|p| {
                if catalog.knows_uri(&p.uri) {
                    Step::Run {
                        work: Work::ReadResource {
                            uri: p.uri.into_owned(),
                        },
                        progress: None,
                        round: None,
                        as_task: false,
                    }
                } else {
                    Step::Reply(not_found(revision, id, &p.uri))
                }
            })
        }
        methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE if provides.resources => {
            read::<UriParams<'_>>(method, params).map(|p| {
                let on = method == methods::RESOURCES_SUBSCRIBE;
                if on && !catalog.knows_uri(&p.uri) {
                    return Step::Reply(not_found(revision, id, &p.uri));
                }
                let uri = p.uri.into_owned();
                Step::Record(empty(id), Change::Subscription { uri, on })
            })
        }
        methods::PROMPTS_LIST if provides.prompts => {
            let pages = seen(lists, catalog, principal, PagedList::Prompts, revision);
            page(id, method, params, "prompts", &pages)
        }
        methods::PROMPTS_GET if provides.prompts => get_prompt(catalog, method, params),
        methods::COMPLETE if provides.completions => complete(catalog, id, method, params),
        _ => Err(RpcError::method_not_found(method)),
    };
    outcome.unwrap_or_else(|e| Step::Reply(error(Some(id), &e)))
}

fn empty(id: &RequestId) -> Reply {
    encode_result(id, raw_empty())
}

fn raw_empty() -> &'static RawValue {
    static EMPTY_RAW: std::sync::OnceLock<Box<RawValue>> = std::sync::OnceLock::new();
    EMPTY_RAW.get_or_init(|| RawValue::from_string(EMPTY.into()).unwrap_or_default())
}

/// One page of a list, by the request's cursor.
fn page(
    id: &RequestId,
    method: &str,
    params: Option<&RawValue>,
    list: &str,
    pages: &[Box<RawValue>],
) -> Result<Step, RpcError> {
    let params: ListParams<'_> = read_optional(method, params)?;
    let index = match params.cursor {
        None => 0,
        Some(cursor) => cursor::decode(&cursor, list, pages.len()).ok_or_else(|| {
            RpcError::invalid_params(format!(
                "{method}: the cursor \"{}\" is not one this server gave",
                crate::error::clipped(&cursor)
            ))
        })?,
    };
    let page = pages
        .get(index)
        .ok_or_else(|| RpcError::internal("a list without pages"))?;
    Ok(Step::Reply(encode_result(id, &**page)))
}

/// The tool of read `tools/call` params, looked up, its arguments checked.
fn call_tool_with(catalog: &Catalog, params: &ToolCall<'_>) -> Result<Step, RpcError> {
    let tool = *catalog
        .tool_names
        .get(params.tool.as_ref())
        .ok_or_else(|| RpcError::invalid_params(format!("Unknown tool: '{}'", params.tool)))?;
    // (`null` reads as `None`.)
    let arguments = match params.arguments {
        None => Arguments::none(),
        Some(text) if text.get().starts_with('{') => Arguments::for_tool(catalog, tool, text)
            .map_err(|e| RpcError::invalid_params(format!("tools/call params: {e}")))?,
        Some(_) => {
            return Err(RpcError::invalid_params(
                "tools/call arguments must be an object",
            ));
        }
    };
    let progress = params.meta(super::kept_meta::PROGRESS_TOKEN);
    if let Some(token) = progress
        && !matches!(
            token.get().as_bytes().first(),
            Some(b'"' | b'-' | b'0'..=b'9')
        )
    {
        return Err(RpcError::invalid_params(
            "_meta.progressToken must be a string or a number",
        ));
    }
    Ok(Step::Run {
        work: Work::CallTool { tool, arguments },
        progress: progress.and_then(RawText::to_raw_value),
        round: None,
        as_task: false,
    })
}

fn get_prompt(
    catalog: &Catalog,
    method: &str,
    params: Option<&RawValue>,
) -> Result<Step, RpcError> {
    let params: GetPromptParams<'_> = read(method, params)?;
    let prompt = *catalog
        .prompt_names
        .get(params.name.as_ref())
        .ok_or_else(|| RpcError::invalid_params(format!("Unknown prompt: '{}'", params.name)))?;
    let arguments = params.arguments.unwrap_or_default();
    let compiled = catalog
        .prompts
        .get(prompt)
        .ok_or_else(|| RpcError::internal("prompt index out of range"))?;
    if let Some(missing) = compiled
        .arguments
        .iter()
        .find(|a| a.required && !arguments.contains_key(&a.name))
    {
        return Err(RpcError::invalid_params(format!(
            "Missing required argument '{}' for prompt {}",
            missing.name, params.name
        )));
    }
    Ok(Step::Run {
        work: Work::GetPrompt { prompt, arguments },
        progress: None,
        round: None,
        as_task: false,
    })
}

fn complete(
    catalog: &Catalog,
    id: &RequestId,
    method: &str,
    params: Option<&RawValue>,
) -> Result<Step, RpcError> {
    let params: CompleteParams<'_> = read(method, params)?;
    let argument = params.argument.name;
    let (target, item) = match params.reference {
        Reference::Prompt { name } => {
            let unknown = || RpcError::invalid_params(format!("Unknown prompt: '{name}'"));
            let index = *catalog
                .prompt_names
                .get(name.as_ref())
                .ok_or_else(unknown)?;
            let declared = catalog
                .prompts
                .get(index)
                .ok_or_else(unknown)?
                .arguments
                .iter()
                .any(|a| a.name == argument);
            if !declared {
                return Err(RpcError::invalid_params(format!(
                    "prompt '{name}' has no argument '{argument}'"
                )));
            }
            (
                CompletionRef::Prompt(name.into_owned(), argument),
                Item::Prompt(index),
            )
        }
        Reference::Resource { uri } => {
            let (index, template) = catalog
                .templates
                .iter()
                .enumerate()
                .find(|(_, t)| t.template.as_str() == uri)
                .ok_or_else(|| {
                    let uri = crate::error::clipped(&uri);
                    RpcError::invalid_params(format!("Unknown resource template: '{uri}'"))
                })?;
            if !template.template.variables().any(|v| v == argument) {
                return Err(RpcError::invalid_params(format!(
                    "resource template '{uri}' has no variable '{argument}'"
                )));
            }
            (
                CompletionRef::Template(uri.into_owned(), argument),
                Item::Template(index),
            )
        }
    };
    let Some(completer) = catalog.completers.get(&target) else {
        let body = CompleteResult {
            completion: CompletionBody {
                values: &[],
                total: Some(0),
                has_more: false,
            },
        };
        return Ok(Step::Reply(encode_result(id, &body)));
    };
    Ok(Step::Run {
        work: Work::Complete(Box::new(Completing {
            completer: completer.clone(),
            value: params.argument.value,
            context: CompletionContext {
                arguments: params.context.unwrap_or_default().arguments,
            },
            item,
        })),
        progress: None,
        round: None,
        as_task: false,
    })
}

/// Reads a notification.
pub(crate) fn control(method: &str, params: Option<&RawValue>) -> Control {
    match method {
        methods::INITIALIZED => Control::Initialized,
        methods::CANCELLED => match read::<CancelledParams>(method, params) {
            Ok(p) => Control::Cancel(p.request_id),
            Err(e) => {
                tracing::warn!("ignoring notifications/cancelled: {}", e.data);
                Control::Ignore
            }
        },
        other => {
            tracing::debug!(method = other, "ignoring a notification");
            Control::Ignore
        }
    }
}

/// The reply to a request of `revision` whose work ended
/// (docs/model-context.md §3), in that revision's shapes, or none for a
/// cancelled one.
pub(crate) fn encode_end(
    revision: Revision,
    id: &RequestId,
    ended: Ended,
    job: &JobInfo,
) -> Option<Reply> {
    let tool = || job.tool.and_then(|i| job.listing.catalog.tools.get(i));
    Some(match ended {
        Ended::Finished(Ok(done)) => match done {
            Done::Tool(output) => {
                let lists_output = tool().is_some_and(|t| t.lists_output);
                tool_result(id, &output, lists_output, revision)
            }
            Done::Contents(contents) => encode_result(
                id,
                &ReadResourceResult {
                    contents: [&revision.contents(&contents)],
                },
            ),
            Done::Messages {
                description,
                messages,
            } => encode_result(
                id,
                &GetPromptResult {
                    description: description.as_deref(),
                    messages: &revision.messages(&messages),
                },
            ),
            Done::Completion(completion) => {
                let values = (completion.values)
                    .get(..crate::completion::MAX_VALUES)
                    .unwrap_or(&completion.values);
                encode_result(
                    id,
                    &CompleteResult {
                        completion: CompletionBody {
                            values,
                            total: completion.total,
                            has_more: completion.has_more || values.len() < completion.values.len(),
                        },
                    },
                )
            }
            Done::Resources(_)
            | Done::SubscriptionEnded
            | Done::TaskCreated(_)
            | Done::Task(_)
            | Done::Acknowledged => error(
                Some(id),
                &RpcError::internal("an operation this protocol does not have"),
            ),
        },
        Ended::Finished(Err(failure)) => match failure {
            Failure::InvalidArguments(text) => tool_error(id, &text),
            Failure::Tool(e) if is_tool_result(revision, e.code()) => tool_error(id, e.message()),
            Failure::Tool(e) => error(Some(id), &RpcError::new(e.code(), e.message())),
            Failure::BadOutput(text) => error(Some(id), &RpcError::internal(text)),
            Failure::ResourceNotFound(uri) => not_found(revision, id, &uri),
            // (Only a 2026-07-28 round stops for input; its dialect
            // answers it before this table.)
            Failure::InputRequired => error(
                Some(id),
                &RpcError::internal("a request of a session waited for a round trip"),
            ),
            Failure::Item { error: e, .. } if e.code() == ErrorCode::INVALID_PARAMS => {
                error(Some(id), &RpcError::invalid_params(e.message()))
            }
            Failure::Item { what, error: e } => {
                error(Some(id), &RpcError::internal(format!("{what} failed: {e}")))
            }
            Failure::Rpc(e) => error(Some(id), &e),
        },
        // The client cancelled it (or is gone): no response at all.
        Ended::Stopped(CancelReason::Client | CancelReason::Gone) => return None,
        Ended::Stopped(CancelReason::TimeLimit) => {
            let name = tool().map_or("?", |t| t.definition.name.as_str());
            tool_error(
                id,
                &format!(
                    "tool {name} ran past its time limit of {:?} and was stopped",
                    job.limit.unwrap_or_default()
                ),
            )
        }
        Ended::Stopped(CancelReason::Shutdown) => shutting_down(id),
        Ended::Panicked(panic) => {
            tracing::error!(%id, "a tool panicked: {panic}");
            error(
                Some(id),
                &RpcError::internal(format!("the tool panicked: {panic}")),
            )
        }
    })
}

/// A `tools/call` result: the blocks — or the structured output as one
/// compact JSON text block — and `structuredContent` when the tool lists
/// an output schema: its structured output, or for blocks alone
/// `{"content": [blocks]}`, the value its schema held. Before 2025-06-18,
/// which has no `structuredContent`, as if it listed none, and the blocks
/// as `revision` has them.
fn tool_result(
    id: &RequestId,
    output: &ToolOutput,
    lists_output: bool,
    revision: Revision,
) -> Reply {
    let lists_output = lists_output && revision.has_structured_content();
    let structured = output.structured_json();
    // Structured output alone, as the tool serialised it (a typed tool's):
    // written around its text, as serde writes the result below.
    if let ([], Some(ordered @ StructuredJson::Ordered(json))) = (output.blocks(), structured) {
        let quoted = crate::jsonrpc::quote(json);
        let parts: &[&str] = if lists_output && ordered.is_object() {
            &[
                r#"{"content":[{"type":"text","text":"#,
                &quoted,
                r#"}],"structuredContent":"#,
                json,
                "}",
            ]
        } else {
            &[r#"{"content":[{"type":"text","text":"#, &quoted, "}]}"]
        };
        return encode_result_text(id, parts);
    }
    let (text, shaped);
    let blocks: &[Content] = match (output.blocks(), structured) {
        ([], Some(json)) => {
            text = [Content::text(json.to_json())];
            &text
        }
        (blocks, _) => {
            shaped = revision.blocks(blocks);
            &shaped
        }
    };
    // Blocks alone, from a tool that lists an output schema: the value
    // checked against that schema, `{"content": [blocks]}` (MCP v1.0's
    // `output`), is its structured content. A client that validates
    // structured output refuses a result without it.
    let structured_content = match structured {
        Some(json) => Some(json)
            .filter(|s| lists_output && s.is_object())
            .map(StructuredContent::Output),
        None if lists_output => Some(StructuredContent::Blocks(output.blocks())),
        None => None,
    };
    encode_result(
        id,
        &CallToolResult {
            content: blocks,
            structured_content,
            is_error: false,
        },
    )
}

/// A `tools/call` result with `isError: true` and `text`.
fn tool_error(id: &RequestId, text: &str) -> Reply {
    encode_result(
        id,
        &CallToolResult {
            content: &[Content::text(text)],
            structured_content: None,
            is_error: true,
        },
    )
}

/// "Resource not found" with `data.uri`: `-32002` in a session, `-32602`
/// in a 2026-07-28 request.
fn not_found(revision: Revision, id: &RequestId, uri: &str) -> Reply {
    let code = if revision < Revision::V2026_07_28 {
        -32002
    } else {
        -32602
    };
    encode_error_with(Some(id), code, "Resource not found", &json!({ "uri": uri }))
}

/// The message of a code in this protocol's table: JSON-RPC's own codes
/// and the 2026-07-28 revision's read as [`ErrorCode::message`] gives them;
/// `-32002` is "Resource not found" here (MCP v1.0's "Server not
/// initialized"), and MCP v1.0's other codes are not this protocol's.
fn message(code: ErrorCode) -> &'static str {
    match code.0 {
        -32002 => "Resource not found",
        -32700 | -32603..=-32600 | -32022..=-32020 => code.message(),
        _ => "Server error",
    }
}

/// An error response; the `id` member is left out when it could not be
/// read (`schema.ts`: `JSONRPCErrorResponse.id` is optional, never null).
pub(crate) fn error(id: Option<&RequestId>, error: &RpcError) -> Reply {
    let id = id.filter(|id| **id != RequestId::Null);
    encode_error_with(id, error.code.0, message(error.code), &*error.data)
}

/// `-32600`: a message over the size limit, skipped.
pub(crate) fn too_large(declared: usize, limit: usize) -> RpcError {
    RpcError::invalid_request(format!(
        "a message of at least {declared} bytes is over the limit of {limit} bytes; it was skipped"
    ))
}

/// `-32600`: a batch member past the bound of its batch's replies.
pub(crate) fn batch_over(limit: usize, ran: bool) -> RpcError {
    RpcError::invalid_request(crate::dialect::batch_over_text(limit, ran))
}

/// `-32603` with `data` "server shutting down".
pub(crate) fn shutting_down(id: &RequestId) -> Reply {
    error(Some(id), &RpcError::internal("server shutting down"))
}

/// Batches only in a session that negotiated 2025-03-26.
pub(crate) fn allows_batches(session: &impl SessionState) -> bool {
    session
        .client()
        .is_some_and(|c| c.revision == Revision::V2025_03_26)
}

/// `notifications/resources/updated`, to a session subscribed to `uri`;
/// a list's `notifications/…/list_changed`, to every session.
pub(crate) fn pushed(subscriptions: &Subscriptions, push: &Push) -> Option<Vec<u8>> {
    match push {
        Push::Updated(uri) => subscriptions
            .contains(uri)
            .then(|| encode_notification(methods::RESOURCE_UPDATED, &json!({ "uri": &**uri }))),
        Push::ListChanged(kind) => {
            Some(encode_notification(list_changed_method(*kind), &json!({})))
        }
    }
}

/// The notification announcing that a list changed.
pub(crate) fn list_changed_method(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Tools => methods::TOOLS_LIST_CHANGED,
        ListKind::Prompts => methods::PROMPTS_LIST_CHANGED,
        ListKind::Resources => methods::RESOURCES_LIST_CHANGED,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The serde path, for any output (the blocks, or the structured
    /// output as its value's text).
    fn through_serde(id: &RequestId, output: &ToolOutput, lists_output: bool) -> Reply {
        let structured = output.structured_json();
        let text = structured.map(|s| [Content::text(s.to_json())]);
        encode_result(
            id,
            &CallToolResult {
                content: text.as_ref().map_or(output.blocks(), |t| &t[..]),
                structured_content: structured
                    .filter(|s| lists_output && s.is_object())
                    .map(StructuredContent::Output),
                is_error: false,
            },
        )
    }

    #[test]
    fn serialised_output_is_written_as_serde_writes_it() {
        let id = RequestId::from(7);
        for value in [
            json!({"message": "say \"hi\"\n\\ é \u{1F600}", "n": [1, 2.5, null], "</script>": true}),
            json!({}),
            json!("just a string"),
            json!([1, {"a": "b"}]),
        ] {
            let output = ToolOutput::serialized(&value).unwrap();
            for lists_output in [true, false] {
                assert_eq!(
                    String::from_utf8(
                        tool_result(&id, &output, lists_output, Revision::V2025_11_25).bytes
                    )
                    .unwrap(),
                    String::from_utf8(through_serde(&id, &output, lists_output).bytes).unwrap(),
                );
            }
        }
    }

    #[test]
    fn before_2025_06_18_a_tool_result_has_no_structured_content() {
        let id = RequestId::from(7);
        let outputs = [
            ToolOutput::serialized(&json!({"a": 1})).unwrap(),
            json!({"a": 1}).into(),
            ToolOutput::content([Content::text("x")]),
        ];
        for output in &outputs {
            for (revision, structured) in [
                (Revision::V2024_11_05, false),
                (Revision::V2025_03_26, false),
                (Revision::V2025_06_18, true),
                (Revision::V2025_11_25, true),
            ] {
                let reply = tool_result(&id, output, true, revision);
                let reply: serde_json::Value = serde_json::from_slice(&reply.bytes).unwrap();
                assert_eq!(
                    reply["result"].get("structuredContent").is_some(),
                    structured,
                    "{revision:?}: {reply}"
                );
                assert!(reply["result"]["content"][0]["text"].is_string());
            }
        }
    }
}
