//! Tool `title`, `annotations` and `icons`, and resource, template and
//! prompt `title` and `icons`, as the Model Context Protocol lists them
//! (docs/model-context.md §3); MCP v1.0 lists none of them.

use clawmcp::definition::{
    Icon, IconTheme, Presentation, PromptDefinition, Role, ToolAnnotations, ToolDefinition,
    ToolMetadata,
};
use clawmcp::prompt::Prompt;
use clawmcp::template::resource_template;
use clawmcp::testing::TestClient;
use clawmcp::{Server, ToolError, async_trait, tool_fn};
use serde_json::{Value, json};

struct Planner;

#[async_trait]
impl Prompt for Planner {
    fn definition(&self) -> PromptDefinition {
        PromptDefinition {
            mcp_id: "mcp://t/prompts/plan:v1".into(),
            name: "plan".into(),
            description: None,
            role: Role::User,
            content: "Plan it.".into(),
        }
    }

    fn presentation(&self) -> Presentation {
        Presentation::new()
            .title("Make a plan")
            .icon(Icon::new("data:image/png;base64,AA==").size("16x16"))
    }
}

fn server() -> Server {
    let definition = ToolDefinition {
        mcp_id: "mcp://t/tools/erase:v1".into(),
        name: "erase".into(),
        description: "Erases everything.".into(),
        input_schema: json!({"type": "object"}),
        output_schema: json!({}),
    };
    let erase = tool_fn(definition, |_, _| async { Ok::<_, ToolError>(json!(null)) })
        .with_metadata(
            ToolMetadata::new()
                .title("Erase everything")
                .annotations(ToolAnnotations::new().destructive(true).idempotent(true))
                .icon(
                    Icon::new("https://example.com/erase.svg")
                        .mime_type("image/svg+xml")
                        .size("any")
                        .theme(IconTheme::Dark),
                ),
        );
    let plain = tool_fn(
        ToolDefinition {
            mcp_id: "mcp://t/tools/plain:v1".into(),
            name: "plain".into(),
            description: "Nothing to show.".into(),
            input_schema: json!({"type": "object"}),
            output_schema: json!({}),
        },
        |_, _| async { Ok::<_, ToolError>(json!(null)) },
    );
    let files = resource_template(
        "file:///{name}",
        "files",
        "Any file.",
        "text/plain",
        |_uri: String, _vars| async { Ok::<_, ToolError>("x".to_owned().into()) },
    )
    .expect("a template")
    .with_presentation(Presentation::new().title("Files"));
    // A title alone; and a title beside annotations that name their own.
    let titled = |name: &str, annotations: Option<ToolAnnotations>| {
        let metadata = ToolMetadata::new().title(format!("The {name} tool"));
        let definition = ToolDefinition {
            mcp_id: format!("mcp://t/tools/{name}:v1"),
            name: name.into(),
            description: "Titled.".into(),
            input_schema: json!({"type": "object"}),
            output_schema: json!({}),
        };
        tool_fn(definition, |_, _| async { Ok::<_, ToolError>(json!(null)) }).with_metadata(
            match annotations {
                Some(annotations) => metadata.annotations(annotations),
                None => metadata,
            },
        )
    };
    Server::builder()
        .name("t")
        .tool(erase)
        .tool(plain)
        .tool(titled("titled", None))
        .tool(titled(
            "renamed",
            Some(ToolAnnotations::new().title("Its own")),
        ))
        .prompt(Planner)
        .resource_template(files)
        .build()
        .expect("builds")
}

fn named<'a>(list: &'a Value, key: &str, name: &str) -> &'a Value {
    list[key]
        .as_array()
        .and_then(|items| items.iter().find(|i| i["name"] == name))
        .unwrap_or_else(|| panic!("{name} in {list}"))
}

#[tokio::test]
async fn tools_list_their_title_annotations_and_icons_and_leave_unset_ones_out() {
    let server = server();
    let mut client = TestClient::model_context(&server, json!({})).await;
    let tools = client.call("tools/list", None).await.expect("tools/list");
    let erase = named(&tools, "tools", "erase");
    assert_eq!(erase["title"], "Erase everything");
    assert_eq!(
        erase["annotations"],
        json!({"destructiveHint": true, "idempotentHint": true})
    );
    assert_eq!(
        erase["icons"],
        json!([{"src": "https://example.com/erase.svg", "mimeType": "image/svg+xml",
                "sizes": ["any"], "theme": "dark"}])
    );
    let plain = named(&tools, "tools", "plain");
    for key in ["title", "annotations", "icons"] {
        assert!(plain.get(key).is_none(), "{key} in {plain}");
    }
}

