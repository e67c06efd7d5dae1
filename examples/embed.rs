//! Mounting the MCP endpoint in a hand-written hyper application, next to
//! the application's own routes (with axum, see `examples/axum.rs`).
//!
//! ```sh
//! cargo run --example embed
//! curl -s http://127.0.0.1:8081/health
//! curl -s -H 'Content-Type: application/json' http://127.0.0.1:8081/mcp \
//!   -d '{"jsonrpc":"2.0","method":"mcp/executeTool","params":{"id":"mcp://embed/tools/echo:v1","arguments":{"message":"hi"}},"id":2}'
//! ```

use std::convert::Infallible;

use bytes::Bytes;
use clawmcp::definition::ToolDefinition;
use clawmcp::transport::HttpConfig;
use clawmcp::{Server, ToolContext, tool_fn};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The MCP server: one tool.
    let echo = ToolDefinition {
        mcp_id: "mcp://embed/tools/echo:v1".into(),
        name: "echo".into(),
        description: "Returns the message it is given.".into(),
        input_schema: json!({"type": "object", "required": ["message"],
            "properties": {"message": {"type": "string"}}}),
        output_schema: json!({"type": "object", "properties": {"message": {"type": "string"}}}),
    };
    let server = Server::builder()
        .tool(tool_fn(echo, |args: Value, _ctx: ToolContext| async move {
            Ok(json!({ "message": args["message"] }))
        }))
        .build()?;
    // Its HTTP endpoint, at /mcp (other paths get 404 from it).
    let mcp = server.http_service(HttpConfig::default().path("/mcp"));

    // The application: bound to loopback, as every example here.
    let listener = TcpListener::bind("127.0.0.1:8081").await?;
    eprintln!("listening on http://{}", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        let mcp = mcp.clone();
        tokio::spawn(async move {
            // The app's router: its own /health route, everything else to MCP
            // (which answers 404 for paths other than its own).
            let routes = service_fn(move |request: Request<Incoming>| {
                let mcp = mcp.clone();
                async move {
                    let response: Response<BoxBody<Bytes, Infallible>> = match request.uri().path()
                    {
                        "/health" => Response::new(Full::new(Bytes::from_static(b"ok\n")).boxed()),
                        _ => mcp.respond(request).await.map(BodyExt::boxed),
                    };
                    Ok::<_, Infallible>(response)
                }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), routes);
            if let Err(e) = connection.await {
                eprintln!("connection error: {e}");
            }
        });
    }
}
