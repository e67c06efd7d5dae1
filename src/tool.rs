//! The [`Tool`] trait a server author implements, the [`ToolContext`] each
//! execution receives, and [`tool_fn`] for tools written as closures.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use tokio::sync::Notify;

use crate::content::ToolOutput;
use crate::error::ToolError;
use crate::jsonrpc::RequestId;
use crate::protocol::ToolDefinition;
use crate::server::peer::Link;
use crate::server::{ServerHandle, ServerInner};

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
/// use clawmcp::protocol::ToolDefinition;
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

    /// Runs the tool. `arguments` is a JSON object that matches
    /// `inputSchema`. An `Err` is answered `-32000 Tool execution failed`
    /// (or the error's own [code](ToolError::with_code)) with the error's
    /// text as `data` in MCP v1.0, and as a result with `isError: true` in
    /// the Model Context Protocol; a panic is answered `-32603`.
    async fn call(&self, arguments: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError>;

    /// How long one execution may run before it is stopped and answered
    /// `-32004`; `None` (the default) means the server's limit
    /// ([`ServerBuilder::tool_time_limit`](crate::ServerBuilder::tool_time_limit)).
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

    /// The state types ([`ServerBuilder::state`](crate::ServerBuilder::state))
    /// the tool needs: `build()` fails when one was not registered. Typed
    /// tools declare theirs; default: none.
    fn needs_state(&self) -> Vec<crate::state::StateType> {
        Vec::new()
    }

    /// Whether the tool reads its arguments straight from JSON text,
    /// without a `Value` ([`typed_tool`](crate::typed::typed_tool)s read
    /// their type from it): the server then hands `call_json` the text of
    /// arguments that already passed `inputSchema`, and a context it
    /// builds only if the tool asks for it. `call_json` answers
    /// `Err(ctx)` to hand the call back (the server then reads a `Value`
    /// and calls [`call`](Tool::call)); it must not act before it answers
    /// `Ok`, and must do what `call` would. Sealed: only this crate's
    /// tools can say yes (the [`Sealed`] argument cannot be named outside
    /// it). Default: no.
    #[doc(hidden)]
    fn reads_json(&self, _: Sealed) -> bool {
        false
    }

    /// See [`reads_json`](Tool::reads_json).
    #[doc(hidden)]
    fn call_json<'c>(
        &self,
        arguments: &str,
        ctx: LazyContext<'c>,
        _: Sealed,
    ) -> Result<Calling, LazyContext<'c>> {
        let _ = arguments;
        Err(ctx)
    }
}

/// A tool call under way ([`Tool::call_json`]), which borrows nothing (so
/// the server can poll it once where it was read and hand it to a task
/// only if it waits): its output, or why it failed. An output that is not
/// JSON is left for the server to word, with the tool's name.
#[doc(hidden)]
pub type Calling =
    std::pin::Pin<Box<dyn Future<Output = Result<ToolOutput, CallFailure>> + Send + 'static>>;

pub(crate) use sealed::{CallFailure, LazyContext, Sealed};

mod sealed {
    use std::sync::Arc;

    use serde_json::value::RawValue;

    use super::{Cancellation, ToolContext};
    use crate::dialect::Dialect;
    use crate::jsonrpc::RequestId;
    use crate::server::ServerHandle;
    use crate::server::peer::Link;
    use crate::server::shared::Shared;

    /// Seals [`Tool::reads_json`](super::Tool::reads_json) and
    /// [`Tool::call_json`](super::Tool::call_json): code outside this
    /// crate cannot name this type, so it cannot override them.
    #[derive(Debug, Clone, Copy)]
    pub struct Sealed(pub(crate) ());

    /// Why a [`Calling`](super::Calling) failed.
    #[derive(Debug)]
    pub enum CallFailure {
        /// The tool's error.
        Tool(crate::ToolError),
        /// Its output could not be serialised.
        NotJson(serde_json::Error),
    }

