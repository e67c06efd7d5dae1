//! Typed tools (issue 4): schemas derived from `examples/typed.rs`'s types,
//! doc comments as descriptions, optional fields not required, bad
//! arguments refused with the docs/mcp-v1.md §2 texts, cancellation seen by a
//! typed tool.

#[allow(dead_code)]
#[path = "../examples/typed.rs"]
mod typed_example;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clawmcp::error::ErrorCode;
use clawmcp::testing::TestClient;
use clawmcp::typed::typed_tool;
use clawmcp::{Server, ToolContext, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const CONVERT: &str = "mcp://clawmcp/examples/typed/tools/convert:v1";
const COUNTDOWN: &str = "mcp://clawmcp/examples/typed/tools/countdown:v1";

async fn tools() -> Vec<clawmcp::definition::ToolDefinition> {
    let server = typed_example::server().unwrap();
    TestClient::initialized(&server)
        .await
        .list_tools()
        .await
        .unwrap()
}

#[tokio::test]
async fn derived_schemas_are_valid_json_schema() {
    for tool in tools().await {
        for schema in [&tool.input_schema, &tool.output_schema] {
            assert!(
                jsonschema::meta::is_valid(schema),
                "{}: {schema}",
                tool.mcp_id
            );
        }
        assert_eq!(tool.input_schema["type"], "object", "{}", tool.mcp_id);
        assert_eq!(
            tool.input_schema["additionalProperties"], false,
            "deny_unknown_fields"
        );
    }
}

#[tokio::test]
async fn doc_comments_become_descriptions() {
    let tools = tools().await;
    let convert = &tools[0].input_schema;
    assert_eq!(convert["description"], "Arguments of the `convert` tool.");
    assert_eq!(
        convert["properties"]["value"]["description"],
        "The temperature to convert."
    );
    assert_eq!(
        convert["properties"]["to"]["description"],
        "The scale to convert to; Kelvin when absent."
    );
    assert_eq!(
        tools[0].output_schema["properties"]["unit"]["description"],
        "Its scale."
    );
    assert_eq!(
        convert["$defs"]["Unit"]["description"],
        "A temperature scale."
    );
}

#[tokio::test]
async fn optional_fields_are_not_required_and_enums_are_listed() {
    let tools = tools().await;
    let schema = &tools[0].input_schema;
    let required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        required.contains(&"value") && required.contains(&"from"),
        "{required:?}"
    );
    assert!(
        !required.contains(&"to"),
        "an Option field must not be required: {required:?}"
    );
    let units: Vec<&Value> = schema["$defs"]["Unit"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| &v["const"])
        .collect();
    assert_eq!(
        units,
        [&json!("celsius"), &json!("fahrenheit"), &json!("kelvin")]
    );
}

#[tokio::test]
async fn typed_tool_runs_with_and_without_optional_fields() {
    let server = typed_example::server().unwrap();
    let mut client = TestClient::initialized(&server).await;
    let out = client
        .execute(
            CONVERT,
            json!({"value": 100, "from": "celsius", "to": "fahrenheit"}),
        )
        .await
        .unwrap();
    assert_eq!(out, json!({"value": 212.0, "unit": "fahrenheit"}));
    let out = client
        .execute(CONVERT, json!({"value": 0, "from": "kelvin"}))
        .await
        .unwrap();
    assert_eq!(out, json!({"value": 0.0, "unit": "kelvin"}));
}

#[tokio::test]
async fn bad_arguments_get_the_protocol_texts() {
    let server = typed_example::server().unwrap();
    let mut client = TestClient::initialized(&server).await;
    let e = client
        .execute(CONVERT, json!({"from": "celsius"}))
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -32602);
    assert_eq!(
        e.data,
        format!("Missing required property: 'value' in arguments for tool {CONVERT}")
    );
    for (args, path) in [
        (json!({"value": "hot", "from": "celsius"}), "/value"),
        (json!({"value": 1, "from": "rankine"}), "/from"),
        (json!({"value": 1, "from": "kelvin", "to": 7}), "/to"),
        (
            json!({"value": 1, "from": "kelvin", "extra": true}),
            "/extra",
        ),
    ] {
        let e = client.execute(CONVERT, args.clone()).await.unwrap_err();
        assert_eq!(e.code.0, -32602, "{args}");
        let prefix = format!("Invalid value at '{path}': ");
        assert!(e.data.starts_with(&prefix), "{args}: {}", e.data);
        assert!(
            e.data
                .ends_with(&format!(" in arguments for tool {CONVERT}")),
            "{}",
            e.data
        );
    }
    let e = client
        .execute(COUNTDOWN, json!({"seconds": 11}))
        .await
        .unwrap_err();
    assert!(
        e.data.starts_with("Invalid value at '/seconds': "),
        "{}",
        e.data
    );
}

