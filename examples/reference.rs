//! The reference server: every kind of item, with the ids and behaviours the
//! conformance checks rely on.
//!
//! ```sh
//! cargo run --example reference                  # stdio, file-writer root in a fresh temp folder
//! cargo run --example reference -- --root DIR    # file-writer writes under DIR
//! cargo run --example reference -- --http 127.0.0.1:8080 [--root DIR]   # HTTP instead of stdio
//! ```
//! The server stops on SIGINT or SIGTERM (or, on stdio, at the end of
//! stdin): it takes no new requests (late ones are answered `-32005`),
//! finishes the requests in flight (10 s grace), writes every reply and
//! exits 0.
//! Logs go to stderr (`RUST_LOG=debug` for more: error, warn, info, debug or
//! trace); stdout carries frames only.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use clawmcp::protocol::{PromptDefinition, Role};
use clawmcp::transport::HttpConfig;
use clawmcp::typed::typed_tool;
use clawmcp::{Server, SharedResource, TextResource, ToolContext, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Number, json};

const BASE: &str = "mcp://clawmcp/examples";
const LAST_WRITE: &str = "mcp://clawmcp/examples/resources/last-write.txt";

fn main() {
    // RUST_LOG=error|warn|info|debug|trace (default info), to stderr only.
    let level = std::env::var("RUST_LOG")
        .ok()
        .and_then(|l| l.parse::<tracing::Level>().ok())
        .unwrap_or(tracing::Level::INFO);
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_max_level(level)
        .init();
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("reference: {e}");
            std::process::exit(2);
        }
    };
    // One stdio session needs one thread (the cheapest way to serve it);
    // HTTP serves many connections, on as many threads as there are cores.
    let runtime = if options.http.is_some() {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    };
    let result = runtime
        .map_err(Into::into)
        .and_then(|rt| rt.block_on(run(options)));
    if let Err(e) = result {
        eprintln!("reference: {e}");
        std::process::exit(1);
    }
}

async fn run(options: Options) -> Result<(), Box<dyn std::error::Error>> {
    // A fresh temporary root unless one is given; removed when the server exits.
    let temp;
    let root = match options.root {
        Some(root) => root,
        None => {
            temp = tempfile::tempdir()?;
            temp.path().to_path_buf()
        }
    };
    std::fs::create_dir_all(&root)?;
    let root = root.canonicalize()?;
    tracing::info!(root = %root.display(), "file-writer root");

    let server = build(root, options.max_message_size)?;
    match options.http {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            tracing::info!(addr = %listener.local_addr()?, "serving MCP over HTTP on POST /mcp");
            server
                .serve_http_on(listener, HttpConfig::default(), shutdown_signal())
                .await?;
        }
        None => server.serve_stdio_until(shutdown_signal()).await?,
    }
    Ok(())
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let terminated = async {
        match term.as_mut() {
            Some(term) => {
                term.recv().await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminated => {}
    }
    tracing::info!("shutdown signal received");
}

/// Command-line options.
struct Options {
    root: Option<PathBuf>,
    http: Option<std::net::SocketAddr>,
    max_message_size: Option<usize>,
}

impl Options {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut options = Options {
            root: None,
            http: None,
            max_message_size: None,
        };
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--root" => {
                    options.root = Some(args.next().ok_or("--root needs a folder")?.into());
                }
                "--max-message-size" => {
                    let bytes = args
                        .next()
                        .ok_or("--max-message-size needs a number of bytes")?;
                    let bytes = bytes
                        .parse()
                        .map_err(|e| format!("--max-message-size {bytes:?}: {e}"))?;
                    options.max_message_size = Some(bytes);
                }
                "--http" => {
                    let addr = args
                        .next()
                        .ok_or("--http needs an address, e.g. 127.0.0.1:8080")?;
                    let addr = addr.parse().map_err(|e| format!("--http {addr:?}: {e}"))?;
                    options.http = Some(addr);
                }
                "--help" | "-h" => {
                    eprintln!(
                        "usage: reference [--root DIR] [--http ADDR:PORT] [--max-message-size BYTES]"
                    );
                    std::process::exit(0);
                }
                other => return Err(format!("unknown argument {other:?} (try --help)")),
            }
        }
        Ok(options)
    }
}

