//! MCP Apps (`io.modelcontextprotocol/ui`, docs/model-context.md §9): an
//! app page is listed and read with its `_meta.ui`, a tool links it, the
//! server declares the extension in both eras, MCP v1.0 lists no page,
//! `build()` refuses a page a host could not render, and a tool asks
//! whether its client renders apps — per session, and per 2026-07-28
//! request.

use clawmcp::app::{AppResource, AppVisibility, Csp, MIME_TYPE, Permissions};
use clawmcp::definition::{ToolDefinition, ToolMetadata};
use clawmcp::error::BuildError;
use clawmcp::testing::TestClient;
use clawmcp::tool::tool_fn;
use clawmcp::{Server, ToolContext};
use serde_json::{Value, json};

const UI: &str = "io.modelcontextprotocol/ui";
const PAGE: &str = "ui://apps-test/echo.html";

fn def(name: &str) -> ToolDefinition {
    ToolDefinition {
        mcp_id: format!("mcp://apps-test/tools/{name}:v1"),
        name: name.into(),
        description: format!("The {name} fixture."),
        input_schema: json!({"type": "object"}),
        output_schema: json!({}),
    }
}

fn page() -> AppResource {
    AppResource::new(
        PAGE,
        "echo-app",
        "The echo page.",
        "<!DOCTYPE html><p>echo</p>",
    )
    .csp(
        Csp::new()
            .connect("https://api.example.com")
            .resource("https://*.cdn.example.com"),
    )
    .permissions(Permissions::new().clipboard_write())
    .prefers_border(true)
}

/// `echo` links the page; `refresh` is the page's alone; `supports` says
/// whether the caller renders apps.
fn server() -> Server {
    let echo = tool_fn(def("echo"), |args, _ctx| async move { Ok(args) })
        .with_metadata(ToolMetadata::new().title("Echo").app(PAGE));
    let refresh = tool_fn(def("refresh"), |_args, _ctx| async move {
        Ok(json!({"refreshed": true}))
    })
    .with_metadata(
        ToolMetadata::new()
            .app(PAGE)
            .app_visibility(AppVisibility::App),
    );
    let supports = tool_fn(def("supports"), |_args, ctx: ToolContext| async move {
        Ok(json!({"apps": ctx.client_supports_apps()}))
    });
    Server::builder()
        .resource(page())
        .tool(echo)
        .tool(refresh)
        .tool(supports)
        .build()
        .expect("the apps server builds")
}

fn ui_capabilities() -> Value {
    json!({"extensions": {UI: {"mimeTypes": [MIME_TYPE]}}})
}

/// A tool result's output, as its text block carries it.
fn output(result: &Value) -> Value {
    let text = result["content"][0]["text"].as_str().unwrap_or("null");
    serde_json::from_str(text).unwrap_or(Value::Null)
}

fn listed<'a>(list: &'a Value, key: &str, field: &str, value: &str) -> &'a Value {
    list[key]
        .as_array()
        .and_then(|items| items.iter().find(|i| i[field] == value))
        .unwrap_or_else(|| panic!("{value} is not in {list}"))
}

#[tokio::test]
async fn a_page_is_listed_and_read_with_its_ui_meta_and_a_tool_links_it() {
    let server = server();
    let mut client = TestClient::model_context(&server, ui_capabilities()).await;
    let ui = json!({
        "csp": {"connectDomains": ["https://api.example.com"],
                "resourceDomains": ["https://*.cdn.example.com"]},
        "permissions": {"clipboardWrite": {}},
        "prefersBorder": true,
    });
    let resources = client.call("resources/list", None).await.unwrap();
    let listing = listed(&resources, "resources", "uri", PAGE);
    assert_eq!(listing["mimeType"], MIME_TYPE);
    assert_eq!(listing["_meta"]["ui"], ui, "{listing}");
    let read = client.read_resource(PAGE).await.unwrap();
    assert_eq!(read["mimeType"], MIME_TYPE);
    assert_eq!(read["text"], "<!DOCTYPE html><p>echo</p>");
    assert_eq!(
        read["_meta"]["ui"], ui,
        "the same on the read contents: {read}"
    );
    let tools = client.call("tools/list", None).await.unwrap();
    let echo = listed(&tools, "tools", "name", "echo");
    assert_eq!(echo["_meta"]["ui"], json!({"resourceUri": PAGE}), "{echo}");
    assert_eq!(
        echo["_meta"]["ui/resourceUri"], PAGE,
        "and the flat key of the first drafts"
    );
    // A tool only the page calls is still listed and served: the host,
    // which sees who calls, keeps it from the model.
    let refresh = listed(&tools, "tools", "name", "refresh");
    assert_eq!(refresh["_meta"]["ui"]["visibility"], json!(["app"]));
    let called = client.call_tool("refresh", json!({})).await.unwrap();
    assert_eq!(output(&called)["refreshed"], true, "{called}");
}

#[tokio::test]
async fn the_extension_is_declared_in_both_eras_and_mcp_v1_lists_no_page() {
    let server = server();
    let mut session = TestClient::connect_model_context(&server).await;
    let initialized = session
        .initialize_model_context(json!({
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }))
        .await;
    assert_eq!(
        initialized["capabilities"]["extensions"][UI],
        json!({}),
        "{initialized}"
    );
    let mut stateless = TestClient::connect_model_context(&server).await;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let discovered = stateless
        .call("server/discover", Some(json!({"_meta": meta})))
        .await
        .unwrap();
    assert_eq!(
        discovered["capabilities"]["extensions"][UI],
        json!({}),
        "{discovered}"
    );
    let mut v1 = TestClient::initialized(&server).await;
    let resources = v1.list_resources().await.unwrap();
    assert!(
        resources.iter().all(|r| r.mcp_id != PAGE),
        "MCP v1.0 has no apps: {resources:?}"
    );
}

