//! The [`Server`] and its [`ServerBuilder`]: items are registered on the
//! builder, checked and compiled once by [`ServerBuilder::build`], and
//! served by any number of sessions at once.

use std::sync::Arc;
use std::time::Duration;

use crate::completion::Complete;
use crate::definition::ServerInfo;
pub use crate::dialect::Protocols;
use crate::dialect::{
    Blueprint, CacheHints, Dialect, Limits, Listings, Providers, RequestStateKeys,
    Revision2026Settings, ServerInner,
};
use crate::engine::access::AccessRules;
use crate::engine::catalog::{self, RegisteredTool};
use crate::error::{BuildError, RpcError};
pub use crate::handle::ServerHandle;
use crate::principal::Caller;
use crate::prompt::Prompt;
use crate::resource::Resource;
use crate::session::{self, Alone, Dispatched, Outgoing, Session, Shared};
pub use crate::session::{Input, MAX_PARKED};
use crate::template::ResourceTemplate;
use crate::tool::Tool;

/// The default size limit of one message: 4 MiB (docs/mcp-v1.md §2, `-32006`).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 4 * 1024 * 1024;
/// The default limit of one stdio frame header block: 8 KiB.
pub const DEFAULT_MAX_HEADER_SIZE: usize = 8 * 1024;
/// The default number of requests in flight per session (docs/mcp-v1.md §1).
pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;

/// The default bound of bytes of requests one principal has in flight in
/// a process ([`ServerBuilder::max_in_flight_bytes_per_principal`]):
/// 64 MiB.
pub const DEFAULT_MAX_IN_FLIGHT_BYTES: usize = 64 << 20;
/// The default number of bytes of a session's output that may wait for its
/// client to read them, on stdio and over HTTP: 8 MiB.
pub const DEFAULT_MAX_QUEUED_OUTPUT: usize = 8 * 1024 * 1024;
/// The default time limit of one tool execution: 5 minutes
/// ([`ServerBuilder::tool_time_limit`] says what a tool past it gets).
pub const DEFAULT_TOOL_TIME_LIMIT: Duration = Duration::from_secs(300);
/// The default time requests in flight get to finish once shutdown begins: 10 s.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// The default time a client gets to answer a request from a tool
/// (elicitation, sampling, roots): 5 minutes.
pub const DEFAULT_CLIENT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
/// The default number of resource subscriptions one session may hold
/// (and one 2026-07-28 listen stream may ask for).
pub const DEFAULT_MAX_SUBSCRIPTIONS: usize = 256;
/// The default length limit of a URI a session subscribes to: 2 KiB.
pub const DEFAULT_MAX_URI_LENGTH: usize = 2048;
/// The default number of items per page of a Model Context Protocol list.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// A built MCP server: cheap to clone, served by transports — stdio
/// ([`Server::serve_stdio`], [`Server::serve_io`] and their `_until`
/// forms), HTTP (`Server::serve_http`, `Server::http_service`) — or one
/// message at a time ([`Server::serve_message`]).
#[derive(Clone)]
pub struct Server {
    inner: Arc<ServerInner>,
    /// The state every MCP v1.0 single exchange's request served without
    /// a session shares ([`session::alone`]).
    sessionless_v1: Arc<Shared>,
    /// The same, for the 2026-07-28 requests of Streamable HTTP and
    /// `serve_message`.
    sessionless_2026: Arc<Shared>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("info", &self.inner.info)
            .field("tools", &self.inner.listing().catalog.tools.len())
            .field("resources", &self.inner.listing().catalog.resources.len())
            .field("protocols", &self.inner.protocols)
            .finish()
    }
}

impl Server {
    /// Starts registering a server's items.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// A handle for announcing resource changes to every ready session, and
    /// for [shutting down](ServerHandle::shutdown) every session.
    pub fn handle(&self) -> ServerHandle {
        self.inner.handle.clone()
    }

    /// The size limit of one message, in bytes.
    pub fn max_message_size(&self) -> usize {
        self.inner.limits.max_message_size
    }

    /// The size limit of one stdio frame header block, in bytes.
    pub fn max_header_size(&self) -> usize {
        self.inner.limits.max_header_size
    }

