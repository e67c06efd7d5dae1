//! docs/mcp-v1.md §7: stdio framing through a whole session — tolerant input
//! headers, recovery from bad frames, byte-counted lengths, and output that
//! is nothing but exact `Content-Length: N\r\n\r\n` frames of compact JSON.

mod common;

use common::*;
use serde_json::{Value, json};

const LIST_PROMPTS: &str = r#"{"jsonrpc":"2.0","id":2,"method":"mcp/listPrompts"}"#;

/// A frame with the given header block (lines without line endings).
fn framed(headers: &[&str], eol: &str, body: &str) -> Vec<u8> {
    let mut out = String::new();
    for h in headers {
        out.push_str(h);
        out.push_str(eol);
    }
    out.push_str(eol);
    out.push_str(body);
    out.into_bytes()
}

/// Sends `bytes`, expects one reply to id 2 (the listPrompts request).
async fn expect_list_prompts_reply(client: &mut RawClient, bytes: &[u8], what: &str) {
    client.write(bytes).await;
    let reply = client.next().await;
    assert_eq!(reply["id"], json!(2), "{what}: {reply}");
    assert!(reply["result"].is_array(), "{what}: {reply}");
}

#[tokio::test]
async fn header_names_are_case_insensitive() {
    let (server, _) = server();
    let mut client = RawClient::initialized(&server).await;
    let n = LIST_PROMPTS.len();
    for name in [
        "content-length",
        "CONTENT-LENGTH",
        "Content-length",
        "cOnTeNt-LeNgTh",
    ] {
        let header = format!("{name}: {n}");
        expect_list_prompts_reply(&mut client, &framed(&[&header], "\r\n", LIST_PROMPTS), name)
            .await;
    }
    let header = format!("Content-Length: {n}");
    for ctype in [
        "content-type: application/json",
        "CONTENT-TYPE: application/json",
    ] {
        expect_list_prompts_reply(
            &mut client,
            &framed(&[&header, ctype], "\r\n", LIST_PROMPTS),
            ctype,
        )
        .await;
    }
}

#[tokio::test]
async fn content_type_variants_with_utf8_charset_are_accepted() {
    let (server, _) = server();
    let mut client = RawClient::initialized(&server).await;
    let length = format!("Content-Length: {}", LIST_PROMPTS.len());
    for ctype in [
        "application/json",
        "application/json; charset=utf-8",
        "application/json;charset=utf-8",
        "application/json; charset=UTF-8",
        "application/vscode-jsonrpc; charset=utf-8",
        "application/vscode-jsonrpc;charset=utf-8",
        "application/vscode-jsonrpc; charset=utf8",
        "application/json; charset=\"utf-8\"",
        "Application/JSON; Charset=UTF-8",
    ] {
        let header = format!("Content-Type: {ctype}");
        // Content-Type before and after Content-Length.
        expect_list_prompts_reply(
            &mut client,
            &framed(&[&length, &header], "\r\n", LIST_PROMPTS),
            ctype,
        )
        .await;
        expect_list_prompts_reply(
            &mut client,
            &framed(&[&header, &length], "\r\n", LIST_PROMPTS),
            ctype,
        )
        .await;
    }
}

#[tokio::test]
async fn unknown_headers_are_ignored() {
    let (server, _) = server();
    let mut client = RawClient::initialized(&server).await;
    let length = format!("Content-Length: {}", LIST_PROMPTS.len());
    let headers = [
        "X-Request-Tag: abc",
        &length,
        "User-Agent: test/1.0",
        "X-Empty:",
        "X-Colons: a:b:c",
    ];
    expect_list_prompts_reply(
        &mut client,
        &framed(&headers, "\r\n", LIST_PROMPTS),
        "unknown headers",
    )
    .await;
    // White space around the length value is tolerated too.
    let spaced = format!("Content-Length:   {}  ", LIST_PROMPTS.len());
    expect_list_prompts_reply(
        &mut client,
        &framed(&[&spaced], "\r\n", LIST_PROMPTS),
        "spaced",
    )
    .await;
}

