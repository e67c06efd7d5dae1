//! The Model Context Protocol dialect (docs/model-context.md §1–§4) over stdio,
//! through the test client: dialect selection by the first byte, version
//! negotiation and the handshake, every row of §3's mapping, pagination,
//! logging, completion, subscriptions, cancellation without a reply, and
//! newline-delimited framing. One rule per test.

mod model_context_support;

use clawmcp::Server;
use clawmcp::error::ErrorCode;
use clawmcp::server::Protocols;
use clawmcp::testing::TestClient;
use model_context_support::*;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn client() -> (TestClient, Probe, clawmcp::SharedResource, Server) {
    let (server, probe, status) = server();
    let client = TestClient::model_context(&server, json!({})).await;
    (client, probe, status, server)
}

fn init(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {},
           "clientInfo": {"name": "t", "version": "1"}})
}

/// Raw stdio: writes `input`, closes it, returns every output line.
async fn raw_lines(server: &Server, input: &str) -> Vec<Value> {
    let (client, server_end) = tokio::io::duplex(64 * 1024);
    let (r, w) = tokio::io::split(server_end);
    let server = server.clone();
    let serving = tokio::spawn(async move { server.serve_io(r, w).await });
    let (mut from, mut to) = tokio::io::split(client);
    to.write_all(input.as_bytes()).await.expect("write");
    to.shutdown().await.expect("close");
    let mut out = String::new();
    from.read_to_string(&mut out).await.expect("read");
    serving.await.expect("task").expect("served");
    assert!(out.is_empty() || out.ends_with('\n'), "{out:?}");
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect()
}

// ------------------------------------------------------------ §1, §2 --

#[tokio::test]
async fn the_first_non_blank_byte_chooses_the_dialect() {
    let (server, _, _) = server();
    // `{` after blanks: newline-delimited JSON.
    let lines = raw_lines(
        &server,
        " \r\n\t{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
    )
    .await;
    assert_eq!(lines, [json!({"jsonrpc": "2.0", "id": 1, "result": {}})]);
    // `C`: MCP v1.0 frames (the test client's default).
    let mut v1 = TestClient::initialized(&server).await;
    assert!(v1.list_tools().await.is_ok());
}

#[tokio::test]
async fn a_server_restricted_to_one_dialect_ignores_the_first_byte() {
    let (probe, status) = (Probe::default(), status());
    let v1_only = builder(&probe, &status)
        .protocols(Protocols::McpV1)
        .build()
        .unwrap();
    // `{` on an MCP v1.0 server is a frame header it cannot read.
    let (client, server_end) = tokio::io::duplex(64 * 1024);
    let (r, w) = tokio::io::split(server_end);
    let serving = tokio::spawn(async move { v1_only.serve_io(r, w).await });
    let (mut from, mut to) = tokio::io::split(client);
    to.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
        .await
        .unwrap();
    to.shutdown().await.unwrap();
    let mut out = String::new();
    from.read_to_string(&mut out).await.unwrap();
    serving.await.unwrap().unwrap();
    assert!(out.starts_with("Content-Length: "), "{out}");
    assert!(out.contains("-32700"), "{out}");
    // A Model Context Protocol server reads any first byte as a line.
    let mc_only = builder(&probe, &status)
        .protocols(Protocols::ModelContext)
        .build()
        .unwrap();
    let lines = raw_lines(&mc_only, "Content-Length: 2\r\n\r\n{}\n").await;
    assert!(
        lines
            .iter()
            .all(|l| l["error"]["code"] == -32700 || l["error"]["code"] == -32600),
        "{lines:?}"
    );
}

#[tokio::test]
async fn initialize_negotiates_a_supported_version_or_offers_the_latest() {
    let (server, _, _) = server();
    for (asked, answered) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2024-11-05"), // stdio only
        ("2099-01-01", "2025-11-25"),
    ] {
        let mut client = TestClient::connect_model_context(&server).await;
        let result = client.initialize_model_context(init(asked)).await;
        assert_eq!(result["protocolVersion"], answered, "asked {asked}");
    }
}

