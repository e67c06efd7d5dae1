//! Wire dialects: MCP v1.0 ([`v1`]), the Model Context Protocol's
//! session revisions ([`model_context`]) and its 2026-07-28 revision
//! ([`revision_2026`]), over one registry of tools, resources and prompts
//! (docs/model-context.md).
//!
//! A dialect is a method table with params readers and result encoders over
//! the server's neutral operations ([`Work`] ending [`Done`] or
//! [`Failure`]), its handshake and version rules, its notification names
//! and its error table. [`choice`] decides which one a connection and
//! each of its requests speak (a Model Context Protocol connection serves
//! a 2026-07-28 request in that revision); nothing in a tool, a resource
//! or a prompt knows which dialect called it. The layers above reach a
//! dialect only through this module's own items: [`Dialect`] and what it
//! re-exports. Adding a dialect means a module here, a variant of
//! [`Dialect`] with its arms below, and its decision in [`choice`].

pub(crate) mod choice;
pub(crate) mod handshake;
pub(crate) mod listing;
pub(crate) mod model_context;
pub(crate) mod revision_2026;
pub(crate) mod v1;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;

use serde_json::value::RawValue;

use crate::client::LogLevel;
use crate::definition::ServerInfo;
use crate::engine::{Catalog, Done, Failure, Work};
use crate::error::RpcError;
use crate::handle::{Push, ServerHandle};
use crate::jsonrpc::{CallForm, CallTable, Parsed, Reply, RequestId, ToolCall};
use crate::principal::Principal;
use crate::tool::CancelReason;
#[cfg(feature = "http")]
pub(crate) use choice::{ByHead, HeadVerdict, HeadVersion, HttpHead, Post};
pub(crate) use handshake::Phase;
pub(crate) use listing::{Blueprint, Listings};
/// The Model Context Protocol's method names.
#[cfg(feature = "http")]
pub(crate) use model_context::methods;
pub(crate) use revision_2026::seal::{RequestStateKeys, keys_from_hex};
#[cfg(feature = "http")]
pub(crate) use revision_2026::tasks::is_method as is_task_method;
pub(crate) use revision_2026::{CacheHints, Filter, Revision2026Settings};
/// The 2026-07-28 revision's `_meta` keys, its listen method, and its
/// error for a version this server does not speak.
#[cfg(feature = "http")]
pub(crate) use revision_2026::{LISTEN, keys, unsupported_version};

/// How each dialect writes a tool call, read with its envelope in one pass
/// ([`parse`]): MCP v1.0's `mcp/executeTool` names its tool by `id` and
/// takes object arguments only; `tools/call` names it by `name`, and a
/// 2026-07-28 one carries `inputResponses` and `requestState`
/// ([`kept_params`]). The `_meta` members kept are [`kept_meta`]'s.
pub(crate) struct Calls;

impl CallTable for Calls {
    const FORMS: &'static [CallForm] = &[EXECUTE_TOOL, TOOLS_CALL];
    const META: &'static [&'static str] = KEPT_META;
}

/// The `_meta` members [`Calls`] keeps, in [`kept_meta`]'s order: with the
/// feature `otel`, a call's trace context too.
#[cfg(not(feature = "otel"))]
const KEPT_META: &[&str] = &[
    "progressToken",
    revision_2026::keys::PROTOCOL_VERSION,
    revision_2026::keys::CLIENT_CAPABILITIES,
    revision_2026::keys::LOG_LEVEL,
];
#[cfg(feature = "otel")]
const KEPT_META: &[&str] = &[
    "progressToken",
    revision_2026::keys::PROTOCOL_VERSION,
    revision_2026::keys::CLIENT_CAPABILITIES,
    revision_2026::keys::LOG_LEVEL,
    "traceparent",
    "tracestate",
    "baggage",
];

/// MCP v1.0's `mcp/executeTool`.
pub(crate) const EXECUTE_TOOL: CallForm = CallForm {
    method: v1::schema::methods::EXECUTE_TOOL,
    tool: "id",
    object_arguments: true,
    kept: &[],
};

/// The Model Context Protocol's `tools/call`.
pub(crate) const TOOLS_CALL: CallForm = CallForm {
    method: model_context::methods::TOOLS_CALL,
    tool: "name",
    object_arguments: false,
    kept: &["inputResponses", "requestState"],
};

