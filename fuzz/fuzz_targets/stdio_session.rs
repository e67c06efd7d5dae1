//! Arbitrary bytes, written in arbitrary chunks, into a whole stdio session
//! (`Server::serve_io` over an in-memory duplex pipe, on a current-thread
//! runtime), with a server holding one echo tool. Invariants:
//! - the output is nothing but `Content-Length: N\r\n\r\n` + N bytes of
//!   compact JSON, each a JSON-RPC response, notification or batch of
//!   responses (docs/mcp-v1.md §1, §7);
//! - the server reads all of its input, the session ends after the input
//!   ends (within 10 s: a hang guard), nothing panics, `serve_io` is `Ok`.
#![no_main]

use clawmcp::definition::ToolDefinition;
use clawmcp::{Server, ToolContext, tool_fn};
use clawmcp_fuzz::{check_stdio_output, plan, serve_stdio_session};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

fn server(max_message_size: usize) -> Server {
    let echo = tool_fn(
        ToolDefinition {
            mcp_id: "mcp://fuzz/tools/echo:v1".into(),
            name: "echo".into(),
            description: "Returns its arguments.".into(),
            input_schema: json!({"type": "object"}),
            output_schema: json!({}),
        },
        |args: Value, _ctx: ToolContext| async move { Ok(args) },
    );
    Server::builder()
        .name("fuzz")
        .protocols(clawmcp::server::Protocols::McpV1)
        .tool(echo)
        .max_message_size(max_message_size)
        .build()
        .expect("the fuzz server builds")
}

fuzz_target!(|input: &[u8]| {
    let plan = plan(input);
    let limit = if plan.choice & 4 != 0 { 256 } else { 4096 };
    let output = serve_stdio_session(|| server(limit), &plan);
    if let Err(e) = check_stdio_output(&output) {
        panic!("{e}\noutput: {:?}", String::from_utf8_lossy(&output));
    }
});
