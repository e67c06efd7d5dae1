//! [`ToolContext`]: what a tool execution knows of its request and its
//! server, and everything it can do — watch for cancellation, report
//! progress, log to the client, and ask the client (elicitation, sampling,
//! roots).
//!
//! A context never sees a dialect, a session or a transport: the way back
//! to the client is a [`ClientLink`] that the session layer implements,
//! and a context is made from a [`ContextSource`] that it lends. A tool
//! whose function takes no context costs its request none
//! ([`LazyContext`]).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::Notify;

use crate::client::{
    ClientError, ElicitResult, Elicitation, LogLevel, Root, Sampling, SamplingResult,
};
use crate::handle::ServerHandle;
use crate::jsonrpc::RequestId;
use crate::principal::{Caller, Principal};

/// A request a tool sends to its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClientRequest {
    /// `elicitation/create`: needs the client's `elicitation` capability.
    Elicit,
    /// `sampling/createMessage`: needs `sampling`.
    Sample,
    /// `roots/list`: needs `roots`.
    ListRoots,
}

impl ClientRequest {
    /// The client capability the request needs.
    pub(crate) fn capability(self) -> &'static str {
        match self {
            Self::Elicit => "elicitation",
            Self::Sample => "sampling",
            Self::ListRoots => "roots",
        }
    }

    /// `Ok` when `declared`, what the client declared of the capability
    /// the request needs (`None`: nothing), lets the server send it, else
    /// [`ClientError::CapabilityMissing`] naming it. An elicitation needs
    /// the form mode, the one this server's requests use: declared by
    /// name, or by an empty `elicitation` (as before modes existed). A
    /// client that declared only `url` is sent none.
    pub(crate) fn check_capability(self, declared: Option<&Value>) -> Result<(), ClientError> {
        let lets = declared.is_some_and(|value| match self {
            Self::Elicit => value
                .as_object()
                .is_none_or(|modes| modes.is_empty() || modes.contains_key("form")),
            Self::Sample | Self::ListRoots => true,
        });
        if lets {
            Ok(())
        } else {
            Err(ClientError::CapabilityMissing(self.capability()))
        }
    }

    /// The request's method.
    pub(crate) fn method(self) -> &'static str {
        match self {
            Self::Elicit => "elicitation/create",
            Self::Sample => "sampling/createMessage",
            Self::ListRoots => "roots/list",
        }
    }
}

/// A tool execution's way back to its client, implemented by the session
/// the request came from. Every method does nothing (or refuses) once the
/// session is gone.
#[async_trait::async_trait]
pub(crate) trait ClientLink: Send + Sync + fmt::Debug {
    /// Sends progress for request `related`, if it asked for progress and
    /// `progress` grows.
    async fn progress(
        &self,
        related: &RequestId,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    );

    /// Whether a log line at `level` reaches the client.
    fn logs(&self, level: LogLevel) -> bool;

    /// Sends a log line for request `related`.
    async fn log(&self, related: &RequestId, level: LogLevel, data: Box<RawValue>);

    /// `Ok` when `request` can be sent now: the client is there, was
    /// initialised and declared the capability.
    fn can_ask(&self, request: ClientRequest) -> Result<(), ClientError>;

    /// Sends `request` with `params` on behalf of request `related` and
    /// waits for the answer, the client request timeout, or `cancel`.
    /// `key` names the question where the revision keys questions
    /// (2026-07-28); others ignore it.
    async fn ask(
        &self,
        related: &RequestId,
        request: ClientRequest,
        params: Box<RawValue>,
        key: Option<&str>,
        cancel: &Cancellation,
    ) -> Result<Value, ClientError>;

    /// The capabilities the client declared, once it did.
    fn client_capabilities(&self) -> Option<Value>;

    /// Whether the request's protocol revision carries what app pages need
    /// (`_meta` on items, `structuredContent`).
    fn carries_apps(&self) -> bool {
        true
    }

    /// Says what the work is doing now (a task's `statusMessage`); nothing
    /// where the request carries no status.
    async fn status(&self, _message: String) {}

    /// [`ask`](Self::ask), in the request's own round when the work may
    /// still become a task: answered from the round, else asked by the
    /// request's reply (the synchronous multi-round-trip flow), before any
    /// task exists. Elsewhere it is `ask`.
    async fn ask_before_task(
        &self,
        related: &RequestId,
        request: ClientRequest,
        params: Box<RawValue>,
        key: Option<&str>,
        cancel: &Cancellation,
    ) -> Result<Value, ClientError> {
        self.ask(related, request, params, key, cancel).await
    }
}

