//! docs/mcp-v1.md §3: the session handshake — `initialize` (id 1), its params
//! and result, `initialized`, and what is allowed in each phase.

mod common;

use clawmcp::Server;
use clawmcp::testing::TestClient;
use common::*;
use serde_json::{Value, json};

fn init_params() -> Value {
    json!({"clientCapabilities": {}})
}

/// Sends `initialize` with `id` and returns the reply.
async fn send_initialize(client: &mut TestClient, id: Value, params: Value) -> Value {
    client
        .send(&request(id.clone(), "initialize", Some(params)))
        .await;
    client.reply(&id).await
}

#[tokio::test]
async fn initialize_with_id_other_than_integer_1_is_invalid_request_and_session_keeps_waiting() {
    let (server, _) = server();
    let mut client = TestClient::connect(&server).await;
    for id in [json!(2), json!("1"), json!(0), json!(null)] {
        let reply = send_initialize(&mut client, id.clone(), init_params()).await;
        assert_error(&reply, &id, -32600);
    }
    // Still awaiting initialize: other requests are not served yet...
    let reply = client.call("mcp/listTools", None).await.unwrap_err();
    assert_eq!(reply.code.0, -32002);
    // ...and a correct initialize now works.
    let reply = send_initialize(&mut client, json!(1), init_params()).await;
    let result = assert_result(&reply, &json!(1));
    assert!(result["capabilities"].is_object(), "{reply}");
    client.notify("initialized", json!({})).await;
    assert!(client.list_tools().await.is_ok());
}

#[tokio::test]
async fn initialize_with_fractional_id_1_0_is_invalid_request_with_null_id() {
    let (server, _) = server();
    let mut client = TestClient::connect(&server).await;
    client
        .send_raw(&frame(
            r#"{"jsonrpc":"2.0","id":1.0,"method":"initialize","params":{"clientCapabilities":{}}}"#,
        ))
        .await;
    let reply = client.recv().await.expect("a reply");
    assert_error(&reply, &Value::Null, -32600);
    let reply = send_initialize(&mut client, json!(1), init_params()).await;
    assert_result(&reply, &json!(1));
}

#[tokio::test]
async fn any_request_before_initialize_known_or_unknown_gets_server_not_initialized() {
    let (server, _) = server();
    let mut client = TestClient::connect(&server).await;
    let cases = [
        ("mcp/listTools", None),
        ("mcp/listResources", Some(json!({}))),
        ("mcp/listPrompts", None),
        (
            "mcp/executeTool",
            Some(json!({"id": ECHO, "arguments": {"message": "hi"}})),
        ),
        ("no/suchMethod", None),
        ("rpc.discover", None),
        ("$/cancelRequest", Some(json!({"id": 1}))),
        ("initialized", None),
    ];
    for (n, (method, params)) in cases.into_iter().enumerate() {
        let id = json!(100 + n);
        client.send(&request(id.clone(), method, params)).await;
        let reply = client.reply(&id).await;
        assert_error(&reply, &id, -32002);
    }
    // A string id is echoed too.
    let id = json!("abc");
    client
        .send(&request(id.clone(), "mcp/listTools", None))
        .await;
    assert_error(&client.reply(&id).await, &id, -32002);
    // The session was not disturbed.
    let reply = send_initialize(&mut client, json!(1), init_params()).await;
    assert_result(&reply, &json!(1));
}

#[tokio::test]
async fn notifications_before_initialize_are_dropped_without_reply() {
    let (server, _) = server();
    let mut client = TestClient::connect(&server).await;
    client.notify("initialized", json!({})).await;
    client
        .notify("$/setTrace", json!({"value": "verbose"}))
        .await;
    client.notify("$/cancelRequest", json!({"id": 1})).await;
    client.notify("some/notification", json!({})).await;
    client.notify("mcp/listTools", json!({})).await;
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());

    // The early `initialized` and `$/setTrace` had no effect: after
    // initialize (without `initialized`) the session is not ready, so no
    // trace and no resource notifications reach it.
    let reply = send_initialize(&mut client, json!(1), init_params()).await;
    assert_result(&reply, &json!(1));
    assert!(client.list_tools().await.is_ok());
    server.handle().resource_changed(NOTES);
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());
    assert_eq!(server.handle().ready_sessions(), 0);
}

#[tokio::test]
async fn requests_after_initialize_reply_but_before_initialized_are_served() {
    let (server, _) = server();
    let mut client = TestClient::connect(&server).await;
    let reply = send_initialize(&mut client, json!(1), init_params()).await;
    assert_result(&reply, &json!(1));
    // No `initialized` yet.
    let tools = client.list_tools().await.expect("listTools is served");
    assert!(tools.iter().any(|t| t.mcp_id == ECHO));
    assert_eq!(
        client.execute(ECHO, json!({"message": "early"})).await,
        Ok(json!({"message": "early"}))
    );
    assert_eq!(
        client.list_resources().await.expect("served")[0].mcp_id,
        NOTES
    );
    assert_eq!(
        client.list_prompts().await.expect("served")[0].mcp_id,
        PLANNER
    );
}

