//! docs/mcp-v1.md §1: JSON-RPC 2.0 message validation, id echoing,
//! notifications, reserved and unknown methods, responses and batches.

mod common;

use std::collections::BTreeMap;

use clawmcp::testing::TestClient;
use common::*;
use serde_json::{Value, json};

/// Sends one raw body in a frame and returns the next message.
async fn roundtrip(client: &mut TestClient, body: &str) -> Value {
    client.send_raw(&frame(body)).await;
    client.recv().await.expect("a reply")
}

#[tokio::test]
async fn jsonrpc_member_must_be_exactly_2_0_else_invalid_request_with_id_echoed() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let cases = [
        (
            r#"{"jsonrpc":"1.0","id":3,"method":"mcp/listTools"}"#,
            json!(3),
        ),
        (r#"{"id":"a","method":"mcp/listTools"}"#, json!("a")),
        (
            r#"{"jsonrpc":2.0,"id":4,"method":"mcp/listTools"}"#,
            json!(4),
        ),
        (r#"{"jsonrpc":2,"id":5,"method":"mcp/listTools"}"#, json!(5)),
        (
            r#"{"jsonrpc":"2","id":6,"method":"mcp/listTools"}"#,
            json!(6),
        ),
        (
            r#"{"jsonrpc":"2.0 ","id":7,"method":"mcp/listTools"}"#,
            json!(7),
        ),
        (
            r#"{"jsonrpc":null,"id":"n","method":"mcp/listTools"}"#,
            json!("n"),
        ),
    ];
    for (body, id) in cases {
        let reply = roundtrip(&mut client, body).await;
        assert_error(&reply, &id, -32600);
    }
}

#[tokio::test]
async fn method_must_be_a_string_else_invalid_request_with_id_echoed() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let cases = [
        (r#"{"jsonrpc":"2.0","id":10,"method":42}"#, json!(10)),
        (r#"{"jsonrpc":"2.0","id":11,"method":null}"#, json!(11)),
        (
            r#"{"jsonrpc":"2.0","id":12,"method":["mcp/listTools"]}"#,
            json!(12),
        ),
        (r#"{"jsonrpc":"2.0","id":"m"}"#, json!("m")),
    ];
    for (body, id) in cases {
        let reply = roundtrip(&mut client, body).await;
        assert_error(&reply, &id, -32600);
    }
}

#[tokio::test]
async fn params_must_be_an_object_or_array_else_invalid_request() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let cases = [
        (
            r#"{"jsonrpc":"2.0","id":20,"method":"mcp/listTools","params":"x"}"#,
            json!(20),
        ),
        (
            r#"{"jsonrpc":"2.0","id":21,"method":"mcp/listTools","params":5}"#,
            json!(21),
        ),
        (
            r#"{"jsonrpc":"2.0","id":22,"method":"mcp/listTools","params":true}"#,
            json!(22),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"p","method":"mcp/executeTool","params":"{}"}"#,
            json!("p"),
        ),
    ];
    for (body, id) in cases {
        let reply = roundtrip(&mut client, body).await;
        assert_error(&reply, &id, -32600);
    }
}

#[tokio::test]
async fn id_of_boolean_object_array_or_fraction_is_invalid_request_with_null_id() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    for id in ["true", "false", r#"{"a":1}"#, "[1]", "[]", "1.5", "-0.5"] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"mcp/listTools"}}"#);
        let reply = roundtrip(&mut client, &body).await;
        assert_error(&reply, &Value::Null, -32600);
    }
}

#[tokio::test]
async fn an_invalid_message_without_id_is_still_answered_invalid_request_with_null_id() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    for body in [
        r#"{"jsonrpc":"1.0","method":"some/notification"}"#,
        r#"{"method":"some/notification"}"#,
        r#"{"jsonrpc":"2.0","method":"some/notification","params":5}"#,
        r#"{"jsonrpc":"2.0","method":7}"#,
        r#"{"jsonrpc":"2.0"}"#,
        "{}",
    ] {
        let reply = roundtrip(&mut client, body).await;
        assert_error(&reply, &Value::Null, -32600);
    }
}

#[tokio::test]
async fn a_message_that_is_not_an_object_is_invalid_request_with_null_id() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    for body in ["42", r#""x""#, "null", "true", "-1.5"] {
        let reply = roundtrip(&mut client, body).await;
        assert_error(&reply, &Value::Null, -32600);
    }
}