/// Reads `text`, the params of a call of `form`, as the one-pass reading
/// would (for a call it left to the general reading).
pub(crate) fn read_call<'a>(
    form: &'static CallForm,
    text: &'a str,
) -> Result<ToolCall<'a>, serde_json::Error> {
    crate::jsonrpc::read_params(form, Calls::META, text)
}

/// The `_meta` members a tool call's one-pass reading keeps, by index
/// ([`ToolCall::meta`]).
pub(crate) mod kept_meta {
    /// `progressToken`.
    pub(crate) const PROGRESS_TOKEN: usize = 0;
    /// The 2026-07-28 request's protocol version.
    pub(crate) const PROTOCOL_VERSION: usize = 1;
    /// The 2026-07-28 request's client capabilities.
    pub(crate) const CLIENT_CAPABILITIES: usize = 2;
    /// The 2026-07-28 request's log level.
    pub(crate) const LOG_LEVEL: usize = 3;
    /// The W3C trace context's parent (feature `otel`).
    #[cfg(feature = "otel")]
    pub(crate) const TRACEPARENT: usize = 4;
    /// The W3C trace context's vendor state (feature `otel`).
    #[cfg(feature = "otel")]
    pub(crate) const TRACESTATE: usize = 5;
    /// The W3C baggage (feature `otel`).
    #[cfg(feature = "otel")]
    pub(crate) const BAGGAGE: usize = 6;
}

/// The params members a `tools/call`'s one-pass reading keeps, by index
/// ([`ToolCall::kept`]).
pub(crate) mod kept_params {
    /// `inputResponses`: the answers to an earlier round's questions.
    pub(crate) const INPUT_RESPONSES: usize = 0;
    /// `requestState`: the state an earlier round sealed.
    pub(crate) const REQUEST_STATE: usize = 1;
}

/// Parses one message body, its tool calls read by [`Calls`].
pub(crate) fn parse(body: &[u8]) -> Parsed<'_> {
    crate::jsonrpc::parse::<Calls>(body)
}

/// The most bytes of a client's declared capabilities the server keeps:
/// a session's `initialize` params, a 2026-07-28 request's
/// `clientCapabilities` (kept by its task and its sealed state). Past it
/// the request is refused `-32602`; real clients declare a few hundred.
pub(crate) const MAX_CLIENT_CAPABILITIES: usize = 64 * 1024;

/// Why a client's declaration of `bytes` bytes is refused.
pub(crate) fn capabilities_too_large(what: &str, bytes: usize) -> RpcError {
    RpcError::invalid_params(format!(
        "{what} is {bytes} bytes, over the {MAX_CLIENT_CAPABILITIES} bytes the server keeps of a \
         client's declarations"
    ))
}

/// Limits that protect a server from its clients.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) max_message_size: usize,
    pub(crate) max_header_size: usize,
    pub(crate) max_in_flight: usize,
    /// Bytes of a session's output that may wait for its transport.
    pub(crate) max_queued_output: usize,
    pub(crate) tool_time_limit: Option<Duration>,
    pub(crate) shutdown_grace: Duration,
    pub(crate) client_request_timeout: Duration,
    pub(crate) max_subscriptions: usize,
    pub(crate) max_uri_length: usize,
    /// Bytes of requests one principal may have in flight in a process.
    pub(crate) max_in_flight_bytes: usize,
}

/// The items a server serves, compiled, with each dialect's lists: one
/// immutable value, replaced whole by an edit ([`listing`]).
pub(crate) struct Listing {
    pub(crate) catalog: Catalog,
    /// MCP v1.0's capabilities and lists, serialised once.
    pub(crate) v1: v1::Lists,
    /// The Model Context Protocol's capabilities and list pages,
    /// serialised once.
    pub(crate) model_context: model_context::Lists,
    /// The tool arguments the 2026-07-28 revision mirrors into headers
    /// (read by the HTTP transport; checked at build whatever the
    /// features).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) mirrors: revision_2026::mirror::Mirrors,
}

impl AsRef<Catalog> for Listing {
    fn as_ref(&self) -> &Catalog {
        &self.catalog
    }
}