#[tokio::test]
async fn initialize_announces_what_is_registered_with_instructions() {
    let (server, _, _) = server();
    let mut client = TestClient::connect_model_context(&server).await;
    let result = client.initialize_model_context(init("2025-11-25")).await;
    assert_eq!(
        result["serverInfo"],
        json!({"name": "mc-test", "version": "1.2.3"})
    );
    assert_eq!(result["instructions"], "Use echo to test.");
    let caps = &result["capabilities"];
    assert_eq!(caps["tools"], json!({"listChanged": true}));
    assert_eq!(
        caps["resources"],
        json!({"subscribe": true, "listChanged": true})
    );
    assert_eq!(caps["prompts"], json!({"listChanged": true}));
    assert_eq!(caps["logging"], json!({}));
    assert_eq!(caps["completions"], json!({}));
    // Nothing registered: only logging.
    let bare = Server::builder().build().unwrap();
    let mut client = TestClient::connect_model_context(&bare).await;
    let result = client.initialize_model_context(init("2025-11-25")).await;
    assert_eq!(result["capabilities"], json!({"logging": {}}));
}

#[tokio::test]
async fn initialize_may_carry_any_id_and_its_params_are_checked() {
    let (server, _, _) = server();
    let mut client = TestClient::connect_model_context(&server).await;
    client
        .send(&json!({"jsonrpc": "2.0", "id": "x", "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}))
        .await;
    let reply = client.reply(&json!("x")).await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    client
        .send(&json!({"jsonrpc": "2.0", "id": "y", "method": "initialize", "params": init("2025-11-25")}))
        .await;
    let reply = client.reply(&json!("y")).await;
    assert_eq!(reply["result"]["protocolVersion"], "2025-11-25", "{reply}");
}

/// A session keeps its client's declarations: past 64 KiB of `initialize`
/// params they are refused, and the session may initialize again.
#[tokio::test]
async fn initialize_params_past_what_a_session_keeps_are_32602() {
    let (server, _, _) = server();
    let mut client = TestClient::connect_model_context(&server).await;
    let mut params = init("2025-11-25");
    params["capabilities"]["experimental"] = json!({ "padding": "x".repeat(64 * 1024) });
    client
        .send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}))
        .await;
    let reply = client.reply(&json!(1)).await;
    assert_eq!(reply["error"]["code"], -32602, "{reply:.300}");
    let data = reply["error"]["data"].as_str().unwrap_or_default();
    assert!(data.contains("65536 bytes"), "{data}");
    client
        .send(&json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": init("2025-11-25")}))
        .await;
    let reply = client.reply(&json!(2)).await;
    assert_eq!(reply["result"]["protocolVersion"], "2025-11-25", "{reply}");
}

#[tokio::test]
async fn before_initialize_only_ping_is_served_and_others_are_32600() {
    let (server, _, _) = server();
    let mut client = TestClient::connect_model_context(&server).await;
    assert_eq!(client.call("ping", None).await, Ok(json!({})));
    let e = client.call("tools/list", None).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_REQUEST);
    assert!(e.data.contains("not initialized"), "{}", e.data);
}

#[tokio::test]
async fn a_second_initialize_is_32600() {
    let (mut client, ..) = client().await;
    let e = client
        .call("initialize", Some(init("2025-11-25")))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_REQUEST);
}

#[tokio::test]
async fn server_discover_is_the_2026_revision_and_leaves_the_handshake_open() {
    let (server, _, _) = server();
    let mut client = TestClient::connect_model_context(&server).await;
    // Without _meta: -32602 (a 2026-07-28 request must say its version).
    let e = client.call("server/discover", None).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
    let meta = json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}});
    let discovered = client.call("server/discover", Some(meta)).await.unwrap();
    assert_eq!(discovered["supportedVersions"][0], "2026-07-28");
    // A client that falls back still initializes the same connection.
    client.initialize_model_context(init("2025-11-25")).await;
    assert_eq!(client.call("ping", None).await, Ok(json!({})));
}

// ------------------------------------------------------------------ §3 --

#[tokio::test]
async fn tools_are_listed_by_name_with_object_output_schemas_only() {
    let (mut client, ..) = client().await;
    let tools = client.call("tools/list", None).await.unwrap()["tools"].clone();
    let echo = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "echo")
        .unwrap()
        .clone();
    assert_eq!(
        echo,
        json!({"name": "echo", "description": "The echo test tool.",
               "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}},
                               "required": ["message"], "additionalProperties": false},
               "outputSchema": {"type": "object", "properties": {"message": {"type": "string"}},
                                "required": ["message"], "additionalProperties": false}})
    );
    let count = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "count")
        .unwrap();
    assert!(count.get("outputSchema").is_none(), "{count}");
    assert!(count.get("mcpId").is_none(), "{count}");
}

