//! The [`Tool`] trait a server author implements, the [`ToolContext`] each
//! execution receives (in `context.rs`, with everything it can do), and
//! [`tool_fn`] for tools written as closures.

use std::future::Future;
use std::marker::PhantomData;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use crate::content::ToolOutput;
use crate::definition::{ToolDefinition, ToolMetadata};
use crate::error::ToolError;

mod context;

#[cfg(feature = "http")]
pub use context::RequestHeaders;
pub(crate) use context::{CancelReason, ClientLink, ClientRequest, ContextSource, LazyContext};
pub use context::{Cancellation, Keyed, ToolContext};

/// A tool that clients run (`mcp/executeTool` in MCP v1.0, `tools/call` in
/// the Model Context Protocol, where it is called by its `name`).
///
/// [`definition`](Tool::definition) is read once, when the server is built:
/// its schemas are checked and compiled then. [`call`](Tool::call) receives
/// arguments that already passed `inputSchema`; what it returns — a
/// [`ToolOutput`]: structured output (any `serde_json::Value` converts),
/// content blocks, or both — is checked against `outputSchema` before it is
/// sent.
///
/// ```
/// use clawmcp::{async_trait, Tool, ToolContext, ToolError, ToolOutput};
/// use clawmcp::definition::ToolDefinition;
/// use serde_json::{json, Value};
///
/// struct Echo;
///
/// #[async_trait]
/// impl Tool for Echo {
///     fn definition(&self) -> ToolDefinition {
///         ToolDefinition {
///             mcp_id: "mcp://example/tools/echo:v1".into(),
///             name: "echo".into(),
///             description: "Returns its message.".into(),
///             input_schema: json!({"type": "object", "required": ["message"],
///                 "properties": {"message": {"type": "string"}}}),
///             output_schema: json!({"type": "object",
///                 "properties": {"message": {"type": "string"}}}),
///         }
///     }
///
///     async fn call(&self, arguments: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
///         Ok(json!({"message": arguments["message"]}).into())
///     }
/// }
/// ```
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The tool's definition as `mcp/listTools` shows it.
    fn definition(&self) -> ToolDefinition;

    /// How a host may present the tool and what it promises about its
    /// effects: the Model Context Protocol lists its title, annotations
    /// and icons (read once when the server is built). None by default.
    fn metadata(&self) -> ToolMetadata {
        ToolMetadata::default()
    }

    /// Runs the tool. `arguments` is a JSON object that matches
    /// `inputSchema`. An `Err` is answered `-32000 Tool execution failed`
    /// (or the error's own [code](ToolError::with_code)) with the error's
    /// text as `data` in MCP v1.0. In the Model Context Protocol an error
    /// of code `-32000` or `-32602` is a result with `isError: true` and
    /// its text, which the model reads; so, in a 2026-07-28 request, is
    /// one of a code that revision forbids a server to send (`-32002`,
    /// and `-32020` to `-32099`, the specification's own). Any other code
    /// is a JSON-RPC error of that code. A panic is answered `-32603`.
    async fn call(&self, arguments: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError>;

    /// How long one execution may run before it is stopped (and answered
    /// as [`ServerBuilder::tool_time_limit`](crate::ServerBuilder::tool_time_limit)
    /// says); `None` (the default) means the server's limit.
    fn time_limit(&self) -> Option<Duration> {
        None
    }

    /// Whether the tool may hold its thread: CPU-heavy work or blocking
    /// calls between two `.await`s. The session first polls a request on
    /// its own reader, so a tool that completes at once costs no task; a
    /// tool that says it may block is always given a task of its own, so on
    /// a multi-threaded runtime the session keeps reading while it runs (on
    /// a current-thread runtime nothing can run beside a blocked thread:
    /// move such work to `tokio::task::spawn_blocking`). Default `false`.
    fn may_block(&self) -> bool {
        false
    }

    /// Whether a call may run as a task (the tasks extension, for
    /// 2026-07-28 requests; [`crate::task`]): never (the default), when the
    /// request declares the extension, or always. The tool's code is the
    /// same either way.
    fn task_support(&self) -> crate::task::TaskSupport {
        crate::task::TaskSupport::Never
    }

    /// The state types ([`ServerBuilder::state`](crate::ServerBuilder::state))
    /// the tool needs: `build()` fails when one was not registered. Typed
    /// tools declare theirs; default: none.
    fn needs_state(&self) -> Vec<crate::state::StateType> {
        Vec::new()
    }
}

/// A typed tool's call under way on the server's fast path, which borrows
/// nothing (so the server can poll it once where it was read and hand it
/// to a task only if it waits): its output, or why it failed. An output
/// that is not JSON is left for the server to word, with the tool's name.
pub(crate) type Calling =
    std::pin::Pin<Box<dyn Future<Output = Result<ToolOutput, CallFailure>> + Send + 'static>>;

/// Why a [`Calling`] failed.
#[derive(Debug)]
// Made by typed tools only (feature `schemars`).
#[cfg_attr(not(feature = "schemars"), allow(dead_code))]
pub(crate) enum CallFailure {
    /// The tool's error.
    Tool(crate::ToolError),
    /// Its output could not be serialised.
    NotJson(serde_json::Error),
}