/// Everything a session needs: fixed once built, but for the items
/// (replaced whole by an edit, [`listing`](Self::listing)) and the
/// handle's session registry.
pub(crate) struct ServerInner {
    pub(crate) info: ServerInfo,
    /// The items served now, and how the next listing is compiled.
    pub(crate) listings: listing::Listings,
    pub(crate) protocols: Protocols,
    pub(crate) limits: Limits,
    pub(crate) handle: ServerHandle,
    /// The 2026-07-28 revision's keys and hints.
    pub(crate) revision_2026: revision_2026::Revision2026Settings,
    /// Where tasks are kept, and for how long.
    pub(crate) tasks: crate::task::TaskSettings,
    /// The bytes of requests each principal has in flight here.
    pub(crate) in_flight: Arc<crate::in_flight::InFlight>,
}

/// Capabilities announced even without items of their kind.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Providers {
    pub(crate) tools: bool,
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
}

impl ServerInner {
    /// The items served now, compiled, with each dialect's lists: a
    /// request reads it once and keeps it.
    pub(crate) fn listing(&self) -> Arc<Listing> {
        self.listings.current()
    }
}

/// The client, as its `initialize` described it (Model Context Protocol).
#[derive(Debug, Clone)]
pub(crate) struct ClientInfo {
    /// The negotiated protocol version, whose shapes the session's
    /// replies take.
    pub(crate) revision: model_context::Revision,
    /// The client's declared capabilities.
    pub(crate) capabilities: Value,
}

impl ClientInfo {
    /// The negotiated protocol version, as `protocolVersion` wrote it.
    #[cfg(any(feature = "http", feature = "otel"))]
    pub(crate) fn version(&self) -> &'static str {
        self.revision.as_str()
    }

    /// Whether the negotiated revision carries what app pages need
    /// (`_meta` on tools and resources, `structuredContent`): 2025-06-18
    /// on.
    pub(crate) fn carries_apps(&self) -> bool {
        self.revision.has_structured_content()
    }

    /// The client of a session another process saved, if it negotiated a
    /// version this server speaks over HTTP.
    #[cfg(feature = "http")]
    pub(crate) fn saved(version: &str, capabilities: Value) -> Option<Self> {
        let revision =
            model_context::Revision::of_session(version).filter(|r| r.is_served_over_http())?;
        Some(Self {
            revision,
            capabilities,
        })
    }
}

/// The resources a Model Context Protocol client subscribed to, by URI.
#[derive(Debug, Default)]
pub(crate) struct Subscriptions(Mutex<HashSet<String>>);

impl Subscriptions {
    /// Whether the client subscribed to nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }

    /// Subscribes to `uri` unless that would make more than `most`
    /// subscriptions: `false` then. Subscribing again to a URI is free.
    pub(crate) fn add_within(&self, uri: &str, most: usize) -> bool {
        let mut uris = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if uris.contains(uri) {
            return true;
        }
        if uris.len() >= most {
            return false;
        }
        uris.insert(uri.to_owned());
        true
    }

    /// Subscribes to, or unsubscribes from, a resource's updates: whether
    /// that changed what the client subscribed to.
    pub(crate) fn set(&self, uri: &str, on: bool) -> bool {
        let mut uris = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if on {
            uris.insert(uri.to_owned())
        } else {
            uris.remove(uri)
        }
    }

    /// Whether the client subscribed to `uri`.
    pub(crate) fn contains(&self, uri: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(uri)
    }
}

/// What a dialect reads of the session it serves; the session implements
/// it. A dialect sees nothing else of a session and changes nothing: what
/// it wants recorded comes back as a [`Change`] with its reply.
pub(crate) trait SessionState {
    /// The built server.
    fn server(&self) -> &ServerInner;
    /// Whether the session runs over HTTP.
    fn over_http(&self) -> bool;
    /// The Model Context Protocol client, once initialized.
    fn client(&self) -> Option<&ClientInfo>;
    /// Whether the connection was served `server/discover` (2026-07-28)
    /// before any `initialize`.
    fn discovered(&self) -> bool;
    /// Whether the client subscribed to any resource.
    fn subscribes(&self) -> bool;
}

