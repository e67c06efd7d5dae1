//! Shared state for tools (`ServerBuilder::state`, the `State` extractor),
//! typed resource content (`SharedResource::set_json`) and typed test calls,
//! on `examples/notes.rs`, in both dialects.

#[path = "../examples/notes.rs"]
#[allow(dead_code)]
mod notes_example;

use clawmcp::error::ErrorCode;
use clawmcp::state::State;
use clawmcp::testing::{CallError, TestClient};
use clawmcp::typed::typed_tool;
use clawmcp::{BuildError, Server, ToolContext, ToolError};
use notes_example::{AddNote, Added, Found, INDEX, Notes, Search};
use serde_json::json;

const ADD: &str = "mcp://notes/tools/add_note:v1";
const SEARCH: &str = "mcp://notes/tools/search_notes:v1";

fn note(title: &str, text: &str) -> AddNote {
    AddNote {
        title: title.into(),
        text: text.into(),
    }
}

#[tokio::test]
async fn tools_taking_state_share_one_store_across_sessions_and_dialects() {
    let server = notes_example::server(Notes::new()).unwrap();
    let mut v1 = TestClient::initialized(&server).await;
    let mut mc = TestClient::model_context(&server, json!({})).await;

    let added: Added = v1
        .execute_as(ADD, &note("milk", "buy oat milk"))
        .await
        .unwrap();
    assert_eq!(added.id, 1);
    let added: Added = mc
        .call_tool_as("add_note", &note("bread", "rye, sliced"))
        .await
        .unwrap();
    assert_eq!(added.id, 2, "the second session sees the first one's note");

    let found: Found = mc
        .call_tool_as(
            "search_notes",
            &Search {
                query: "MILK".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(found.notes.len(), 1);
    assert_eq!(found.notes[0].title, "milk");
    let found: Found = v1
        .execute_as(SEARCH, &Search { query: "r".into() })
        .await
        .unwrap();
    let titles: Vec<&str> = found.notes.iter().map(|n| n.title.as_str()).collect();
    assert_eq!(titles, ["bread"]);
}

#[tokio::test]
async fn adding_a_note_changes_the_json_index_and_announces_it_in_each_dialect() {
    let server = notes_example::server(Notes::new()).unwrap();
    let mut v1 = TestClient::initialized(&server).await;
    let mut mc = TestClient::model_context(&server, json!({})).await;
    mc.call("resources/subscribe", Some(json!({"uri": INDEX})))
        .await
        .unwrap();
    assert_eq!(mc.read_resource(INDEX).await.unwrap()["text"], "[]");

    let _: Added = v1.execute_as(ADD, &note("milk", "")).await.unwrap();

    let changed = v1.notification("mcp/resourceDidChange").await.unwrap();
    assert_eq!(changed, json!({"mcpId": INDEX}));
    let updated = mc
        .notification("notifications/resources/updated")
        .await
        .unwrap();
    assert_eq!(updated, json!({"uri": INDEX}));
    let index = mc.read_resource(INDEX).await.unwrap();
    assert_eq!(index["mimeType"], "application/json");
    assert_eq!(index["text"], r#"["milk"]"#);
}

#[tokio::test]
async fn typed_call_errors_tell_protocol_errors_from_tool_failures() {
    let server = notes_example::server(Notes::new()).unwrap();
    let mut v1 = TestClient::initialized(&server).await;
    let mut mc = TestClient::model_context(&server, json!({})).await;

    // An empty title breaks the derived schema: invalid params in both.
    let err = v1
        .execute_as::<Added>(ADD, &note("", "x"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::INVALID_PARAMS), "{err}");
    let err = mc
        .call_tool_as::<Added>("add_note", &note("", "x"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::Tool(text) if text.contains("/title")),
        "a Model Context Protocol client sees invalid arguments as a tool error: {err}"
    );
    // Output of another shape than asked for.
    let err = mc
        .call_tool_as::<Search>("search_notes", &Search { query: "".into() })
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Output(_)), "{err}");
    // Unknown tools are protocol errors.
    let err = mc
        .call_tool_as::<Added>("no_such_tool", &json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::INVALID_PARAMS), "{err}");
}

#[tokio::test]
async fn building_fails_when_a_tool_needs_state_nobody_registered() {
    let err = Server::builder()
        .tool(typed_tool(
            ADD,
            "add_note",
            "Adds a note.",
            notes_example::add_note,
        ))
        .build()
        .unwrap_err();
    assert!(
        matches!(&err, BuildError::MissingState { mcp_id, state } if mcp_id == ADD && state.ends_with("Notes")),
        "{err}"
    );
}

#[tokio::test]
async fn a_tool_with_state_and_context_gets_both_and_any_tool_reaches_state_by_context() {
    #[derive(Clone)]
    struct Greeting(&'static str);
    let with_both = typed_tool(
        "mcp://t/tools/both:v1",
        "both",
        "State and context.",
        |State(greeting): State<Greeting>, args: Search, ctx: ToolContext| async move {
            let again = ctx.state::<Greeting>().map(|g| g.0);
            Ok::<_, ToolError>(json!({
                "text": format!("{} {}", greeting.0, args.query),
                "again": again,
                "request": ctx.request_id().to_string(),
            }))
        },
    );
    let server = Server::builder()
        .state(Greeting("hello"))
        .tool(with_both)
        .build()
        .unwrap();
    let mut mc = TestClient::model_context(&server, json!({})).await;
    let out: serde_json::Value = mc
        .call_tool_as(
            "both",
            &Search {
                query: "you".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(out["text"], "hello you");
    assert_eq!(out["again"], "hello");
    assert!(out["request"].is_string());
}