/// What a context is made of besides its request's own parts: the
/// server's handle and the session's link (implemented by the session).
pub(crate) trait ContextSource: Sync {
    /// The server's handle.
    fn handle(&self) -> &ServerHandle;

    /// The link for a request with progress token `progress`, if the
    /// session can carry anything back to its client.
    fn link(&self, progress: Option<Box<RawValue>>) -> Option<Arc<dyn ClientLink>>;
}

/// A tool call's [`ToolContext`], made only when a tool asks for it: a
/// handler that takes none costs the request no context (no cancellation
/// signal, no reference counts). Public only to seal
/// [`TypedHandler::call_lazily`](crate::typed::TypedHandler::call_lazily):
/// code outside this crate cannot name it.
pub struct LazyContext<'a>(Lazy<'a>);

impl fmt::Debug for LazyContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
        source: &'a dyn ContextSource,
        span: &'a tracing::Span,
        progress: &'a mut Option<Box<RawValue>>,
        caller: &'a Caller,
    },
    /// Made already.
    Made(ToolContext),
}

impl<'a> LazyContext<'a> {
    /// A context to make of a job's parts, in `source`'s session: its
    /// cancellation signal is made (into `cancel`) with it, and its
    /// progress token taken.
    pub(crate) fn of_parts(
        id: &'a RequestId,
        cancel: &'a mut Option<Cancellation>,
        source: &'a dyn ContextSource,
        span: &'a tracing::Span,
        progress: &'a mut Option<Box<RawValue>>,
        caller: &'a Caller,
    ) -> Self {
        Self(Lazy::Parts {
            id,
            cancel,
            source,
            span,
            progress,
            caller,
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
                source,
                span,
                progress,
                caller,
            } => ToolContext::new(
                id.clone(),
                cancel.get_or_insert_with(Cancellation::new).clone(),
                source.handle().clone(),
                span.clone(),
                source.link(progress.take()),
                caller.clone(),
            ),
        }
    }

    /// The server's handle, without making the context.
    #[cfg_attr(not(feature = "schemars"), allow(dead_code))]
    pub(crate) fn server(&self) -> &ServerHandle {
        match &self.0 {
            Lazy::Made(ctx) => ctx.server(),
            Lazy::Parts { source, .. } => source.handle(),
        }
    }
}

/// What a tool execution knows about its request and its server, and its
/// way back to the client: [`progress`](Self::progress),
/// [`log`](Self::log), and (Model Context Protocol) requests to the client —
/// [`elicit`](Self::elicit), [`sample`](Self::sample),
/// [`roots`](Self::roots).
///
/// A context keeps its server's handle (and so its state values) alive:
/// keep it for as long as the work it is for, not in a state value, which
/// the handle holds in turn (use [`cancellation_token`](Self::cancellation_token)
/// for what outlives the call).
#[derive(Clone)]
pub struct ToolContext {
    request_id: RequestId,
    cancel: Cancellation,
    server: ServerHandle,
    span: tracing::Span,
    /// The way back to the client, when the request's session has one.
    link: Option<Arc<dyn ClientLink>>,
    /// Who sent the request.
    caller: Caller,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("request_id", &self.request_id)
            .field("cancel", &self.cancel)
            .field("server", self.server())
            .field("span", &self.span)
            .field("link", &self.link)
            .field("caller", &self.caller)
            .finish()
    }
}

impl ToolContext {
    pub(crate) fn new(
        request_id: RequestId,
        cancel: Cancellation,
        server: ServerHandle,
        span: tracing::Span,
        link: Option<Arc<dyn ClientLink>>,
        caller: Caller,
    ) -> Self {
        Self {
            request_id,
            cancel,
            server,
            span,
            link,
            caller,
        }
    }

    /// The verified principal of the request's OAuth access token: its
    /// subject, client, scopes and claims (docs/oauth.md §5). `None` over
    /// stdio, and over HTTP when the endpoint verifies no tokens.
    pub fn principal(&self) -> Option<&Principal> {
        self.caller.principal.as_deref()
    }

