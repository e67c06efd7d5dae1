//! Limits (issue 5): each is enforced with the docs/mcp-v1.md error, and a
//! session that hits one does not disturb the other sessions of the server.
//! (HTTP connection, header-read and idle limits: tests/http.rs.)

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use clawmcp::Principal;
use clawmcp::testing::TestClient;
use common::settle::settled;
use common::{
    COUNT, ECHO, GATE, Probe, SLEEP, assert_error, assert_result, batch_reply, builder, def,
    execute, frame,
};
use serde_json::{Value, json};

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

/// A tool's own time limit takes the place of the server's, for a closure
/// tool (`FnTool::with_time_limit`) as for a typed one (tests/typed.rs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closure_tools_own_time_limit_is_32004_before_the_servers() {
    let nap = clawmcp::tool_fn(
        def("mcp://t/tools/nap:v1", json!({"type": "object"}), json!({})),
        |_, _| async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok::<_, clawmcp::ToolError>(json!({}))
        },
    )
    .with_time_limit(Duration::from_millis(100));
    let server = builder(&Probe::default())
        .tool(nap)
        .tool_time_limit(Duration::from_secs(600))
        .build()
        .unwrap();
    let mut client = TestClient::initialized(&server).await;
    client
        .send(&execute(json!(21), "mcp://t/tools/nap:v1", json!({})))
        .await;
    let reply = client.reply(&json!(21)).await;
    assert_error(&reply, &json!(21), -32004);
    echo_works(&mut client).await;
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

/// A batch's replies are bounded by `max_queued_output`: a member whose
/// reply would pass it ran but gets an error in its place, and the members
/// after it do not run; a first reply passes whatever its size, and the
/// session goes on.
#[tokio::test]
async fn a_batchs_replies_pass_the_output_bound_only_as_errors_and_later_members_do_not_run() {
    let probe = Probe::default();
    let server = builder(&probe).max_queued_output(10_000).build().unwrap();
    let mut client = TestClient::initialized(&server).await;
    let message = "m".repeat(3_000);
    let batch: Vec<_> = (1..=6)
        .map(|id| execute(json!(id), ECHO, json!({"message": message})))
        .collect();
    client.send(&json!(batch)).await;
    let replies = batch_reply(&mut client).await;
    for reply in &replies[..3] {
        assert_eq!(reply["result"]["output"]["message"], message, "{reply}");
    }
    let ran = assert_error(&replies[3], &json!(4), -32006);
    assert!(ran.contains("ran") && ran.contains("10000"), "{ran}");
    for (reply, id) in replies[4..].iter().zip(5..) {
        let data = assert_error(reply, &json!(id), -32006);
        assert!(data.starts_with("not run"), "{data}");
    }
    // Alone, a reply passes whatever its size.
    let server = builder(&probe).max_queued_output(1_000).build().unwrap();
    let mut client = TestClient::initialized(&server).await;
    let batch = json!([
        execute(json!(1), ECHO, json!({"message": message})),
        execute(json!(2), COUNT, json!({})),
    ]);
    client.send(&batch).await;
    let replies = batch_reply(&mut client).await;
    assert_eq!(replies[0]["result"]["output"]["message"], message);
    let data = assert_error(&replies[1], &json!(2), -32006);
    assert!(data.starts_with("not run"), "{data}");
    assert_eq!(probe.executed.load(Ordering::SeqCst), 0, "not run");
    echo_works(&mut client).await;
}

/// A principal's requests in flight hold at most
/// `max_in_flight_bytes_per_principal` bytes over all its sessions: one
/// that would pass it is refused before it runs, naming the bound; small
/// requests are not counted, another principal is not held back, and an
/// ended request frees its bytes.
#[tokio::test]
async fn a_principals_requests_in_flight_hold_at_most_the_bound_of_bytes() {
    let probe = Probe::default();
    let server = builder(&probe)
        .max_in_flight_bytes_per_principal(100_000)
        .build()
        .unwrap();
    let principal = |subject: &str| Principal::new("https://as.example").with_subject(subject);
    let mut ada = TestClient::initialized_as(&server, principal("ada")).await;
    let mut ada_again = TestClient::initialized_as(&server, principal("ada")).await;
    let pad = "p".repeat(60_000);
    ada.send(&execute(json!(1), GATE, json!({"pad": pad})))
        .await;
    probe.wait_started(1).await;
    // The same principal on another session is past the bound.
    ada_again
        .send(&execute(json!(2), GATE, json!({"pad": pad})))
        .await;
    let refused = ada_again.reply(&json!(2)).await;
    let data = assert_error(&refused, &json!(2), -32006);
    assert!(
        data.contains("in flight") && data.contains("100000"),
        "{data}"
    );
    assert_eq!(
        probe.started.load(Ordering::SeqCst),
        1,
        "the refused one never ran"
    );
    // A small request is not counted.
    ada_again.send(&execute(json!(3), COUNT, json!({}))).await;
    assert_result(&ada_again.reply(&json!(3)).await, &json!(3));
    // Another principal is not held back.
    let mut bob = TestClient::initialized_as(&server, principal("bob")).await;
    bob.send(&execute(json!(4), GATE, json!({"pad": pad})))
        .await;
    probe.wait_started(2).await;
    // Ended, a request frees its bytes.
    probe.release(2);
    assert_result(&ada.reply(&json!(1)).await, &json!(1));
    assert_result(&bob.reply(&json!(4)).await, &json!(4));
    ada_again
        .send(&execute(json!(5), GATE, json!({"pad": pad})))
        .await;
    probe.release(1);
    assert_result(&ada_again.reply(&json!(5)).await, &json!(5));
}

