//! Lists that change while the server runs (docs/model-context.md §6.1):
//! items added and removed through the `ServerHandle` are checked as
//! `build` checks them, served at once by every dialect, and announced as
//! list-changed notifications to 2025-11-25 sessions and to 2026-07-28
//! listen streams that opted in; a request keeps the items it was
//! dispatched with.

use std::time::Duration;

use clawmcp::definition::{PromptDefinition, Role, ToolDefinition};
use clawmcp::prompt::{PromptMessage, prompt_fn};
use clawmcp::testing::TestClient;
use clawmcp::{BuildError, Server, TextResource, ToolContext, tool_fn};
use serde_json::{Value, json};
use tokio::time::timeout;

/// A hang guard, never a performance bound.
const PATIENCE: Duration = Duration::from_secs(10);

fn definition(name: &str) -> ToolDefinition {
    ToolDefinition {
        mcp_id: format!("mcp://test/tools/{name}:v1"),
        name: name.into(),
        description: format!("The {name} tool."),
        input_schema: json!({"type": "object"}),
        output_schema: json!({"type": "object"}),
    }
}

fn echo(name: &str) -> impl clawmcp::Tool {
    tool_fn(definition(name), |args: Value, _: ToolContext| async move {
        Ok(args)
    })
}

fn greeting(name: &str) -> impl clawmcp::prompt::Prompt {
    prompt_fn(
        PromptDefinition {
            mcp_id: format!("mcp://test/prompts/{name}:v1"),
            name: name.into(),
            description: Some("Greets.".into()),
            role: Role::User,
            content: "Hello.".into(),
        },
        [],
        |_args| async move { Ok(vec![PromptMessage::user("Hello.")]) },
    )
}

fn server() -> Server {
    Server::builder()
        .name("list-changes")
        .tool(echo("fixed"))
        .prompt(greeting("hello"))
        .resource(TextResource::new(
            "test://fixed",
            "fixed",
            "A resource.",
            "text/plain",
            "f",
        ))
        .build()
        .expect("builds")
}

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {}})
}

async fn next(client: &mut TestClient) -> Value {
    timeout(PATIENCE, client.recv())
        .await
        .expect("a message in time")
        .expect("a message")
}

async fn tool_names(client: &mut TestClient) -> Vec<String> {
    let listed = client.call("tools/list", None).await.expect("tools/list");
    listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn an_added_tool_is_announced_to_a_2025_session_and_served_then_its_removal_too() {
    let server = server();
    let mut client = TestClient::model_context(&server, json!({})).await;
    let handle = server.handle();
    handle.add_tool(echo("added")).expect("adds");
    let changed = timeout(
        PATIENCE,
        client.notification("notifications/tools/list_changed"),
    )
    .await
    .expect("in time");
    assert_eq!(changed, Some(json!({})));
    assert_eq!(tool_names(&mut client).await, ["fixed", "added"]);
    let called = client
        .call_tool("added", json!({"x": 1}))
        .await
        .expect("the added tool answers");
    assert_eq!(called["structuredContent"], json!({"x": 1}));

    assert!(handle.remove_tool("added").expect("removes"));
    timeout(
        PATIENCE,
        client.notification("notifications/tools/list_changed"),
    )
    .await
    .expect("in time")
    .expect("a second announcement");
    assert_eq!(tool_names(&mut client).await, ["fixed"]);
    let gone = client.call_tool("added", json!({})).await;
    assert!(gone.is_err(), "a removed tool is not called: {gone:?}");
    // Removing what is not there changes nothing and announces nothing.
    assert!(!handle.remove_tool("added").expect("nothing to remove"));
    let quiet = client.collect(Duration::from_millis(100)).await;
    assert!(quiet.is_empty(), "{quiet:?}");
}

#[tokio::test]
async fn capabilities_say_the_lists_change() {
    let server = server();
    let mut client = TestClient::connect_model_context(&server).await;
    let result = client
        .initialize_model_context(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }))
        .await;
    let caps = &result["capabilities"];
    assert_eq!(caps["tools"]["listChanged"], true);
    assert_eq!(caps["prompts"]["listChanged"], true);
    assert_eq!(caps["resources"]["listChanged"], true);
}

#[tokio::test]
async fn an_item_build_would_refuse_is_refused_and_nothing_changes() {
    let server = server();
    let handle = server.handle();
    let taken = handle.add_tool(echo("fixed"));
    assert!(
        matches!(taken, Err(BuildError::DuplicateMcpId { .. })),
        "{taken:?}"
    );
    let bad = tool_fn(
        ToolDefinition {
            input_schema: json!({"type": "string"}),
            ..definition("bad")
        },
        |args: Value, _: ToolContext| async move { Ok(args) },
    );
    assert!(handle.add_tool(bad).is_err());
    let mut client = TestClient::model_context(&server, json!({})).await;
    assert_eq!(tool_names(&mut client).await, ["fixed"]);
}

