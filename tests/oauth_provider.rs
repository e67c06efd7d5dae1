//! OAuth against a real authorization server: npm `oidc-provider` on
//! loopback (tests/oauth/provider, started by each test; it needs Node.js
//! and npm, and fails — never skips — without them). Each test names the
//! rule of docs/oauth.md it proves.

mod http_support;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use clawmcp::definition::ToolDefinition;
use clawmcp::oauth::{IntrospectionVerifier, JwtVerifier, OAuth};
use clawmcp::transport::HttpConfig;
use clawmcp::{Principal, Server, ToolError, tool_fn};
use http_support::{Client, Lines, Reply, channel_body, empty, full, head, request};
use hyper::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpListener;
use tokio::process::{Child, Command};
use tokio::sync::oneshot;
use tokio::time::timeout;

/// The first start may install Node 22 and the provider's packages.
const PROVIDER_START: Duration = Duration::from_secs(180);

// --------------------------------------------------------------- provider --

/// A running oidc-provider, stopped when dropped.
struct Provider {
    child: Child,
    issuer: String,
    addr: SocketAddr,
}

impl Provider {
    /// Starts the provider on `port` (0: any) with its keys in `keys`.
    async fn start(port: u16, keys: Option<&Path>, rotate: bool) -> Self {
        let mut args = vec!["--port".to_owned(), port.to_string()];
        if let Some(keys) = keys {
            args.extend(["--keys".to_owned(), keys.display().to_string()]);
        }
        if rotate {
            args.push("--rotate".to_owned());
        }
        Self::start_with(&args).await
    }

    /// Starts the provider with these arguments (`--port` among them).
    async fn start_with(args: &[String]) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oauth/provider/start.sh");
        let mut command = Command::new(script);
        command.args(args);
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("tests/oauth/provider/start.sh starts (Node.js and npm are needed)");
        let stdout = child.stdout.take().expect("the provider's stdout");
        let mut lines = BufReader::new(stdout).lines();
        let line = timeout(PROVIDER_START, lines.next_line())
            .await
            .expect("the provider says READY in time")
            .expect("the provider's stdout is readable")
            .expect("the provider says READY before it exits");
        let issuer = line
            .strip_prefix("READY ")
            .unwrap_or_else(|| panic!("the provider's first line is READY, not {line:?}"))
            .to_owned();
        let addr = issuer
            .strip_prefix("http://")
            .and_then(|a| a.parse().ok())
            .expect("the issuer is http://127.0.0.1:PORT");
        Self {
            child,
            issuer,
            addr,
        }
    }

    async fn stop(mut self) {
        let _ = self.child.kill().await;
    }

    /// A client-credentials token of `client` for `resource`.
    async fn token(&self, client: &str, scope: &str, resource: &str) -> String {
        let answer = self.token_answer(client, scope, resource).await;
        assert_eq!(
            answer.status,
            200,
            "token: {}",
            String::from_utf8_lossy(&answer.body)
        );
        answer.json()["access_token"]
            .as_str()
            .expect("an access token")
            .to_owned()
    }

    async fn token_answer(&self, client: &str, scope: &str, resource: &str) -> Reply {
        let form = format!(
            "grant_type=client_credentials&scope={}&resource={}",
            enc(scope),
            enc(resource)
        );
        self.post_form("/token", client, form).await
    }

    async fn revoke(&self, client: &str, token: &str) {
        let reply = self
            .post_form("/token/revocation", client, format!("token={}", enc(token)))
            .await;
        assert_eq!(reply.status, 200, "revocation");
    }

    async fn post_form(&self, path: &str, client: &str, form: String) -> Reply {
        let basic =
            base64::engine::general_purpose::STANDARD.encode(format!("{client}:{client}-secret"));
        let authorization = format!("Basic {basic}");
        let mut http = Client::connect(self.addr).await;
        http.exchange(request(
            Method::POST,
            path,
            &[
                ("content-type", "application/x-www-form-urlencoded"),
                ("authorization", &authorization),
            ],
            full(form),
        ))
        .await
    }

    async fn jwks(&self) -> Value {
        let mut http = Client::connect(self.addr).await;
        let metadata = http
            .exchange(request(
                Method::GET,
                "/.well-known/openid-configuration",
                &[],
                full(""),
            ))
            .await
            .json();
        let jwks_uri = metadata["jwks_uri"].as_str().expect("jwks_uri").to_owned();
        let path = jwks_uri
            .splitn(4, '/')
            .nth(3)
            .map(|p| format!("/{p}"))
            .expect("a path");
        http.exchange(request(Method::GET, &path, &[], full("")))
            .await
            .json()
    }
}