/// The bound holds for batch members that waited for a slot too: one not
/// started before the replies passed it never runs.
#[tokio::test]
async fn a_batch_member_parked_until_its_replies_passed_the_bound_does_not_run() {
    let probe = Probe::default();
    let server = builder(&probe)
        .max_queued_output(10_000)
        .max_in_flight(1)
        .build()
        .unwrap();
    let mut client = TestClient::initialized(&server).await;
    let tag = "t".repeat(6_000);
    client
        .send(&json!([
            execute(json!(1), GATE, json!({"tag": tag})),
            execute(json!(2), GATE, json!({"tag": tag})),
            execute(json!(3), COUNT, json!({})),
        ]))
        .await;
    probe.wait_started(1).await;
    probe.release(1);
    probe.wait_started(2).await;
    probe.release(1);
    let replies = batch_reply(&mut client).await;
    assert_eq!(replies[0]["result"]["output"]["tag"], tag, "{replies:?}");
    let ran = assert_error(&replies[1], &json!(2), -32006);
    assert!(ran.starts_with("this request ran"), "{ran}");
    let data = assert_error(&replies[2], &json!(3), -32006);
    assert!(data.starts_with("not run"), "{data}");
    assert_eq!(probe.executed.load(Ordering::SeqCst), 0, "not run");
    echo_works(&mut client).await;
}

/// A stdio client that reads nothing holds at most `max_queued_output`
/// bytes of its session's output (with what the pipe buffers, and the
/// replies that wait for room): the session's work then waits, and its
/// reader reads no more requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_client_that_reads_nothing_runs_no_more_than_the_output_bound_holds() {
    unread_output_holds_the_reader("2025-11-25", |call| call).await;
}

/// The same bound holds for requests sent in batches (the 2025-03-26
/// revision has them): a batch's reply array waits for room in the output
/// as a single reply does, and the reader reads no more meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_client_that_reads_nothing_runs_no_more_batches_than_the_output_bound_holds() {
    unread_output_holds_the_reader("2025-03-26", |call| json!([call])).await;
}

/// Sends 400 calls of a tool whose reply is 400 KiB, each written by
/// `framed`, to a session of `version` whose output nobody reads, and
/// asserts that fewer than 10 ran.
async fn unread_output_holds_the_reader(version: &'static str, framed: fn(Value) -> Value) {
    use tokio::io::AsyncWriteExt;
    const BLOB: &str = "mcp://limits-test/tools/blob:v1";
    let probe = Probe::default();
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = calls.clone();
    let blob = clawmcp::tool_fn(
        common::def(BLOB, json!({"type": "object"}), json!({"type": "object"})),
        move |_args, _ctx| {
            counted.fetch_add(1, Ordering::SeqCst);
            async move { Ok(json!({ "blob": "x".repeat(200 * 1024) })) }
        },
    );
    let server = builder(&probe)
        .tool(blob)
        .max_queued_output(1024 * 1024)
        .build()
        .unwrap();
    // The server's output goes to a pipe nobody reads.
    let (mut input, server_input) = tokio::io::duplex(64 * 1024);
    let (_unread, server_output) = tokio::io::duplex(64 * 1024);
    let serving = tokio::spawn({
        let server = server.clone();
        async move { server.serve_io(server_input, server_output).await }
    });
    let sent = 400;
    tokio::spawn(async move {
        let mut lines = vec![
            json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ];
        lines.extend((0..sent).map(|id| {
            framed(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": "blob", "arguments": {}}}))
        }));
        for line in lines {
            // Blocks once the session reads no more: that is the point.
            if input
                .write_all(format!("{line}\n").as_bytes())
                .await
                .is_err()
            {
                return;
            }
        }
    });
    // Wait until the calls stop coming.
    let ran = settled(&calls).await;
    // 160 MB of replies were asked for (each carries its 200 KiB output
    // twice: structured, and as text). The bound (1 MiB) holds two, the
    // writer one, and the reader waits with the next until there is room,
    // reading nothing more (tools that finish at once run on the reader).
    assert!(ran > 0, "some calls ran");
    assert!(
        ran < 10,
        "{ran} of {sent} calls ran with their replies unread: the output is not bounded"
    );
    // Other sessions are served meanwhile.
    echo_works(&mut TestClient::initialized(&server).await).await;
    serving.abort();
}
