//! docs/mcp-v1.md §2: one test per error code this server produces — the code,
//! the table's `message`, and a human-readable string `data`.

mod common;

use clawmcp::testing::TestClient;
use common::*;
use serde_json::{Value, json};

/// Sends `message` and returns the reply to `id`.
async fn ask(client: &mut TestClient, message: Value) -> Value {
    let id = message["id"].clone();
    client.send(&message).await;
    client.reply(&id).await
}

#[tokio::test]
async fn parse_error_32700_when_the_body_is_not_json() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    client.send_raw(&frame(r#"{"jsonrpc":"2.0","id":1,"#)).await;
    let reply = client.recv().await.expect("a reply");
    assert_error(&reply, &Value::Null, -32700);
}

#[tokio::test]
async fn parse_error_32700_when_the_frame_header_is_unreadable() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    client.send_raw(b"THIS IS NOT A HEADER\r\n\r\n").await;
    client
        .send_raw(&frame(
            r#"{"jsonrpc":"2.0","id":2,"method":"mcp/listPrompts"}"#,
        ))
        .await;
    let reply = client.recv().await.expect("a reply");
    assert_error(&reply, &Value::Null, -32700);
    assert_result(&client.recv().await.expect("a reply"), &json!(2));
}

#[tokio::test]
async fn invalid_request_32600_for_a_message_that_is_not_json_rpc_2_0() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let reply = ask(
        &mut client,
        json!({"jsonrpc": "1.0", "id": 3, "method": "mcp/listTools"}),
    )
    .await;
    assert_error(&reply, &json!(3), -32600);
}

#[tokio::test]
async fn invalid_request_32600_for_initialize_with_id_other_than_1() {
    let (server, _) = server();
    let mut client = TestClient::connect(&server).await;
    let reply = ask(
        &mut client,
        request(
            json!(2),
            "initialize",
            Some(json!({"clientCapabilities": {}})),
        ),
    )
    .await;
    assert_error(&reply, &json!(2), -32600);
}

#[tokio::test]
async fn invalid_request_32600_for_a_second_initialize() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let reply = ask(
        &mut client,
        request(
            json!(1),
            "initialize",
            Some(json!({"clientCapabilities": {}})),
        ),
    )
    .await;
    assert_error(&reply, &json!(1), -32600);
}

#[tokio::test]
async fn method_not_found_32601_for_an_unknown_method_with_its_name_in_data() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let reply = ask(&mut client, request(json!(4), "mcp/frobnicate", None)).await;
    let data = assert_error(&reply, &json!(4), -32601);
    assert!(data.contains("mcp/frobnicate"), "{data}");
}

#[tokio::test]
async fn method_not_found_32601_for_a_method_whose_capability_is_false() {
    let server = clawmcp::Server::builder()
        .tool(simple_tool(ECHO, |_a, _c| async { Ok(json!({})) }))
        .build()
        .unwrap();
    let mut client = ready_client(&server).await;
    for (n, method) in ["mcp/listResources", "mcp/listPrompts"]
        .into_iter()
        .enumerate()
    {
        let reply = ask(&mut client, request(json!(n), method, None)).await;
        assert_error(&reply, &json!(n), -32601);
    }
}

#[tokio::test]
async fn invalid_params_32602_for_list_methods_with_params_other_than_absent_null_or_empty() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let mut n = 0;
    for method in ["mcp/listTools", "mcp/listResources", "mcp/listPrompts"] {
        for params in [
            json!([1]),
            json!({"x": 1}),
            json!([]),
            json!({"cursor": null}),
        ] {
            n += 1;
            let reply = ask(&mut client, request(json!(n), method, Some(params.clone()))).await;
            let data = assert_error(&reply, &json!(n), -32602);
            assert!(!data.is_empty(), "{method} {params}");
        }
        for params in [None, Some(Value::Null), Some(json!({}))] {
            n += 1;
            let reply = ask(&mut client, request(json!(n), method, params.clone())).await;
            assert!(
                assert_result(&reply, &json!(n)).is_array(),
                "{method} {params:?}"
            );
        }
    }
}

#[tokio::test]
async fn invalid_params_32602_for_execute_tool_params_of_the_wrong_shape() {
    let (server, probe) = server();
    let mut client = ready_client(&server).await;
    let mut cases: Vec<(String, Option<Value>)> = vec![
        ("absent".into(), None),
        ("null".into(), Some(Value::Null)),
        ("array".into(), Some(json!([COUNT, {}]))),
        ("empty array".into(), Some(json!([]))),
        ("no id".into(), Some(json!({"arguments": {}}))),
        ("numeric id".into(), Some(json!({"id": 5}))),
        ("null id".into(), Some(json!({"id": null, "arguments": {}}))),
        (
            "string arguments".into(),
            Some(json!({"id": COUNT, "arguments": "x"})),
        ),
        (
            "array arguments".into(),
            Some(json!({"id": COUNT, "arguments": [1]})),
        ),
        (
            "numeric arguments".into(),
            Some(json!({"id": COUNT, "arguments": 3})),
        ),
    ];
    cases.push(("empty object".into(), Some(json!({}))));
    for (n, (what, params)) in cases.into_iter().enumerate() {
        let reply = ask(&mut client, request(json!(n), "mcp/executeTool", params)).await;
        let data = assert_error(&reply, &json!(n), -32602);
        assert!(!data.is_empty(), "{what}");
    }
    assert_eq!(probe.executed(), 0, "no tool ran");
}

