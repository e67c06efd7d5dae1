//! docs/mcp-v1.md §1 and §5: requests run concurrently and are answered in
//! completion order, can be cancelled, are limited in flight without being
//! dropped, and are finished at the end of input.

mod common;

use std::collections::BTreeSet;

use common::*;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_go_out_in_completion_order_not_request_order() {
    let (server, probe) = server();
    let mut client = ready_client(&server).await;
    client
        .send(&execute(json!(1), GATE, json!({"tag": "slow"})))
        .await;
    probe.wait_started(1).await;
    client
        .send(&execute(json!(2), ECHO, json!({"message": "fast"})))
        .await;
    // The echo finishes while the gate is held: its reply comes first.
    let first = client.recv().await.expect("a reply");
    assert_eq!(
        assert_result(&first, &json!(2)),
        json!({"output": {"message": "fast"}})
    );
    probe.release(1);
    let second = client.recv().await.expect("a reply");
    assert_eq!(
        assert_result(&second, &json!(1)),
        json!({"output": {"tag": "slow"}})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_sleep_does_not_delay_a_later_fast_request() {
    let (server, probe) = server();
    let mut client = ready_client(&server).await;
    client
        .send(&execute(json!("slow"), SLEEP, json!({"ms": 60000})))
        .await;
    probe.wait_started(1).await;
    client
        .send(&execute(json!("fast"), ECHO, json!({"message": "m"})))
        .await;
    let first = client.recv().await.expect("a reply");
    assert_eq!(
        assert_result(&first, &json!("fast")),
        json!({"output": {"message": "m"}})
    );
    // The sleep is still running; end it.
    client
        .notify("$/cancelRequest", json!({"id": "slow"}))
        .await;
    let second = client.recv().await.expect("a reply");
    assert_error(&second, &json!("slow"), -32003);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_request_answers_32003_and_the_tool_observes_cancellation() {
    let (server, probe) = server();
    let mut client = ready_client(&server).await;
    client
        .send(&execute(json!(5), SLEEP, json!({"ms": 60000})))
        .await;
    client.send(&execute(json!(6), GATE, json!({}))).await;
    probe.wait_started(2).await;

    client.notify("$/cancelRequest", json!({"id": 5})).await;
    assert_error(&client.reply(&json!(5)).await, &json!(5), -32003);
    probe.wait_cancelled(1).await;

    client.notify("$/cancelRequest", json!({"id": 6})).await;
    assert_error(&client.reply(&json!(6)).await, &json!(6), -32003);
    probe.wait_cancelled(2).await;

    // Exactly one reply each: nothing more comes for them.
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());
    assert!(client.list_tools().await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
/// A tool that declares `may_block` gets its own task at once (Tool::may_block).
async fn a_tool_that_blocks_its_thread_does_not_stop_the_session_serving_others() {
    let (server, probe) = server();
    let mut client = ready_client(&server).await;
    client.send(&execute(json!(1), SPIN, json!({}))).await;
    probe.wait_started(1).await;
    client
        .send(&execute(json!(2), ECHO, json!({"message": "meanwhile"})))
        .await;
    let first = client.recv().await.expect("a reply");
    probe
        .unblock
        .store(true, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        assert_result(&first, &json!(2)),
        json!({"output": {"message": "meanwhile"}}),
        "the echo is answered while the blocking tool runs"
    );
    assert_result(&client.reply(&json!(1)).await, &json!(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_request_reaches_a_tool_that_polls_is_cancelled_without_awaiting() {
    let (server, probe) = server();
    let mut client = ready_client(&server).await;
    client.send(&execute(json!(3), SPIN, json!({}))).await;
    probe.wait_started(1).await;
    client.notify("$/cancelRequest", json!({"id": 3})).await;
    let reply = client.reply(&json!(3)).await;
    probe
        .unblock
        .store(true, std::sync::atomic::Ordering::SeqCst);
    assert_error(&reply, &json!(3), -32003);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_request_matches_the_id_type_number_7_leaves_string_7_running() {
    let (server, probe) = server();
    let mut client = ready_client(&server).await;
    client
        .send(&execute(json!(7), GATE, json!({"tag": "number"})))
        .await;
    client
        .send(&execute(json!("7"), GATE, json!({"tag": "string"})))
        .await;
    probe.wait_started(2).await;

    client.notify("$/cancelRequest", json!({"id": 7})).await;
    assert_error(&client.reply(&json!(7)).await, &json!(7), -32003);
    probe.wait_cancelled(1).await;
    // "7" is still running.
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());
    assert_eq!(probe.cancelled(), 1);

    probe.release(1);
    let reply = client.reply(&json!("7")).await;
    assert_eq!(
        assert_result(&reply, &json!("7")),
        json!({"output": {"tag": "string"}})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_request_for_an_unknown_or_finished_id_is_ignored() {
    let (server, probe) = server();
    let mut client = ready_client(&server).await;
    client
        .send(&execute(json!(2), ECHO, json!({"message": "done"})))
        .await;
    assert_result(&client.reply(&json!(2)).await, &json!(2));
    client.send(&execute(json!(8), GATE, json!({}))).await;
    probe.wait_started(1).await;
    for id in [json!(999), json!("8"), json!(null), json!(2)] {
        client.notify("$/cancelRequest", json!({"id": id})).await;
    }
    client.notify("$/cancelRequest", json!({})).await;
    client.notify("$/cancelRequest", json!({"id": true})).await;
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());
    assert_eq!(probe.cancelled(), 0);
    probe.release(1);
    assert_result(&client.reply(&json!(8)).await, &json!(8));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_request_reaches_a_request_inside_a_batch() {
    let (server, probe) = server();
    let mut client = ready_client(&server).await;
    client
        .send(&json!([
            execute(json!(1), GATE, json!({"tag": 1})),
            execute(json!(2), ECHO, json!({"message": "m"})),
        ]))
        .await;
    probe.wait_started(1).await;
    client.notify("$/cancelRequest", json!({"id": 1})).await;
    let replies = batch_reply(&mut client).await;
    assert_eq!(replies.len(), 2, "{replies:?}");
    assert_error(&replies[0], &json!(1), -32003);
    assert_result(&replies[1], &json!(2));
    probe.wait_cancelled(1).await;
}

/// A `$/cancelRequest` in the same batch, after the request it names:
/// that request never runs and is answered `-32003`, as a parked one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_request_in_the_same_batch_cancels_a_request_before_it_unrun() {
    let (server, probe) = server();
    let mut client = ready_client(&server).await;
    client
        .send(&json!([
            execute(json!(1), GATE, json!({"tag": 1})),
            {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 1}},
            execute(json!(2), ECHO, json!({"message": "m"})),
        ]))
        .await;
    let replies = batch_reply(&mut client).await;
    assert_eq!(replies.len(), 2, "{replies:?}");
    assert_error(&replies[0], &json!(1), -32003);
    assert_result(&replies[1], &json!(2));
    assert_eq!(probe.started(), 0, "the cancelled request never ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_max_in_flight_requests_run_and_the_rest_wait_without_failing() {
    let probe = Probe::default();
    let server = builder(&probe).max_in_flight(2).build().unwrap();
    let mut client = ready_client(&server).await;
    for n in 0..3 {
        client
            .send(&execute(json!(n), GATE, json!({"tag": n})))
            .await;
    }
    probe.wait_started(2).await;
    // The third is not started while two are in flight.
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());
    assert_eq!(probe.started(), 2, "only two tools started");

    probe.release(3);
    let mut answered = BTreeSet::new();
    for _ in 0..3 {
        let reply = client.recv().await.expect("a reply");
        let id = reply["id"].as_i64().expect("an integer id");
        assert_eq!(
            assert_result(&reply, &json!(id)),
            json!({"output": {"tag": id}})
        );
        answered.insert(id);
    }
    assert_eq!(answered, BTreeSet::from([0, 1, 2]));
    assert_eq!(probe.started(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_larger_than_the_in_flight_limit_runs_at_most_the_limit_and_answers_all() {
    let probe = Probe::default();
    let server = builder(&probe).max_in_flight(2).build().unwrap();
    let mut client = ready_client(&server).await;
    let batch: Vec<Value> = (0..5)
        .map(|n| execute(json!(n), GATE, json!({"tag": n})))
        .collect();
    client.send(&Value::Array(batch)).await;
    probe.wait_started(2).await;
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());
    assert_eq!(probe.started(), 2, "only two run at once");
    probe.release(5);
    let reply = client.recv().await.expect("the batch reply");
    let replies = reply.as_array().expect("an array");
    assert_eq!(replies.len(), 5, "{reply}");
    for r in replies {
        assert_result(r, &r["id"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_in_flight_limit_is_64() {
    let (server, probe) = server();
    let mut client = ready_client(&server).await;
    let mut input = Vec::new();
    for n in 0..65 {
        input.extend(frame(
            &execute(json!(n), GATE, json!({"tag": n})).to_string(),
        ));
    }
    client.send_raw(&input).await;
    probe.wait_started(64).await;
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());
    assert_eq!(probe.started(), 64, "the 65th waits");
    probe.release(65);
    let mut answered = BTreeSet::new();
    for _ in 0..65 {
        let reply = client.recv().await.expect("a reply");
        let n = reply["id"].as_i64().expect("an integer id");
        assert_result(&reply, &json!(n));
        answered.insert(n);
    }
    assert_eq!(answered.len(), 65);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_of_input_answers_requests_still_waiting_behind_the_in_flight_limit() {
    let probe = Probe::default();
    let server = builder(&probe).max_in_flight(1).build().unwrap();
    let mut client = ready_client(&server).await;
    for n in 0..3 {
        client
            .send(&execute(json!(n), GATE, json!({"tag": n})))
            .await;
    }
    probe.wait_started(1).await;
    client.close_input().await;
    probe.release(3);
    let (rest, served) = client.close().await;
    assert!(served.is_ok(), "{served:?}");
    let mut ids: Vec<i64> = rest.iter().filter_map(|r| r["id"].as_i64()).collect();
    ids.sort_unstable();
    assert_eq!(ids, [0, 1, 2], "{rest:?}");
    for reply in &rest {
        assert_result(reply, &reply["id"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_hundred_pipelined_requests_are_all_answered() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let mut input = Vec::new();
    for n in 0..100 {
        let message = if n % 2 == 0 {
            execute(json!(n), ECHO, json!({"message": format!("m{n}")}))
        } else {
            request(json!(n), "mcp/listPrompts", None)
        };
        input.extend(frame(&message.to_string()));
    }
    client.send_raw(&input).await;
    let mut answered = BTreeSet::new();
    for _ in 0..100 {
        let reply = client.recv().await.expect("a reply");
        let n = reply["id"].as_i64().expect("an integer id");
        let result = assert_result(&reply, &json!(n));
        if n % 2 == 0 {
            assert_eq!(result, json!({"output": {"message": format!("m{n}")}}));
        } else {
            assert_eq!(result[0]["mcpId"], PLANNER);
        }
        assert!(answered.insert(n), "{n} answered twice");
    }
    assert_eq!(answered.len(), 100);
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_hundred_requests_over_the_in_flight_limit_are_all_answered() {
    let probe = Probe::default();
    let server = builder(&probe).max_in_flight(3).build().unwrap();
    let mut client = ready_client(&server).await;
    let mut input = Vec::new();
    for n in 0..100 {
        input.extend(frame(
            &execute(json!(n), SLEEP, json!({"ms": n % 3})).to_string(),
        ));
    }
    client.send_raw(&input).await;
    let mut answered = BTreeSet::new();
    for _ in 0..100 {
        let reply = client.recv().await.expect("a reply");
        let n = reply["id"].as_i64().expect("an integer id");
        assert_result(&reply, &json!(n));
        assert!(answered.insert(n));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_of_input_finishes_requests_in_flight_and_returns_ok() {
    let (server, probe) = server();
    let mut client = ready_client(&server).await;
    client
        .send(&execute(json!(1), GATE, json!({"tag": "a"})))
        .await;
    client
        .send(&execute(json!(2), SLEEP, json!({"ms": 200})))
        .await;
    probe.wait_started(2).await;
    client.close_input().await;
    // The session does not abandon the held request at end of input.
    let early = client.collect(QUIET).await;
    assert!(
        early.iter().all(|m| m["id"] != json!(1)),
        "the held request cannot have finished: {early:?}"
    );
    probe.release(1);
    let (rest, served) = client.close().await;
    assert!(served.is_ok(), "{served:?}");
    let mut all = early;
    all.extend(rest);
    let mut ids: Vec<String> = all.iter().map(|m| m["id"].to_string()).collect();
    ids.sort();
    assert_eq!(ids, ["1", "2"], "{all:?}");
    for reply in &all {
        assert_result(reply, &reply["id"]);
    }
    assert_eq!(probe.cancelled(), 0, "nothing was cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_of_input_finishes_a_batch_in_flight() {
    let (server, probe) = server();
    let mut client = ready_client(&server).await;
    client
        .send(&json!([
            execute(json!(1), GATE, json!({"tag": 1})),
            execute(json!(2), ECHO, json!({"message": "m"})),
        ]))
        .await;
    probe.wait_started(1).await;
    client.close_input().await;
    probe.release(1);
    let (rest, served) = client.close().await;
    assert!(served.is_ok(), "{served:?}");
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0].as_array().map(Vec::len), Some(2), "{rest:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_of_input_with_nothing_in_flight_returns_ok_at_once() {
    let (server, _) = server();
    let client = ready_client(&server).await;
    let (rest, served) = client.close().await;
    assert!(served.is_ok(), "{served:?}");
    assert_eq!(rest, Vec::<Value>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_tool_does_not_stop_other_requests() {
    let (server, probe) = server();
    let mut client = ready_client(&server).await;
    client
        .send(&execute(json!(1), GATE, json!({"tag": "held"})))
        .await;
    probe.wait_started(1).await;
    client.send(&execute(json!(2), PANIC, json!({}))).await;
    client
        .send(&execute(json!(3), ECHO, json!({"message": "after"})))
        .await;
    assert_error(&client.reply(&json!(2)).await, &json!(2), -32603);
    assert_eq!(
        assert_result(&client.reply(&json!(3)).await, &json!(3)),
        json!({"output": {"message": "after"}})
    );
    probe.release(1);
    assert_eq!(
        assert_result(&client.reply(&json!(1)).await, &json!(1)),
        json!({"output": {"tag": "held"}})
    );
    let (rest, served) = client.close().await;
    assert!(served.is_ok());
    assert_eq!(rest, Vec::<Value>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_of_a_batch_run_concurrently() {
    let (server, probe) = server();
    let mut client = ready_client(&server).await;
    let batch = json!([
        execute(json!(1), GATE, json!({"tag": 1})),
        execute(json!(2), GATE, json!({"tag": 2})),
    ]);
    client.send(&batch).await;
    // Both start before either is released.
    probe.wait_started(2).await;
    probe.release(2);
    let reply = client.recv().await.expect("a batch reply");
    assert_eq!(reply.as_array().map(Vec::len), Some(2), "{reply}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_of_one_server_run_independently() {
    let (server, probe) = server();
    let mut a = ready_client(&server).await;
    let mut b = ready_client(&server).await;
    a.send(&execute(json!(1), GATE, json!({}))).await;
    probe.wait_started(1).await;
    // Session b is not held up by a's request.
    assert_eq!(
        b.execute(ECHO, json!({"message": "b"})).await,
        Ok(json!({"message": "b"}))
    );
    // Cancelling id 1 in session b does not touch session a's request 1.
    b.notify("$/cancelRequest", json!({"id": 1})).await;
    assert_eq!(a.collect(QUIET).await, Vec::<Value>::new());
    assert_eq!(probe.cancelled(), 0);
    probe.release(1);
    assert_result(&a.reply(&json!(1)).await, &json!(1));
}

/// docs/mcp-v1.md §1, read-ahead at the limit: a full session still reads a
/// cancel for a running request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_session_still_reads_a_cancel_for_a_running_request() {
    let probe = Probe::default();
    let server = builder(&probe).build().unwrap();
    let mut client = ready_client(&server).await;
    let mut input = Vec::new();
    for n in 0..64 {
        input.extend(frame(
            &execute(json!(n), GATE, json!({"tag": n})).to_string(),
        ));
    }
    // One more than the limit: it is parked, the cancel behind it is read.
    input.extend(frame(
        &execute(json!(64), ECHO, json!({"message": "parked"})).to_string(),
    ));
    client.send_raw(&input).await;
    probe.wait_started(64).await;
    client.notify("$/cancelRequest", json!({"id": 0})).await;
    assert_error(&client.reply(&json!(0)).await, &json!(0), -32003);
    // The freed slot goes to the parked request.
    assert_eq!(
        assert_result(&client.reply(&json!(64)).await, &json!(64)),
        json!({"output": {"message": "parked"}})
    );
    probe.release(63);
    for n in 1..64 {
        assert_result(&client.reply(&json!(n)).await, &json!(n));
    }
}

/// docs/mcp-v1.md §1: a cancel for a request still parked answers it `-32003`
/// without running it; the others keep their order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_for_a_parked_request_answers_it_without_running_it() {
    let probe = Probe::default();
    let server = builder(&probe).max_in_flight(1).build().unwrap();
    let mut client = ready_client(&server).await;
    client
        .send(&execute(json!(1), GATE, json!({"tag": 1})))
        .await;
    probe.wait_started(1).await;
    client.send(&execute(json!(2), COUNT, json!({}))).await;
    client
        .send(&execute(json!(3), GATE, json!({"tag": 3})))
        .await;
    client.notify("$/cancelRequest", json!({"id": 2})).await;
    assert_error(&client.reply(&json!(2)).await, &json!(2), -32003);
    assert_eq!(probe.executed(), 0, "the cancelled request never ran");
    assert_eq!(probe.started(), 1, "request 3 still waits for the slot");
    probe.release(2);
    assert_result(&client.reply(&json!(1)).await, &json!(1));
    assert_result(&client.reply(&json!(3)).await, &json!(3));
    assert_eq!(probe.executed(), 0);
}

/// docs/mcp-v1.md §1: past 64 parked requests the session reads nothing more
/// (a cancel behind them waits too), and nothing is dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_read_ahead_bound_the_session_reads_nothing_more() {
    let probe = Probe::default();
    let server = builder(&probe).max_in_flight(1).build().unwrap();
    let mut client = ready_client(&server).await;
    let mut input = Vec::new();
    // One running, 64 parked (the bound), then a cancel for the running one.
    for n in 0..65 {
        input.extend(frame(
            &execute(json!(n), GATE, json!({"tag": n})).to_string(),
        ));
    }
    input.extend(frame(
        &json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 0}}).to_string(),
    ));
    client.send_raw(&input).await;
    probe.wait_started(1).await;
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());
    assert_eq!(probe.cancelled(), 0, "the cancel was not read");
    // One slot frees: one parked request starts, so the cancel is read.
    probe.release(1);
    assert_result(&client.reply(&json!(0)).await, &json!(0));
    probe.release(64);
    for n in 1..65 {
        assert_result(&client.reply(&json!(n)).await, &json!(n));
    }
}