    /// The HTTP request's headers, when the request came over HTTP (for a
    /// Streamable HTTP session, the headers of the POST that carried this
    /// request), but for `Authorization` and `Proxy-Authorization`: the
    /// credentials stay with the transport, so that no tool can forward
    /// them (docs/oauth.md §6); the [`principal`](Self::principal) says
    /// whose the token was.
    #[cfg(feature = "http")]
    pub fn http_headers(&self) -> Option<RequestHeaders<'_>> {
        self.caller
            .head
            .as_deref()
            .map(|head| RequestHeaders(&head.headers))
    }

    /// Who sent the request, for work that runs on its behalf.
    pub(crate) fn caller(&self) -> &Caller {
        &self.caller
    }

    /// The tracing span of this execution: `tool` at debug level, with the
    /// request id and the tool's mcpId, or, with feature `otel`, the
    /// request's own span. The tool's future already runs inside it; enter
    /// it in work the tool hands to other tasks.
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
    /// at once (in MCP v1.0 `-32003`, `-32004` or `-32005`; in the Model
    /// Context Protocol nothing for a client's cancellation, a result with
    /// `isError: true` for the time limit, `-32603` at shutdown) and the
    /// tool's future is dropped at its next `.await`; work the tool
    /// spawned elsewhere can watch this (or
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
        &self.server
    }

    /// The state value of type `S` registered with
    /// [`ServerBuilder::state`](crate::ServerBuilder::state), if any.
    pub fn state<S: Send + Sync + 'static>(&self) -> Option<&S> {
        self.server().state::<S>()
    }
    /// Reports progress (`notifications/progress`) when the request asked
    /// for it (`_meta.progressToken`); otherwise, and in MCP v1.0, does
    /// nothing. `progress` must grow with each call: a value not above the
    /// last one sent is dropped. Once the request has ended (a context
    /// kept past its call) nothing is sent: progress refers only to a
    /// request in flight.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(link) = self.live_link() {
            link.progress(&self.request_id, progress, total, message)
                .await;
        }
    }

    /// Sends a log line to the client (`notifications/message`) when its
    /// level is at least the session's (`logging/setLevel`; `info` until
    /// the client sets one). In MCP v1.0 it does nothing: log through
    /// `tracing` as well for the server's own log.
    pub async fn log(&self, level: LogLevel, data: impl Serialize) {
        let Some(link) = self.live_link().filter(|link| link.logs(level)) else {
            return;
        };
        match serde_json::value::to_raw_value(&data) {
            Ok(data) => link.log(&self.request_id, level, data).await,
            Err(e) => tracing::warn!("a log line whose data is not JSON was not sent: {e}"),
        }
    }

    /// Asks the user to fill in a form (`elicitation/create`, form mode).
    ///
    /// In a 2026-07-28 request the question travels in the request's
    /// answer (`InputRequiredResult`) and the tool runs again, from its
    /// start, on the client's retry: see [`keyed`](Self::keyed).
    ///
    /// # Errors
    /// See [`ClientError`]; [`ClientError::Invalid`] when a field is not a
    /// primitive schema the protocol allows.
    pub async fn elicit(&self, form: Elicitation) -> Result<ElicitResult, ClientError> {
        self.keyed_elicit(None, form).await
    }

    /// Asks the client's model for a completion (`sampling/createMessage`).
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn sample(&self, request: Sampling) -> Result<SamplingResult, ClientError> {
        self.keyed_sample(None, request).await
    }

    /// The client's roots (`roots/list`).
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn roots(&self) -> Result<Vec<Root>, ClientError> {
        self.keyed_roots(None).await
    }

    /// The same questions to the client, under a key of the tool's own.
    ///
    /// A 2026-07-28 request cannot wait for the client: a question it has
    /// no answer for ends the round, the client answers every question of
    /// the round by key (`inputRequests` → `inputResponses`), and the tool
    /// runs again from its start with those answers (the crate's
    /// `docs/model-context.md` §7). Questions asked without a key get
    /// `input-0`, `input-1`, … in the order they are asked; a key of your
    /// own names the question for the client and keeps it stable when the
    /// order can change. In a 2025-11-25 session the key is not sent.
    ///
    /// ```no_run
    /// # async fn f(ctx: clawmcp::ToolContext) -> Result<(), clawmcp::client::ClientError> {
    /// use clawmcp::client::Elicitation;
    /// use serde_json::json;
    ///
    /// let form = Elicitation::new("What is your name?")
    ///     .field("name", json!({"type": "string"}), true);
    /// let answer = ctx.keyed("user_name").elicit(form).await?;
    /// # let _ = answer; Ok(()) }
    /// ```
    pub fn keyed<'c>(&'c self, key: &'c str) -> Keyed<'c> {
        Keyed { ctx: self, key }
    }

    async fn keyed_elicit(
        &self,
        key: Option<&str>,
        form: Elicitation,
    ) -> Result<ElicitResult, ClientError> {
        let answer = self
            .ask_client(key, ClientRequest::Elicit, form.params()?)
            .await?;
        let answer =
            serde_json::from_value(answer).map_err(|e| ClientError::Malformed(e.to_string()))?;
        form.check(&answer)?;
        Ok(answer)
    }

    /// [`elicit`](Self::elicit) under `key`, asked before the call becomes
    /// a task (the tasks extension, [`crate::task`]): a call that runs as a
    /// task and asks this before it first waits on anything else gets the
    /// question to the client in its request's own reply (an
    /// `InputRequiredResult`), and the client's retry with the answer
    /// starts the task, which then reads the answer here. Use it for what
    /// decides whether the long work should start at all. A call that
    /// does not run as a task asks as [`elicit`](Self::elicit) does.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn elicit_before_task(
        &self,
        key: &str,
        form: Elicitation,
    ) -> Result<ElicitResult, ClientError> {
        let (params, span) = self.traced(ClientRequest::Elicit, form.params()?)?;
        let link = self.link_for(ClientRequest::Elicit)?;
        let asking = link.ask_before_task(
            &self.request_id,
            ClientRequest::Elicit,
            params,
            Some(key),
            &self.cancel,
        );
        let answer = tracing::Instrument::instrument(asking, span.clone()).await;
        client_ended(&span, answer.as_ref().err());
        let answer = answer?;
        let answer =
            serde_json::from_value(answer).map_err(|e| ClientError::Malformed(e.to_string()))?;
        form.check(&answer)?;
        Ok(answer)
    }

    async fn keyed_sample(
        &self,
        key: Option<&str>,
        request: Sampling,
    ) -> Result<SamplingResult, ClientError> {
        let params =
            serde_json::to_value(&request).map_err(|e| ClientError::Invalid(e.to_string()))?;
        let answer = self.ask_client(key, ClientRequest::Sample, params).await?;
        serde_json::from_value(answer).map_err(|e| ClientError::Malformed(e.to_string()))
    }

    async fn keyed_roots(&self, key: Option<&str>) -> Result<Vec<Root>, ClientError> {
        #[derive(serde::Deserialize)]
        struct Roots {
            roots: Vec<Root>,
        }
        let answer = self
            .ask_client(key, ClientRequest::ListRoots, serde_json::json!({}))
            .await?;
        serde_json::from_value::<Roots>(answer)
            .map(|r| r.roots)
            .map_err(|e| ClientError::Malformed(e.to_string()))
    }

    /// Sends `request` to the client and waits for its answer.
    async fn ask_client(
        &self,
        key: Option<&str>,
        request: ClientRequest,
        params: Value,
    ) -> Result<Value, ClientError> {
        let (params, span) = self.traced(request, params)?;
        let link = self.link_for(request)?;
        let asking = link.ask(&self.request_id, request, params, key, &self.cancel);
        let answer = tracing::Instrument::instrument(asking, span.clone()).await;
        client_ended(&span, answer.as_ref().err());
        answer
    }

    /// A request's params as sent, and the span of the request (feature
    /// `otel`: a client span, a child of the call's, whose context goes in
    /// the params' `_meta`, so that the client can continue the trace).
    fn traced(
        &self,
        request: ClientRequest,
        params: Value,
    ) -> Result<(Box<RawValue>, tracing::Span), ClientError> {
        #[cfg(feature = "otel")]
        let (span, params) = {
            let mut params = params;
            let span = crate::trace_context::to_client(&self.span, request.method(), &mut params);
            (span, params)
        };
        #[cfg(not(feature = "otel"))]
        let span = {
            let _ = request;
            tracing::Span::none()
        };
        Ok((to_raw(&params)?, span))
    }

    /// The capabilities the client declared: in `initialize` for a
    /// session, in the request's own `_meta` for a 2026-07-28 request
    /// (Model Context Protocol); `None` in MCP v1.0 and before
    /// `initialize`.
    pub fn client_capabilities(&self) -> Option<Value> {
        self.link.as_ref()?.client_capabilities()
    }

    /// Whether the client renders app pages (MCP Apps, [`crate::app`]): it
    /// declared the `io.modelcontextprotocol/ui` extension, with the app
    /// media type among its `mimeTypes` (in any case and spacing), or
    /// with no `mimeTypes` at all (one that is not a list names no type) — per request in
    /// 2026-07-28, per session before, in a session of 2025-06-18 or later
    /// (an older revision carries no `_meta` to link a tool to its page, nor
    /// `structuredContent`). A tool linked to a page answers the
    /// same either way (its `content` is the text a host without apps
    /// shows); it may add what only the page uses when this is true.
    ///
    /// ```
    /// # async fn tool(ctx: clawmcp::ToolContext) {
    /// let detail = if ctx.client_supports_apps() { "full" } else { "summary" };
    /// # let _ = detail; }
    /// ```
    pub fn client_supports_apps(&self) -> bool {
        let link = self.link.as_ref().filter(|link| link.carries_apps());
        let Some(capabilities) = link.and_then(|link| link.client_capabilities()) else {
            return false;
        };
        let Some(ui) = capabilities
            .get("extensions")
            .and_then(|e| e.get(crate::app::EXTENSION))
        else {
            return false;
        };
        // (A media type is read as HTTP reads one: its case and the spaces
        // around its parameter do not matter.)
        let is_app_type = |t: &Value| {
            t.as_str().is_some_and(|t| {
                let written = t.split(';').map(str::trim);
                let wanted = crate::app::MIME_TYPE.split(';');
                written.clone().count() == wanted.clone().count()
                    && written.zip(wanted).all(|(a, b)| a.eq_ignore_ascii_case(b))
            })
        };
        match ui.get("mimeTypes") {
            Some(Value::Array(types)) => types.iter().any(is_app_type),
            Some(_) => false,
            None => ui.is_object(),
        }
    }

    /// Says what the call is doing now, for a call that runs as a task
    /// ([`crate::task`]): its `statusMessage`, which `tasks/get` shows.
    /// Nothing happens for a call answered in its own request.
    pub async fn set_status_message(&self, message: impl Into<String>) {
        if let Some(link) = self.live_link() {
            link.status(message.into()).await;
        }
    }

    /// The link while the request is in flight: a context kept past its
    /// call sends the client nothing.
    fn live_link(&self) -> Option<&Arc<dyn ClientLink>> {
        self.link.as_ref().filter(|_| !self.cancel.has_ended())
    }

    /// The link, when it can carry `request` now (`Cancelled` once the
    /// request has ended).
    fn link_for(&self, request: ClientRequest) -> Result<&dyn ClientLink, ClientError> {
        let link = self.link.as_deref().ok_or(ClientError::Unsupported)?;
        if self.cancel.has_ended() {
            return Err(ClientError::Cancelled);
        }
        link.can_ask(request)?;
        Ok(link)
    }
}