/// What a dialect asks its session to record, returned with a reply.
#[derive(Debug)]
pub(crate) enum Change {
    /// The client's `initialize` (the first one counts). (Boxed: it is
    /// rare, and a `Step` that holds a `Change` is moved on every request.)
    Client(Box<ClientInfo>),
    /// MCP v1.0's trace level.
    Trace(TraceLevel),
    /// The least severe log level sent to the client as log lines.
    LogLevel(LogLevel),
    /// Subscribes to (or unsubscribes from) a resource's updates.
    Subscription {
        /// The resource's URI.
        uri: String,
        /// Subscribe (`true`) or unsubscribe.
        on: bool,
    },
    /// The connection was served `server/discover` before any
    /// `initialize`: its requests read as 2026-07-28 from now on.
    Discovered,
}

/// Which protocols a server speaks
/// ([`ServerBuilder::protocols`](crate::ServerBuilder::protocols)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocols {
    /// Both, chosen per connection (docs/model-context.md §1). The default.
    #[default]
    Both,
    /// MCP v1.0 (Machine-to-Clawpedia Protocol) only.
    McpV1,
    /// The Model Context Protocol only.
    ModelContext,
}

impl Protocols {
    /// Whether MCP v1.0 is spoken.
    pub fn mcp_v1(self) -> bool {
        self != Self::ModelContext
    }

    /// Whether the Model Context Protocol is spoken.
    pub fn model_context(self) -> bool {
        self != Self::McpV1
    }
}

/// The dialect one session speaks, or one request of it: a Model Context
/// Protocol connection serves each 2026-07-28 request in that revision
/// ([`revision_2026`]), the rest in its session's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    McpV1,
    ModelContext,
    /// The Model Context Protocol's 2026-07-28 revision.
    Revision2026,
}

/// What to do with a request, given the session's phase.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Run the handshake: answer `initialize`.
    Initialize,
    /// Serve the request through the method table.
    Serve,
    /// Answer with this error and change nothing.
    Reject(RpcError),
}

/// What a notification asks of the session.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Control {
    /// The handshake is complete.
    Initialized,
    /// Stop the requests with this id.
    Cancel(RequestId),
    /// MCP v1.0's trace level.
    SetTrace(TraceLevel),
    /// Nothing (an unknown or malformed notification, logged).
    Ignore,
}

/// How much a session traces its requests (MCP v1.0's `$/logTrace`): the
/// dialect-neutral level its dialect reads from the client's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TraceLevel {
    /// No trace lines.
    Off,
    /// A line per request.
    Messages,
    /// A line per request, with its params and result.
    Verbose,
}

/// A request as a method table reads it: its id, method and params, the
/// one-pass reading of a tool call's params (when the message was one),
/// and who sent it.
pub(crate) struct Request<'r> {
    pub(crate) id: &'r RequestId,
    pub(crate) method: &'r str,
    pub(crate) params: Option<&'r RawValue>,
    pub(crate) call: Option<&'r ToolCall<'r>>,
    pub(crate) principal: Option<&'r Principal>,
}

/// A request as its dialect read it ([`Dialect::route`]): everything the
/// session needs to serve it, so that it asks the dialect nothing more
/// until the work's end is encoded.
pub(crate) struct Routed {
    /// The dialect the request speaks — its session's, or the 2026-07-28
    /// revision's for such a request on a Model Context Protocol
    /// connection — in which its errors and its end are encoded.
    pub(crate) dialect: Dialect,
    /// The items it was read against, which its job keeps.
    pub(crate) listing: Arc<Listing>,
    /// How it is served.
    pub(crate) step: Step,
    /// Its name in trace lines (MCP v1.0's `$/logTrace`; empty otherwise).
    pub(crate) trace_name: &'static str,
    /// Whether the changes its work fires go out as caused by it, before
    /// its reply: the Model Context Protocol's stream rule, for a session
    /// that subscribed to something.
    pub(crate) captures_causes: bool,
}

/// How a request is served.
pub(crate) enum Step {
    /// The reply is known at once.
    Reply(Reply),
    /// `initialize` succeeded: the session records the client, its
    /// handshake moves on, then this reply goes out.
    Initialized(Reply, Change),
    /// The reply is known at once, and the session records this first.
    Record(Reply, Change),
    /// The reply needs async work; `progress` is the request's
    /// `_meta.progressToken`, `round` what a 2026-07-28 request declared
    /// and answered with it; `as_task` says the work runs as a task (its
    /// request is answered once the task exists).
    Run {
        work: Work,
        progress: Option<Box<RawValue>>,
        round: Option<std::sync::Arc<crate::round_trip::RoundTrip>>,
        as_task: bool,
    },
    /// A 2026-07-28 `subscriptions/listen`: a stream of the changes the
    /// filter opts in to, until the client closes or cancels it. (Boxed:
    /// it is rare, and a `Step` is moved on every request.)
    Listen(Box<revision_2026::Filter>),
}