#[tokio::test]
async fn tool_names_outside_the_protocols_rule_or_repeated_are_build_errors() {
    let tool = |id: &str, name: &str| {
        clawmcp::tool_fn(
            clawmcp::definition::ToolDefinition {
                mcp_id: id.into(),
                name: name.into(),
                description: "d".into(),
                input_schema: json!({"type": "object"}),
                output_schema: json!({}),
            },
            |_a, _c| async { Ok(json!({})) },
        )
    };
    for name in ["has space", "a/b", "é", &"x".repeat(129)] {
        let err = Server::builder()
            .tool(tool("mcp://t/a", name))
            .build()
            .unwrap_err();
        assert!(
            matches!(err, clawmcp::BuildError::InvalidName { kind: "tool", .. }),
            "{name}: {err}"
        );
        // The same name is fine on an MCP v1.0 server.
        assert!(
            Server::builder()
                .protocols(Protocols::McpV1)
                .tool(tool("mcp://t/a", name))
                .build()
                .is_ok()
        );
    }
    let err = Server::builder()
        .tool(tool("mcp://t/a", "same"))
        .tool(tool("mcp://t/b", "same"))
        .build()
        .unwrap_err();
    assert!(
        matches!(err, clawmcp::BuildError::InvalidName { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn structured_output_is_structured_content_plus_its_json_as_text() {
    let (mut client, ..) = client().await;
    let result = client
        .call_tool("echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert_eq!(
        result,
        json!({"content": [{"type": "text", "text": "{\"message\":\"hi\"}"}],
               "structuredContent": {"message": "hi"}})
    );
    // Not an object schema: the output travels as text only.
    let result = client.call_tool("count", json!({})).await.unwrap();
    assert_eq!(result, json!({"content": [{"type": "text", "text": "3"}]}));
}

#[tokio::test]
async fn blocks_from_a_tool_that_lists_an_output_schema_come_with_that_value_as_structured_content()
{
    // A client that validates structured output (the official SDKs' do)
    // refuses a result without it, whatever its blocks.
    let blocks = clawmcp::tool::rich_tool_fn(
        clawmcp::definition::ToolDefinition {
            mcp_id: "mcp://mc-test/tools/blocks".into(),
            name: "blocks".into(),
            description: "Blocks alone.".into(),
            input_schema: json!({"type": "object"}),
            output_schema: json!({"type": "object", "required": ["content"]}),
        },
        |_args: Value, _ctx: clawmcp::ToolContext| async move {
            Ok(clawmcp::ToolOutput::text("just text"))
        },
    );
    let server = Server::builder()
        .tools_provider(true)
        .tool(blocks)
        .build()
        .unwrap();
    let mut client = TestClient::model_context(&server, json!({})).await;
    let listed = client.call("tools/list", None).await.unwrap();
    assert_eq!(
        listed["tools"][0]["outputSchema"]["required"],
        json!(["content"])
    );
    let result = client.call_tool("blocks", json!({})).await.unwrap();
    let text = json!([{"type": "text", "text": "just text"}]);
    assert_eq!(
        result,
        json!({"content": text, "structuredContent": {"content": text}})
    );
}

#[tokio::test]
async fn rich_content_blocks_are_sent_as_the_schema_spells_them() {
    let (mut client, ..) = client().await;
    let result = client.call_tool("rich", json!({})).await.unwrap();
    let content = result["content"].as_array().unwrap();
    assert_eq!(content[0], json!({"type": "text", "text": "a picture:"}));
    assert_eq!(content[1]["type"], "image");
    assert_eq!(content[1]["mimeType"], "image/png");
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD
        .decode(content[1]["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(data, LOGO_BYTES);
    assert_eq!(content[2]["type"], "audio");
    assert_eq!(
        content[3],
        json!({"type": "resource", "resource": {"uri": NOTES, "mimeType": "text/plain", "text": "notes"}})
    );
    assert_eq!(
        content[4],
        json!({"type": "resource_link", "uri": LOGO, "name": "logo"})
    );
    assert!(result.get("structuredContent").is_none());
}

#[tokio::test]
async fn an_older_session_gets_results_in_the_shapes_of_its_version() {
    let (server, _, _) = server();
    for version in ["2024-11-05", "2025-03-26", "2025-06-18"] {
        let mut client = TestClient::connect_model_context(&server).await;
        let result = client.initialize_model_context(init(version)).await;
        let since_2025_03_26 = version >= "2025-03-26";
        let since_2025_06_18 = version >= "2025-06-18";
        // `completions` is a capability from 2025-03-26 on.
        assert_eq!(
            result["capabilities"].get("completions").is_some(),
            since_2025_03_26,
            "{version}"
        );
        // No output schema is listed, nor structured content sent, before
        // 2025-06-18: the output is its JSON text.
        let tools = client.call("tools/list", None).await.unwrap();
        let echo = tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "echo")
            .unwrap();
        assert_eq!(
            echo.get("outputSchema").is_some(),
            since_2025_06_18,
            "{version}"
        );
        let echoed = client
            .call_tool("echo", json!({"message": "hi"}))
            .await
            .unwrap();
        assert_eq!(
            echoed.get("structuredContent").is_some(),
            since_2025_06_18,
            "{version}"
        );
        assert_eq!(
            echoed["content"],
            json!([{"type": "text", "text": r#"{"message":"hi"}"#}])
        );
        // Before 2025-06-18 a resource link is a text block holding it;
        // before 2025-03-26 an audio block is a text block saying it was
        // left out.
        let rich = client.call_tool("rich", json!({})).await.unwrap();
        let link = &rich["content"][4];
        let audio = &rich["content"][2];
        if since_2025_06_18 {
            assert_eq!(link["type"], "resource_link", "{version}");
        } else {
            let text = link["text"].as_str().unwrap();
            let held: Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                held,
                json!({"type": "resource_link", "uri": LOGO, "name": "logo"})
            );
        }
        let audio_kind = if since_2025_03_26 { "audio" } else { "text" };
        assert_eq!(audio["type"], audio_kind, "{version}: {audio}");
    }
}

#[tokio::test]
async fn a_tool_failure_is_an_is_error_result_with_its_text() {
    let (mut client, ..) = client().await;
    let result = client.call_tool("fail", json!({})).await.unwrap();
    assert_eq!(
        result,
        json!({"content": [{"type": "text", "text": "the tool failed on purpose"}], "isError": true})
    );
}

#[tokio::test]
async fn arguments_failing_the_input_schema_are_an_is_error_result_with_the_v1_text() {
    let (mut client, ..) = client().await;
    let result = client.call_tool("echo", json!({})).await.unwrap();
    assert_eq!(result["isError"], true);
    assert_eq!(
        result["content"][0]["text"],
        "Missing required property: 'message' in arguments for tool mcp://mc-test/tools/echo"
    );
    let result = client
        .call_tool("echo", json!({"message": 5}))
        .await
        .unwrap();
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Invalid value at '/message': ")
    );
}

#[tokio::test]
async fn an_unknown_tool_is_32602_naming_it() {
    let (mut client, ..) = client().await;
    let e = client.call_tool("nope", json!({})).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
    assert!(e.data.contains("'nope'"), "{}", e.data);
}

#[tokio::test]
async fn missing_arguments_mean_an_empty_object_and_others_are_32602() {
    let (mut client, ..) = client().await;
    let result = client
        .call("tools/call", Some(json!({"name": "count"})))
        .await
        .unwrap();
    assert_eq!(result["content"][0]["text"], "3");
    let e = client
        .call(
            "tools/call",
            Some(json!({"name": "count", "arguments": [1]})),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
}

#[tokio::test]
async fn a_panic_or_an_output_failing_its_schema_is_32603() {
    let (mut client, ..) = client().await;
    let e = client.call_tool("panic", json!({})).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::INTERNAL_ERROR);
    assert!(e.data.contains("on purpose"), "{}", e.data);
    let e = client.call_tool("bad-output", json!({})).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::INTERNAL_ERROR);
    assert!(e.data.contains("outputSchema"), "{}", e.data);
}

#[tokio::test]
async fn a_tool_past_its_time_limit_is_an_is_error_result_saying_so() {
    let (probe, status) = (Probe::default(), status());
    let server = builder(&probe, &status)
        .tool_time_limit(std::time::Duration::from_millis(50))
        .build()
        .unwrap();
    let mut client = TestClient::model_context(&server, json!({})).await;
    let result = client.call_tool("gate", json!({})).await.unwrap();
    assert_eq!(result["isError"], true, "{result}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("time limit"),
        "{result}"
    );
}

#[tokio::test]
async fn a_cancelled_request_gets_no_response_at_all() {
    let (mut client, probe, ..) = client().await;
    client
        .send(
            &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "gate"}}),
        )
        .await;
    probe
        .wait_for("the gate call to start", |p| p.started() == 1)
        .await;
    client
        .notify(
            "notifications/cancelled",
            json!({"requestId": 5, "reason": "changed my mind"}),
        )
        .await;
    probe
        .wait_for("the tool to see its cancellation", |p| p.cancelled() == 1)
        .await;
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());
    // The session goes on.
    assert_eq!(client.call("ping", None).await, Ok(json!({})));
}

#[tokio::test]
async fn a_request_arriving_during_shutdown_is_32603_server_shutting_down() {
    let (server, ..) = server();
    let mut client = TestClient::model_context(&server, json!({})).await;
    client
        .send(&json!({"jsonrpc": "2.0", "id": 1000, "method": "tools/call", "params": {"name": "gate"}}))
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    server.handle().shutdown();
    let e = client.call("ping", None).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::INTERNAL_ERROR);
    assert_eq!(e.data, "server shutting down");
}