/// A [`ToolContext`]'s questions to the client under one key
/// ([`ToolContext::keyed`]).
#[derive(Debug, Clone, Copy)]
pub struct Keyed<'c> {
    ctx: &'c ToolContext,
    key: &'c str,
}

impl Keyed<'_> {
    /// [`ToolContext::elicit`], keyed.
    ///
    /// # Errors
    /// As [`ToolContext::elicit`].
    pub async fn elicit(self, form: Elicitation) -> Result<ElicitResult, ClientError> {
        self.ctx.keyed_elicit(Some(self.key), form).await
    }

    /// [`ToolContext::sample`], keyed.
    ///
    /// # Errors
    /// As [`ToolContext::sample`].
    pub async fn sample(self, request: Sampling) -> Result<SamplingResult, ClientError> {
        self.ctx.keyed_sample(Some(self.key), request).await
    }

    /// [`ToolContext::roots`], keyed.
    ///
    /// # Errors
    /// As [`ToolContext::roots`].
    pub async fn roots(self) -> Result<Vec<Root>, ClientError> {
        self.ctx.keyed_roots(Some(self.key)).await
    }
}

/// Params serialised for a request to the client.
/// Ends the span of a request to the client with how it failed, if it
/// did (feature `otel`): the client's error code, or what stopped the wait.
fn client_ended(span: &tracing::Span, error: Option<&ClientError>) {
    #[cfg(feature = "otel")]
    if let Some(error) = error {
        use crate::trace_context::{SpanEnd, ended};
        let text = error.to_string();
        let outcome = match error {
            ClientError::Refused { code, .. } => match i32::try_from(*code) {
                Ok(code) => SpanEnd::Error(code, &text),
                Err(_) => SpanEnd::Failed("_OTHER", &text),
            },
            ClientError::TimedOut(_) => SpanEnd::Failed("timeout", &text),
            ClientError::Cancelled => SpanEnd::Failed("cancelled", &text),
            _ => SpanEnd::Failed("_OTHER", &text),
        };
        ended(span, outcome);
    }
    #[cfg(not(feature = "otel"))]
    let _ = (span, error);
}

