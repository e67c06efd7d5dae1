//! Limits per principal (docs/model-context.md §5, README "Limits"): one
//! client cannot take every long-lived stream or every session of an
//! endpoint. Without OAuth a principal is the peer's address; two loopback
//! addresses (127.0.0.1 and 127.0.0.2) stand for two clients, and 127.0.0.3
//! for a reverse proxy, which names its clients in `X-Forwarded-For` to an
//! endpoint that trusts it (`HttpConfig::trust_proxy`).

mod http_support;

use std::net::IpAddr;
use std::time::Duration;

use clawmcp::transport::HttpConfig;
use http_support::*;
use hyper::body::Incoming;
use hyper::{Method, Response, StatusCode};
use serde_json::json;

const FIRST: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 1));
const SECOND: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2));
/// A reverse proxy's address, in the tests that trust one.
const PROXY: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 3));

/// An MCP v1.0 streaming session opened from `source`: its body's writer
/// (the stream stays open while it lives), and the response.
async fn v1_stream(
    server: &TestServer,
    source: IpAddr,
) -> (Client, BodyWriter, Response<Incoming>) {
    let mut client = Client::connect_from(server.addr, source).await;
    let (writer, body) = channel_body();
    let pending = client.start(post(body)).await;
    writer.line(&initialize());
    let response = head(pending).await;
    (client, writer, response)
}

/// A Model Context Protocol `initialize` from `source`: the response.
async fn open_session(server: &TestServer, source: IpAddr) -> Reply {
    open_session_with(server, source, &[]).await
}

/// [`open_session`] with `headers` besides `Accept`.
async fn open_session_with(server: &TestServer, source: IpAddr, headers: &[(&str, &str)]) -> Reply {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "1"}}});
    let mut all = vec![("accept", "application/json, text/event-stream")];
    all.extend_from_slice(headers);
    let request = post_with(&all, full(serde_json::to_vec(&init).expect("json")));
    Client::connect_from(server.addr, source)
        .await
        .exchange(request)
        .await
}