    /// Serves one message body (an object or a batch) without a session,
    /// and returns the reply, or `None` when the body held only
    /// notifications. For transports of your own (a message queue, a
    /// WebSocket, …).
    ///
    /// Its method decides how: one message with a method of the Model
    /// Context Protocol (`tools/call`, `tasks/get`, …) is a 2026-07-28
    /// request, that protocol's form without a session, and must carry
    /// the revision's `_meta`; anything else is an MCP v1.0 single
    /// exchange (an implicit, already-initialized session). A server that
    /// speaks one protocol only serves every body in it. A 2026-07-28
    /// request's notifications (progress, log lines) have no stream to go
    /// to: only its reply is returned, and `subscriptions/listen` is
    /// refused.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = clawmcp::Server::builder().prompts_provider(true).build().unwrap();
    /// let reply = server.serve_message(r#"{"jsonrpc":"2.0","method":"mcp/listPrompts","id":7}"#).await;
    /// assert_eq!(reply.as_deref(), Some(&br#"{"jsonrpc":"2.0","id":7,"result":[]}"#[..]));
    /// assert_eq!(server.serve_message(r#"{"jsonrpc":"2.0","method":"x"}"#).await, None);
    ///
    /// // The Model Context Protocol without a session: 2026-07-28.
    /// let reply = server
    ///     .serve_message(
    ///         r#"{"jsonrpc":"2.0","id":8,"method":"prompts/list","params":{"_meta":{
    ///             "io.modelcontextprotocol/protocolVersion":"2026-07-28",
    ///             "io.modelcontextprotocol/clientCapabilities":{}}}}"#,
    ///     )
    ///     .await
    ///     .unwrap();
    /// let reply: serde_json::Value = serde_json::from_slice(&reply).unwrap();
    /// assert_eq!(reply["result"]["prompts"], serde_json::json!([]));
    /// assert_eq!(reply["result"]["resultType"], "complete");
    /// # }
    /// ```
    pub async fn serve_message(&self, body: impl Into<bytes::Bytes>) -> Option<Vec<u8>> {
        let body = body.into();
        let stop = self.inner.handle.stop_token();
        let parsed = crate::dialect::parse(&body);
        let dialect = self.inner.protocols.for_message(&parsed);
        (self.serve_parsed_until(dialect, &body, parsed, stop, &Caller::default()))
            .await
            .reply
    }

    /// [`serve_message`](Self::serve_message) for a body its transport
    /// already parsed, in `dialect` (MCP v1.0's single exchange, or a
    /// 2026-07-28 request), sent by `caller`, in a session that shuts down
    /// with `stop`.
    pub(crate) async fn serve_parsed_until(
        &self,
        dialect: Dialect,
        body: &[u8],
        parsed: crate::jsonrpc::Parsed<'_>,
        stop: &Arc<tokio_util::sync::CancellationToken>,
        caller: &Caller,
    ) -> Exchanged {
        let answered = |reply| Exchanged {
            reply,
            not_json: false,
            forbidden: None,
        };
        // Where the work finishes should it wait: a session of its own.
        let (sessionless, new_session): (_, fn(&_, _, _) -> Session) = match dialect {
            Dialect::Revision2026 => (&self.sessionless_2026, |server, out, stop| {
                Session::revision_2026(server, out, stop, false)
            }),
            _ => (&self.sessionless_v1, Session::implicit),
        };
        // One message, most often answered at once: no session is built.
        let parsed = match parsed {
            crate::jsonrpc::Parsed::Single(message) if !stop.is_cancelled() => {
                return match session::alone(sessionless, message, caller) {
                    Alone::Answered(reply) => answered(reply.map(|r| r.bytes)),
                    Alone::Forbidden(reply, needed) => Exchanged {
                        forbidden: Some(needed),
                        ..answered(Some(reply.bytes))
                    },
                    // (Only a 2026-07-28 request listens; MCP v1.0 has no
                    // listen streams.)
                    Alone::Listening(listening) => {
                        let error = RpcError::invalid_request(
                            "subscriptions/listen needs a stream of its own; a body served \
                             alone is answered with one reply",
                        );
                        answered(Some(dialect.error(Some(&listening.id), &error).bytes))
                    }
                    Alone::Running(job) => {
                        let (out, replies) = crate::session::outbox::channel(8, usize::MAX);
                        let session = new_session(&self.inner, out, stop.clone());
                        let run = session.run_dispatched(Dispatched::Run(job), body.len());
                        answered(tokio::join!(run, the_reply(replies)).1)
                    }
                };
            }
            parsed => parsed,
        };
        let (out, replies) = crate::session::outbox::channel(8, usize::MAX);
        let session = new_session(&self.inner, out, stop.clone()).with_caller(caller.clone());
        let (not_json, reply) = tokio::join!(session.run_parsed(body, parsed), the_reply(replies));
        Exchanged {
            not_json,
            ..answered(reply)
        }
    }

    /// The state a 2026-07-28 request served without a session shares.
    #[cfg(feature = "http")]
    pub(crate) fn sessionless_2026(&self) -> &Arc<Shared> {
        &self.sessionless_2026
    }

    pub(crate) fn inner(&self) -> &Arc<ServerInner> {
        &self.inner
    }
}

