//! Requests a tool sends to the client (docs/model-context.md §3: elicitation,
//! sampling, roots), over stdio through the test client: the round trips,
//! the clear errors when they cannot be served, and never a hang — a time
//! limit, a client that goes away, a session full of requests whose
//! answers must still get through.

mod model_context_support;

use std::time::Duration;

use clawmcp::testing::TestClient;
use model_context_support::*;
use serde_json::{Value, json};

async fn start(tool: &str, client: &mut TestClient) -> Value {
    client
        .send(
            &json!({"jsonrpc": "2.0", "id": 50, "method": "tools/call", "params": {"name": tool}}),
        )
        .await;
    client
        .next_request()
        .await
        .expect("a request from the tool")
}

fn text(reply: &Value) -> String {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A tool `name` over any object, run by `function`, alone on a server
/// (built with `builder`'s other settings).
fn alone<F, Fut>(name: &str, function: F, builder: clawmcp::ServerBuilder) -> clawmcp::Server
where
    F: Fn(Value, clawmcp::ToolContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<clawmcp::ToolOutput, clawmcp::ToolError>>
        + Send
        + 'static,
{
    let definition = clawmcp::definition::ToolDefinition {
        mcp_id: format!("mcp://mc-test/tools/{name}"),
        name: name.into(),
        description: format!("The {name} test tool."),
        input_schema: json!({"type": "object"}),
        output_schema: json!({}),
    };
    builder
        .tools_provider(true)
        .tool(clawmcp::tool::rich_tool_fn(definition, function))
        .build()
        .unwrap()
}

#[tokio::test]
async fn elicitation_round_trips_with_the_restricted_form_schema() {
    let (server, probe, _) = server();
    let mut client = TestClient::model_context(&server, json!({"elicitation": {}})).await;
    let request = start("ask", &mut client).await;
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(
        request["params"],
        json!({"mode": "form", "message": "Who are you?", "requestedSchema": {
            "type": "object",
            "properties": {"name": {"type": "string", "description": "Your name"},
                           "sure": {"type": "boolean", "description": "Sure?"}},
            "required": ["name"]}})
    );
    client
        .respond(
            &request["id"],
            json!({"action": "accept", "content": {"name": "Ada", "sure": true}}),
        )
        .await;
    let reply = client.reply(&json!(50)).await;
    assert_eq!(text(&reply), r#"Accept {"name":"Ada","sure":true}"#);
    assert_eq!(probe.answers().len(), 1);
}

/// Servers SHOULD validate an accepted form's content against the schema
/// they asked with: a wrong type or a missing required field reaches the
/// tool as a malformed answer naming where; a decline carries nothing to
/// check.
#[tokio::test]
async fn an_accepted_answer_that_does_not_match_the_form_fails_the_tool_as_malformed() {
    let (server, _, _) = server();
    let mut client = TestClient::model_context(&server, json!({"elicitation": {}})).await;
    for (content, at) in [
        (json!({"name": "Ada", "sure": "yes"}), "'/sure'"),
        (json!({"sure": true}), "''"),
    ] {
        let request = start("ask", &mut client).await;
        let answer = json!({"action": "accept", "content": content});
        client.respond(&request["id"], answer).await;
        let said = text(&client.reply(&json!(50)).await);
        assert!(
            said.starts_with("error: the client's answer is malformed: the accepted content does not match the form at ")
                && said.contains(at),
            "{said}"
        );
    }
    let request = start("ask", &mut client).await;
    client
        .respond(&request["id"], json!({"action": "decline"}))
        .await;
    assert_eq!(text(&client.reply(&json!(50)).await), "Decline null");
}

#[tokio::test]
async fn sampling_and_roots_round_trip() {
    let (server, _, _) = server();
    let mut client = TestClient::model_context(&server, json!({"sampling": {}, "roots": {}})).await;
    let request = start("sample", &mut client).await;
    assert_eq!(request["method"], "sampling/createMessage");
    assert_eq!(
        request["params"],
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}], "maxTokens": 50})
    );
    client
        .respond(
            &request["id"],
            json!({"role": "assistant", "content": {"type": "text", "text": "hi"},
                                         "model": "m1", "stopReason": "endTurn"}),
        )
        .await;
    assert_eq!(text(&client.reply(&json!(50)).await), "hi from m1");
    let request = start("roots", &mut client).await;
    assert_eq!(request["method"], "roots/list");
    client
        .respond(
            &request["id"],
            json!({"roots": [{"uri": "file:///a"}, {"uri": "file:///b", "name": "b"}]}),
        )
        .await;
    assert_eq!(text(&client.reply(&json!(50)).await), "file:///a,file:///b");
}

