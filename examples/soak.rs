//! Soak test of the release reference server: checks that every request gets
//! exactly one correct reply, over stdio and over HTTP, and that the server's
//! memory stays flat. Not run in CI.
//!
//! ```sh
//! cargo build --release --example reference
//! cargo run --release --example soak -- [--mode stdio|http|both] [--requests N] [--server PATH]
//! ```
//!
//! 95 % of the requests are `echo` calls with a unique message each; 5 % are
//! bad input, spread evenly and deterministically (by request index) over five
//! classes: bad JSON, unknown tool, schema failure, oversize message and a
//! cancelled `sleep`. The report goes to stdout; the exit status is non-zero
//! when any check fails.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::client::conn::http1::SendRequest;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;

/// The server's message limit in this test (`--max-message-size`).
const MAX_MESSAGE: usize = 65_536;
/// Requests kept in flight on stdio (the server's default session limit).
const STDIO_IN_FLIGHT: usize = 64;
/// Kept-alive HTTP connections, each with one exchange at a time.
const HTTP_CONNECTIONS: usize = 32;
/// Replies after which the first memory reading is taken.
const CHECKPOINT: u64 = 100_000;
/// No reply for this long means the server stalled (a sleep that is not
/// cancelled lasts 60 s).
const STALL: Duration = Duration::from_secs(75);
/// The peak RSS at the end may be at most this many times the one at the checkpoint.
const MAX_RSS_GROWTH: f64 = 1.10;

const ECHO: &str = "mcp://clawmcp/examples/tools/echo:v1";
const SLEEP: &str = "mcp://clawmcp/examples/tools/sleep:v1";
const UNKNOWN: &str = "mcp://clawmcp/examples/tools/no-such-tool:v1";

fn main() {
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("soak: {e}");
            eprintln!("usage: soak [--mode stdio|http|both] [--requests N] [--server PATH]");
            std::process::exit(2);
        }
    };
    if !options.server.is_file() {
        eprintln!(
            "soak: no server binary at {} (build it: cargo build --release --example reference)",
            options.server.display()
        );
        std::process::exit(2);
    }
    let mut passed = true;
    if options.stdio {
        passed &= report(&options, "stdio", run_stdio(&options));
    }
    if options.http {
        passed &= report(&options, "http", run_http(&options));
    }
    if !passed {
        std::process::exit(1);
    }
}

/// Command-line options.
struct Options {
    stdio: bool,
    http: bool,
    requests: u64,
    server: PathBuf,
}

impl Options {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut options = Options {
            stdio: true,
            http: true,
            requests: 1_000_000,
            server: PathBuf::from("target/release/examples/reference"),
        };
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--mode" => match args.next().as_deref() {
                    Some("stdio") => (options.stdio, options.http) = (true, false),
                    Some("http") => (options.stdio, options.http) = (false, true),
                    Some("both") => (options.stdio, options.http) = (true, true),
                    other => return Err(format!("--mode {other:?}: expected stdio, http or both")),
                },
                "--requests" => {
                    let n = args.next().ok_or("--requests needs a number")?;
                    options.requests = n.parse().map_err(|e| format!("--requests {n:?}: {e}"))?;
                    if options.requests == 0 {
                        return Err("--requests must be at least 1".into());
                    }
                }
                "--server" => options.server = args.next().ok_or("--server needs a path")?.into(),
                "--help" | "-h" => {
                    println!("usage: soak [--mode stdio|http|both] [--requests N] [--server PATH]");
                    std::process::exit(0);
                }
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        Ok(options)
    }

    /// The reply count after which memory is first read: 100,000, or a tenth
    /// of a smaller run.
    fn checkpoint(&self) -> u64 {
        CHECKPOINT.min(self.requests / 10).max(1)
    }
}

// ---------------------------------------------------------------------------
// Requests and the checks of their replies (both transports)
// ---------------------------------------------------------------------------

/// What a request is, decided by its index.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    Echo,
    BadJson,
    UnknownTool,
    Schema,
    Oversize,
    Cancelled,
}

const CLASSES: [Class; 6] = [
    Class::Echo,
    Class::BadJson,
    Class::UnknownTool,
    Class::Schema,
    Class::Oversize,
    Class::Cancelled,
];

impl Class {
    /// Every 20th request is bad, cycling through the five bad classes.
    fn of(i: u64) -> Class {
        if !i.is_multiple_of(20) {
            return Class::Echo;
        }
        match (i / 20) % 5 {
            0 => Class::BadJson,
            1 => Class::UnknownTool,
            2 => Class::Schema,
            3 => Class::Oversize,
            _ => Class::Cancelled,
        }
    }

    fn slot(self) -> usize {
        self as usize
    }