    /// A tool call's [`ToolContext`], made only when a tool asks for it:
    /// a handler that takes none costs the request no context (no
    /// cancellation signal, no reference counts).
    pub struct LazyContext<'a>(Lazy<'a>);

    impl std::fmt::Debug for LazyContext<'_> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("LazyContext")
                .field("made", &matches!(self.0, Lazy::Made(_)))
                .finish()
        }
    }

    enum Lazy<'a> {
        /// What to make it of, lent by the request's job.
        Parts {
            id: &'a RequestId,
            cancel: &'a mut Option<Cancellation>,
            shared: &'a Arc<Shared>,
            span: &'a tracing::Span,
            progress: &'a mut Option<Box<RawValue>>,
        },
        /// Made already.
        Made(ToolContext),
    }

    impl<'a> LazyContext<'a> {
        /// A context to make of a job's parts, in `shared`'s session: its
        /// cancellation signal is made (into `cancel`) with it, and its
        /// progress token taken.
        pub(crate) fn of_parts(
            id: &'a RequestId,
            cancel: &'a mut Option<Cancellation>,
            shared: &'a Arc<Shared>,
            span: &'a tracing::Span,
            progress: &'a mut Option<Box<RawValue>>,
        ) -> Self {
            Self(Lazy::Parts {
                id,
                cancel,
                shared,
                span,
                progress,
            })
        }

        /// A context made already.
        pub(crate) fn made(ctx: ToolContext) -> Self {
            Self(Lazy::Made(ctx))
        }

        /// The context, made now if it was not.
        pub(crate) fn get(self) -> ToolContext {
            match self.0 {
                Lazy::Made(ctx) => ctx,
                Lazy::Parts {
                    id,
                    cancel,
                    shared,
                    span,
                    progress,
                } => ToolContext::new(
                    id.clone(),
                    cancel.get_or_insert_with(Cancellation::new).clone(),
                    shared.server.clone(),
                    span.clone(),
                    // Only a Model Context Protocol session can carry
                    // progress, log lines or requests to the client.
                    (shared.dialect == Dialect::ModelContext)
                        .then(|| Link::new(shared, progress.take())),
                ),
            }
        }

        /// The server's handle, without making the context.
        #[cfg_attr(not(feature = "schemars"), allow(dead_code))]
        pub(crate) fn server(&self) -> &ServerHandle {
            match &self.0 {
                Lazy::Made(ctx) => ctx.server(),
                Lazy::Parts { shared, .. } => &shared.server.handle,
            }
        }
    }
}

/// What a tool execution knows about its request and its server, and its
/// way back to the client: [`progress`](Self::progress),
/// [`log`](Self::log), and (Model Context Protocol) requests to the client —
/// [`elicit`](Self::elicit), [`sample`](Self::sample),
/// [`roots`](Self::roots).
///
/// A context keeps its server (its tools, schemas and state) alive: keep
/// it for as long as the work it is for, not in a tool or a state value,
/// which the server holds in turn (use [`server`](Self::server)'s handle
/// or [`cancellation_token`](Self::cancellation_token) for what outlives
/// the call).
#[derive(Clone)]
pub struct ToolContext {
    request_id: RequestId,
    cancel: Cancellation,
    /// The server, whose handle [`server`](Self::server) lends: one
    /// reference count per request, where the handle's own clone takes
    /// three.
    server: Arc<ServerInner>,
    span: tracing::Span,
    link: Option<Arc<Link>>,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("request_id", &self.request_id)
            .field("cancel", &self.cancel)
            .field("server", self.server())
            .field("span", &self.span)
            .field("link", &self.link)
            .finish()
    }
}

impl ToolContext {
    pub(crate) fn new(
        request_id: RequestId,
        cancel: Cancellation,
        server: Arc<ServerInner>,
        span: tracing::Span,
        link: Option<Link>,
    ) -> Self {
        Self {
            request_id,
            cancel,
            server,
            span,
            link: link.map(Arc::new),
        }
    }

    /// The way back to the session, if there is one.
    pub(crate) fn link(&self) -> Option<&Link> {
        self.link.as_deref()
    }

    /// The tracing span of this execution (`tool` at debug level, with the
    /// request id and the tool's mcpId). The tool's future already runs inside it; enter it
    /// in work the tool hands to other tasks.
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// The id of the request being served.
    pub fn request_id(&self) -> &RequestId {
        &self.request_id
    }