fn session_id(reply: &Reply) -> String {
    reply
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principal_past_its_streams_gets_429_while_another_still_opens_its_first() {
    let config = HttpConfig::default()
        .max_streams(8)
        .max_streams_per_principal(2);
    let server = TestServer::start(config).await;
    let first = v1_stream(&server, FIRST).await;
    let second = v1_stream(&server, FIRST).await;
    assert_eq!(first.2.status(), StatusCode::OK);
    assert_eq!(second.2.status(), StatusCode::OK);
    let (_c, _w, third) = v1_stream(&server, FIRST).await;
    assert_eq!(third.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(third.headers().contains_key("retry-after"));
    // Another principal still opens its first.
    let (_c2, _w2, other) = v1_stream(&server, SECOND).await;
    assert_eq!(other.status(), StatusCode::OK);
    // A GET stream counts against the same quota.
    let session = session_id(&open_session(&server, FIRST).await);
    let get = request(
        Method::GET,
        "/mcp",
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", &session),
        ],
        empty(),
    );
    let refused = Client::connect_from(server.addr, FIRST)
        .await
        .send(get)
        .await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    // Closing a stream gives its place back.
    let (client, writer, response) = first;
    writer.end();
    drop(response);
    client.close().await;
    let mut reopened = None;
    for _ in 0..100 {
        let (c, w, response) = v1_stream(&server, FIRST).await;
        if response.status() == StatusCode::OK {
            reopened = Some((c, w, response));
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(reopened.is_some(), "a closed stream's place is free again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principal_past_its_sessions_gets_429_and_deleting_one_frees_a_place() {
    let config = HttpConfig::default()
        .max_sessions(8)
        .max_sessions_per_principal(2);
    let server = TestServer::start(config).await;
    let one = open_session(&server, FIRST).await;
    let two = open_session(&server, FIRST).await;
    assert_eq!((one.status, two.status), (StatusCode::OK, StatusCode::OK));
    let three = open_session(&server, FIRST).await;
    assert_eq!(three.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(three.header("retry-after").is_some());
    assert_eq!(open_session(&server, SECOND).await.status, StatusCode::OK);
    let delete = request(
        Method::DELETE,
        "/mcp",
        &[("mcp-session-id", &session_id(&one))],
        empty(),
    );
    let deleted = Client::connect_from(server.addr, FIRST)
        .await
        .exchange(delete)
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    assert_eq!(open_session(&server, FIRST).await.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_a_principal_may_hold_a_quarter_of_the_endpoints_streams() {
    let server = TestServer::start(HttpConfig::default().max_streams(8)).await;
    let mut open = Vec::new();
    for _ in 0..2 {
        let stream = v1_stream(&server, FIRST).await;
        assert_eq!(stream.2.status(), StatusCode::OK);
        open.push(stream);
    }
    let (_c, _w, third) = v1_stream(&server, FIRST).await;
    assert_eq!(third.status(), StatusCode::TOO_MANY_REQUESTS);
}

/// A raw connection from `source` that sends one request and reads what
/// comes back until the server closes it (or a second passes).
async fn raw_exchange_from(server: &TestServer, source: IpAddr) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket
        .bind(std::net::SocketAddr::new(source, 0))
        .expect("bind the source address");
    let mut stream = socket.connect(server.addr).await.expect("connect");
    let body = serde_json::to_string(&echo(9, "raw")).expect("json");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_past_its_connections_gets_429_and_closed_while_another_connects() {
    let config = HttpConfig::default().max_connections_per_peer(2);
    let server = TestServer::start(config).await;
    // Two connections from the first address, held open.
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut client = Client::connect_from(server.addr, FIRST).await;
        let reply = client.post(&echo(1, "held")).await;
        assert_eq!(reply.status, StatusCode::OK);
        held.push(client);
    }
    let refused = raw_exchange_from(&server, FIRST).await;
    assert!(
        refused.starts_with("HTTP/1.1 429 ") && refused.contains("retry-after: 1"),
        "a third connection from the same address: {refused}"
    );
    assert!(refused.contains("max_connections_per_peer"), "{refused}");
    let served = raw_exchange_from(&server, SECOND).await;
    assert!(
        served.starts_with("HTTP/1.1 200 "),
        "another address: {served}"
    );
    // A connection that closes gives its place back.
    drop(held.pop());
    let mut again = None;
    for _ in 0..50 {
        let answer = raw_exchange_from(&server, FIRST).await;
        if answer.starts_with("HTTP/1.1 200 ") {
            again = Some(answer);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(again.is_some(), "the freed place is taken again");
}

/// `open_session_with` from the proxy, forwarding for `forwarded_for`.
async fn session_through_proxy(server: &TestServer, forwarded_for: &str) -> StatusCode {
    open_session_with(server, PROXY, &[("x-forwarded-for", forwarded_for)])
        .await
        .status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_trusted_proxy_each_forwarded_client_is_its_own_principal() {
    let config = HttpConfig::default()
        .trust_proxy(PROXY)
        .max_sessions_per_principal(1);
    let server = TestServer::start(config).await;
    assert_eq!(
        session_through_proxy(&server, "192.0.2.1").await,
        StatusCode::OK
    );
    assert_eq!(
        session_through_proxy(&server, "192.0.2.1").await,
        StatusCode::TOO_MANY_REQUESTS,
        "the same client again, through the proxy"
    );
    assert_eq!(
        session_through_proxy(&server, "192.0.2.2").await,
        StatusCode::OK,
        "another client behind the same proxy"
    );
    // A hop the client wrote itself, left of what the proxy appended, is
    // not believed: this is 192.0.2.1 again.
    assert_eq!(
        session_through_proxy(&server, "198.51.100.7, 192.0.2.1").await,
        StatusCode::TOO_MANY_REQUESTS
    );
    // Without the header the request is the proxy's own.
    assert_eq!(open_session(&server, PROXY).await.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x_forwarded_for_from_a_peer_that_is_not_trusted_is_ignored() {
    let config = HttpConfig::default()
        .trust_proxy(PROXY)
        .max_sessions_per_principal(1);
    let server = TestServer::start(config).await;
    let forwarding = |client| [("x-forwarded-for", client)];
    let first = open_session_with(&server, FIRST, &forwarding("192.0.2.1")).await;
    assert_eq!(first.status, StatusCode::OK);
    let second = open_session_with(&server, FIRST, &forwarding("192.0.2.2")).await;
    assert_eq!(
        second.status,
        StatusCode::TOO_MANY_REQUESTS,
        "a client naming another client is still its own address"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_proxys_connections_are_held_to_the_endpoints_limit_only() {
    let config = HttpConfig::default()
        .trust_proxy(PROXY)
        .max_connections_per_peer(1);
    let server = TestServer::start(config).await;
    let mut held = Vec::new();
    for n in 0..3 {
        let mut client = Client::connect_from(server.addr, PROXY).await;
        let reply = client.post(&echo(n, "through the proxy")).await;
        assert_eq!(
            reply.status,
            StatusCode::OK,
            "connection {n} from the proxy"
        );
        held.push(client);
    }
    let mut one = Client::connect_from(server.addr, FIRST).await;
    assert_eq!(one.post(&echo(1, "held")).await.status, StatusCode::OK);
    let refused = raw_exchange_from(&server, FIRST).await;
    assert!(
        refused.starts_with("HTTP/1.1 429 "),
        "another peer is still held to its limit: {refused}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mounted_endpoint_trusts_the_proxy_its_app_names_as_the_peer() {
    use clawmcp::transport::PeerAddr;
    let proxy: IpAddr = "192.0.2.10".parse().expect("an address");
    let server = clawmcp::Server::builder()
        .name("mounted")
        .build()
        .expect("builds");
    let service = server.http_service(
        HttpConfig::default()
            .path("/mcp")
            .trust_proxy(proxy)
            .max_sessions_per_principal(1),
    );
    // The app says which peer each request came on, as axum's
    // `ConnectInfo` would.
    let initialize = |forwarded_for: &str| {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                          "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                     "clientInfo": {"name": "t", "version": "1"}}});
        let mut request = post_with(
            &[
                ("accept", "application/json, text/event-stream"),
                ("x-forwarded-for", forwarded_for),
            ],
            full(serde_json::to_vec(&init).expect("json")),
        );
        request
            .extensions_mut()
            .insert(PeerAddr(std::net::SocketAddr::new(proxy, 40000)));
        request
    };
    let status = |response: Response<clawmcp::transport::McpBody>| response.status();
    assert_eq!(
        status(service.respond(initialize("203.0.113.1")).await),
        StatusCode::OK
    );
    assert_eq!(
        status(service.respond(initialize("203.0.113.1")).await),
        StatusCode::TOO_MANY_REQUESTS,
        "the same client again"
    );
    assert_eq!(
        status(service.respond(initialize("203.0.113.2")).await),
        StatusCode::OK,
        "another client behind the proxy the app named"
    );
}