#[tokio::test]
async fn resources_are_listed_by_uri_without_content_and_read_as_text_or_blob() {
    let (mut client, ..) = client().await;
    let list = client.call("resources/list", None).await.unwrap();
    assert_eq!(
        list["resources"][0],
        json!({"uri": NOTES, "name": "notes", "description": "Some notes.", "mimeType": "text/plain"})
    );
    assert_eq!(
        client.read_resource(NOTES).await.unwrap(),
        json!({"uri": NOTES, "mimeType": "text/plain", "text": "hello notes"})
    );
    let logo = client.read_resource(LOGO).await.unwrap();
    use base64::Engine;
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(logo["blob"].as_str().unwrap())
            .unwrap(),
        LOGO_BYTES
    );
    assert!(logo.get("text").is_none());
}

#[tokio::test]
async fn a_binary_resource_is_its_base64_text_in_mcp_v1() {
    let (server, ..) = server();
    let mut client = TestClient::initialized(&server).await;
    let logo = client
        .list_resources()
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.mcp_id == LOGO)
        .unwrap();
    use base64::Engine;
    assert_eq!(
        logo.content,
        base64::engine::general_purpose::STANDARD.encode(LOGO_BYTES)
    );
}

#[tokio::test]
async fn an_unknown_resource_is_32002_with_its_uri() {
    let (mut client, ..) = client().await;
    client
        .send(&json!({"jsonrpc": "2.0", "id": 9, "method": "resources/read", "params": {"uri": "test://none"}}))
        .await;
    let reply = client.reply(&json!(9)).await;
    assert_eq!(
        reply["error"],
        json!({"code": -32002, "message": "Resource not found", "data": {"uri": "test://none"}})
    );
}