#[tokio::test]
async fn execute_tool_arguments_omitted_mean_an_empty_object() {
    let (server, probe) = server();
    let mut client = ready_client(&server).await;
    let reply = ask(
        &mut client,
        request(json!(1), "mcp/executeTool", Some(json!({"id": COUNT}))),
    )
    .await;
    assert_eq!(
        assert_result(&reply, &json!(1)),
        json!({"output": {"count": 1}})
    );
    assert_eq!(probe.executed(), 1);
    // With a required argument, omitted arguments are missing it.
    let reply = ask(
        &mut client,
        request(json!(2), "mcp/executeTool", Some(json!({"id": ECHO}))),
    )
    .await;
    let data = assert_error(&reply, &json!(2), -32602);
    assert_eq!(
        data,
        format!("Missing required property: 'message' in arguments for tool {ECHO}")
    );
}

#[tokio::test]
async fn invalid_params_32602_missing_required_argument_reads_exactly_as_in_the_reference() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let reply = ask(
        &mut client,
        execute(
            json!(3),
            FILE_WRITER,
            json!({"path": "/home/agent/output.txt"}),
        ),
    )
    .await;
    let data = assert_error(&reply, &json!(3), -32602);
    assert_eq!(
        data,
        "Missing required property: 'content' in arguments for tool mcp://acme-corp/tools/file-writer:v1"
    );
}

#[tokio::test]
async fn invalid_params_32602_other_schema_violations_name_the_path() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let suffix = format!(" in arguments for tool {FILE_WRITER}");
    let cases = [
        (json!({"path": ["x"], "content": "c"}), "/path"),
        (json!({"path": "p", "content": 5}), "/content"),
        (json!({"path": "p", "content": "c", "mode": 1000}), "/mode"),
        (json!({"path": "p", "content": "c", "mode": -1}), "/mode"),
        (json!({"path": "p", "content": "c", "mode": "rw"}), "/mode"),
        (
            json!({"path": "p", "content": "c", "options": {"retries": "many"}}),
            "/options/retries",
        ),
        (
            json!({"path": "p", "content": "c", "extra": true}),
            "/extra",
        ),
    ];
    for (n, (arguments, path)) in cases.into_iter().enumerate() {
        let reply = ask(
            &mut client,
            execute(json!(n), FILE_WRITER, arguments.clone()),
        )
        .await;
        let data = assert_error(&reply, &json!(n), -32602);
        let prefix = format!("Invalid value at '{path}': ");
        assert!(data.starts_with(&prefix), "{arguments}: {data}");
        assert!(data.ends_with(&suffix), "{arguments}: {data}");
        assert!(
            data.len() > prefix.len() + suffix.len(),
            "a reason is given: {data}"
        );
    }
}

#[tokio::test]
async fn internal_error_32603_when_a_tool_panics_and_the_session_serves_the_next_request() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let reply = ask(&mut client, execute(json!(5), PANIC, json!({}))).await;
    assert_error(&reply, &json!(5), -32603);
    assert_eq!(
        client.execute(ECHO, json!({"message": "still here"})).await,
        Ok(json!({"message": "still here"}))
    );
    // And again: the server survives repeated panics.
    let reply = ask(&mut client, execute(json!(6), PANIC, json!({}))).await;
    assert_error(&reply, &json!(6), -32603);
    assert!(client.list_tools().await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn internal_error_32603_when_a_tool_panics_after_awaiting_with_any_payload() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let reply = ask(&mut client, execute(json!(5), PANIC_LATER, json!({}))).await;
    assert_error(&reply, &json!(5), -32603);
    assert!(client.list_tools().await.is_ok());
}

#[tokio::test]
async fn internal_error_32603_when_a_tool_output_fails_its_output_schema() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let reply = ask(&mut client, execute(json!(7), BAD_OUTPUT, json!({}))).await;
    let data = assert_error(&reply, &json!(7), -32603);
    assert!(data.contains(BAD_OUTPUT), "{data}");
}

#[tokio::test]
async fn tool_execution_failed_32000_carries_the_tool_error_message_as_data() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let reply = ask(&mut client, execute(json!(8), FAIL, json!({}))).await;
    let data = assert_error(&reply, &json!(8), -32000);
    assert_eq!(data, FAIL_MESSAGE);
}

#[tokio::test]
async fn unknown_mcp_id_32001_for_a_tool_that_does_not_exist() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    for (n, id) in [
        "mcp://test/tools/nope:v1",
        "mcp://test/tools/echo:v2",
        NOTES,
        "",
    ]
    .into_iter()
    .enumerate()
    {
        let reply = ask(&mut client, execute(json!(n), id, json!({}))).await;
        assert_error(&reply, &json!(n), -32001);
    }
}