/// A tool made of a [`ToolDefinition`] and an async closure returning its
/// structured output (for content blocks, see [`rich_tool_fn`]).
///
/// ```
/// use clawmcp::{tool_fn, ToolContext};
/// use clawmcp::definition::ToolDefinition;
/// use serde_json::{json, Value};
///
/// let add = tool_fn(
///     ToolDefinition {
///         mcp_id: "mcp://example/tools/add:v1".into(),
///         name: "add".into(),
///         description: "Adds a and b.".into(),
///         input_schema: json!({"type": "object", "required": ["a", "b"],
///             "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
///         output_schema: json!({"type": "object", "properties": {"sum": {"type": "number"}}}),
///     },
///     |args: Value, _ctx: ToolContext| async move {
///         let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
///         Ok(json!({ "sum": sum }))
///     },
/// );
/// # let _ = clawmcp::Server::builder().tool(add).build().unwrap();
/// ```
pub fn tool_fn<F, Fut>(definition: ToolDefinition, function: F) -> FnTool<F, Fut>
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    FnTool::new(definition, function)
}

/// A tool made of a [`ToolDefinition`] and an async closure returning a
/// [`ToolOutput`]: content blocks (text, image, audio, resources), structured
/// output, or both. A tool whose output is blocks only is best given the
/// output schema `{}` (MCP v1.0 sees it as `{"content": [blocks]}`).
///
/// ```
/// use clawmcp::{Content, ToolContext, ToolOutput};
/// use clawmcp::tool::rich_tool_fn;
/// use clawmcp::definition::ToolDefinition;
/// use serde_json::{json, Value};
///
/// let logo = rich_tool_fn(
///     ToolDefinition {
///         mcp_id: "mcp://example/tools/logo:v1".into(),
///         name: "logo".into(),
///         description: "Draws the logo.".into(),
///         input_schema: json!({"type": "object"}),
///         output_schema: json!({}),
///     },
///     |_args: Value, _ctx: ToolContext| async move {
///         Ok(ToolOutput::content([Content::text("The logo:"), Content::image(b"\x89PNG", "image/png")]))
///     },
/// );
/// # let _ = clawmcp::Server::builder().tool(logo).build().unwrap();
/// ```
pub fn rich_tool_fn<F, Fut>(definition: ToolDefinition, function: F) -> FnTool<F, Fut>
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    FnTool::new(definition, function)
}

/// What a built tool answers for [`Tool`]'s provided methods, as
/// [`FnTool`] and `typed::TypedTool` let their caller set it
/// ([`tool_options_setters`]). The default is each method's default: no
/// metadata, the server's time limit, never blocking, never a task.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolOptions {
    /// [`Tool::metadata`].
    pub(crate) metadata: ToolMetadata,
    /// [`Tool::time_limit`].
    pub(crate) time_limit: Option<Duration>,
    /// [`Tool::may_block`].
    pub(crate) may_block: bool,
    /// [`Tool::task_support`].
    pub(crate) task_support: crate::task::TaskSupport,
}

/// The builder setters of a tool type with an `options: ToolOptions`
/// field: the same four, with the same meaning, on every tool the crate
/// builds.
macro_rules! tool_options_setters {
    () => {
        /// Sets how a host may present the tool ([`Tool::metadata`]): its
        /// title, behaviour hints and icons.
        #[must_use]
        pub fn with_metadata(mut self, metadata: $crate::definition::ToolMetadata) -> Self {
            self.options.metadata = metadata;
            self
        }

        /// This tool's time limit, instead of the server's
        /// ([`Tool::time_limit`]).
        #[must_use]
        pub fn with_time_limit(mut self, limit: std::time::Duration) -> Self {
            self.options.time_limit = Some(limit);
            self
        }

        /// Declares that the tool may hold its thread ([`Tool::may_block`]).
        #[must_use]
        pub fn blocking(mut self) -> Self {
            self.options.may_block = true;
            self
        }

        /// Sets whether a call may run as a task ([`Tool::task_support`]):
        /// a long build, a crawl, a human's approval.
        #[must_use]
        pub fn with_task_support(mut self, support: $crate::task::TaskSupport) -> Self {
            self.options.task_support = support;
            self
        }
    };
}

#[cfg(feature = "schemars")]
pub(crate) use tool_options_setters;

/// The tool [`tool_fn`] and [`rich_tool_fn`] return.
///
/// ```
/// use clawmcp::tool::tool_fn;
/// use clawmcp::definition::ToolDefinition;
/// use clawmcp::ToolContext;
/// use serde_json::{json, Value};
/// use std::time::Duration;
///
/// let crawl = tool_fn(
///     ToolDefinition {
///         mcp_id: "mcp://example/tools/crawl:v1".into(),
///         name: "crawl".into(),
///         description: "Crawls a site.".into(),
///         input_schema: json!({"type": "object"}),
///         output_schema: json!({}),
///     },
///     |_args: Value, _ctx: ToolContext| async move { Ok(json!({})) },
/// )
/// .with_time_limit(Duration::from_secs(600))
/// .blocking();
/// # let _ = clawmcp::Server::builder().tool(crawl).build().unwrap();
/// ```
pub struct FnTool<F, Fut> {
    definition: ToolDefinition,
    options: ToolOptions,
    function: F,
    _future: PhantomData<fn() -> Fut>,
}

impl<F, Fut> FnTool<F, Fut> {
    /// The tool with its defaults ([`ToolOptions::default`]).
    fn new(definition: ToolDefinition, function: F) -> Self {
        Self {
            definition,
            options: ToolOptions::default(),
            function,
            _future: PhantomData,
        }
    }

    tool_options_setters!();
}

#[async_trait]
impl<F, Fut, O> Tool for FnTool<F, Fut>
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    O: Into<ToolOutput>,
{
    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }

    fn metadata(&self) -> ToolMetadata {
        self.options.metadata.clone()
    }

    async fn call(&self, arguments: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        (self.function)(arguments, ctx).await.map(Into::into)
    }

    fn time_limit(&self) -> Option<Duration> {
        self.options.time_limit
    }

    fn may_block(&self) -> bool {
        self.options.may_block
    }

    fn task_support(&self) -> crate::task::TaskSupport {
        self.options.task_support
    }
}