/// What a body served alone came to.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) struct Exchanged {
    /// The reply, if the body gets one.
    pub(crate) reply: Option<Vec<u8>>,
    /// The body was not JSON at all.
    pub(crate) not_json: bool,
    /// Its one request was refused for want of these scopes (the reply is
    /// the JSON-RPC error).
    pub(crate) forbidden: Option<Box<[String]>>,
}

/// The answer among what a session serving one body writes, read while it
/// runs, until it is done: a request's reply, or a batch's replies. A
/// request served alone sends its notifications (progress, log lines)
/// through the sessionless state, which has no output: they have no stream
/// to go to. Anything else the session writes is passed over.
async fn the_reply(
    mut written: crate::session::bounded::BoundedReceiver<Outgoing>,
) -> Option<Vec<u8>> {
    let mut reply = None;
    while let Some(message) = written.recv().await {
        if !message.is_answer() {
            continue;
        }
        if reply.is_none() {
            reply = Some(message.bytes);
        } else {
            tracing::error!(
                bytes = message.bytes.len(),
                "a session serving one body answered it twice"
            );
        }
    }
    reply
}

/// How long a sealed 2026-07-28 `requestState` may be retried, by default.
pub const DEFAULT_REQUEST_STATE_TTL: Duration = Duration::from_secs(600);
/// How long 2026-07-28 clients may cache lists, by default.
pub const DEFAULT_LIST_TTL: Duration = Duration::from_secs(60);

/// Reads a list of 2026-07-28 state keys as `CLAWMCP_REQUEST_STATE_KEYS` holds it:
/// 32-byte keys in hex, comma-separated, the sealing one first
/// ([`ServerBuilder::request_state_keys`]).
///
/// ```
/// let keys = clawmcp::server::request_state_keys_from_hex(&"ab".repeat(32))?;
/// assert_eq!(keys, vec![[0xab; 32]]);
/// assert!(clawmcp::server::request_state_keys_from_hex("not hex").is_err());
/// # Ok::<(), clawmcp::BuildError>(())
/// ```
///
/// # Errors
/// [`BuildError::RequestStateKeys`] when an entry is not 64 hex digits.
pub fn request_state_keys_from_hex(list: &str) -> Result<Vec<[u8; 32]>, BuildError> {
    crate::dialect::keys_from_hex(list).map_err(BuildError::RequestStateKeys)
}

/// Registers tools, resources and prompts, then [`build`](Self::build)s a
/// [`Server`]. Every setter takes and returns the builder.
///
/// ```
/// use clawmcp::{Server, TextResource};
///
/// let server = Server::builder()
///     .name("notes")
///     .version("1.2.0")
///     .resource(TextResource::new(
///         "mcp://notes/resources/readme", "readme", "Read me first.", "text/plain", "Hello.",
///     ))
///     .build()
///     .expect("a valid server");
/// # drop(server);
/// ```
#[must_use]
pub struct ServerBuilder {
    name: String,
    version: String,
    instructions: Option<String>,
    tools: Vec<RegisteredTool>,
    resources: Vec<Arc<dyn Resource>>,
    templates: Vec<ResourceTemplate>,
    prompts: Vec<Arc<dyn Prompt>>,
    prompt_completers: Vec<(String, String, Arc<dyn Complete>)>,
    states: std::collections::HashMap<std::any::TypeId, Box<dyn std::any::Any + Send + Sync>>,
    providers: Providers,
    protocols: Protocols,
    page_size: usize,
    limits: Limits,
    access: AccessRules,
    handle: ServerHandle,
    /// The indices in `tools` of Model Context Protocol–only tools.
    by_name_only: Vec<usize>,
    /// Extensions the capabilities declare, by identifier.
    extensions: serde_json::Map<String, serde_json::Value>,
    /// The 2026-07-28 revision's state keys (none: one random key).
    request_state_keys: Vec<[u8; 32]>,
    request_state_ttl: Duration,
    cache: CacheHints,
    tasks: crate::task::TaskSettings,
}

impl Default for ServerBuilder {
    fn default() -> Self {
        Self {
            name: env!("CARGO_PKG_NAME").to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            instructions: None,
            tools: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            prompts: Vec::new(),
            prompt_completers: Vec::new(),
            states: std::collections::HashMap::new(),
            providers: Providers::default(),
            protocols: Protocols::Both,
            page_size: DEFAULT_PAGE_SIZE,
            limits: Limits {
                max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
                max_header_size: DEFAULT_MAX_HEADER_SIZE,
                max_in_flight: DEFAULT_MAX_IN_FLIGHT,
                max_queued_output: DEFAULT_MAX_QUEUED_OUTPUT,
                tool_time_limit: Some(DEFAULT_TOOL_TIME_LIMIT),
                shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
                client_request_timeout: DEFAULT_CLIENT_REQUEST_TIMEOUT,
                max_subscriptions: DEFAULT_MAX_SUBSCRIPTIONS,
                max_uri_length: DEFAULT_MAX_URI_LENGTH,
                max_in_flight_bytes: DEFAULT_MAX_IN_FLIGHT_BYTES,
            },
            access: AccessRules::default(),
            handle: ServerHandle::new(),
            by_name_only: Vec::new(),
            extensions: serde_json::Map::new(),
            request_state_keys: Vec::new(),
            request_state_ttl: DEFAULT_REQUEST_STATE_TTL,
            tasks: crate::task::TaskSettings::default(),
            cache: CacheHints {
                lists: DEFAULT_LIST_TTL,
                reads: Duration::ZERO,
                per_resource: std::collections::HashMap::new(),
            },
        }
    }
}