fn enc(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A free loopback port (for a provider restarted on the same issuer URL).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

// ----------------------------------------------------------------- server --

/// The MCP server under test: `echo`, `whoami` (the principal and a header
/// as the tool sees them) and `file-writer` (which also needs
/// `files:write`), behind OAuth with scope `mcp` for every request.
struct McpServer {
    addr: SocketAddr,
    resource: String,
    _stop: oneshot::Sender<()>,
}

impl McpServer {
    async fn start(make: impl FnOnce(String) -> OAuth) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let addr = listener.local_addr().expect("its address");
        let resource = format!("http://{addr}/mcp");
        let oauth = make(resource.clone()).required_scopes(["mcp"]);
        let server = items().build().expect("the server builds");
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            server
                .serve_http_on(listener, HttpConfig::default().oauth(oauth), async {
                    let _ = stopped.await;
                })
                .await
        });
        Self {
            addr,
            resource,
            _stop: stop,
        }
    }

    async fn jwt(provider: &Provider) -> Self {
        let issuer = provider.issuer.clone();
        Self::start(|resource| {
            let verifier = JwtVerifier::new(issuer.clone())
                .leeway(Duration::ZERO)
                .min_refresh_interval(Duration::from_millis(500));
            OAuth::new(resource, issuer, verifier)
        })
        .await
    }

    /// One request with `token` (if any).
    async fn send(
        &self,
        method: Method,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Reply {
        let authorization = token.map(|t| format!("Bearer {t}"));
        let mut all: Vec<(&str, &str)> = headers.to_vec();
        if let Some(authorization) = &authorization {
            all.push(("authorization", authorization));
        }
        if body.is_some() {
            all.push(("content-type", "application/json"));
        }
        let body = body.map_or_else(|| full(""), |b| full(serde_json::to_vec(b).expect("JSON")));
        let mut client = Client::connect(self.addr).await;
        client.exchange(request(method, "/mcp", &all, body)).await
    }

    /// An MCP v1.0 single exchange.
    async fn v1(&self, token: Option<&str>, message: &Value) -> Reply {
        self.send(Method::POST, token, &[], Some(message)).await
    }

    /// A Model Context Protocol POST in `session` (if any).
    async fn mc(&self, token: &str, session: Option<&str>, message: &Value) -> Reply {
        let mut headers = vec![("accept", "application/json, text/event-stream")];
        if let Some(session) = session {
            headers.push(("mcp-session-id", session));
        }
        self.send(Method::POST, Some(token), &headers, Some(message))
            .await
    }

    /// Opens a Model Context Protocol session with `token`: its id.
    async fn open(&self, token: &str) -> String {
        let reply = self
            .mc(
                token,
                None,
                &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "oauth-test", "version": "1"}}}),
            )
            .await;
        assert_eq!(reply.status, 200, "initialize: {:?}", reply.body);
        let id = reply
            .header("mcp-session-id")
            .expect("a session id")
            .to_owned();
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(self.mc(token, Some(&id), &note).await.status, 202);
        id
    }
}

/// A provider that keeps its keys in a file (so that it can restart on
/// the same issuer URL with a new key), a server trusting its JWTs through
/// a verifier shared with the test (to count its key-set fetches), and two
/// tokens of its first key: `first`, verified (the one fetch so far), and
/// `spare`, never sent.
struct KeyedIssuer {
    keys: tempfile::TempDir,
    port: u16,
    provider: Provider,
    verifier: std::sync::Arc<JwtVerifier>,
    server: McpServer,
    first: String,
    spare: String,
}

impl KeyedIssuer {
    /// The verifier is `JwtVerifier::new(issuer)` as `configure` sets it.
    async fn start(configure: impl FnOnce(JwtVerifier) -> JwtVerifier) -> Self {
        let keys = tempfile::tempdir().expect("a temp dir");
        let port = free_port();
        let provider = Provider::start(port, Some(&keys.path().join("keys.json")), false).await;
        let issuer = provider.issuer.clone();
        let verifier = std::sync::Arc::new(configure(JwtVerifier::new(issuer.clone())));
        let shared = verifier.clone();
        let server = McpServer::start(|resource| OAuth::new(resource, issuer, shared)).await;
        let first = provider.token("mcp-jwt", "mcp", &server.resource).await;
        let spare = provider.token("mcp-jwt", "mcp", &server.resource).await;
        assert_eq!(server.v1(Some(&first), &echo()).await.status, 200);
        assert_eq!(verifier.key_set_fetches(), 1);
        Self {
            keys,
            port,
            provider,
            verifier,
            server,
            first,
            spare,
        }
    }

    /// The issuer retires its key: it restarts with only a new one.
    async fn rotated(self) -> Self {
        let Self {
            keys,
            port,
            provider,
            verifier,
            server,
            first,
            spare,
        } = self;
        provider.stop().await;
        let provider = Provider::start(port, Some(&keys.path().join("keys.json")), true).await;
        Self {
            keys,
            port,
            provider,
            verifier,
            server,
            first,
            spare,
        }
    }
}