#[tokio::test]
async fn server_not_initialized_32002_for_a_request_before_initialize() {
    let (server, _) = server();
    let mut client = TestClient::connect(&server).await;
    let reply = ask(&mut client, request(json!(9), "mcp/listTools", None)).await;
    assert_error(&reply, &json!(9), -32002);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_cancelled_32003_when_the_client_cancels_it() {
    let (server, probe) = server();
    let mut client = ready_client(&server).await;
    client
        .send(&execute(json!(10), SLEEP, json!({"ms": 60000})))
        .await;
    probe.wait_started(1).await;
    client.notify("$/cancelRequest", json!({"id": 10})).await;
    let reply = client.reply(&json!(10)).await;
    assert_error(&reply, &json!(10), -32003);
}

#[tokio::test]
async fn message_too_large_32006_with_null_id_and_the_oversize_request_is_not_executed() {
    let probe = Probe::default();
    let server = builder(&probe).max_message_size(1024).build().unwrap();
    let mut client = ready_client(&server).await;

    // A 2000-byte executeTool request for the counting tool.
    let mut oversize = execute(json!(11), COUNT, json!({"pad": ""}));
    let pad = 2000 - oversize.to_string().len();
    oversize["params"]["arguments"]["pad"] = json!("x".repeat(pad));
    let oversize = oversize.to_string();
    assert_eq!(oversize.len(), 2000);
    client.send_raw(&frame(&oversize)).await;
    client
        .send(&request(json!(12), "mcp/listPrompts", None))
        .await;

    let reply = client.recv().await.expect("a reply");
    let data = assert_error(&reply, &Value::Null, -32006);
    assert!(!data.is_empty());
    assert_result(&client.recv().await.expect("a reply"), &json!(12));
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());
    assert_eq!(probe.executed(), 0, "the oversize request never ran");

    // A message of exactly the limit is served.
    let mut fits = execute(json!(13), COUNT, json!({"pad": ""}));
    let pad = 1024 - fits.to_string().len();
    fits["params"]["arguments"]["pad"] = json!("y".repeat(pad));
    assert_eq!(fits.to_string().len(), 1024);
    let reply = ask(&mut client, fits).await;
    assert_result(&reply, &json!(13));
    assert_eq!(probe.executed(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_too_large_32006_by_default_above_4_mib() {
    let (server, probe) = server();
    let mut client = ready_client(&server).await;
    const LIMIT: usize = 4 * 1024 * 1024;
    let sized = |id: i64, size: usize| {
        let mut message = execute(json!(id), COUNT, json!({"pad": ""}));
        let pad = size - message.to_string().len();
        message["params"]["arguments"]["pad"] = json!("z".repeat(pad));
        let text = message.to_string();
        assert_eq!(text.len(), size);
        text
    };
    client.send_raw(&frame(&sized(1, LIMIT + 1))).await;
    assert_error(&client.recv().await.expect("a reply"), &Value::Null, -32006);
    assert_eq!(probe.executed(), 0);
    client.send_raw(&frame(&sized(2, LIMIT))).await;
    assert_result(&client.recv().await.expect("a reply"), &json!(2));
    assert_eq!(probe.executed(), 1);
}

/// serde_json reads an object whose first member is named
/// `$serde_json::private::RawValue` as that member's string parsed (or
/// refuses it): such arguments are refused, so that a tool is given what
/// its schema checked.
#[tokio::test]
async fn invalid_params_32602_for_arguments_serde_json_would_read_as_another_value() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let call = |id: usize, arguments: &str| {
        frame(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"mcp/executeTool","params":{{"id":"{ECHO}","arguments":{arguments}}}}}"#
        ))
    };
    for (n, arguments) in [
        r#"{"$serde_json::private::RawValue":"{\"message\":\"smuggled\"}"}"#,
        r#"{"$serde_json::private::RawValue":"x"}"#,
        r#"{"\u0024serde_json::private::RawValue":"{}"}"#,
        r#"{"message":"hi","extra":{"$serde_json::private::RawValue":"5"}}"#,
        r#"{"message":"hi","extra":[{"$serde_json::private::RawValue":"x"}]}"#,
    ]
    .into_iter()
    .enumerate()
    {
        client.send_raw(&call(n, arguments)).await;
        let reply = client.reply(&json!(n)).await;
        let data = assert_error(&reply, &json!(n), -32602);
        assert!(
            data.contains("may not be named \"$serde_json::private::RawValue\""),
            "{arguments}: {data}"
        );
    }
    // Named anywhere but first, it is a member like any other: here one
    // echo's schema does not allow.
    client
        .send_raw(&call(
            9,
            r#"{"message":"hi","$serde_json::private::RawValue":"5"}"#,
        ))
        .await;
    let reply = client.reply(&json!(9)).await;
    let data = assert_error(&reply, &json!(9), -32602);
    assert!(
        data.starts_with("Invalid value at '/$serde_json::private::RawValue'"),
        "{data}"
    );
}
