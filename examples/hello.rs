//! The smallest useful server: one typed tool, on stdio. The same code as
//! the crate-level docs. Run: `cargo run --example hello`.
use clawmcp::{Server, ToolError, typed_tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The echo tool's arguments and result.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Echo {
    /// The text to send back.
    message: String,
}

async fn echo(args: Echo) -> Result<Echo, ToolError> {
    Ok(args)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let echo = typed_tool(
        "mcp://hello/tools/echo:v1",
        "echo",
        "Returns its message.",
        echo,
    );
    let server = Server::builder().name("hello").tool(echo).build()?;
    server.serve_stdio().await?; // until stdin ends
    Ok(())
}
