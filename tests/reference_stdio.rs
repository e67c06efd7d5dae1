//! docs/mcp-v1.md §7 end to end: the built `reference` example as a process,
//! fed a whole session on stdin. stdout must be nothing but exact frames,
//! stderr must carry no frame, and the process exits 0 at stdin EOF.
//!
//! The reference example needs the default features (`http`, `schemars`).
#![cfg(all(feature = "http", feature = "schemars"))]

mod common;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::reference::reference_binary;
use common::{frame, split_frames};
use serde_json::{Value, json};

const BASE: &str = "mcp://clawmcp/examples";

struct Run {
    status: std::process::ExitStatus,
    stdout: Vec<u8>,
    stderr: String,
}

/// Runs the reference server with `input` on stdin (then EOF).
fn run_reference(root: &Path, input: Vec<u8>, rust_log: Option<&str>) -> Run {
    let mut command = Command::new(reference_binary());
    command
        .arg("--root")
        .arg(root)
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(filter) = rust_log {
        command.env("RUST_LOG", filter);
    }
    let mut child = command.spawn().expect("the reference server starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        // The server may stop reading early only if it dies; report, don't panic.
        let result = stdin.write_all(&input);
        drop(stdin); // EOF
        result
    });
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        stdout.read_to_end(&mut buf).map(|_| buf)
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        stderr.read_to_end(&mut buf).map(|_| buf)
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the server") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the reference server did not exit within 60 s of stdin EOF");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    writer
        .join()
        .expect("writer thread")
        .expect("the server read all of stdin");
    let stdout = out_reader.join().expect("stdout thread").expect("stdout");
    let stderr = err_reader.join().expect("stderr thread").expect("stderr");
    Run {
        status,
        stdout,
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

fn session_input() -> Vec<u8> {
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientCapabilities": {}}}),
        json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "mcp/listTools"}),
    ];
    let mut input = Vec::new();
    for m in &messages {
        input.extend(frame(&m.to_string()));
    }
    // A bad frame: an unreadable header block.
    input.extend(b"THIS IS NOT A HEADER\r\n\r\n");
    let more = [
        json!({"jsonrpc": "2.0", "id": 3, "method": "mcp/executeTool",
               "params": {"id": format!("{BASE}/tools/divide:v1"), "arguments": {"a": 1, "b": 0}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "mcp/executeTool",
               "params": {"id": format!("{BASE}/tools/file-writer:v1"),
                          "arguments": {"path": "out/hello.txt", "content": "Hello, world."}}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "mcp/executeTool",
               "params": {"id": format!("{BASE}/tools/file-writer:v1"),
                          "arguments": {"path": "x.txt"}}}),
        json!([
            {"jsonrpc": "2.0", "id": 6, "method": "mcp/listPrompts"},
            {"jsonrpc": "2.0", "id": 7, "method": "mcp/executeTool",
             "params": {"id": format!("{BASE}/tools/echo:v1"), "arguments": {"message": "héllo ✓ 😀"}}},
            {"jsonrpc": "2.0", "method": "some/notification"},
            {"jsonrpc": "2.0", "id": "8", "method": "mcp/executeTool",
             "params": {"id": format!("{BASE}/tools/add:v1"), "arguments": {"a": 2, "b": 3}}},
        ]),
    ];
    for m in &more {
        input.extend(frame(&m.to_string()));
    }
    // A body that is not JSON.
    input.extend(frame("{this is not json"));
    let last = [
        json!({"jsonrpc": "2.0", "id": 9, "method": "mcp/executeTool",
               "params": {"id": format!("{BASE}/tools/divide:v1"), "arguments": {"a": 7, "b": 2}}}),
        json!({"jsonrpc": "2.0", "id": 10, "method": "mcp/executeTool",
               "params": {"id": format!("{BASE}/tools/sleep:v1"), "arguments": {"ms": 300}}}),
    ];
    for m in &last {
        input.extend(frame(&m.to_string()));
    }
    input
}

fn find<'a>(replies: &'a [Value], id: &Value) -> &'a Value {
    let matching: Vec<&Value> = replies
        .iter()
        .filter(|r| r.get("method").is_none() && r.get("id") == Some(id))
        .collect();
    assert_eq!(matching.len(), 1, "exactly one reply to {id}: {replies:#?}");
    matching[0]
}