/// The reference server's items.
fn build(root: PathBuf, max_message_size: Option<usize>) -> Result<Server, clawmcp::BuildError> {
    let last_write = SharedResource::new(
        LAST_WRITE,
        "last-write",
        "The content of the latest successful file-writer write (empty at start).",
        "text/plain",
        "",
    );
    let writer = FileWriter {
        root,
        last_write: last_write.clone(),
    };
    Server::builder()
        .max_message_size(max_message_size.unwrap_or(clawmcp::server::DEFAULT_MAX_MESSAGE_SIZE))
        .name("clawmcp-reference")
        .version(env!("CARGO_PKG_VERSION"))
        .tool(typed_tool(
            format!("{BASE}/tools/file-writer:v1"),
            "file-writer",
            "Writes content to a file under the server's root folder, replacing it. The path is \
             relative to the root; absolute paths and paths leaving the root fail.",
            move |args: WriteFile| {
                let writer = writer.clone();
                async move { writer.write(args).await }
            },
        ))
        .tool(typed_tool(
            format!("{BASE}/tools/echo:v1"),
            "echo",
            "Returns the message it is given.",
            |args: Echo| async move { Ok::<_, ToolError>(args) },
        ))
        .tool(typed_tool(
            format!("{BASE}/tools/add:v1"),
            "add",
            "Adds two numbers.",
            |args: Operands| async move { Ok::<_, ToolError>(Sum { sum: args.sum()? }) },
        ))
        .tool(typed_tool(
            format!("{BASE}/tools/divide:v1"),
            "divide",
            "Divides a by b. Fails when b is zero.",
            |args: Operands| async move { Ok::<_, ToolError>(Quotient { quotient: args.quotient()? }) },
        ))
        .tool(typed_tool(
            format!("{BASE}/tools/sleep:v1"),
            "sleep",
            "Sleeps for ms milliseconds (0 to 60000), then answers; stops early when cancelled.",
            |args: Sleep, ctx: ToolContext| async move {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(args.ms.into())) => Ok(Slept { slept_ms: args.ms }),
                    () = ctx.cancelled() => Err(ToolError::new("cancelled")),
                }
            },
        ))
        .resource(TextResource::new(
            format!("{BASE}/resources/about.txt"),
            "about",
            "What this server is.",
            "text/plain",
            "The clawmcp reference server: five tools, three resources and two prompts, \
             served over MCP v1.0.\n",
        ))
        .resource(TextResource::new(
            format!("{BASE}/resources/config.json"),
            "config",
            "The server's configuration, as JSON.",
            "application/json",
            json!({"server": "clawmcp-reference", "version": env!("CARGO_PKG_VERSION"),
                   "maxMessageBytes": clawmcp::server::DEFAULT_MAX_MESSAGE_SIZE,
                   "maxInFlight": clawmcp::server::DEFAULT_MAX_IN_FLIGHT})
            .to_string(),
        ))
        .resource(last_write)
        .prompt(PromptDefinition {
            mcp_id: format!("{BASE}/prompts/planner:v1"),
            name: "planner".into(),
            description: Some("A system prompt that makes the agent plan before it acts.".into()),
            role: Role::System,
            content: "You are a careful planner. Break the task into numbered steps, say which \
                      tool each step uses, then carry the steps out in order."
                .into(),
        })
        .prompt(PromptDefinition {
            mcp_id: format!("{BASE}/prompts/summarize:v1"),
            name: "summarize".into(),
            description: Some("Asks for a short summary of the text that follows.".into()),
            role: Role::User,
            content: "Summarize the following text in three sentences or fewer.".into(),
        })
        .build()
}

/// The echo tool's arguments, and its output.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Echo {
    /// The text to send back.
    message: String,
}

/// Two numbers.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Operands {
    /// The first operand.
    a: Number,
    /// The second operand.
    b: Number,
}

impl Operands {
    /// a + b, exact for integers.
    fn sum(&self) -> Result<Number, ToolError> {
        match (self.a.as_i64(), self.b.as_i64()) {
            (Some(a), Some(b)) if a.checked_add(b).is_some() => Ok((a + b).into()),
            _ => number(f(&self.a) + f(&self.b)),
        }
    }

