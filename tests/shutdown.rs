//! Shutdown without loss (issue 5): once shutdown begins, requests that
//! arrive are answered `-32005` (docs/mcp-v1.md §2), requests in flight finish
//! within the grace period (or are stopped and answered `-32005`), every
//! reply is written, and the serving call returns.

mod common;

use std::time::Duration;

use clawmcp::testing::TestClient;
use common::{ECHO, Probe, SLEEP, assert_error, assert_result, builder, execute};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_requests_in_flight_finish_and_refuses_late_ones() {
    let server = builder(&Probe::default()).build().unwrap();
    let mut client = TestClient::initialized(&server).await;
    client
        .send(&execute(json!(2), SLEEP, json!({"ms": 300})))
        .await;
    tokio::time::sleep(Duration::from_millis(50)).await; // the sleep is running
    server.handle().shutdown();
    assert!(server.handle().is_shutting_down());
    client
        .send(&execute(json!(3), ECHO, json!({"message": "late"})))
        .await;
    let late = client.reply(&json!(3)).await;
    let data = assert_error(&late, &json!(3), -32005);
    assert!(data.contains("shutting down"), "{data}");
    let slept = client.reply(&json!(2)).await;
    assert_eq!(
        assert_result(&slept, &json!(2)),
        json!({"output": {"sleptMs": 300}})
    );
    let (rest, served) = client.close().await;
    assert!(rest.is_empty(), "nothing more after the drain: {rest:?}");
    served.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_past_the_grace_period_are_stopped_and_answered_32005() {
    let server = builder(&Probe::default())
        .shutdown_grace(Duration::from_millis(200))
        .build()
        .unwrap();
    let mut client = TestClient::initialized(&server).await;
    client
        .send(&execute(json!("long"), SLEEP, json!({"ms": 60_000})))
        .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    server.handle().shutdown();
    let reply = client.reply(&json!("long")).await;
    let data = assert_error(&reply, &json!("long"), -32005);
    assert!(data.contains("grace period"), "{data}");
    let (_, served) = client.close().await;
    served.unwrap();
}

#[tokio::test]
async fn serve_io_until_returns_when_its_shutdown_future_completes() {
    let server = builder(&Probe::default()).build().unwrap();
    let (client, server_end) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_end);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(async move {
        server
            .serve_io_until(read, write, async {
                let _ = stopped.await;
            })
            .await
    });
    let _client = client; // the input stays open: only the shutdown ends the session
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("serve_io_until returns after its shutdown")
        .unwrap()
        .unwrap();
}

/// The server handle's shutdown ends a stdio session whose client has
/// sent nothing yet, as it ends one past its first message.
#[tokio::test]
async fn the_handles_shutdown_ends_a_session_before_its_first_byte() {
    let server = builder(&Probe::default()).build().unwrap();
    let (client, server_end) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_end);
    let handle = server.handle();
    let serving = tokio::spawn(async move { server.serve_io(read, write).await });
    let _client = client; // the input stays open and silent
    tokio::time::sleep(Duration::from_millis(50)).await;
    handle.shutdown();
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("serve_io returns after the handle's shutdown")
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_exchange_during_shutdown_is_answered_32005() {
    let server = builder(&Probe::default()).build().unwrap();
    server.handle().shutdown();
    let reply = server
        .serve_message(json!({"jsonrpc": "2.0", "id": 9, "method": "mcp/listTools"}).to_string())
        .await
        .unwrap();
    let reply: serde_json::Value = serde_json::from_slice(&reply).unwrap();
    assert_error(&reply, &json!(9), -32005);
}