    fn name(self) -> &'static str {
        match self {
            Class::Echo => "echo ok",
            Class::BadJson => "bad JSON -32700",
            Class::UnknownTool => "unknown tool -32001",
            Class::Schema => "schema -32602",
            Class::Oversize => "oversize -32006",
            Class::Cancelled => "cancelled -32003",
        }
    }

    /// The error code of the reply; `None` for a result.
    fn code(self) -> Option<i64> {
        match self {
            Class::Echo => None,
            Class::BadJson => Some(-32700),
            Class::UnknownTool => Some(-32001),
            Class::Schema => Some(-32602),
            Class::Oversize => Some(-32006),
            Class::Cancelled => Some(-32003),
        }
    }

    /// Whether the reply's id is `null` (the server cannot read the id).
    fn null_id(self) -> bool {
        matches!(self, Class::BadJson | Class::Oversize)
    }

    /// The HTTP status of a single exchange.
    fn http_status(self) -> StatusCode {
        match self {
            Class::BadJson => StatusCode::BAD_REQUEST,
            Class::Oversize => StatusCode::PAYLOAD_TOO_LARGE,
            _ => StatusCode::OK,
        }
    }
}

/// The JSON-RPC id of request `i` (1 is `initialize`): a number, or for a
/// third of the requests a string, to check that ids are echoed as sent.
fn write_id(out: &mut Vec<u8>, i: u64) {
    if i % 3 == 1 {
        write!(out, "\"r{}\"", i + 2).unwrap();
    } else {
        write!(out, "{}", i + 2).unwrap();
    }
}

/// The request index an id names, if it has the form request `i` was sent with.
fn index_of(id: &Value) -> Option<u64> {
    let i = match id {
        Value::Number(n) => n.as_u64()?.checked_sub(2)?,
        Value::String(s) => s.strip_prefix('r')?.parse::<u64>().ok()?.checked_sub(2)?,
        _ => return None,
    };
    let string = matches!(id, Value::String(_));
    (string == (i % 3 == 1)).then_some(i)
}

/// The unique echo message of request `i`: varied length, quotes,
/// backslashes, control and non-ASCII characters.
fn message(i: u64) -> String {
    let hash = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let pad = "~".repeat((hash >> 58) as usize);
    format!("soak #{i} \"{hash:016x}\" \\ tab\t nl\n é ☃ 🦀 {pad}")
}

fn json_string(out: &mut Vec<u8>, s: &str) {
    serde_json::to_writer(&mut *out, s).unwrap();
}