    /// a / b, refusing b = 0.
    fn quotient(&self) -> Result<Number, ToolError> {
        let (a, b) = (f(&self.a), f(&self.b));
        if b == 0.0 {
            return Err(ToolError::new(format!(
                "division by zero: cannot divide {a} by 0"
            )));
        }
        number(a / b)
    }
}

/// The add tool's output.
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Sum {
    /// a + b.
    sum: Number,
}

/// The divide tool's output.
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Quotient {
    /// a / b.
    quotient: Number,
}

/// The sleep tool's arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Sleep {
    /// How long to sleep, in milliseconds.
    #[schemars(range(max = 60000))]
    ms: u32,
}

/// The sleep tool's output.
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Slept {
    /// How long it slept, in milliseconds.
    #[serde(rename = "sleptMs")]
    slept_ms: u32,
}

/// The file-writer tool's arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WriteFile {
    /// The file's path, relative to the root folder.
    #[schemars(length(min = 1))]
    path: String,
    /// The text to write (UTF-8).
    content: String,
}

/// The file-writer tool's output.
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Written {
    /// Always "success" (failures are errors).
    status: Success,
    /// How many bytes were written.
    #[serde(rename = "bytesWritten")]
    bytes_written: usize,
}

/// The one status of a successful write.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Success {
    /// The file was written.
    Success,
}

fn f(value: &Number) -> f64 {
    value.as_f64().unwrap_or(f64::NAN)
}

/// A finite number as JSON: an integer when it is one.
fn number(x: f64) -> Result<Number, ToolError> {
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        return Ok((x as i64).into());
    }
    Number::from_f64(x)
        .ok_or_else(|| ToolError::new(format!("the result {x} is not a finite number")))
}

/// The file-writer tool: writes under `root`, never outside it.
#[derive(Clone)]
struct FileWriter {
    root: PathBuf,
    /// Set after each successful write; announces the change by itself.
    last_write: SharedResource,
}

impl FileWriter {
    async fn write(&self, args: WriteFile) -> Result<Written, ToolError> {
        let target = self.resolve(&args.path)?;
        tokio::fs::write(&target, &args.content)
            .await
            .map_err(|e| ToolError::new(format!("cannot write {:?}: {e}", args.path)))?;
        let bytes_written = args.content.len();
        self.last_write.set(args.content);
        Ok(Written {
            status: Success::Success,
            bytes_written,
        })
    }

    /// The file `path` names under the root, after refusing absolute paths,
    /// `..` that leaves the root, and symbolic links that lead out of it.
    fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        let refuse = |why: &str| ToolError::new(format!("refused path {path:?}: {why}"));
        let mut relative = PathBuf::new();
        for component in Path::new(path).components() {
            match component {
                Component::Normal(name) => relative.push(name),
                Component::CurDir => {}
                Component::ParentDir => {
                    if !relative.pop() {
                        return Err(refuse("it leaves the root folder"));
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(refuse(
                        "absolute paths are not allowed; give a path relative to the root",
                    ));
                }
            }
        }
        if relative.as_os_str().is_empty() {
            return Err(refuse("it names no file"));
        }
        let target = self.root.join(&relative);
        let parent = target.parent().unwrap_or(&self.root);
        // The deepest folder that exists must resolve (links followed) inside the root.
        let mut existing = parent;
        while std::fs::symlink_metadata(existing).is_err() {
            existing = existing.parent().unwrap_or(&self.root);
        }
        let resolved = existing
            .canonicalize()
            .map_err(|e| refuse(&format!("cannot resolve it: {e}")))?;
        if !resolved.starts_with(&self.root) {
            return Err(refuse(
                "it leads out of the root folder through a symbolic link",
            ));
        }
        std::fs::create_dir_all(parent)
            .map_err(|e| refuse(&format!("cannot create its folder: {e}")))?;
        if let Ok(meta) = std::fs::symlink_metadata(&target) {
            if meta.file_type().is_symlink() {
                return Err(refuse("it is a symbolic link"));
            }
            if meta.is_dir() {
                return Err(refuse("it is a folder"));
            }
        }
        Ok(target)
    }
}