#[tokio::test]
async fn server_sends_no_notification_before_initialized() {
    let (server, _) = server();
    let mut client = TestClient::connect(&server).await;
    let params = json!({"clientCapabilities": {}, "trace": "verbose"});
    let reply = send_initialize(&mut client, json!(1), params).await;
    assert_result(&reply, &json!(1));

    // Before `initialized`: requests are answered, with no `$/logTrace`,
    // and a resource change is not announced.
    assert!(client.list_tools().await.is_ok());
    server.handle().resource_changed(NOTES);
    assert!(client.execute(TOUCH, json!({})).await.is_ok());
    let quiet = client.collect(QUIET).await;
    assert_eq!(quiet, Vec::<Value>::new(), "nothing before initialized");

    // After `initialized` both kinds flow.
    client.notify("initialized", json!({})).await;
    assert!(client.list_tools().await.is_ok());
    let trace = client.next_notification().await.expect("a trace");
    assert_eq!(trace["method"], "$/logTrace", "{trace}");
    server.handle().resource_changed(NOTES);
    let mut seen_change = false;
    for _ in 0..4 {
        let note = client.next_notification().await.expect("a notification");
        if note["method"] == "mcp/resourceDidChange" {
            assert_eq!(note["params"], json!({"mcpId": NOTES}));
            seen_change = true;
            break;
        }
    }
    assert!(seen_change, "resourceDidChange after initialized");
}

#[tokio::test]
async fn second_initialize_is_invalid_request_before_initialized() {
    let (server, _) = server();
    let mut client = TestClient::connect(&server).await;
    assert_result(
        &send_initialize(&mut client, json!(1), init_params()).await,
        &json!(1),
    );
    let reply = send_initialize(&mut client, json!(1), init_params()).await;
    assert_error(&reply, &json!(1), -32600);
    let reply = send_initialize(&mut client, json!(9), init_params()).await;
    assert_error(&reply, &json!(9), -32600);
    // The session is unaffected.
    client.notify("initialized", json!({})).await;
    assert!(client.list_tools().await.is_ok());
}

#[tokio::test]
async fn second_initialize_is_invalid_request_after_initialized() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    let reply = send_initialize(&mut client, json!(1), init_params()).await;
    assert_error(&reply, &json!(1), -32600);
    let reply = send_initialize(&mut client, json!("x"), init_params()).await;
    assert_error(&reply, &json!("x"), -32600);
    assert!(client.list_tools().await.is_ok());
}

#[tokio::test]
async fn initialize_params_of_wrong_types_are_invalid_params() {
    let (server, _) = server();
    let mut client = TestClient::connect(&server).await;
    let bad = [
        json!({}),
        json!({"rootUri": "file:///w"}),
        json!({"clientCapabilities": null}),
        json!({"clientCapabilities": "yes"}),
        json!({"clientCapabilities": [1]}),
        json!({"clientCapabilities": {}, "trace": 5}),
        json!({"clientCapabilities": {}, "trace": "loud"}),
        json!({"clientCapabilities": {}, "trace": "ON"}),
        json!({"clientCapabilities": {}, "rootUri": 5}),
        json!([{"clientCapabilities": {}}]),
    ];
    for params in bad {
        let reply = send_initialize(&mut client, json!(1), params.clone()).await;
        let data = assert_error(&reply, &json!(1), -32602);
        assert!(!data.is_empty(), "{params}");
    }
    // Absent params: clientCapabilities is required.
    client.send(&request(json!(1), "initialize", None)).await;
    assert_error(&client.reply(&json!(1)).await, &json!(1), -32602);
    // A refused initialize did not start the session: a correct one works.
    let reply = send_initialize(
        &mut client,
        json!(1),
        json!({"clientCapabilities": {"x": 1}, "rootUri": "file:///work", "trace": "off"}),
    )
    .await;
    assert_result(&reply, &json!(1));
}

#[tokio::test]
async fn initialize_accepts_every_documented_trace_value() {
    let (server, _) = server();
    for trace in ["off", "messages", "verbose", "on"] {
        let mut client = TestClient::connect(&server).await;
        let reply = send_initialize(
            &mut client,
            json!(1),
            json!({"clientCapabilities": {}, "trace": trace}),
        )
        .await;
        assert_result(&reply, &json!(1));
    }
}