/// The body of request `i` of `class` (the sleep, for a cancelled one).
fn write_body(out: &mut Vec<u8>, i: u64, class: Class) {
    let start = out.len();
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    write_id(out, i);
    out.extend_from_slice(br#","method":"mcp/executeTool","params":{"id":"#);
    match class {
        Class::Echo => {
            json_string(out, ECHO);
            out.extend_from_slice(br#","arguments":{"message":"#);
            json_string(out, &message(i));
            out.extend_from_slice(b"}}}");
        }
        Class::BadJson => {
            // Cut short inside a string: not JSON.
            json_string(out, ECHO);
            out.extend_from_slice(br#","arguments":{"message":"cut sh"#);
        }
        Class::UnknownTool => {
            json_string(out, UNKNOWN);
            out.extend_from_slice(br#","arguments":{"message":"x"}}}"#);
        }
        Class::Schema => {
            json_string(out, ECHO);
            out.extend_from_slice(br#","arguments":{"message":5}}}"#);
        }
        Class::Oversize => {
            // A valid echo request, just too large: 65,537 to 65,600 bytes.
            json_string(out, ECHO);
            out.extend_from_slice(br#","arguments":{"message":""#);
            let target = MAX_MESSAGE + 1 + (i / 100 % 64) as usize;
            let fill = target - (out.len() - start) - br#""}}}"#.len();
            out.resize(out.len() + fill, b'x');
            out.extend_from_slice(br#""}}}"#);
            debug_assert_eq!(out.len() - start, target);
        }
        Class::Cancelled => {
            json_string(out, SLEEP);
            out.extend_from_slice(br#","arguments":{"ms":60000}}}"#);
        }
    }
}

/// The `$/cancelRequest` notification for request `i`.
fn write_cancel(out: &mut Vec<u8>, i: u64) {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"#);
    write_id(out, i);
    out.extend_from_slice(b"}}");
}

fn error_message(code: i64) -> &'static str {
    match code {
        -32700 => "Parse error",
        -32001 => "Unknown mcpId",
        -32602 => "Invalid params",
        -32006 => "Message too large",
        -32003 => "Request cancelled",
        _ => "?",
    }
}

/// Checks the reply to request `i` of `class`; its id was already matched.
fn check_reply(reply: &Value, i: u64, class: Class) -> Result<(), String> {
    let object = reply.as_object().ok_or("not an object")?;
    if object.get("jsonrpc") != Some(&Value::from("2.0")) {
        return Err("jsonrpc is not \"2.0\"".into());
    }
    if object.len() != 3 {
        return Err(format!("{} members, expected 3", object.len()));
    }
    match class.code() {
        None => {
            let text = reply
                .pointer("/result/output/message")
                .and_then(Value::as_str)
                .ok_or("no result.output.message string")?;
            if text != message(i) {
                return Err(format!("echoed {text:?}, sent {:?}", message(i)));
            }
            let output = &reply["result"];
            if output.as_object().map(serde_json::Map::len) != Some(1)
                || output["output"].as_object().map(serde_json::Map::len) != Some(1)
            {
                return Err("extra members in result".into());
            }
        }
        Some(code) => {
            let error = object.get("error").ok_or("no error")?;
            let got = error.get("code").and_then(Value::as_i64);
            if got != Some(code) {
                return Err(format!("error code {got:?}, expected {code}"));
            }
            if error.get("message").and_then(Value::as_str) != Some(error_message(code)) {
                return Err(format!("error message {}", error["message"]));
            }
            let data = error
                .get("data")
                .and_then(Value::as_str)
                .ok_or("no data string")?;
            if class == Class::Schema && !data.contains("'/message'") {
                return Err(format!(
                    "schema error data does not name /message: {data:?}"
                ));
            }
            if class == Class::UnknownTool && !data.contains(UNKNOWN) {
                return Err(format!(
                    "unknown-tool data does not name the tool: {data:?}"
                ));
            }
        }
    }
    Ok(())
}

/// Checks an `initialize` reply.
fn check_initialize(reply: &Value) -> Result<(), String> {
    if reply.get("id") != Some(&Value::from(1)) {
        return Err(format!("initialize reply has id {:?}", reply.get("id")));
    }
    if reply.pointer("/result/capabilities/executionProvider/execute") != Some(&Value::Bool(true)) {
        return Err(format!(
            "initialize reply without execution provider: {reply}"
        ));
    }
    Ok(())
}

/// The counts of one run.
#[derive(Default)]
struct Tally {
    /// Requests sent, by class.
    sent: [u64; 6],
    /// Correct replies, by class.
    ok: [u64; 6],
    /// Reply messages received (frames on stdio, bodies or lines on HTTP),
    /// but for the `initialize` replies of HTTP streaming sessions.
    replies: u64,
    /// `initialize` replies of HTTP streaming sessions.
    init_replies: u64,
    /// Requests without a reply.
    lost: u64,
    /// Replies matching no outstanding request (duplicates included).
    unexpected: u64,
    /// Replies to a request that are not the right reply.
    wrong: u64,
    /// Other failures (exit status, stray output, transport errors...).
    failures: Vec<String>,
    /// The first problems, described.
    samples: Vec<String>,
    /// Extra information for the report.
    notes: Vec<String>,
}

impl Tally {
    fn sample(&mut self, what: String) {
        if self.samples.len() < 20 {
            self.samples.push(what);
        }
    }

    fn wrong(&mut self, what: String) {
        self.wrong += 1;
        self.sample(format!("wrong: {what}"));
    }

    fn unexpected(&mut self, what: String) {
        self.unexpected += 1;
        self.sample(format!("unexpected: {what}"));
    }

    fn lost(&mut self, what: String) {
        self.lost += 1;
        self.sample(format!("lost: {what}"));
    }
}

/// VmHWM and VmRSS of a process, in KiB.
#[derive(Clone, Copy)]
struct Rss {
    hwm_kib: u64,
    rss_kib: u64,
}

fn rss(pid: u32) -> Option<Rss> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    };
    Some(Rss {
        hwm_kib: field("VmHWM:")?,
        rss_kib: field("VmRSS:")?,
    })
}

/// What one mode found.
struct Outcome {
    tally: Tally,
    requests: u64,
    elapsed: Duration,
    checkpoint: u64,
    rss_checkpoint: Option<Rss>,
    rss_end: Option<Rss>,
    exit: String,
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// Prints the report of one mode; returns whether every check passed.
fn report(options: &Options, mode: &str, outcome: Result<Outcome, String>) -> bool {
    println!(
        "== soak {mode}: {} requests, server {} ==",
        options.requests,
        options.server.display()
    );
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => {
            println!("FAILED to run: {e}\n");
            return false;
        }
    };
    let t = &outcome.tally;
    let mut failures = t.failures.clone();
    let sent: u64 = t.sent.iter().sum();
    println!("requests sent             {sent}");
    if t.init_replies > 0 {
        println!(
            "replies received          {} (+ {} initialize replies of streaming sessions)",
            t.replies, t.init_replies
        );
    } else {
        println!("replies received          {}", t.replies);
    }
    println!("  {:<22} {:>10} {:>10}", "class", "expected", "got");
    for class in CLASSES {
        let (expected, got) = (t.sent[class.slot()], t.ok[class.slot()]);
        let mark = if expected == got {
            ""
        } else {
            "  <-- MISMATCH"
        };
        println!("  {:<22} {expected:>10} {got:>10}{mark}", class.name());
        if expected != got {
            failures.push(format!("{}: expected {expected}, got {got}", class.name()));
        }
    }
    println!("lost replies              {}", t.lost);
    println!("duplicate/unexpected      {}", t.unexpected);
    println!("wrong replies             {}", t.wrong);
    if sent != outcome.requests {
        failures.push(format!("sent {sent} of {} requests", outcome.requests));
    }
    for (what, n) in [
        ("lost", t.lost),
        ("duplicate/unexpected", t.unexpected),
        ("wrong", t.wrong),
    ] {
        if n > 0 {
            failures.push(format!("{n} {what} replies"));
        }
    }
    let secs = outcome.elapsed.as_secs_f64();
    println!(
        "elapsed                   {secs:.2} s ({:.0} req/s)",
        outcome.requests as f64 / secs.max(1e-9)
    );
    let show = |label: &str, rss: Option<Rss>| match rss {
        Some(r) => println!(
            "{label:<26}VmHWM {}, VmRSS {}",
            mib(r.hwm_kib),
            mib(r.rss_kib)
        ),
        None => println!("{label:<26}not read"),
    };
    show(
        &format!("RSS at {} replies", outcome.checkpoint),
        outcome.rss_checkpoint,
    );
    show("RSS at end", outcome.rss_end);
    match (outcome.rss_checkpoint, outcome.rss_end) {
        (Some(a), Some(b)) => {
            let ratio = b.hwm_kib as f64 / a.hwm_kib as f64;
            println!("peak ratio end/checkpoint {ratio:.3} (target <= {MAX_RSS_GROWTH:.2})");
            if ratio > MAX_RSS_GROWTH {
                failures.push(format!("peak RSS grew by a factor {ratio:.3}"));
            }
        }
        _ => failures.push("RSS not read".into()),
    }
    println!("server exit               {}", outcome.exit);
    for note in &t.notes {
        println!("note: {note}");
    }
    for sample in &t.samples {
        println!("problem: {sample}");
    }
    if failures.is_empty() {
        println!("result: PASS\n");
        true
    } else {
        for failure in &failures {
            println!("FAIL: {failure}");
        }
        println!("result: FAIL\n");
        false
    }
}

/// Waits up to `limit` for `child` to exit; kills it after that.
fn wait_exit(child: &mut Child, limit: Duration) -> Result<ExitStatus, String> {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("did not exit within {} s: killed", limit.as_secs()));
            }
            Err(e) => return Err(format!("waiting for it failed: {e}")),
        }
    }
}

/// The last lines of the server's stderr log, for a failure report.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

// ---------------------------------------------------------------------------
// stdio
// ---------------------------------------------------------------------------

/// State shared by the stdio writer, reader and main threads.
struct Shared {
    /// Requests written and not yet answered.
    in_flight: Mutex<usize>,
    freed: Condvar,
    /// Requests answered (matched to a reply), for progress and completion.
    answered: AtomicU64,
    /// Set when the run is given up: the writer stops.
    abort: AtomicBool,
    /// When the first request was written.
    started: Mutex<Option<Instant>>,
    /// When the last expected reply arrived.
    finished: Mutex<Option<Instant>>,
    rss_checkpoint: Mutex<Option<Rss>>,
}

fn run_stdio(options: &Options) -> Result<Outcome, String> {
    let n = options.requests;
    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let root = dir.path().join("root");
    std::fs::create_dir(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    let log_path = dir.path().join("stderr.log");
    let log =
        std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let mut child = Command::new(&options.server)
        .arg("--max-message-size")
        .arg(MAX_MESSAGE.to_string())
        .arg("--root")
        .arg(&root)
        .env("RUST_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", options.server.display()))?;
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::with_capacity(1 << 20, child.stdout.take().unwrap());

    // Handshake.
    let init =
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{}}}"#;
    let handshake = (|| -> Result<(), String> {
        write_frame_to(&mut stdin, init).map_err(|e| format!("writing initialize: {e}"))?;
        let mut body = Vec::new();
        match read_frame(&mut stdout, &mut Vec::new(), &mut body) {
            Ok(true) => {}
            Ok(false) => return Err("server closed stdout before the initialize reply".into()),
            Err(e) => return Err(format!("reading the initialize reply: {e}")),
        }
        let reply: Value =
            serde_json::from_slice(&body).map_err(|e| format!("initialize reply: {e}"))?;
        check_initialize(&reply)?;
        write_frame_to(
            &mut stdin,
            br#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#,
        )
        .map_err(|e| format!("writing initialized: {e}"))
    })();
    if let Err(e) = handshake {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!(
            "handshake: {e}; server stderr: {}",
            log_tail(&log_path)
        ));
    }

    let shared = Arc::new(Shared {
        in_flight: Mutex::new(0),
        freed: Condvar::new(),
        answered: AtomicU64::new(0),
        abort: AtomicBool::new(false),
        started: Mutex::new(None),
        finished: Mutex::new(None),
        rss_checkpoint: Mutex::new(None),
    });
    let checkpoint = options.checkpoint();
    let reader = {
        let shared = shared.clone();
        std::thread::spawn(move || stdio_reader(stdout, n, pid, checkpoint, &shared))
    };
    let writer = {
        let shared = shared.clone();
        std::thread::spawn(move || stdio_writer(stdin, n, &shared))
    };

    // Wait for every reply, or for the server to stall.
    let mut stalled = false;
    let mut last = (0, Instant::now());
    while shared.answered.load(Ordering::Acquire) < n {
        std::thread::sleep(Duration::from_millis(20));
        let answered = shared.answered.load(Ordering::Acquire);
        if answered != last.0 {
            last = (answered, Instant::now());
        } else if last.1.elapsed() > STALL || reader.is_finished() {
            stalled = true;
            break;
        }
    }
    let rss_end = rss(pid);
    shared.abort.store(true, Ordering::Release);
    shared.freed.notify_all();
    if stalled {
        // The writer may be blocked on a full pipe: unblock it if need be.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !writer.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if !writer.is_finished() {
            let _ = child.kill();
        }
    }
    let stdin = writer.join().map_err(|_| "the writer thread panicked")?;
    let finished = shared.finished.lock().unwrap().unwrap_or_else(Instant::now);
    let started = shared.started.lock().unwrap().unwrap_or(finished);
    drop(stdin); // end of input: the server finishes and exits
    let exit = wait_exit(&mut child, Duration::from_secs(30));
    let (mut tally, trailing) = reader.join().map_err(|_| "the reader thread panicked")?;

    if stalled {
        tally.failures.push(format!(
            "no reply for {} s with {} of {n} requests answered",
            last.1.elapsed().as_secs(),
            shared.answered.load(Ordering::Acquire)
        ));
    }
    if trailing > 0 {
        tally.failures.push(format!(
            "{trailing} bytes written after the last expected reply"
        ));
    }
    let exit = match exit {
        Ok(status) if status.success() => "0 (clean)".to_string(),
        Ok(status) => {
            tally.failures.push(format!("server exited with {status}"));
            format!("{status}; stderr: {}", log_tail(&log_path))
        }
        Err(e) => {
            tally.failures.push(format!("server {e}"));
            e
        }
    };
    let rss_checkpoint = *shared.rss_checkpoint.lock().unwrap();
    Ok(Outcome {
        tally,
        requests: n,
        elapsed: finished - started,
        checkpoint,
        rss_checkpoint,
        rss_end,
        exit,
    })
}