impl ServerBuilder {
    /// The `serverInfo.name` announced by `initialize` (default: `clawmcp`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The `serverInfo.version` announced by `initialize` (default: this crate's version).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// Registers a tool. Tools are listed in registration order.
    pub fn tool(mut self, tool: impl Tool) -> Self {
        self.tools.push(RegisteredTool::new(tool));
        self
    }

    /// Registers a tool that only the Model Context Protocol lists and
    /// calls (MCP v1.0 does not see it): one that needs what only that
    /// protocol has, such as questions to the client
    /// ([`ToolContext::elicit`](crate::ToolContext::elicit)).
    pub fn model_context_tool(mut self, tool: impl Tool) -> Self {
        self.by_name_only.push(self.tools.len());
        self.tools.push(RegisteredTool::new(tool));
        self
    }

    /// Declares an extension of the Model Context Protocol in the server's
    /// capabilities (`capabilities.extensions`, in `initialize` and
    /// `server/discover`): its identifier, with a mandatory prefix
    /// (`io.modelcontextprotocol/tasks`), and its settings (an object; `{}`
    /// for none). An identifier without a `/`, or settings that are not an
    /// object, fail [`build`](Self::build).
    ///
    /// ```
    /// use serde_json::json;
    ///
    /// let server = clawmcp::Server::builder()
    ///     .extension("com.example/audit", json!({"level": "full"}))
    ///     .build()?;
    /// # let _ = server;
    /// # Ok::<(), clawmcp::BuildError>(())
    /// ```
    pub fn extension(mut self, name: impl Into<String>, settings: serde_json::Value) -> Self {
        self.extensions.insert(name.into(), settings);
        self
    }

    /// Registers a resource. Resources are listed in registration order.
    pub fn resource(mut self, resource: impl Resource) -> Self {
        self.resources.push(Arc::new(resource));
        self
    }

    /// Registers a prompt. Prompts are listed in registration order.
    pub fn prompt(mut self, prompt: impl Prompt) -> Self {
        self.prompts.push(Arc::new(prompt));
        self
    }

    /// Registers a resource template (Model Context Protocol:
    /// `resources/templates/list`, and `resources/read` of any URI it
    /// matches). Templates are listed, and tried, in registration order.
    pub fn resource_template(mut self, template: ResourceTemplate) -> Self {
        self.templates.push(template);
        self
    }

    /// Completes values of `argument` of the prompt named `prompt` for
    /// `completion/complete` (Model Context Protocol). The prompt must
    /// declare the argument ([`Prompt::arguments`]).
    pub fn complete_prompt_argument(
        mut self,
        prompt: impl Into<String>,
        argument: impl Into<String>,
        completer: impl Complete,
    ) -> Self {
        self.prompt_completers
            .push((prompt.into(), argument.into(), Arc::new(completer)));
        self
    }