fn to_raw<P: Serialize + ?Sized>(params: &P) -> Result<Box<RawValue>, ClientError> {
    serde_json::value::to_raw_value(params).map_err(|e| ClientError::Invalid(e.to_string()))
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
    /// The request has ended (its reply, if any, is made): a context kept
    /// past it sends the client nothing.
    ended: std::sync::atomic::AtomicBool,
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

    /// Marks the request ended: its reply is made. A question to the
    /// client still waiting for its answer stops waiting
    /// ([`Cancellation::cancelled_or_ended`]).
    pub(crate) fn end(&self) {
        self.0.ended.store(true, Ordering::Release);
        self.0.wake.notify_waiters();
    }

    /// Whether the request has ended.
    pub(crate) fn has_ended(&self) -> bool {
        self.0.ended.load(Ordering::Acquire)
    }

    /// Whether the signal fired.
    pub fn is_cancelled(&self) -> bool {
        self.0.reason.load(Ordering::Acquire) != 0
    }

    /// Completes when the signal fires (at once if it already has). A
    /// request that ends with its reply does not fire it: work spawned to
    /// outlive the call is not stopped by its end, and work that must stop
    /// with the request is work the tool awaits.
    pub async fn cancelled(&self) {
        self.until(Self::is_cancelled).await;
    }

    /// Completes when the signal fires or the request ends, whichever
    /// comes first: what a question to the client waits for beside its
    /// answer.
    pub(crate) async fn cancelled_or_ended(&self) {
        self.until(|c| c.is_cancelled() || c.has_ended()).await;
    }

    /// Completes once `done` holds, looking again at each wake (the end of
    /// a request wakes too).
    async fn until(&self, done: impl Fn(&Self) -> bool) {
        loop {
            let notified = self.0.wake.notified();
            tokio::pin!(notified);
            // Listen before looking, so a wake in between is not missed.
            notified.as_mut().enable();
            if done(self) {
                return;
            }
            notified.await;
        }
    }
}