#[tokio::test]
async fn templates_are_listed_and_read_with_their_variables() {
    let (mut client, ..) = client().await;
    let list = client.call("resources/templates/list", None).await.unwrap();
    assert_eq!(
        list["resourceTemplates"],
        json!([{"uriTemplate": "test://items/{id}", "name": "item",
                "description": "An item by id.", "mimeType": "application/json"}])
    );
    assert_eq!(
        client.read_resource("test://items/42").await.unwrap(),
        json!({"uri": "test://items/42", "mimeType": "application/json", "text": "{\"id\":\"42\"}"})
    );
}

#[tokio::test]
async fn prompts_list_their_arguments_and_get_fills_them() {
    let (mut client, ..) = client().await;
    let list = client.call("prompts/list", None).await.unwrap();
    assert_eq!(
        list["prompts"],
        json!([
            {"name": "planner", "description": "Plans."},
            {"name": "greet", "description": "Greets someone.", "arguments": [
                {"name": "who", "description": "Whom to greet.", "required": true},
                {"name": "mood", "description": "How.", "required": false}]}
        ])
    );
    let got = client
        .get_prompt("greet", json!({"who": "Ada", "mood": "warmly"}))
        .await
        .unwrap();
    assert_eq!(
        got,
        json!({"description": "Greets someone.", "messages": [
            {"role": "user", "content": {"type": "text", "text": "Greet Ada"}},
            {"role": "assistant", "content": {"type": "text", "text": "warmly"}}]})
    );
}

