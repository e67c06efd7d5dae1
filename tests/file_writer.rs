//! The reference example's file-writer sandbox, end to end: the built
//! `reference` example as a process, spoken to over stdio, writing into a
//! root folder that the test booby-traps from outside (symbolic links
//! swapped in while it writes, FIFOs, hard links, linked folders).
//!
//! The sandbox is Linux only (`openat2`); the reference example needs the
//! default features (`http`, `schemars`).
#![cfg(all(target_os = "linux", feature = "http", feature = "schemars"))]

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::PATIENCE;
use common::frame;
use common::reference::reference_binary;
use serde_json::{Value, json};

const FILE_WRITER: &str = "mcp://clawmcp/examples/tools/file-writer:v1";
/// What the outside file holds; no write through the root may change it.
const SECRET: &str = "outside the root: must never change\n";

/// A root folder for the server and, next to it (same filesystem, so hard
/// links work), a folder outside the root holding a file and a folder that
/// no write may reach.
struct Layout {
    _base: tempfile::TempDir,
    root: PathBuf,
    outside_file: PathBuf,
    outside_dir: PathBuf,
}

impl Layout {
    fn new() -> Self {
        let base = tempfile::tempdir().expect("a temporary folder");
        let root = base.path().join("root");
        let outside = base.path().join("outside");
        let outside_dir = outside.join("dir");
        std::fs::create_dir_all(&root).expect("root");
        std::fs::create_dir_all(&outside_dir).expect("outside folder");
        let outside_file = outside.join("secret.txt");
        std::fs::write(&outside_file, SECRET).expect("outside file");
        Layout {
            _base: base,
            root,
            outside_file,
            outside_dir,
        }
    }

    /// The outside file still holds what it held, and the outside folder
    /// is still empty.
    fn assert_outside_untouched(&self) {
        assert_eq!(
            std::fs::read_to_string(&self.outside_file).expect("the outside file"),
            SECRET,
            "a write landed outside the root"
        );
        let entries: Vec<_> = std::fs::read_dir(&self.outside_dir)
            .expect("the outside folder")
            .map(|e| e.expect("an entry").file_name())
            .collect();
        assert!(
            entries.is_empty(),
            "writes landed in the outside folder: {entries:?}"
        );
    }
}

/// The reference server as a child process, initialized, with threads that
/// feed its stdin and read its stdout and stderr so that no wait of the test
/// can hang: every wait is bounded, and dropping the server kills it.
struct Reference {
    child: Child,
    stdin: Option<Sender<Vec<u8>>>,
    stdin_thread: Option<JoinHandle<()>>,
    replies: Receiver<Value>,
    /// Replies that arrived while another one was awaited, by id.
    early: HashMap<String, Value>,
    stderr: Arc<Mutex<Vec<u8>>>,
    next_id: u64,
}

impl Reference {
    fn start(root: &Path) -> Self {
        Self::start_with(root, &[])
    }

