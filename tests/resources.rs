//! Resources and prompts with dynamic content (issue 4, docs/mcp-v1.md §4/§5):
//! content read at each listing, updates that announce themselves, files
//! with media types from their extension, prompt templates.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use clawmcp::definition::Role;
use clawmcp::error::ErrorCode;
use clawmcp::prompt::PromptTemplate;
use clawmcp::resource::{ResourceInfo, resource_fn};
use clawmcp::testing::TestClient;
use clawmcp::{BuildError, Server, SharedResource, TextResource, ToolError};
use serde_json::json;

#[tokio::test]
async fn list_resources_reads_content_at_call_time() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let server = Server::builder()
        .resource(resource_fn(
            ResourceInfo::new(
                "mcp://t/resources/count",
                "count",
                "Calls so far.",
                "text/plain",
            ),
            move || {
                let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
                async move { Ok(n.to_string()) }
            },
        ))
        .build()
        .unwrap();
    let mut client = TestClient::initialized(&server).await;
    assert_eq!(client.list_resources().await.unwrap()[0].content, "1");
    assert_eq!(client.list_resources().await.unwrap()[0].content, "2");
}

#[tokio::test]
async fn shared_resource_set_announces_the_change_to_ready_sessions() {
    let status = SharedResource::new(
        "mcp://t/resources/status",
        "status",
        "Status.",
        "text/plain",
        "starting",
    );
    let server = Server::builder().resource(status.clone()).build().unwrap();
    let mut ready = TestClient::initialized(&server).await;
    let mut handshaking = TestClient::connect(&server).await;
    handshaking
        .send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                              "params": {"clientCapabilities": {}}}))
        .await;
    handshaking.reply(&json!(1)).await;
    // Make sure the ready session's `initialized` was read before the change.
    ready.list_resources().await.unwrap();

    status.set("ready");
    let note = ready.next_notification().await.unwrap();
    assert_eq!(
        note,
        json!({"jsonrpc": "2.0", "method": "mcp/resourceDidChange", "params": {"mcpId": "mcp://t/resources/status"}})
    );
    assert_eq!(ready.list_resources().await.unwrap()[0].content, "ready");
    let silent = handshaking.collect(Duration::from_millis(300)).await;
    assert!(
        silent.is_empty(),
        "a session before initialized got {silent:?}"
    );
}

#[tokio::test]
async fn changes_waiting_for_a_slow_reader_are_coalesced() {
    let status = SharedResource::new(
        "mcp://t/resources/status",
        "status",
        "Status.",
        "text/plain",
        "0",
    );
    let server = Server::builder().resource(status.clone()).build().unwrap();
    let mut client = TestClient::initialized(&server).await;
    client.list_resources().await.unwrap();
    for i in 0..1000 {
        status.set(i.to_string());
    }
    let got = client.collect(Duration::from_millis(300)).await;
    assert!(!got.is_empty(), "at least one change is announced");
    assert!(
        got.len() < 1000,
        "1000 changes of one resource should coalesce, got {}",
        got.len()
    );
    assert_eq!(client.list_resources().await.unwrap()[0].content, "999");
}