/// The headers of the HTTP request a request came in
/// ([`ToolContext::http_headers`]), but for the credentials
/// (`Authorization`, `Proxy-Authorization`): they stay with the transport,
/// so that no tool can forward them (docs/oauth.md §6).
///
/// ```
/// # fn tool(ctx: clawmcp::ToolContext) {
/// let agent = ctx
///     .http_headers()
///     .and_then(|headers| headers.get("user-agent"))
///     .and_then(|value| value.to_str().ok());
/// # let _ = agent;
/// # }
/// ```
#[cfg(feature = "http")]
#[derive(Debug, Clone, Copy)]
pub struct RequestHeaders<'a>(&'a http::HeaderMap);

#[cfg(feature = "http")]
impl<'a> RequestHeaders<'a> {
    /// The first value of header `name` (any case).
    pub fn get(&self, name: &str) -> Option<&'a http::HeaderValue> {
        if is_credentials(name) {
            return None;
        }
        self.0.get(name)
    }

    /// Every value of header `name` (any case).
    pub fn get_all(&self, name: &str) -> impl Iterator<Item = &'a http::HeaderValue> + use<'a> {
        let shown = !is_credentials(name);
        self.0.get_all(name).into_iter().filter(move |_| shown)
    }

    /// Whether the request carries header `name`.
    pub fn contains_key(&self, name: &str) -> bool {
        !is_credentials(name) && self.0.contains_key(name)
    }

    /// Every header, in order.
    pub fn iter(
        &self,
    ) -> impl Iterator<Item = (&'a http::HeaderName, &'a http::HeaderValue)> + use<'a> {
        self.0
            .iter()
            .filter(|(name, _)| !is_credentials(name.as_str()))
    }
}

/// Whether `name` is a header of credentials.
#[cfg(feature = "http")]
fn is_credentials(name: &str) -> bool {
    name.eq_ignore_ascii_case("authorization") || name.eq_ignore_ascii_case("proxy-authorization")
}
