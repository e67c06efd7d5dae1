//! `TestClient` as a principal (docs/oauth.md §4): per-item scope rules and
//! what a tool sees of its caller, tested in-process on both dialects (and
//! in a 2026-07-28 request), as they hold over HTTP behind OAuth.

use clawmcp::definition::ToolDefinition;
use clawmcp::testing::TestClient;
use clawmcp::tool::rich_tool_fn;
use clawmcp::{Principal, Server, ToolContext, ToolOutput};
use serde_json::{Map, Value, json};

/// A tool that answers its caller's subject and its `team` claim; it needs
/// scope `profile`.
fn server() -> Server {
    let whoami = ToolDefinition {
        mcp_id: "mcp://principal-test/tools/whoami:v1".into(),
        name: "whoami".into(),
        description: "Who calls, and their team.".into(),
        input_schema: json!({"type": "object"}),
        output_schema: json!({}),
    };
    Server::builder()
        .tool(rich_tool_fn(
            whoami,
            |_args: Value, ctx: ToolContext| async move {
                let principal = ctx.principal();
                let subject = principal.as_ref().and_then(|p| p.subject()).unwrap_or("-");
                let team = principal
                    .as_ref()
                    .and_then(|p| p.claims().get("team").and_then(Value::as_str))
                    .unwrap_or("-");
                Ok(ToolOutput::text(format!("{subject} of {team}")))
            },
        ))
        .require_scopes("whoami", ["profile"])
        .build()
        .expect("the server builds")
}

fn ada(scopes: &[&str]) -> Principal {
    let mut claims = Map::new();
    claims.insert("team".into(), json!("engines"));
    Principal::new("https://as.example")
        .with_subject("ada")
        .with_scopes(scopes.iter().copied())
        .with_claims(claims)
}

#[tokio::test]
async fn a_model_context_client_as_a_principal_is_held_to_the_items_scopes_and_seen_by_tools() {
    let server = server();
    let mut allowed = TestClient::model_context_as(&server, json!({}), ada(&["profile"])).await;
    let result = allowed
        .call_tool("whoami", json!({}))
        .await
        .expect("allowed");
    assert_eq!(result["content"][0]["text"], "ada of engines");
    let mut refused = TestClient::model_context_as(&server, json!({}), ada(&["other"])).await;
    let error = refused.call_tool("whoami", json!({})).await.unwrap_err();
    assert_eq!(error.code.0, -32007, "{error:?}");
    assert!(error.data.to_string().contains("profile"), "{error:?}");
}

#[tokio::test]
async fn an_mcp_v1_client_as_a_principal_is_held_to_the_items_scopes_and_seen_by_tools() {
    let server = server();
    let id = "mcp://principal-test/tools/whoami:v1";
    let mut allowed = TestClient::initialized_as(&server, ada(&["profile"])).await;
    let result = allowed.execute(id, json!({})).await.expect("allowed");
    assert_eq!(result["content"][0]["text"], "ada of engines", "{result}");
    let mut refused = TestClient::initialized_as(&server, ada(&[])).await;
    let error = refused.execute(id, json!({})).await.unwrap_err();
    assert_eq!(error.code.0, -32007, "{error:?}");
}

#[tokio::test]
async fn without_a_principal_stdio_is_subject_to_no_scope() {
    let server = server();
    let mut client = TestClient::model_context(&server, json!({})).await;
    let result = client.call_tool("whoami", json!({})).await.expect("stdio");
    assert_eq!(result["content"][0]["text"], "- of -");
}

/// A 2026-07-28 request (its `_meta` names the revision, no handshake) as
/// a principal: the same scope rule, the same principal seen by the tool.
#[tokio::test]
async fn a_2026_07_28_request_as_a_principal_is_held_to_the_items_scopes_and_seen_by_tools() {
    let call = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "whoami",
            "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        }})
    };
    let server = server();
    let mut allowed = TestClient::connect_as(&server, true, ada(&["profile"])).await;
    allowed.send(&call(1)).await;
    let reply = allowed.reply(&json!(1)).await;
    assert_eq!(
        reply["result"]["content"][0]["text"], "ada of engines",
        "{reply}"
    );
    assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
    let mut refused = TestClient::connect_as(&server, true, ada(&[])).await;
    refused.send(&call(2)).await;
    let reply = refused.reply(&json!(2)).await;
    assert_eq!(reply["error"]["code"], -32007, "{reply}");
}