#[tokio::test]
async fn a_capability_the_client_did_not_declare_is_a_clear_error_not_a_request() {
    let (server, _, _) = server();
    let mut client = TestClient::model_context(&server, json!({})).await;
    let reply = client.call_tool("ask", json!({})).await.unwrap();
    assert_eq!(
        reply["content"][0]["text"],
        "error: the client did not declare the elicitation capability"
    );
    let reply = client.call_tool("roots", json!({})).await.unwrap();
    assert_eq!(reply["content"][0]["text"], "missing roots");
    assert_eq!(
        client.collect(QUIET).await,
        Vec::<Value>::new(),
        "no request was sent"
    );
}

#[tokio::test]
async fn a_form_elicitation_goes_only_to_a_client_that_declared_the_form_mode() {
    let (server, _, _) = server();
    // Only URL mode: a form is a mode the client does not support.
    let mut client = TestClient::model_context(&server, json!({"elicitation": {"url": {}}})).await;
    let reply = client.call_tool("ask", json!({})).await.unwrap();
    assert_eq!(
        reply["content"][0]["text"],
        "error: the client did not declare the elicitation capability"
    );
    assert_eq!(
        client.collect(QUIET).await,
        Vec::<Value>::new(),
        "no request was sent"
    );
    // Form mode by name, beside URL mode: the form is sent.
    let mut client =
        TestClient::model_context(&server, json!({"elicitation": {"form": {}, "url": {}}})).await;
    let request = start("ask", &mut client).await;
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["mode"], "form");
}

#[tokio::test]
async fn no_request_goes_to_the_client_before_its_initialized_notification() {
    let (server, _, _) = server();
    let mut client = TestClient::connect_model_context(&server).await;
    client
        .send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": clawmcp::testing::MODEL_CONTEXT_VERSION,
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"}}}),
        )
        .await;
    let initialized = client.reply(&json!(1)).await;
    assert!(initialized.get("result").is_some(), "{initialized}");
    // A call before `initialized` (served, as the handshake rules allow)
    // whose tool asks: the question waits for the notification.
    client
        .send(
            &json!({"jsonrpc": "2.0", "id": 50, "method": "tools/call", "params": {"name": "ask"}}),
        )
        .await;
    assert_eq!(
        client.collect(QUIET).await,
        Vec::<Value>::new(),
        "nothing is sent before initialized"
    );
    client.notify("notifications/initialized", json!({})).await;
    let request = client.next_request().await.expect("the question, now");
    assert_eq!(request["method"], "elicitation/create");
}