#[tokio::test]
async fn invalid_json_is_parse_error_with_null_id_and_the_session_continues() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    for body in [
        r#"{"jsonrpc":"#,
        "{oops}",
        "nul",
        "[1,",
        r#"{"jsonrpc":"2.0","id":1,"method":"mcp/listTools"} {}"#,
        "",
    ] {
        let reply = roundtrip(&mut client, body).await;
        assert_error(&reply, &Value::Null, -32700);
    }
    assert!(client.list_tools().await.is_ok());
}

#[tokio::test]
async fn ids_are_echoed_exactly_strings_stay_strings_and_large_integers_are_not_rounded() {
    let (server, _) = server();
    let mut client = RawClient::initialized(&server).await;
    let ids = [
        r#""7""#,
        "7",
        "9007199254740993",
        "9223372036854775807",
        "-9223372036854775808",
        "18446744073709551616",
        "123456789012345678901234567890",
        "-5",
        "0",
        r#""""#,
        r#""a\"b""#,
        r#""mcp://x/y:1""#,
    ];
    let mut input = Vec::new();
    for id in ids {
        input.extend(frame(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"mcp/listPrompts"}}"#
        )));
    }
    client.write(&input).await;
    let mut echoed = BTreeMap::new();
    for _ in ids {
        let body = client.next_body().await.expect("a reply");
        assert!(body.contains(r#""result""#), "{body}");
        *echoed.entry(raw_id(&body)).or_insert(0) += 1;
    }
    let expected: BTreeMap<String, i32> = ids.iter().map(|id| ((*id).to_owned(), 1)).collect();
    assert_eq!(echoed, expected);
}

#[tokio::test]
async fn ids_are_echoed_exactly_from_pretty_printed_messages() {
    let (server, _) = server();
    let mut client = RawClient::initialized(&server).await;
    let body = "{\n  \"jsonrpc\" : \"2.0\" ,\n  \"id\" :  9223372036854775807 \n,\r\n\t\"method\":\"mcp/listPrompts\" , \"params\" : { }\n}\n";
    client.write(&frame(body)).await;
    let reply = client.next_body().await.expect("a reply");
    assert_eq!(raw_id(&reply), "9223372036854775807", "{reply}");
    assert!(reply.contains(r#""result""#), "{reply}");

    let body = "{ \"id\" : \"s\" , \"method\" : \"mcp/listPrompts\" , \"jsonrpc\" : \"2.0\" }";
    client.write(&frame(body)).await;
    let reply = client.next_body().await.expect("a reply");
    assert_eq!(raw_id(&reply), r#""s""#, "{reply}");
}

#[tokio::test]
async fn string_ids_with_escapes_are_echoed_with_the_same_meaning() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let reply = roundtrip(
        &mut client,
        r#"{"jsonrpc":"2.0","id":"\u00e9\n\u2713","method":"mcp/listPrompts"}"#,
    )
    .await;
    assert_result(&reply, &json!("é\n✓"));
}

#[tokio::test]
async fn string_id_7_and_number_id_7_are_different_requests() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    client
        .send(&execute(json!("7"), ECHO, json!({"message": "string"})))
        .await;
    client
        .send(&execute(json!(7), ECHO, json!({"message": "number"})))
        .await;
    let by_string = assert_result(&client.reply(&json!("7")).await, &json!("7"));
    let by_number = assert_result(&client.reply(&json!(7)).await, &json!(7));
    assert_eq!(by_string["output"]["message"], "string");
    assert_eq!(by_number["output"]["message"], "number");
}

#[tokio::test]
async fn id_null_is_a_request_and_gets_a_reply_with_id_null() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let reply = roundtrip(
        &mut client,
        r#"{"jsonrpc":"2.0","id":null,"method":"mcp/listPrompts"}"#,
    )
    .await;
    let result = assert_result(&reply, &Value::Null);
    assert_eq!(result[0]["mcpId"], PLANNER);
    let reply = roundtrip(
        &mut client,
        r#"{"jsonrpc":"2.0","id":null,"method":"no/such"}"#,
    )
    .await;
    assert_error(&reply, &Value::Null, -32601);
}

#[tokio::test]
async fn valid_notifications_never_get_a_reply_even_unknown_or_request_methods() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    for method in [
        "some/unknownNotification",
        "$/unknown",
        "$/cancelRequest",
        "rpc.foo",
        "MCP/LISTTOOLS",
        "mcp/listTools",
        "mcp/listResources",
        "mcp/executeTool",
        "initialize",
        "initialized",
    ] {
        client.notify(method, json!({})).await;
    }
    client
        .send(&json!({"jsonrpc": "2.0", "method": "mcp/executeTool",
                      "params": {"id": ECHO, "arguments": {"message": "x"}}}))
        .await;
    client
        .send(&json!({"jsonrpc": "2.0", "method": "mcp/executeTool",
                      "params": {"id": "mcp://nope/x", "arguments": {}}}))
        .await;
    client
        .send(&json!({"jsonrpc": "2.0", "method": "mcp/listTools"}))
        .await;
    client
        .send(&json!({"jsonrpc": "2.0", "method": "mcp/listTools", "params": null}))
        .await;
    client
        .send(&json!({"jsonrpc": "2.0", "method": "mcp/listTools", "params": [1, 2]}))
        .await;
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());
    assert!(client.list_tools().await.is_ok());
}

