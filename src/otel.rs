//! OpenTelemetry traces (feature `otel`).
//!
//! With the feature on, every request the server serves — in either era of
//! the Model Context Protocol, and MCP v1.0 — has a server span, named
//! and attributed as OpenTelemetry's semantic conventions for MCP say:
//! `tools/call echo`, with `mcp.method.name`, `mcp.protocol.version`,
//! `mcp.session.id` (a Streamable HTTP session), `jsonrpc.request.id`,
//! `network.transport` (`pipe` on stdio, `tcp` over HTTP, with
//! `network.protocol.version` and the peer's `client.address` and
//! `client.port`; behind a reverse proxy trusted with
//! [`HttpConfig::trust_proxy`](crate::transport::HttpConfig::trust_proxy),
//! the client it names, and the proxy as `network.peer.address` and
//! `network.peer.port`),
//! `gen_ai.tool.name` and `gen_ai.operation.name` (`execute_tool`) for a
//! tool call, `gen_ai.prompt.name`, and on failure `error.type` (the
//! JSON-RPC error code, or `tool_error` for a result the tool marked an
//! error or a call stopped at its time limit) with the span's status. A
//! span keeps at most 256 bytes of what a client wrote (a method, an id,
//! a URI, an error's message), and a request answered "method not found"
//! is named `_OTHER`, so that no client makes span names of its own. Its
//! parent is the trace context the
//! request's `params._meta` carries (`traceparent`, `tracestate`), and
//! its `baggage` joins the span's context: a client that traces its
//! calls sees the server's spans in the same trace. A tool's own
//! `tracing` spans and events are children of the request's span, and a
//! request to the client (elicitation, sampling, roots) gets a client
//! span whose context travels in that request's `params._meta`.
//!
//! The spans are `tracing` spans at `info`, target `clawmcp::request`:
//! export them with any subscriber that has a `tracing-opentelemetry`
//! layer (and leave that target's spans out of a `fmt` layer, which would
//! format every request's fields), or with [`init`], which sets up
//! this crate's stderr logs and, when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, exports spans over
//! OTLP/HTTP (protobuf) in batches. Without an exporter, the spans cost a
//! little per request and record nothing (PERFORMANCE.md has the figure).
//!
//! A span's `mcp.session.id` is the session's id as its client sends it.
//! Without OAuth, that id is all a client needs to use the session: give
//! read access to the traces only to those who may.
//!
//! ```no_run
//! # async fn serve(server: clawmcp::Server) -> std::io::Result<()> { server.serve_stdio().await }
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 OTEL_SERVICE_NAME=weather
//!     let telemetry = clawmcp::otel::init();
//!     let server = clawmcp::Server::builder().name("weather").build()?;
//!     tokio::runtime::Runtime::new()?.block_on(serve(server))?;
//!     telemetry.shutdown(); // exports what is left before the process ends
//!     Ok(())
//! }
//! ```

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

use crate::logging::{LogGuard, level_from_env, stderr_writer};

