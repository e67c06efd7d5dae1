//! The [`Server`] and its [`ServerBuilder`]: items are registered on the
//! builder, checked and compiled once by [`ServerBuilder::build`], and
//! served by any number of sessions at once.

mod dispatch;
mod handshake;
mod job;
mod push;
mod session;
mod shared;
mod validate;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use jsonschema::Validator;
use serde_json::value::RawValue;

pub use push::ServerHandle;
pub(crate) use session::Session;
pub use session::{Input, MAX_PARKED};

use crate::error::BuildError;
use crate::prompt::Prompt;
use crate::protocol::{
    ExecutionProvider, InitializeResult, PromptDefinition, ServerCapabilities, ServerInfo,
    ToolDefinition,
};
use crate::resource::{Resource, ResourceInfo};
use crate::tool::Tool;

/// The default size limit of one message: 4 MiB (PROTOCOL.md §2, `-32006`).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 4 * 1024 * 1024;
/// The default number of requests in flight per session (PROTOCOL.md §1).
pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;
/// The default time limit of one tool execution: 5 minutes (`-32004` past it).
pub const DEFAULT_TOOL_TIME_LIMIT: Duration = Duration::from_secs(300);
/// The default time requests in flight get to finish once shutdown begins: 10 s.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// A built MCP server: cheap to clone, served by transports — stdio
/// ([`Server::serve_stdio`], [`Server::serve_io`] and their `_until`
/// forms), HTTP (`Server::serve_http`, `Server::http_service`) — or one
/// message at a time ([`Server::handle_message`]).
#[derive(Clone)]
pub struct Server {
    inner: Arc<ServerInner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("info", &self.inner.info)
            .field("tools", &self.inner.tools.len())
            .field("resources", &self.inner.resources.len())
            .field("capabilities", &self.inner.capabilities)
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

    /// The capabilities `initialize` announces, derived from what was registered.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.inner.capabilities
    }

    /// The size limit of one message, in bytes.
    pub fn max_message_size(&self) -> usize {
        self.inner.limits.max_message_size
    }

    /// The size limit of one stdio frame header block, in bytes.
    pub fn max_header_size(&self) -> usize {
        self.inner.limits.max_header_size
    }

    /// Serves one message body (an object or a batch) as an implicit,
    /// already-initialized session — the HTTP single exchange — and returns
    /// the reply, or `None` when the body held only notifications. For
    /// transports of your own (a message queue, a WebSocket, …).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = clawmcp::Server::builder().prompts_provider(true).build().unwrap();
    /// let reply = server.handle_message(r#"{"jsonrpc":"2.0","method":"mcp/listPrompts","id":7}"#).await;
    /// assert_eq!(reply.as_deref(), Some(&br#"{"jsonrpc":"2.0","id":7,"result":[]}"#[..]));
    /// assert_eq!(server.handle_message(r#"{"jsonrpc":"2.0","method":"x"}"#).await, None);
    /// # }
    /// ```
    pub async fn handle_message(&self, body: impl Into<bytes::Bytes>) -> Option<Vec<u8>> {
        self.handle_message_until(body, self.inner.handle.stop_token())
            .await
            .0
    }

    /// [`handle_message`](Self::handle_message) in a session that shuts
    /// down with `stop`; also says whether the body was not JSON at all.
    pub(crate) async fn handle_message_until(
        &self,
        body: impl Into<bytes::Bytes>,
        stop: &Arc<tokio_util::sync::CancellationToken>,
    ) -> (Option<Vec<u8>>, bool) {
        let (out, mut replies) = tokio::sync::mpsc::channel(2);
        let not_json = Session::implicit(self, out, stop.clone())
            .run_one(Input::Message(body.into()))
            .await;
        let reply = replies.recv().await;
        while let Some(extra) = replies.recv().await {
            tracing::error!(
                bytes = extra.len(),
                "an implicit session wrote more than one message"
            );
        }
        (reply, not_json)
    }

    pub(crate) fn inner(&self) -> &Arc<ServerInner> {
        &self.inner
    }
}

/// Limits that protect a server from its clients.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) max_message_size: usize,
    pub(crate) max_header_size: usize,
    pub(crate) max_in_flight: usize,
    pub(crate) tool_time_limit: Option<Duration>,
    pub(crate) shutdown_grace: Duration,
}

/// A registered tool with its compiled schemas.
pub(crate) struct CompiledTool {
    pub(crate) mcp_id: String,
    pub(crate) tool: Arc<dyn Tool>,
    pub(crate) time_limit: Option<Duration>,
    pub(crate) may_block: bool,
    pub(crate) input: Validator,
    pub(crate) output: Validator,
}

