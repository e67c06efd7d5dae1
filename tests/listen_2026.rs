//! 2026-07-28 `subscriptions/listen` (docs/model-context.md §7): the
//! acknowledgement comes first and says what the stream will carry; then
//! only the opted-in resource updates arrive, each tagged with the
//! stream's id; a cancelled stream (stdio) or a closed one (HTTP) ends;
//! the server's end closes a stream with its result.

mod http_support;

use std::time::Duration;

use clawmcp::testing::TestClient;
use clawmcp::{Server, SharedResource, TextResource};
use http_body_util::BodyExt;
use http_support::{Client, full};
use hyper::{Method, Request};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::time::timeout;

/// A hang guard, never a performance bound.
const PATIENCE: Duration = Duration::from_secs(10);
const WATCHED: &str = "test://watched";
const OTHER: &str = "test://other";

fn server() -> (Server, SharedResource, SharedResource) {
    let watched = SharedResource::new(WATCHED, "watched", "Changes.", "text/plain", "1");
    let other = SharedResource::new(OTHER, "other", "Changes too.", "text/plain", "1");
    let server = Server::builder()
        .name("listen-test")
        .resource(watched.clone())
        .resource(other.clone())
        .resource(TextResource::new(
            "test://still",
            "still",
            "Never changes.",
            "text/plain",
            "s",
        ))
        .build()
        .expect("builds");
    (server, watched, other)
}

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {}})
}

fn listen(id: &str, resources: &[&str]) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
           "params": {"_meta": meta(),
                      "notifications": {"toolsListChanged": true,
                                        "resourceSubscriptions": resources}}})
}

async fn next(client: &mut TestClient) -> Value {
    timeout(PATIENCE, client.recv())
        .await
        .expect("a message in time")
        .expect("a message")
}

#[tokio::test]
async fn the_acknowledgement_comes_first_and_names_only_what_the_stream_will_carry() {
    let (server, ..) = server();
    let mut client = TestClient::connect_model_context(&server).await;
    client
        .send(&listen("L", &[WATCHED, "test://unknown"]))
        .await;
    let ack = next(&mut client).await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L"
    );
    // The server has no tools: toolsListChanged is not honoured;
    // an unknown URI is left out.
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourceSubscriptions": [WATCHED]})
    );
}

#[tokio::test]
async fn only_subscribed_updates_arrive_tagged_and_a_cancelled_stream_ends_without_a_reply() {
    let (server, watched, other) = server();
    let mut client = TestClient::connect_model_context(&server).await;
    client.send(&listen("L", &[WATCHED])).await;
    next(&mut client).await; // the acknowledgement
    other.set("2"); // not subscribed
    watched.set("2");
    let update = next(&mut client).await;
    assert_eq!(
        update["method"], "notifications/resources/updated",
        "{update}"
    );
    assert_eq!(update["params"]["uri"], WATCHED);
    assert_eq!(
        update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L"
    );
    client
        .notify("notifications/cancelled", json!({"requestId": "L"}))
        .await;
    // A request after the cancel is answered; nothing of the stream comes.
    let ping_like = json!({"jsonrpc": "2.0", "id": 9, "method": "server/discover",
                           "params": {"_meta": meta()}});
    client.send(&ping_like).await;
    let reply = next(&mut client).await;
    assert_eq!(reply["id"], 9, "the cancelled stream sent {reply}");
    watched.set("3");
    let quiet = client.collect(Duration::from_millis(300)).await;
    assert!(quiet.is_empty(), "after the cancel: {quiet:?}");
}

#[tokio::test]
async fn the_end_of_the_input_ends_a_stream_with_its_result() {
    let (server, ..) = server();
    let (mut io, server_end) = tokio::io::duplex(64 * 1024);
    let (r, w) = tokio::io::split(server_end);
    let serving = tokio::spawn(async move { server.serve_io(r, w).await });
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut line = serde_json::to_vec(&listen("L", &[WATCHED])).expect("json");
    line.push(b'\n');
    io.write_all(&line).await.expect("write");
    io.shutdown().await.expect("close the input");
    let mut out = String::new();
    timeout(PATIENCE, io.read_to_string(&mut out))
        .await
        .expect("the session ends")
        .expect("read");
    timeout(PATIENCE, serving)
        .await
        .expect("served")
        .expect("task")
        .expect("ok");
    let messages: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    let end = &messages[1];
    assert_eq!(end["id"], "L", "{end}");
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    assert_eq!(
        end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L"
    );
}

