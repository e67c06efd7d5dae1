//! docs/mcp-v1.md §6: the builder checks every item at build time — mcpIds are
//! absolute URIs unique within their kind, schemas are valid JSON Schemas
//! (the input schema an object schema) — and lists items in registration order.

mod common;

use clawmcp::definition::{PromptDefinition, Role};
use clawmcp::{BuildError, Server, ServerBuilder, TextResource};
use common::*;
use serde_json::{Value, json};

fn tool_with(mcp_id: &str, input: Value, output: Value) -> impl clawmcp::Tool {
    clawmcp::tool_fn(def(mcp_id, input, output), |_a, _c| async { Ok(json!({})) })
}

fn tool(mcp_id: &str) -> impl clawmcp::Tool {
    tool_with(mcp_id, json!({"type": "object"}), json!({"type": "object"}))
}

fn resource(mcp_id: &str) -> TextResource {
    TextResource::new(mcp_id, "r", "A resource.", "text/plain", "content")
}

fn prompt(mcp_id: &str) -> PromptDefinition {
    PromptDefinition {
        mcp_id: mcp_id.into(),
        name: "p".into(),
        description: None,
        role: Role::User,
        content: "Say hi.".into(),
    }
}

/// Builds, turning a panic into a test failure with a clear message.
fn build(builder: ServerBuilder) -> Result<Server, BuildError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| builder.build()))
        .unwrap_or_else(|_| panic!("build() panicked instead of returning an error"))
}

const MALFORMED: [&str; 9] = [
    "",
    "no-scheme",
    "tools/echo",
    "/abs/path",
    "1mcp://a/b",
    ":no-scheme",
    "mcp://a b/c",
    "mc p://a",
    "mcp://a/b\n",
];

#[test]
fn tool_mcp_id_that_is_not_an_absolute_uri_is_malformed() {
    for id in MALFORMED {
        let err = build(Server::builder().tool(tool(id))).unwrap_err();
        assert!(
            matches!(&err, BuildError::MalformedMcpId { kind: "tool", mcp_id } if mcp_id == id),
            "{id:?}: {err:?}"
        );
    }
}

#[test]
fn resource_mcp_id_that_is_not_an_absolute_uri_is_malformed() {
    for id in MALFORMED {
        let err = build(Server::builder().resource(resource(id))).unwrap_err();
        assert!(
            matches!(&err, BuildError::MalformedMcpId { kind: "resource", mcp_id } if mcp_id == id),
            "{id:?}: {err:?}"
        );
    }
}

#[test]
fn prompt_mcp_id_that_is_not_an_absolute_uri_is_malformed() {
    for id in MALFORMED {
        let err = build(Server::builder().prompt(prompt(id))).unwrap_err();
        assert!(
            matches!(&err, BuildError::MalformedMcpId { kind: "prompt", mcp_id } if mcp_id == id),
            "{id:?}: {err:?}"
        );
    }
}

#[test]
fn absolute_uri_mcp_ids_of_any_scheme_are_accepted() {
    for id in [
        "mcp://acme-corp/tools/file-writer:v1",
        "mcp://my-server/resources/config.json",
        "MCP://Upper/Case",
        "urn:clawmcp:tool:x",
        "mcp+x://a",
        "a.b-c:d",
        "https://example.com/tools/x?v=1#f",
    ] {
        // Tool names derived from these ids (`x?v=1#f`) are MCP v1.0 names
        // only: the Model Context Protocol refuses them (docs/model-context.md §3).
        let built = build(
            Server::builder()
                .protocols(clawmcp::server::Protocols::McpV1)
                .tool(tool(id))
                .resource(resource(id))
                .prompt(prompt(id)),
        );
        assert!(built.is_ok(), "{id}: {:?}", built.err());
    }
}

#[test]
fn duplicate_tool_mcp_id_is_refused() {
    let id = "mcp://t/tools/same:v1";
    let err = build(
        Server::builder()
            .tool(tool(id))
            .tool(tool("mcp://t/tools/other:v1"))
            .tool(tool(id)),
    )
    .unwrap_err();
    assert!(
        matches!(&err, BuildError::DuplicateMcpId { kind: "tool", mcp_id } if mcp_id == id),
        "{err:?}"
    );
}

#[test]
fn duplicate_resource_mcp_id_is_refused() {
    let id = "mcp://t/resources/same";
    let err = build(
        Server::builder()
            .resource(resource(id))
            .resource(resource(id)),
    )
    .unwrap_err();
    assert!(
        matches!(&err, BuildError::DuplicateMcpId { kind: "resource", mcp_id } if mcp_id == id),
        "{err:?}"
    );
}

#[test]
fn duplicate_prompt_mcp_id_is_refused() {
    let id = "mcp://t/prompts/same";
    let err = build(Server::builder().prompt(prompt(id)).prompt(prompt(id))).unwrap_err();
    assert!(
        matches!(&err, BuildError::DuplicateMcpId { kind: "prompt", mcp_id } if mcp_id == id),
        "{err:?}"
    );
}

#[tokio::test]
async fn the_same_mcp_id_across_different_kinds_is_allowed() {
    let id = "mcp://t/shared/id";
    let server = build(
        Server::builder()
            .tool(tool(id))
            .resource(resource(id))
            .prompt(prompt(id)),
    )
    .expect("one id per kind is fine");
    let mut client = ready_client(&server).await;
    assert_eq!(client.list_tools().await.unwrap()[0].mcp_id, id);
    assert_eq!(client.list_resources().await.unwrap()[0].mcp_id, id);
    assert_eq!(client.list_prompts().await.unwrap()[0].mcp_id, id);
    assert_eq!(client.execute(id, json!({})).await, Ok(json!({})));
}