fn write_frame_to(w: &mut impl Write, body: &[u8]) -> io::Result<()> {
    write!(w, "Content-Length: {}\r\n\r\n", body.len())?;
    w.write_all(body)?;
    w.flush()
}

/// Appends one frame holding `body` to `out`.
fn frame(out: &mut Vec<u8>, body: &[u8]) {
    write!(out, "Content-Length: {}\r\n\r\n", body.len()).unwrap();
    out.extend_from_slice(body);
}

/// Writes the `n` requests, keeping at most 64 in flight; returns stdin
/// (still open) when done or aborted.
fn stdio_writer(stdin: ChildStdin, n: u64, shared: &Shared) -> Option<ChildStdin> {
    let mut out = BufWriter::with_capacity(256 * 1024, stdin);
    let mut body = Vec::with_capacity(MAX_MESSAGE + 1024);
    let mut frames = Vec::with_capacity(MAX_MESSAGE + 1024);
    *shared.started.lock().unwrap() = Some(Instant::now());
    let mut i = 0;
    'requests: while i < n {
        // Take the free slots, waiting (after a flush) for one if none is.
        let free = {
            let mut in_flight = shared.in_flight.lock().unwrap();
            if *in_flight >= STDIO_IN_FLIGHT {
                drop(in_flight);
                if out.flush().is_err() {
                    break 'requests;
                }
                in_flight = shared.in_flight.lock().unwrap();
                while *in_flight >= STDIO_IN_FLIGHT && !shared.abort.load(Ordering::Acquire) {
                    in_flight = shared.freed.wait(in_flight).unwrap();
                }
            }
            if shared.abort.load(Ordering::Acquire) {
                break 'requests;
            }
            let free = ((STDIO_IN_FLIGHT - *in_flight) as u64).min(n - i);
            *in_flight += free as usize;
            free
        };
        for _ in 0..free {
            let class = Class::of(i);
            body.clear();
            write_body(&mut body, i, class);
            frames.clear();
            frame(&mut frames, &body);
            if class == Class::Cancelled {
                body.clear();
                write_cancel(&mut body, i);
                frame(&mut frames, &body);
            }
            if class == Class::BadJson && (i / 100) % 2 == 1 {
                // Every other bad-JSON frame holds bytes that are not even
                // UTF-8 instead of a truncated request: answered the same.
                frames.clear();
                frame(&mut frames, b"\x01not json at all\xff");
            }
            if out.write_all(&frames).is_err() {
                break 'requests;
            }
            i += 1;
        }
    }
    let _ = out.flush();
    out.into_inner().ok()
}