/// How a request's work ended.
pub(crate) enum Ended {
    /// It finished.
    Finished(Result<Done, Failure>),
    /// It was stopped first.
    Stopped(CancelReason),
    /// It panicked, with this message.
    Panicked(String),
}

/// What the encoder of a job's end needs to know besides the outcome.
pub(crate) struct JobInfo {
    /// The items the request was dispatched with.
    pub(crate) listing: Arc<Listing>,
    /// The tool it ran, if any (an index into the listing's catalog).
    pub(crate) tool: Option<usize>,
    /// Its time limit.
    pub(crate) limit: Option<Duration>,
    /// Its round, in a 2026-07-28 request.
    pub(crate) round: Option<std::sync::Arc<crate::round_trip::RoundTrip>>,
    /// Its result may depend on who asked (a token came with it).
    pub(crate) private: bool,
}

impl Dialect {
    /// Whether a request is let through in `phase`.
    fn admit(self, phase: Phase, method: &str, id: &RequestId) -> Admission {
        match self {
            Self::McpV1 => v1::admit(phase, method, id),
            Self::ModelContext => model_context::admit(phase, method),
            // No handshake: its `route` refuses what it does not have.
            Self::Revision2026 => Admission::Serve,
        }
    }

    /// Answers `initialize`: `Ok` (the reply, and what the session records
    /// of the client) when the handshake goes on.
    fn initialize(
        self,
        session: &impl SessionState,
        id: &RequestId,
        params: Option<&RawValue>,
    ) -> Result<(Reply, Change), Reply> {
        match self {
            Self::McpV1 => v1::initialize(session, id, params),
            Self::ModelContext | Self::Revision2026 => {
                model_context::initialize(session, id, params)
            }
        }
    }

    /// Reads a request in `phase`: which dialect it speaks (§2 of
    /// docs/architecture.md), its admission by that dialect's handshake
    /// rules, then `initialize` or the method table, against the items
    /// served now. The one way into a dialect for a request; its end leaves
    /// through [`encode_end`](Self::encode_end).
    pub(crate) fn route(
        self,
        session: &impl SessionState,
        phase: Phase,
        request: Request<'_>,
    ) -> Routed {
        let before_handshake = phase == Phase::AwaitingInitialize;
        let method = request.method;
        let dialect = self.of_request(
            method,
            request.params,
            request.call,
            before_handshake && session.discovered(),
        );
        let listing = session.server().listing();
        let mut step = match dialect.admit(phase, method, request.id) {
            Admission::Serve => match dialect {
                Self::McpV1 => v1::route(&listing, request),
                Self::ModelContext => {
                    let revision = model_context::revision_of(session);
                    model_context::route(revision, &listing, request)
                }
                Self::Revision2026 => revision_2026::route(session, &listing, request),
            },
            Admission::Reject(error) => Step::Reply(dialect.error(Some(request.id), &error)),
            Admission::Initialize => {
                match dialect.initialize(session, request.id, request.params) {
                    Ok((reply, change)) => Step::Initialized(reply, change),
                    Err(reply) => Step::Reply(reply),
                }
            }
        };
        if before_handshake
            && dialect.discovers(method)
            && let Step::Reply(reply) = step
        {
            step = Step::Record(reply, Change::Discovered);
        }
        // (Asked of work only: a reply known at once fires no changes.)
        let (trace_name, captures_causes) = match &step {
            Step::Run { work, .. } => (
                self.trace_name(work),
                self == Self::ModelContext && session.subscribes(),
            ),
            _ => ("", false),
        };
        Routed {
            dialect,
            listing,
            step,
            trace_name,
            captures_causes,
        }
    }

    /// Reads a notification.
    pub(crate) fn control(self, method: &str, params: Option<&RawValue>) -> Control {
        match self {
            Self::McpV1 => v1::control(method, params),
            Self::ModelContext | Self::Revision2026 => model_context::control(method, params),
        }
    }

