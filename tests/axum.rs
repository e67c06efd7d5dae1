//! The endpoint mounted in an axum 0.8 app (issue "fit the Rust web
//! ecosystem"): as a tower Service it nests (`nest_service`) and routes
//! (`route_service`) in one line, serves both dialects at whatever path it
//! is mounted on, and ends its streams when the app shuts down through
//! `ServerHandle::shutdown_on`.
#![cfg(all(feature = "http", feature = "schemars"))]

mod http_support;

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use clawmcp::Server;
use clawmcp::transport::HttpConfig;
use http_support::{Client, Probe, builder, echo, empty, full, request, result};
use hyper::{Method, StatusCode};
use serde_json::json;
use tokio::sync::oneshot;

const PATIENCE: Duration = Duration::from_secs(10);

async fn serve(
    app: Router,
    server: &Server,
) -> (SocketAddr, oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let signal = server.handle().shutdown_on(async {
        let _ = stopped.await;
    });
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(signal)
            .await
            .unwrap();
    });
    (addr, stop, task)
}

fn mcp_post(
    path: &str,
    body: serde_json::Value,
    session: Option<&str>,
) -> hyper::Request<http_support::ReqBody> {
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    if let Some(session) = session {
        headers.push(("mcp-session-id", session));
    }
    request(
        Method::POST,
        path,
        &headers,
        full(serde_json::to_vec(&body).unwrap()),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_and_routed_services_serve_both_dialects_at_their_mount_paths() {
    let server = builder(&Probe::default()).build().unwrap();
    let mcp = server.http_service(HttpConfig::default());
    let app = Router::new()
        .route("/health", get(|| async { "ok" }))
        .nest_service("/api/mcp", mcp.clone())
        .route_service("/mcp", mcp);
    let (addr, stop, task) = serve(app, &server).await;
    let mut client = Client::connect(addr).await;
    let health = client
        .exchange(request(Method::GET, "/health", &[], empty()))
        .await;
    assert_eq!(health.status, StatusCode::OK);
    for path in ["/api/mcp", "/mcp"] {
        // MCP v1.0, a single exchange.
        let body = serde_json::to_vec(&echo(1, path)).unwrap();
        let reply = client
            .exchange(request(
                Method::POST,
                path,
                &[("content-type", "application/json")],
                full(body),
            ))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert_eq!(result(&reply.json(), 1)["output"]["message"], path);
        // The Model Context Protocol: a session, then a call in it.
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}});
        let opened = client.exchange(mcp_post(path, init, None)).await;
        assert_eq!(opened.status, StatusCode::OK, "{path}");
        let session = opened
            .header("mcp-session-id")
            .expect("a session id")
            .to_owned();
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": "echo", "arguments": {"message": "mc"}}});
        let called = client.exchange(mcp_post(path, call, Some(&session))).await;
        assert_eq!(
            called.json()["result"]["structuredContent"]["message"],
            "mc",
            "{path}"
        );
    }
    let _ = stop.send(());
    tokio::time::timeout(PATIENCE, task)
        .await
        .expect("the app stops")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_apps_graceful_shutdown_ends_an_open_mcp_stream() {
    let server = builder(&Probe::default()).build().unwrap();
    let app = Router::new().nest_service("/mcp", server.http_service(HttpConfig::default()));
    let (addr, stop, task) = serve(app, &server).await;
    let mut client = Client::connect(addr).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let opened = client.exchange(mcp_post("/mcp", init, None)).await;
    let session = opened
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    // The GET stream stays open...
    let mut streamer = Client::connect(addr).await;
    let get = request(
        Method::GET,
        "/mcp",
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", &session),
        ],
        empty(),
    );
    let response = streamer.send(get).await;
    assert_eq!(response.status(), StatusCode::OK);
    // ...until the app shuts down: then it ends, and so does the app.
    let _ = stop.send(());
    let body = tokio::time::timeout(
        PATIENCE,
        http_body_util::BodyExt::collect(response.into_body()),
    )
    .await
    .expect("the stream ends");
    assert!(body.is_ok());
    drop(client);
    drop(streamer);
    tokio::time::timeout(PATIENCE, task)
        .await
        .expect("the app stops")
        .unwrap();
}