/// Reads one frame's body into `body`; `Ok(false)` at a clean end of input.
fn read_frame(r: &mut impl BufRead, line: &mut Vec<u8>, body: &mut Vec<u8>) -> io::Result<bool> {
    let bad = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    line.clear();
    if r.read_until(b'\n', line)? == 0 {
        return Ok(false);
    }
    let len = line
        .strip_prefix(b"Content-Length: ")
        .and_then(|l| l.strip_suffix(b"\r\n"))
        .and_then(|l| std::str::from_utf8(l).ok())
        .and_then(|l| l.parse::<usize>().ok())
        .ok_or_else(|| {
            bad(format!(
                "bad header line {:?}",
                String::from_utf8_lossy(line)
            ))
        })?;
    line.clear();
    r.read_until(b'\n', line)?;
    if line != b"\r\n" {
        return Err(bad(format!(
            "expected a blank line, got {:?}",
            String::from_utf8_lossy(line)
        )));
    }
    body.clear();
    body.resize(len, 0);
    r.read_exact(body)?;
    Ok(true)
}

/// Reads and checks every reply until the server closes stdout; returns the
/// tally and how many bytes came after the last expected reply.
fn stdio_reader(
    mut r: BufReader<ChildStdout>,
    n: u64,
    pid: u32,
    checkpoint: u64,
    shared: &Shared,
) -> (Tally, u64) {
    let mut tally = Tally::default();
    for i in 0..n {
        tally.sent[Class::of(i).slot()] += 1;
    }
    let mut answered = vec![false; n as usize];
    // The null-id requests, oldest first.
    let mut null_ids: VecDeque<u64> = (0..n).filter(|&i| Class::of(i).null_id()).collect();
    let (mut line, mut body) = (Vec::new(), Vec::with_capacity(4096));
    let mut matched = 0u64;
    let mut released = 0usize;
    let mut trailing = 0u64;
    loop {
        // Free the slots of the replies read so far before blocking for more.
        if released > 0 && (r.buffer().is_empty() || released >= 16) {
            *shared.in_flight.lock().unwrap() -= released;
            shared.freed.notify_one();
            shared.answered.store(matched, Ordering::Release);
            released = 0;
        }
        let frame_len = match read_frame(&mut r, &mut line, &mut body) {
            Ok(true) => body.len(),
            Ok(false) => break,
            Err(e) => {
                tally
                    .failures
                    .push(format!("unreadable output from the server: {e}"));
                let mut rest = Vec::new();
                let _ = r.read_to_end(&mut rest);
                trailing += rest.len() as u64;
                break;
            }
        };
        if matched == n {
            trailing += frame_len as u64;
        }
        tally.replies += 1;
        if tally.replies == checkpoint {
            *shared.rss_checkpoint.lock().unwrap() = rss(pid);
        }
        let reply: Value = match serde_json::from_slice(&body) {
            Ok(reply) => reply,
            Err(e) => {
                tally.unexpected(format!(
                    "reply is not JSON ({e}): {}",
                    String::from_utf8_lossy(&body)
                ));
                continue;
            }
        };
        let Some(id) = reply.get("id") else {
            tally.unexpected(format!("message without id: {reply}"));
            continue;
        };
        let (i, class) = if id.is_null() {
            let Some(i) = null_ids.pop_front() else {
                tally.unexpected(format!("null-id reply with none expected: {reply}"));
                continue;
            };
            (i, Class::of(i))
        } else {
            match index_of(id) {
                Some(i) if i < n && !Class::of(i).null_id() => {
                    if answered[i as usize] {
                        tally.unexpected(format!("duplicate reply to request {i}: {reply}"));
                        continue;
                    }
                    answered[i as usize] = true;
                    (i, Class::of(i))
                }
                _ => {
                    tally.unexpected(format!("reply with an id never sent: {reply}"));
                    continue;
                }
            }
        };
        matched += 1;
        released += 1;
        if matched == n {
            *shared.finished.lock().unwrap() = Some(Instant::now());
        }
        match check_reply(&reply, i, class) {
            Ok(()) => tally.ok[class.slot()] += 1,
            Err(e) => tally.wrong(format!("request {i} ({:?}): {e}; reply {reply}", class)),
        }
    }
    shared.answered.store(matched, Ordering::Release);
    for i in 0..n {
        let class = Class::of(i);
        if !class.null_id() && !answered[i as usize] {
            tally.lost(format!("request {i} ({class:?}) never answered"));
        }
    }
    for i in null_ids {
        tally.lost(format!(
            "request {i} ({:?}): no null-id error",
            Class::of(i)
        ));
    }
    (tally, trailing)
}