    /// Whether the request was stopped: cancelled by the client
    /// (`$/cancelRequest`), past its time limit, at the end of shutdown's
    /// grace period, or because its client is gone.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Completes when the request is stopped (see
    /// [`is_cancelled`](Self::is_cancelled)). The request is then answered
    /// (`-32003`, `-32004` or `-32005`) at once and the tool's future is
    /// dropped at its next `.await`; work the tool spawned elsewhere can
    /// watch this (or
    /// [`cancellation_token`](Self::cancellation_token)) to stop early.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await
    }

    /// The request's cancellation signal, for work the tool hands to other
    /// tasks.
    pub fn cancellation_token(&self) -> Cancellation {
        self.cancel.clone()
    }

    /// The server's handle, e.g. to announce that a resource changed.
    pub fn server(&self) -> &ServerHandle {
        &self.server.handle
    }

    /// The state value of type `S` registered with
    /// [`ServerBuilder::state`](crate::ServerBuilder::state), if any.
    pub fn state<S: Send + Sync + 'static>(&self) -> Option<&S> {
        self.server().state::<S>()
    }
}

/// A request's cancellation signal: fired when the client cancels the
/// request, when the tool runs past its time limit, or when shutdown's grace
/// period ends. Cheap to clone; every clone sees the same signal.
#[derive(Debug, Clone, Default)]
pub struct Cancellation(Arc<CancelState>);

#[derive(Debug, Default)]
struct CancelState {
    /// 0 while not cancelled, else the [`CancelReason`] that came first.
    reason: AtomicU8,
    wake: Notify,
}

/// Why a request was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum CancelReason {
    /// The client sent `$/cancelRequest`: `-32003`.
    Client = 1,
    /// The tool ran past its time limit: `-32004`.
    TimeLimit = 2,
    /// Shutdown's grace period ran out: `-32005`.
    Shutdown = 3,
    /// Nobody is left to read the reply.
    Gone = 4,
}

impl Cancellation {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Fires the signal; the first reason given is the one that counts.
    pub(crate) fn cancel(&self, reason: CancelReason) {
        let _ =
            self.0
                .reason
                .compare_exchange(0, reason as u8, Ordering::AcqRel, Ordering::Acquire);
        self.0.wake.notify_waiters();
    }

    /// Why the signal fired, if it did.
    pub(crate) fn reason(&self) -> Option<CancelReason> {
        match self.0.reason.load(Ordering::Acquire) {
            1 => Some(CancelReason::Client),
            2 => Some(CancelReason::TimeLimit),
            3 => Some(CancelReason::Shutdown),
            4 => Some(CancelReason::Gone),
            _ => None,
        }
    }

    /// Whether the signal fired.
    pub fn is_cancelled(&self) -> bool {
        self.0.reason.load(Ordering::Acquire) != 0
    }

    /// Completes when the signal fires (at once if it already has).
    pub async fn cancelled(&self) {
        let notified = self.0.wake.notified();
        tokio::pin!(notified);
        // Listen before looking, so a signal in between is not missed.
        notified.as_mut().enable();
        if self.is_cancelled() {
            return;
        }
        notified.await;
    }
}

/// A tool made of a [`ToolDefinition`] and an async closure returning its
/// structured output (for content blocks, see [`rich_tool_fn`]).
///
/// ```
/// use clawmcp::{tool_fn, ToolContext};
/// use clawmcp::protocol::ToolDefinition;
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
    FnTool {
        definition,
        function,
        may_block: false,
        _future: PhantomData,
    }
}

/// A tool made of a [`ToolDefinition`] and an async closure returning a
/// [`ToolOutput`]: content blocks (text, image, audio, resources), structured
/// output, or both. A tool whose output is blocks only is best given the
/// output schema `{}` (MCP v1.0 sees it as `{"content": [blocks]}`).
///
/// ```
/// use clawmcp::{rich_tool_fn, Content, ToolContext, ToolOutput};
/// use clawmcp::protocol::ToolDefinition;
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
    FnTool {
        definition,
        function,
        may_block: false,
        _future: PhantomData,
    }
}

/// The tool [`tool_fn`] and [`rich_tool_fn`] return.
pub struct FnTool<F, Fut> {
    definition: ToolDefinition,
    function: F,
    may_block: bool,
    _future: PhantomData<fn() -> Fut>,
}

impl<F, Fut> FnTool<F, Fut> {
    /// Declares that the tool may hold its thread ([`Tool::may_block`]).
    #[must_use]
    pub fn blocking(mut self) -> Self {
        self.may_block = true;
        self
    }
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

    async fn call(&self, arguments: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        (self.function)(arguments, ctx).await.map(Into::into)
    }

    fn may_block(&self) -> bool {
        self.may_block
    }
}