/// How long [`Telemetry::shutdown`] waits for the last spans to be sent.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// Installs a global `tracing` subscriber: this crate's stderr logs (as
/// [`logging::init`](crate::logging::init) writes them, at `RUST_LOG`'s
/// level) and, when `OTEL_EXPORTER_OTLP_ENDPOINT` or
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (and `OTEL_SDK_DISABLED`
/// is not `true`), an OpenTelemetry layer that exports spans at `info`
/// and above over OTLP/HTTP (protobuf) in batches. The service is named
/// by `OTEL_SERVICE_NAME`, else by the executable's name;
/// `OTEL_RESOURCE_ATTRIBUTES` adds to it.
///
/// Call it outside any async runtime (before one starts), and keep the
/// returned [`Telemetry`] until the program ends: [`Telemetry::shutdown`]
/// sends the spans still queued. A failure to set up the exporter is
/// logged, and logs go on without it. Calling `init` when a global
/// subscriber is already set changes nothing (and exports nothing).
///
/// With the export on, `init` also makes its tracer provider and the W3C
/// Trace Context and Baggage propagator OpenTelemetry's global ones, so a
/// tool's own `opentelemetry::global` spans are exported too, and the
/// propagator carries the request's trace into calls the tool makes.
#[must_use = "dropping it at once ends the export and may lose the last log lines"]
pub fn init() -> Telemetry {
    let level = level_from_env();
    let (writer, log) = stderr_writer();
    // The log lines leave the requests' spans out: formatting each one's
    // fields would cost more than the request itself. With no exporter,
    // nothing then wants them, and they are not even made.
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .log_internal_errors(false)
        .with_filter(
            // (A filter by target, decided once per call site: a closure
            // would be asked at every span and event.)
            Targets::new()
                .with_default(LevelFilter::from_level(level))
                .with_target(crate::trace_context::TARGET, LevelFilter::OFF),
        );
    let (provider, problem) = match exporter() {
        Ok(provider) => (provider, None),
        Err(problem) => (None, Some(problem)),
    };
    let installed = match &provider {
        Some(provider) => {
            // The conventions' attributes only (no source location, thread
            // or timing fields), and a status from the request's outcome
            // alone (an error event a tool logs does not fail its span).
            let traces = tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("clawmcp"))
                .with_location(false)
                .with_threads(false)
                .with_tracked_inactivity(false)
                .with_target(false)
                .with_error_events_to_status(false)
                .with_filter(LevelFilter::INFO);
            (tracing_subscriber::registry().with(logs).with(traces)).try_init()
        }
        // (No layer at all, rather than an empty one, which would want
        // every span made.)
        None => tracing_subscriber::registry().with(logs).try_init(),
    };
    let provider = match (provider, installed) {
        (Some(provider), Ok(())) => {
            // A tool's own OpenTelemetry calls (`opentelemetry::global`'s
            // tracer, or its propagator injecting the trace into a call
            // the tool makes) join the same export and the same trace.
            opentelemetry::global::set_tracer_provider(provider.clone());
            opentelemetry::global::set_text_map_propagator(crate::trace_context::propagator());
            Some(provider)
        }
        (provider, Err(_)) => {
            tracing::debug!("a global tracing subscriber was already set");
            // (No span reaches an exporter no layer feeds.)
            if let Some(provider) = provider {
                let _ = provider.shutdown_with_timeout(SHUTDOWN_WAIT);
            }
            None
        }
        (None, Ok(())) => None,
    };
    match (&provider, problem) {
        (_, Some(problem)) => tracing::warn!("traces are not exported: {problem}"),
        (Some(_), None) => tracing::info!("exporting traces over OTLP/HTTP"),
        (None, None) => {}
    }
    Telemetry {
        provider,
        _log: log,
    }
}

/// The exporter the environment asks for: `None` when it names no
/// endpoint (or disables the SDK).
fn exporter() -> Result<Option<SdkTracerProvider>, String> {
    let named = |var: &str| std::env::var(var).is_ok_and(|v| !v.trim().is_empty());
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.trim() == "true");
    if disabled
        || !(named("OTEL_EXPORTER_OTLP_ENDPOINT") || named("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
    {
        return Ok(None);
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .build()
        .map_err(|e| e.to_string())?;
    let mut resource = Resource::builder();
    if !named("OTEL_SERVICE_NAME") {
        let program = std::env::current_exe().ok().and_then(|path| {
            let stem = path.file_stem()?.to_str()?;
            Some(stem.to_owned())
        });
        if let Some(program) = program {
            resource = resource.with_service_name(program);
        }
    }
    Ok(Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build(),
    ))
}

/// What [`init`] set up: keep it until the program ends.
#[derive(Debug)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
    _log: LogGuard,
}

impl Telemetry {
    /// Whether spans are exported (the environment named an endpoint).
    pub fn exporting(&self) -> bool {
        self.provider.is_some()
    }

    /// Sends the spans still queued (waiting a few seconds at most) and
    /// ends the export; then the log lines still queued. Call it when the
    /// server has stopped, outside any async runtime's worker (it blocks).
    pub fn shutdown(mut self) {
        self.end();
    }

    fn end(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(e) = provider.shutdown_with_timeout(SHUTDOWN_WAIT)
        {
            tracing::warn!("the last spans were not all exported: {e}");
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        self.end();
    }
}
