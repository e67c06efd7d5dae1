//! Logging to stderr that never stops the server (feature `logging`, on by
//! default): [`init`] installs a `tracing` subscriber whose lines go to
//! stderr through a small background thread.
//!
//! Why not `tracing_subscriber::fmt().with_writer(std::io::stderr)`? Two
//! ways a server's stderr goes wrong under a real host:
//! - **nobody reads it**: the pipe fills up (64 KiB on Linux) and every
//!   thread that logs blocks in `write` — the server stops answering;
//! - **it is closed**: the write fails with `EPIPE`, and tracing-subscriber
//!   reports its own failure with `eprintln!`, which panics (exit 101).
//!
//! Here a log line is handed to the writer thread without waiting: when the
//! thread is behind, the line is dropped and counted (the count is logged
//! once stderr drains); when stderr is closed, lines are dropped quietly.
//! stdout is never touched.
//!
//! ```no_run
//! let _log = clawmcp::logging::init(); // keep the guard until the program ends
//! tracing::info!("starting");
//! ```

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;

/// How many log lines may wait for the writer thread before new ones are
/// dropped.
const BACKLOG: usize = 1024;
/// How long dropping the [`LogGuard`] waits for waiting lines to be written.
const FLUSH_WAIT: Duration = Duration::from_millis(250);

/// Installs a global `tracing` subscriber that writes to stderr without
/// ever blocking or panicking (see the [module docs](self)). The level
/// comes from `RUST_LOG` (`error`, `warn`, `info`, `debug` or `trace`;
/// default `info`); colours are used when stderr is a terminal.
///
/// Keep the returned guard alive until the program ends: dropping it waits
/// briefly for lines still queued. Calling `init` when a global subscriber
/// is already set changes nothing.
#[must_use = "dropping the guard at once may lose the last log lines"]
pub fn init() -> LogGuard {
    let level = level_from_env();
    let (writer, guard) = stderr_writer();
    let installed = tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_max_level(level)
        .log_internal_errors(false)
        .try_init();
    if installed.is_err() {
        tracing::debug!("a global tracing subscriber was already set");
    }
    guard
}

/// The level `RUST_LOG` names (`error`, `warn`, `info`, `debug` or
/// `trace`), or `info`.
pub(crate) fn level_from_env() -> tracing::Level {
    std::env::var("RUST_LOG")
        .ok()
        .and_then(|l| l.trim().parse::<tracing::Level>().ok())
        .unwrap_or(tracing::Level::INFO)
}

/// The writer [`init`] uses, for a subscriber of your own: pass the first
/// part to `with_writer` (and set `log_internal_errors(false)`), keep the
/// guard.
pub fn stderr_writer() -> (StderrWriter, LogGuard) {
    let (lines, queue) = std::sync::mpsc::sync_channel(BACKLOG);
    let dropped = Arc::new(AtomicU64::new(0));
    let thread_dropped = dropped.clone();
    let spawned = std::thread::Builder::new()
        .name("clawmcp-log".into())
        .spawn(move || write_lines(&queue, &thread_dropped));
    if let Err(e) = spawned {
        // No thread: every line is dropped (the sender sees a closed queue).
        let _ = writeln!(
            std::io::stderr(),
            "clawmcp: no log thread ({e}); logs are off"
        );
    }
    (
        StderrWriter {
            lines: lines.clone(),
            dropped,
        },
        LogGuard { lines },
    )
}

/// A `MakeWriter` for tracing-subscriber that queues each line for the
/// writer thread (see [`stderr_writer`]).
#[derive(Debug, Clone)]
pub struct StderrWriter {
    lines: SyncSender<Queued>,
    dropped: Arc<AtomicU64>,
}

/// Waits briefly, when dropped, for queued log lines to be written.
#[derive(Debug)]
pub struct LogGuard {
    lines: SyncSender<Queued>,
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        let (done, flushed) = std::sync::mpsc::channel();
        if self.lines.try_send(Queued::Flush(done)).is_ok() {
            let _ = flushed.recv_timeout(FLUSH_WAIT);
        }
    }
}

/// What the log writer's queue carries: a line, or a request to flush.
#[derive(Debug)]
enum Queued {
    Line(Vec<u8>),
    Flush(std::sync::mpsc::Sender<()>),
}

/// One log line being formatted; queued when dropped.
#[derive(Debug)]
pub struct LineWriter<'a> {
    writer: &'a StderrWriter,
    line: Vec<u8>,
}

impl<'a> MakeWriter<'a> for StderrWriter {
    type Writer = LineWriter<'a>;

    fn make_writer(&'a self) -> LineWriter<'a> {
        LineWriter {
            writer: self,
            line: Vec::new(),
        }
    }
}

impl Write for LineWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.line.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LineWriter<'_> {
    fn drop(&mut self) {
        if self.line.is_empty() {
            return;
        }
        let line = std::mem::take(&mut self.line);
        match self.writer.lines.try_send(Queued::Line(line)) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => {}
            Err(TrySendError::Full(_)) => {
                self.writer.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The writer thread: writes each line to stderr; after a failed write
/// (stderr closed) it drops lines until the process ends.
fn write_lines(queue: &Receiver<Queued>, dropped: &AtomicU64) {
    let mut stderr = std::io::stderr();
    let mut broken = false;
    for message in queue {
        match message {
            Queued::Line(line) if !broken => {
                let lost = dropped.swap(0, Ordering::Relaxed);
                if lost > 0 {
                    let note = format!(
                        "clawmcp: {lost} log lines were dropped (stderr was not read fast enough)\n"
                    );
                    broken = stderr.write_all(note.as_bytes()).is_err();
                }
                broken = broken || stderr.write_all(&line).is_err();
            }
            Queued::Line(_) => {}
            Queued::Flush(done) => {
                let _ = stderr.flush();
                let _ = done.send(());
            }
        }
    }
}