#[tokio::test]
async fn a_tool_asks_whether_its_client_renders_apps_per_session_and_per_request() {
    let server = server();
    let supports = |reply: Value| output(&reply)["apps"].clone();
    let mut rendering = TestClient::model_context(&server, ui_capabilities()).await;
    assert_eq!(
        supports(rendering.call_tool("supports", json!({})).await.unwrap()),
        true
    );
    let mut plain = TestClient::model_context(&server, json!({})).await;
    assert_eq!(
        supports(plain.call_tool("supports", json!({})).await.unwrap()),
        false
    );
    // Another media type only, or `mimeTypes` that is no list, is not
    // apps; the app media type in another case or spacing is.
    for (mime_types, expected) in [
        (json!(["text/plain"]), false),
        (json!("text/plain"), false),
        (json!({}), false),
        (json!(["text/html"]), false),
        (json!(["text/html;profile=mcp-app;x=1"]), false),
        (json!(["TEXT/HTML; profile=mcp-app"]), true),
    ] {
        let declared = json!({"extensions": {UI: {"mimeTypes": mime_types}}});
        let mut client = TestClient::model_context(&server, declared).await;
        let said = supports(client.call_tool("supports", json!({})).await.unwrap());
        assert_eq!(said, expected, "{mime_types}");
    }
    // 2026-07-28: each request declares its own capabilities.
    let mut stateless = TestClient::connect_model_context(&server).await;
    for (capabilities, expected) in [(ui_capabilities(), true), (json!({}), false)] {
        let params = json!({"name": "supports", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        }});
        let reply = stateless.call("tools/call", Some(params)).await.unwrap();
        assert_eq!(supports(reply), expected);
    }
}

/// A revision before 2025-06-18 has no `_meta` on items to link a tool to
/// its page, nor `structuredContent` for the page to render: such a
/// session is not offered the extension, and its client renders no apps
/// whatever it declares.
#[tokio::test]
async fn a_session_before_2025_06_18_has_no_apps() {
    let server = server();
    for (version, apps) in [
        ("2025-03-26", false),
        ("2025-06-18", true),
        ("2025-11-25", true),
    ] {
        let mut session = TestClient::connect_model_context(&server).await;
        let initialized = session
            .initialize_model_context(json!({
                "protocolVersion": version, "capabilities": ui_capabilities(),
                "clientInfo": {"name": "t", "version": "1"},
            }))
            .await;
        let declared = &initialized["capabilities"]["extensions"][UI];
        assert_eq!(declared.is_object(), apps, "{version}: {initialized}");
        let called = session.call_tool("supports", json!({})).await.unwrap();
        let said =
            serde_json::from_str::<Value>(called["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(said["apps"], apps, "{version}: {called}");
    }
}

#[test]
fn build_refuses_a_page_a_host_could_not_render_and_a_link_to_no_page() {
    let refused = |builder: clawmcp::ServerBuilder| match builder.build() {
        Err(BuildError::InvalidApp { uri, problem }) => format!("{uri}: {problem}"),
        Err(other) => panic!("another error: {other}"),
        Ok(_) => panic!("built"),
    };
    let outside = AppResource::new("https://apps-test/p.html", "p", "d", "<p>x</p>");
    assert!(refused(Server::builder().resource(outside)).contains("ui://"));
    let bare = page().csp(Csp::new().connect("*"));
    assert!(refused(Server::builder().resource(bare)).contains("connectDomains"));
    let scheme_only = page().csp(Csp::new().resource("https:"));
    assert!(refused(Server::builder().resource(scheme_only)).contains("resourceDomains"));
    let wild_frame = page().csp(Csp::new().frame("https://*.example.com"));
    assert!(refused(Server::builder().resource(wild_frame)).contains("frameDomains"));
    let linked = tool_fn(def("echo"), |args, _ctx| async move { Ok(args) })
        .with_metadata(ToolMetadata::new().app("ui://apps-test/missing.html"));
    assert!(refused(Server::builder().tool(linked)).contains("missing.html"));
    // A linked resource that is not an app page is no page either.
    let text = clawmcp::TextResource::new(PAGE, "p", "d", "text/html", "<p>x</p>");
    let linked = tool_fn(def("echo"), |args, _ctx| async move { Ok(args) })
        .with_metadata(ToolMetadata::new().app(PAGE));
    assert!(refused(Server::builder().resource(text).tool(linked)).contains("AppResource"));
    // A resource of the app media type is a page only at a `ui://` URI,
    // whatever made it.
    let elsewhere = "https://apps-test/p.html";
    let text = clawmcp::TextResource::new(elsewhere, "p", "d", clawmcp::app::MIME_TYPE, "<p>x</p>");
    let linked = tool_fn(def("echo"), |args, _ctx| async move { Ok(args) })
        .with_metadata(ToolMetadata::new().app(elsewhere));
    assert!(refused(Server::builder().resource(text).tool(linked)).contains("ui://"));
}