#[test]
fn reference_over_stdio_writes_only_exact_frames_serves_the_session_and_exits_0_at_eof() {
    let root = tempfile::tempdir().expect("a temporary folder");
    let run = run_reference(root.path(), session_input(), None);
    assert!(
        run.status.success(),
        "exit status {:?}; stderr:\n{}",
        run.status,
        run.stderr
    );

    // stdout: frames and nothing else, to the last byte.
    let (bodies, unfinished) = split_frames(&run.stdout);
    assert!(
        unfinished.is_empty(),
        "stdout ends inside a frame: {:?}",
        String::from_utf8_lossy(&unfinished)
    );
    let messages: Vec<Value> = bodies
        .iter()
        .map(|b| serde_json::from_str(b).expect("JSON"))
        .collect();

    // stderr: logs only, never a frame.
    assert!(
        !run.stderr.contains("Content-Length"),
        "a frame on stderr:\n{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains(r#"{"jsonrpc""#),
        "a message on stderr:\n{}",
        run.stderr
    );

    // The initialize reply.
    let init = find(&messages, &json!(1));
    assert_eq!(
        init["result"]["capabilities"],
        json!({"listToolsProvider": true, "listResourcesProvider": true,
               "listPromptsProvider": true, "executionProvider": {"execute": true}})
    );
    assert!(init["result"]["serverInfo"]["name"].is_string());

    // listTools: the five tools.
    let tools = find(&messages, &json!(2))["result"]
        .as_array()
        .expect("a tool list")
        .clone();
    let ids: Vec<&str> = tools.iter().filter_map(|t| t["mcpId"].as_str()).collect();
    for name in ["file-writer", "echo", "add", "divide", "sleep"] {
        let id = format!("{BASE}/tools/{name}:v1");
        assert!(ids.contains(&id.as_str()), "{id} in {ids:?}");
    }

    // Divide by zero: the tool's error.
    let divide = find(&messages, &json!(3));
    assert_eq!(divide["error"]["code"], -32000, "{divide}");
    assert_eq!(divide["error"]["message"], "Tool execution failed");
    assert!(divide["error"]["data"].is_string());

    // The file writer wrote under --root.
    assert_eq!(
        find(&messages, &json!(4))["result"],
        json!({"output": {"status": "success", "bytesWritten": 13}})
    );
    let written = std::fs::read_to_string(root.path().join("out").join("hello.txt"))
        .expect("the file was written under the root");
    assert_eq!(written, "Hello, world.");

    // A missing argument: the reference's exact text.
    let missing = find(&messages, &json!(5));
    assert_eq!(
        missing["error"],
        json!({"code": -32602, "message": "Invalid params",
               "data": format!("Missing required property: 'content' in arguments for tool {BASE}/tools/file-writer:v1")})
    );

    // The batch: one array with the three requests' replies.
    let batches: Vec<&Value> = messages.iter().filter(|m| m.is_array()).collect();
    assert_eq!(batches.len(), 1, "{messages:#?}");
    let batch = batches[0].as_array().expect("array").clone();
    assert_eq!(batch.len(), 3, "{batch:#?}");
    assert!(find(&batch, &json!(6))["result"].is_array());
    assert_eq!(
        find(&batch, &json!(7))["result"],
        json!({"output": {"message": "héllo ✓ 😀"}})
    );
    assert_eq!(
        find(&batch, &json!("8"))["result"],
        json!({"output": {"sum": 5}})
    );

    // Two parse errors with id null: the bad header block and the bad body.
    let parse_errors: Vec<&Value> = messages
        .iter()
        .filter(|m| m["id"].is_null() && m.get("method").is_none() && m.is_object())
        .collect();
    assert_eq!(parse_errors.len(), 2, "{messages:#?}");
    for e in parse_errors {
        assert_eq!(e["error"]["code"], -32700, "{e}");
        assert_eq!(e["error"]["message"], "Parse error");
    }

    assert_eq!(
        find(&messages, &json!(9))["result"],
        json!({"output": {"quotient": 3.5}})
    );
    // The last request was in flight at EOF: it finished before the exit.
    assert_eq!(
        find(&messages, &json!(10))["result"],
        json!({"output": {"sleptMs": 300}})
    );

    // The write announced the last-write resource.
    assert!(
        messages.iter().any(|m| *m
            == json!({"jsonrpc": "2.0", "method": "mcp/resourceDidChange",
                      "params": {"mcpId": format!("{BASE}/resources/last-write.txt")}})),
        "{messages:#?}"
    );

    // Nothing else: every message is accounted for.
    let replies = messages
        .iter()
        .filter(|m| m.get("method").is_none())
        .count();
    assert_eq!(replies, 7 + 1 + 2, "{messages:#?}");
}

#[test]
fn reference_over_stdio_keeps_stdout_clean_with_trace_logging_on() {
    let root = tempfile::tempdir().expect("a temporary folder");
    let run = run_reference(root.path(), session_input(), Some("trace"));
    assert!(
        run.status.success(),
        "exit status {:?}; stderr:\n{}",
        run.status,
        run.stderr
    );
    let (bodies, unfinished) = split_frames(&run.stdout);
    assert!(unfinished.is_empty(), "stdout ends inside a frame");
    assert_eq!(bodies.len(), 11, "{bodies:#?}");
    assert!(
        !run.stderr.contains("Content-Length:"),
        "a frame header on stderr"
    );
}

#[test]
fn reference_over_stdio_exits_0_on_immediate_eof_with_empty_stdout() {
    let root = tempfile::tempdir().expect("a temporary folder");
    let run = run_reference(root.path(), Vec::new(), None);
    assert!(run.status.success(), "{:?}: {}", run.status, run.stderr);
    assert!(
        run.stdout.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&run.stdout)
    );
}