/// Everything a session needs, immutable once built (but for the handle's
/// session registry).
pub(crate) struct ServerInner {
    pub(crate) info: ServerInfo,
    pub(crate) capabilities: ServerCapabilities,
    /// The `initialize` result, serialised once.
    pub(crate) initialize_result: Box<RawValue>,
    pub(crate) tools: Vec<CompiledTool>,
    pub(crate) tool_index: HashMap<String, usize, IdHasher>,
    /// The `mcp/listTools` result, serialised once.
    pub(crate) tool_list: Box<RawValue>,
    pub(crate) resources: Vec<(ResourceInfo, Arc<dyn Resource>)>,
    /// The `mcp/listPrompts` result, serialised once.
    pub(crate) prompt_list: Box<RawValue>,
    pub(crate) limits: Limits,
    pub(crate) handle: ServerHandle,
}

/// Capabilities announced even without items of their kind.
#[derive(Debug, Clone, Copy, Default)]
struct Providers {
    tools: bool,
    resources: bool,
    prompts: bool,
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
/// assert!(server.capabilities().list_resources_provider);
/// assert!(!server.capabilities().list_tools_provider);
/// ```
#[must_use]
pub struct ServerBuilder {
    name: String,
    version: String,
    tools: Vec<Arc<dyn Tool>>,
    resources: Vec<Arc<dyn Resource>>,
    prompts: Vec<Box<dyn Prompt>>,
    providers: Providers,
    limits: Limits,
    handle: ServerHandle,
}

impl Default for ServerBuilder {
    fn default() -> Self {
        Self {
            name: env!("CARGO_PKG_NAME").to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            tools: Vec::new(),
            resources: Vec::new(),
            prompts: Vec::new(),
            providers: Providers::default(),
            limits: Limits {
                max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
                max_header_size: crate::transport::DEFAULT_MAX_HEADER_SIZE,
                max_in_flight: DEFAULT_MAX_IN_FLIGHT,
                tool_time_limit: Some(DEFAULT_TOOL_TIME_LIMIT),
                shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            },
            handle: ServerHandle::new(),
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
        self.tools.push(Arc::new(tool));
        self
    }

    /// Registers a resource. Resources are listed in registration order.
    pub fn resource(mut self, resource: impl Resource) -> Self {
        self.resources.push(Arc::new(resource));
        self
    }

    /// Registers a prompt. Prompts are listed in registration order.
    pub fn prompt(mut self, prompt: impl Prompt) -> Self {
        self.prompts.push(Box::new(prompt));
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
    /// message is skipped unread and answered `-32006`.
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
    /// 1 to 65,536). Past it the session reads no more input until one
    /// finishes.
    pub fn max_in_flight(mut self, requests: usize) -> Self {
        self.limits.max_in_flight = requests.clamp(1, 1 << 16);
        self
    }

    /// How long one tool execution may run (default 5 minutes; `None`: no
    /// limit). A tool past it is stopped (its future dropped, its context's
    /// cancellation fired) and answered `-32004`. A tool's own
    /// [`Tool::time_limit`] takes precedence.
    pub fn tool_time_limit(mut self, limit: impl Into<Option<Duration>>) -> Self {
        self.limits.tool_time_limit = limit.into();
        self
    }

    /// How long requests in flight may take to finish once shutdown begins
    /// (default 10 s); past it they are stopped and answered `-32005`.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.limits.shutdown_grace = grace;
        self
    }

    /// The handle the built server will have, for code that needs it
    /// before the server exists.
    pub fn handle(&self) -> ServerHandle {
        self.handle.clone()
    }

    /// Checks every item (PROTOCOL.md §6: absolute, unique mcpIds; valid
    /// schemas, the input schema an object schema), compiles the schemas and
    /// serialises the fixed lists once.
    pub fn build(self) -> Result<Server, BuildError> {
        let mut tools = Vec::with_capacity(self.tools.len());
        let mut tool_index = HashMap::default();
        let mut definitions: Vec<ToolDefinition> = Vec::with_capacity(self.tools.len());
        for tool in self.tools {
            let def = tool.definition();
            check_id("tool", &def.mcp_id, tool_index.contains_key(&def.mcp_id))?;
            check_text("tool", &def.mcp_id, "name", &def.name)?;
            check_text("tool", &def.mcp_id, "description", &def.description)?;
            validate::require_object_schema(&def.mcp_id, &def.input_schema)?;
            let input = validate::compile(&def.mcp_id, "inputSchema", &def.input_schema)?;
            let output = validate::compile(&def.mcp_id, "outputSchema", &def.output_schema)?;
            tool_index.insert(def.mcp_id.clone(), tools.len());
            tools.push(CompiledTool {
                mcp_id: def.mcp_id.clone(),
                time_limit: tool.time_limit().or(self.limits.tool_time_limit),
                may_block: tool.may_block(),
                tool,
                input,
                output,
            });
            definitions.push(def);
        }

        let mut resources = Vec::with_capacity(self.resources.len());
        let mut resource_ids = HashSet::new();
        for resource in self.resources {
            let info = resource.info();
            check_id(
                "resource",
                &info.mcp_id,
                resource_ids.contains(&info.mcp_id),
            )?;
            check_text("resource", &info.mcp_id, "name", &info.name)?;
            check_text("resource", &info.mcp_id, "mediaType", &info.media_type)?;
            resource_ids.insert(info.mcp_id.clone());
            resource.bind(&self.handle);
            resources.push((info, resource));
        }

        let mut prompts: Vec<PromptDefinition> = Vec::with_capacity(self.prompts.len());
        let mut prompt_ids = HashSet::new();
        for prompt in &self.prompts {
            let def = prompt.definition();
            check_id("prompt", &def.mcp_id, prompt_ids.contains(&def.mcp_id))?;
            check_text("prompt", &def.mcp_id, "name", &def.name)?;
            prompt_ids.insert(def.mcp_id.clone());
            prompts.push(def);
        }

        let Providers {
            tools: tools_on,
            resources: resources_on,
            prompts: prompts_on,
        } = self.providers;
        let can_execute = tools_on || !tools.is_empty();
        let capabilities = ServerCapabilities {
            list_tools_provider: can_execute,
            list_resources_provider: resources_on || !resources.is_empty(),
            list_prompts_provider: prompts_on || !prompts.is_empty(),
            execution_provider: can_execute.then_some(ExecutionProvider { execute: true }),
        };
        let info = ServerInfo {
            name: self.name,
            version: self.version,
        };
        let initialize_result = raw(&InitializeResult {
            capabilities: capabilities.clone(),
            server_info: info.clone(),
        });
        self.handle.registry().set_resource_ids(resource_ids);
        Ok(Server {
            inner: Arc::new(ServerInner {
                info,
                capabilities,
                initialize_result,
                tool_list: raw(&definitions),
                tools,
                tool_index,
                resources,
                prompt_list: raw(&prompts),
                limits: self.limits,
                handle: self.handle,
            }),
        })
    }
}

/// FNV-1a: a fast hasher for the short keys of the hot path (mcpIds,
/// request ids), which come from the server's own registrations or from one
/// client's own session, so flooding one bucket only slows that client.
#[derive(Clone, Copy, Default)]
pub(crate) struct IdHasher;

impl std::hash::BuildHasher for IdHasher {
    type Hasher = Fnv;