// ---------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------

/// A request body: all at once (with a Content-Length), or streamed from a
/// channel (chunked).
enum ReqBody {
    Full(Option<Bytes>),
    Stream(tokio::sync::mpsc::Receiver<Bytes>),
}

impl Body for ReqBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            ReqBody::Full(data) => Poll::Ready(data.take().map(|d| Ok(Frame::data(d)))),
            ReqBody::Stream(rx) => rx.poll_recv(cx).map(|d| d.map(|d| Ok(Frame::data(d)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, ReqBody::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ReqBody::Full(data) => {
                SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64))
            }
            ReqBody::Stream(_) => SizeHint::default(),
        }
    }
}

/// State shared by the HTTP connection tasks.
struct HttpShared {
    addr: SocketAddr,
    pid: u32,
    n: u64,
    checkpoint: u64,
    next: AtomicU64,
    replies: AtomicU64,
    tally: Mutex<Tally>,
    rss_checkpoint: Mutex<Option<Rss>>,
    reconnects: AtomicU64,
    stream_sessions: AtomicU64,
}

impl HttpShared {
    /// Counts one reply message; reads memory at the checkpoint.
    fn reply_received(&self) {
        let count = self.replies.fetch_add(1, Ordering::AcqRel) + 1;
        if count == self.checkpoint {
            *self.rss_checkpoint.lock().unwrap() = rss(self.pid);
        }
        self.tally.lock().unwrap().replies += 1;
    }
}

/// Exchanges and sessions taking longer than this count as lost.
const HTTP_TIMEOUT: Duration = Duration::from_secs(90);

fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