    /// The reply to a request whose work ended, or `None` when it gets
    /// none (a request the Model Context Protocol client cancelled).
    pub(crate) fn encode_end(
        self,
        session: &impl SessionState,
        id: &RequestId,
        ended: Ended,
        job: &JobInfo,
    ) -> Option<Reply> {
        match self {
            Self::McpV1 => Some(v1::encode_end(id, ended, job)),
            Self::ModelContext => {
                model_context::encode_end(model_context::revision_of(session), id, ended, job)
            }
            Self::Revision2026 => revision_2026::encode_end(session.server(), id, ended, job),
        }
    }

    /// An error response in this dialect's table; `id` is `None` when the
    /// message's id could not be read.
    pub(crate) fn error(self, id: Option<&RequestId>, error: &RpcError) -> Reply {
        match self {
            Self::McpV1 => v1::error(id, error),
            Self::ModelContext | Self::Revision2026 => model_context::error(id, error),
        }
    }

    /// The error for a message over the size limit.
    pub(crate) fn too_large(self, declared: usize, limit: usize) -> RpcError {
        match self {
            Self::McpV1 => v1::too_large(declared, limit),
            Self::ModelContext | Self::Revision2026 => model_context::too_large(declared, limit),
        }
    }

    /// The error in place of a batch member's reply once the batch's
    /// replies have passed `limit` bytes: the member did not run, or
    /// (`ran`) ran and its reply was dropped.
    pub(crate) fn batch_over(self, limit: usize, ran: bool) -> RpcError {
        match self {
            Self::McpV1 => v1::batch_over(limit, ran),
            Self::ModelContext | Self::Revision2026 => model_context::batch_over(limit, ran),
        }
    }

    /// The error for a request refused because its principal's requests
    /// in flight hold too many bytes.
    pub(crate) fn too_much_in_flight(self, why: &crate::in_flight::OverBudget) -> RpcError {
        match self {
            Self::McpV1 => v1::too_much_in_flight(why),
            Self::ModelContext | Self::Revision2026 => RpcError::invalid_request(why.to_string()),
        }
    }

    /// The error for a request refused because shutdown began.
    pub(crate) fn shutting_down(self, id: &RequestId) -> Reply {
        match self {
            Self::McpV1 => v1::shutting_down(id),
            Self::ModelContext | Self::Revision2026 => model_context::shutting_down(id),
        }
    }

    /// The reply to a request cancelled before it ran (it was parked), if
    /// it gets one.
    pub(crate) fn cancelled_unstarted(self, id: &RequestId) -> Option<Reply> {
        match self {
            Self::McpV1 => Some(v1::cancelled(id)),
            Self::ModelContext | Self::Revision2026 => None,
        }
    }

    /// Whether a batch (a JSON array of messages) may be served.
    pub(crate) fn allows_batches(self, session: &impl SessionState) -> bool {
        match self {
            Self::McpV1 => true,
            Self::ModelContext => model_context::allows_batches(session),
            Self::Revision2026 => false,
        }
    }

    /// The notification announcing `push` to a session of this
    /// dialect, or `None` when it does not want it (or the dialect has no
    /// such notification: MCP v1.0 announces no list changes).
    pub(crate) fn pushed(self, subscriptions: &Subscriptions, push: &Push) -> Option<Vec<u8>> {
        match (self, push) {
            (Self::McpV1, Push::Updated(uri)) => Some(v1::resource_changed(uri)),
            (Self::McpV1, Push::ListChanged(_)) | (Self::Revision2026, _) => None,
            (Self::ModelContext, push) => model_context::pushed(subscriptions, push),
        }
    }

    /// Whether a tool's requests to the client (elicitation, sampling,
    /// roots) travel on the session itself, answered by the client's
    /// responses there (2025-11-25); a 2026-07-28 request asks in its own
    /// round instead, and MCP v1.0 asks nothing.
    pub(crate) fn asks_on_session(self) -> bool {
        self == Self::ModelContext
    }