/// The reference example on stdio stops on SIGTERM with a request in flight:
/// the request's reply is written, a late request gets -32005, exit 0.
#[cfg(all(unix, feature = "http", feature = "schemars"))]
#[test]
fn the_reference_server_stops_on_sigterm_without_losing_a_reply() {
    use std::io::{Read, Write};
    use std::process::{Command, Stdio};

    let root = tempfile::tempdir().unwrap();
    let mut child = Command::new(common::reference::reference_binary())
        .arg("--root")
        .arg(root.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let sleep = "mcp://clawmcp/examples/tools/sleep:v1";
    let echo = "mcp://clawmcp/examples/tools/echo:v1";
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientCapabilities": {}}}),
        json!({"jsonrpc": "2.0", "method": "initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "mcp/executeTool",
               "params": {"id": sleep, "arguments": {"ms": 700}}}),
    ] {
        stdin
            .write_all(&common::frame(&message.to_string()))
            .unwrap();
    }
    stdin.flush().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    std::thread::sleep(Duration::from_millis(100));
    let late = json!({"jsonrpc": "2.0", "id": 3, "method": "mcp/executeTool",
                      "params": {"id": echo, "arguments": {"message": "late"}}});
    // The server may already be gone if it drained very fast; that is no loss.
    let _ = stdin.write_all(&common::frame(&late.to_string()));
    let _ = stdin.flush();
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    let status = child.wait().unwrap();
    drop(stdin);
    assert!(status.success(), "exit status {status:?}");
    let (bodies, rest) = common::split_frames(&out);
    assert!(rest.is_empty(), "stdout carries only frames");
    let replies: Vec<serde_json::Value> = bodies
        .iter()
        .map(|b| serde_json::from_str(b).unwrap())
        .collect();
    let slept = replies
        .iter()
        .find(|r| r["id"] == 2)
        .expect("the in-flight request was answered");
    assert_eq!(slept["result"], json!({"output": {"sleptMs": 700}}));
    if let Some(late) = replies.iter().find(|r| r["id"] == 3) {
        assert_eq!(late["error"]["code"], -32005, "{late}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_after_the_input_ended_still_has_a_grace_period() {
    let server = builder(&Probe::default())
        .shutdown_grace(Duration::from_millis(200))
        .build()
        .unwrap();
    let mut client = TestClient::initialized(&server).await;
    client
        .send(&execute(json!(4), SLEEP, json!({"ms": 60_000})))
        .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    client.close_input().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    server.handle().shutdown();
    let reply = client.reply(&json!(4)).await;
    assert_error(&reply, &json!(4), -32005);
    let (_, served) = client.close().await;
    served.unwrap();
}

/// In the Model Context Protocol, the end of stdin gives the requests in
/// flight the shutdown grace period, then stops them (answered
/// `-32603`, "server shutting down"); a request parked behind them never
/// runs; and the serving call returns, with no shutdown asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_context_session_whose_input_ended_stops_its_work_at_the_grace_period() {
    let probe = Probe::default();
    let server = builder(&probe)
        .shutdown_grace(Duration::from_millis(200))
        .max_in_flight(1)
        .build()
        .unwrap();
    let mut client = TestClient::model_context(&server, json!({})).await;
    let sleep = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "sleep", "arguments": {"ms": 60_000}}})
    };
    client.send(&sleep(4)).await;
    probe.wait_started(1).await;
    client.send(&sleep(5)).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    client.close_input().await;
    let (replies, served) = tokio::time::timeout(Duration::from_secs(30), client.close())
        .await
        .expect("the serving call returns once the grace period is over");
    served.unwrap();
    for id in [4, 5] {
        let reply = replies
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("a reply to {id}: {replies:?}"));
        assert_eq!(reply["error"]["code"], -32603, "{reply}");
        assert_eq!(reply["error"]["data"], "server shutting down", "{reply}");
    }
    assert_eq!(probe.started(), 1, "the parked request never ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_cancel_during_shutdown_is_still_32003() {
    let server = builder(&Probe::default()).build().unwrap();
    let mut client = TestClient::initialized(&server).await;
    client
        .send(&execute(json!(5), SLEEP, json!({"ms": 60_000})))
        .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    server.handle().shutdown();
    client.notify("$/cancelRequest", json!({"id": 5})).await;
    let reply = client.reply(&json!(5)).await;
    assert_error(&reply, &json!(5), -32003);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_waiting_for_room_when_shutdown_begins_gets_32005_for_the_rest() {
    let probe = Probe::default();
    let server = builder(&probe)
        .max_in_flight(2)
        .shutdown_grace(Duration::from_millis(200))
        .build()
        .unwrap();
    let mut client = TestClient::initialized(&server).await;
    let batch: Vec<_> = (0..4)
        .map(|i| execute(json!(i), SLEEP, json!({"ms": 60_000})))
        .collect();
    client.send(&json!(batch)).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.handle().shutdown();
    let replies = client.recv().await.unwrap();
    let replies = replies.as_array().expect("one batch reply");
    assert_eq!(replies.len(), 4);
    for reply in replies {
        assert_eq!(reply["error"]["code"], -32005, "{reply}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_http_returns_when_the_server_handle_shuts_down() {
    let server = builder(&Probe::default()).build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let handle = server.handle();
    let serving = tokio::spawn(async move {
        server
            .serve_http_on(
                listener,
                clawmcp::transport::HttpConfig::default(),
                std::future::pending(),
            )
            .await
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    handle.shutdown();
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("serve_http_on returns")
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_body_that_stalls_is_408_and_does_not_hold_shutdown() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = builder(&Probe::default()).build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config =
        clawmcp::transport::HttpConfig::default().header_read_timeout(Duration::from_millis(300));
    let serving = tokio::spawn(async move {
        server
            .serve_http_on(listener, config, std::future::pending())
            .await
    });
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        .await
        .unwrap();
    let mut response = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response)).await;
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    serving.abort();
}
