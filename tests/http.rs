//! The HTTP/1.1 transport (docs/mcp-v1.md §8) against a real HTTP client over
//! loopback: every status code, single exchanges, streaming sessions,
//! keep-alive, graceful shutdown, the header-read timeout and the
//! connection limit. Each test is named after the rule it proves.
//!
//! Timeouts are hang guards only (`PATIENCE`); `QUIET` windows only ever
//! prove that something did *not* happen yet, and every ordering claim is
//! asserted as an ordering, never as a duration.

mod http_support;
#[path = "common/settle.rs"]
mod settle;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use clawmcp::transport::HttpConfig;
use http_support::*;
use hyper::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use settle::settled;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

/// An echo request whose compact JSON is exactly `size` bytes.
fn echo_of_size(id: i64, size: usize) -> Vec<u8> {
    let base = serde_json::to_vec(&echo(id, "")).expect("serialisable");
    assert!(size >= base.len());
    let body = serde_json::to_vec(&echo(id, &"x".repeat(size - base.len()))).expect("serialisable");
    assert_eq!(body.len(), size);
    body
}

/// Asserts a `-32xxx` error body with id null.
fn assert_error_body(reply: &Reply, code: i64) {
    reply.assert_json_content_type();
    let body = reply.json();
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(error_code(&body), code, "{body}");
    assert_eq!(body["id"], Value::Null, "{body}");
    assert!(body["error"]["data"].is_string(), "{body}");
}

/// A plain request with the given method, path and headers.
fn bare(
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &'static str,
) -> hyper::Request<ReqBody> {
    request(
        method,
        path,
        headers,
        full(Bytes::from_static(body.as_bytes())),
    )
}

const LIST_TOOLS: &str = r#"{"jsonrpc":"2.0","method":"mcp/listTools","id":1}"#;