#[test]
fn reference_over_stdio_carries_large_and_many_frames_intact_over_real_pipes() {
    let root = tempfile::tempdir().expect("a temporary folder");
    let big: String = "0123456789abcdef✓".repeat(64 * 1024); // ~1.2 MiB
    let mut input = frame(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"clientCapabilities": {}}})
        .to_string(),
    );
    input.extend(frame(r#"{"jsonrpc":"2.0","method":"initialized"}"#));
    input.extend(frame(
        &json!({"jsonrpc": "2.0", "id": "big", "method": "mcp/executeTool",
                "params": {"id": format!("{BASE}/tools/echo:v1"), "arguments": {"message": big}}})
        .to_string(),
    ));
    for n in 0..300 {
        input.extend(frame(
            &json!({"jsonrpc": "2.0", "id": 1000 + n, "method": "mcp/executeTool",
                    "params": {"id": format!("{BASE}/tools/add:v1"), "arguments": {"a": n, "b": 1}}})
            .to_string(),
        ));
    }
    let run = run_reference(root.path(), input, None);
    assert!(run.status.success(), "{:?}: {}", run.status, run.stderr);
    let (bodies, unfinished) = split_frames(&run.stdout);
    assert!(unfinished.is_empty(), "stdout ends inside a frame");
    let messages: Vec<Value> = bodies
        .iter()
        .map(|b| serde_json::from_str(b).expect("JSON"))
        .collect();
    assert_eq!(messages.len(), 302);
    assert_eq!(
        find(&messages, &json!("big"))["result"]["output"]["message"],
        json!(big)
    );
    for n in 0..300 {
        assert_eq!(
            find(&messages, &json!(1000 + n))["result"],
            json!({"output": {"sum": n + 1}})
        );
    }
}

#[test]
fn reference_over_stdio_cancel_request_answers_32003_and_eof_then_exits_0() {
    let root = tempfile::tempdir().expect("a temporary folder");
    let mut input = Vec::new();
    for m in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientCapabilities": {}}}),
        json!({"jsonrpc": "2.0", "method": "initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "mcp/executeTool",
               "params": {"id": format!("{BASE}/tools/sleep:v1"), "arguments": {"ms": 60000}}}),
        json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 2}}),
    ] {
        input.extend(frame(&m.to_string()));
    }
    let run = run_reference(root.path(), input, None);
    assert!(run.status.success(), "{:?}: {}", run.status, run.stderr);
    let (bodies, unfinished) = split_frames(&run.stdout);
    assert!(unfinished.is_empty());
    let messages: Vec<Value> = bodies
        .iter()
        .map(|b| serde_json::from_str(b).expect("JSON"))
        .collect();
    let cancelled = find(&messages, &json!(2));
    assert_eq!(cancelled["error"]["code"], -32003, "{cancelled}");
    assert_eq!(cancelled["error"]["message"], "Request cancelled");
}