#[tokio::test]
async fn a_system_prompt_is_a_user_message() {
    let (mut client, ..) = client().await;
    let got = client.get_prompt("planner", json!({})).await.unwrap();
    assert_eq!(
        got["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Plan first."}}])
    );
}

#[tokio::test]
async fn a_missing_required_prompt_argument_or_unknown_prompt_is_32602() {
    let (mut client, ..) = client().await;
    let e = client
        .get_prompt("greet", json!({"mood": "x"}))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
    assert!(e.data.contains("'who'"), "{}", e.data);
    let e = client.get_prompt("nope", json!({})).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
}

#[tokio::test]
async fn resource_changes_reach_subscribers_only_as_resources_updated() {
    let (server, _, status) = server();
    let mut watcher = TestClient::model_context(&server, json!({})).await;
    let mut bystander = TestClient::model_context(&server, json!({})).await;
    assert_eq!(
        watcher
            .call("resources/subscribe", Some(json!({"uri": STATUS})))
            .await,
        Ok(json!({}))
    );
    status.set("changed");
    let note = watcher.next_notification().await.unwrap();
    assert_eq!(
        note,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": STATUS}})
    );
    assert_eq!(bystander.collect(QUIET).await, Vec::<Value>::new());
    assert_eq!(
        watcher
            .call("resources/unsubscribe", Some(json!({"uri": STATUS})))
            .await,
        Ok(json!({}))
    );
    status.set("again");
    assert_eq!(watcher.collect(QUIET).await, Vec::<Value>::new());
}

#[tokio::test]
async fn subscribing_to_an_unknown_resource_is_32002() {
    let (mut client, ..) = client().await;
    let e = client
        .call("resources/subscribe", Some(json!({"uri": "test://none"})))
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -32002);
}

#[tokio::test]
async fn log_lines_follow_the_level_the_client_sets() {
    let (mut client, ..) = client().await;
    // Default level: info and above.
    client.call_tool("log", json!({})).await.unwrap();
    let lines = client.collect(QUIET).await;
    let levels: Vec<&str> = lines
        .iter()
        .map(|l| l["params"]["level"].as_str().unwrap())
        .collect();
    assert_eq!(levels, ["info", "error"], "{lines:?}");
    assert_eq!(lines[1]["params"]["data"], json!({"code": 7}));
    assert_eq!(
        client
            .call("logging/setLevel", Some(json!({"level": "debug"})))
            .await,
        Ok(json!({}))
    );
    client.call_tool("log", json!({})).await.unwrap();
    assert_eq!(client.collect(QUIET).await.len(), 3);
    let e = client
        .call("logging/setLevel", Some(json!({"level": "loud"})))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
}

#[tokio::test]
async fn progress_is_sent_for_a_progress_token_strictly_increasing_and_before_the_reply() {
    let (mut client, ..) = client().await;
    client
        .send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "progress", "_meta": {"progressToken": "tok"}}}))
        .await;
    let mut seen = Vec::new();
    loop {
        let message = client.recv().await.unwrap();
        if message.get("id") == Some(&json!(7)) {
            break;
        }
        assert_eq!(message["method"], "notifications/progress");
        assert_eq!(message["params"]["progressToken"], "tok");
        seen.push(message["params"]["progress"].as_f64().unwrap());
    }
    assert_eq!(seen, [0.0, 50.0, 100.0]);
    // Without a token: no progress at all.
    client.call_tool("progress", json!({})).await.unwrap();
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());
}