#[tokio::test]
async fn a_context_kept_past_its_call_sends_the_client_nothing() {
    use clawmcp::client::{ClientError, Elicitation, LogLevel};
    let go = std::sync::Arc::new(tokio::sync::Notify::new());
    let (asked, mut late) = tokio::sync::mpsc::unbounded_channel();
    // Keeps its context past its call.
    let lingering = {
        let go = go.clone();
        move |_args: Value, ctx: clawmcp::ToolContext| {
            let (go, asked) = (go.clone(), asked.clone());
            async move {
                tokio::spawn(async move {
                    go.notified().await;
                    ctx.progress(1.0, None, Some("late")).await;
                    ctx.log(LogLevel::Error, "late").await;
                    let answer = ctx.elicit(Elicitation::new("Still there?")).await;
                    let _ = asked.send(answer.err());
                });
                Ok(clawmcp::ToolOutput::text("done"))
            }
        }
    };
    let server = alone("linger", lingering, clawmcp::Server::builder());
    let mut client = TestClient::model_context(&server, json!({"elicitation": {}})).await;
    client
        .send(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "linger", "_meta": {"progressToken": "p"}}}))
        .await;
    assert_eq!(text(&client.reply(&json!(9)).await), "done");
    go.notify_one();
    assert_eq!(
        late.recv().await.flatten(),
        Some(ClientError::Cancelled),
        "a question after the request ended is not sent"
    );
    assert_eq!(
        client.collect(QUIET).await,
        Vec::<Value>::new(),
        "no progress, log line or request after the reply"
    );
}

/// A question already in flight when its request ends stops waiting
/// then: the tool gets `Cancelled`, and the client is told the server no
/// longer waits for the answer.
#[tokio::test]
async fn a_question_in_flight_when_its_request_ends_is_cancelled() {
    use clawmcp::client::{ClientError, Elicitation};
    let go = std::sync::Arc::new(tokio::sync::Notify::new());
    let (asked, mut late) = tokio::sync::mpsc::unbounded_channel();
    // Asks, and returns before the answer.
    let leaving = {
        let go = go.clone();
        move |_args: Value, ctx: clawmcp::ToolContext| {
            let (go, asked) = (go.clone(), asked.clone());
            async move {
                tokio::spawn(async move {
                    let answer = ctx.elicit(Elicitation::new("Still there?")).await;
                    let _ = asked.send(answer.err());
                });
                go.notified().await;
                Ok(clawmcp::ToolOutput::text("done"))
            }
        }
    };
    let builder = clawmcp::Server::builder().client_request_timeout(Duration::from_secs(3600));
    let server = alone("leave", leaving, builder);
    let mut client = TestClient::model_context(&server, json!({"elicitation": {}})).await;
    let question = start("leave", &mut client).await;
    assert_eq!(question["method"], "elicitation/create");
    go.notify_one();
    assert_eq!(text(&client.reply(&json!(50)).await), "done");
    let stopped = tokio::time::timeout(Duration::from_secs(30), late.recv())
        .await
        .expect("the question stops waiting when its request ends");
    assert_eq!(stopped.flatten(), Some(ClientError::Cancelled));
    assert_eq!(
        client.collect(QUIET).await,
        vec![
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": question["id"], "reason": "the server stopped waiting"}})
        ]
    );
}

#[tokio::test]
async fn in_an_mcp_v1_session_a_tool_asking_the_client_fails_unsupported() {
    let (server, _, _) = server();
    let mut client = TestClient::initialized(&server).await;
    let output = client
        .execute("mcp://mc-test/tools/ask", json!({}))
        .await
        .unwrap();
    assert_eq!(
        output["content"][0]["text"],
        "error: this session cannot carry requests to the client (MCP v1.0 has none)"
    );
}

#[tokio::test]
async fn a_client_error_answer_reaches_the_tool_as_refused() {
    let (server, _, _) = server();
    let mut client = TestClient::model_context(&server, json!({"elicitation": {}})).await;
    let request = start("ask", &mut client).await;
    client
        .respond_error(&request["id"], -32600, "no thanks")
        .await;
    assert_eq!(
        text(&client.reply(&json!(50)).await),
        "error: the client refused: no thanks (-32600)"
    );
}

#[tokio::test]
async fn no_answer_within_the_client_request_timeout_fails_and_tells_the_client() {
    let (probe, status) = (Probe::default(), status());
    let server = builder(&probe, &status)
        .client_request_timeout(Duration::from_millis(100))
        .build()
        .unwrap();
    let mut client = TestClient::model_context(&server, json!({"elicitation": {}})).await;
    let request = start("ask", &mut client).await;
    let reply = client.reply(&json!(50)).await;
    assert_eq!(
        text(&reply),
        "error: the client did not answer within 100ms"
    );
    let cancelled = client.next_notification().await.unwrap();
    assert_eq!(cancelled["method"], "notifications/cancelled");
    assert_eq!(cancelled["params"]["requestId"], request["id"]);
    // A late answer is ignored.
    client
        .respond(&request["id"], json!({"action": "cancel"}))
        .await;
    assert_eq!(client.call("ping", None).await, Ok(json!({})));
}