    fn build_hasher(&self) -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

/// The state of [`IdHasher`].
pub(crate) struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Serialises a fixed value once. The protocol types always serialise.
fn raw<T: serde::Serialize>(value: &T) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).unwrap_or_else(|e| {
        tracing::error!("serialising a fixed list failed: {e}");
        RawValue::from_string("null".into()).unwrap_or_default()
    })
}

/// PROTOCOL.md §6: an mcpId is an absolute URI, unique within its kind.
fn check_id(kind: &'static str, mcp_id: &str, taken: bool) -> Result<(), BuildError> {
    if !is_absolute_uri(mcp_id) {
        return Err(BuildError::MalformedMcpId {
            kind,
            mcp_id: mcp_id.to_owned(),
        });
    }
    if taken {
        return Err(BuildError::DuplicateMcpId {
            kind,
            mcp_id: mcp_id.to_owned(),
        });
    }
    Ok(())
}

fn check_text(
    kind: &'static str,
    mcp_id: &str,
    field: &'static str,
    text: &str,
) -> Result<(), BuildError> {
    if text.trim().is_empty() {
        return Err(BuildError::EmptyField {
            kind,
            mcp_id: mcp_id.to_owned(),
            field,
        });
    }
    Ok(())
}

/// `scheme ":" rest`, RFC 3986's scheme syntax, a non-empty rest without
/// white space or control characters.
fn is_absolute_uri(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && !rest.chars().any(|c| c.is_whitespace() || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_uris() {
        for ok in ["mcp://a/b:v1", "urn:x", "mcp+x://a", "a.b-c:d"] {
            assert!(is_absolute_uri(ok), "{ok}");
        }
        for bad in [
            "",
            "no-scheme",
            "/abs/path",
            "1mcp://a",
            "mcp:",
            "mcp://a b",
            ":x",
            "mc p://a",
        ] {
            assert!(!is_absolute_uri(bad), "{bad}");
        }
    }
}
