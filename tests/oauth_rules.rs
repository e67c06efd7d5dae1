//! The OAuth rules that need no authorization server (docs/oauth.md §3, §4,
//! §6), with a verifier of static tokens: scopes per item on every kind of
//! item and both dialects, scope hierarchies, lists that hide what a token
//! cannot use, the principal in resource and prompt handlers.

mod http_support;

use std::net::SocketAddr;

use clawmcp::completion::{Completion, complete_fn};
use clawmcp::definition::{PromptDefinition, Role, ToolDefinition};
use clawmcp::oauth::{AcceptedAudiences, OAuth, TokenVerifier, VerifyError};
use clawmcp::prompt::{PromptMessage, prompt_fn};
use clawmcp::resource::{ResourceInfo, resource_fn};
use clawmcp::template::resource_template;
use clawmcp::transport::HttpConfig;
use clawmcp::{Principal, Server, ServerBuilder, ToolError, async_trait, tool_fn};
use http_support::{Client, Reply, empty, full, request};
use hyper::Method;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// Tokens named by their scopes: `"mcp files:write"` is a token with those.
struct ScopesAreTokens;

#[async_trait]
impl TokenVerifier for ScopesAreTokens {
    async fn verify(
        &self,
        token: &str,
        audience: &AcceptedAudiences,
    ) -> Result<Principal, VerifyError> {
        assert!(
            !audience.accepted().is_empty(),
            "a verifier is told its audience"
        );
        match token {
            "bad" => Err(VerifyError::Invalid("a bad token".into())),
            "down" => Err(VerifyError::Unavailable("the issuer is down".into())),
            "nobody" => Ok(Principal::new("static").with_scopes(["mcp"])),
            "short" => Ok(Principal::new("static")
                .with_subject("brief")
                .with_scopes(["mcp"])
                .with_expiry(
                    std::time::SystemTime::now() + std::time::Duration::from_millis(1500),
                )),
            "expired" => Ok(Principal::new("static")
                .with_subject("late")
                .with_scopes(["mcp"])
                .with_expiry(std::time::SystemTime::now() - std::time::Duration::from_secs(1))),
            scopes => Ok(Principal::new("static")
                .with_subject(format!("subject of {scopes}"))
                .with_scopes(scopes.split('+'))),
        }
    }
}

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition {
        mcp_id: format!("mcp://rules/tools/{name}"),
        name: name.into(),
        description: format!("The {name} tool."),
        input_schema: json!({"type": "object"}),
        output_schema: json!({}),
    }
}

fn items() -> ServerBuilder {
    Server::builder()
        .name("rules")
        .tool(tool_fn(tool("echo"), |args, _ctx| async move {
            Ok::<_, ToolError>(args)
        }))
        .tool(tool_fn(tool("file-writer"), |_a, _c| async move {
            Ok::<_, ToolError>(json!("ok"))
        }))
        .resource(resource_fn(
            ResourceInfo::new(
                "mcp://rules/resources/secret",
                "secret",
                "A secret.",
                "text/plain",
            ),
            || async move {
                let who = Principal::current().and_then(|p| p.subject().map(str::to_owned));
                Ok::<_, ToolError>(format!("for {}", who.unwrap_or_default()))
            },
        ))
        .resource(resource_fn(
            ResourceInfo::new("mcp://rules/resources/open", "open", "Open.", "text/plain"),
            || async move { Ok::<_, ToolError>("anyone".to_owned()) },
        ))
        .resource_template(
            resource_template(
                "mcp://rules/files/{name}",
                "files",
                "Files.",
                "text/plain",
                |uri, _vars| async move { Ok(clawmcp::content::ResourceBody::Text(uri)) },
            )
            .expect("a valid template")
            .complete(
                "name",
                complete_fn(|value: String, _ctx| async move {
                    Ok(Completion::of([format!("{value}.txt")]))
                }),
            ),
        )
        .prompt(prompt_fn(
            PromptDefinition {
                mcp_id: "mcp://rules/prompts/plan".into(),
                name: "plan".into(),
                description: None,
                role: Role::User,
                content: "Plan.".into(),
            },
            [],
            |_args| async move {
                let who = Principal::current().and_then(|p| p.subject().map(str::to_owned));
                Ok(vec![PromptMessage::user(format!(
                    "plan for {}",
                    who.unwrap_or_default()
                ))])
            },
        ))
        .require_scopes("file-writer", ["files:write"])
        .require_scopes("mcp://rules/resources/secret", ["secrets"])
        .require_scopes("mcp://rules/files/{name}", ["files:read"])
        .require_scopes("plan", ["plans"])
}