/// A `POST /mcp` of `message`, a 2026-07-28 `method` request, to `addr`.
fn post_2026(
    addr: std::net::SocketAddr,
    method: &str,
    message: &Value,
) -> Request<http_support::ReqBody> {
    Request::builder()
        .method(Method::POST)
        .uri(format!("http://{addr}/mcp"))
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .body(full(serde_json::to_vec(message).expect("json")))
        .expect("a request")
}

/// A `POST /mcp` of listen stream `id` to `addr`.
fn listen_post(addr: std::net::SocketAddr, id: &str) -> Request<http_support::ReqBody> {
    post_2026(addr, "subscriptions/listen", &listen(id, &[WATCHED]))
}

/// Opens listen stream `id` on `client`: its body, read past the
/// acknowledgement (kept in `seen`).
async fn acknowledged(
    client: &mut Client,
    addr: std::net::SocketAddr,
    id: &str,
    seen: &mut String,
) -> hyper::body::Incoming {
    let response = client.send(listen_post(addr, id)).await;
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    read_until(&mut body, seen, "notifications/subscriptions/acknowledged").await;
    body
}

/// A whole response body, read as JSON.
async fn json_body<B>(response: hyper::Response<B>) -> Value
where
    B: hyper::body::Body,
    B::Error: std::fmt::Debug,
{
    let bytes = timeout(PATIENCE, response.into_body().collect())
        .await
        .expect("the body in time")
        .expect("the body")
        .to_bytes();
    serde_json::from_slice(&bytes).expect("JSON")
}

