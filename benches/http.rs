//! Criterion benchmarks of HTTP single exchanges over loopback, with 1 and
//! 32 kept-alive connections. Run: `cargo bench --bench http`.

use std::time::{Duration, Instant};

use bytes::Bytes;
use clawmcp::definition::ToolDefinition;
use clawmcp::transport::HttpConfig;
use clawmcp::{Server, ToolContext, tool_fn};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

const BODY: &[u8] = br#"{"jsonrpc":"2.0","id":2,"method":"mcp/executeTool","params":{"id":"mcp://bench/tools/echo:v1","arguments":{"message":"0123456789abcdef"}}}"#;

fn server() -> Server {
    let definition = ToolDefinition {
        mcp_id: "mcp://bench/tools/echo:v1".into(),
        name: "echo".into(),
        description: "Echo.".into(),
        input_schema: json!({"type": "object", "additionalProperties": false, "required": ["message"],
                             "properties": {"message": {"type": "string"}}}),
        output_schema: json!({"type": "object", "required": ["message"],
                              "properties": {"message": {"type": "string"}}}),
    };
    Server::builder()
        .tool(tool_fn(definition, |args: Value, _ctx: ToolContext| async move {
            Ok(json!({ "message": args["message"] }))
        }))
        .build()
        .unwrap()
}

async fn connect(addr: std::net::SocketAddr) -> SendRequest<Full<Bytes>> {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    sender
}

async fn exchange(sender: &mut SendRequest<Full<Bytes>>, addr: std::net::SocketAddr) {
    let request = Request::post("/mcp")
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(BODY)))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(body.starts_with(br#"{"jsonrpc":"2.0","id":2,"result""#));
}

fn single_exchanges(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let addr = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = server();
        tokio::spawn(async move {
            server
                .serve_http_on(listener, HttpConfig::default(), std::future::pending())
                .await
        });
        addr
    });
    let mut group = c.benchmark_group("http-single-exchange");
    group.measurement_time(Duration::from_secs(5));
    for connections in [1usize, 32] {
        let mut senders: Vec<_> = rt.block_on(async {
            let mut senders = Vec::new();
            for _ in 0..connections {
                senders.push(connect(addr).await);
            }
            senders
        });
        group.throughput(Throughput::Elements(connections as u64));
        group.bench_function(format!("{connections}-connections"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let started = Instant::now();
                    let mut tasks = tokio::task::JoinSet::new();
                    for mut sender in senders.drain(..) {
                        tasks.spawn(async move {
                            for _ in 0..iters {
                                exchange(&mut sender, addr).await;
                            }
                            sender
                        });
                    }
                    while let Some(sender) = tasks.join_next().await {
                        senders.push(sender.unwrap());
                    }
                    started.elapsed()
                })
            });
        });
    }
    group.finish();
}

criterion_group!(benches, single_exchanges);
criterion_main!(benches);