#[tokio::test]
async fn bare_lf_line_endings_are_tolerated() {
    let (server, _) = server();
    let mut client = RawClient::initialized(&server).await;
    let length = format!("Content-Length: {}", LIST_PROMPTS.len());
    expect_list_prompts_reply(&mut client, &framed(&[&length], "\n", LIST_PROMPTS), "lf").await;
    expect_list_prompts_reply(
        &mut client,
        &framed(
            &[&length, "Content-Type: application/json"],
            "\n",
            LIST_PROMPTS,
        ),
        "lf with content-type",
    )
    .await;
    // Mixed: CRLF header line, bare LF blank line.
    let mixed = format!("{length}\r\n\n{LIST_PROMPTS}");
    expect_list_prompts_reply(&mut client, mixed.as_bytes(), "mixed").await;
}

#[tokio::test]
async fn garbage_header_block_gets_parse_error_with_null_id_then_next_frame_is_served() {
    let (server, _) = server();
    let mut client = RawClient::initialized(&server).await;
    for garbage in [
        &b"GARBAGE, NOT A HEADER\r\n\r\n"[..],
        b"Content-Length: abc\r\n\r\n",
        b"Content-Length: -5\r\n\r\n",
        b"Content-Type: application/json\r\n\r\n",
        b"\x00\x01\x02 binary\r\n\r\n",
    ] {
        let mut input = garbage.to_vec();
        input.extend(frame(LIST_PROMPTS));
        client.write(&input).await;
        let first = client.next().await;
        assert_error(&first, &Value::Null, -32700);
        // Resynchronised: the listPrompts frame is answered (perhaps after
        // more -32700 replies for leftover garbage lines).
        loop {
            let next = client.next().await;
            if next["id"] == json!(2) {
                assert_result(&next, &json!(2));
                break;
            }
            assert_error(&next, &Value::Null, -32700);
        }
    }
    assert_eq!(client.collect(QUIET).await, Vec::<String>::new());
}

#[tokio::test]
async fn body_that_is_not_utf8_json_gets_parse_error_and_the_session_continues() {
    let (server, _) = server();
    let mut client = RawClient::initialized(&server).await;
    let mut input = frame_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":\"x\"}");
    input.extend(frame_bytes(b"not json at all"));
    input.extend(frame(LIST_PROMPTS));
    client.write(&input).await;
    assert_error(&client.next().await, &Value::Null, -32700);
    assert_error(&client.next().await, &Value::Null, -32700);
    assert_result(&client.next().await, &json!(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_fed_one_byte_at_a_time_are_served() {
    let (server, _) = server();
    let mut client = RawClient::connect(&server);
    let mut input = frame(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{}}}"#,
    );
    input.extend(frame(r#"{"jsonrpc":"2.0","method":"initialized"}"#));
    input.extend(frame(
        r#"{"jsonrpc":"2.0","id":2,"method":"mcp/executeTool","params":{"id":"mcp://test/tools/echo:v1","arguments":{"message":"héllo ✓ 😀"}}}"#,
    ));
    client.write_bytewise(&input).await;
    assert_result(&client.next().await, &json!(1));
    assert_eq!(
        assert_result(&client.next().await, &json!(2)),
        json!({"output": {"message": "héllo ✓ 😀"}})
    );
}

#[tokio::test]
async fn many_frames_in_one_write_are_all_served() {
    let (server, _) = server();
    let mut client = RawClient::connect(&server);
    let mut input = frame(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{}}}"#,
    );
    input.extend(frame(r#"{"jsonrpc":"2.0","method":"initialized"}"#));
    for n in 2..52 {
        input.extend(frame(&format!(
            r#"{{"jsonrpc":"2.0","id":{n},"method":"mcp/listPrompts"}}"#
        )));
    }
    client.write(&input).await;
    let mut ids = Vec::new();
    for _ in 1..52 {
        let reply = client.next().await;
        ids.push(reply["id"].as_i64().expect("an integer id"));
    }
    ids.sort_unstable();
    assert_eq!(ids, (1..52).collect::<Vec<i64>>());
}

#[tokio::test]
async fn content_length_counts_utf8_bytes_in_and_out() {
    let (server, _) = server();
    let mut client = RawClient::initialized(&server).await;
    let text = "héllo ✓ 😀";
    assert_eq!(text.len(), 15, "bytes, not characters");
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"mcp/executeTool","params":{{"id":"{ECHO}","arguments":{{"message":"{text}"}}}}}}"#
    );
    client.write(&frame(&body)).await;
    // RawClient checks the output frame's length against the bytes.
    let reply = client.next_body().await.expect("a reply");
    let value: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(
        assert_result(&value, &json!(3)),
        json!({"output": {"message": text}})
    );
}