    /// Registers a state value that tools share: typed tools take it with
    /// the [`State`](crate::state::State) extractor, any tool reaches it
    /// through [`ToolContext::state`](crate::ToolContext::state). One value
    /// per type (a second replaces the first); `build()` fails when a tool
    /// needs a type that was not registered. See [`crate::state`].
    pub fn state<S: Send + Sync + 'static>(mut self, value: S) -> Self {
        self.states
            .insert(std::any::TypeId::of::<S>(), Box::new(value));
        self
    }

    /// Instructions for the model on how to use this server, sent in the
    /// Model Context Protocol's `initialize` result (default: none).
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// The keys that seal the state of a 2026-07-28 request that waits for
    /// its client's answers (`requestState`, AES-256-GCM): the first seals,
    /// every one opens. Give every process of one deployment the same
    /// list, so that a retry can reach any of them; to rotate, put a new
    /// key first and drop the old one once states sealed with it have
    /// expired. By default each process seals with a random key of its own
    /// (retries then reach only the process that answered).
    /// [`request_state_keys_from_hex`] reads a list as `CLAWMCP_REQUEST_STATE_KEYS` holds it.
    pub fn request_state_keys(mut self, keys: impl IntoIterator<Item = [u8; 32]>) -> Self {
        self.request_state_keys = keys.into_iter().collect();
        self
    }

    /// How long a sealed `requestState` may be retried (default: 10
    /// minutes); an older one is refused.
    pub fn request_state_ttl(mut self, ttl: Duration) -> Self {
        self.request_state_ttl = ttl;
        self
    }

    /// How long a 2026-07-28 client may cache the lists and the
    /// `server/discover` result (`ttlMs`; default: 1 minute).
    pub fn list_ttl(mut self, ttl: Duration) -> Self {
        self.cache.lists = ttl;
        self
    }

    /// How long a 2026-07-28 client may cache a resource it read
    /// (`ttlMs`; default: 0, immediately stale: content may change at any
    /// time). [`resource_ttl`](Self::resource_ttl) sets one resource's.
    pub fn read_ttl(mut self, ttl: Duration) -> Self {
        self.cache.reads = ttl;
        self
    }

    /// How long a 2026-07-28 client may cache resource `uri` (instead of
    /// [`read_ttl`](Self::read_ttl)).
    pub fn resource_ttl(mut self, uri: impl Into<String>, ttl: Duration) -> Self {
        self.cache.per_resource.insert(uri.into(), ttl);
        self
    }

    /// Which wire dialects the server speaks (default: both, chosen per
    /// connection — docs/model-context.md §1).
    pub fn protocols(mut self, protocols: Protocols) -> Self {
        self.protocols = protocols;
        self
    }

    /// How many items one page of a Model Context Protocol list holds
    /// (default 100, at least 1); longer lists carry a `nextCursor`.
    pub fn page_size(mut self, items: usize) -> Self {
        self.page_size = items.max(1);
        self
    }

    /// How long a client gets to answer a request a tool sends it
    /// (elicitation, sampling, roots) before the tool's call fails with
    /// [`ClientError::TimedOut`](crate::client::ClientError::TimedOut)
    /// (default 5 minutes).
    pub fn client_request_timeout(mut self, timeout: Duration) -> Self {
        self.limits.client_request_timeout = timeout;
        self
    }

    /// Announces `listToolsProvider` and `executionProvider` even with no
    /// tool registered (default: only when a tool is registered).
    pub fn tools_provider(mut self, on: bool) -> Self {
        self.providers.tools = on;
        self
    }

    /// Announces `listResourcesProvider` even with no resource registered
    /// (default: only when a resource is registered).
    pub fn resources_provider(mut self, on: bool) -> Self {
        self.providers.resources = on;
        self
    }

    /// Announces `listPromptsProvider` even with no prompt registered
    /// (default: only when a prompt is registered).
    pub fn prompts_provider(mut self, on: bool) -> Self {
        self.providers.prompts = on;
        self
    }

    /// The size limit of one message in bytes (default 4 MiB). A larger
    /// message is skipped unread and answered `-32006` in MCP v1.0,
    /// `-32600` in the Model Context Protocol (over HTTP, a body past it
    /// gets `413`).
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.limits.max_message_size = bytes;
        self
    }

    /// The size limit of one stdio frame header block in bytes (default
    /// 8 KiB). A longer one is answered `-32700` and skipped.
    pub fn max_header_size(mut self, bytes: usize) -> Self {
        self.limits.max_header_size = bytes;
        self
    }

    /// How many requests one session may have in flight (default 64, from
    /// 1 to 65,536). Past it a request waits, in order, until one finishes;
    /// the session reads on (so that a cancellation takes effect) while
    /// fewer than 64 requests wait and they hold less than one
    /// [message limit](Self::max_message_size) of bytes, then reads nothing
    /// more until one starts.
    pub fn max_in_flight(mut self, requests: usize) -> Self {
        self.limits.max_in_flight = requests.clamp(1, 1 << 16);
        self
    }

    /// How many bytes of requests one principal may have in flight in this
    /// process, over all its sessions and exchanges (default
    /// [`DEFAULT_MAX_IN_FLIGHT_BYTES`], 64 MiB). A request that waits (on
    /// a slow tool, or on the client's answer to the tool's question)
    /// holds its arguments until it ends; [`max_in_flight`](Self::max_in_flight)
    /// bounds how many one session has, this how large they are for one
    /// client. A principal is a token's issuer, subject and client, else
    /// the client's address over HTTP (the peer's, or the one a trusted
    /// proxy names: [`HttpConfig::trust_proxy`](crate::transport::HttpConfig::trust_proxy));
    /// on stdio nothing is counted (the one
    /// client is the parent process). A request of 16 KiB or more is
    /// counted by its params' size (a tool call's arguments); smaller ones
    /// are bounded by `max_in_flight` per session only. One that would
    /// pass the bound is refused before it runs (`-32006` in MCP v1.0,
    /// `-32600` else), naming the bound. A request alone passes whatever
    /// its size.
    pub fn max_in_flight_bytes_per_principal(mut self, bytes: usize) -> Self {
        self.limits.max_in_flight_bytes = bytes.max(1);
        self
    }

    /// How many bytes of one session's output may wait for its client to
    /// read them, on stdio and over HTTP (default 8 MiB; a larger message
    /// waits alone). On stdio, messages under 16 KiB (less when the bound is
    /// small) take a share of it set aside by the bound of 256 messages, at
    /// most half; the larger ones wait for the rest, in order.
    /// Past it the session's work waits to send, and the session reads no
    /// more input, so a client that reads nothing holds no more of the
    /// server's memory than this (and its requests in flight).
    ///
    /// It also bounds the replies of one batch (MCP v1.0, and the
    /// 2025-03-26 revision), on every transport: a member whose reply
    /// would pass it gets an error in its place (`-32006` in MCP v1.0,
    /// `-32600` else) saying that it ran, and the members not yet started
    /// then do not run (members run concurrently). The first reply passes
    /// whatever its size.
    pub fn max_queued_output(mut self, bytes: usize) -> Self {
        self.limits.max_queued_output = bytes.max(1);
        self
    }

    /// How many resources one session may be subscribed to at once
    /// (default 256, at least 1), and one 2026-07-28
    /// `subscriptions/listen` stream may ask for. A subscription past it is
    /// refused with `-32602`, naming the limit; unsubscribing frees a place.
    pub fn max_subscriptions(mut self, subscriptions: usize) -> Self {
        self.limits.max_subscriptions = subscriptions.max(1);
        self
    }

    /// Where tasks are kept ([`crate::task`]): by default
    /// [`MemoryTaskStore`](crate::task::MemoryTaskStore), this process's
    /// memory. A store the deployment's processes share lets any of them
    /// read, answer and cancel a task.
    pub fn task_store(mut self, store: impl crate::task::TaskStore) -> Self {
        self.tasks.store = Arc::new(store);
        self
    }

    /// How long an ended task is kept for `tasks/get` (default one hour;
    /// `None`: for as long as the store keeps it, which for Redis is for
    /// ever, each ended task counting against its principal's bound of
    /// tasks until it goes; so is one past about 100 years in Redis).
    /// Its `ttlMs` counts from its
    /// creation and grows when it ends, so that it says when the task goes.
    pub fn task_ttl(mut self, ttl: Option<Duration>) -> Self {
        self.tasks.ttl = ttl;
        self
    }

    /// How often clients are asked to poll a task (`pollIntervalMs`,
    /// default 500 ms).
    pub fn task_poll_interval(mut self, interval: Duration) -> Self {
        self.tasks.poll_interval = interval;
        self
    }

    /// The most tasks one principal holds at once, running or kept
    /// (default 1000, at least 1). A principal is a token's issuer,
    /// subject and client; without a token, the client's address over HTTP
    /// (an IPv6 client by its /64; behind a reverse proxy, the one it
    /// names if trusted: [`HttpConfig::trust_proxy`](crate::transport::HttpConfig::trust_proxy)),
    /// and on stdio the one client. A call past it is
    /// refused with `-32600`, naming the bound.
    pub fn max_tasks_per_principal(mut self, tasks: usize) -> Self {
        self.tasks.max_per_principal = tasks.max(1);
        self
    }

    /// The most bytes one principal's tasks hold in this process at once
    /// (default [`DEFAULT_MAX_TASK_BYTES`](crate::task::DEFAULT_MAX_TASK_BYTES),
    /// 64 MiB): the arguments of those that run, and the state of each
    /// (its questions; once ended, its result or error) until its time to
    /// live has passed, counted as JSON. Principals are as for
    /// [`max_tasks_per_principal`](Self::max_tasks_per_principal). A call
    /// that would pass it is refused with `-32600`, naming the bound and
    /// what is held; a task alone passes whatever its size. The process
    /// holds a few times what is counted (a state's copies, the call's
    /// own); several processes sharing a store each count what they run.
    pub fn max_task_bytes_per_principal(mut self, bytes: usize) -> Self {
        self.tasks.max_bytes_per_principal = bytes.max(1) as u64;
        self
    }

    /// The longest URI a session may subscribe to, in bytes (default
    /// 2 KiB). A longer one the server has (a template may match one) is
    /// refused with `-32602`, naming the limit; one it does not have is
    /// not found first (`-32002`), as any other.
    pub fn max_uri_length(mut self, bytes: usize) -> Self {
        self.limits.max_uri_length = bytes.max(1);
        self
    }

    /// How long one tool execution may run (default 5 minutes; `None`: no
    /// limit). A tool past it is stopped (its future dropped, its context's
    /// cancellation fired) and answered `-32004` in MCP v1.0, a result with
    /// `isError: true` in the Model Context Protocol. A tool's own
    /// [`Tool::time_limit`] takes precedence.
    pub fn tool_time_limit(mut self, limit: impl Into<Option<Duration>>) -> Self {
        self.limits.tool_time_limit = limit.into();
        self
    }

    /// How long requests in flight may take to finish once shutdown begins
    /// (default 10 s), and, in the Model Context Protocol, once a stdio
    /// client's input has ended; past it they are stopped and answered as
    /// requests that arrive after shutdown began are: `-32005` in MCP v1.0,
    /// `-32603` (with `data` "server shutting down") in the Model Context
    /// Protocol.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.limits.shutdown_grace = grace;
        self
    }

    /// The bus that carries this server's announcements (resource
    /// updates, shared content, list changes) to the other processes of
    /// its deployment, and theirs to it (default:
    /// [`LocalBus`](crate::bus::LocalBus), one process). With
    /// `bus::RedisBus` (feature `redis`), a change made on any process
    /// reaches every stream on every process; see the README's "Running
    /// several processes".
    pub fn bus(self, bus: impl crate::bus::Bus) -> Self {
        self.handle.set_bus(Arc::new(bus));
        self
    }

    /// The handle the built server will have, for code that needs it
    /// before the server exists.
    pub fn handle(&self) -> ServerHandle {
        self.handle.clone()
    }

    /// Requires OAuth scopes of an item (docs/oauth.md §4): `item` is a
    /// tool's name or mcpId, a resource's URI, a resource template's
    /// pattern or name, or a prompt's name or mcpId — every item it names.
    /// A request whose verified token lacks one of them is refused: over
    /// HTTP with `403` and an `insufficient_scope` challenge naming every
    /// scope the request needs, or, where a response has already begun, a
    /// JSON-RPC error `-32007`. Scopes add up over calls. A request with no
    /// verified token (stdio, or HTTP without OAuth) is not checked. An
    /// `item` that names nothing fails [`build`](Self::build).
    ///
    /// ```
    /// use clawmcp::{Server, ToolError, tool_fn};
    /// use clawmcp::definition::ToolDefinition;
    /// use serde_json::json;
    ///
    /// let writer = tool_fn(
    ///     ToolDefinition {
    ///         mcp_id: "mcp://example/tools/file-writer".into(),
    ///         name: "file-writer".into(),
    ///         description: "Writes a file.".into(),
    ///         input_schema: json!({"type": "object"}),
    ///         output_schema: json!({}),
    ///     },
    ///     |_args, _ctx| async { Ok::<_, ToolError>(json!("written")) },
    /// );
    /// let server = Server::builder()
    ///     .tool(writer)
    ///     .require_scopes("file-writer", ["files:write"])
    ///     .build()
    ///     .unwrap();
    /// # let _ = server;
    /// assert!(Server::builder().require_scopes("nothing", ["x"]).build().is_err());
    /// ```
    pub fn require_scopes<I, S>(mut self, item: impl Into<String>, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.access
            .required
            .push((item.into(), scopes.into_iter().map(Into::into).collect()));
        self
    }

    /// A scope hierarchy: `grants(granted, required)` says whether the
    /// granted scopes satisfy one required scope (default: it is among
    /// them, exactly).
    ///
    /// ```
    /// // `files:*` grants every `files:` scope.
    /// let builder = clawmcp::Server::builder().scope_grants(|granted, required| {
    ///     granted.iter().any(|g| {
    ///         g == required
    ///             || g.strip_suffix('*').is_some_and(|prefix| required.starts_with(prefix))
    ///     })
    /// });
    /// # let _ = builder.build().unwrap();
    /// ```
    pub fn scope_grants(
        mut self,
        grants: impl Fn(&[String], &str) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.access.grants = Some(std::sync::Arc::new(grants));
        self
    }

    /// Whether lists (`tools/list`, `mcp/listTools`, …) leave out the items
    /// a request's verified token lacks the scopes for (default: `false`,
    /// every item is listed and refused when used). MCP v1.0's
    /// `mcp/listResources` and `mcp/listPrompts`, which carry the content,
    /// always leave them out.
    pub fn hide_unusable_items(mut self, hide: bool) -> Self {
        self.access.hide_unusable = hide;
        self
    }

    /// Checks every item (docs/mcp-v1.md §6: absolute, unique mcpIds; valid
    /// schemas, the input schema an object schema; with the Model Context
    /// Protocol on, docs/model-context.md §3: valid, unique tool names and unique
    /// prompt names), compiles the schemas and serialises the fixed lists
    /// of each dialect once.
    pub fn build(self) -> Result<Server, BuildError> {
        if let Some((name, _)) = self.extensions.iter().find(|(name, settings)| {
            !settings.is_object() || !name.contains('/') || name.starts_with('/')
        }) {
            return Err(BuildError::InvalidExtension(name.clone()));
        }
        let mut providers = self.providers;
        providers.tools |= !self.tools.is_empty();
        providers.resources |= !self.resources.is_empty();
        providers.prompts |= !self.prompts.is_empty();
        let blueprint = Blueprint {
            items: catalog::Items {
                tools: self.tools,
                by_name_only: self.by_name_only,
                resources: self.resources,
                templates: self.templates,
                prompts: self.prompts,
                prompt_completers: self.prompt_completers,
            },
            access: self.access,
            tool_time_limit: self.limits.tool_time_limit,
            model_context: self.protocols.model_context(),
            providers,
            instructions: self.instructions,
            page_size: self.page_size,
            extensions: self.extensions,
        };
        self.handle.states().set(self.states);
        let info = ServerInfo {
            name: self.name,
            version: self.version,
        };
        let listing = blueprint.compile(&info, self.handle.states(), true)?;
        for (_, resource) in &listing.catalog.resources {
            resource.bind(&self.handle);
        }
        let keys = if self.request_state_keys.is_empty() {
            RequestStateKeys::random().map_err(|e| BuildError::RequestStateKeys(e.to_string()))?
        } else {
            RequestStateKeys::new(&self.request_state_keys)
                .ok_or_else(|| BuildError::RequestStateKeys("no key".into()))?
        };
        let server_info = crate::dialect::raw(&info);
        let inner = Arc::new(ServerInner {
            info,
            listings: Listings::new(listing, blueprint),
            protocols: self.protocols,
            limits: self.limits,
            handle: self.handle,
            revision_2026: Revision2026Settings {
                server_info,
                keys,
                request_state_ttl: self.request_state_ttl,
                cache: self.cache,
            },
            tasks: self.tasks,
            in_flight: Arc::default(),
        });
        let served: Arc<dyn crate::handle::Served> = inner.clone();
        inner.handle.set_served(Arc::downgrade(&served));
        inner.handle.start_bus();
        let sessionless_v1 = Arc::new(Shared::sessionless(inner.clone(), Dialect::McpV1));
        let sessionless_2026 = Arc::new(Shared::sessionless(inner.clone(), Dialect::Revision2026));
        Ok(Server {
            inner,
            sessionless_v1,
            sessionless_2026,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definition::ToolDefinition;
    use crate::tool::{ToolContext, tool_fn};
    use serde_json::{Value, json};

    fn definition(name: &str) -> ToolDefinition {
        ToolDefinition {
            mcp_id: format!("mcp://test/tools/{name}:v1"),
            name: name.into(),
            description: name.into(),
            input_schema: json!({"type": "object"}),
            output_schema: json!({"type": "object"}),
        }
    }

    fn server() -> Server {
        let at_once = tool_fn(
            definition("at-once"),
            |_: Value, ctx: ToolContext| async move { Ok(json!({"id": ctx.request_id().to_string()})) },
        );
        let waits = tool_fn(
            definition("waits"),
            |_: Value, ctx: ToolContext| async move {
                tokio::task::yield_now().await;
                Ok(json!({"id": ctx.request_id().to_string()}))
            },
        );
        let blocks =
            tool_fn(
                definition("blocks"),
                |_: Value, ctx: ToolContext| async move {
                    Ok(json!({"id": ctx.request_id().to_string()}))
                },
            )
            .blocking();
        Server::builder()
            .tool(at_once)
            .tool(waits)
            .tool(blocks)
            .build()
            .unwrap()
    }

    fn call(id: u32, tool: &str) -> String {
        json!({"jsonrpc": "2.0", "id": id, "method": "mcp/executeTool",
               "params": {"id": format!("mcp://test/tools/{tool}:v1"), "arguments": {}}})
        .to_string()
    }

    /// A single exchange's request is answered alike whether its work ends
    /// on the first poll (served without a session), waits, or may block
    /// (both finish in a session of their own) — and the shared state the
    /// first kind uses keeps nothing from one exchange to the next.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_single_exchange_is_answered_however_its_work_runs() {
        let server = server();
        for round in 0..3 {
            for (n, tool) in ["at-once", "waits", "blocks"].into_iter().enumerate() {
                let id = round * 10 + u32::try_from(n).unwrap();
                let reply = server.serve_message(call(id, tool)).await.unwrap();
                let reply: Value = serde_json::from_slice(&reply).unwrap();
                assert_eq!(reply["id"], id, "{tool}");
                assert_eq!(reply["result"]["output"]["id"], id.to_string(), "{tool}");
            }
        }
        let sessionless = &server.sessionless_v1;
        assert!(sessionless.out.is_closed());
        assert!(!sessionless.trace_on());
        assert_eq!(
            Arc::strong_count(sessionless),
            1,
            "a job kept the shared state"
        );
    }
}
