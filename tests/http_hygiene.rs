//! docs/mcp-v1.md §8, connection hygiene and who may connect, tried as a
//! pooled client and a hostile one would, over raw TCP:
//! - a response sent before its request's body was read either drains the
//!   body and keeps the connection, or says `Connection: close` and closes
//!   cleanly (no reset): never a silent close;
//! - `Host` is required once (HTTP/1.1) and must be loopback on a loopback
//!   listener; `Origin` is parsed as a browser parses it, at most once;
//! - a trickling single-exchange body meets a total deadline, streams are
//!   bounded apart from connections, an HTTP/2 client is refused in HTTP/2.

mod http_support;

use std::time::Duration;

use clawmcp::transport::HttpConfig;
use http_support::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

/// A response head and body, read off a raw connection.
#[derive(Debug)]
struct Raw {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Raw {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn closes(&self) -> bool {
        self.header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }
}

/// Reads one response (a `Content-Length` or chunked body) from `stream`,
/// keeping bytes after it in `pending`.
async fn read_response(stream: &mut TcpStream, pending: &mut Vec<u8>) -> Raw {
    timeout(PATIENCE, async {
        let head_end = loop {
            if let Some(i) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            fill(stream, pending).await;
        };
        let head = String::from_utf8_lossy(&pending[..head_end]).into_owned();
        pending.drain(..head_end + 4);
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse().ok())
            .expect("a status line");
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
            .collect();
        let find = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let body = if let Some(length) = find("content-length") {
            let length: usize = length.parse().expect("a length");
            while pending.len() < length {
                fill(stream, pending).await;
            }
            pending.drain(..length).collect()
        } else if find("transfer-encoding").is_some() {
            let mut body = Vec::new();
            loop {
                let line_end = loop {
                    if let Some(i) = pending.windows(2).position(|w| w == b"\r\n") {
                        break i;
                    }
                    fill(stream, pending).await;
                };
                let size =
                    usize::from_str_radix(String::from_utf8_lossy(&pending[..line_end]).trim(), 16)
                        .expect("a chunk size");
                pending.drain(..line_end + 2);
                while pending.len() < size + 2 {
                    fill(stream, pending).await;
                }
                body.extend(pending.drain(..size));
                pending.drain(..2);
                if size == 0 {
                    break body;
                }
            }
        } else {
            Vec::new()
        };
        Raw {
            status,
            headers,
            body,
        }
    })
    .await
    .expect("a whole response within PATIENCE")
}

async fn fill(stream: &mut TcpStream, pending: &mut Vec<u8>) {
    let mut buf = [0u8; 16 * 1024];
    match stream.read(&mut buf).await {
        Ok(0) => panic!("the connection closed before the response was complete"),
        Ok(n) => pending.extend_from_slice(&buf[..n]),
        Err(e) => panic!("the response was lost: {e}"),
    }
}

/// After a response: the connection serves the next request, or it said
/// `Connection: close` and now ends with a clean EOF (no reset).
async fn assert_not_silently_closed(stream: &mut TcpStream, pending: &mut Vec<u8>, reply: &Raw) {
    if reply.closes() {
        let mut buf = [0u8; 4096];
        let end = timeout(PATIENCE, async {
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) => return Ok(()),
                    Ok(_) => {}
                    Err(e) => return Err(e),
                }
            }
        })
        .await
        .expect("the connection closes after Connection: close");
        assert!(end.is_ok(), "a reset instead of a clean close: {end:?}");
        return;
    }
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "mcp/listPrompts"}).to_string();
    let next = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Authorization: Bearer s3cret\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(next.as_bytes())
        .await
        .expect("the kept connection takes the next request");
    let second = read_response(stream, pending).await;
    assert_eq!(
        second.status, 200,
        "the next request on the kept connection"
    );
}

/// Sends `head` and a `body` of `size` bytes (written from a task of its
/// own while the response is read, as a real client does).
async fn send_with_body(server: &TestServer, head: &str, size: usize) -> (TcpStream, Vec<u8>, Raw) {
    let stream = TcpStream::connect(server.addr).await.expect("connect");
    let (mut read, mut write) = stream.into_split();
    let request = format!("{head}Content-Length: {size}\r\n\r\n").into_bytes();
    let writer = tokio::spawn(async move {
        let _ = write.write_all(&request).await;
        let chunk = vec![b' '; 16 * 1024];
        let mut left = size;
        while left > 0 {
            let n = left.min(chunk.len());
            if write.write_all(&chunk[..n]).await.is_err() {
                break;
            }
            left -= n;
        }
        write
    });
    let mut pending = Vec::new();
    let mut peek = TcpStreamRead(&mut read);
    let reply = peek.response(&mut pending).await;
    let write = writer.await.expect("the writer task");
    let stream = read.reunite(write).expect("one stream");
    (stream, pending, reply)
}