/// MCP v1.0's call of `echo`.
fn echo() -> Value {
    execute(1, "echo", json!({"message": "x"}))
}

fn definition(name: &str, input: Value) -> ToolDefinition {
    ToolDefinition {
        mcp_id: format!("mcp://oauth-test/tools/{name}"),
        name: name.into(),
        description: format!("The {name} tool."),
        input_schema: json!({"type": "object", "properties": input}),
        output_schema: json!({"type": "object"}),
    }
}

fn items() -> clawmcp::ServerBuilder {
    Server::builder()
        .name("oauth-test")
        .tool(tool_fn(
            definition("echo", json!({"message": {"type": "string"}})),
            |args, _ctx| async move { Ok::<_, ToolError>(json!({"message": args["message"]})) },
        ))
        .tool(tool_fn(
            definition("whoami", json!({})),
            |_args, ctx| async move {
                let principal: Option<&Principal> = ctx.principal();
                let agent = ctx
                    .http_headers()
                    .and_then(|h| h.get("x-test-agent"))
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                Ok::<_, ToolError>(json!({
                    "subject": principal.and_then(Principal::subject),
                    "client": principal.and_then(Principal::client_id),
                    "scopes": principal.map(Principal::scopes),
                    "agent": agent,
                    "authorization_seen": ctx.http_headers().is_some_and(|h| {
                        h.contains_key("authorization")
                            || h.get("Authorization").is_some()
                            || h.iter().any(|(name, _)| name == "authorization")
                    }),
                }))
            },
        ))
        .tool(tool_fn(
            definition("file-writer", json!({"path": {"type": "string"}})),
            |_args, _ctx| async move { Ok::<_, ToolError>(json!({"written": true})) },
        ))
        .require_scopes("file-writer", ["files:write"])
}

fn execute(id: i64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "mcp/executeTool",
           "params": {"id": format!("mcp://oauth-test/tools/{tool}"), "arguments": arguments}})
}

fn call(id: i64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

fn challenge(reply: &Reply) -> String {
    reply
        .header("www-authenticate")
        .unwrap_or_else(|| panic!("a challenge on {}: {:?}", reply.status, reply.body))
        .to_owned()
}

/// A token's header and payload, changed by `edit`, with its signature.
fn forged(token: &str, edit: impl FnOnce(&mut Value, &mut Value)) -> String {
    let mut parts = token.split('.');
    let decode = |part: Option<&str>| -> Value {
        serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(part.expect("a JWT part"))
                .expect("base64url"),
        )
        .expect("JSON")
    };
    let mut header = decode(parts.next());
    let mut payload = decode(parts.next());
    let signature = parts.next().expect("a signature");
    edit(&mut header, &mut payload);
    let encode = |v: &Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).expect("JSON"));
    format!("{}.{}.{signature}", encode(&header), encode(&payload))
}

