//! Limits (issue 5): each is enforced with the docs/mcp-v1.md error, and a
//! session that hits one does not disturb the other sessions of the server.
//! (HTTP connection, header-read and idle limits: tests/http.rs.)

mod common;

use std::time::Duration;

use clawmcp::testing::TestClient;
use common::{ECHO, GATE, Probe, SLEEP, assert_error, assert_result, builder, execute, frame};
use serde_json::json;

async fn echo_works(client: &mut TestClient) {
    let out = client
        .execute(ECHO, json!({"message": "still here"}))
        .await
        .unwrap();
    assert_eq!(out, json!({"message": "still here"}));
}

#[tokio::test]
async fn message_size_limit_is_32006_and_other_sessions_go_on() {
    let server = builder(&Probe::default())
        .max_message_size(1024)
        .build()
        .unwrap();
    let mut big = TestClient::initialized(&server).await;
    let mut other = TestClient::initialized(&server).await;
    let body = execute(json!(5), ECHO, json!({"message": "x".repeat(2000)})).to_string();
    big.send_raw(&frame(&body)).await;
    let reply = big.recv().await.unwrap();
    assert_error(&reply, &json!(null), -32006);
    echo_works(&mut other).await;
    echo_works(&mut big).await;
}

#[tokio::test]
async fn header_block_limit_is_32700_and_the_session_goes_on() {
    let server = builder(&Probe::default())
        .max_header_size(256)
        .build()
        .unwrap();
    assert_eq!(server.max_header_size(), 256);
    let mut client = TestClient::initialized(&server).await;
    let mut other = TestClient::initialized(&server).await;
    let body = execute(json!(6), ECHO, json!({"message": "m"})).to_string();
    let padded = format!(
        "X-Padding: {}\r\nContent-Length: {}\r\n\r\n{body}",
        "p".repeat(400),
        body.len()
    );
    client.send_raw(padded.as_bytes()).await;
    client
        .send_raw(&frame(
            &execute(json!(7), ECHO, json!({"message": "ok"})).to_string(),
        ))
        .await;
    let first = client.recv().await.unwrap();
    assert_error(&first, &json!(null), -32700);
    assert_result(&client.reply(&json!(7)).await, &json!(7));
    echo_works(&mut other).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_at_its_in_flight_limit_does_not_hold_up_other_sessions() {
    let probe = Probe::default();
    let server = builder(&probe).max_in_flight(2).build().unwrap();
    let mut full = TestClient::initialized(&server).await;
    let mut other = TestClient::initialized(&server).await;
    for id in 10..13 {
        full.send(&execute(json!(id), GATE, json!({}))).await;
    }
    probe.wait_started(2).await;
    echo_works(&mut other).await;
    assert_eq!(probe.started(), 2, "the full session read no third request");
    probe.release(3);
    for id in 10..13 {
        assert_result(&full.reply(&json!(id)).await, &json!(id));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_time_limit_is_32004_and_other_sessions_go_on() {
    let server = builder(&Probe::default())
        .tool_time_limit(Duration::from_millis(100))
        .build()
        .unwrap();
    let mut slow = TestClient::initialized(&server).await;
    let mut other = TestClient::initialized(&server).await;
    slow.send(&execute(json!(20), SLEEP, json!({"ms": 30_000})))
        .await;
    echo_works(&mut other).await;
    let reply = slow.reply(&json!(20)).await;
    assert_error(&reply, &json!(20), -32004);
    echo_works(&mut slow).await;
}

#[tokio::test]
async fn a_batch_over_the_element_limit_is_one_invalid_request() {
    let server = builder(&Probe::default()).build().unwrap();
    let mut client = TestClient::initialized(&server).await;
    let batch: Vec<_> = (0..=clawmcp::jsonrpc::MAX_BATCH)
        .map(|_| json!({}))
        .collect();
    client.send(&json!(batch)).await;
    let reply = client.recv().await.unwrap();
    let data = assert_error(&reply, &json!(null), -32600);
    assert!(data.contains("limit"), "{data}");
    echo_works(&mut client).await;
}
