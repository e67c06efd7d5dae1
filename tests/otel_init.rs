//! `otel::init` with the export on (feature `otel`). It sets the global
//! subscriber, tracer provider and propagator once per process, and reads
//! the endpoint from the environment: the test runs itself again in a
//! process of its own, with the endpoint set.

use std::collections::HashMap;

use opentelemetry::trace::{Span as _, TraceContextExt as _, Tracer as _};

const TEST: &str = "init_makes_its_export_and_propagator_the_global_ones";

/// With the export on, a tool's own `opentelemetry::global` tracer makes
/// real spans, and the global propagator writes W3C trace context; a
/// second `init`, with the subscriber already set, exports nothing.
#[test]
fn init_makes_its_export_and_propagator_the_global_ones() {
    if std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").is_none() {
        let status = std::process::Command::new(std::env::current_exe().expect("the test binary"))
            .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
            // (Nothing listens there: the export fails, and is logged.)
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
            .env_remove("OTEL_SDK_DISABLED")
            .status()
            .expect("the test runs itself again");
        assert!(status.success(), "{status}");
        return;
    }
    let telemetry = clawmcp::otel::init();
    assert!(
        telemetry.exporting(),
        "the endpoint named turns the export on"
    );

    let tracer = opentelemetry::global::tracer("a tool");
    let mut span = tracer.start("the tool's own span");
    let context = span.span_context().clone();
    assert!(
        context.is_valid(),
        "the global tracer is the export's, not a no-op"
    );
    span.end();

    let mut carried = HashMap::new();
    let cx = opentelemetry::Context::new().with_remote_span_context(context.clone());
    opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&cx, &mut carried));
    let traceparent = carried
        .get("traceparent")
        .expect("a traceparent is written");
    assert!(
        traceparent.contains(&context.trace_id().to_string()),
        "{traceparent}"
    );

    let again = clawmcp::otel::init();
    assert!(!again.exporting(), "no layer feeds a second export");
    again.shutdown();
    telemetry.shutdown();
}
