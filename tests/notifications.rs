//! docs/mcp-v1.md §5: server notifications — `mcp/resourceDidChange` to every
//! ready session, `$/logTrace` when trace is on — and `$/setTrace`.

mod common;

use clawmcp::testing::TestClient;
use common::*;
use serde_json::{Value, json};

fn did_change(mcp_id: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": "mcp/resourceDidChange", "params": {"mcpId": mcp_id}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_did_change_reaches_every_ready_session_with_the_exact_shape() {
    let (server, _) = server();
    let mut a = ready_client(&server).await;
    let mut b = ready_client(&server).await;
    // A session still in its handshake: initialize answered, no `initialized`.
    let mut early = TestClient::connect(&server).await;
    early
        .send(&request(
            json!(1),
            "initialize",
            Some(json!({"clientCapabilities": {}})),
        ))
        .await;
    assert_result(&early.reply(&json!(1)).await, &json!(1));
    // A session that has not even initialized.
    let mut fresh = TestClient::connect(&server).await;
    assert_eq!(server.handle().ready_sessions(), 2);

    server.handle().resource_changed(NOTES);
    assert_eq!(a.recv().await, Some(did_change(NOTES)));
    assert_eq!(b.recv().await, Some(did_change(NOTES)));
    assert_eq!(early.collect(QUIET).await, Vec::<Value>::new());
    assert_eq!(fresh.collect(QUIET).await, Vec::<Value>::new());
    assert_eq!(a.collect(QUIET).await, Vec::<Value>::new(), "only one");
    assert_eq!(b.collect(QUIET).await, Vec::<Value>::new(), "only one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_did_change_reaches_a_session_once_it_sent_initialized() {
    let (server, _) = server();
    let mut client = TestClient::connect(&server).await;
    client
        .send(&request(
            json!(1),
            "initialize",
            Some(json!({"clientCapabilities": {}})),
        ))
        .await;
    assert_result(&client.reply(&json!(1)).await, &json!(1));
    server.handle().resource_changed(NOTES);
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());
    client.notify("initialized", json!({})).await;
    sync(&mut client).await;
    server.handle().resource_changed(NOTES);
    assert_eq!(client.recv().await, Some(did_change(NOTES)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_did_change_can_be_fired_from_inside_a_tool() {
    let (server, _) = server();
    let mut caller = ready_client(&server).await;
    let mut other = ready_client(&server).await;
    assert_eq!(caller.execute(TOUCH, json!({})).await, Ok(json!({})));
    assert_eq!(caller.next_notification().await, Some(did_change(NOTES)));
    assert_eq!(other.recv().await, Some(did_change(NOTES)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_did_change_from_a_builder_handle_taken_before_build() {
    let probe = Probe::default();
    let builder = builder(&probe);
    let handle = builder.handle();
    let server = builder.build().unwrap();
    let mut client = ready_client(&server).await;
    handle.resource_changed(NOTES);
    assert_eq!(client.recv().await, Some(did_change(NOTES)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_did_change_for_an_unknown_resource_is_ignored() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    server
        .handle()
        .resource_changed("mcp://test/resources/nope");
    server.handle().resource_changed(ECHO); // a tool, not a resource
    server.handle().resource_changed("");
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());
    // A known one still goes through.
    server.handle().resource_changed(NOTES);
    assert_eq!(client.recv().await, Some(did_change(NOTES)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_session_no_longer_receives_notifications() {
    let (server, _) = server();
    let a = ready_client(&server).await;
    let mut b = ready_client(&server).await;
    assert_eq!(server.handle().ready_sessions(), 2);
    let (_, served) = a.close().await;
    assert!(served.is_ok());
    wait_for(
        || server.handle().ready_sessions() == 1,
        "the closed session to unregister",
    )
    .await;
    server.handle().resource_changed(NOTES);
    assert_eq!(b.recv().await, Some(did_change(NOTES)));
}

/// Checks a `$/logTrace` notification's shape.
#[track_caller]
fn assert_log_trace(message: &Value) {
    let object = message.as_object().expect("an object");
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["jsonrpc", "method", "params"], "{message}");
    assert_eq!(message["jsonrpc"], "2.0");
    assert_eq!(message["method"], "$/logTrace");
    let params = message["params"].as_object().expect("params object");
    assert!(params["message"].is_string(), "{message}");
    for key in params.keys() {
        assert!(key == "message" || key == "verbose", "unexpected {key}");
    }
    if let Some(verbose) = params.get("verbose") {
        assert!(verbose.is_string(), "{message}");
    }
}

/// Runs `n` requests and returns the notifications that came with them.
async fn traces_of_requests(client: &mut TestClient, n: usize) -> Vec<Value> {
    for _ in 0..n {
        assert!(client.list_tools().await.is_ok());
    }
    client.collect(QUIET).await
}

#[tokio::test]
async fn log_trace_is_sent_for_each_request_when_initialize_trace_is_on_messages_or_verbose() {
    let (server, _) = server();
    for trace in ["on", "messages", "verbose"] {
        let mut client = TestClient::connect(&server).await;
        client
            .initialize(json!({"clientCapabilities": {}, "trace": trace}))
            .await;
        let traces = traces_of_requests(&mut client, 3).await;
        assert_eq!(traces.len(), 3, "{trace}: {traces:?}");
        for t in &traces {
            assert_log_trace(t);
        }
        // Errors are requests handled too.
        assert!(client.call("no/such", None).await.is_err());
        assert!(client.execute(ECHO, json!({"message": "x"})).await.is_ok());
        let more = client.collect(QUIET).await;
        assert_eq!(more.len(), 2, "{trace}: {more:?}");
        for t in &more {
            assert_log_trace(t);
        }
    }
}

#[tokio::test]
async fn log_trace_is_not_sent_when_trace_is_off_or_absent() {
    let (server, _) = server();
    for params in [
        json!({"clientCapabilities": {}, "trace": "off"}),
        json!({"clientCapabilities": {}}),
    ] {
        let mut client = TestClient::connect(&server).await;
        client.initialize(params.clone()).await;
        let traces = traces_of_requests(&mut client, 3).await;
        assert_eq!(traces, Vec::<Value>::new(), "{params}");
    }
}

#[tokio::test]
async fn set_trace_switches_log_trace_on_and_off() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    assert_eq!(
        traces_of_requests(&mut client, 2).await,
        Vec::<Value>::new()
    );

    for value in ["on", "messages", "verbose"] {
        client.notify("$/setTrace", json!({"value": value})).await;
        let traces = traces_of_requests(&mut client, 2).await;
        assert_eq!(traces.len(), 2, "{value}: {traces:?}");
        for t in &traces {
            assert_log_trace(t);
        }
        client.notify("$/setTrace", json!({"value": "off"})).await;
        assert_eq!(
            traces_of_requests(&mut client, 2).await,
            Vec::<Value>::new(),
            "off after {value}"
        );
    }
}

#[tokio::test]
async fn set_trace_off_turns_off_tracing_started_by_initialize() {
    let (server, _) = server();
    let mut client = TestClient::connect(&server).await;
    client
        .initialize(json!({"clientCapabilities": {}, "trace": "verbose"}))
        .await;
    assert_eq!(traces_of_requests(&mut client, 1).await.len(), 1);
    client.notify("$/setTrace", json!({"value": "off"})).await;
    assert_eq!(
        traces_of_requests(&mut client, 2).await,
        Vec::<Value>::new()
    );
}

#[tokio::test]
async fn set_trace_with_a_bad_value_is_ignored_without_reply() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let bad = [
        json!({"value": "loud"}),
        json!({"value": 5}),
        json!({"value": null}),
        json!({"value": "ON"}),
        json!({}),
    ];
    // Off stays off...
    for params in &bad {
        client.notify("$/setTrace", params.clone()).await;
    }
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new(), "no reply");
    assert_eq!(
        traces_of_requests(&mut client, 1).await,
        Vec::<Value>::new()
    );
    // ...and on stays on.
    client.notify("$/setTrace", json!({"value": "on"})).await;
    for params in &bad {
        client.notify("$/setTrace", params.clone()).await;
    }
    let traces = traces_of_requests(&mut client, 1).await;
    assert_eq!(traces.len(), 1, "{traces:?}");
    assert_log_trace(&traces[0]);
}