/// `read_response` on a read half.
struct TcpStreamRead<'a>(&'a mut tokio::net::tcp::OwnedReadHalf);

impl TcpStreamRead<'_> {
    async fn response(&mut self, pending: &mut Vec<u8>) -> Raw {
        // Read the head and body with the same logic as `read_response`.
        let mut buf = [0u8; 16 * 1024];
        timeout(PATIENCE, async {
            loop {
                if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&pending[..end]).to_lowercase();
                    let length = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    if pending.len() >= end + 4 + length {
                        break;
                    }
                }
                match self.0.read(&mut buf).await {
                    Ok(0) => panic!("the connection closed before the response"),
                    Ok(n) => pending.extend_from_slice(&buf[..n]),
                    Err(e) => panic!("the response was lost: {e}"),
                }
            }
        })
        .await
        .expect("a response within PATIENCE");
        let text = std::mem::take(pending);
        let end = text.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(0);
        let head = String::from_utf8_lossy(&text[..end]).into_owned();
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
            .collect();
        let length = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse::<usize>().ok())
            .unwrap_or(0);
        let body = text[end + 4..end + 4 + length].to_vec();
        pending.extend_from_slice(&text[end + 4 + length..]);
        Raw {
            status,
            headers,
            body,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_responses_with_unread_bodies_never_close_the_connection_silently() {
    let server = TestServer::start(HttpConfig::default().bearer_token("s3cret")).await;
    let auth = "Authorization: Bearer s3cret\r\n";
    let cases = [
        (
            404,
            format!("POST /elsewhere HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}"),
        ),
        (
            405,
            format!(
                "PUT /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Type: application/json\r\n"
            ),
        ),
        (
            415,
            format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Type: text/plain\r\n"),
        ),
        (
            403,
            format!(
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Origin: http://evil.example\r\nContent-Type: application/json\r\n"
            ),
        ),
        (
            401,
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                .to_owned(),
        ),
    ];
    for (status, head) in cases {
        for size in [1024, 64 * 1024, 1024 * 1024] {
            let (mut stream, mut pending, reply) = send_with_body(&server, &head, size).await;
            assert_eq!(reply.status, status, "{head} with {size} bytes");
            assert_not_silently_closed(&mut stream, &mut pending, &reply).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_limit_is_413_with_connection_close_and_a_clean_end() {
    let server = TestServer::start_with(HttpConfig::default(), |b| b.max_message_size(1024)).await;
    for size in [64 * 1024, 1024 * 1024] {
        let head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";
        let (mut stream, mut pending, reply) = send_with_body(&server, head, size).await;
        assert_eq!(reply.status, 413, "{size} bytes");
        assert!(reply.closes(), "413 says Connection: close");
        let body = String::from_utf8_lossy(&reply.body);
        assert!(body.contains("-32006"), "{body}");
        assert_not_silently_closed(&mut stream, &mut pending, &reply).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_chunk_size_is_400_with_connection_close() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    stream
        .write_all(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
              Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
        )
        .await
        .expect("write");
    let mut pending = Vec::new();
    let reply = read_response(&mut stream, &mut pending).await;
    assert_eq!(reply.status, 400);
    assert!(reply.closes(), "{:?}", reply.headers);
    assert_not_silently_closed(&mut stream, &mut pending, &reply).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_to_an_expect_100_continue_request_says_connection_close() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    stream
        .write_all(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n\
              Expect: 100-continue\r\nContent-Length: 100000\r\n\r\n",
        )
        .await
        .expect("write");
    let mut pending = Vec::new();
    let reply = read_response(&mut stream, &mut pending).await;
    assert_eq!(reply.status, 415);
    assert!(reply.closes(), "{:?}", reply.headers);
    assert_not_silently_closed(&mut stream, &mut pending, &reply).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_body_is_408_with_connection_close() {
    let config = HttpConfig::default().header_read_timeout(Duration::from_millis(300));
    let server = TestServer::start(config).await;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    stream
        .write_all(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
              Content-Length: 100\r\n\r\n{",
        )
        .await
        .expect("write");
    let mut pending = Vec::new();
    let reply = read_response(&mut stream, &mut pending).await;
    assert_eq!(reply.status, 408);
    assert!(reply.closes(), "{:?}", reply.headers);
    assert_not_silently_closed(&mut stream, &mut pending, &reply).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_trickles_past_the_body_timeout_is_408() {
    // Each byte comes well within the stall timer; the whole never does.
    let config = HttpConfig::default()
        .header_read_timeout(Duration::from_secs(2))
        .body_timeout(Duration::from_millis(800));
    let server = TestServer::start(config).await;
    let stream = TcpStream::connect(server.addr).await.expect("connect");
    let (mut read, mut write) = stream.into_split();
    write
        .write_all(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
              Content-Length: 1000\r\n\r\n",
        )
        .await
        .expect("write");
    let trickle = tokio::spawn(async move {
        for _ in 0..1000 {
            if write.write_all(b" ").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let mut pending = Vec::new();
    let reply = TcpStreamRead(&mut read).response(&mut pending).await;
    assert_eq!(reply.status, 408);
    assert!(reply.closes(), "{:?}", reply.headers);
    trickle.abort();
}

/// A timeout set past what a clock holds (`Duration::MAX`, "no limit")
/// is a very long one: a body read in pieces is served, the connection's
/// task does not panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_set_to_duration_max_are_very_long_not_a_panic() {
    let config = HttpConfig::default()
        .header_read_timeout(Duration::MAX)
        .body_timeout(Duration::MAX)
        .sse_keep_alive(Duration::MAX);
    let server = TestServer::start(config).await;
    let stream = TcpStream::connect(server.addr).await.expect("connect");
    let (mut read, mut write) = stream.into_split();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"mcp/listTools","params":{}}"#;
    let (first, rest) = body.split_at(10);
    write
        .write_all(
            format!(
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\n\r\n{first}",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .expect("write");
    tokio::time::sleep(Duration::from_millis(100)).await;
    write.write_all(rest.as_bytes()).await.expect("write");
    let mut pending = Vec::new();
    let reply = TcpStreamRead(&mut read).response(&mut pending).await;
    assert_eq!(reply.status, 200, "{:?}", reply.headers);

    // An event stream (an MCP v1.0 streaming session, its body open): its
    // keep-alive timer is set again as its first event goes.
    let initialize =
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{}}}"#;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    stream
        .write_all(
            format!(
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                 Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{initialize}\r\n",
                initialize.len()
            )
            .as_bytes(),
        )
        .await
        .expect("write");
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("\"id\":1") {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .expect("the stream's first event in time")
            .unwrap_or(0);
        assert!(
            n > 0,
            "the stream ended: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
}

async fn status_of(server: &TestServer, request: &str) -> Raw {
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut pending = Vec::new();
    read_response(&mut stream, &mut pending).await
}

fn list_tools(version: &str, headers: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "mcp/listTools"}).to_string();
    format!(
        "POST /mcp {version}\r\n{headers}Content-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_is_required_once_and_must_be_loopback_on_a_loopback_listener() {
    let server = TestServer::start(HttpConfig::default()).await;
    let port = server.addr.port();
    for (headers, status) in [
        (String::new(), 400),
        ("Host: 127.0.0.1\r\nHost: 127.0.0.1\r\n".to_owned(), 400),
        ("Host: user@127.0.0.1\r\n".to_owned(), 400),
        ("Host: evil.example\r\n".to_owned(), 403),
        (format!("Host: evil.example:{port}\r\n"), 403),
        ("Host: 127.0.0.1.evil.example\r\n".to_owned(), 403),
        (format!("Host: 127.0.0.1:{port}\r\n"), 200),
        ("Host: 127.0.0.2\r\n".to_owned(), 200),
        (format!("Host: localhost:{port}\r\n"), 200),
        (format!("Host: [::1]:{port}\r\n"), 200),
    ] {
        let reply = status_of(&server, &list_tools("HTTP/1.1", &headers)).await;
        assert_eq!(reply.status, status, "{headers:?}");
    }
    // HTTP/1.0 does not require Host.
    let reply = status_of(&server, &list_tools("HTTP/1.0", "")).await;
    assert_eq!(reply.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_hosts_and_any_host_are_served() {
    let server = TestServer::start(HttpConfig::default().allow_host("mcp.example.com")).await;
    let reply = status_of(
        &server,
        &list_tools("HTTP/1.1", "Host: mcp.example.com:8080\r\n"),
    )
    .await;
    assert_eq!(reply.status, 200);
    let reply = status_of(
        &server,
        &list_tools("HTTP/1.1", "Host: other.example.com\r\n"),
    )
    .await;
    assert_eq!(reply.status, 403);
    let server = TestServer::start(HttpConfig::default().allow_any_host()).await;
    let reply = status_of(
        &server,
        &list_tools("HTTP/1.1", "Host: other.example.com\r\n"),
    )
    .await;
    assert_eq!(reply.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn origins_are_parsed_as_a_browser_parses_them() {
    let server = TestServer::start(HttpConfig::default()).await;
    for (origin, status) in [
        ("http://127.0.0.1:80@evil.com", 403),
        ("http://[::1].evil.com", 403),
        ("http://localhost:80.evil.com", 403),
        ("http://127.0.0.2", 200),
        ("http://127.0.0.2:3000", 200),
    ] {
        let headers = format!("Host: 127.0.0.1\r\nOrigin: {origin}\r\n");
        let reply = status_of(&server, &list_tools("HTTP/1.1", &headers)).await;
        assert_eq!(reply.status, status, "Origin: {origin}");
    }
    let two = "Host: 127.0.0.1\r\nOrigin: http://localhost\r\nOrigin: http://evil.com\r\n";
    let reply = status_of(&server, &list_tools("HTTP/1.1", two)).await;
    assert_eq!(reply.status, 400, "two Origin headers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_past_their_limit_get_503_and_exchanges_are_still_served() {
    let server = TestServer::start(HttpConfig::default().max_streams(1)).await;
    let mut first = server.client().await;
    let (writer, body) = channel_body();
    let pending = first.start(post(body)).await;
    writer.line(&initialize());
    let response = head(pending).await;
    assert_eq!(response.status(), 200);
    let mut second = server.client().await;
    let (writer2, body2) = channel_body();
    let pending = second.start(post(body2)).await;
    writer2.line(&initialize());
    let refused = Reply::read(head(pending).await).await;
    assert_eq!(refused.status, 503);
    assert_eq!(refused.header("retry-after"), Some("1"));
    // A single exchange is still served.
    let reply = server.client().await.post(&echo(5, "still")).await;
    assert_eq!(reply.status, 200);
    drop(writer);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http2_client_is_refused_with_goaway_http_1_1_required() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    stream
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .await
        .expect("write the preface");
    let mut got = Vec::new();
    let end = timeout(PATIENCE, stream.read_to_end(&mut got)).await;
    assert!(matches!(end, Ok(Ok(_))), "a clean close: {end:?}");
    // SETTINGS (type 4), then GOAWAY (type 7) with HTTP_1_1_REQUIRED (0xd).
    assert_eq!(got.len(), 26, "{got:?}");
    assert_eq!(got[3], 0x04);
    assert_eq!(got[12], 0x07);
    assert_eq!(&got[22..26], &[0, 0, 0, 0x0d]);
    // HTTP/1.1 on the same server is unaffected.
    let reply = server.client().await.post(&echo(1, "h1")).await;
    assert_eq!(reply.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_uploading_past_an_early_413_is_not_reset_and_reads_the_response() {
    // RFC 9112 §9.6: closing with unread data makes the kernel answer with a
    // reset, which destroys a response the client has not read yet. The
    // server half-closes and reads on instead.
    let server = TestServer::start_with(HttpConfig::default(), |b| b.max_message_size(1024)).await;
    let stream = TcpStream::connect(server.addr).await.expect("connect");
    let (mut read, mut write) = stream.into_split();
    let uploading = tokio::spawn(async move {
        write
            .write_all(
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                  Content-Length: 64000000\r\n\r\n",
            )
            .await?;
        let chunk = [b' '; 16 * 1024];
        for _ in 0..3900 {
            write.write_all(&chunk).await?;
            tokio::task::yield_now().await;
        }
        Ok::<_, std::io::Error>(write)
    });
    // The client reads nothing until its upload is done, and the upload
    // must not meet a reset (a client would report the request failed).
    let uploaded = timeout(PATIENCE, uploading)
        .await
        .expect("the upload ends")
        .expect("the upload task");
    assert!(uploaded.is_ok(), "the upload met {uploaded:?}");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut pending = Vec::new();
    let reply = TcpStreamRead(&mut read).response(&mut pending).await;
    assert_eq!(reply.status, 413);
    assert!(reply.closes());
}