#[tokio::test]
async fn stray_blank_lines_between_frames_are_tolerated() {
    let (server, _) = server();
    let mut client = RawClient::initialized(&server).await;
    let mut input = b"\r\n\r\n".to_vec();
    input.extend(frame(LIST_PROMPTS));
    expect_list_prompts_reply(&mut client, &input, "blank lines").await;
}

#[tokio::test]
async fn every_output_frame_is_exact_content_length_and_compact_json() {
    let (server, probe) = server();
    let mut client = RawClient::connect(&server);
    let mut input = Vec::new();
    input.extend(frame(
        r#"{"jsonrpc":"2.0","id":9,"method":"mcp/listTools"}"#,
    ));
    input.extend(frame(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{},"trace":"verbose"}}"#,
    ));
    input.extend(frame(r#"{"jsonrpc":"2.0","method":"initialized"}"#));
    input.extend(frame(
        r#"{"jsonrpc":"2.0","id":2,"method":"mcp/listTools"}"#,
    ));
    input.extend(frame(
        r#"{"jsonrpc":"2.0","id":3,"method":"mcp/listResources"}"#,
    ));
    input.extend(frame(
        r#"{ "jsonrpc" : "2.0", "id" : 4, "method" : "mcp/executeTool", "params" : { "id" : "mcp://test/tools/touch:v1" } }"#,
    ));
    input.extend(frame(&execute(json!(5), FAIL, json!({})).to_string()));
    input.extend(frame(&execute(json!(6), PANIC, json!({})).to_string()));
    input.extend(frame(
        &execute(json!(7), ECHO, json!({"message": "a \"quoted\"\n line"})).to_string(),
    ));
    input.extend(frame(r#"[{"jsonrpc":"2.0","id":8,"method":"mcp/listPrompts"},{"jsonrpc":"2.0","id":10,"method":"no/such"}]"#));
    input.extend(frame("{not json"));
    input.extend(b"GARBAGE\r\n\r\n");
    input.extend(frame("[]"));
    client.write(&input).await;
    let (bodies, served) = client.close().await;
    assert!(served.is_ok(), "{served:?}");
    // RawClient already checked every byte: frames only, exact lengths,
    // compact JSON. Check that everything expected came.
    let values: Vec<Value> = bodies
        .iter()
        .map(|b| serde_json::from_str(b).unwrap())
        .collect();
    let mut ids: Vec<String> = values
        .iter()
        .filter(|v| v.get("method").is_none() && v.is_object())
        .map(|v| v["id"].to_string())
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        [
            "1", "2", "3", "4", "5", "6", "7", "9", "null", "null", "null"
        ],
        "{bodies:#?}"
    );
    assert!(values.iter().any(|v| v.is_array()), "the batch reply");
    assert!(
        values
            .iter()
            .any(|v| v["method"] == "mcp/resourceDidChange"),
        "the touch notification"
    );
    assert!(values.iter().any(|v| v["method"] == "$/logTrace"));
    assert_eq!(probe.executed(), 0);
}

#[tokio::test]
async fn white_space_around_a_json_body_is_part_of_the_body_and_accepted() {
    let (server, _) = server();
    let mut client = RawClient::initialized(&server).await;
    let padded = format!(" \r\n\t{LIST_PROMPTS}\r\n ");
    expect_list_prompts_reply(&mut client, &frame(&padded), "padded").await;
}

#[tokio::test]
async fn input_ending_inside_a_frame_still_ends_the_session_cleanly() {
    let (server, _) = server();
    for tail in [
        &b"Content-Length: 50\r\n\r\n{\"jsonrpc\""[..],
        b"Content-Length: 50\r\n",
        b"Content-Len",
    ] {
        let mut client = RawClient::initialized(&server).await;
        let mut input = frame(LIST_PROMPTS);
        input.extend_from_slice(tail);
        client.write(&input).await;
        let (bodies, served) = client.close().await;
        assert!(served.is_ok(), "{served:?}");
        let values: Vec<Value> = bodies
            .iter()
            .map(|b| serde_json::from_str(b).unwrap())
            .collect();
        assert_result(&values[0], &json!(2));
        // Whatever else is said about the unfinished frame is a parse error.
        for v in &values[1..] {
            assert_error(v, &Value::Null, -32700);
        }
    }
}

/// Frames written back to back (no line break after a body, as clients
/// write them) after a bad frame: the reader must find the next
/// `Content-Length` header even though it does not start a line.
async fn expect_recovery_after(bad: &[u8], what: &str) {
    let (server, _) = server();
    let mut client = RawClient::initialized(&server).await;
    let mut input = bad.to_vec();
    for n in 2..5 {
        input.extend(frame(&format!(
            r#"{{"jsonrpc":"2.0","id":{n},"method":"mcp/listPrompts"}}"#
        )));
    }
    client.write(&input).await;
    let (bodies, served) = client.close().await;
    assert!(served.is_ok(), "{what}: {served:?}");
    let values: Vec<Value> = bodies
        .iter()
        .map(|b| serde_json::from_str(b).unwrap())
        .collect();
    let mut answered = Vec::new();
    for v in &values {
        if v["id"].is_null() {
            assert_error(v, &Value::Null, -32700);
        } else {
            answered.push(v["id"].as_i64().expect("an integer id"));
        }
    }
    assert!(
        values.first().is_some_and(|v| v["id"].is_null()),
        "{what}: the bad frame is answered -32700 first: {values:?}"
    );
    // The first good frame may be swallowed by the bad one; the later
    // ones must be served.
    assert!(
        answered.contains(&3) && answered.contains(&4),
        "{what}: later well-formed frames are served: {values:?}"
    );
}

#[tokio::test]

async fn header_block_without_content_length_followed_by_back_to_back_frames_recovers() {
    expect_recovery_after(
        b"Content-Type: application/json\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}",
        "no Content-Length",
    )
    .await;
}

#[tokio::test]

async fn content_length_too_short_followed_by_back_to_back_frames_recovers() {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"mcp/listPrompts"}"#;
    let mut bad = b"Content-Length: 10\r\n\r\n".to_vec();
    bad.extend_from_slice(body.as_bytes());
    expect_recovery_after(&bad, "Content-Length too short").await;
}

#[tokio::test]

async fn garbage_without_line_break_followed_by_back_to_back_frames_recovers() {
    expect_recovery_after(b"GARBAGE", "garbage glued to the next header").await;
}

#[tokio::test]

async fn malformed_header_line_in_a_frame_followed_by_back_to_back_frames_recovers() {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"mcp/listPrompts"}"#;
    let bad = format!(
        "Content-Length: {}\r\nContent-Type application/json\r\n\r\n{body}",
        body.len()
    );
    expect_recovery_after(bad.as_bytes(), "a header line without a colon").await;
}