#[tokio::test]
async fn completion_offers_values_for_prompt_arguments_and_template_variables() {
    let (mut client, ..) = client().await;
    let result = client
        .call(
            "completion/complete",
            Some(json!({"ref": {"type": "ref/prompt", "name": "greet"},
                                                  "argument": {"name": "who", "value": "al"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        result,
        json!({"completion": {"values": ["alice", "albert"], "total": 2, "hasMore": false}})
    );
    let result = client
        .call(
            "completion/complete",
            Some(
                json!({"ref": {"type": "ref/resource", "uri": "test://items/{id}"},
                                                  "argument": {"name": "id", "value": "alpi"}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(result["completion"]["values"], json!(["alpine"]));
    // Declared, without a completer: nothing to offer.
    let result = client
        .call(
            "completion/complete",
            Some(json!({"ref": {"type": "ref/prompt", "name": "greet"},
                                                  "argument": {"name": "mood", "value": ""}})),
        )
        .await
        .unwrap();
    assert_eq!(result["completion"]["values"], json!([]));
    let e = client
        .call(
            "completion/complete",
            Some(json!({"ref": {"type": "ref/prompt", "name": "greet"},
                                                  "argument": {"name": "nope", "value": ""}})),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
}

#[tokio::test]
async fn lists_are_paginated_with_cursors_that_are_checked() {
    let (probe, status) = (Probe::default(), status());
    let server = builder(&probe, &status).page_size(5).build().unwrap();
    let mut client = TestClient::model_context(&server, json!({})).await;
    let mut names = Vec::new();
    let mut cursor: Option<Value> = None;
    loop {
        let params = cursor.as_ref().map(|c| json!({"cursor": c}));
        let page = client.call("tools/list", params).await.unwrap();
        let tools = page["tools"].as_array().unwrap();
        assert!(tools.len() <= 5);
        names.extend(tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        match page.get("nextCursor") {
            Some(next) => cursor = Some(next.clone()),
            None => break,
        }
    }
    assert_eq!(names.len(), 13, "{names:?}");
    for bad in [json!("garbage"), json!(""), json!(7)] {
        let e = client
            .call("tools/list", Some(json!({"cursor": bad})))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{bad}");
    }
    // A cursor of another list is refused too.
    let resources_cursor = {
        let server = builder(&probe, &status).page_size(1).build().unwrap();
        let mut c = TestClient::model_context(&server, json!({})).await;
        c.call("resources/list", None).await.unwrap()["nextCursor"].clone()
    };
    let e = client
        .call("tools/list", Some(json!({"cursor": resources_cursor})))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
    // A forged cursor of any length is quoted by its first 64 characters:
    // the error stays small.
    let forged = "c".repeat(100_000);
    let e = client
        .call("tools/list", Some(json!({"cursor": forged})))
        .await
        .unwrap_err();
    assert!(e.data.len() < 200, "{}", e.data.len());
    assert!(
        e.data.contains(&format!("{}…", "c".repeat(64))),
        "{}",
        e.data
    );
}

// ------------------------------------------------------------------ §4 --

#[tokio::test]
async fn bad_json_is_32700_without_an_id_and_the_session_goes_on() {
    let (server, ..) = server();
    let lines = raw_lines(
        &server,
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{not json\n\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\r\n",
    )
    .await;
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[1]["error"]["code"], -32700);
    assert!(lines[1].get("id").is_none(), "{}", lines[1]);
    assert_eq!(lines[2]["id"], 2);
}

#[tokio::test]
async fn a_line_over_the_limit_is_skipped_and_answered_32600_with_the_limit() {
    let (probe, status) = (Probe::default(), status());
    let server = builder(&probe, &status)
        .max_message_size(100)
        .build()
        .unwrap();
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}",
        "y".repeat(500)
    );
    let lines = raw_lines(
        &server,
        &format!("{big}\n{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}}\n"),
    )
    .await;
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["error"]["code"], -32600);
    assert!(
        lines[0]["error"]["data"]
            .as_str()
            .unwrap()
            .contains("100 bytes")
    );
    assert!(lines[0].get("id").is_none());
    assert_eq!(lines[1]["result"], json!({}));
}

#[tokio::test]
async fn a_batch_is_32600_unless_the_session_negotiated_2025_03_26() {
    let (server, ..) = server();
    let init_line = |v: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init(v)}).to_string()
    };
    let batch =
        r#"[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]"#;
    let lines = raw_lines(&server, &format!("{}\n{batch}\n", init_line("2025-11-25"))).await;
    assert_eq!(lines[1]["error"]["code"], -32600, "{lines:?}");
    let lines = raw_lines(&server, &format!("{}\n{batch}\n", init_line("2025-03-26"))).await;
    let replies = lines[1].as_array().expect("a batch reply");
    assert_eq!(replies.len(), 2, "{lines:?}");
}

#[tokio::test]
async fn a_change_a_batch_member_causes_reaches_its_subscribed_session_before_the_batch_reply() {
    let (server, ..) = server();
    let line = |v: Value| v.to_string();
    let input = [
        line(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init("2025-03-26")})),
        line(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
        line(json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": STATUS}})),
        line(json!([
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "touch"}},
            {"jsonrpc": "2.0", "id": 4, "method": "ping"}
        ])),
    ]
    .join("\n")
        + "\n";
    let lines = raw_lines(&server, &input).await;
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert_eq!(
        lines[2],
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": STATUS}}),
        "{lines:?}"
    );
    let replies = lines[3].as_array().expect("the batch's reply, last");
    assert_eq!(replies.len(), 2, "{lines:?}");
}

#[tokio::test]
async fn a_null_id_is_an_invalid_request_in_this_protocol() {
    let (server, ..) = server();
    let lines = raw_lines(
        &server,
        "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}\n",
    )
    .await;
    assert_eq!(lines[0]["error"]["code"], -32600);
    assert!(lines[0].get("id").is_none());
    let why = lines[0]["error"]["data"].as_str().unwrap_or_default();
    assert!(why.contains("a string or an integer"), "{why}");
}

/// An id must be a string or an integer here (a number with a fraction is
/// neither), and the error says so without offering `null`, which this
/// protocol refuses too.
#[tokio::test]
async fn a_fractional_id_is_an_invalid_request_that_does_not_offer_null() {
    let (server, ..) = server();
    let lines = raw_lines(
        &server,
        "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}\n",
    )
    .await;
    assert_eq!(lines[0]["error"]["code"], -32600);
    let why = lines[0]["error"]["data"].as_str().unwrap_or_default();
    assert!(why.contains("a string or an integer"), "{why}");
    assert!(!why.contains("null"), "{why}");
}

#[tokio::test]
async fn at_the_end_of_input_requests_in_flight_finish_and_the_call_returns() {
    let (mut client, probe, ..) = client().await;
    client
        .send(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "gate"}}),
        )
        .await;
    probe
        .wait_for("the gate call to start", |p| p.started() == 1)
        .await;
    client.close_input().await;
    probe.gate.add_permits(1);
    let (rest, served) = client.close().await;
    assert!(served.is_ok());
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0]["result"]["structuredContent"], Value::Null);
    assert_eq!(rest[0]["id"], 3);
}

