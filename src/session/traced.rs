//! A request's trace (feature `otel`, [`crate::otel`]): its server span,
//! made when it is dispatched, named once its dialect read it, entered
//! while its work runs, and ended with its reply's outcome. Without the
//! feature, a [`Traced`] is nothing and costs nothing.

#[cfg(feature = "otel")]
use super::shared::Shared;
use crate::dialect::{Ended, Routed};
#[cfg(feature = "otel")]
use crate::jsonrpc::Incoming;
use crate::jsonrpc::Reply;
use crate::principal::Caller;

/// A request's server span (feature `otel`), or nothing.
#[derive(Debug, Clone)]
pub(crate) struct Traced {
    #[cfg(feature = "otel")]
    span: tracing::Span,
}

impl Default for Traced {
    /// No span.
    fn default() -> Self {
        Self {
            #[cfg(feature = "otel")]
            span: tracing::Span::none(),
        }
    }
}

/// How a tool's call ended, when the tool itself failed: its text, which a
/// result marked `isError` carries (nothing without the feature).
#[derive(Debug, Default)]
pub(crate) struct ToolFailure {
    #[cfg(feature = "otel")]
    text: Option<String>,
}

#[cfg(feature = "otel")]
impl Traced {
    /// The span of `message`, if it is a request: its parent is the trace
    /// context its `_meta` carries.
    pub(crate) fn of_request(shared: &Shared, message: &Incoming<'_>, caller: &Caller) -> Self {
        use crate::dialect::kept_meta;
        use crate::jsonrpc::RequestId;
        use crate::trace_context::{Carried, Transport, carried_by, json_str, request_span};

        let Incoming::Request {
            id,
            method,
            params,
            call,
        } = message
        else {
            return Self::default();
        };
        // (A request span no subscriber wants is not made: nothing to read.)
        if !tracing::enabled!(target: crate::trace_context::TARGET, tracing::Level::INFO) {
            return Self::default();
        }
        let carried = match call {
            // (Read with the call, its string members as written.)
            Some(call) => Carried(
                [
                    kept_meta::TRACEPARENT,
                    kept_meta::TRACESTATE,
                    kept_meta::BAGGAGE,
                ]
                .map(|i| call.meta(i).and_then(|text| json_str(text.get()))),
            ),
            None => carried_by(params.map(|p| p.get())),
        };
        let id = match id {
            RequestId::Number(n) | RequestId::String(n) => Some(&**n),
            RequestId::Null => None,
        };
        #[cfg(feature = "http")]
        let transport = match &caller.head {
            Some(head) => Transport::Http {
                version: head.version,
                peer: head.peer_addr(),
                forwarded_for: head.forwarded_for,
            },
            None => Transport::Stdio,
        };
        #[cfg(not(feature = "http"))]
        let transport = {
            let _ = caller;
            Transport::Stdio
        };
        let session = shared.session_id.get().map(|s| &**s);
        Self {
            span: request_span(method, id, transport, session, &carried),
        }
    }

    /// Records what the dialect read: the protocol version the request
    /// speaks, and its target (the tool, prompt or resource it names).
    pub(crate) fn routed(&self, shared: &Shared, method: &str, routed: &Routed) {
        use crate::dialect::{Change, ClientInfo, Step};
        use crate::engine::Work;
        use crate::trace_context::{Target, target, version};

        // (Nothing is recorded, nor formatted, for a span no one wants.)
        if self.span.is_disabled() {
            return;
        }
        let spoken = routed
            .dialect
            .fixed_version()
            .or_else(|| match &routed.step {
                Step::Initialized(_, Change::Client(client)) => Some(client.version()),
                _ => shared.client.get().map(ClientInfo::version),
            });
        if let Some(spoken) = spoken {
            version(&self.span, spoken);
        }
        let catalog = &routed.listing.catalog;
        let named = match &routed.step {
            Step::Run {
                work: Work::CallTool { tool, .. },
                ..
            } => catalog
                .tools
                .get(*tool)
                .map(|t| Target::Tool(&t.definition.name)),
            Step::Run {
                work: Work::GetPrompt { prompt, .. },
                ..
            } => catalog
                .prompts
                .get(*prompt)
                .map(|p| Target::Prompt(&p.definition.name)),
            Step::Run {
                work: Work::ReadResource { uri },
                ..
            }
            | Step::Record(_, Change::Subscription { uri, .. }) => Some(Target::Resource(uri)),
            _ => None,
        };
        if let Some(named) = named {
            target(&self.span, method, named);
        }
    }

    /// The tool's own failure in how its work `ended`, if the span records
    /// anything.
    pub(crate) fn failure_of(&self, ended: &Ended) -> ToolFailure {
        use crate::engine::Failure;
        use crate::tool::CancelReason;
        if self.span.is_disabled() {
            return ToolFailure::default();
        }
        // (A dialect that answers one of these with a JSON-RPC error, as
        // MCP v1.0 answers a time limit, records that error instead.)
        let text = match ended {
            Ended::Finished(Err(Failure::InvalidArguments(text))) => Some(text.clone()),
            Ended::Finished(Err(Failure::Tool(e))) => Some(e.message().to_owned()),
            Ended::Stopped(CancelReason::TimeLimit) => {
                Some("the tool ran past its time limit and was stopped".to_owned())
            }
            _ => None,
        };
        ToolFailure { text }
    }

    /// Ends the span with `reply`'s outcome: its error, or the tool's own
    /// failure in a result (`isError`), or a result.
    pub(crate) fn ended(&self, reply: Option<&Reply>, tool_failure: ToolFailure) {
        use crate::trace_context::{SpanEnd, ended};

        if self.span.is_disabled() {
            return;
        }
        let message;
        let outcome = match (
            reply.and_then(|r| r.error.map(|code| (code, r))),
            &tool_failure.text,
        ) {
            (Some((code, reply)), _) => {
                message = error_message(&reply.bytes);
                SpanEnd::Error(code, message.as_deref().unwrap_or_default())
            }
            (None, Some(text)) => SpanEnd::ToolError(text),
            (None, None) => SpanEnd::Result,
        };
        ended(&self.span, outcome);
    }

    /// The span the request's work runs in, unless no subscriber wants it
    /// (then the work's own debug span is made, as without the feature).
    pub(crate) fn span(&self) -> Option<&tracing::Span> {
        Some(&self.span).filter(|span| !span.is_disabled())
    }
}

/// The message of an error reply this server wrote, as the client reads
/// it (read back only for a span that records it).
#[cfg(feature = "otel")]
fn error_message(reply: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Reply {
        error: Message,
    }
    #[derive(serde::Deserialize)]
    struct Message {
        message: String,
    }
    serde_json::from_slice::<Reply>(reply)
        .ok()
        .map(|r| r.error.message)
}

#[cfg(not(feature = "otel"))]
impl Traced {
    /// Nothing to trace.
    #[inline(always)]
    pub(crate) fn of_request<S, M>(_: &S, _: &M, _: &Caller) -> Self {
        Self {}
    }

    #[inline(always)]
    pub(crate) fn routed<S>(&self, _: &S, _: &str, _: &Routed) {}

    #[inline(always)]
    pub(crate) fn failure_of(&self, _: &Ended) -> ToolFailure {
        ToolFailure {}
    }

    #[inline(always)]
    pub(crate) fn ended(&self, _: Option<&Reply>, _: ToolFailure) {}

    #[inline(always)]
    pub(crate) fn span(&self) -> Option<&tracing::Span> {
        None
    }
}