    /// The protocol version every request in this dialect speaks, or
    /// `None` when a session negotiates it (`initialize`'s answer, the
    /// Model Context Protocol's 2025 revisions). MCP v1.0 names no
    /// version on the wire: its own is 1.0. (Read by the `otel` span.)
    #[cfg(feature = "otel")]
    pub(crate) fn fixed_version(self) -> Option<&'static str> {
        match self {
            Self::McpV1 => Some("1.0"),
            Self::ModelContext => None,
            Self::Revision2026 => Some(revision_2026::VERSION),
        }
    }

    /// Whether, once its client's input ends, the requests still in flight
    /// get the shutdown grace period to finish, then are stopped (the Model
    /// Context Protocol); MCP v1.0's finish however long they take.
    pub(crate) fn bounds_work_after_input(self) -> bool {
        self != Self::McpV1
    }

    /// Whether `null` is a valid request id (JSON-RPC 2.0, MCP v1.0); the
    /// Model Context Protocol allows only strings and numbers.
    pub(crate) fn allows_null_ids(self) -> bool {
        self == Self::McpV1
    }

    /// What this dialect sends its client on a tool's behalf, or `None`
    /// when it carries nothing back (MCP v1.0).
    pub(crate) fn to_client(self) -> Option<&'static ToClient> {
        match self {
            Self::McpV1 => None,
            Self::ModelContext | Self::Revision2026 => Some(&model_context::to_client::MESSAGES),
        }
    }

    /// A trace line for a request (MCP v1.0's `$/logTrace`), `elapsed`
    /// microseconds after it was read, with its reply when `verbose`; the
    /// Model Context Protocol has none.
    pub(crate) fn trace_line(
        self,
        method: &str,
        id: &RequestId,
        elapsed: u128,
        verbose: Option<&[u8]>,
    ) -> Option<Vec<u8>> {
        match self {
            Self::McpV1 => Some(v1::trace_line(method, id, elapsed, verbose)),
            Self::ModelContext | Self::Revision2026 => None,
        }
    }

    /// Whether a notification `method` is heard on a connection that has
    /// not initialized: a 2026-07-28 request's cancellation is.
    pub(crate) fn hears_before_handshake(self, method: &str) -> bool {
        self == Self::ModelContext && method == model_context::methods::CANCELLED
    }

    /// The name of a request in this dialect's trace lines (MCP v1.0's
    /// `$/logTrace`); the Model Context Protocol has none.
    fn trace_name(self, work: &Work) -> &'static str {
        match self {
            Self::McpV1 => v1::trace_name(work),
            Self::ModelContext | Self::Revision2026 => "",
        }
    }
}

/// What a dialect sends its client on a tool's behalf: the bytes of
/// progress, of a log line and of the notice that the server stopped
/// waiting for an answer, and the methods of its requests to the client.
#[derive(Debug)]
pub(crate) struct ToClient {
    /// A progress notification for the request whose token is given.
    pub(crate) progress: fn(&RawValue, f64, Option<f64>, Option<&str>) -> Vec<u8>,
    /// A tool's log line.
    pub(crate) log_line: fn(LogLevel, Box<RawValue>) -> Vec<u8>,
    /// The notice that the server no longer waits for its request `id`.
    pub(crate) stopped_waiting: fn(u64) -> Vec<u8>,
    /// The method of a request to the client.
    pub(crate) method: fn(crate::tool::ClientRequest) -> &'static str,
}

/// The list items made by `item` of those of `all` that `shows` (by
/// index) lets a principal see.
pub(crate) fn visible<'a, T, I>(
    all: &'a [T],
    shows: impl Fn(usize) -> bool,
    item: impl Fn(&'a T) -> I,
) -> Vec<I> {
    all.iter()
        .enumerate()
        .filter(|(i, _)| shows(*i))
        .map(|(_, t)| item(t))
        .collect()
}

/// Serialises a fixed value once. The protocol types always serialise.
pub(crate) fn raw<T: serde::Serialize>(value: &T) -> Box<serde_json::value::RawValue> {
    serde_json::value::to_raw_value(value).unwrap_or_else(|e| {
        tracing::error!("serialising a fixed list failed: {e}");
        serde_json::value::RawValue::from_string("null".into()).unwrap_or_default()
    })
}

/// What a batch member is told once its batch's replies passed `limit`
/// bytes.
fn batch_over_text(limit: usize, ran: bool) -> String {
    if ran {
        format!(
            "this request ran, but its reply was dropped: this batch's replies passed {limit} bytes; send the request alone"
        )
    } else {
        format!(
            "not run: this batch's replies passed {limit} bytes; send the request alone or in a smaller batch"
        )
    }
}