#[tokio::test]
async fn a_client_whose_input_ends_mid_elicitation_fails_the_tool_as_gone_without_a_hang() {
    let (server, probe, _) = server();
    let mut client = TestClient::model_context(&server, json!({"elicitation": {}})).await;
    let _request = start("ask", &mut client).await;
    client.close_input().await;
    let (rest, served) = client.close().await;
    assert!(served.is_ok());
    let reply = rest
        .iter()
        .find(|m| m["id"] == 50)
        .expect("the tool still answers");
    assert_eq!(text(reply), "error: the client is gone");
    assert_eq!(probe.answers(), ["error: the client is gone"]);
}

#[tokio::test]
async fn answers_get_through_a_full_session() {
    // The only slot is held by a tool waiting for the client's answer, and
    // a request is parked behind it: the answer (a response) needs no slot.
    let (probe, status) = (Probe::default(), status());
    let server = builder(&probe, &status).max_in_flight(1).build().unwrap();
    let mut client = TestClient::model_context(&server, json!({"elicitation": {}})).await;
    let request = start("ask", &mut client).await;
    client
        .send(&json!({"jsonrpc": "2.0", "id": 51, "method": "tools/call", "params": {"name": "count"}}))
        .await;
    client
        .respond(&request["id"], json!({"action": "decline"}))
        .await;
    assert_eq!(text(&client.reply(&json!(50)).await), "Decline null");
    assert_eq!(text(&client.reply(&json!(51)).await), "3");
}

#[tokio::test]
async fn a_tool_cancelled_while_waiting_stops_waiting_and_tells_the_client() {
    let (server, _, _) = server();
    let mut client = TestClient::model_context(&server, json!({"elicitation": {}})).await;
    let request = start("ask", &mut client).await;
    client
        .notify("notifications/cancelled", json!({"requestId": 50}))
        .await;
    // No reply for the cancelled call; the client is told to stop asking.
    let note = client.next_notification().await.unwrap();
    assert_eq!(note["method"], "notifications/cancelled");
    assert_eq!(note["params"]["requestId"], request["id"]);
    assert!(
        client
            .collect(QUIET)
            .await
            .iter()
            .all(|m| m.get("id") != Some(&json!(50)))
    );
}

#[tokio::test]
async fn forms_outside_the_restricted_schema_are_refused_before_sending() {
    use clawmcp::client::Elicitation;
    let nested = Elicitation::new("m").field("f", json!({"type": "object"}), true);
    let (server, _, _) = {
        let probe = Probe::default();
        let status = status();
        let server = builder(&probe, &status)
            .tool(clawmcp::tool::rich_tool_fn(
                clawmcp::definition::ToolDefinition {
                    mcp_id: "mcp://mc-test/tools/bad-form".into(),
                    name: "bad-form".into(),
                    description: "Asks with a nested form.".into(),
                    input_schema: json!({"type": "object"}),
                    output_schema: json!({}),
                },
                move |_a, ctx| {
                    let nested = nested.clone();
                    async move {
                        let e = ctx.elicit(nested).await.unwrap_err();
                        Ok(clawmcp::ToolOutput::text(e.to_string()))
                    }
                },
            ))
            .build()
            .unwrap();
        (server, probe, status)
    };
    let mut client = TestClient::model_context(&server, json!({"elicitation": {}})).await;
    let reply = client.call_tool("bad-form", json!({})).await.unwrap();
    assert!(
        reply["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("invalid request to the client: field \"f\""),
        "{reply}"
    );
    assert_eq!(client.collect(QUIET).await, Vec::<Value>::new());
}