struct Endpoint {
    addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

impl Endpoint {
    async fn start(adjust: impl FnOnce(ServerBuilder) -> ServerBuilder) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let addr = listener.local_addr().expect("its address");
        let oauth = OAuth::new(format!("http://{addr}/mcp"), "static", ScopesAreTokens)
            .required_scopes(["mcp"]);
        let server = adjust(items()).build().expect("the server builds");
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            server
                .serve_http_on(listener, HttpConfig::default().oauth(oauth), async {
                    let _ = stopped.await;
                })
                .await
        });
        Self { addr, _stop: stop }
    }

    async fn post(&self, token: &str, session: Option<&str>, message: &Value) -> Reply {
        let authorization = format!("Bearer {token}");
        let mut headers = vec![
            ("content-type", "application/json"),
            ("authorization", authorization.as_str()),
        ];
        // MCP v1.0 (`mcp/…`) is told apart by the missing Streamable HTTP
        // `Accept`.
        let v1 = message["method"]
            .as_str()
            .is_some_and(|m| m.starts_with("mcp/"));
        if !v1 {
            headers.push(("accept", "application/json, text/event-stream"));
        }
        if let Some(session) = session {
            headers.push(("mcp-session-id", session));
        }
        let mut client = Client::connect(self.addr).await;
        client
            .exchange(request(
                Method::POST,
                "/mcp",
                &headers,
                full(message.to_string()),
            ))
            .await
    }

    async fn open(&self, token: &str) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "rules", "version": "1"}}});
        let reply = self.post(token, None, &init).await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        let id = reply
            .header("mcp-session-id")
            .expect("a session")
            .to_owned();
        let ready = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(self.post(token, Some(&id), &ready).await.status, 202);
        id
    }
}

fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn scope_of(reply: &Reply) -> String {
    let header = reply
        .header("www-authenticate")
        .expect("a challenge")
        .to_owned();
    let start = header.find("scope=\"").expect("a scope") + 7;
    header[start..][..header[start..].find('"').expect("closed")].to_owned()
}

#[tokio::test]
async fn every_kind_of_item_is_refused_without_its_scopes_on_both_dialects() {
    let endpoint = Endpoint::start(|b| b).await;
    let session = endpoint.open("mcp").await;
    for (message, needed) in [
        (
            rpc(
                1,
                "tools/call",
                json!({"name": "file-writer", "arguments": {}}),
            ),
            "mcp files:write",
        ),
        (
            rpc(
                2,
                "resources/read",
                json!({"uri": "mcp://rules/resources/secret"}),
            ),
            "mcp secrets",
        ),
        (
            rpc(
                3,
                "resources/read",
                json!({"uri": "mcp://rules/files/a.txt"}),
            ),
            "mcp files:read",
        ),
        (rpc(4, "prompts/get", json!({"name": "plan"})), "mcp plans"),
    ] {
        let reply = endpoint.post("mcp", Some(&session), &message).await;
        assert_eq!(reply.status, 403, "{message}");
        assert_eq!(scope_of(&reply), needed, "{message}");
    }
    let execute = rpc(
        1,
        "mcp/executeTool",
        json!({"id": "mcp://rules/tools/file-writer", "arguments": {}}),
    );
    let reply = endpoint.post("mcp", None, &execute).await;
    assert_eq!(reply.status, 403);
    assert_eq!(scope_of(&reply), "mcp files:write");
    // With the scopes, each works, and resource and prompt handlers see
    // their principal.
    let all = "mcp+files:write+secrets+files:read+plans";
    let session = endpoint.open(all).await;
    let read = endpoint
        .post(
            all,
            Some(&session),
            &rpc(
                5,
                "resources/read",
                json!({"uri": "mcp://rules/resources/secret"}),
            ),
        )
        .await;
    assert_eq!(read.status, 200);
    assert_eq!(
        read.json()["result"]["contents"][0]["text"],
        format!("for subject of {all}")
    );
    let prompt = endpoint
        .post(
            all,
            Some(&session),
            &rpc(6, "prompts/get", json!({"name": "plan"})),
        )
        .await;
    assert_eq!(
        prompt.json()["result"]["messages"][0]["content"]["text"],
        format!("plan for subject of {all}")
    );
    let file = endpoint
        .post(
            all,
            Some(&session),
            &rpc(
                7,
                "resources/read",
                json!({"uri": "mcp://rules/files/a.txt"}),
            ),
        )
        .await;
    assert_eq!(file.status, 200);
}