#[tokio::test]
async fn a_change_a_request_causes_reaches_its_session_before_the_reply_and_others_as_pushes() {
    let (server, ..) = server();
    let mut caller = TestClient::model_context(&server, json!({})).await;
    let mut watcher = TestClient::model_context(&server, json!({})).await;
    for client in [&mut caller, &mut watcher] {
        assert_eq!(
            client
                .call("resources/subscribe", Some(json!({"uri": STATUS})))
                .await,
            Ok(json!({}))
        );
    }
    caller
        .send(&json!({"jsonrpc": "2.0", "id": 77, "method": "tools/call", "params": {"name": "touch"}}))
        .await;
    let first = caller.recv().await.unwrap();
    assert_eq!(
        first["method"], "notifications/resources/updated",
        "{first}"
    );
    let second = caller.recv().await.unwrap();
    assert_eq!(second["id"], 77, "the reply comes after: {second}");
    assert_eq!(
        caller.collect(QUIET).await,
        Vec::<Value>::new(),
        "exactly once"
    );
    let pushed = watcher.next_notification().await.unwrap();
    assert_eq!(pushed["params"]["uri"], STATUS);
}

/// serde_json reads an object whose first member is named
/// `$serde_json::private::RawValue` as that member's string parsed: such
/// arguments are refused while the params are read, so that a tool is
/// given what its schema checked.
#[tokio::test]
async fn arguments_serde_json_would_read_as_another_value_are_32602() {
    let (mut client, ..) = client().await;
    for arguments in [
        json!({"$serde_json::private::RawValue": "{\"message\":\"smuggled\"}"}),
        json!({"message": {"$serde_json::private::RawValue": "5"}}),
        json!({"$serde_json::private::RawValue": "x"}),
        json!({"message": [{"$serde_json::private::RawValue": "x"}]}),
    ] {
        let e = client
            .call(
                "tools/call",
                Some(json!({"name": "echo", "arguments": arguments})),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert!(
            e.data
                .contains("may not be named \"$serde_json::private::RawValue\""),
            "{}",
            e.data
        );
    }
}