    /// As [`start`](Self::start), with more arguments.
    fn start_with(root: &Path, args: &[&str]) -> Self {
        let mut child = Command::new(reference_binary())
            .arg("--root")
            .arg(root)
            .args(args)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the reference server starts");
        let mut stdin = child.stdin.take().expect("stdin");
        let (to_stdin, bytes) = mpsc::channel::<Vec<u8>>();
        let stdin_thread = std::thread::spawn(move || {
            for chunk in bytes {
                if stdin
                    .write_all(&chunk)
                    .and_then(|()| stdin.flush())
                    .is_err()
                {
                    return; // The server is gone; the waits report it.
                }
            }
            // The sender was dropped: stdin reaches EOF here.
        });
        let stdout = child.stdout.take().expect("stdout");
        let (to_test, replies) = mpsc::channel();
        std::thread::spawn(move || read_messages(stdout, &to_test));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut child_stderr = child.stderr.take().expect("stderr");
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = child_stderr.read(&mut buf) {
                sink.lock()
                    .expect("stderr lock")
                    .extend_from_slice(&buf[..n]);
            }
        });
        let mut server = Reference {
            child,
            stdin: Some(to_stdin),
            stdin_thread: Some(stdin_thread),
            replies,
            early: HashMap::new(),
            stderr,
            next_id: 1,
        };
        let id = server.send("initialize", json!({"clientCapabilities": {}}));
        let init = server.reply(id, PATIENCE);
        assert!(init.get("result").is_some(), "initialize failed: {init}");
        server.notify("initialized");
        server
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().expect("stderr lock")).into_owned()
    }

    fn send_bytes(&self, bytes: Vec<u8>) {
        self.stdin
            .as_ref()
            .expect("stdin is open")
            .send(bytes)
            .expect("the stdin thread runs");
    }

    /// Sends a request; returns its id.
    fn send(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_bytes(frame(&message.to_string()));
        id
    }

    fn notify(&self, method: &str) {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": {}});
        self.send_bytes(frame(&message.to_string()));
    }

    /// Asks the file-writer to write `content` to `path`; returns the id.
    fn send_write(&mut self, path: &str, content: &str) -> u64 {
        self.send(
            "mcp/executeTool",
            json!({"id": FILE_WRITER, "arguments": {"path": path, "content": content}}),
        )
    }

    /// The reply to request `id`, waiting at most `patience`.
    fn reply(&mut self, id: u64, patience: Duration) -> Value {
        let key = id.to_string();
        if let Some(reply) = self.early.remove(&key) {
            return reply;
        }
        let deadline = Instant::now() + patience;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.replies.recv_timeout(left) {
                Ok(message) if message.get("method").is_some() => {} // a notification
                Ok(message) => {
                    let reply_id = message["id"].to_string();
                    if reply_id == key {
                        return message;
                    }
                    self.early.insert(reply_id, message);
                }
                Err(RecvTimeoutError::Timeout) => panic!(
                    "no reply to request {id} within {patience:?}; stderr:\n{}",
                    self.stderr()
                ),
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "the server closed stdout before replying to request {id}; stderr:\n{}",
                    self.stderr()
                ),
            }
        }
    }

    /// Writes `content` to `path` and returns the reply.
    fn write(&mut self, path: &str, content: &str) -> Value {
        let id = self.send_write(path, content);
        self.reply(id, PATIENCE)
    }

    /// Closes stdin and waits (at most `patience`) for the server to exit.
    fn finish(mut self, patience: Duration) -> ExitStatus {
        self.stdin = None; // EOF once the queued frames are written
        let deadline = Instant::now() + patience;
        loop {
            if let Some(status) = self.child.try_wait().expect("waiting for the server") {
                if let Some(thread) = self.stdin_thread.take() {
                    thread.join().expect("the stdin thread");
                }
                return status;
            }
            if Instant::now() > deadline {
                panic!(
                    "the server did not exit within {patience:?} of stdin EOF; stderr:\n{}",
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Reference {
    fn drop(&mut self) {
        // Only a failed test leaves the server running: never leave it behind.
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Reads Content-Length frames from the server's stdout and sends each
/// message (each element of a batch) to the test, until EOF.
fn read_messages(stdout: ChildStdout, to_test: &Sender<Value>) {
    let mut reader = BufReader::new(stdout);
    loop {
        let mut length = None;
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                break;
            }
            if let Some(n) = line.strip_prefix("Content-Length: ") {
                length = n.parse::<usize>().ok();
            }
        }
        let Some(length) = length else {
            panic!("a frame without Content-Length on stdout");
        };
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let message: Value = serde_json::from_slice(&body).expect("a JSON message on stdout");
        let messages = match message {
            Value::Array(items) => items,
            one => vec![one],
        };
        for message in messages {
            if to_test.send(message).is_err() {
                return;
            }
        }
    }
}

/// The successful write of `bytes` bytes.
fn assert_written(reply: &Value, bytes: usize) {
    assert_eq!(
        reply["result"],
        json!({"output": {"status": "success", "bytesWritten": bytes}}),
        "{reply}"
    );
}

/// The tool's error text, after checking that `reply` is a tool error.
fn error_text(reply: &Value) -> &str {
    assert_eq!(reply["error"]["code"], -32000, "a tool error: {reply}");
    reply["error"]["data"].as_str().expect("an error text")
}

/// A refusal that names `path` and contains `why`.
fn assert_refused(reply: &Value, path: &str, why: &str) {
    let text = error_text(reply);
    assert!(
        text.contains(&format!("{path:?}")),
        "the error names {path:?}: {text}"
    );
    assert!(text.contains(why), "the error says {why:?}: {text}");
}

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .expect("mkfifo");
}

#[test]
fn writes_never_land_outside_the_root_while_symlinks_are_swapped_in_and_out() {
    const WRITES: usize = 600;
    const ROUNDS: usize = 10;
    let layout = Layout::new();
    let root = layout.root.clone();
    // Two traps, each a pair of names swapped atomically (RENAME_EXCHANGE)
    // so that both always exist: "victim" is a regular file or a symbolic
    // link to the outside file; "swapdir" is a folder or a symbolic link to
    // the outside folder.
    std::fs::write(root.join("victim"), "inside").expect("victim");
    symlink(&layout.outside_file, root.join("victim-link")).expect("victim-link");
    std::fs::create_dir(root.join("swapdir")).expect("swapdir");
    symlink(&layout.outside_dir, root.join("swapdir-link")).expect("swapdir-link");

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let root = root.clone();
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for (a, b) in [("victim", "victim-link"), ("swapdir", "swapdir-link")] {
                    rustix::fs::renameat_with(
                        rustix::fs::CWD,
                        root.join(a),
                        rustix::fs::CWD,
                        root.join(b),
                        rustix::fs::RenameFlags::EXCHANGE,
                    )
                    .expect("an atomic exchange");
                }
                swaps += 1;
            }
            swaps
        })
    };

    let mut server = Reference::start(&layout.root);
    let (mut written, mut refused, mut rounds) = (0, 0, 0);
    // Rounds of writes, all of a round at once (the server runs up to 64 at
    // a time), until both outcomes occurred: on a loaded machine the
    // swapper may sleep through a whole round with the links in place.
    while rounds < ROUNDS && (written == 0 || refused == 0) {
        rounds += 1;
        let ids: Vec<(u64, &str)> = (0..WRITES)
            .map(|n| {
                let path = if n % 2 == 0 { "victim" } else { "swapdir/file" };
                (server.send_write(path, &format!("write {n}")), path)
            })
            .collect();
        for (id, path) in ids {
            let reply = server.reply(id, Duration::from_secs(60));
            if reply.get("result").is_some() {
                assert_eq!(reply["result"]["output"]["status"], "success", "{reply}");
                written += 1;
            } else {
                let text = error_text(&reply);
                assert!(text.contains(&format!("{path:?}")), "{text}");
                refused += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().expect("the swapper thread");
    let status = server.finish(PATIENCE);
    assert!(status.success(), "{status:?}");

    eprintln!("{written} written, {refused} refused over {swaps} swaps in {rounds} rounds");
    layout.assert_outside_untouched();
    assert_eq!(written + refused, WRITES * rounds);
    // The race was run: the swapper kept swapping, and both outcomes occurred.
    assert!(swaps > 0);
    assert!(
        written > 0 && refused > 0,
        "{written} written, {refused} refused over {swaps} swaps"
    );
}

#[test]
fn a_fifo_in_the_root_fails_fast_and_the_server_still_exits_at_eof() {
    let layout = Layout::new();
    mkfifo(&layout.root.join("pipe"));
    mkfifo(&layout.root.join("read-pipe"));
    let mut server = Reference::start(&layout.root);

    // No reader: the non-blocking open fails at once (ENXIO).
    let started = Instant::now();
    let id = server.send_write("pipe", "into the pipe");
    let reply = server.reply(id, Duration::from_secs(5));
    assert_refused(&reply, "pipe", "not a regular file");

    // With a reader, the open succeeds and fstat refuses it: nothing is
    // written into the pipe.
    let reader = rustix::fs::open(
        layout.root.join("read-pipe"),
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .expect("a reader on the FIFO");
    let id = server.send_write("read-pipe", "into the pipe");
    let reply = server.reply(id, Duration::from_secs(5));
    assert_refused(&reply, "read-pipe", "not a regular file");
    let mut buf = [0u8; 64];
    assert!(
        matches!(
            rustix::io::read(&reader, &mut buf),
            Ok(0) | Err(rustix::io::Errno::AGAIN)
        ),
        "nothing was written into the FIFO"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the FIFO writes took {:?}",
        started.elapsed()
    );

    // No thread is left blocked in open(): the server exits promptly.
    let status = server.finish(Duration::from_secs(5));
    assert!(status.success(), "{status:?}");
}

#[test]
fn a_hard_link_to_an_outside_file_is_refused() {
    let layout = Layout::new();
    std::fs::hard_link(&layout.outside_file, layout.root.join("linked.txt")).expect("hard link");
    let mut server = Reference::start(&layout.root);
    let reply = server.write("linked.txt", "overwritten");
    assert_refused(&reply, "linked.txt", "hard links");
    let status = server.finish(PATIENCE);
    assert!(status.success(), "{status:?}");
    layout.assert_outside_untouched();
}

#[test]
fn a_symlinked_parent_folder_leading_outside_is_refused() {
    let layout = Layout::new();
    symlink(&layout.outside_dir, layout.root.join("out")).expect("symlink");
    std::fs::create_dir(layout.root.join("real")).expect("a folder");
    symlink(&layout.outside_dir, layout.root.join("real").join("deeper")).expect("symlink");
    let mut server = Reference::start(&layout.root);

    let reply = server.write("out/x.txt", "escaped");
    assert_refused(&reply, "out/x.txt", "symbolic link");
    let reply = server.write("real/deeper/new/x.txt", "escaped");
    assert_refused(&reply, "real/deeper/new/x.txt", "symbolic link");

    let status = server.finish(PATIENCE);
    assert!(status.success(), "{status:?}");
    layout.assert_outside_untouched();
}

#[test]
fn a_symlinked_file_leading_outside_is_refused() {
    let layout = Layout::new();
    symlink(&layout.outside_file, layout.root.join("link.txt")).expect("symlink");
    symlink(
        layout.outside_dir.join("dangling.txt"),
        layout.root.join("dangling.txt"),
    )
    .expect("symlink");
    let mut server = Reference::start(&layout.root);

    let reply = server.write("link.txt", "escaped");
    assert_refused(&reply, "link.txt", "symbolic link");
    // A dangling link is not followed to create its target.
    let reply = server.write("dangling.txt", "escaped");
    assert_refused(&reply, "dangling.txt", "symbolic link");

    let status = server.finish(PATIENCE);
    assert!(status.success(), "{status:?}");
    layout.assert_outside_untouched();
}

#[test]
fn absolute_paths_and_dot_dot_escapes_are_refused_with_the_path_named() {
    let layout = Layout::new();
    let mut server = Reference::start(&layout.root);
    let absolute = layout.outside_dir.join("abs.txt");
    let absolute = absolute.to_str().expect("a UTF-8 path");
    let reply = server.write(absolute, "escaped");
    assert_refused(&reply, absolute, "absolute paths are not allowed");
    let reply = server.write("../outside/dir/up.txt", "escaped");
    assert_refused(&reply, "../outside/dir/up.txt", "it leaves the root folder");
    let reply = server.write("a/../../outside/dir/up.txt", "escaped");
    assert_refused(
        &reply,
        "a/../../outside/dir/up.txt",
        "it leaves the root folder",
    );
    let reply = server.write("a/..", "nothing");
    assert_refused(&reply, "a/..", "it names no file");
    let status = server.finish(PATIENCE);
    assert!(status.success(), "{status:?}");
    layout.assert_outside_untouched();
    assert!(!layout.root.join("a").exists(), "no folder was created");
}

#[test]
fn a_path_over_1024_bytes_or_32_components_is_refused_before_anything_is_created() {
    let layout = Layout::new();
    let mut server = Reference::start(&layout.root);
    let deep = format!("{}x", "d/".repeat(20_000));
    let reply = server.write(&deep, "deep");
    assert!(
        error_text(&reply).contains("over the limit of 1024"),
        "{reply}"
    );
    let deep = format!("{}x", "d/".repeat(32));
    assert!(deep.len() < 1024);
    let reply = server.write(&deep, "deep");
    assert!(error_text(&reply).contains("33 components"), "{reply}");
    assert!(!layout.root.join("d").exists(), "no folder was created");
    // At the bounds, a write goes through.
    let deepest = format!("{}x", "d/".repeat(31));
    assert_written(&server.write(&deepest, "ok"), 2);
    let longest = format!(
        "{}{}",
        format!("{}/", "e".repeat(250)).repeat(4),
        "f".repeat(20)
    );
    assert_eq!(longest.len(), 1024);
    assert_written(&server.write(&longest, "ok"), 2);
    let status = server.finish(PATIENCE);
    assert!(status.success(), "{status:?}");
    layout.assert_outside_untouched();
}

#[test]
fn a_folder_is_refused_as_a_file() {
    let layout = Layout::new();
    std::fs::create_dir(layout.root.join("folder")).expect("a folder");
    std::fs::write(layout.root.join("file"), "a file").expect("a file");
    let mut server = Reference::start(&layout.root);
    let reply = server.write("folder", "x");
    assert_refused(&reply, "folder", "it is a folder");
    let reply = server.write("file/below.txt", "x");
    assert_refused(&reply, "file/below.txt", "is not a folder");
    let status = server.finish(PATIENCE);
    assert!(status.success(), "{status:?}");
    assert_eq!(
        std::fs::read_to_string(layout.root.join("file")).expect("the file"),
        "a file"
    );
}

#[test]
fn normal_writes_nested_new_folders_and_overwrites_still_work() {
    let layout = Layout::new();
    let mut server = Reference::start(&layout.root);

    let reply = server.write("a.txt", "hello");
    assert_written(&reply, 5);
    assert_eq!(
        std::fs::read_to_string(layout.root.join("a.txt")).expect("a.txt"),
        "hello"
    );

    let reply = server.write("new/nested/./deep/b.txt", "héllo ✓");
    assert_written(&reply, "héllo ✓".len());
    let nested = layout.root.join("new/nested/deep/b.txt");
    assert_eq!(std::fs::read_to_string(&nested).expect("b.txt"), "héllo ✓");

    // Overwriting replaces the whole file, even with shorter content.
    std::fs::write(layout.root.join("c.txt"), "a much longer original text").expect("c.txt");
    let reply = server.write("c.txt", "short");
    assert_written(&reply, 5);
    assert_eq!(
        std::fs::read_to_string(layout.root.join("c.txt")).expect("c.txt"),
        "short"
    );
    let reply = server.write("new/nested/deep/b.txt", "");
    assert_written(&reply, 0);
    assert_eq!(std::fs::read_to_string(&nested).expect("b.txt"), "");

    // `..` that stays inside the root is fine.
    let reply = server.write("new/../d.txt", "d");
    assert_written(&reply, 1);
    assert!(layout.root.join("d.txt").is_file());

    // The last successful write is the last-write resource's content.
    let id = server.send("mcp/listResources", json!({}));
    let reply = server.reply(id, PATIENCE);
    let last_write = reply["result"]
        .as_array()
        .expect("a resource list")
        .iter()
        .find(|r| r["mcpId"] == "mcp://clawmcp/examples/resources/last-write.txt")
        .expect("the last-write resource");
    assert_eq!(last_write["content"], "d", "{last_write}");

    let status = server.finish(PATIENCE);
    assert!(status.success(), "{status:?}");
    layout.assert_outside_untouched();
}

#[test]
fn writes_past_the_roots_quota_are_refused_before_anything_is_written() {
    let layout = Layout::new();
    let mut server = Reference::start_with(&layout.root, &["--root-quota", "1000"]);
    assert_written(&server.write("a.txt", &"a".repeat(600)), 600);
    let reply = server.write("b.txt", &"b".repeat(600));
    assert!(
        error_text(&reply).contains("over the quota of 1000"),
        "{reply}"
    );
    assert!(!layout.root.join("b.txt").exists(), "nothing was written");
    // A file written again counts its new size.
    assert_written(&server.write("a.txt", &"a".repeat(900)), 900);
    assert_written(&server.write("b.txt", &"b".repeat(100)), 100);
    assert!(error_text(&server.write("c.txt", "c")).contains("quota"));
    // A refused path takes no room.
    let reply = server.write("/etc/passwd", "x");
    assert_refused(&reply, "/etc/passwd", "absolute paths are not allowed");
    assert_written(&server.write("a.txt", ""), 0);
    // A write that fails gives its room back.
    std::fs::create_dir(layout.root.join("d")).expect("a folder");
    assert_refused(&server.write("d", &"d".repeat(800)), "d", "it is a folder");
    assert_written(&server.write("c.txt", &"c".repeat(900)), 900);
    let status = server.finish(PATIENCE);
    assert!(status.success(), "{status:?}");
    layout.assert_outside_untouched();
}