fn run_http(options: &Options) -> Result<Outcome, String> {
    let n = options.requests;
    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let log_path = dir.path().join("stderr.log");
    let out_path = dir.path().join("stdout.log");
    let log =
        std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let out =
        std::fs::File::create(&out_path).map_err(|e| format!("{}: {e}", out_path.display()))?;
    let addr: SocketAddr = ([127, 0, 0, 1], free_port()?).into();
    let mut child = Command::new(&options.server)
        .arg("--http")
        .arg(addr.to_string())
        .arg("--max-message-size")
        .arg(MAX_MESSAGE.to_string())
        .arg("--root")
        .arg(dir.path())
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", options.server.display()))?;
    let pid = child.id();

    // Wait until it accepts connections.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if std::net::TcpStream::connect(addr).is_ok() {
            break;
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "server exited with {status}: {}",
                log_tail(&log_path)
            ));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "server did not accept connections on {addr} within 20 s"
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }

    let mut tally = Tally::default();
    for i in 0..n {
        tally.sent[Class::of(i).slot()] += 1;
    }
    let shared = Arc::new(HttpShared {
        addr,
        pid,
        n,
        checkpoint: options.checkpoint(),
        next: AtomicU64::new(0),
        replies: AtomicU64::new(0),
        tally: Mutex::new(tally),
        rss_checkpoint: Mutex::new(None),
        reconnects: AtomicU64::new(0),
        stream_sessions: AtomicU64::new(0),
    });
    // The client gets one thread; the server has the machine's cores.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    let started = Instant::now();
    runtime.block_on(async {
        let tasks: Vec<_> = (0..HTTP_CONNECTIONS)
            .map(|_| tokio::spawn(http_connection(shared.clone())))
            .collect();
        for task in tasks {
            if let Err(e) = task.await {
                shared
                    .tally
                    .lock()
                    .unwrap()
                    .failures
                    .push(format!("a connection task failed: {e}"));
            }
        }
    });
    let elapsed = started.elapsed();
    drop(runtime); // closes the connections
    let rss_end = rss(pid);

    let term = Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status();
    let exit = match term {
        Ok(s) if s.success() => wait_exit(&mut child, Duration::from_secs(30)),
        Ok(s) => Err(format!("kill -TERM failed: {s}")),
        Err(e) => Err(format!("kill -TERM failed: {e}")),
    };
    let mut tally = std::mem::take(&mut *shared.tally.lock().unwrap());
    let exit = match exit {
        Ok(status) if status.success() => "0 after SIGTERM (clean)".to_string(),
        Ok(status) => {
            tally
                .failures
                .push(format!("server exited with {status} after SIGTERM"));
            format!("{status}; stderr: {}", log_tail(&log_path))
        }
        Err(e) => {
            tally.failures.push(format!("server {e}"));
            e
        }
    };
    let stdout_len = std::fs::metadata(&out_path).map_or(0, |m| m.len());
    if stdout_len > 0 {
        tally
            .failures
            .push(format!("server wrote {stdout_len} bytes to stdout"));
    }
    tally.notes.push(format!(
        "{} cancelled sleeps went through streaming sessions; {} reconnections (after 413 or errors)",
        shared.stream_sessions.load(Ordering::Acquire),
        shared.reconnects.load(Ordering::Acquire)
    ));
    let rss_checkpoint = *shared.rss_checkpoint.lock().unwrap();
    Ok(Outcome {
        tally,
        requests: n,
        elapsed,
        checkpoint: shared.checkpoint,
        rss_checkpoint,
        rss_end,
        exit,
    })
}