#[test]
fn invalid_input_schema_is_refused_at_build_time() {
    let id = "mcp://t/tools/bad-input:v1";
    for schema in [
        json!({"type": "invalid_type"}),
        json!({"type": "object", "properties": {"a": {"type": "invalid_type"}}}),
        json!({"type": "object", "properties": {"a": {"minimum": "zero"}}}),
        json!({"type": "object", "required": "a"}),
        json!({"type": "object", "properties": 5}),
        json!("object"),
        json!(5),
        json!(null),
    ] {
        let err =
            build(Server::builder().tool(tool_with(id, schema.clone(), json!({})))).unwrap_err();
        assert!(
            matches!(&err, BuildError::InvalidSchema { mcp_id, which: "inputSchema", .. } if mcp_id == id),
            "{schema}: {err:?}"
        );
    }
}

#[test]
fn input_schema_that_is_not_an_object_schema_is_refused() {
    let id = "mcp://t/tools/not-object:v1";
    for schema in [
        json!({"type": "string"}),
        json!({"type": "array", "items": {}}),
        json!({"properties": {"a": {"type": "string"}}}),
        json!({}),
    ] {
        let err =
            build(Server::builder().tool(tool_with(id, schema.clone(), json!({})))).unwrap_err();
        assert!(
            matches!(
                &err,
                BuildError::InvalidSchema {
                    which: "inputSchema",
                    ..
                }
            ),
            "{schema}: {err:?}"
        );
    }
}

#[test]
fn invalid_output_schema_is_refused_at_build_time() {
    let id = "mcp://t/tools/bad-output:v1";
    for schema in [
        json!({"type": "invalid_type"}),
        json!({"type": "object", "properties": {"n": {"type": 7}}}),
        json!({"type": "object", "required": [1]}),
        json!({"minLength": -1}),
        json!("string"),
        json!(5),
    ] {
        let err =
            build(Server::builder().tool(tool_with(id, json!({"type": "object"}), schema.clone())))
                .unwrap_err();
        assert!(
            matches!(&err, BuildError::InvalidSchema { mcp_id, which: "outputSchema", .. } if mcp_id == id),
            "{schema}: {err:?}"
        );
    }
}

#[test]
fn schema_with_a_dangling_local_ref_is_refused_at_build_time() {
    let id = "mcp://t/tools/dangling:v1";
    let err = build(Server::builder().tool(tool_with(
        id,
        json!({"type": "object", "properties": {"a": {"$ref": "#/definitions/missing"}}}),
        json!({}),
    )))
    .unwrap_err();
    assert!(
        matches!(
            &err,
            BuildError::InvalidSchema {
                which: "inputSchema",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn one_bad_item_among_good_ones_fails_the_build() {
    let err = build(
        Server::builder()
            .tool(tool("mcp://t/tools/a:v1"))
            .tool(tool("not a uri"))
            .resource(resource("mcp://t/r")),
    )
    .unwrap_err();
    assert!(matches!(err, BuildError::MalformedMcpId { .. }), "{err:?}");
}

#[test]
fn build_errors_name_the_offending_id_when_displayed() {
    let err = build(Server::builder().tool(tool("no-scheme"))).unwrap_err();
    assert!(err.to_string().contains("no-scheme"), "{err}");
    let err = build(Server::builder().tool(tool_with(
        "mcp://t/tools/x:v1",
        json!({"type": "invalid_type"}),
        json!({}),
    )))
    .unwrap_err();
    assert!(err.to_string().contains("mcp://t/tools/x:v1"), "{err}");
}

#[tokio::test]
async fn items_are_listed_in_registration_order() {
    let tool_ids = [
        "mcp://t/tools/zebra:v1",
        "mcp://t/tools/alpha:v1",
        "mcp://t/tools/mango:v1",
        "mcp://t/tools/beta:v1",
    ];
    let resource_ids = [
        "mcp://t/resources/z",
        "mcp://t/resources/a",
        "mcp://t/resources/m",
    ];
    let prompt_ids = ["mcp://t/prompts/z", "mcp://t/prompts/a"];
    // Both prompts are named `p`: an MCP v1.0 listing only (the Model
    // Context Protocol finds prompts by name, docs/model-context.md §3).
    let mut builder = Server::builder().protocols(clawmcp::server::Protocols::McpV1);
    for id in tool_ids {
        builder = builder.tool(tool(id));
    }
    for id in resource_ids {
        builder = builder.resource(resource(id));
    }
    for id in prompt_ids {
        builder = builder.prompt(prompt(id));
    }
    let server = build(builder).unwrap();
    let mut client = ready_client(&server).await;
    let listed: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.mcp_id)
        .collect();
    assert_eq!(listed, tool_ids);
    let listed: Vec<String> = client
        .list_resources()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.mcp_id)
        .collect();
    assert_eq!(listed, resource_ids);
    let listed: Vec<String> = client
        .list_prompts()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.mcp_id)
        .collect();
    assert_eq!(listed, prompt_ids);
}

#[tokio::test]
async fn list_tools_shows_each_definition_exactly_as_registered() {
    let input =
        json!({"type": "object", "required": ["x"], "properties": {"x": {"type": "integer"}}});
    let output = json!({"type": "object", "properties": {"y": {"type": "string"}}});
    let server = build(Server::builder().tool(tool_with(
        "mcp://t/tools/exact:v1",
        input.clone(),
        output.clone(),
    )))
    .unwrap();
    let mut client = ready_client(&server).await;
    let listed = client.call("mcp/listTools", None).await.unwrap();
    assert_eq!(
        listed,
        json!([{
            "mcpId": "mcp://t/tools/exact:v1",
            "name": "exact",
            "description": "The exact test tool.",
            "inputSchema": input,
            "outputSchema": output,
        }])
    );
}