#[tokio::test]
async fn prompts_and_templates_list_their_title_and_icons() {
    let server = server();
    let mut client = TestClient::model_context(&server, json!({})).await;
    let prompts = client
        .call("prompts/list", None)
        .await
        .expect("prompts/list");
    let plan = named(&prompts, "prompts", "plan");
    assert_eq!(plan["title"], "Make a plan");
    assert_eq!(
        plan["icons"],
        json!([{"src": "data:image/png;base64,AA==", "sizes": ["16x16"]}])
    );
    let templates = client
        .call("resources/templates/list", None)
        .await
        .expect("templates");
    let files = named(&templates, "resourceTemplates", "files");
    assert_eq!(files["title"], "Files");
    assert!(files.get("icons").is_none(), "{files}");
}

#[tokio::test]
async fn mcp_v1_lists_stay_as_they_were() {
    let server = server();
    let mut client = TestClient::initialized(&server).await;
    let tools = client.call("mcp/listTools", None).await.expect("listTools");
    let erase = &tools[0];
    assert_eq!(
        erase
            .as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>()),
        Some(
            [
                "description",
                "inputSchema",
                "mcpId",
                "name",
                "outputSchema"
            ]
            .map(String::from)
            .to_vec()
        ),
        "{erase}"
    );
}

/// The keys of an item, sorted.
fn keys(item: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = item
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    keys.sort_unstable();
    keys
}

#[tokio::test]
async fn a_session_lists_only_the_members_its_negotiated_version_has() {
    let server = server();
    // Newest last: a session of an older version must not change what a
    // later one is listed.
    for (version, tool, prompt) in [
        (
            "2024-11-05",
            &["description", "inputSchema", "name"][..],
            &["name"][..],
        ),
        (
            "2025-03-26",
            &["annotations", "description", "inputSchema", "name"],
            &["name"],
        ),
        (
            "2025-06-18",
            &["annotations", "description", "inputSchema", "name", "title"],
            &["name", "title"],
        ),
        (
            "2025-11-25",
            &[
                "annotations",
                "description",
                "icons",
                "inputSchema",
                "name",
                "title",
            ],
            &["icons", "name", "title"],
        ),
    ] {
        let mut client = TestClient::connect_model_context(&server).await;
        let init = json!({"protocolVersion": version, "capabilities": {},
                          "clientInfo": {"name": "t", "version": "1"}});
        let result = client.initialize_model_context(init).await;
        assert_eq!(result["protocolVersion"], version);
        let tools = client.call("tools/list", None).await.expect("tools/list");
        let erase = named(&tools, "tools", "erase");
        assert_eq!(keys(erase), tool, "{version}");
        // 2025-03-26 has no `title` but `annotations.title`: the tool's
        // title goes there.
        let annotated_title = (version == "2025-03-26").then_some("Erase everything");
        assert_eq!(
            erase["annotations"]["title"].as_str(),
            annotated_title,
            "{version}"
        );
        assert!(named(&tools, "tools", "plain").get("annotations").is_none());
        let titled = &named(&tools, "tools", "titled")["annotations"];
        let expected = (version == "2025-03-26").then(|| json!({"title": "The titled tool"}));
        assert_eq!(titled.is_null(), expected.is_none(), "{version}: {titled}");
        if let Some(expected) = expected {
            assert_eq!(*titled, expected);
        }
        // Annotations that name their own title keep it.
        let renamed = &named(&tools, "tools", "renamed")["annotations"];
        if version >= "2025-03-26" {
            assert_eq!(renamed["title"], "Its own", "{version}");
        }
        let prompts = client.call("prompts/list", None).await.expect("prompts");
        assert_eq!(
            keys(named(&prompts, "prompts", "plan")),
            prompt,
            "{version}"
        );
        let templates = client
            .call("resources/templates/list", None)
            .await
            .expect("templates");
        let files = named(&templates, "resourceTemplates", "files");
        let since_2025_06_18 = version >= "2025-06-18";
        assert_eq!(files.get("title").is_some(), since_2025_06_18, "{version}");
    }
}