#[tokio::test]
async fn mcp_v1_lists_with_content_leave_out_what_the_token_may_not_read() {
    let endpoint = Endpoint::start(|b| b).await;
    let prompts = endpoint
        .post("mcp", None, &rpc(1, "mcp/listPrompts", json!({})))
        .await;
    assert_eq!(
        prompts.json()["result"],
        json!([]),
        "the plan prompt needs `plans`"
    );
    let prompts = endpoint
        .post("mcp+plans", None, &rpc(1, "mcp/listPrompts", json!({})))
        .await;
    assert_eq!(prompts.json()["result"][0]["name"], "plan");
    let list = endpoint
        .post("mcp", None, &rpc(1, "mcp/listResources", json!({})))
        .await;
    let ids: Vec<String> = list.json()["result"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| r["mcpId"].as_str().expect("an id").to_owned())
        .collect();
    assert_eq!(ids, ["mcp://rules/resources/open"]);
}

#[tokio::test]
async fn a_refusal_served_by_the_session_reader_is_a_challenge_too() {
    let endpoint = Endpoint::start(|b| b).await;
    // Before `notifications/initialized` a session's requests go through
    // its reader, not beside it.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "rules", "version": "1"}}});
    let reply = endpoint.post("mcp", None, &init).await;
    let session = reply
        .header("mcp-session-id")
        .expect("a session")
        .to_owned();
    let call = rpc(
        1,
        "tools/call",
        json!({"name": "file-writer", "arguments": {}}),
    );
    let reply = endpoint.post("mcp", Some(&session), &call).await;
    assert_eq!(reply.status, 403, "{:?}", reply.body);
    assert_eq!(scope_of(&reply), "mcp files:write");
    let echo = rpc(2, "tools/call", json!({"name": "echo", "arguments": {}}));
    assert_eq!(
        endpoint.post("mcp", Some(&session), &echo).await.status,
        200
    );
}

#[tokio::test]
async fn subscribing_and_completing_need_what_reading_and_getting_need() {
    let endpoint = Endpoint::start(|b| b).await;
    let session = endpoint.open("mcp").await;
    let subscribe = rpc(
        1,
        "resources/subscribe",
        json!({"uri": "mcp://rules/resources/secret"}),
    );
    let reply = endpoint.post("mcp", Some(&session), &subscribe).await;
    assert_eq!(reply.status, 403);
    assert_eq!(scope_of(&reply), "mcp secrets");
    let complete = rpc(
        2,
        "completion/complete",
        json!({
        "ref": {"type": "ref/resource", "uri": "mcp://rules/files/{name}"},
        "argument": {"name": "name", "value": "a"}}),
    );
    let reply = endpoint.post("mcp", Some(&session), &complete).await;
    assert_eq!(reply.status, 403);
    assert_eq!(scope_of(&reply), "mcp files:read");
    let token = "mcp+secrets+files:read";
    let session = endpoint.open(token).await;
    assert_eq!(
        endpoint
            .post(token, Some(&session), &subscribe)
            .await
            .status,
        200
    );
    let reply = endpoint.post(token, Some(&session), &complete).await;
    assert_eq!(
        reply.json()["result"]["completion"]["values"],
        json!(["a.txt"])
    );
}

#[tokio::test]
async fn the_endpoints_required_scopes_follow_the_hierarchy_too() {
    let endpoint = Endpoint::start(|b| {
        b.scope_grants(|granted, required| granted.iter().any(|g| g == required || g == "admin"))
    })
    .await;
    let echo = rpc(
        1,
        "mcp/executeTool",
        json!({"id": "mcp://rules/tools/echo", "arguments": {}}),
    );
    assert_eq!(endpoint.post("admin", None, &echo).await.status, 200);
    assert_eq!(endpoint.post("other", None, &echo).await.status, 403);
}