/// Reads `body` until what it carried holds `needle`; `seen` keeps it all.
async fn read_until(body: &mut hyper::body::Incoming, seen: &mut String, needle: &str) {
    timeout(PATIENCE, async {
        while !seen.contains(needle) {
            let frame = body
                .frame()
                .await
                .unwrap_or_else(|| panic!("the stream ended before {needle}: {seen}"))
                .expect("a frame");
            if let Some(data) = frame.data_ref() {
                seen.push_str(&String::from_utf8_lossy(data));
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{needle} in time: {seen}"));
}

#[tokio::test]
async fn over_http_a_listen_stream_is_sse_carrying_a_change_made_through_another_request() {
    let (server, watched, _) = server();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        server
            .serve_http_on(listener, Default::default(), async {
                let _ = stopped.await;
            })
            .await
    });
    let mut client = Client::connect(addr).await;
    let response = client.send(listen_post(addr, "L")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream",
        "{response:?}"
    );
    assert_eq!(response.headers()["x-accel-buffering"], "no");
    assert!(response.headers().get("mcp-session-id").is_none());
    let mut body = response.into_body();
    let mut seen = String::new();
    let mut changed = false;
    let found = timeout(PATIENCE, async {
        while let Some(frame) = body.frame().await {
            let frame = frame.expect("a frame");
            if let Some(data) = frame.data_ref() {
                seen.push_str(&String::from_utf8_lossy(data));
            }
            if !changed && seen.contains("notifications/subscriptions/acknowledged") {
                // The change, made once the stream is acknowledged.
                watched.set("2");
                changed = true;
            }
            if seen.contains("notifications/resources/updated") {
                return true;
            }
        }
        false
    })
    .await
    .expect("the update in time");
    assert!(found, "{seen}");
    let ack = seen
        .find("notifications/subscriptions/acknowledged")
        .expect("acknowledged");
    let update = seen
        .find("notifications/resources/updated")
        .expect("updated");
    assert!(ack < update, "the acknowledgement comes first: {seen}");
}

#[tokio::test]
async fn over_http_shutdown_ends_a_listen_stream_with_its_result_then_the_stream_ends() {
    let mut server = http_support::TestServer::start(Default::default()).await;
    let mut client = server.client().await;
    let mut seen = String::new();
    let mut body = acknowledged(&mut client, server.addr, "L", &mut seen).await;
    server.shutdown();
    read_until(&mut body, &mut seen, r#""result""#).await;
    let last = seen
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .next_back()
        .expect("an event");
    let result: Value = serde_json::from_str(last).expect("the last event is JSON");
    assert_eq!(result["id"], "L", "{seen}");
    assert_eq!(result["result"]["resultType"], "complete", "{seen}");
    let rest = timeout(PATIENCE, async {
        let mut rest = String::new();
        while let Some(frame) = body.frame().await {
            if let Ok(frame) = frame
                && let Some(data) = frame.data_ref()
            {
                rest.push_str(&String::from_utf8_lossy(data));
            }
        }
        rest
    })
    .await
    .expect("the stream ends after its result");
    assert!(
        !rest.contains("data: "),
        "nothing follows the result: {rest}"
    );
    server.join().await.expect("the server stops");
}

#[tokio::test]
async fn over_http_once_shutdown_began_requests_are_refused_and_no_listen_stream_opens() {
    let (server, _, _) = server();
    let mcp = server.http_service(Default::default());
    server.handle().shutdown();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 9));
    let response = hyper::service::Service::call(&mcp, listen_post(addr, "L"))
        .await
        .expect("a response");
    assert_eq!(
        response.headers()["content-type"],
        "application/json",
        "a reply, not a stream"
    );
    let reply = json_body(response).await;
    assert_eq!(reply["id"], "L");
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert_eq!(reply["error"]["data"], "server shutting down", "{reply}");
    // A request answered at once without a session is refused alike.
    let discover = json!({"jsonrpc": "2.0", "id": 7, "method": "server/discover",
                          "params": {"_meta": meta()}});
    let request = post_2026(addr, "server/discover", &discover);
    let response = hyper::service::Service::call(&mcp, request)
        .await
        .expect("a response");
    let reply = json_body(response).await;
    assert_eq!(reply["id"], 7);
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert_eq!(reply["error"]["data"], "server shutting down", "{reply}");
}

#[tokio::test]
async fn over_http_a_listen_stream_takes_a_stream_slot_that_closing_it_frees() {
    let server =
        http_support::TestServer::start(clawmcp::transport::HttpConfig::default().max_streams(1))
            .await;
    let mut first = server.client().await;
    let mut seen = String::new();
    let body = acknowledged(&mut first, server.addr, "A", &mut seen).await;

    let mut second = server.client().await;
    let refused = second.send(listen_post(server.addr, "B")).await;
    assert_eq!(refused.status(), 503, "the one slot is taken");
    assert_eq!(refused.headers()["retry-after"], "1");
    drop(refused);

    // The client closes the first stream: its slot comes free.
    drop(body);
    first.close().await;
    let opened = timeout(PATIENCE, async {
        loop {
            let mut client = server.client().await;
            let response = client.send(listen_post(server.addr, "B")).await;
            if response.status() == 200 {
                return response;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("a stream opens once the first one closed");
    let mut body = opened.into_body();
    let mut seen = String::new();
    read_until(
        &mut body,
        &mut seen,
        "notifications/subscriptions/acknowledged",
    )
    .await;
}

#[tokio::test]
async fn declared_extensions_are_in_both_revisions_capabilities_and_bad_ones_fail_build() {
    let server = Server::builder()
        .extension("com.example/audit", json!({"level": "full"}))
        .build()
        .expect("builds");
    let mut client = TestClient::connect_model_context(&server).await;
    let discovered = client
        .call("server/discover", Some(json!({"_meta": meta()})))
        .await
        .expect("discover");
    assert_eq!(
        discovered["capabilities"]["extensions"],
        json!({"com.example/audit": {"level": "full"}})
    );
    let init = client
        .initialize_model_context(json!({"protocolVersion": "2025-11-25", "capabilities": {},
                                         "clientInfo": {"name": "t", "version": "1"}}))
        .await;
    assert_eq!(
        init["capabilities"]["extensions"]["com.example/audit"]["level"],
        "full"
    );
    for (name, settings) in [("noprefix", json!({})), ("a/b", json!(true))] {
        let built = Server::builder().extension(name, settings).build();
        assert!(
            matches!(built, Err(clawmcp::BuildError::InvalidExtension(_))),
            "{name}"
        );
    }
}
