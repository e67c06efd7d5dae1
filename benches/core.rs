//! Criterion benchmarks of the transport-agnostic core: frame codec,
//! `mcp/executeTool` through the dispatcher (with real and trivial schemas),
//! `mcp/listTools` with 10 and 10,000 tools, and a whole in-memory session
//! pipelining 64 requests. Run: `cargo bench --bench core`.

use std::hint::black_box;

use bytes::BytesMut;
use clawmcp::definition::ToolDefinition;
use clawmcp::transport::FrameCodec;
use clawmcp::{Server, ToolContext, tool_fn};
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::codec::{Decoder, Encoder};

const ECHO: &str = "mcp://bench/tools/echo:v1";

fn echo_request(id: usize, size: usize) -> Vec<u8> {
    let head = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"mcp/executeTool","params":{{"id":"{ECHO}","arguments":{{"message":""#
    );
    let tail = r#""}}}"#;
    let fill = size.saturating_sub(head.len() + tail.len()).max(1);
    format!("{head}{}{tail}", "x".repeat(fill)).into_bytes()
}

fn echo_server(strict: bool) -> Server {
    let (input, output) = if strict {
        (
            json!({"type": "object", "additionalProperties": false, "required": ["message"],
                   "properties": {"message": {"type": "string"}}}),
            json!({"type": "object", "additionalProperties": false, "required": ["message"],
                   "properties": {"message": {"type": "string"}}}),
        )
    } else {
        (json!({"type": "object"}), json!({}))
    };
    let definition = ToolDefinition {
        mcp_id: ECHO.into(),
        name: "echo".into(),
        description: "Echo.".into(),
        input_schema: input,
        output_schema: output,
    };
    Server::builder()
        .tool(tool_fn(definition, |args: Value, _ctx: ToolContext| async move {
            Ok(json!({ "message": args["message"] }))
        }))
        .build()
        .unwrap()
}

fn frame_codec(c: &mut Criterion) {
    let mut group = c.benchmark_group("frame");
    for size in [64, 1024, 64 * 1024, 1024 * 1024] {
        let body = echo_request(1, size);
        let mut framed = BytesMut::new();
        FrameCodec::new(usize::MAX)
            .encode(&body[..], &mut framed)
            .unwrap();
        group.throughput(Throughput::Bytes(framed.len() as u64));
        group.bench_with_input(BenchmarkId::new("decode", size), &framed, |b, framed| {
            let mut codec = FrameCodec::new(usize::MAX);
            b.iter_batched_ref(
                || framed.clone(),
                |buf| black_box(codec.decode(buf).unwrap()),
                BatchSize::SmallInput,
            );
        });
        group.bench_with_input(BenchmarkId::new("encode", size), &body, |b, body| {
            let mut codec = FrameCodec::new(usize::MAX);
            let mut out = BytesMut::with_capacity(body.len() + 32);
            b.iter(|| {
                out.clear();
                codec.encode(&body[..], &mut out).unwrap();
                black_box(out.len())
            });
        });
    }
    group.finish();
}

fn execute_tool(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("executeTool");
    group.throughput(Throughput::Elements(1));
    let request = bytes::Bytes::from(echo_request(2, 64));
    for (label, strict) in [("validated", true), ("trivial-schemas", false)] {
        let server = echo_server(strict);
        group.bench_function(label, |b| {
            b.iter(|| rt.block_on(server.serve_message(request.clone())).unwrap());
        });
    }
    group.finish();
}

fn list_tools(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("listTools");
    let request =
        bytes::Bytes::from_static(br#"{"jsonrpc":"2.0","id":3,"method":"mcp/listTools"}"#);
    for count in [10usize, 10_000] {
        let mut builder = Server::builder();
        for i in 0..count {
            let definition = ToolDefinition {
                mcp_id: format!("mcp://bench/tools/t{i}:v1"),
                name: format!("t{i}"),
                description: "A tool.".into(),
                input_schema: json!({"type": "object", "properties": {"x": {"type": "integer"}}}),
                output_schema: json!({"type": "object"}),
            };
            builder = builder.tool(tool_fn(
                definition,
                |args: Value, _ctx: ToolContext| async move { Ok(args) },
            ));
        }
        let server = builder.build().unwrap();
        group.bench_with_input(BenchmarkId::from_parameter(count), &server, |b, server| {
            b.iter(|| rt.block_on(server.serve_message(request.clone())).unwrap());
        });
        // executeTool must not grow with the number of tools.
        let call = bytes::Bytes::from(
            br#"{"jsonrpc":"2.0","id":4,"method":"mcp/executeTool","params":{"id":"mcp://bench/tools/t7:v1","arguments":{"x":1}}}"#.to_vec(),
        );
        group.bench_with_input(
            BenchmarkId::new("executeTool-among", count),
            &server,
            |b, server| {
                b.iter(|| rt.block_on(server.serve_message(call.clone())).unwrap());
            },
        );
    }
    group.finish();
}

fn pipelined_session(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = echo_server(true);
    let (client, server_end) = tokio::io::duplex(1 << 20);
    let (mut from_server, mut to_server) = tokio::io::split(client);
    rt.spawn(async move {
        let (r, w) = tokio::io::split(server_end);
        server.serve_io(r, w).await
    });
    let mut codec = FrameCodec::new(usize::MAX);
    let mut framed = BytesMut::new();
    let init =
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{}}}"#;
    codec.encode(&init[..], &mut framed).unwrap();
    let handshake = framed.split().to_vec();
    for i in 0..64 {
        codec
            .encode(&echo_request(100 + i, 64)[..], &mut framed)
            .unwrap();
    }
    let batch = framed.to_vec();
    let mut inbox = BytesMut::with_capacity(1 << 16);
    rt.block_on(async {
        to_server.write_all(&handshake).await.unwrap();
        while codec.decode(&mut inbox).unwrap().is_none() {
            from_server.read_buf(&mut inbox).await.unwrap();
        }
    });
    let mut group = c.benchmark_group("session");
    group.throughput(Throughput::Elements(64));
    group.bench_function("pipelined-64", |b| {
        b.iter(|| {
            rt.block_on(async {
                to_server.write_all(&batch).await.unwrap();
                let mut replies = 0;
                while replies < 64 {
                    match codec.decode(&mut inbox).unwrap() {
                        Some(_) => replies += 1,
                        None => {
                            from_server.read_buf(&mut inbox).await.unwrap();
                        }
                    }
                }
            })
        });
    });
    group.finish();
}

criterion_group!(
    benches,
    frame_codec,
    execute_tool,
    list_tools,
    pipelined_session
);
criterion_main!(benches);