// ------------------------------------------------------ status codes --

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_path_is_404() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let json = [("content-type", "application/json")];
    for request in [
        bare(Method::POST, "/other", &json, LIST_TOOLS),
        bare(Method::GET, "/", &[], ""),
        bare(Method::POST, "/mcp/extra", &json, LIST_TOOLS),
    ] {
        let label = format!("{} {}", request.method(), request.uri());
        let reply = client.exchange(request).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{label}");
    }
    // The endpoint itself still answers on the same connection.
    let reply = client
        .exchange(bare(Method::POST, "/mcp", &json, LIST_TOOLS))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_path_is_the_endpoint_and_others_are_404() {
    let server = TestServer::start(HttpConfig::default().path("/api/mcp")).await;
    let mut client = server.client().await;
    let json = [("content-type", "application/json")];
    let reply = client
        .exchange(bare(Method::POST, "/mcp", &json, LIST_TOOLS))
        .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    let reply = client
        .exchange(bare(Method::POST, "/api/mcp", &json, LIST_TOOLS))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(reply.json()["result"].is_array());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_method_on_the_endpoint_is_405_with_allow_post() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let json = [("content-type", "application/json")];
    for request in [
        bare(Method::GET, "/mcp", &[], ""),
        bare(Method::PUT, "/mcp", &json, LIST_TOOLS),
        bare(Method::DELETE, "/mcp", &[], ""),
        bare(Method::PATCH, "/mcp", &json, LIST_TOOLS),
        bare(Method::OPTIONS, "/mcp", &[], ""),
    ] {
        let label = request.method().to_string();
        let reply = client.exchange(request).await;
        assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED, "{label}");
        // With the Model Context Protocol on (the default), `Allow` lists
        // its methods too (docs/model-context.md §1); `POST` alone for an MCP v1.0
        // server: `allow_is_post_only_on_an_mcp_v1_server`.
        assert_eq!(reply.header("allow"), Some("GET, POST, DELETE"), "{label}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_page_of_an_allowed_origin_may_call_the_endpoint_and_read_it() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let origin = ("origin", "http://localhost:6274");
    let preflight = client
        .exchange(bare(
            Method::OPTIONS,
            "/mcp",
            &[
                origin,
                ("access-control-request-method", "POST"),
                (
                    "access-control-request-headers",
                    "content-type, mcp-session-id",
                ),
            ],
            "",
        ))
        .await;
    assert_eq!(preflight.status, StatusCode::NO_CONTENT);
    assert_eq!(
        preflight.header("access-control-allow-origin"),
        Some("http://localhost:6274")
    );
    assert_eq!(
        preflight.header("access-control-allow-methods"),
        Some("GET, POST, DELETE")
    );
    assert_eq!(
        preflight.header("access-control-allow-headers"),
        Some("content-type, mcp-session-id")
    );
    let json = [("content-type", "application/json"), origin];
    let reply = client
        .exchange(bare(Method::POST, "/mcp", &json, LIST_TOOLS))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(
        reply.header("access-control-allow-origin"),
        Some("http://localhost:6274")
    );
    assert!(
        reply
            .header("access-control-expose-headers")
            .is_some_and(|h| h.contains("Mcp-Session-Id"))
    );
    // A foreign origin gets no preflight, and no answer it could read.
    let foreign = client
        .exchange(bare(
            Method::OPTIONS,
            "/mcp",
            &[("origin", "http://evil.example")],
            "",
        ))
        .await;
    assert_eq!(foreign.status, StatusCode::FORBIDDEN);
    assert_eq!(foreign.header("access-control-allow-origin"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_is_post_only_on_an_mcp_v1_server() {
    let server = TestServer::start_with(HttpConfig::default(), |b| {
        b.protocols(clawmcp::server::Protocols::McpV1)
    })
    .await;
    let mut client = server.client().await;
    for request in [
        bare(Method::GET, "/mcp", &[("accept", "text/event-stream")], ""),
        bare(Method::DELETE, "/mcp", &[("mcp-session-id", "x")], ""),
    ] {
        let reply = client.exchange(request).await;
        assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(reply.header("allow"), Some("POST"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_or_non_json_content_type_is_415() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let cases: [&[(&str, &str)]; 4] = [
        &[],
        &[("content-type", "text/plain")],
        &[("content-type", "application/jsonl")],
        &[("content-type", "application/x-www-form-urlencoded")],
    ];
    for headers in cases {
        let reply = client
            .exchange(bare(Method::POST, "/mcp", headers, LIST_TOOLS))
            .await;
        assert_eq!(
            reply.status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{headers:?}"
        );
    }
    // Parameters are allowed, and the media type is case-insensitive.
    for content_type in [
        "application/json; charset=utf-8",
        "Application/JSON;charset=UTF-8",
    ] {
        let reply = client
            .exchange(bare(
                Method::POST,
                "/mcp",
                &[("content-type", content_type)],
                LIST_TOOLS,
            ))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{content_type}");
        reply.assert_json_content_type();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_exchange_body_over_the_message_limit_is_413_with_content_length() {
    let server = TestServer::start_with(HttpConfig::default(), |b| b.max_message_size(1024)).await;
    let mut client = server.client().await;

    // At the limit: served.
    let reply = client.exchange(post(full(echo_of_size(1, 1024)))).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["id"], 1);

    // One byte over: 413, with a -32006 JSON body. (A `Full` body has an
    // exact size, so hyper sends it with Content-Length, not chunked.)
    let reply = client.exchange(post(full(echo_of_size(2, 1025)))).await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_error_body(&reply, -32006);

    // Far over: 413.
    let reply = Client::connect(server.addr)
        .await
        .exchange(post(full(echo_of_size(3, 4000))))
        .await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);

    // The server still serves the next request.
    let reply = server.client().await.post(&echo(4, "after")).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(result(&reply.json(), 4)["output"]["message"], "after");
}

/// Every reader of request bytes does work linear in the bytes received
/// (the linearity itself is measured in `json_stream`'s unit tests): a body
/// of white space and a request, one byte per chunk, is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_sent_one_byte_per_chunk_is_served() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut body = vec![b' '; 20_000];
    body.extend_from_slice(&serde_json::to_vec(&echo(7, "slow")).expect("serialisable"));
    body.extend_from_slice(b"\n\n");
    let (writer, stream) = channel_body();
    let mut client = server.client().await;
    let pending = client.start(post(stream)).await;
    for byte in body {
        writer.send(vec![byte]);
    }
    writer.end();
    let reply = Reply::read(head(pending).await).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(result(&reply.json(), 7)["output"]["message"], "slow");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_exchange_chunked_body_over_the_message_limit_is_413() {
    let server = TestServer::start_with(HttpConfig::default(), |b| b.max_message_size(1024)).await;
    let mut client = server.client().await;

    // A chunked body at the limit is served.
    let body = echo_of_size(1, 1024);
    let (writer, stream) = channel_body();
    for piece in body.chunks(300) {
        writer.send(piece.to_vec());
    }
    writer.end();
    let reply = client.exchange(post(stream)).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["id"], 1);

    // A chunked body over it: 413.
    let body = echo_of_size(2, 1500);
    let (writer, stream) = channel_body();
    for piece in body.chunks(500) {
        writer.send(piece.to_vec());
    }
    writer.end();
    let reply = server.client().await.exchange(post(stream)).await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_error_body(&reply, -32006);

    // The server still serves the next request.
    let reply = server.client().await.post(&echo(3, "after")).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(result(&reply.json(), 3)["output"]["message"], "after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_loopback_origin_is_403_while_loopback_and_absent_origins_are_served() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    for origin in [
        "http://evil.example",
        "https://evil.example:443",
        "http://localhost.evil.example",
        "http://127.0.0.1.evil.example",
        "null",
    ] {
        let reply = client
            .exchange(post_with(&[("origin", origin)], full(LIST_TOOLS)))
            .await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "Origin: {origin}");
    }
    for origin in [
        "http://localhost:3000",
        "http://localhost",
        "http://127.0.0.1:8080",
        "http://[::1]:8080",
        "HTTP://LOCALHOST:3000",
    ] {
        let reply = client
            .exchange(post_with(&[("origin", origin)], full(LIST_TOOLS)))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "Origin: {origin}");
    }
    let reply = client.exchange(post(full(LIST_TOOLS))).await;
    assert_eq!(reply.status, StatusCode::OK, "no Origin");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_listed_origin_is_served() {
    let config = HttpConfig::default()
        .allow_origin("https://app.example.com")
        .allow_origin("tools.example.org");
    let server = TestServer::start(config).await;
    let mut client = server.client().await;
    for origin in [
        "https://app.example.com",
        "https://tools.example.org",
        "https://tools.example.org:8443",
        "http://localhost:3000",
    ] {
        let reply = client
            .exchange(post_with(&[("origin", origin)], full(LIST_TOOLS)))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "Origin: {origin}");
    }
    for origin in [
        "http://evil.example",
        "https://app.example.com.evil.example",
    ] {
        let reply = client
            .exchange(post_with(&[("origin", origin)], full(LIST_TOOLS)))
            .await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "Origin: {origin}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_token_is_401_without_or_with_a_wrong_token_and_200_with_the_right_one() {
    let server = TestServer::start(HttpConfig::default().bearer_token("s3cret")).await;
    let mut client = server.client().await;
    for authorization in [
        None,
        Some("Bearer wrong"),
        Some("Bearer s3cre"),
        Some("Bearer s3cret-and-more"),
        Some("Basic czNjcmV0"),
        Some("s3cret"),
        Some("Bearer "),
    ] {
        let headers: Vec<(&str, &str)> = authorization
            .map(|a| ("authorization", a))
            .into_iter()
            .collect();
        let reply = client.exchange(post_with(&headers, full(LIST_TOOLS))).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{authorization:?}");
    }
    let reply = client
        .exchange(post_with(
            &[("authorization", "Bearer s3cret")],
            full(LIST_TOOLS),
        ))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(reply.json()["result"].is_array());
}

/// With a static token: `Host` and `Origin` are checked before the token
/// (a foreign origin is 403, not 401); a CORS preflight (an `OPTIONS` with
/// an `Origin` and an `Access-Control-Request-Method`), which the endpoint
/// answers itself, needs no token, any other request does; a repeated
/// `Authorization` is no token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_static_token_origin_comes_first_and_only_a_preflight_goes_without() {
    let server = TestServer::start(HttpConfig::default().bearer_token("s3cret")).await;
    let mut client = server.client().await;
    let preflight = client
        .exchange(bare(
            Method::OPTIONS,
            "/mcp",
            &[
                ("origin", "http://localhost:6274"),
                ("access-control-request-method", "POST"),
            ],
            "",
        ))
        .await;
    assert_eq!(preflight.status, StatusCode::NO_CONTENT, "a preflight");
    let options = client
        .exchange(bare(Method::OPTIONS, "/mcp", &[], ""))
        .await;
    assert_eq!(
        options.status,
        StatusCode::UNAUTHORIZED,
        "OPTIONS, no Origin"
    );
    let asks_nothing = client
        .exchange(bare(
            Method::OPTIONS,
            "/mcp",
            &[("origin", "http://localhost:6274")],
            "",
        ))
        .await;
    assert_eq!(
        asks_nothing.status,
        StatusCode::UNAUTHORIZED,
        "OPTIONS asking for no method"
    );
    let foreign = client
        .exchange(post_with(
            &[("origin", "http://evil.example")],
            full(LIST_TOOLS),
        ))
        .await;
    assert_eq!(foreign.status, StatusCode::FORBIDDEN, "a foreign origin");
    let twice = client
        .exchange(post_with(
            &[
                ("authorization", "Bearer s3cret"),
                ("authorization", "Bearer s3cret"),
            ],
            full(LIST_TOOLS),
        ))
        .await;
    assert_eq!(twice.status, StatusCode::UNAUTHORIZED, "two Authorization");
    let allowed = client
        .exchange(post_with(
            &[
                ("origin", "http://localhost:6274"),
                ("authorization", "Bearer s3cret"),
            ],
            full(LIST_TOOLS),
        ))
        .await;
    assert_eq!(allowed.status, StatusCode::OK);
    assert_eq!(
        allowed.header("access-control-allow-origin"),
        Some("http://localhost:6274")
    );
}

/// A header that may come once, repeated, is refused: `Content-Type`
/// (415) and `MCP-Protocol-Version` (400, on every method and path),
/// whatever their values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_content_type_or_protocol_version_is_refused() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let two_types = client
        .exchange(bare(
            Method::POST,
            "/mcp",
            &[
                ("content-type", "application/json"),
                ("content-type", "application/json"),
            ],
            LIST_TOOLS,
        ))
        .await;
    assert_eq!(two_types.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let two_versions = client
        .exchange(post_with(
            &[
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-protocol-version", "junk"),
            ],
            full(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string()),
        ))
        .await;
    assert_eq!(two_versions.status, StatusCode::BAD_REQUEST);
    // An initialize (which opens a session) and a DELETE too.
    let versions = [
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2025-11-25"),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let opening = client
        .exchange(post_with(&versions, full(initialize.to_string())))
        .await;
    assert_eq!(opening.status, StatusCode::BAD_REQUEST, "initialize");
    let mut delete = versions.to_vec();
    delete.push(("mcp-session-id", "abc"));
    let deleting = client
        .exchange(bare(Method::DELETE, "/mcp", &delete, ""))
        .await;
    assert_eq!(deleting.status, StatusCode::BAD_REQUEST, "DELETE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]

async fn bearer_token_scheme_is_case_insensitive() {
    // RFC 7235 §2.1: the auth-scheme is case-insensitive, so
    // "BEARER s3cret" is a valid Authorization header.
    let server = TestServer::start(HttpConfig::default().bearer_token("s3cret")).await;
    let mut client = server.client().await;
    for authorization in ["bearer s3cret", "BEARER s3cret", "Bearer  s3cret"] {
        let reply = client
            .exchange(post_with(
                &[("authorization", authorization)],
                full(LIST_TOOLS),
            ))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{authorization:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_that_is_not_json_is_400_with_parse_error() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    for body in [
        "{not json",
        "",
        "[1, 2",
        "{\"jsonrpc\": \"2.0\", \"method\": ",
    ] {
        let reply = client.exchange(post(full(body))).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body:?}");
        assert_error_body(&reply, -32700);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]

async fn body_with_trailing_garbage_is_400_with_parse_error() {
    // A valid value followed by bytes that are not JSON is a body that is
    // not JSON (-32700), not "more than one JSON value" (-32600).
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let body = format!("{LIST_TOOLS} trailing");
    let reply = client.exchange(post(full(body))).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_error_body(&reply, -32700);
}

/// A body that is not one JSON value is answered from its head and its
/// whole text, whatever its first value holds: a Model Context Protocol
/// method first gets the same MCP v1.0 answer, with an escape in it or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_is_not_one_value_is_answered_alike_whatever_its_first_value_holds() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    for first in [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"\u00e9"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"a\nb"}}"#,
    ] {
        let body = format!("{first} trailing");
        let reply = client.exchange(post(full(body))).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{first}");
        assert_error_body(&reply, -32700);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_than_one_json_value_is_400_with_invalid_request() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    for body in [
        format!("{LIST_TOOLS}\n{LIST_TOOLS}"),
        format!("{LIST_TOOLS}{LIST_TOOLS}"),
        format!("[{LIST_TOOLS}] {{}}"),
    ] {
        let reply = client.exchange(post(full(body.clone()))).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}");
        assert_error_body(&reply, -32600);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_notifications_is_202_with_an_empty_body() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let single = notification("$/setTrace", json!({"value": "off"}));
    let unknown = notification("acme/somethingHappened", json!({}));
    let batch = json!([single, unknown, initialized()]);
    for body in [&single, &unknown, &batch] {
        let reply = client.post(body).await;
        assert_eq!(reply.status, StatusCode::ACCEPTED, "{body}");
        assert!(reply.body.is_empty(), "{body}: {:?}", reply.body);
    }
    // And the connection is still usable.
    let reply = client.post(&echo(1, "still here")).await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_rpc_error_reply_is_status_200() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let cases = [
        (request_msg(json!(5), "mcp/unknown", json!({})), -32601),
        (request_msg(json!(6), "rpc.discover", json!({})), -32601),
        (
            execute(7, "mcp://http-test/tools/nope:v1", json!({})),
            -32001,
        ),
        (execute(8, ECHO, json!({"message": 42})), -32602),
        (json!([]), -32600),
    ];
    for (message, code) in cases {
        let reply = client.post(&message).await;
        assert_eq!(reply.status, StatusCode::OK, "{message}");
        reply.assert_json_content_type();
        let body = reply.json();
        assert_eq!(error_code(&body), code, "{body}");
        assert_eq!(
            body.get("id"),
            Some(message.get("id").unwrap_or(&Value::Null)),
            "{body}"
        );
    }
    // A batch of invalid elements: one -32600 entry each, still 200.
    let reply = client
        .post(&json!([1, {"jsonrpc": "1.0", "method": "x", "id": 9}]))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    let body = reply.json();
    let entries = body
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {body}"));
    assert_eq!(entries.len(), 2, "{body}");
    assert!(entries.iter().all(|e| error_code(e) == -32600), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_json_reply_has_content_type_application_json() {
    let server = TestServer::start_with(HttpConfig::default(), |b| b.max_message_size(1024)).await;
    let mut client = server.client().await;
    let bodies: Vec<(Vec<u8>, StatusCode)> = vec![
        (
            serde_json::to_vec(&echo(1, "hi")).expect("json"),
            StatusCode::OK,
        ),
        (
            br#"[{"jsonrpc":"2.0","method":"mcp/listPrompts","id":1}]"#.to_vec(),
            StatusCode::OK,
        ),
        (
            br#"{"jsonrpc":"2.0","method":"nope","id":1}"#.to_vec(),
            StatusCode::OK,
        ),
        (b"{oops".to_vec(), StatusCode::BAD_REQUEST),
        (b"{} {}".to_vec(), StatusCode::BAD_REQUEST),
    ];
    for (body, status) in bodies {
        let reply = client.exchange(post(full(body.clone()))).await;
        assert_eq!(reply.status, status, "{}", String::from_utf8_lossy(&body));
        reply.assert_json_content_type();
        let _ = reply.json();
    }
    let reply = server
        .client()
        .await
        .exchange(post(full(echo_of_size(1, 2000))))
        .await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    reply.assert_json_content_type();
    let _ = reply.json();
    // A streaming session's response.
    let (writer, body) = channel_body();
    writer.line(&initialize());
    writer.end();
    let response = server.client().await.send(post(body)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_json_content_type(response.headers());
}

// --------------------------------------------------- single exchange --

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_exchange_serves_execute_tool_without_a_handshake() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let reply = client.post(&echo(2, "no handshake")).await;
    assert_eq!(reply.status, StatusCode::OK);
    reply.assert_json_content_type();
    let body = reply.json();
    assert_eq!(
        result(&body, 2),
        &json!({"output": {"message": "no handshake"}})
    );

    // The other methods too, each its own implicit session.
    let reply = client
        .post(&request_msg(json!("t"), "mcp/listTools", json!({})))
        .await;
    let tools = reply.json();
    assert_eq!(tools["id"], "t");
    assert_eq!(tools["result"].as_array().map(Vec::len), Some(4), "{tools}");
    let reply = client
        .post(&request_msg(json!(3), "mcp/listResources", json!({})))
        .await;
    let ids: Vec<Value> = result(&reply.json(), 3)
        .as_array()
        .expect("an array")
        .iter()
        .map(|r| r["mcpId"].clone())
        .collect();
    assert_eq!(ids, vec![json!(NOTES), json!(COUNTER)]);
    let reply = client
        .post(&request_msg(json!(4), "mcp/listPrompts", json!({})))
        .await;
    assert_eq!(result(&reply.json(), 4)[0]["mcpId"], PLANNER);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_exchange_batch_gets_an_array_of_replies() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let batch = json!([
        echo(1, "one"),
        notification("$/setTrace", json!({"value": "off"})),
        sleep(2, 20),
        request_msg(json!("three"), "mcp/listPrompts", json!(null)),
        request_msg(json!(4), "mcp/nope", json!({})),
    ]);
    let reply = client.post(&batch).await;
    assert_eq!(reply.status, StatusCode::OK);
    reply.assert_json_content_type();
    let body = reply.json();
    let replies = body
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {body}"));
    assert_eq!(replies.len(), 4, "{body}");
    let by_id = |id: Value| {
        replies
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no reply to {id}: {body}"))
    };
    assert_eq!(by_id(json!(1))["result"]["output"]["message"], "one");
    assert_eq!(by_id(json!(2))["result"]["output"]["sleptMs"], 20);
    assert!(by_id(json!("three"))["result"].is_array());
    assert_eq!(error_code(by_id(json!(4))), -32601);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_exchange_initialize_later_in_a_batch_is_invalid_request() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let batch = json!([echo(5, "first"), initialize()]);
    let reply = client.post(&batch).await;
    assert_eq!(reply.status, StatusCode::OK);
    let body = reply.json();
    let replies = body
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {body}"));
    assert_eq!(replies.len(), 2, "{body}");
    let init = replies
        .iter()
        .find(|r| r["id"] == 1)
        .expect("a reply to initialize");
    assert_eq!(error_code(init), -32600, "{body}");
    let echoed = replies
        .iter()
        .find(|r| r["id"] == 5)
        .expect("a reply to echo");
    assert_eq!(echoed["result"]["output"]["message"], "first");
}

// ------------------------------------------------ streaming session --

/// Opens a streaming session on `client` whose `initialize` is split across
/// two chunks; returns the writer, the response head and the reader.
async fn open_session(client: &mut Client) -> (BodyWriter, hyper::HeaderMap, StatusCode, Lines) {
    let (writer, body) = channel_body();
    let pending = client.start(post(body)).await;
    let init = serde_json::to_vec(&initialize()).expect("json");
    let (a, b) = init.split_at(init.len() / 2);
    writer.send(a.to_vec());
    tokio::time::sleep(Duration::from_millis(50)).await;
    writer.send([b, b"\n"].concat());
    let response = head(pending).await;
    let headers = response.headers().clone();
    let status = response.status();
    let mut lines = Lines::new(response);
    let reply = lines.reply(json!(1)).await;
    assert!(result(&reply, 1)["capabilities"].is_object(), "{reply}");
    (writer, headers, status, lines)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_session_is_200_chunked_json_lines_answered_while_the_body_is_open() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let (writer, headers, status, mut lines) = open_session(&mut client).await;
    assert_eq!(status, StatusCode::OK);
    assert_json_content_type(&headers);
    assert!(headers.get(CONTENT_LENGTH).is_none(), "{headers:?}");
    let te = headers
        .get(TRANSFER_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(te.contains("chunked"), "Transfer-Encoding: {te:?}");

    writer.line(&initialized());
    // A request split across two chunks with a pause between them.
    let message = serde_json::to_vec(&echo(2, "split")).expect("json");
    let (a, b) = message.split_at(17);
    writer.send(a.to_vec());
    tokio::time::sleep(Duration::from_millis(50)).await;
    writer.send([b, b"\n"].concat());
    assert_eq!(
        result(&lines.reply(json!(2)).await, 2)["output"]["message"],
        "split"
    );

    // A pretty-printed request, answered as one compact line.
    let pretty = serde_json::to_string_pretty(&echo(3, "pretty\nprinted")).expect("json");
    assert!(pretty.contains('\n'));
    writer.send(pretty + "\n");
    assert_eq!(
        result(&lines.reply(json!(3)).await, 3)["output"]["message"],
        "pretty\nprinted"
    );

    // Two requests in one chunk; the body stays open throughout.
    let mut both = serde_json::to_vec(&echo(4, "a")).expect("json");
    both.push(b'\n');
    both.extend(
        serde_json::to_vec(&request_msg(json!(5), "mcp/listTools", json!({}))).expect("json"),
    );
    both.push(b'\n');
    writer.send(both);
    assert_eq!(
        result(&lines.reply(json!(4)).await, 4)["output"]["message"],
        "a"
    );
    assert!(result(&lines.reply(json!(5)).await, 5).is_array());

    // Still open: nothing more comes, and the response has not ended.
    assert!(matches!(lines.within(QUIET).await, Next::Nothing));
    writer.end();
    let rest = lines.rest().await;
    assert!(rest.is_empty(), "{rest:?}");
}

/// A method name is a JSON string, which may be written with escapes: an
/// `initialize` spelled `\u0069nitialize` opens a streaming session too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_initialize_written_with_an_escape_opens_a_streaming_session() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let (writer, body) = channel_body();
    let pending = client.start(post(body)).await;
    let init = serde_json::to_string(&initialize()).expect("json");
    assert!(init.contains(r#""initialize""#), "{init}");
    let escaped = init.replace(r#""initialize""#, r#""\u0069nitialize""#);
    writer.send(escaped.into_bytes());
    let response = head(pending).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut lines = Lines::new(response);
    assert!(result(&lines.reply(json!(1)).await, 1)["capabilities"].is_object());
    // The body is still open: the session answers while it is.
    writer.line(&initialized());
    writer.line(&echo(2, "streamed"));
    assert_eq!(
        result(&lines.reply(json!(2)).await, 2)["output"]["message"],
        "streamed"
    );
    writer.end();
}

/// A client that reads nothing holds at most `max_queued_output` bytes of
/// a session's output (with what the sockets buffer): the session's work
/// then waits to send, and its reader reads no more requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_session_whose_client_reads_nothing_runs_no_more_than_its_output_bound_holds() {
    const BLOB: &str = "mcp://http-test/tools/blob:v1";
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = calls.clone();
    let blob = clawmcp::tool_fn(
        clawmcp::definition::ToolDefinition {
            mcp_id: BLOB.into(),
            name: "blob".into(),
            description: "Half a megabyte of text.".into(),
            input_schema: json!({"type": "object"}),
            output_schema: json!({"type": "object"}),
        },
        move |_args, _ctx| {
            counted.fetch_add(1, Ordering::SeqCst);
            async move { Ok(json!({ "blob": "x".repeat(512 * 1024) })) }
        },
    );
    let server = TestServer::start_with(HttpConfig::default(), |b| {
        b.tool(blob).max_queued_output(1024 * 1024)
    })
    .await;
    let mut client = server.client().await;
    let (writer, body) = channel_body();
    let pending = client.start(post(body)).await;
    writer.line(&initialize());
    let _unread = head(pending).await;
    writer.line(&initialized());
    let sent = 300;
    for id in 0..sent {
        writer.line(&execute(id, BLOB, json!({})));
    }
    // Wait until the calls stop coming.
    let ran = settled(&calls).await;
    // 150 MB of replies were asked for; the bound (1 MiB), the sockets'
    // buffers and the requests in flight hold a few dozen of them.
    assert!(ran > 0, "some calls ran");
    assert!(
        ran < 120,
        "{ran} of {sent} calls ran with their replies unread: the output is not bounded"
    );
    // The server serves other clients meanwhile.
    let reply = server.client().await.post(&echo(1, "still here")).await;
    assert_eq!(result(&reply.json(), 1)["output"]["message"], "still here");
}

/// A client that reads nothing of what the server has to send is cut off
/// after the send timeout, and its session ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_reads_nothing_for_the_send_timeout_is_cut_off() {
    let config = HttpConfig::default().send_timeout(Duration::from_millis(300));
    let server = TestServer::start(config).await;
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket
        .set_recv_buffer_size(4096)
        .expect("a small receive buffer");
    let mut stream = socket.connect(server.addr).await.expect("connect");
    let mut request = b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n\
        content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
        .to_vec();
    let mut lines = Vec::new();
    for message in [initialize(), initialized()] {
        lines.extend(serde_json::to_vec(&message).expect("json"));
        lines.push(b'\n');
    }
    // Forty echoes of 256 KiB: 10 MiB of replies, more than the sockets hold.
    for id in 2..42 {
        lines.extend(serde_json::to_vec(&echo(id, &"x".repeat(256 * 1024))).expect("json"));
        lines.push(b'\n');
    }
    request.extend(format!("{:x}\r\n", lines.len()).as_bytes());
    request.extend(lines);
    request.extend(b"\r\n");
    stream
        .write_all(&request)
        .await
        .expect("write the session's requests");
    // Read nothing past the timeout, then all there is: the server gave up.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut answer = Vec::new();
    let read = timeout(PATIENCE, async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the connection ended (the body never did)");
    assert!(
        answer.len() < 40 * 256 * 1024,
        "{} bytes came: the server wrote on instead of giving up",
        answer.len()
    );
    // Others are served.
    let reply = server.client().await.post(&echo(1, "after")).await;
    assert_eq!(result(&reply.json(), 1)["output"]["message"], "after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_session_runs_the_full_handshake() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let (writer, body) = channel_body();
    let pending = client.start(post(body)).await;
    // initialize with the wrong id opens the session but is refused; the
    // session keeps waiting for a correct one.
    writer.line(&request_msg(
        json!(2),
        "initialize",
        json!({"clientCapabilities": {}}),
    ));
    let mut lines = Lines::new(head(pending).await);
    assert_eq!(error_code(&lines.reply(json!(2)).await), -32600);
    writer.line(&echo(3, "too early"));
    assert_eq!(error_code(&lines.reply(json!(3)).await), -32002);
    writer.line(&initialize());
    assert!(result(&lines.reply(json!(1)).await, 1)["serverInfo"].is_object());
    // Served between the initialize reply and initialized.
    writer.line(&echo(4, "before initialized"));
    assert_eq!(
        result(&lines.reply(json!(4)).await, 4)["output"]["message"],
        "before initialized"
    );
    writer.line(&initialized());
    writer.line(&request_msg(
        json!(5),
        "initialize",
        json!({"clientCapabilities": {}}),
    ));
    assert_eq!(error_code(&lines.reply(json!(5)).await), -32600);
    writer.end();
    assert!(lines.rest().await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_session_receives_resource_did_change_fired_by_another_client() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let (writer, _, _, mut lines) = open_session(&mut client).await;
    writer.line(&initialized());
    // A request after initialized: once it is answered, the session is ready.
    writer.line(&echo(2, "ready?"));
    lines.reply(json!(2)).await;

    // A second client's single exchange fires the change of a TextResource...
    let mut other = server.client().await;
    let reply = other
        .post(&execute(10, TOUCH, json!({"mcpId": NOTES})))
        .await;
    assert_eq!(result(&reply.json(), 10)["output"]["touched"], NOTES);
    let pushed = lines.next().await.expect("a notification");
    assert_eq!(pushed, resource_did_change(NOTES));

    // ... and of a custom Resource.
    let reply = other.post(&execute(11, BUMP, json!({}))).await;
    assert_eq!(result(&reply.json(), 11)["output"]["count"], 1);
    let pushed = lines.next().await.expect("a notification");
    assert_eq!(pushed, resource_did_change(COUNTER));
    // The content read afterwards is the new one.
    writer.line(&request_msg(json!(3), "mcp/listResources", json!({})));
    let listed = lines.reply(json!(3)).await;
    let counter = result(&listed, 3)
        .as_array()
        .and_then(|r| r.iter().find(|r| r["mcpId"] == COUNTER))
        .expect("the counter resource");
    assert_eq!(counter["content"], "1");

    // The single exchange itself got nothing but its reply (checked by
    // Reply::json parsing one value); the stream ends cleanly.
    assert_eq!(server.server.handle().ready_sessions(), 1);
    writer.end();
    let rest = lines.rest().await;
    assert!(rest.is_empty(), "{rest:?}");
    // No state is kept once the response has ended.
    wait_no_sessions(&server).await;
}

/// Waits until no session receives notifications any more.
async fn wait_no_sessions(server: &TestServer) {
    let handle = server.server.handle();
    timeout(PATIENCE, async {
        while handle.ready_sessions() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the session was unregistered within PATIENCE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_session_keeps_no_state_after_the_client_disconnects() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let (writer, _, _, mut lines) = open_session(&mut client).await;
    writer.line(&initialized());
    writer.line(&echo(2, "ready"));
    lines.reply(json!(2)).await;
    assert_eq!(server.server.handle().ready_sessions(), 1);
    // The client goes away mid-session, body still open.
    drop(lines);
    client.close().await;
    drop(writer);
    wait_no_sessions(&server).await;
    // Changes fired now go nowhere, and the server serves on.
    let reply = server
        .client()
        .await
        .post(&execute(3, TOUCH, json!({"mcpId": NOTES})))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_session_gets_no_push_before_initialized() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let (writer, _, _, mut lines) = open_session(&mut client).await;
    // Past the initialize reply, before initialized: a change is not pushed.
    let mut other = server.client().await;
    let reply = other
        .post(&execute(10, TOUCH, json!({"mcpId": NOTES})))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    match lines.within(QUIET).await {
        Next::Nothing => {}
        seen => panic!("before initialized the stream got {seen:?}"),
    }
    writer.line(&echo(2, "still before initialized"));
    lines.reply(json!(2)).await;
    assert!(lines.skipped.is_empty(), "{:?}", lines.skipped);

    // After initialized, the next change is.
    writer.line(&initialized());
    writer.line(&echo(3, "ready"));
    lines.reply(json!(3)).await;
    other
        .post(&execute(11, TOUCH, json!({"mcpId": NOTES})))
        .await;
    assert_eq!(lines.next().await, Some(resource_did_change(NOTES)));
    writer.end();
    let rest = lines.rest().await;
    assert!(rest.is_empty(), "exactly one notification in all: {rest:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_session_ends_after_the_body_ends_and_every_reply_is_written() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let (writer, _, _, mut lines) = open_session(&mut client).await;
    writer.line(&initialized());
    writer.line(&sleep(2, 300));
    writer.line(&echo(3, "last"));
    writer.end();
    let rest = lines.rest().await;
    assert_eq!(rest.len(), 2, "{rest:?}");
    let slept = rest.iter().find(|m| m["id"] == 2).expect("the sleep reply");
    assert_eq!(slept["result"]["output"]["sleptMs"], 300);
    let echoed = rest.iter().find(|m| m["id"] == 3).expect("the echo reply");
    assert_eq!(echoed["result"]["output"]["message"], "last");

    // The connection is reusable after the session.
    let reply = client.post(&echo(4, "next")).await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_cancel_request_answers_32003() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let (writer, _, _, mut lines) = open_session(&mut client).await;
    writer.line(&initialized());
    writer.line(&sleep(7, 30_000));
    server.probe.wait_started(1).await;
    // Requests run concurrently: another one is answered meanwhile.
    writer.line(&echo(6, "meanwhile"));
    assert_eq!(
        result(&lines.reply(json!(6)).await, 6)["output"]["message"],
        "meanwhile"
    );
    writer.line(&notification("$/cancelRequest", json!({"id": 7})));
    let reply = lines.reply(json!(7)).await;
    assert_eq!(error_code(&reply), -32003, "{reply}");
    // The session goes on.
    writer.line(&echo(8, "after cancel"));
    assert_eq!(
        result(&lines.reply(json!(8)).await, 8)["output"]["message"],
        "after cancel"
    );
    writer.end();
    assert!(lines.rest().await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_message_over_the_limit_is_32006_on_the_stream() {
    let server = TestServer::start_with(HttpConfig::default(), |b| b.max_message_size(1024)).await;
    let mut client = server.client().await;
    let (writer, headers, status, mut lines) = open_session(&mut client).await;
    assert_eq!(status, StatusCode::OK, "{headers:?}");
    writer.line(&initialized());
    let mut big = echo_of_size(2, 3000);
    big.push(b'\n');
    for piece in big.chunks(700) {
        writer.send(piece.to_vec());
    }
    let error = lines.next().await.expect("the -32006 error");
    assert_eq!(error_code(&error), -32006, "{error}");
    assert_eq!(error["id"], Value::Null);
    writer.line(&echo(3, "small"));
    assert_eq!(
        result(&lines.reply(json!(3)).await, 3)["output"]["message"],
        "small"
    );
    writer.end();
    assert!(lines.rest().await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_bad_input_is_answered_on_the_stream_and_the_session_goes_on() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let (writer, _, _, mut lines) = open_session(&mut client).await;
    writer.line(&initialized());
    writer.send("{this is not json}\n");
    let error = lines.next().await.expect("a parse error");
    assert_eq!(error_code(&error), -32700, "{error}");
    assert_eq!(error["id"], Value::Null);
    writer.line(&json!({"jsonrpc": "2.0", "method": 5, "id": 2}));
    assert_eq!(error_code(&lines.reply(json!(2)).await), -32600);
    writer.line(&echo(3, "still going"));
    assert_eq!(
        result(&lines.reply(json!(3)).await, 3)["output"]["message"],
        "still going"
    );
    // The body ends in the middle of a value.
    writer.send(r#"{"jsonrpc":"2.0","method":"mcp/listTo"#);
    writer.end();
    let rest = lines.rest().await;
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(error_code(&rest[0]), -32700, "{rest:?}");
}

// ---------------------------------------------------------- keep-alive --

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_kept_alive_between_requests() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let reply = client.post(&echo(1, "one")).await;
    assert_eq!(result(&reply.json(), 1)["output"]["message"], "one");
    let reply = client
        .post(&request_msg(json!(2), "mcp/listTools", json!({})))
        .await;
    assert!(result(&reply.json(), 2).is_array());
    let reply = client.post(&initialized()).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);

    let (writer, _, _, mut lines) = open_session(&mut client).await;
    writer.line(&initialized());
    writer.line(&echo(3, "in the stream"));
    writer.end();
    let rest = lines.rest().await;
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0]["result"]["output"]["message"], "in the stream");

    let reply = client.post(&echo(4, "after the stream")).await;
    assert_eq!(
        result(&reply.json(), 4)["output"]["message"],
        "after the stream"
    );
    let reply = client.post(&sleep(5, 10)).await;
    assert_eq!(result(&reply.json(), 5)["output"]["sleptMs"], 10);
}

// --------------------------------------------------- graceful shutdown --

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_finishes_a_single_exchange_in_flight_then_refuses_connections() {
    let mut server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let pending = client.start(post_json(&sleep(1, 500))).await;
    server.probe.wait_started(1).await;
    server.shutdown();
    let reply = Reply::read(head(pending).await).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(result(&reply.json(), 1)["output"]["sleptMs"], 500);
    server.join().await.expect("serve_http_on returns Ok");
    let refused = timeout(PATIENCE, TcpStream::connect(server.addr))
        .await
        .expect("connect answers within PATIENCE");
    assert!(
        refused.is_err(),
        "a new connection was accepted after shutdown"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_ends_an_open_streaming_session_after_its_replies() {
    let mut server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let (writer, _, _, mut lines) = open_session(&mut client).await;
    writer.line(&initialized());
    writer.line(&echo(2, "before"));
    lines.reply(json!(2)).await;
    writer.line(&sleep(3, 300));
    server.probe.wait_started(1).await;
    server.shutdown();
    // The body stays open, yet the response ends, with the sleep's reply.
    let rest = lines.rest().await;
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(result(&rest[0], 3)["output"]["sleptMs"], 300);
    server.join().await.expect("serve_http_on returns Ok");
    drop(writer);
}

// -------------------------------------------------- header read timeout --

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_read_timeout_closes_a_stalled_connection_while_others_are_served() {
    let config = HttpConfig::default().header_read_timeout(Duration::from_millis(300));
    let server = TestServer::start(config).await;
    let mut stalled = TcpStream::connect(server.addr).await.expect("connect");
    stalled
        .write_all(b"POST /mc")
        .await
        .expect("write half a line");

    // Another client is served meanwhile.
    let reply = server.client().await.post(&echo(1, "meanwhile")).await;
    assert_eq!(result(&reply.json(), 1)["output"]["message"], "meanwhile");

    let closed = timeout(Duration::from_secs(5), async {
        let mut buf = [0u8; 1024];
        loop {
            match stalled.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {} // e.g. an error response before the close
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the stalled connection was not closed");

    // The server goes on serving.
    let reply = server.client().await.post(&echo(2, "after")).await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_read_timeout_closes_a_connection_that_sends_nothing() {
    let config = HttpConfig::default().header_read_timeout(Duration::from_millis(300));
    let server = TestServer::start(config).await;
    let mut silent = TcpStream::connect(server.addr).await.expect("connect");
    let closed = timeout(Duration::from_secs(5), async {
        let mut buf = [0u8; 1024];
        loop {
            match silent.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the silent connection was not closed");
    let reply = server.client().await.post(&echo(1, "after")).await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_read_timeout_closes_an_idle_kept_alive_connection() {
    // HttpConfig::header_read_timeout: "and how long a kept-alive connection
    // may stay idle between requests".
    let config = HttpConfig::default().header_read_timeout(Duration::from_millis(300));
    let server = TestServer::start(config).await;
    let mut raw = TcpStream::connect(server.addr).await.expect("connect");
    let body = serde_json::to_string(&echo(1, "idle")).expect("json");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    raw.write_all(format!("{head}{body}").as_bytes())
        .await
        .expect("write a request");
    let mut seen = Vec::new();
    let closed = timeout(Duration::from_secs(5), async {
        let mut buf = [0u8; 4096];
        loop {
            match raw.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    let seen = String::from_utf8_lossy(&seen);
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
    assert!(seen.contains("\"idle\""), "{seen}");
    assert!(
        closed.is_ok(),
        "the idle kept-alive connection was not closed"
    );
}

// ---------------------------------------------------- connection limit --

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_connections_holds_further_connections_until_one_closes() {
    let config = HttpConfig::default().max_connections(1);
    let server = TestServer::start(config).await;
    let mut first = server.client().await;
    // The first connection is accepted and served (and stays open).
    let reply = first.post(&echo(1, "first")).await;
    assert_eq!(reply.status, StatusCode::OK);

    let first_closed = Arc::new(AtomicBool::new(false));
    let addr = server.addr;
    let seen_closed = first_closed.clone();
    let mut second = tokio::spawn(async move {
        let mut client = Client::connect(addr).await;
        let pending = client.start(post_json(&echo(2, "second"))).await;
        let response = pending.await.expect("a response");
        let served_after_close = seen_closed.load(Ordering::SeqCst);
        (Reply::read(response).await, served_after_close)
    });
    // Not served while the first is open.
    assert!(
        timeout(QUIET, &mut second).await.is_err(),
        "the second connection was served while the first was open"
    );
    first_closed.store(true, Ordering::SeqCst);
    first.close().await;
    let (reply, served_after_close) = timeout(PATIENCE, second)
        .await
        .expect("the second connection is served once the first closes")
        .expect("the client task did not panic");
    assert!(served_after_close);
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(result(&reply.json(), 2)["output"]["message"], "second");
}

/// docs/model-context.md §1: only an `Accept` that lists `text/event-stream` by
/// name makes a request Streamable HTTP; curl's default `*/*` is MCP v1.0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1_exchange_with_curls_default_accept_stays_mcp_v1() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client().await;
    let body = serde_json::to_vec(&echo(1, "curl")).expect("serialisable");
    let reply = client
        .exchange(post_with(&[("accept", "*/*")], full(body)))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(result(&reply.json(), 1)["output"]["message"], "curl");
}
