//! Arbitrary bytes, written in arbitrary chunks, into a whole stdio session
//! of a server that speaks both protocols (`Server::serve_io` over an
//! in-memory duplex pipe, on a current-thread runtime), holding a tool with
//! an output schema and one that returns every kind of content block.
//! Invariants:
//! - the output is the chosen dialect's framing and nothing else: for the
//!   Model Context Protocol, lines of compact JSON-RPC (a response, a
//!   notification or a request to the client), for MCP v1.0
//!   `Content-Length` frames (docs/mcp-v1.md §7);
//! - a session that negotiated a version before 2025-06-18 is sent no
//!   `structuredContent`, `outputSchema`, `title` or resource-link block
//!   outside a 2026-07-28 result (which says `resultType`)
//!   (docs/model-context.md §2);
//! - the server reads all of its input, the session ends after the input
//!   ends (within 10 s: a hang guard), nothing panics, `serve_io` is `Ok`.
#![no_main]

use clawmcp::content::{Content, ResourceContents, ResourceLink, ToolOutput};
use clawmcp::definition::{ToolDefinition, ToolMetadata};
use clawmcp::tool::rich_tool_fn;
use clawmcp::{Server, ToolContext, ToolError, tool_fn};
use clawmcp_fuzz::{check_line_output, check_stdio_output, plan, serve_stdio_session};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

fn definition(name: &str, output_schema: Value) -> ToolDefinition {
    ToolDefinition {
        mcp_id: format!("mcp://fuzz/tools/{name}:v1"),
        name: name.into(),
        description: "A fuzz tool.".into(),
        input_schema: json!({"type": "object"}),
        output_schema,
    }
}

fn server(max_message_size: usize) -> Server {
    let echo = tool_fn(
        definition("echo", json!({"type": "object"})),
        |args: Value, _ctx: ToolContext| async move { Ok(args) },
    )
    .with_metadata(ToolMetadata::new().title("Echo"));
    let rich = rich_tool_fn(
        definition("rich", json!({})),
        |_args: Value, _ctx: ToolContext| async move {
            let mut meta = serde_json::Map::new();
            meta.insert("k".into(), json!(1));
            Ok::<_, ToolError>(ToolOutput::content([
                Content::text("t"),
                Content::image(b"\x89PNG", "image/png"),
                Content::audio(b"RIFF", "audio/wav"),
                Content::resource(
                    ResourceContents::text("file:///a", "text/plain", "a").with_meta(meta),
                ),
                Content::resource_link(ResourceLink::new("file:///b", "b")),
            ]))
        },
    );
    Server::builder()
        .name("fuzz")
        .tool(echo)
        .tool(rich)
        .max_message_size(max_message_size)
        .build()
        .expect("the fuzz server builds")
}

/// The version the session negotiated: the first `initialize` result's.
fn negotiated(lines: &[Value]) -> Option<&str> {
    lines
        .iter()
        .find_map(|m| m["result"]["protocolVersion"].as_str())
}

/// Whether a result has a shape that 2025-06-18 added.
fn has_newer_shape(result: &Value) -> bool {
    let listed = |key: &str| {
        result[key].as_array().is_some_and(|items| {
            items
                .iter()
                .any(|i| i.get("title").is_some() || i.get("outputSchema").is_some())
        })
    };
    let link = result["content"]
        .as_array()
        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "resource_link"));
    result.get("structuredContent").is_some() || listed("tools") || link
}

fuzz_target!(|input: &[u8]| {
    let plan = plan(input);
    let limit = if plan.choice & 4 != 0 { 256 } else { 4096 };
    let output = serve_stdio_session(|| server(limit), &plan);
    if output.starts_with(b"Content-Length") {
        if let Err(e) = check_stdio_output(&output) {
            panic!("{e}\noutput: {:?}", String::from_utf8_lossy(&output));
        }
        return;
    }
    let lines = match check_line_output(&output) {
        Ok(lines) => lines,
        Err(e) => panic!("{e}\noutput: {:?}", String::from_utf8_lossy(&output)),
    };
    let messages: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_slice(l).expect("checked JSON"))
        .collect();
    if let Some(version @ ("2024-11-05" | "2025-03-26")) = negotiated(&messages) {
        for message in &messages {
            let result = &message["result"];
            assert!(
                result.get("resultType").is_some() || !has_newer_shape(result),
                "a {version} session was sent {message}"
            );
        }
    }
});