// ------------------------------------------------------------------ tests --

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_jwts_serve_both_dialects_and_tools_see_their_principal() {
    let provider = Provider::start(0, None, false).await;
    let server = McpServer::jwt(&provider).await;
    let token = provider
        .token("mcp-jwt", "mcp files:write", &server.resource)
        .await;

    let reply = server
        .v1(Some(&token), &execute(1, "echo", json!({"message": "hi"})))
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["result"]["output"], json!({"message": "hi"}));

    let session = server.open(&token).await;
    let reply = server
        .send(
            Method::POST,
            Some(&token),
            &[
                ("accept", "application/json, text/event-stream"),
                ("mcp-session-id", &session),
                ("x-test-agent", "tester/1"),
            ],
            Some(&call(2, "whoami", json!({}))),
        )
        .await;
    assert_eq!(reply.status, 200);
    let who = &reply.json()["result"]["structuredContent"];
    assert_eq!(who["subject"], "mcp-jwt");
    assert_eq!(who["client"], "mcp-jwt");
    assert_eq!(who["scopes"], json!(["mcp", "files:write"]));
    assert_eq!(
        who["agent"], "tester/1",
        "the POST's headers reach the tool"
    );
    assert_eq!(who["authorization_seen"], false, "but not its token");
    let reply = server
        .mc(
            &token,
            Some(&session),
            &call(3, "file-writer", json!({"path": "a"})),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    provider.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_without_a_token_get_a_challenge_without_an_error_on_every_method() {
    let provider = Provider::start(0, None, false).await;
    let server = McpServer::jwt(&provider).await;
    let metadata = format!(
        "http://{}/.well-known/oauth-protected-resource/mcp",
        server.addr
    );
    let expected = format!("Bearer resource_metadata=\"{metadata}\", scope=\"mcp\"");
    for (method, headers) in [
        (Method::POST, vec![]),
        (
            Method::GET,
            vec![("accept", "text/event-stream"), ("mcp-session-id", "x")],
        ),
        (Method::DELETE, vec![("mcp-session-id", "x")]),
    ] {
        let body = (method == Method::POST).then(|| execute(1, "echo", json!({"message": "x"})));
        let reply = server
            .send(method.clone(), None, &headers, body.as_ref())
            .await;
        assert_eq!(reply.status, 401, "{method}");
        assert_eq!(challenge(&reply), expected, "{method}");
        assert_eq!(
            reply.header("access-control-expose-headers"),
            Some("WWW-Authenticate")
        );
    }
    // A browser page of an allowed origin can read the challenge.
    let reply = server
        .send(
            Method::POST,
            None,
            &[("origin", "http://localhost:6274")],
            Some(&execute(1, "echo", json!({}))),
        )
        .await;
    assert_eq!(reply.status, 401);
    assert_eq!(
        reply.header("access-control-allow-origin"),
        Some("http://localhost:6274")
    );
    assert_eq!(
        reply.headers.get_all("vary").iter().count(),
        1,
        "Vary: Origin once"
    );
    provider.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tokens_are_invalid_tokens_whatever_is_wrong_with_them() {
    let provider = Provider::start(0, None, false).await;
    let other = Provider::start(0, None, false).await;
    let server = McpServer::jwt(&provider).await;
    let good = provider.token("mcp-jwt", "mcp", &server.resource).await;
    let short = provider.token("mcp-short", "mcp", &server.resource).await;
    let elsewhere = provider
        .token("mcp-jwt", "mcp", "http://other.example/mcp")
        .await;
    let foreign = other.token("mcp-jwt", "mcp", &server.resource).await;
    let (head, rest) = good.rsplit_once('.').expect("a JWT");
    let flipped = {
        let mut signature = rest.to_owned().into_bytes();
        signature[5] = if signature[5] == b'A' { b'B' } else { b'A' };
        format!("{head}.{}", String::from_utf8(signature).expect("ASCII"))
    };
    let alg_none = {
        let token = forged(&good, |header, _| header["alg"] = json!("none"));
        let (unsigned, _) = token.rsplit_once('.').expect("a JWT");
        format!("{unsigned}.")
    };
    // HS/RS confusion: the token signed with HS256, keyed by the issuer's
    // public key set (what an attacker has).
    let confused = {
        let jwks = provider.jwks().await;
        let kid = jwks["keys"][0]["kid"].as_str().expect("a kid").to_owned();
        let claims = forged(&good, |_, _| {})
            .split('.')
            .nth(1)
            .map(str::to_owned)
            .expect("claims");
        let claims: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).expect("b64")).expect("JSON");
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        header.kid = Some(kid);
        let key = jsonwebtoken::EncodingKey::from_secret(jwks.to_string().as_bytes())
            .expect("an HMAC key");
        jsonwebtoken::encode(&header, &claims, &key).expect("an HS256 token")
    };
    let widened = forged(&good, |_, payload| {
        payload["scope"] = json!("mcp files:write")
    });
    let long_kid = forged(&good, |header, _| header["kid"] = json!("k".repeat(8192)));
    let too_long = format!("{good}{}", "A".repeat(16 << 10));
    // The short token lives 2 s and the verifier allows no leeway.
    // (`exp` is in whole seconds.)
    tokio::time::sleep(Duration::from_millis(3200)).await;

    assert_eq!(
        server
            .v1(Some(&good), &execute(1, "echo", json!({"message": "ok"})))
            .await
            .status,
        200
    );
    for (what, token) in [
        ("expired", short.as_str()),
        ("for another audience", &elsewhere),
        ("from another issuer", &foreign),
        ("with a bad signature", &flipped),
        ("with alg none", &alg_none),
        ("HS256 keyed by the public key set", &confused),
        ("with claims changed after signing", &widened),
        ("not a JWT", "opaque-garbage"),
        ("naming an 8 KiB kid", &long_kid),
        ("longer than 16 KiB", &too_long),
    ] {
        let reply = server
            .v1(Some(token), &execute(1, "echo", json!({"message": "x"})))
            .await;
        assert_eq!(reply.status, 401, "a token {what}");
        let header = challenge(&reply);
        assert!(
            header.contains("error=\"invalid_token\""),
            "a token {what}: {header}"
        );
        assert!(
            header.contains("resource_metadata=\""),
            "a token {what}: {header}"
        );
        assert!(
            header.len() < 1024 && reply.body.len() < 1024,
            "a token {what}: what the client sent is not said back at length"
        );
    }
    provider.stop().await;
    other.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_scopes_get_403_naming_every_scope_needed_and_echo_still_works() {
    let provider = Provider::start(0, None, false).await;
    let server = McpServer::jwt(&provider).await;
    let reader = provider.token("mcp-reader", "mcp", &server.resource).await;
    let no_mcp = provider
        .token("mcp-jwt", "files:write", &server.resource)
        .await;

    assert_eq!(
        server
            .v1(Some(&reader), &execute(1, "echo", json!({"message": "x"})))
            .await
            .status,
        200
    );
    let expected = "scope=\"mcp files:write\", error=\"insufficient_scope\"";
    let reply = server
        .v1(
            Some(&reader),
            &execute(2, "file-writer", json!({"path": "a"})),
        )
        .await;
    assert_eq!(reply.status, 403, "MCP v1.0 single exchange");
    assert!(
        challenge(&reply).contains(expected),
        "{}",
        challenge(&reply)
    );

    let session = server.open(&reader).await;
    let reply = server
        .mc(
            &reader,
            Some(&session),
            &call(3, "echo", json!({"message": "x"})),
        )
        .await;
    assert_eq!(reply.status, 200);
    let reply = server
        .mc(
            &reader,
            Some(&session),
            &call(4, "file-writer", json!({"path": "a"})),
        )
        .await;
    assert_eq!(reply.status, 403, "Model Context Protocol POST");
    assert!(
        challenge(&reply).contains(expected),
        "{}",
        challenge(&reply)
    );
    // The session goes on.
    let reply = server
        .mc(
            &reader,
            Some(&session),
            &call(5, "echo", json!({"message": "y"})),
        )
        .await;
    assert_eq!(reply.status, 200);

    // Every request needs `mcp`, whatever its item.
    let reply = server
        .v1(Some(&no_mcp), &execute(6, "echo", json!({"message": "x"})))
        .await;
    assert_eq!(reply.status, 403);
    assert!(
        challenge(&reply).contains("scope=\"mcp\", error=\"insufficient_scope\""),
        "{}",
        challenge(&reply)
    );

    // Where a response has begun (an MCP v1.0 streaming session), the
    // refusal is a JSON-RPC error in the body.
    let body = [
        http_support::initialize(),
        http_support::initialized(),
        execute(2, "file-writer", json!({"path": "a"})),
    ]
    .iter()
    .map(|m| m.to_string())
    .collect::<Vec<_>>()
    .join("\n");
    let authorization = format!("Bearer {reader}");
    let mut client = Client::connect(server.addr).await;
    let reply = client
        .exchange(request(
            Method::POST,
            "/mcp",
            &[
                ("content-type", "application/json"),
                ("authorization", &authorization),
            ],
            full(body),
        ))
        .await;
    assert_eq!(reply.status, 200);
    let text = String::from_utf8_lossy(&reply.body);
    let refusal: Value = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .find(|m: &Value| m["id"] == 2)
        .unwrap_or_else(|| panic!("a reply to the write in {text:?}"));
    assert_eq!(refusal["error"]["code"], -32007, "{refusal}");
    assert!(
        refusal["error"]["data"]
            .as_str()
            .is_some_and(|d| d.contains("files:write"))
    );
    provider.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_refused_to_another_principal() {
    let provider = Provider::start(0, None, false).await;
    let server = McpServer::jwt(&provider).await;
    let mine = provider.token("mcp-jwt", "mcp", &server.resource).await;
    let theirs = provider.token("mcp-other", "mcp", &server.resource).await;
    let session = server.open(&mine).await;
    let reply = server
        .mc(
            &theirs,
            Some(&session),
            &call(2, "echo", json!({"message": "x"})),
        )
        .await;
    assert_eq!(reply.status, 404, "POST");
    let get = [
        ("accept", "text/event-stream"),
        ("mcp-session-id", session.as_str()),
    ];
    assert_eq!(
        server
            .send(Method::GET, Some(&theirs), &get, None)
            .await
            .status,
        404,
        "GET"
    );
    let delete = [("mcp-session-id", session.as_str())];
    assert_eq!(
        server
            .send(Method::DELETE, Some(&theirs), &delete, None)
            .await
            .status,
        404,
        "DELETE"
    );
    // The session is still the owner's, and every request is verified: a
    // new token of the same principal works, no token does not.
    let again = provider.token("mcp-jwt", "mcp", &server.resource).await;
    let reply = server
        .mc(
            &again,
            Some(&session),
            &call(3, "echo", json!({"message": "x"})),
        )
        .await;
    assert_eq!(reply.status, 200);
    let reply = server
        .send(
            Method::POST,
            None,
            &[("mcp-session-id", &session)],
            Some(&call(4, "echo", json!({}))),
        )
        .await;
    assert_eq!(reply.status, 401);
    assert_eq!(
        server
            .send(Method::DELETE, Some(&mine), &delete, None)
            .await
            .status,
        204
    );
    provider.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_rotate_unknown_kids_are_bounded_and_cached_keys_outlive_the_issuer() {
    let issuer = KeyedIssuer::start(|v| v.min_refresh_interval(Duration::from_millis(500))).await;
    let echo = echo();

    // A flood of tokens naming keys the issuer never had.
    let mut flood = Vec::new();
    for i in 0..64 {
        let token = forged(&issuer.first, |header, _| {
            header["kid"] = json!(format!("unknown-{i}"))
        });
        let server_addr = issuer.server.addr;
        flood.push(tokio::spawn(async move {
            let authorization = format!("Bearer {token}");
            let mut client = Client::connect(server_addr).await;
            client
                .exchange(request(
                    Method::POST,
                    "/mcp",
                    &[
                        ("content-type", "application/json"),
                        ("authorization", &authorization),
                    ],
                    full(execute(1, "echo", json!({"message": "x"})).to_string()),
                ))
                .await
                .status
        }));
    }
    for request in flood {
        assert_eq!(request.await.expect("no panic"), 401);
    }
    assert!(
        issuer.verifier.key_set_fetches() <= 2,
        "64 unknown kids fetched the key set {} times",
        issuer.verifier.key_set_fetches()
    );

    // Rotation: the provider restarts with only a new key.
    let issuer = issuer.rotated().await;
    let (server, verifier) = (&issuer.server, &issuer.verifier);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let rotated = issuer
        .provider
        .token("mcp-jwt", "mcp", &server.resource)
        .await;
    let before = verifier.key_set_fetches();
    assert_eq!(
        server.v1(Some(&rotated), &echo).await.status,
        200,
        "a token of the new key"
    );
    assert_eq!(
        verifier.key_set_fetches(),
        before + 1,
        "one refresh for the new kid"
    );
    // A token of the old key, never seen before: its key is gone.
    assert_eq!(server.v1(Some(&issuer.spare), &echo).await.status, 401);

    // The issuer goes down: the keys fetched keep verifying.
    let fresh = issuer
        .provider
        .token("mcp-jwt", "mcp", &server.resource)
        .await;
    let KeyedIssuer {
        provider, server, ..
    } = issuer;
    provider.stop().await;
    assert_eq!(
        server.v1(Some(&fresh), &echo).await.status,
        200,
        "cached keys while the issuer is down"
    );
}

/// docs/oauth.md §5: a key the issuer removed from its set stops
/// verifying once the set fetched is older than `max_key_age`, though no
/// token names a new key; while the issuer is down, the keys fetched last
/// keep verifying, however old.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_the_issuer_removed_stops_verifying_once_the_set_is_old() {
    let issuer = KeyedIssuer::start(|v| {
        v.min_refresh_interval(Duration::from_millis(200))
            .max_key_age(Duration::from_millis(500))
    })
    .await;
    let echo = echo();

    // The issuer retires its key: it restarts with only a new one, and no
    // token of the new key is sent.
    let issuer = issuer.rotated().await;
    let (server, verifier) = (&issuer.server, &issuer.verifier);
    let rotated = issuer
        .provider
        .token("mcp-jwt", "mcp", &server.resource)
        .await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(
        server.v1(Some(&issuer.spare), &echo).await.status,
        401,
        "a token of the removed key, once the set is old"
    );
    assert_eq!(verifier.key_set_fetches(), 2);
    assert_eq!(server.v1(Some(&rotated), &echo).await.status, 200);
    assert_eq!(
        verifier.key_set_fetches(),
        2,
        "the new key came with the set"
    );

    // The issuer goes down: the set grows old, and its keys still verify.
    let fresh = issuer
        .provider
        .token("mcp-jwt", "mcp", &server.resource)
        .await;
    let KeyedIssuer {
        provider,
        server,
        verifier,
        ..
    } = issuer;
    provider.stop().await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(
        server.v1(Some(&fresh), &echo).await.status,
        200,
        "an old set while the issuer is down"
    );
    assert_eq!(verifier.key_set_fetches(), 3, "the fetch was tried");
}

/// docs/oauth.md §5: renewing an old key set is not undone by the request
/// that began it going away (its client disconnected): the fetch runs on,
/// and the next token meets the renewed set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_set_renewal_outlives_the_request_that_began_it() {
    use clawmcp::oauth::{AcceptedAudiences, TokenVerifier};
    let issuer = KeyedIssuer::start(|v| {
        v.min_refresh_interval(Duration::from_secs(2))
            .max_key_age(Duration::from_millis(300))
    })
    .await;
    let issuer = issuer.rotated().await;
    let (server, verifier) = (&issuer.server, &issuer.verifier);
    tokio::time::sleep(Duration::from_millis(2100)).await;

    // The request that finds the set old goes at once; the next may not
    // fetch for 2 s.
    let audience = AcceptedAudiences::new([server.resource.clone()]);
    let gone = tokio::time::timeout(
        Duration::from_millis(1),
        verifier.verify(&issuer.spare, &audience),
    );
    assert!(gone.await.is_err(), "the verification was cut short");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(verifier.key_set_fetches(), 2);
    assert_eq!(
        server.v1(Some(&issuer.spare), &echo()).await.status,
        401,
        "the set renewed without its asker lacks the removed key"
    );
    assert_eq!(verifier.key_set_fetches(), 2, "no fetch more");
    issuer.provider.stop().await;
}

/// docs/oauth.md §5: a token's audience is compared with the resource as
/// a canonical URL: one written with a trailing `/` (as a client that
/// reads the resource with a URL parser may ask for it) is for this
/// server; one for another path is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_for_the_resource_written_with_a_trailing_slash_is_for_this_server() {
    let provider = Provider::start(0, None, false).await;
    let server = McpServer::jwt(&provider).await;
    let echo = execute(1, "echo", json!({"message": "x"}));
    let slashed = format!("{}/", server.resource);
    let token = provider.token("mcp-jwt", "mcp", &slashed).await;
    assert_eq!(server.v1(Some(&token), &echo).await.status, 200);
    let other = format!("{}/other", server.resource);
    let token = provider.token("mcp-jwt", "mcp", &other).await;
    assert_eq!(server.v1(Some(&token), &echo).await.status, 401);
    provider.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn introspected_tokens_work_until_revoked_and_fail_closed_when_the_issuer_is_down() {
    let provider = Provider::start(0, None, false).await;
    let issuer = provider.issuer.clone();
    let server = McpServer::start(|resource| {
        let verifier =
            IntrospectionVerifier::new(issuer.clone(), "mcp-server", "mcp-server-secret")
                .cache_answers_for(Duration::ZERO);
        OAuth::new(resource, issuer, verifier)
    })
    .await;
    let echo = execute(1, "echo", json!({"message": "x"}));
    let opaque = provider
        .token("mcp-opaque", "mcp files:write", &server.resource)
        .await;
    assert_eq!(opaque.split('.').count(), 1, "an opaque token");
    assert_eq!(server.v1(Some(&opaque), &echo).await.status, 200);
    let writer = execute(2, "file-writer", json!({"path": "a"}));
    assert_eq!(
        server.v1(Some(&opaque), &writer).await.status,
        200,
        "its scopes come from introspection"
    );
    // A token the issuer will not introspect (oidc-provider answers 400
    // for a JWT): refused, and the issuer's endpoint is not told.
    let jwt = provider.token("mcp-jwt", "mcp", &server.resource).await;
    let refused = server.v1(Some(&jwt), &echo).await;
    assert_eq!(refused.status, 401);
    let host = provider.addr.to_string();
    assert!(
        !challenge(&refused).contains(&host)
            && !String::from_utf8_lossy(&refused.body).contains(&host),
        "{}",
        challenge(&refused)
    );
    let elsewhere = provider
        .token("mcp-opaque", "mcp", "http://other.example/mcp")
        .await;
    assert_eq!(
        server.v1(Some(&elsewhere), &echo).await.status,
        401,
        "another audience"
    );

    provider.revoke("mcp-opaque", &opaque).await;
    let reply = server.v1(Some(&opaque), &echo).await;
    assert_eq!(reply.status, 401, "a revoked token");
    assert!(challenge(&reply).contains("error=\"invalid_token\""));

    let live = provider.token("mcp-opaque", "mcp", &server.resource).await;
    provider.stop().await;
    let reply = server.v1(Some(&live), &echo).await;
    assert_eq!(
        reply.status, 503,
        "the issuer is down: refused, never let through"
    );
}

/// Reads `body` to its end within `wait`: whether it ended.
async fn ends_within(body: hyper::body::Incoming, wait: Duration) -> bool {
    use http_body_util::BodyExt;
    timeout(wait, body.collect()).await.is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_ends_the_long_lived_streams_it_opened() {
    // docs/oauth.md §3: with introspection, a stream's token is verified
    // again as often as answers are remembered; once it is not active, a
    // GET stream and a listen stream end, and an MCP v1.0 streaming
    // session refuses its next request with -32008, then ends.
    let provider = Provider::start(0, None, false).await;
    let issuer = provider.issuer.clone();
    let server = McpServer::start(|resource| {
        let verifier =
            IntrospectionVerifier::new(issuer.clone(), "mcp-server", "mcp-server-secret")
                .cache_answers_for(Duration::from_millis(200));
        OAuth::new(resource, issuer, verifier)
    })
    .await;
    let token = provider.token("mcp-opaque", "mcp", &server.resource).await;
    let bearer = format!("Bearer {token}");
    // A GET stream of a 2025-11-25 session.
    let session = server.open(&token).await;
    let mut get_client = Client::connect(server.addr).await;
    let get = get_client
        .send(request(
            Method::GET,
            "/mcp",
            &[
                ("accept", "text/event-stream"),
                ("mcp-session-id", &session),
                ("authorization", &bearer),
            ],
            empty(),
        ))
        .await;
    assert_eq!(get.status(), 200);
    // A 2026-07-28 listen stream.
    let listen = json!({"jsonrpc": "2.0", "id": 5, "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true},
                   "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}}}});
    let mut listen_client = Client::connect(server.addr).await;
    let listening = listen_client
        .send(request(
            Method::POST,
            "/mcp",
            &[
                ("accept", "application/json, text/event-stream"),
                ("content-type", "application/json"),
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "subscriptions/listen"),
                ("authorization", &bearer),
            ],
            full(serde_json::to_vec(&listen).expect("JSON")),
        ))
        .await;
    assert_eq!(listening.status(), 200);
    // An MCP v1.0 streaming session.
    let mut v1_client = Client::connect(server.addr).await;
    let (writer, body) = channel_body();
    let pending = v1_client
        .start(request(
            Method::POST,
            "/mcp",
            &[
                ("content-type", "application/json"),
                ("authorization", &bearer),
            ],
            body,
        ))
        .await;
    writer.line(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                        "params": {"clientCapabilities": {}}}));
    let mut lines = Lines::new(head(pending).await);
    assert!(lines.reply(json!(1)).await.get("result").is_some());
    writer.line(&execute(2, "echo", json!({"message": "before"})));
    assert!(lines.reply(json!(2)).await.get("result").is_some());

    provider.revoke("mcp-opaque", &token).await;
    assert!(
        ends_within(get.into_body(), Duration::from_secs(5)).await,
        "the GET stream ends"
    );
    assert!(
        ends_within(listening.into_body(), Duration::from_secs(5)).await,
        "the listen stream ends"
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    writer.line(&execute(3, "echo", json!({"message": "after"})));
    let refused = lines.reply(json!(3)).await;
    assert_eq!(refused["error"]["code"], -32008, "{refused}");
    assert!(lines.rest().await.is_empty(), "then the stream ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protected_resource_metadata_is_served_at_both_urls_and_readable_from_any_origin() {
    let provider = Provider::start(0, None, false).await;
    let server = McpServer::jwt(&provider).await;
    let mut client = Client::connect(server.addr).await;
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let reply = client
            .exchange(request(
                Method::GET,
                path,
                &[("origin", "https://inspector.example")],
                full(""),
            ))
            .await;
        assert_eq!(reply.status, 200, "{path}");
        assert_eq!(reply.header("access-control-allow-origin"), Some("*"));
        let document = reply.json();
        assert_eq!(document["resource"], server.resource);
        assert_eq!(document["authorization_servers"], json!([provider.issuer]));
        assert_eq!(document["bearer_methods_supported"], json!(["header"]));
        assert_eq!(document["scopes_supported"], json!(["mcp", "files:write"]));
        assert_eq!(document["resource_name"], "oauth-test");
    }
    let preflight = client
        .exchange(request(
            Method::OPTIONS,
            "/.well-known/oauth-protected-resource/mcp",
            &[
                ("origin", "https://inspector.example"),
                ("access-control-request-method", "GET"),
                ("access-control-request-headers", "mcp-protocol-version"),
            ],
            full(""),
        ))
        .await;
    assert_eq!(preflight.status, 204);
    assert_eq!(preflight.header("access-control-allow-origin"), Some("*"));
    assert_eq!(
        preflight.header("access-control-allow-headers"),
        Some("mcp-protocol-version")
    );
    let other = client
        .exchange(request(
            Method::GET,
            "/.well-known/oauth-protected-resource/other",
            &[],
            full(""),
        ))
        .await;
    assert_eq!(other.status, 404, "another resource's metadata is not here");
    provider.stop().await;
}

/// The test provider issues the scopes it is told to (`--scopes`), so a
/// server's own scopes can be tried against a real issuer: a client gets
/// them, `mcp-reader` only the first, and one it is not told of is not
/// granted; the server sees what the token carries.
#[tokio::test]
async fn the_test_provider_issues_the_scopes_it_is_told_to() {
    let provider = Provider::start_with(&[
        "--port".to_owned(),
        "0".to_owned(),
        "--scopes".to_owned(),
        "mcp weather:read".to_owned(),
    ])
    .await;
    let server = McpServer::jwt(&provider).await;
    let token = provider
        .token("mcp-jwt", "mcp weather:read", &server.resource)
        .await;
    let reply = server
        .v1(Some(&token), &execute(1, "whoami", json!({})))
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(
        reply.json()["result"]["output"]["scopes"],
        json!(["mcp", "weather:read"]),
        "{:?}",
        reply.body
    );
    let refused = provider
        .token_answer("mcp-reader", "mcp weather:read", &server.resource)
        .await;
    assert_eq!(refused.status, 400, "mcp-reader gets the first scope only");
    assert_eq!(refused.json()["error"], "invalid_scope");
    let unknown = provider
        .token_answer("mcp-jwt", "files:write", &server.resource)
        .await;
    assert_eq!(unknown.status, 200);
    assert!(
        unknown.json().get("scope").is_none(),
        "a scope it was not told of is not granted: {:?}",
        String::from_utf8_lossy(&unknown.body)
    );
    provider.stop().await;
}