#[tokio::test]
async fn initialize_result_is_exactly_capabilities_and_server_info() {
    let (server, _) = server();
    let mut client = TestClient::connect(&server).await;
    let reply = send_initialize(&mut client, json!(1), init_params()).await;
    let result = assert_result(&reply, &json!(1));
    assert_eq!(
        result,
        json!({
            "capabilities": {
                "listToolsProvider": true,
                "listResourcesProvider": true,
                "listPromptsProvider": true,
                "executionProvider": {"execute": true}
            },
            "serverInfo": {"name": "clawmcp-tests", "version": "9.9.9"}
        })
    );
}

async fn capabilities_of(server: &Server) -> (TestClient, Value) {
    let mut client = TestClient::connect(server).await;
    let result = client.initialize(init_params()).await;
    (client, result["capabilities"].clone())
}

#[tokio::test]
async fn capabilities_follow_registration_tools_only() {
    let server = Server::builder()
        .tool(simple_tool(ECHO, |_a, _c| async { Ok(json!({})) }))
        .build()
        .unwrap();
    let (mut client, caps) = capabilities_of(&server).await;
    assert_eq!(
        caps,
        json!({"listToolsProvider": true, "listResourcesProvider": false,
               "listPromptsProvider": false, "executionProvider": {"execute": true}})
    );
    assert_eq!(
        client
            .call("mcp/listResources", None)
            .await
            .unwrap_err()
            .code
            .0,
        -32601
    );
    assert_eq!(
        client
            .call("mcp/listPrompts", None)
            .await
            .unwrap_err()
            .code
            .0,
        -32601
    );
    assert!(client.list_tools().await.is_ok());
}

#[tokio::test]
async fn capabilities_without_tools_omit_execution_provider_and_execute_tool_is_method_not_found() {
    let server = Server::builder()
        .resource(clawmcp::TextResource::new(
            NOTES,
            "notes",
            "Notes.",
            "text/plain",
            "x",
        ))
        .build()
        .unwrap();
    let (mut client, caps) = capabilities_of(&server).await;
    assert_eq!(
        caps,
        json!({"listToolsProvider": false, "listResourcesProvider": true,
               "listPromptsProvider": false})
    );
    assert!(caps.get("executionProvider").is_none());
    client
        .send(&execute(json!(40), ECHO, json!({"message": "x"})))
        .await;
    assert_error(&client.reply(&json!(40)).await, &json!(40), -32601);
    client
        .send(&request(json!(41), "mcp/listTools", None))
        .await;
    assert_error(&client.reply(&json!(41)).await, &json!(41), -32601);
    assert_eq!(client.list_resources().await.unwrap().len(), 1);
}

#[tokio::test]
async fn capabilities_of_an_empty_server_are_all_false() {
    let server = Server::builder().build().unwrap();
    let (mut client, caps) = capabilities_of(&server).await;
    assert_eq!(
        caps,
        json!({"listToolsProvider": false, "listResourcesProvider": false,
               "listPromptsProvider": false})
    );
    for method in [
        "mcp/listTools",
        "mcp/listResources",
        "mcp/listPrompts",
        "mcp/executeTool",
    ] {
        let e = client.call(method, None).await.unwrap_err();
        assert_eq!(e.code.0, -32601, "{method}");
    }
}

#[tokio::test]
async fn builder_provider_switches_force_capabilities_on() {
    let server = Server::builder()
        .resources_provider(true)
        .prompts_provider(true)
        .tools_provider(true)
        .build()
        .unwrap();
    let (mut client, caps) = capabilities_of(&server).await;
    assert_eq!(
        caps,
        json!({"listToolsProvider": true, "listResourcesProvider": true,
               "listPromptsProvider": true, "executionProvider": {"execute": true}})
    );
    assert_eq!(client.list_resources().await.unwrap(), vec![]);
    assert_eq!(client.list_prompts().await.unwrap(), vec![]);
    assert_eq!(client.list_tools().await.unwrap(), vec![]);
    // Execution is provided, but there is no such tool.
    assert_eq!(
        client.execute(ECHO, json!({})).await.unwrap_err().code.0,
        -32001
    );
}

#[tokio::test]
async fn resources_provider_alone_turns_on_only_list_resources() {
    let server = Server::builder().resources_provider(true).build().unwrap();
    let (_client, caps) = capabilities_of(&server).await;
    assert_eq!(
        caps,
        json!({"listToolsProvider": false, "listResourcesProvider": true,
               "listPromptsProvider": false})
    );
}

#[tokio::test]
async fn a_pretty_printed_initialize_is_accepted() {
    let (server, _) = server();
    let mut client = TestClient::connect(&server).await;
    let body = "{\n  \"jsonrpc\": \"2.0\",\n  \"method\": \"initialize\",\n  \"params\":\n    {\n      \"clientCapabilities\": { },\n      \"trace\": \"off\"\n    },\n  \"id\": 1\n}\n";
    client.send_raw(&frame(body)).await;
    let reply = client.recv().await.expect("a reply");
    assert_result(&reply, &json!(1));
}