#[tokio::test]
async fn text_resource_from_a_file_takes_its_media_type_from_the_extension() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    std::fs::write(&path, r#"{"a":1}"#).unwrap();
    let config =
        TextResource::from_file("mcp://t/resources/config.json", "config", "Config.", &path)
            .unwrap();
    let notes_path = dir.path().join("notes.md");
    std::fs::write(&notes_path, "# Notes").unwrap();
    let notes = TextResource::from_file("mcp://t/resources/notes", "notes", "Notes.", &notes_path)
        .unwrap()
        .with_media_type("text/x-notes");
    let server = Server::builder()
        .resource(config)
        .resource(notes)
        .build()
        .unwrap();
    let mut client = TestClient::initialized(&server).await;
    let list = client.list_resources().await.unwrap();
    assert_eq!(
        (list[0].media_type.as_str(), list[0].content.as_str()),
        ("application/json", r#"{"a":1}"#)
    );
    assert_eq!(list[1].media_type, "text/x-notes");
    assert!(TextResource::from_file("mcp://t/r", "r", "R.", dir.path().join("missing")).is_err());
}

#[tokio::test]
async fn a_resource_that_fails_to_read_fails_the_listing_with_32603() {
    let server = Server::builder()
        .resource(resource_fn(
            ResourceInfo::new(
                "mcp://t/resources/broken",
                "broken",
                "Broken.",
                "text/plain",
            ),
            || async { Err(ToolError::new("disk on fire")) },
        ))
        .build()
        .unwrap();
    let mut client = TestClient::initialized(&server).await;
    let e = client.list_resources().await.unwrap_err();
    assert_eq!(e.code.0, -32603);
    assert!(
        e.data.contains("disk on fire") && e.data.contains("mcp://t/resources/broken"),
        "{}",
        e.data
    );
}

#[tokio::test]
async fn prompt_templates_are_filled_at_build_time() {
    let prompt = PromptTemplate::new(
        "mcp://t/prompts/review:v1",
        "review",
        Role::System,
        "Review {language} code.",
    )
    .description("A reviewer.")
    .fill("language", "Rust")
    .render()
    .unwrap();
    let server = Server::builder().prompt(prompt).build().unwrap();
    let mut client = TestClient::initialized(&server).await;
    let prompts = client.list_prompts().await.unwrap();
    assert_eq!(prompts[0].content, "Review Rust code.");
    assert_eq!(prompts[0].role, Role::System);
    assert_eq!(prompts[0].description.as_deref(), Some("A reviewer."));

    let unfilled = PromptTemplate::new("mcp://t/prompts/x", "x", Role::User, "Hi {name}").render();
    assert!(
        matches!(unfilled, Err(BuildError::PromptTemplate { .. })),
        "{unfilled:?}"
    );
}

#[tokio::test]
async fn a_prompt_template_registers_as_it_is_and_its_unfilled_placeholders_are_arguments() {
    let review = || {
        PromptTemplate::new(
            "mcp://t/prompts/review:v1",
            "review",
            Role::User,
            "Review {language} code in {style} style:\n{code}",
        )
        .fill("language", "Rust")
        .argument("code", "The code.")
    };
    let server = Server::builder().prompt(review()).build().unwrap();

    // MCP v1.0 lists the content with the fixed value in and the
    // arguments' placeholders as written.
    let mut v1 = TestClient::initialized(&server).await;
    let prompts = v1.list_prompts().await.unwrap();
    assert_eq!(
        prompts[0].content,
        "Review Rust code in {style} style:\n{code}"
    );

    // The Model Context Protocol lists them as arguments and fills them.
    let mut mc = TestClient::model_context(&server, json!({})).await;
    let listed = mc.call("prompts/list", None).await.unwrap();
    assert_eq!(
        listed["prompts"][0]["arguments"],
        json!([
            {"name": "style", "required": true},
            {"name": "code", "description": "The code.", "required": true},
        ])
    );
    let got = mc
        .get_prompt("review", json!({"style": "terse", "code": "fn f() {}"}))
        .await
        .unwrap();
    assert_eq!(
        got["messages"][0]["content"]["text"],
        "Review Rust code in terse style:\nfn f() {}"
    );
    let missing = mc
        .get_prompt("review", json!({"code": "x"}))
        .await
        .unwrap_err();
    assert_eq!(missing.code, ErrorCode::INVALID_PARAMS, "{missing}");

    // Mistakes in the template fail the build.
    for (broken, what) in [
        (review().fill("nope", "x"), "a value for {nope}"),
        (review().argument("nope", "x"), "argument {nope}"),
        (
            PromptTemplate::new("mcp://t/prompts/b", "b", Role::User, "{open"),
            "unmatched '{'",
        ),
    ] {
        match Server::builder().prompt(broken).build() {
            Err(e @ BuildError::PromptTemplate { .. }) => {
                assert!(e.to_string().contains(what), "{e}")
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}