#[tokio::test]
async fn a_token_that_names_nobody_cannot_own_a_session() {
    let endpoint = Endpoint::start(|b| b).await;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "rules", "version": "1"}}});
    let reply = endpoint.post("nobody", None, &init).await;
    assert_eq!(reply.status, 403);
    assert!(reply.header("mcp-session-id").is_none());
    // Single exchanges need no owner.
    let echo = rpc(
        1,
        "mcp/executeTool",
        json!({"id": "mcp://rules/tools/echo", "arguments": {}}),
    );
    assert_eq!(endpoint.post("nobody", None, &echo).await.status, 200);
}

#[tokio::test]
async fn past_its_tokens_expiry_a_request_is_refused() {
    let endpoint = Endpoint::start(|b| b).await;
    let echo = rpc(
        1,
        "mcp/executeTool",
        json!({"id": "mcp://rules/tools/echo", "arguments": {}}),
    );
    let reply = endpoint.post("expired", None, &echo).await;
    assert_eq!(reply.json()["error"]["code"], -32008, "{:?}", reply.body);
}

#[tokio::test]
async fn a_key_set_never_fetched_is_503_not_401_until_the_issuer_answers() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr = listener.local_addr().expect("its address");
    // Nothing listens at this issuer.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let issuer = format!("http://{}", dead.local_addr().expect("an address"));
    drop(dead);
    let oauth = OAuth::jwt(format!("http://{addr}/mcp"), issuer);
    let server = items().build().expect("the server builds");
    tokio::spawn(async move {
        server
            .serve_http_on(
                listener,
                HttpConfig::default().oauth(oauth),
                std::future::pending(),
            )
            .await
    });
    let token = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsifQ.eyJzdWIiOiJ4In0.c2ln";
    for attempt in ["first", "within the backoff"] {
        let authorization = format!("Bearer {token}");
        let mut client = Client::connect(addr).await;
        let reply = client
            .exchange(request(
                Method::POST,
                "/mcp",
                &[
                    ("content-type", "application/json"),
                    ("authorization", &authorization),
                ],
                full(rpc(1, "mcp/listTools", json!({})).to_string()),
            ))
            .await;
        assert_eq!(reply.status, 503, "{attempt}");
    }
}

#[tokio::test]
async fn a_scope_hierarchy_is_the_servers_hook() {
    let endpoint = Endpoint::start(|b| {
        b.scope_grants(|granted, required| {
            granted.iter().any(|g| {
                g == required
                    || g.strip_suffix('*')
                        .is_some_and(|prefix| required.starts_with(prefix))
            })
        })
    })
    .await;
    let call = rpc(
        1,
        "mcp/executeTool",
        json!({"id": "mcp://rules/tools/file-writer", "arguments": {}}),
    );
    assert_eq!(endpoint.post("mcp+files:*", None, &call).await.status, 200);
    assert_eq!(
        endpoint.post("mcp+secrets:*", None, &call).await.status,
        403
    );
}

#[tokio::test]
async fn lists_can_hide_what_a_token_cannot_use() {
    let names = |reply: &Reply, key: &str, field: &str| -> Vec<String> {
        reply.json()["result"][key]
            .as_array()
            .expect("a list")
            .iter()
            .map(|i| i[field].as_str().expect("a name").to_owned())
            .collect()
    };
    let hiding = Endpoint::start(|b| b.hide_unusable_items(true)).await;
    let session = hiding.open("mcp").await;
    let tools = hiding
        .post("mcp", Some(&session), &rpc(1, "tools/list", json!({})))
        .await;
    assert_eq!(names(&tools, "tools", "name"), ["echo"]);
    let prompts = hiding
        .post("mcp", Some(&session), &rpc(2, "prompts/list", json!({})))
        .await;
    assert!(names(&prompts, "prompts", "name").is_empty());
    let resources = hiding
        .post("mcp", Some(&session), &rpc(3, "resources/list", json!({})))
        .await;
    assert_eq!(
        names(&resources, "resources", "uri"),
        ["mcp://rules/resources/open"]
    );
    let templates = hiding
        .post(
            "mcp",
            Some(&session),
            &rpc(4, "resources/templates/list", json!({})),
        )
        .await;
    assert!(names(&templates, "resourceTemplates", "uriTemplate").is_empty());
    let v1 = hiding
        .post("mcp", None, &rpc(5, "mcp/listTools", json!({})))
        .await;
    let v1_names: Vec<&str> = v1.json()["result"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| if t["name"] == "echo" { "echo" } else { "other" })
        .collect();
    assert_eq!(v1_names, ["echo"]);
    let writer = hiding
        .post(
            "mcp+files:write",
            Some(&hiding.open("mcp+files:write").await),
            &rpc(6, "tools/list", json!({})),
        )
        .await;
    assert_eq!(names(&writer, "tools", "name"), ["echo", "file-writer"]);

    // By default every item is listed, and refused when used.
    let listing = Endpoint::start(|b| b).await;
    let session = listing.open("mcp").await;
    let tools = listing
        .post("mcp", Some(&session), &rpc(1, "tools/list", json!({})))
        .await;
    assert_eq!(names(&tools, "tools", "name"), ["echo", "file-writer"]);
}

