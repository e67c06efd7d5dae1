//! Arbitrary bytes, written in arbitrary chunks, into a whole stdio session
//! (`Server::serve_io` over an in-memory duplex pipe, on a current-thread
//! runtime), with a server holding one echo tool. Invariants:
//! - the output is nothing but `Content-Length: N\r\n\r\n` + N bytes of
//!   compact JSON, each a JSON-RPC response, notification or batch of
//!   responses (docs/mcp-v1.md §1, §7);
//! - the server reads all of its input, the session ends after the input
//!   ends (within 10 s: a hang guard), nothing panics, `serve_io` is `Ok`.
#![no_main]

use std::time::Duration;

use clawmcp::definition::ToolDefinition;
use clawmcp::{Server, ToolContext, tool_fn};
use clawmcp_fuzz::{check_stdio_output, pieces, plan};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Pipe buffer sizes, by `choice` (bits 0-1).
const PIPES: [usize; 4] = [16, 256, 4096, 64 * 1024];

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
    let pipe = PIPES[plan.choice & 3];
    let limit = if plan.choice & 4 != 0 { 256 } else { 4096 };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let (served, output) = runtime.block_on(async {
        let server = server(limit);
        let (client, server_end) = tokio::io::duplex(pipe);
        let (server_read, server_write) = tokio::io::split(server_end);
        let (mut from_server, mut to_server) = tokio::io::split(client);
        let serve = server.serve_io(server_read, server_write);
        let write = async move {
            for piece in pieces(plan.data, &plan.chunks) {
                to_server.write_all(piece).await?;
                tokio::task::yield_now().await;
            }
            to_server.shutdown().await
        };
        let read = async move {
            let mut out = Vec::new();
            from_server.read_to_end(&mut out).await.map(|_| out)
        };
        let (served, written, output) = tokio::time::timeout(Duration::from_secs(10), async {
            tokio::join!(serve, write, read)
        })
        .await
        .expect("the session hangs after its input ended");
        written.expect("the server reads all of its input");
        (served, output.expect("the output is readable"))
    });
    assert!(served.is_ok(), "serve_io failed: {served:?}");
    if let Err(e) = check_stdio_output(&output) {
        panic!("{e}\noutput: {:?}", String::from_utf8_lossy(&output));
    }
});