#[tokio::test]
async fn typed_error_is_tool_execution_failed_with_its_text() {
    let server = typed_example::server().unwrap();
    let mut client = TestClient::initialized(&server).await;
    let e = client
        .execute(CONVERT, json!({"value": -500, "from": "celsius"}))
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -32000);
    assert!(e.data.contains("below absolute zero"), "{}", e.data);
}

#[derive(Deserialize, JsonSchema)]
struct Wait {
    ms: u64,
}

#[derive(Serialize, JsonSchema)]
struct Waited {
    ms: u64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_typed_tool_sees_the_cancellation() {
    let seen = Arc::new(AtomicBool::new(false));
    let witness = seen.clone();
    let tool = typed_tool(
        "mcp://t/tools/wait:v1",
        "wait",
        "Waits.",
        move |args: Wait, ctx: ToolContext| {
            let witness = witness.clone();
            async move {
                // A task the tool hands work to watches the token.
                let token = ctx.cancellation_token();
                tokio::spawn(async move {
                    token.cancelled().await;
                    witness.store(true, Ordering::SeqCst);
                });
                tokio::time::sleep(Duration::from_millis(args.ms)).await;
                Ok::<_, ToolError>(Waited { ms: args.ms })
            }
        },
    );
    let server = Server::builder().tool(tool).build().unwrap();
    let mut client = TestClient::initialized(&server).await;
    call_for_30_s(&mut client, "mcp://t/tools/wait:v1").await;
    let reply = cancel_the_call(&mut client).await;
    assert_eq!(reply["error"]["code"], -32003, "{reply}");
    for _ in 0..100 {
        if seen.load(Ordering::SeqCst) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the typed tool's cancellation token never fired");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_past_its_time_limit_is_answered_32004_and_the_session_goes_on() {
    let slow = typed_tool(
        "mcp://t/tools/slow:v1",
        "slow",
        "Sleeps.",
        |args: Wait| async move {
            tokio::time::sleep(Duration::from_millis(args.ms)).await;
            Ok::<_, ToolError>(Waited { ms: args.ms })
        },
    )
    .with_time_limit(Duration::from_millis(100));
    let server = Server::builder().tool(slow).build().unwrap();
    let mut client = TestClient::initialized(&server).await;
    let e = client
        .execute("mcp://t/tools/slow:v1", json!({"ms": 30_000}))
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -32004, "{e}");
    assert!(e.data.contains("time limit"), "{}", e.data);
    let out = client
        .execute("mcp://t/tools/slow:v1", json!({"ms": 1}))
        .await
        .unwrap();
    assert_eq!(out, json!({"ms": 1}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_wide_time_limit_applies_to_every_tool() {
    let slow = typed_tool(
        "mcp://t/tools/slow:v1",
        "slow",
        "Sleeps.",
        |args: Wait| async move {
            tokio::time::sleep(Duration::from_millis(args.ms)).await;
            Ok::<_, ToolError>(Waited { ms: args.ms })
        },
    );
    let server = Server::builder()
        .tool(slow)
        .tool_time_limit(Duration::from_millis(100))
        .build()
        .unwrap();
    let mut client = TestClient::initialized(&server).await;
    let e = client
        .execute("mcp://t/tools/slow:v1", json!({"ms": 30_000}))
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -32004);
    assert_eq!(e.code.message(), "Request timed out");
}

#[tokio::test]
async fn a_type_stricter_than_its_schema_refuses_with_invalid_params() {
    #[derive(Deserialize, JsonSchema)]
    struct Small {
        n: u8,
    }
    let tool = typed_tool(
        "mcp://t/tools/small:v1",
        "small",
        "Small.",
        |args: Small| async move { Ok::<_, ToolError>(Waited { ms: args.n.into() }) },
    );
    let mut definition_fixed = tool;
    // Loosen the derived schema so that only the type catches 300.
    definition_fixed.definition_mut().input_schema["properties"]["n"] = json!({"type": "integer"});
    let server = Server::builder().tool(definition_fixed).build().unwrap();
    let mut client = TestClient::initialized(&server).await;
    let e = client
        .execute("mcp://t/tools/small:v1", json!({"n": 300}))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
    assert!(
        e.data
            .starts_with("Invalid value at '/n': invalid value: integer `300`"),
        "the type's refusal names the path: {}",
        e.data
    );
}

#[tokio::test]
async fn an_out_of_range_integer_is_refused_at_its_path_by_the_derived_schema() {
    #[derive(Deserialize, JsonSchema)]
    struct Page {
        limit: u32,
        offsets: Vec<i64>,
    }
    let tool = typed_tool(
        "mcp://t/tools/page:v1",
        "page",
        "Page.",
        |args: Page| async move {
            Ok::<_, ToolError>(Waited {
                ms: u64::from(args.limit) + args.offsets.len() as u64,
            })
        },
    );
    let server = Server::builder().tool(tool).build().unwrap();
    let mut v1 = TestClient::initialized(&server).await;
    let schema = &v1.list_tools().await.unwrap()[0].input_schema;
    assert_eq!(schema["properties"]["limit"]["maximum"], u32::MAX);
    assert_eq!(
        schema["properties"]["offsets"]["items"]["minimum"],
        i64::MIN
    );

    for (arguments, path) in [
        (json!({"limit": 5_000_000_000u64, "offsets": []}), "/limit"),
        (json!({"limit": -1, "offsets": []}), "/limit"),
        (json!({"limit": 1, "offsets": [0, 1e19]}), "/offsets/1"),
    ] {
        let e = v1
            .execute("mcp://t/tools/page:v1", arguments.clone())
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{arguments}");
        assert!(
            e.data.starts_with(&format!("Invalid value at '{path}'")),
            "{arguments}: {}",
            e.data
        );
    }
}

#[tokio::test]
async fn typed_output_keys_come_in_declaration_order_in_both_dialects() {
    #[derive(Serialize, JsonSchema)]
    struct Reading {
        zone: String,
        temperature: f64,
        alarm: bool,
    }
    #[derive(Deserialize, JsonSchema)]
    struct Nothing {}
    let tool = typed_tool(
        "mcp://t/tools/read:v1",
        "read",
        "Read.",
        |_: Nothing| async move {
            Ok::<_, ToolError>(Reading {
                zone: "north".into(),
                temperature: 21.5,
                alarm: false,
            })
        },
    );
    let server = Server::builder().tool(tool).build().unwrap();
    let ordered = r#"{"zone":"north","temperature":21.5,"alarm":false}"#;

    // Raw bytes, since a parsed Value sorts its keys.
    let v1 = raw_exchange(
        &server,
        &[
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{}}}"#,
            r#"{"jsonrpc":"2.0","method":"initialized"}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"mcp/executeTool","params":{"id":"mcp://t/tools/read:v1","arguments":{}}}"#,
        ],
        false,
    )
    .await;
    assert!(v1.contains(&format!(r#""output":{ordered}"#)), "{v1}");

    let mc = raw_exchange(
        &server,
        &[
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read","arguments":{}}}"#,
        ],
        true,
    )
    .await;
    assert!(
        mc.contains(&format!(r#""structuredContent":{ordered}"#)),
        "{mc}"
    );
    let text = serde_json::to_string(ordered).unwrap();
    assert!(mc.contains(&format!(r#""text":{text}"#)), "{mc}");
}

/// Sends `messages` (framed as MCP v1.0 or as lines) and returns all the
/// server wrote, as text, once it has answered id 7.
async fn raw_exchange(server: &Server, messages: &[&str], lines: bool) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (mut client, end) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(end);
    let server = server.clone();
    tokio::spawn(async move { server.serve_io(read, write).await });
    for message in messages {
        let framed = if lines {
            format!("{message}\n")
        } else {
            format!("Content-Length: {}\r\n\r\n{message}", message.len())
        };
        client.write_all(framed.as_bytes()).await.unwrap();
    }
    let mut out = Vec::new();
    while !String::from_utf8_lossy(&out).contains(r#""id":7"#) {
        let mut chunk = [0; 4096];
        let n = tokio::time::timeout(Duration::from_secs(10), client.read(&mut chunk))
            .await
            .expect("a reply within 10 s")
            .unwrap();
        assert!(n > 0, "the server closed its output");
        out.extend_from_slice(&chunk[..n]);
    }
    // The reply may end in the next chunk.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut chunk = [0; 4096];
    if let Ok(Ok(n)) =
        tokio::time::timeout(Duration::from_millis(50), client.read(&mut chunk)).await
    {
        out.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(out).unwrap()
}

/// Typed tools read their arguments from the request's text (issue 13);
/// whatever that reading cannot take is answered as the value reading
/// always answered it.
#[tokio::test]
async fn arguments_read_as_text_are_answered_as_a_value_would_be() {
    #[derive(Deserialize, Serialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Echo {
        message: String,
    }
    let tool = typed_tool(
        "mcp://t/tools/echo:v1",
        "echo",
        "Echo.",
        |args: Echo| async move { Ok::<_, ToolError>(args) },
    );
    let server = Server::builder().tool(tool).build().unwrap();
    let v1 = |arguments: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"mcp/executeTool","params":{{"id":"mcp://t/tools/echo:v1","arguments":{arguments}}}}}"#
        )
    };
    let v1_exchange = |arguments: String| {
        let server = server.clone();
        async move {
            let call = v1(&arguments);
            let text = raw_exchange(
                &server,
                &[
                    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{}}}"#,
                    r#"{"jsonrpc":"2.0","method":"initialized"}"#,
                    &call,
                ],
                false,
            )
            .await;
            let reply = text.rsplit("\r\n\r\n").next().unwrap().to_owned();
            serde_json::from_str::<Value>(&reply).unwrap()
        }
    };

    // A repeated name is its last occurrence, as in a value.
    let reply = v1_exchange(r#"{"message":"first","message":"last"}"#.into()).await;
    assert_eq!(
        reply["result"]["output"],
        json!({"message": "last"}),
        "{reply}"
    );
    let reply = v1_exchange(r#"{"message":"fine"}"#.into()).await;
    assert_eq!(
        reply["result"]["output"],
        json!({"message": "fine"}),
        "{reply}"
    );

    // Refusals are worded by the value reading of the params.
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct ValueReading {
        id: String,
        #[serde(default)]
        arguments: serde_json::Map<String, Value>,
    }
    let deep = format!(r#"{{"message":{}"x"{}}}"#, "[".repeat(130), "]".repeat(130));
    let huge = r#"{"message":"x","n":[1e400]}"#.to_owned();
    let unpaired = r#"{"message":"\ud800"}"#.to_owned();
    for arguments in [
        r#""x""#.to_owned(),
        "null".into(),
        "[1]".into(),
        deep,
        huge,
        unpaired,
    ] {
        let params = format!(r#"{{"id":"mcp://t/tools/echo:v1","arguments":{arguments}}}"#);
        let error = serde_json::from_str::<ValueReading>(&params).err().unwrap();
        let reply = v1_exchange(arguments.clone()).await;
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
        assert_eq!(
            reply["error"]["data"],
            format!(
                "mcp/executeTool params must be an object {{\"id\": mcpId, \"arguments\": {{...}}}}: {error}"
            ),
            "{arguments}"
        );
    }
}

/// The typed echo's arguments and output: a message.
#[derive(Deserialize, Serialize, JsonSchema)]
struct Echo {
    message: String,
}

/// A server with one typed tool, `echo`, that returns its arguments.
fn echo_server() -> Server {
    let tool = typed_tool(
        "mcp://t/tools/echo:v1",
        "echo",
        "Echo.",
        |args: Echo| async move { Ok::<_, ToolError>(args) },
    );
    Server::builder().tool(tool).build().unwrap()
}

/// The same in the Model Context Protocol: arguments a value reading
/// refuses are refused as invalid params, worded by that reading.
#[tokio::test]
async fn tools_call_arguments_a_value_refuses_are_invalid_params_as_before() {
    let server = echo_server();
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct ValueReading {
        name: String,
        arguments: Option<Value>,
    }
    let deep = format!(r#"{{"message":{}"x"{}}}"#, "[".repeat(130), "]".repeat(130));
    for arguments in [
        r#"{"message":"x","junk":"\ud800"}"#.to_owned(),
        r#"{"message":"x","n":[1e400]}"#.into(),
        deep,
    ] {
        let params = format!(r#"{{"name":"echo","arguments":{arguments}}}"#);
        let error = serde_json::from_str::<ValueReading>(&params).err().unwrap();
        let call = format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{params}}}"#);
        let text = raw_exchange(
            &server,
            &[
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                &call,
            ],
            true,
        )
        .await;
        let reply: Value = text
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|reply| reply["id"] == 7)
            .unwrap();
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
        assert_eq!(
            reply["error"]["data"],
            format!("tools/call params: {error}"),
            "{reply}"
        );
    }
}

/// A typed tool that panics — when its function is called, at its first
/// poll (both on the session's reader), or after it waited (in a task) —
/// is answered `-32603` with the panic's text, and the session serves the
/// next call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typed_tool_that_panics_anywhere_is_answered_32603_and_the_session_goes_on() {
    let at_call = typed_tool(
        "mcp://t/tools/at-call:v1",
        "at-call",
        "Panics when called.",
        |args: Wait| {
            assert!(args.ms > 1_000_000, "panicked when called");
            async move { Ok::<_, ToolError>(Waited { ms: args.ms }) }
        },
    );
    let at_poll = typed_tool(
        "mcp://t/tools/at-poll:v1",
        "at-poll",
        "Panics when first polled.",
        |args: Wait| async move {
            assert!(args.ms > 1_000_000, "panicked when polled");
            Ok::<_, ToolError>(Waited { ms: args.ms })
        },
    );
    let later = typed_tool(
        "mcp://t/tools/later:v1",
        "later",
        "Panics after it waited.",
        |args: Wait, ctx: ToolContext| async move {
            tokio::time::sleep(Duration::from_millis(args.ms)).await;
            assert!(ctx.is_cancelled(), "panicked after waiting");
            Ok::<_, ToolError>(Waited { ms: args.ms })
        },
    );
    let server = Server::builder()
        .tool(at_call)
        .tool(at_poll)
        .tool(later)
        .build()
        .unwrap();
    let mut client = TestClient::initialized(&server).await;
    for (tool, text) in [
        ("at-call", "panicked when called"),
        ("at-poll", "panicked when polled"),
        ("later", "panicked after waiting"),
    ] {
        let e = client
            .execute(&format!("mcp://t/tools/{tool}:v1"), json!({"ms": 5}))
            .await
            .unwrap_err();
        assert_eq!(e.code.0, -32603, "{tool}: {e}");
        assert!(e.data.contains(text), "{tool}: {}", e.data);
    }
    let out = client
        .execute("mcp://t/tools/at-call:v1", json!({"ms": 2_000_000}))
        .await
        .unwrap();
    assert_eq!(out, json!({"ms": 2_000_000}));
}

/// A typed tool whose function takes no context (so none is made for it)
/// and that waits is still stopped by `$/cancelRequest`: answered
/// `-32003`, its future dropped, and the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_typed_tool_without_a_context_is_still_cancelled() {
    let dropped = Arc::new(AtomicBool::new(false));
    let witness = dropped.clone();
    let slow = typed_tool(
        "mcp://t/tools/slow:v1",
        "slow",
        "Sleeps.",
        move |args: Wait| {
            // Set when the tool's future is dropped.
            let guard = DropFlag(witness.clone());
            async move {
                let _guard = guard;
                tokio::time::sleep(Duration::from_millis(args.ms)).await;
                Ok::<_, ToolError>(Waited { ms: args.ms })
            }
        },
    );
    let server = Server::builder().tool(slow).build().unwrap();
    let mut client = TestClient::initialized(&server).await;
    call_for_30_s(&mut client, "mcp://t/tools/slow:v1").await;
    assert!(!dropped.load(Ordering::SeqCst), "the tool is still waiting");
    let reply = cancel_the_call(&mut client).await;
    assert_eq!(reply["error"]["code"], -32003, "{reply}");
    assert!(
        dropped.load(Ordering::SeqCst),
        "the tool's future was dropped"
    );
    let out = client
        .execute("mcp://t/tools/slow:v1", json!({"ms": 1}))
        .await
        .unwrap();
    assert_eq!(out, json!({"ms": 1}));
}

/// Calls the waiting tool `tool` for 30 s as request `"w"`, and lets it
/// start waiting.
async fn call_for_30_s(client: &mut TestClient, tool: &str) {
    client
        .send(
            &json!({"jsonrpc": "2.0", "id": "w", "method": "mcp/executeTool",
                      "params": {"id": tool, "arguments": {"ms": 30_000}}}),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// Cancels request `"w"` and returns its reply.
async fn cancel_the_call(client: &mut TestClient) -> Value {
    client.notify("$/cancelRequest", json!({"id": "w"})).await;
    client.reply(&json!("w")).await
}

/// Sets its flag when dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A typed output's text block is its JSON text, quoted: at any length
/// (from 256 bytes the fast path's writer quotes it) and whatever needs an
/// escape, it reads back as the structured output's text.
#[tokio::test]
async fn a_typed_outputs_text_block_reads_back_as_its_json_at_any_length() {
    let server = echo_server();
    let mut client = TestClient::model_context(&server, json!({})).await;
    let plain = "plain ".repeat(100);
    let dense = "a\"b\\c\n\u{1}\u{1f}é\u{2028}\u{7f}".repeat(60);
    for message in ["short", "a\"b", plain.as_str(), dense.as_str()] {
        let result = client
            .call_tool("echo", json!({ "message": message }))
            .await
            .unwrap();
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert_eq!(
            text,
            serde_json::to_string(&json!({ "message": message })).unwrap()
        );
        assert_eq!(result["structuredContent"]["message"], message);
    }
}