async fn connect(addr: SocketAddr) -> io::Result<SendRequest<ReqBody>> {
    let stream = tokio::net::TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(io::Error::other)?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

/// One connection: takes request indexes until all are sent, one exchange
/// at a time, reconnecting when the server closes the connection.
async fn http_connection(shared: Arc<HttpShared>) {
    let mut sender: Option<SendRequest<ReqBody>> = None;
    let mut body = Vec::with_capacity(MAX_MESSAGE + 1024);
    loop {
        let i = shared.next.fetch_add(1, Ordering::AcqRel);
        if i >= shared.n {
            return;
        }
        let usable = match &mut sender {
            Some(conn) => conn.ready().await.is_ok(),
            None => false,
        };
        if !usable {
            if sender.is_some() {
                shared.reconnects.fetch_add(1, Ordering::AcqRel);
            }
            sender = None;
            match connect(shared.addr).await {
                Ok(conn) => sender = Some(conn),
                Err(e) => {
                    let mut tally = shared.tally.lock().unwrap();
                    tally.failures.push(format!("connect failed: {e}"));
                    tally.lost(format!("request {i}: could not connect: {e}"));
                    continue;
                }
            }
        }
        let Some(conn) = sender.as_mut() else {
            continue;
        };
        let class = Class::of(i);
        let result = if class == Class::Cancelled {
            shared.stream_sessions.fetch_add(1, Ordering::AcqRel);
            tokio::time::timeout(HTTP_TIMEOUT, streaming_session(conn, &shared, i)).await
        } else {
            body.clear();
            write_body(&mut body, i, class);
            tokio::time::timeout(
                HTTP_TIMEOUT,
                single_exchange(conn, &shared, i, class, &body),
            )
            .await
        };
        let keep = match result {
            Ok(Ok(keep)) => keep,
            Ok(Err(e)) => {
                shared
                    .tally
                    .lock()
                    .unwrap()
                    .lost(format!("request {i} ({class:?}): {e}"));
                false
            }
            Err(_) => {
                shared.tally.lock().unwrap().lost(format!(
                    "request {i} ({class:?}): no reply within {} s",
                    HTTP_TIMEOUT.as_secs()
                ));
                false
            }
        };
        if !keep {
            sender = None;
            shared.reconnects.fetch_add(1, Ordering::AcqRel);
        }
    }
}

fn post(addr: SocketAddr, body: ReqBody) -> Request<ReqBody> {
    Request::post("/mcp")
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .body(body)
        .unwrap()
}

/// One single exchange; returns whether the connection may be kept.
async fn single_exchange(
    conn: &mut SendRequest<ReqBody>,
    shared: &HttpShared,
    i: u64,
    class: Class,
    body: &[u8],
) -> Result<bool, String> {
    let request = post(
        shared.addr,
        ReqBody::Full(Some(Bytes::copy_from_slice(body))),
    );
    let response = conn
        .send_request(request)
        .await
        .map_err(|e| format!("send: {e}"))?;
    let status = response.status();
    let content_type = response.headers().get("content-type").cloned();
    let reply = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("reading the {status} response body: {e}"))?
        .to_bytes();
    shared.reply_received();
    let verdict = (|| -> Result<(), String> {
        if status != class.http_status() {
            return Err(format!("status {status}, expected {}", class.http_status()));
        }
        if content_type.as_ref().and_then(|v| v.to_str().ok()) != Some("application/json") {
            return Err(format!("content-type {content_type:?}"));
        }
        let reply: Value =
            serde_json::from_slice(&reply).map_err(|e| format!("body is not JSON: {e}"))?;
        let id = reply.get("id").ok_or("no id")?;
        let id_ok = if class.null_id() {
            id.is_null()
        } else {
            index_of(id) == Some(i)
        };
        if !id_ok {
            return Err(format!("id {id}"));
        }
        check_reply(&reply, i, class)
    })();
    let mut tally = shared.tally.lock().unwrap();
    match verdict {
        Ok(()) => tally.ok[class.slot()] += 1,
        Err(e) => tally.wrong(format!(
            "request {i} ({class:?}): {e}; body {}",
            String::from_utf8_lossy(&reply[..reply.len().min(500)])
        )),
    }
    // After a 413 the server may close the connection: start a fresh one.
    Ok(status != StatusCode::PAYLOAD_TOO_LARGE)
}

/// A streaming session: initialize, initialized, a sleep of 60 s and its
/// cancellation, then the end of the body; expects exactly the initialize
/// reply and the -32003 reply. Returns whether the connection may be kept.
async fn streaming_session(
    conn: &mut SendRequest<ReqBody>,
    shared: &HttpShared,
    i: u64,
) -> Result<bool, String> {
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    let line = |mut v: Vec<u8>| {
        v.push(b'\n');
        Bytes::from(v)
    };
    let init =
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{}}}"#;
    tx.send(line(init.to_vec()))
        .await
        .map_err(|_| "body channel closed")?;
    let response = conn
        .send_request(post(shared.addr, ReqBody::Stream(rx)))
        .await
        .map_err(|e| format!("send: {e}"))?;
    let status = response.status();
    if status != StatusCode::OK {
        return Err(format!("streaming session answered {status}"));
    }
    let mut rest = Vec::new();
    rest.extend_from_slice(br#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#);
    rest.push(b'\n');
    write_body(&mut rest, i, Class::Cancelled);
    rest.push(b'\n');
    write_cancel(&mut rest, i);
    rest.push(b'\n');
    tx.send(Bytes::from(rest))
        .await
        .map_err(|_| "body channel closed")?;
    drop(tx); // end of the body: the session ends after its replies

    let mut body = response.into_body();
    let mut buf = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("reading the stream: {e}"))?;
        if let Ok(data) = frame.into_data() {
            buf.extend_from_slice(&data);
        }
    }
    let mut saw_init = false;
    let mut saw_cancel = false;
    let mut tally = shared.tally.lock().unwrap();
    for line in buf.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let text = String::from_utf8_lossy(line);
        let Ok(reply) = serde_json::from_slice::<Value>(line) else {
            tally.replies += 1;
            tally.unexpected(format!("session {i}: line is not JSON: {text}"));
            continue;
        };
        match reply.get("id") {
            Some(id) if *id == 1 && !saw_init => {
                saw_init = true;
                tally.init_replies += 1;
                if let Err(e) = check_initialize(&reply) {
                    tally.wrong(format!("session {i}: {e}"));
                }
            }
            Some(id) if index_of(id) == Some(i) && !saw_cancel => {
                saw_cancel = true;
                drop(tally);
                shared.reply_received();
                tally = shared.tally.lock().unwrap();
                match check_reply(&reply, i, Class::Cancelled) {
                    Ok(()) => tally.ok[Class::Cancelled.slot()] += 1,
                    Err(e) => tally.wrong(format!("request {i} (Cancelled): {e}; line {text}")),
                }
            }
            _ => {
                tally.replies += 1;
                tally.unexpected(format!("session {i}: {text}"));
            }
        }
    }
    if !saw_init {
        tally.wrong(format!("session {i}: no initialize reply"));
    }
    if !saw_cancel {
        tally.lost(format!(
            "request {i} (Cancelled): no reply in its streaming session"
        ));
    }
    Ok(true)
}