#[tokio::test]
async fn dollar_requests_that_are_not_understood_are_method_not_found() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    for (n, method) in ["$/unknown", "$/foo/bar", "$/"].into_iter().enumerate() {
        let id = json!(n);
        client
            .send(&request(id.clone(), method, Some(json!({}))))
            .await;
        assert_error(&client.reply(&id).await, &id, -32601);
    }
}

#[tokio::test]
async fn rpc_prefixed_and_unknown_methods_are_method_not_found() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    for (n, method) in ["rpc.discover", "rpc.foo", "rpc.", "mcp/unknown", "x", ""]
        .into_iter()
        .enumerate()
    {
        let id = json!(format!("r{n}"));
        client.send(&request(id.clone(), method, None)).await;
        assert_error(&client.reply(&id).await, &id, -32601);
    }
}

#[tokio::test]
async fn method_names_are_case_sensitive() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    for (n, method) in [
        "MCP/listTools",
        "mcp/listtools",
        "mcp/ListTools",
        "mcp/EXECUTETOOL",
        "Initialize",
        " mcp/listTools",
        "mcp/listTools ",
    ]
    .into_iter()
    .enumerate()
    {
        let id = json!(n);
        client.send(&request(id.clone(), method, None)).await;
        assert_error(&client.reply(&id).await, &id, -32601);
    }
}

#[tokio::test]
async fn incoming_response_objects_are_ignored() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    for body in [
        r#"{"jsonrpc":"2.0","id":5,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":"x","result":null}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}"#,
        r#"{"jsonrpc":"2.0","id":6,"error":{"code":1,"message":"m","data":"d"}}"#,
    ] {
        client.send_raw(&frame(body)).await;
    }
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());
    assert!(client.list_tools().await.is_ok());
}

/// Sends a batch and returns its reply, an array sorted by id text.
async fn batch(client: &mut TestClient, batch: &str) -> Vec<Value> {
    client.send_raw(&frame(batch)).await;
    batch_reply(client).await
}

#[tokio::test]
async fn batch_reply_is_an_array_of_replies_to_its_requests_only() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let body = json!([
        request(json!(1), "mcp/listPrompts", None),
        {"jsonrpc": "2.0", "method": "some/notification"},
        request(json!(2), "no/such", None),
        execute(json!(3), ECHO, json!({"message": "in a batch"})),
        {"jsonrpc": "2.0", "method": "$/setTrace", "params": {"value": "off"}},
        {"jsonrpc": "2.0", "id": 99, "result": {}},
        execute(json!("4"), FAIL, json!({})),
    ])
    .to_string();
    let replies = batch(&mut client, &body).await;
    assert_eq!(replies.len(), 4, "{replies:?}");
    assert_eq!(replies[0]["id"], json!("4"));
    assert_error(&replies[0], &json!("4"), -32000);
    assert_eq!(assert_result(&replies[1], &json!(1))[0]["mcpId"], PLANNER);
    assert_error(&replies[2], &json!(2), -32601);
    assert_eq!(
        assert_result(&replies[3], &json!(3)),
        json!({"output": {"message": "in a batch"}})
    );
    // Nothing else: the replies came as one array, not also one by one.
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());
}

#[tokio::test]
async fn empty_batch_is_one_invalid_request_object_with_null_id() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    for body in ["[]", " [ ] ", "[\n]"] {
        client.send_raw(&frame(body)).await;
        let reply = client.recv().await.expect("a reply");
        assert!(reply.is_object(), "one object, not an array: {reply}");
        assert_error(&reply, &Value::Null, -32600);
    }
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());
}

#[tokio::test]
async fn batch_of_only_notifications_gets_no_reply_at_all() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let body = json!([
        {"jsonrpc": "2.0", "method": "some/notification"},
        {"jsonrpc": "2.0", "method": "$/unknown", "params": {}},
        {"jsonrpc": "2.0", "method": "mcp/listTools"},
        {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 1}},
    ])
    .to_string();
    client.send_raw(&frame(&body)).await;
    // Response objects in a batch are ignored too.
    client
        .send_raw(&frame(r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#))
        .await;
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());
    assert!(client.list_tools().await.is_ok());
}