#[tokio::test]
async fn refusals_by_the_verifier_are_401_or_503_never_a_pass() {
    let endpoint = Endpoint::start(|b| b).await;
    let call = rpc(
        1,
        "mcp/executeTool",
        json!({"id": "mcp://rules/tools/echo", "arguments": {}}),
    );
    let bad = endpoint.post("bad", None, &call).await;
    assert_eq!(bad.status, 401);
    assert!(
        bad.header("www-authenticate")
            .is_some_and(|h| h.contains("error=\"invalid_token\""))
    );
    let down = endpoint.post("down", None, &call).await;
    assert_eq!(down.status, 503);
    assert!(down.header("retry-after").is_some());
    assert_eq!(endpoint.post("mcp", None, &call).await.status, 200);
}

#[tokio::test]
async fn an_apps_own_routes_take_the_same_gate_and_get_the_principal() {
    use axum::{Extension, Router, routing::get};
    use clawmcp::transport::OAuthLayer;
    use std::sync::Arc;

    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr = listener.local_addr().expect("its address");
    let server = items().build().expect("the server builds");
    let oauth = OAuth::new(format!("http://{addr}/mcp"), "static", ScopesAreTokens)
        .required_scopes(["mcp"]);
    let app: Router = Router::new()
        .route(
            "/api/me",
            get(|Extension(who): Extension<Arc<Principal>>| async move {
                who.subject().unwrap_or("nobody").to_owned()
            }),
        )
        .layer(OAuthLayer::new(&server, oauth));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let get_me = |token: Option<&'static str>| async move {
        let authorization = token.map(|t| format!("Bearer {t}"));
        let mut headers = vec![];
        if let Some(authorization) = &authorization {
            headers.push(("authorization", authorization.as_str()));
        }
        let mut client = Client::connect(addr).await;
        client
            .exchange(request(Method::GET, "/api/me", &headers, full("")))
            .await
    };
    let me = get_me(Some("mcp")).await;
    assert_eq!(me.status, 200);
    assert_eq!(&me.body[..], b"subject of mcp");
    let none = get_me(None).await;
    assert_eq!(none.status, 401);
    assert!(
        none.header("www-authenticate")
            .is_some_and(|h| h.contains("resource_metadata="))
    );
    assert_eq!(
        get_me(Some("files:write")).await.status,
        403,
        "without the required mcp"
    );
    assert_eq!(get_me(Some("bad")).await.status, 401);
}

#[test]
fn scopes_must_name_an_item_and_be_scope_tokens() {
    let unknown = items().require_scopes("no-such-tool", ["x"]).build();
    assert!(matches!(
        unknown,
        Err(clawmcp::BuildError::UnknownItem { .. })
    ));
    let spaced = items().require_scopes("echo", ["two words"]).build();
    assert!(matches!(
        spaced,
        Err(clawmcp::BuildError::InvalidScope { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_lived_stream_ends_at_its_tokens_expiry_whatever_the_verifier() {
    // docs/oauth.md §3: a GET stream opened with a token that expires
    // (this verifier remembers its answers until then, as a JWT verifier
    // does) ends at that expiry, with nothing asked of the issuer.
    use http_body_util::BodyExt;
    let endpoint = Endpoint::start(|b| b).await;
    let session = endpoint.open("short").await;
    let mut client = Client::connect(endpoint.addr).await;
    let stream = client
        .send(request(
            Method::GET,
            "/mcp",
            &[
                ("accept", "text/event-stream"),
                ("mcp-session-id", &session),
                ("authorization", "Bearer short"),
            ],
            empty(),
        ))
        .await;
    assert_eq!(stream.status(), 200);
    let ended = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        stream.into_body().collect(),
    )
    .await;
    assert!(ended.is_ok(), "the GET stream ends at its token's expiry");
}