#[test]
fn a_handle_edits_nothing_before_its_server_is_built() {
    let builder = Server::builder();
    let handle = builder.handle();
    assert!(matches!(
        handle.add_tool(echo("early")),
        Err(BuildError::NotBuilt)
    ));
    assert!(matches!(
        handle.remove_prompt("any"),
        Err(BuildError::NotBuilt)
    ));
}

#[tokio::test]
async fn a_listen_stream_hears_the_list_changes_it_opted_in_to_tagged_and_no_others() {
    let server = server();
    let mut client = TestClient::connect_model_context(&server).await;
    client
        .send(
            &json!({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
                      "params": {"_meta": meta(),
                                 "notifications": {"promptsListChanged": true,
                                                   "resourcesListChanged": true}}}),
        )
        .await;
    let ack = next(&mut client).await;
    assert_eq!(
        ack["params"]["notifications"],
        json!({"promptsListChanged": true, "resourcesListChanged": true})
    );
    let handle = server.handle();
    handle.add_tool(echo("unheard")).expect("adds");
    handle.add_prompt(greeting("added")).expect("adds");
    let changed = next(&mut client).await;
    assert_eq!(
        changed["method"], "notifications/prompts/list_changed",
        "the tool change is filtered out: {changed}"
    );
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L"
    );
    handle
        .add_resource(TextResource::new(
            "test://added",
            "added",
            "Added.",
            "text/plain",
            "a",
        ))
        .expect("adds");
    let changed = next(&mut client).await;
    assert_eq!(changed["method"], "notifications/resources/list_changed");
    // A stateless request sees the new items at once.
    let listed = client
        .call("prompts/list", Some(json!({"_meta": meta()})))
        .await
        .expect("prompts/list");
    let names: Vec<&str> = (listed["prompts"].as_array().expect("prompts").iter())
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, ["hello", "added"]);
}

#[tokio::test]
async fn mcp_v1_lists_the_new_tools_without_a_notification() {
    let server = server();
    let mut client = TestClient::initialized(&server).await;
    server.handle().add_tool(echo("added")).expect("adds");
    let tools = client.list_tools().await.expect("mcp/listTools");
    let ids: Vec<&str> = tools.iter().map(|t| t.mcp_id.as_str()).collect();
    assert_eq!(
        ids,
        ["mcp://test/tools/fixed:v1", "mcp://test/tools/added:v1"]
    );
    let out = client
        .execute("mcp://test/tools/added:v1", json!({"y": 2}))
        .await
        .expect("executes");
    assert_eq!(out, json!({"y": 2}));
    let quiet = client.collect(Duration::from_millis(100)).await;
    assert!(quiet.is_empty(), "MCP v1.0 has no list-changed: {quiet:?}");
}

#[tokio::test]
async fn a_call_of_a_tool_removed_while_it_runs_finishes() {
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let released = std::sync::Mutex::new(Some(released));
    let slow = tool_fn(
        definition("slow"),
        move |_args: Value, _ctx: ToolContext| {
            let wait = released.lock().unwrap().take();
            async move {
                if let Some(wait) = wait {
                    let _ = wait.await;
                }
                Ok(json!({"finished": true}))
            }
        },
    );
    let server = Server::builder().tool(slow).build().expect("builds");
    let mut client = TestClient::model_context(&server, json!({})).await;
    client
        .send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "slow", "arguments": {}}}))
        .await;
    // The call is running (its tool waits): remove the tool, then let it end.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(server.handle().remove_tool("slow").expect("removes"));
    release.send(()).expect("the tool waits");
    let reply = timeout(PATIENCE, client.reply(&json!(7)))
        .await
        .expect("in time");
    assert_eq!(
        reply["result"]["structuredContent"],
        json!({"finished": true}),
        "{reply}"
    );
}

#[tokio::test]
async fn scopes_required_of_a_removed_tool_apply_again_when_it_is_added_back() {
    let server = Server::builder()
        .tool(echo("guarded"))
        .require_scopes("guarded", ["files:read"])
        .build()
        .expect("builds");
    let handle = server.handle();
    assert!(handle.remove_tool("guarded").expect("removes"));
    handle.add_tool(echo("guarded")).expect("adds back");
    // No token here (stdio): the scope table is checked only with one, so
    // this shows that the dormant rule did not make the edit fail.
    let mut client = TestClient::model_context(&server, json!({})).await;
    assert_eq!(tool_names(&mut client).await, ["guarded"]);
}
