//! The MCP endpoint in an axum 0.8 app, beside the app's own `/health`
//! route: both dialects (MCP v1.0 and the Model Context Protocol's
//! Streamable HTTP) at `/mcp`, and one graceful shutdown for all of it.
//!
//! ```sh
//! cargo run --example axum                       # listens on 127.0.0.1:3000
//! cargo run --example axum -- 127.0.0.1:3001     # elsewhere
//! curl -s http://127.0.0.1:3000/health
//! curl -s http://127.0.0.1:3000/mcp -H 'Content-Type: application/json' \
//!   -d '{"jsonrpc":"2.0","method":"mcp/executeTool","params":{"id":"mcp://axum-example/tools/echo:v1","arguments":{"message":"hi"}},"id":2}'
//! ```
//! Ctrl-C (or SIGTERM) stops accepting, lets requests in flight finish,
//! ends open MCP streams, and exits. The app gives the endpoint each
//! client's address (`PeerAddr`), so that its limits per client (streams,
//! sessions, bytes in flight, tasks) count each one apart.

use std::net::SocketAddr;

use axum::Router;
use axum::extract::{ConnectInfo, Request};
use axum::middleware::{self, Next};
use axum::routing::get;
use clawmcp::transport::{HttpConfig, PeerAddr};
use clawmcp::typed_tool;
use clawmcp::{Server, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The echo tool's arguments and result.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Echo {
    /// The text to send back.
    message: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _log = clawmcp::logging::init();
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3000".into());

    // The MCP server: one typed tool.
    let echo = typed_tool(
        "mcp://axum-example/tools/echo:v1",
        "echo",
        "Returns its message.",
        |args: Echo| async move { Ok::<_, ToolError>(args) },
    );
    let server = Server::builder().name("axum-example").tool(echo).build()?;

    // The app: its own route, and the MCP endpoint nested at /mcp. The
    // service is a tower Service; nested, it serves the path it is given.
    let app = Router::new()
        .route("/health", get(|| async { "ok\n" }))
        .nest_service("/mcp", server.http_service(HttpConfig::default()))
        .layer(middleware::from_fn(peer_addr));

    // Loopback only, as every example here (see SECURITY.md).
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    tracing::info!(addr = %listener.local_addr()?, "serving /health and /mcp");
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    // One call: on the signal, the MCP server shuts down too, so its
    // open streams end with the app's connections.
    .with_graceful_shutdown(server.handle().shutdown_on(signal()))
    .await?;
    Ok(())
}

/// Puts the client's address where the endpoint reads it: without it, a
/// client without a token is bounded only by the endpoint's totals, not
/// by its own share.
async fn peer_addr(
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut request: Request,
    next: Next,
) -> axum::response::Response {
    request.extensions_mut().insert(PeerAddr(peer));
    next.run(request).await
}

/// Completes on Ctrl-C or SIGTERM.
async fn signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = async {
            match term.as_mut() {
                Some(term) => { term.recv().await; }
                None => std::future::pending().await,
            }
        } => {}
    }
}
