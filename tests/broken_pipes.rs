//! Process faults around stdio (issue "robustness, round two"): the built
//! `reference` example as a real process whose stdout or stderr the client
//! closes, or whose stderr nobody reads.
//!
//! - A client that closes the server's stdout ends the session even while
//!   it is idle: the process exits 3 (the reference's documented code).
//! - A closed stderr never stops the server: it serves, and exits 0 at EOF
//!   (or on SIGTERM over HTTP), with every reply delivered.
//! - A stderr nobody reads never blocks the server, however much it logs.
#![cfg(all(feature = "http", feature = "schemars", unix))]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::reference::reference_binary;
use common::{frame, split_frames};
use serde_json::{Value, json};

/// A hang guard, not a performance bound.
const PATIENCE: Duration = Duration::from_secs(10);

/// The server, and its file-writer root, which must outlive it (removed
/// too early, the server cannot open it and exits 1 at start).
fn spawn(args: &[&str], rust_log: &str) -> (Child, tempfile::TempDir) {
    let root = tempfile::tempdir().expect("a temp dir");
    let child = Command::new(reference_binary())
        .args(args)
        .arg("--root")
        .arg(root.path())
        .env("RUST_LOG", rust_log)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the reference server starts");
    (child, root)
}

fn wait(child: &mut Child, within: Duration) -> Option<i32> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("waiting for the server") {
            return status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn initialize() -> Vec<u8> {
    let mut input = frame(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"clientCapabilities": {}, "trace": "verbose"}})
        .to_string(),
    );
    input.extend(frame(
        &json!({"jsonrpc": "2.0", "method": "initialized"}).to_string(),
    ));
    input
}

fn echo(id: u64) -> Vec<u8> {
    frame(
        &json!({"jsonrpc": "2.0", "id": id, "method": "mcp/executeTool",
                "params": {"id": "mcp://clawmcp/examples/tools/echo:v1",
                           "arguments": {"message": format!("m{id}")}}})
        .to_string(),
    )
}

#[test]
fn an_idle_server_whose_stdout_is_closed_exits_3_at_once() {
    let (mut child, _root) = spawn(&[], "info");
    // Initialised and idle, stdin kept open.
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(&initialize()).expect("write");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 16];
    stdout.read_exact(&mut first).expect("the initialize reply");
    drop(stdout);
    let started = Instant::now();
    let code = wait(&mut child, PATIENCE);
    assert_eq!(code, Some(3), "exit code once stdout is gone");
    eprintln!("exited {:?} after stdout closed", started.elapsed());
    drop(stdin);
}

/// The same before the client wrote anything: the session is not yet
/// framed, and a closed stdout still ends it.
#[test]
fn a_server_whose_stdout_is_closed_before_any_input_exits_3_at_once() {
    let (mut child, _root) = spawn(&[], "info");
    let stdin = child.stdin.take().expect("stdin");
    drop(child.stdout.take().expect("stdout"));
    let code = wait(&mut child, PATIENCE);
    assert_eq!(code, Some(3), "exit code once stdout is gone");
    drop(stdin);
}

#[test]
fn a_server_whose_stderr_is_closed_serves_and_exits_0() {
    let (mut child, _root) = spawn(&[], "trace");
    drop(child.stderr.take());
    let mut stdin = child.stdin.take().expect("stdin");
    let mut input = initialize();
    for id in 2..202 {
        input.extend(echo(id));
    }
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let mut out = Vec::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_end(&mut out)
        .expect("stdout");
    writer.join().expect("writer");
    assert_eq!(wait(&mut child, PATIENCE), Some(0), "a clean exit at EOF");
    let (frames, rest) = split_frames(&out);
    assert!(rest.is_empty(), "stdout ends with a whole frame");
    let replies: Vec<Value> = frames
        .iter()
        .map(|f| serde_json::from_str::<Value>(f).expect("JSON"))
        .filter(|m| m.get("id").is_some())
        .collect();
    assert_eq!(replies.len(), 201, "every request answered");
}

#[test]
fn a_stderr_nobody_reads_never_blocks_the_server() {
    // Trace-level logging writes far more than a pipe holds (64 KiB).
    let (mut child, _root) = spawn(&[], "trace");
    let _unread_stderr = child.stderr.take();
    let mut stdin = child.stdin.take().expect("stdin");
    let mut input = initialize();
    for id in 2..2002 {
        input.extend(echo(id));
    }
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out);
        out
    });
    assert_eq!(wait(&mut child, PATIENCE), Some(0), "a clean exit at EOF");
    writer.join().expect("writer");
    let out = reader.join().expect("reader");
    let (frames, _) = split_frames(&out);
    let replies = frames
        .iter()
        .filter(|f| f.contains("\"result\"") || f.contains("\"error\""))
        .count();
    assert_eq!(replies, 2001, "every request answered");
}

#[test]
fn over_http_a_closed_stderr_keeps_every_reply_and_a_clean_sigterm_exit() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let (mut child, _root) = spawn(&["--http", &addr], "trace");
    drop(child.stderr.take());
    wait_listening(&addr);
    for _ in 0..20 {
        // A notification only: 202 with an empty body.
        let (status, _) = post(&addr, r#"{"jsonrpc":"2.0","method":"initialized"}"#);
        assert_eq!(status, 202);
        let (status, body) = post(
            &addr,
            r#"{"jsonrpc":"2.0","id":2,"method":"mcp/executeTool","params":{"id":"mcp://clawmcp/examples/tools/echo:v1","arguments":{"message":"hi"}}}"#,
        );
        assert_eq!(status, 200);
        assert!(body.contains("\"message\":\"hi\""), "{body}");
    }
    let pid = child.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status();
    assert!(killed.is_ok_and(|s| s.success()), "SIGTERM sent");
    assert_eq!(
        wait(&mut child, PATIENCE),
        Some(0),
        "a clean exit on SIGTERM"
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn wait_listening(addr: &str) {
    let deadline = Instant::now() + PATIENCE;
    while TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < deadline, "the server never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One request on a fresh connection: the status and the body.
fn post(addr: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status).expect("status line");
    let code = status
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let mut rest = String::new();
    let _ = reader.read_to_string(&mut rest);
    let body = rest.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned();
    (code, body)
}