#[tokio::test]
async fn non_object_batch_elements_get_their_own_invalid_request_entries() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let body = format!(
        r#"[1,"x",null,{{}},[],{},{}]"#,
        request(json!(13), "mcp/listPrompts", None),
        json!({"jsonrpc": "1.0", "id": 14, "method": "mcp/listPrompts"}),
    );
    let replies = batch(&mut client, &body).await;
    assert_eq!(replies.len(), 7, "{replies:?}");
    let mut nulls = 0;
    for reply in &replies {
        match &reply["id"] {
            Value::Null => {
                assert_error(reply, &Value::Null, -32600);
                nulls += 1;
            }
            id if *id == json!(13) => {
                assert_result(reply, id);
            }
            id if *id == json!(14) => {
                assert_error(reply, id, -32600);
            }
            other => panic!("unexpected id {other}"),
        }
    }
    assert_eq!(nulls, 5);
}

#[tokio::test]
async fn batch_before_initialize_answers_each_request_server_not_initialized() {
    let (server, _) = server();
    let mut client = TestClient::connect(&server).await;
    let body = json!([
        request(json!(5), "mcp/listTools", None),
        {"jsonrpc": "2.0", "method": "initialized"},
        request(json!(6), "no/such", None),
    ])
    .to_string();
    let replies = batch(&mut client, &body).await;
    assert_eq!(replies.len(), 2, "{replies:?}");
    assert_error(&replies[0], &json!(5), -32002);
    assert_error(&replies[1], &json!(6), -32002);
}

#[tokio::test]
async fn bad_input_never_kills_the_session_deeply_nested_json() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    let bodies = [
        deep.clone(),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"mcp/executeTool","params":{{"id":"{ECHO}","arguments":{{"message":{deep}}}}}}}"#
        ),
        format!(r#"{{"jsonrpc":"2.0","id":{deep},"method":"mcp/listTools"}}"#),
    ];
    for body in &bodies {
        client.send_raw(&frame(body)).await;
        let reply = client.recv().await.expect("a reply");
        // Some error object (or array of them for the batch), never a crash.
        let replies = match reply {
            Value::Array(items) => items,
            other => vec![other],
        };
        for r in replies {
            assert!(r["error"]["code"].is_i64(), "{r}");
            assert!(r["error"]["data"].is_string(), "{r}");
        }
    }
    assert!(client.list_tools().await.is_ok());
}

#[tokio::test]
async fn extra_members_in_a_request_are_ignored() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let reply = roundtrip(
        &mut client,
        r#"{"jsonrpc":"2.0","id":30,"method":"mcp/listPrompts","extra":{"a":1},"meta":null}"#,
    )
    .await;
    assert_result(&reply, &json!(30));
}

#[tokio::test]
async fn large_integer_ids_are_echoed_exactly_in_error_replies_too() {
    let (server, _) = server();
    let mut client = RawClient::connect(&server);
    // Before initialize: -32002.
    client
        .write(&frame(
            r#"{"jsonrpc":"2.0","id":9007199254740993,"method":"mcp/listTools"}"#,
        ))
        .await;
    let reply = client.next_body().await.expect("a reply");
    assert_eq!(raw_id(&reply), "9007199254740993", "{reply}");
    assert!(reply.contains("-32002"), "{reply}");
    // An invalid request: -32600.
    client
        .write(&frame(
            r#"{"jsonrpc":"1.0","id":-9223372036854775808,"method":"mcp/listTools"}"#,
        ))
        .await;
    let reply = client.next_body().await.expect("a reply");
    assert_eq!(raw_id(&reply), "-9223372036854775808", "{reply}");
    assert!(reply.contains("-32600"), "{reply}");
    // Initialize with a big id: -32600, id echoed.
    client
        .write(&frame(
            r#"{"jsonrpc":"2.0","id":18446744073709551617,"method":"initialize","params":{"clientCapabilities":{}}}"#,
        ))
        .await;
    let reply = client.next_body().await.expect("a reply");
    assert_eq!(raw_id(&reply), "18446744073709551617", "{reply}");
    assert!(reply.contains("-32600"), "{reply}");
}

#[tokio::test]
async fn member_strings_are_compared_after_json_unescaping() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let reply = roundtrip(
        &mut client,
        r#"{"jsonrpc":"2\u002e0","id":31,"method":"mcp\/listPrompts"}"#,
    )
    .await;
    assert_result(&reply, &json!(31));
    let reply = roundtrip(
        &mut client,
        r#"{"jsonrpc":"2.0","id":32,"method":"mcp\u002flistprompts"}"#,
    )
    .await;
    assert_error(&reply, &json!(32), -32601);
}
