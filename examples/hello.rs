//! The smallest useful server: one tool, on stdio. The same code as the
//! crate-level docs.
//!
//! Run: `cargo run --example hello`, then send it framed messages on stdin.
use clawmcp::protocol::ToolDefinition;
use clawmcp::{Server, ToolContext, tool_fn};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let echo = ToolDefinition {
        mcp_id: "mcp://hello/tools/echo:v1".into(),
        name: "echo".into(),
        description: "Returns the message it is given.".into(),
        input_schema: json!({"type": "object", "additionalProperties": false,
            "required": ["message"], "properties": {"message": {"type": "string"}}}),
        output_schema: json!({"type": "object", "required": ["message"],
            "properties": {"message": {"type": "string"}}}),
    };
    let server = Server::builder()
        .name("hello")
        .tool(tool_fn(echo, |args: Value, _ctx: ToolContext| async move {
            Ok(json!({ "message": args["message"] }))
        }))
        .build()?;
    server.serve_stdio().await?; // until stdin ends
    Ok(())
}
