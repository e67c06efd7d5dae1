//! docs/mcp-v1.md §4: the method results — `{"output": value}` for any JSON
//! value a tool returns, arguments checked against `inputSchema` before the
//! tool runs, and the definitions exactly as the reference spells them.

mod common;

use clawmcp::Server;
use clawmcp::definition::{PromptDefinition, Role};
use common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn execute_tool_result_is_exactly_an_object_with_output_for_any_json_value() {
    let outputs = [
        json!("text"),
        json!(42),
        json!(-1.5),
        json!(true),
        json!(null),
        json!([1, "two", {"three": 3}]),
        json!({"nested": {"deep": [null]}}),
    ];
    let mut builder = Server::builder();
    for (n, output) in outputs.iter().enumerate() {
        let output = output.clone();
        builder = builder.tool(clawmcp::tool_fn(
            def(
                &format!("mcp://t/tools/out{n}:v1"),
                json!({"type": "object"}),
                json!({}),
            ),
            move |_args, _ctx| {
                let output = output.clone();
                async move { Ok(output) }
            },
        ));
    }
    let server = builder.build().unwrap();
    let mut client = ready_client(&server).await;
    for (n, output) in outputs.iter().enumerate() {
        let id = json!(100 + n);
        client
            .send(&execute(
                id.clone(),
                &format!("mcp://t/tools/out{n}:v1"),
                json!({}),
            ))
            .await;
        let reply = client.reply(&id).await;
        assert_eq!(assert_result(&reply, &id), json!({"output": output}));
    }
}

#[tokio::test]
async fn arguments_failing_input_schema_never_reach_the_tool() {
    let (server, probe) = server();
    let mut client = ready_client(&server).await;
    for (n, arguments) in [
        json!({"pad": 5}),
        json!({"pad": "ok", "other": 1}),
        json!({"pad": null}),
    ]
    .into_iter()
    .enumerate()
    {
        let id = json!(n);
        client.send(&execute(id.clone(), COUNT, arguments)).await;
        assert_error(&client.reply(&id).await, &id, -32602);
    }
    assert_eq!(probe.executed(), 0);
    assert_eq!(
        client.execute(COUNT, json!({"pad": "ok"})).await,
        Ok(json!({"count": 1}))
    );
}

#[tokio::test]
async fn arguments_reach_the_tool_unchanged() {
    let server = Server::builder()
        .tool(clawmcp::tool_fn(
            def(
                "mcp://t/tools/mirror:v1",
                json!({"type": "object"}),
                json!({}),
            ),
            |args: Value, _ctx| async move { Ok(args) },
        ))
        .build()
        .unwrap();
    let mut client = ready_client(&server).await;
    let arguments = json!({"s": "héllo ✓ 😀", "n": 9007199254740993_u64, "f": 0.1,
                           "a": [1, [2, [3]]], "o": {"": null}, "b": false});
    assert_eq!(
        client
            .execute("mcp://t/tools/mirror:v1", arguments.clone())
            .await,
        Ok(arguments)
    );
}

#[tokio::test]
async fn list_prompts_omits_an_absent_description_and_spells_the_role_in_lowercase() {
    let server = Server::builder()
        .prompt(PromptDefinition {
            mcp_id: "mcp://t/prompts/a".into(),
            name: "a".into(),
            description: None,
            role: Role::Assistant,
            content: "A.".into(),
        })
        .prompt(PromptDefinition {
            mcp_id: "mcp://t/prompts/b".into(),
            name: "b".into(),
            description: Some("B.".into()),
            role: Role::User,
            content: "B.".into(),
        })
        .build()
        .unwrap();
    let mut client = ready_client(&server).await;
    assert_eq!(
        client.call("mcp/listPrompts", None).await.unwrap(),
        json!([
            {"mcpId": "mcp://t/prompts/a", "name": "a", "role": "assistant", "content": "A."},
            {"mcpId": "mcp://t/prompts/b", "name": "b", "description": "B.", "role": "user", "content": "B."},
        ])
    );
}

#[tokio::test]
async fn list_resources_shows_every_field_of_the_reference_schema() {
    let (server, _) = server();
    let mut client = ready_client(&server).await;
    assert_eq!(
        client
            .call("mcp/listResources", Some(json!({})))
            .await
            .unwrap(),
        json!([{"mcpId": NOTES, "name": "notes", "description": "Some notes.",
                "mediaType": "text/plain", "content": "hello"}])
    );
}
