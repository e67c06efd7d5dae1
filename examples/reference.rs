//! The reference server: every kind of item, with the ids and behaviours the
//! conformance checks rely on, served over both wire dialects — MCP v1.0
//! and the Model Context Protocol (chosen per connection: on stdio by the
//! first byte, over HTTP by each request's headers and first message).
//!
//! ```sh
//! cargo run --example reference                  # stdio, file-writer root in a fresh temp folder
//! cargo run --example reference -- --root DIR    # file-writer writes under DIR
//! cargo run --example reference -- --http 127.0.0.1:8080 [--root DIR]   # HTTP instead of stdio
//! cargo run --features oauth --example reference -- --http 127.0.0.1:8080 \
//!     --oauth-issuer http://127.0.0.1:9400 [--public-url URL] [--oauth-introspect]
//! cargo run --features redis --example reference -- --http 127.0.0.1:8081 \
//!     --redis redis://127.0.0.1:6379/   # one of several processes of a deployment
//! ```
//! With `--redis URL` (feature `redis`) the processes that share that Redis
//! server are one deployment: a change made on one (the last-write
//! resource, a list change) reaches every stream on every process, and the
//! last-write resource reads the same on all of them, and any of them reads,
//! answers and cancels any task (`sleep` and `ask`). Give them the same
//! `CLAWMCP_REQUEST_STATE_KEYS` so that a 2026-07-28 retry can reach any of them.
//! With `--oauth-issuer` (feature `oauth`) the HTTP endpoint is an OAuth
//! resource server: every request needs a token of that issuer for the
//! endpoint's public URL (default `http://ADDR/mcp`) with scope `mcp`, and
//! the file-writer also needs `files:write`. Tokens are JWTs checked
//! against the issuer's keys, or, with `--oauth-introspect`, opaque tokens
//! introspected with the client credentials in `OAUTH_CLIENT_ID` and
//! `OAUTH_CLIENT_SECRET`. The OAuth flags need `--http`: on stdio they are
//! a usage error (stdio is never subject to OAuth).
//! The server stops on SIGINT or SIGTERM (or, on stdio, at the end of
//! stdin): it takes no new requests (late ones are refused: `-32005` in
//! MCP v1.0, `-32603` in the Model Context Protocol),
//! finishes the requests in flight (10 s grace), writes every reply and
//! exits 0. When the client closes the server's stdout (even while the
//! server is idle) it stops within a moment and exits 3; bad arguments exit
//! 2, a failure to start or serve exits 1.
//! Logs go to stderr (`RUST_LOG=debug` for more: error, warn, info, debug or
//! trace) through `clawmcp::logging`, which never blocks on, nor panics over,
//! a stderr nobody reads; stdout carries frames only. Built with the `otel`
//! feature, each request has a span, exported over OTLP/HTTP when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set (`OTEL_SERVICE_NAME` names the
//! service), and flushed when the server stops.
//!
//! The echo tool links an app page (MCP Apps), `ui://clawmcp/examples/echo.html`
//! (examples/apps/echo.html): a host that renders apps shows a text box
//! that calls echo through the host and shows the answer.
//!
//! The file-writer is a sandbox meant to be copied: on Linux it writes only
//! regular files under its root, race-free (see `sandbox` below and
//! SECURITY.md), at most 1024 files and 64 MiB in all (`--root-quota
//! BYTES`); elsewhere it refuses every write.
#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clawmcp::app::AppResource;
use clawmcp::client::{ElicitAction, Elicitation};
use clawmcp::definition::{PromptDefinition, Role};
use clawmcp::definition::{ToolAnnotations, ToolMetadata};
use clawmcp::prompt::{PromptArgument, PromptMessage, prompt_fn};
use clawmcp::task::TaskSupport;
use clawmcp::transport::HttpConfig;
use clawmcp::typed_tool;
use clawmcp::{Server, SharedResource, TextResource, ToolContext, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Number, json};

const BASE: &str = "mcp://clawmcp/examples";
const LAST_WRITE: &str = "mcp://clawmcp/examples/resources/last-write.txt";
const SUMMARIZE: &str = "Summarize the following text in three sentences or fewer.";

/// Exit codes: 0 after a clean end (stdin EOF, SIGINT, SIGTERM), 1 when the
/// server could not start or run, 2 for bad arguments, and
/// [`STDOUT_GONE`] when the client closed the server's stdout.
const STDOUT_GONE: i32 = 3;

fn main() {
    // RUST_LOG=error|warn|info|debug|trace (default info), to stderr only,
    // never blocking and never panicking when stderr is full or closed.
    let log = start_logs();
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(e) => exit(log, 2, &e),
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
    let result = runtime.map_err(Into::into).and_then(|rt| {
        let result = rt.block_on(run(options));
        // Do not wait for a blocking read of a terminal's stdin.
        rt.shutdown_background();
        result
    });
    match result {
        Ok(()) => drop(log),
        Err(e) if is_broken_pipe(&*e) => exit(log, STDOUT_GONE, "stdout was closed by the client"),
        Err(e) => exit(log, 1, &e.to_string()),
    }
}

/// Whether serving ended because nobody reads stdout any more.
fn is_broken_pipe(error: &(dyn std::error::Error + 'static)) -> bool {
    error
        .downcast_ref::<std::io::Error>()
        .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}

/// Logs why the server stops (stderr may be gone too: never `eprintln!`,
/// which panics then), flushes the log and exits with `code`.
/// What the logs (and, built with the `otel` feature, the traces) need
/// kept until the process ends: dropping it flushes them.
#[cfg(feature = "otel")]
type Logs = clawmcp::otel::Telemetry;
#[cfg(not(feature = "otel"))]
type Logs = clawmcp::logging::LogGuard;

/// Logs to stderr; built with `otel`, spans too, exported over OTLP/HTTP
/// when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (named by `OTEL_SERVICE_NAME`).
fn start_logs() -> Logs {
    #[cfg(feature = "otel")]
    return clawmcp::otel::init();
    #[cfg(not(feature = "otel"))]
    return clawmcp::logging::init();
}

fn exit(log: Logs, code: i32, why: &str) -> ! {
    tracing::error!("reference: {why}");
    drop(log);
    std::process::exit(code);
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
    let root = sandbox::Root::open(&root)?;

    // One deployment's processes share their request-state keys, so that a
    // 2026-07-28 retry may reach any of them; else each has its own.
    let request_state_keys = match std::env::var("CLAWMCP_REQUEST_STATE_KEYS") {
        Ok(list) => clawmcp::server::request_state_keys_from_hex(&list)?,
        Err(_) => Vec::new(),
    };
    let quota = Quota::new(options.root_quota.unwrap_or(DEFAULT_ROOT_QUOTA));
    let mut builder = build(root, quota, options.max_message_size, request_state_keys);
    if let Some(tasks) = options.max_tasks_per_principal {
        builder = builder.max_tasks_per_principal(tasks);
    }
    if let Some(ms) = options.tool_time_limit_ms {
        builder = builder.tool_time_limit(Duration::from_millis(ms));
    }
    #[cfg(feature = "redis")]
    let builder = match &options.redis {
        Some(url) => {
            tracing::info!(%url, "sharing announcements, contents and tasks through Redis");
            let bus = clawmcp::bus::RedisBus::connect(url, "reference")?;
            builder.task_store(bus.task_store()).bus(bus)
        }
        None => builder,
    };
    let server = builder.build()?;
    match options.http {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            let local = listener.local_addr()?;
            let mut config = http_config(&options.oauth, local)?;
            if let Some(streams) = options.max_streams {
                // Room for as many streams and the usual connections beside.
                config = config
                    .max_streams(streams)
                    .max_connections(streams.saturating_add(1024));
            }
            if let Some(streams) = options.max_streams_per_principal {
                config = config.max_streams_per_principal(streams);
            }
            if let Some(sessions) = options.max_sessions_per_principal {
                config = config.max_sessions_per_principal(sessions);
            }
            if let Some(connections) = options.max_connections_per_peer {
                config = config.max_connections_per_peer(connections);
            }
            for proxy in options.trusted_proxies {
                config = config.trust_proxy(proxy);
            }
            tracing::info!(addr = %local, "serving MCP over HTTP on POST /mcp");
            server
                .serve_http_on(listener, config, shutdown_signal())
                .await?;
        }
        None => server.serve_stdio_until(shutdown_signal()).await?,
    }
    Ok(())
}

/// The HTTP settings: the defaults, or an OAuth resource server.
fn http_config(
    oauth: &OAuthOptions,
    local: std::net::SocketAddr,
) -> Result<HttpConfig, Box<dyn std::error::Error>> {
    let Some(issuer) = &oauth.issuer else {
        return Ok(HttpConfig::default());
    };
    oauth_config(oauth, issuer, local)
}

#[cfg(feature = "oauth")]
fn oauth_config(
    oauth: &OAuthOptions,
    issuer: &str,
    local: std::net::SocketAddr,
) -> Result<HttpConfig, Box<dyn std::error::Error>> {
    use clawmcp::oauth::OAuth;
    let public = match &oauth.public_url {
        Some(url) => url.clone(),
        None if local.ip().is_unspecified() => {
            return Err(format!(
                "--public-url is needed with --oauth-issuer when listening on {local}: \
                 tokens name the URL clients reach"
            )
            .into());
        }
        None => format!("http://{local}/mcp"),
    };
    let settings = if oauth.introspect {
        let id = std::env::var("OAUTH_CLIENT_ID")
            .map_err(|_| "--oauth-introspect needs OAUTH_CLIENT_ID in the environment")?;
        let secret = std::env::var("OAUTH_CLIENT_SECRET")
            .map_err(|_| "--oauth-introspect needs OAUTH_CLIENT_SECRET in the environment")?;
        OAuth::introspection(&public, issuer, id, secret)
    } else {
        OAuth::jwt(&public, issuer)
    };
    let settings = settings
        .required_scopes(["mcp"])
        .resource_name("clawmcp reference server");
    tracing::info!(resource = %settings.resource(), issuer, "OAuth: tokens of the issuer for this resource");
    let mut config = HttpConfig::default();
    if let Some(host) = url_host(&public) {
        config = config.allow_host(host);
    }
    Ok(config.oauth(settings))
}

#[cfg(not(feature = "oauth"))]
fn oauth_config(
    _: &OAuthOptions,
    _: &str,
    _: std::net::SocketAddr,
) -> Result<HttpConfig, Box<dyn std::error::Error>> {
    Err("--oauth-issuer needs the example built with the `oauth` feature (cargo run --features oauth ...)".into())
}

/// The `host[:port]` of a URL, as `Host` headers carry it.
#[cfg(feature = "oauth")]
fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    (!authority.is_empty()).then(|| authority.rsplit('@').next().unwrap_or(authority).to_owned())
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
    /// How many long-lived HTTP streams may be open at once.
    max_streams: Option<usize>,
    /// How many of them one principal may hold.
    max_streams_per_principal: Option<usize>,
    /// How many sessions one principal may hold.
    max_sessions_per_principal: Option<usize>,
    /// How many connections one peer address may hold (a trusted proxy is
    /// not held to it).
    max_connections_per_peer: Option<usize>,
    /// How many tasks one principal may hold.
    max_tasks_per_principal: Option<usize>,
    /// How long one tool execution may run, in milliseconds.
    tool_time_limit_ms: Option<u64>,
    /// The reverse proxies whose `X-Forwarded-For` names the client.
    trusted_proxies: Vec<clawmcp::transport::IpNet>,
    /// How many bytes the file-writer's files may hold in all.
    root_quota: Option<u64>,
    oauth: OAuthOptions,
    /// The deployment's Redis (feature `redis`).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    redis: Option<String>,
}

/// The OAuth flags (HTTP only).
#[derive(Default)]
#[cfg_attr(not(feature = "oauth"), allow(dead_code))]
struct OAuthOptions {
    issuer: Option<String>,
    public_url: Option<String>,
    introspect: bool,
}

/// The value after `flag`, parsed (`what` says what it should be).
fn flag_value<T>(
    args: &mut impl Iterator<Item = String>,
    flag: &str,
    what: &str,
) -> Result<T, String>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    let text = args.next().ok_or_else(|| format!("{flag} needs {what}"))?;
    text.parse().map_err(|e| format!("{flag} {text:?}: {e}"))
}

impl Options {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut options = Options {
            root: None,
            http: None,
            max_message_size: None,
            max_streams: None,
            max_streams_per_principal: None,
            max_sessions_per_principal: None,
            max_connections_per_peer: None,
            max_tasks_per_principal: None,
            tool_time_limit_ms: None,
            trusted_proxies: Vec::new(),
            root_quota: None,
            oauth: OAuthOptions::default(),
            redis: None,
        };
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--root" => {
                    options.root = Some(args.next().ok_or("--root needs a folder")?.into());
                }
                "--max-message-size" => {
                    options.max_message_size =
                        Some(flag_value(&mut args, &arg, "a number of bytes")?);
                }
                "--max-streams" => {
                    options.max_streams = Some(flag_value(&mut args, &arg, "a number")?);
                }
                "--max-streams-per-principal" => {
                    options.max_streams_per_principal =
                        Some(flag_value(&mut args, &arg, "a number")?);
                }
                "--max-sessions-per-principal" => {
                    options.max_sessions_per_principal =
                        Some(flag_value(&mut args, &arg, "a number")?);
                }
                "--max-connections-per-peer" => {
                    options.max_connections_per_peer =
                        Some(flag_value(&mut args, &arg, "a number")?);
                }
                "--trust-proxy" => {
                    let net = args
                        .next()
                        .ok_or("--trust-proxy needs an address or a network")?;
                    let parsed = net
                        .parse::<clawmcp::transport::IpNet>()
                        .or_else(|_| net.parse::<std::net::IpAddr>().map(Into::into))
                        .map_err(|e| format!("--trust-proxy {net:?}: {e}"))?;
                    options.trusted_proxies.push(parsed);
                }
                "--root-quota" => {
                    options.root_quota = Some(flag_value(&mut args, &arg, "a number of bytes")?);
                }
                "--max-tasks-per-principal" => {
                    options.max_tasks_per_principal =
                        Some(flag_value(&mut args, &arg, "a number")?);
                }
                "--tool-time-limit" => {
                    options.tool_time_limit_ms =
                        Some(flag_value(&mut args, &arg, "a number of milliseconds")?);
                }
                "--http" => {
                    options.http = Some(flag_value(
                        &mut args,
                        &arg,
                        "an address, e.g. 127.0.0.1:8080",
                    )?);
                }
                "--oauth-issuer" => {
                    let issuer = args.next().ok_or("--oauth-issuer needs the issuer's URL")?;
                    options.oauth.issuer = Some(issuer);
                }
                "--public-url" => {
                    let url = args
                        .next()
                        .ok_or("--public-url needs the endpoint's public URL")?;
                    options.oauth.public_url = Some(url);
                }
                "--oauth-introspect" => options.oauth.introspect = true,
                "--redis" => {
                    let url = args
                        .next()
                        .ok_or("--redis needs a URL, e.g. redis://127.0.0.1:6379/")?;
                    if !cfg!(feature = "redis") {
                        return Err("--redis needs the example built with --features redis".into());
                    }
                    options.redis = Some(url);
                }
                "--help" | "-h" => {
                    use std::io::Write;
                    let _ = writeln!(
                        std::io::stderr(),
                        "usage: reference [--root DIR [--root-quota BYTES]] [--http ADDR:PORT] [--max-message-size BYTES]\n\
                         \x20      [--oauth-issuer URL [--public-url URL] [--oauth-introspect]]  (with --http)\n\
                         \x20      [--max-streams N] [--max-streams-per-principal N]\n\
                         \x20      [--max-sessions-per-principal N] [--max-tasks-per-principal N]\n\
                         \x20      [--max-connections-per-peer N] [--trust-proxy ADDR[/PREFIX]]...\n\
                         \x20      [--tool-time-limit MS]\n\
                         \x20      [--redis URL]  (feature redis)"
                    );
                    std::process::exit(0);
                }
                other => return Err(format!("unknown argument {other:?} (try --help)")),
            }
        }
        let oauth = &options.oauth;
        if options.http.is_none()
            && (oauth.issuer.is_some() || oauth.public_url.is_some() || oauth.introspect)
        {
            return Err(
                "--oauth-issuer, --public-url and --oauth-introspect need --http: \
                 stdio is never subject to OAuth"
                    .into(),
            );
        }
        if oauth.issuer.is_none() && (oauth.public_url.is_some() || oauth.introspect) {
            return Err("--public-url and --oauth-introspect need --oauth-issuer".into());
        }
        Ok(options)
    }
}

/// The reference server's items.
fn build(
    root: sandbox::Root,
    quota: Quota,
    max_message_size: Option<usize>,
    request_state_keys: Vec<[u8; 32]>,
) -> clawmcp::ServerBuilder {
    let last_write = SharedResource::new(
        LAST_WRITE,
        "last-write",
        "The content of the latest successful file-writer write (empty at start).",
        "text/plain",
        "",
    );
    let writer = FileWriter {
        root: Arc::new(root),
        quota: Arc::new(quota),
        last_write: last_write.clone(),
    };
    Server::builder()
        .max_message_size(max_message_size.unwrap_or(clawmcp::server::DEFAULT_MAX_MESSAGE_SIZE))
        .name("clawmcp-reference")
        .version(env!("CARGO_PKG_VERSION"))
        .instructions(
            "A reference server: echo, add and divide compute, sleep waits (and can be \
             cancelled), file-writer writes files under the server's root folder; the \
             last-write resource shows the latest write.",
        )
        .tool(typed_tool(
            format!("{BASE}/tools/file-writer:v1"),
            "file-writer",
            "Writes content to a file under the server's root folder, replacing it. The path is \
             relative to the root, at most 1024 bytes and 32 components; absolute paths and \
             paths leaving the root fail.",
            move |args: WriteFile| {
                let writer = writer.clone();
                async move { writer.write(args).await }
            },
        )
        .with_metadata(
            ToolMetadata::new().title("Write a file").annotations(
                ToolAnnotations::new()
                    .read_only(false)
                    .destructive(true)
                    .idempotent(true)
                    .open_world(false),
            ),
        ))
        .tool(typed_tool(
            format!("{BASE}/tools/echo:v1"),
            "echo",
            "Returns the message it is given.",
            |args: Echo| async move { Ok::<_, ToolError>(args) },
        )
        // A host that renders apps shows the echo page with its results.
        .with_metadata(
            ToolMetadata::new()
                .title("Echo")
                .annotations(ToolAnnotations::new().read_only(true).open_world(false))
                .app(ECHO_APP),
        ))
        .resource(AppResource::new(
            ECHO_APP,
            "echo-app",
            "A page with a text box: it calls echo through the host and shows the answer.",
            include_str!("apps/echo.html"),
        )
        .prefers_border(true))
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
        )
        // A 2026-07-28 request that declares the tasks extension gets a
        // task for it: `tasks/get` until it completes.
        .with_task_support(TaskSupport::Optional))
        .resource(TextResource::new(
            format!("{BASE}/resources/about.txt"),
            "about",
            "What this server is.",
            "text/plain",
            "The clawmcp reference server: five tools, three resources and two prompts \
             in both protocols, and for the Model Context Protocol a sixth tool (ask) \
             and an app page.\n",
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
        // MCP v1.0 lists the instruction; the Model Context Protocol's
        // `prompts/get` fills the declared `text` argument after it.
        .prompt(prompt_fn(
            PromptDefinition {
                mcp_id: format!("{BASE}/prompts/summarize:v1"),
                name: "summarize".into(),
                description: Some("Asks for a short summary of the text that follows.".into()),
                role: Role::User,
                content: SUMMARIZE.into(),
            },
            [PromptArgument::required("text", "The text to summarize.")],
            |args| async move {
                let text = args.get("text").map_or("", String::as_str);
                Ok(vec![PromptMessage::user(format!("{SUMMARIZE}\n\n{text}"))])
            },
        ))
        // MCP v1.0 cannot ask its client anything: only the Model Context
        // Protocol lists the ask tool.
        .model_context_tool(
            typed_tool(
                format!("{BASE}/tools/ask:v1"),
                "ask",
                "Asks the user a yes-or-no question (elicitation) and returns the answer.",
                |args: Ask, ctx: ToolContext| async move {
                    let form = Elicitation::new(args.question).boolean("yes", "Yes?", true);
                    let answer = ctx.elicit(form).await?;
                    let yes = answer
                        .content
                        .as_ref()
                        .and_then(|c| c.get("yes"))
                        .and_then(serde_json::Value::as_bool);
                    let action = match answer.action {
                        ElicitAction::Accept => "accept",
                        ElicitAction::Decline => "decline",
                        ElicitAction::Cancel => "cancel",
                    };
                    Ok::<_, ToolError>(Answer {
                        action: action.into(),
                        yes,
                    })
                },
            )
            // As a task, the question waits in `inputRequests` until a
            // `tasks/update` answers it.
            .with_task_support(TaskSupport::Optional)
            .with_metadata(
                ToolMetadata::new()
                    .title("Ask the user")
                    .annotations(ToolAnnotations::new().read_only(true).open_world(false)),
            ),
        )
        .request_state_keys(request_state_keys)
        // Behind OAuth (--oauth-issuer), writing needs more than calling.
        .require_scopes("file-writer", ["files:write"])
}

/// The echo tool's app page (MCP Apps): the Model Context Protocol lists
/// it, MCP v1.0 does not.
const ECHO_APP: &str = "ui://clawmcp/examples/echo.html";

/// The echo tool's arguments, and its output.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Echo {
    /// The text to send back.
    message: String,
}

/// The ask tool's arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Ask {
    /// The yes-or-no question to put to the user.
    question: String,
}

/// The ask tool's output: what the user did, and their answer.
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Answer {
    /// `accept`, `decline` or `cancel`.
    action: String,
    /// The answer, when the user accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    yes: Option<bool>,
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

/// The file-writer tool: writes under its root folder, never outside it.
#[derive(Clone)]
struct FileWriter {
    root: Arc<sandbox::Root>,
    /// What its writes may hold in all.
    quota: Arc<Quota>,
    /// Set after each successful write; announces the change by itself.
    last_write: SharedResource,
}

impl FileWriter {
    async fn write(&self, args: WriteFile) -> Result<Written, ToolError> {
        let WriteFile { path, content } = args;
        let names = relative_names(&path)?;
        // Taken before the write, given back if it fails.
        let charge = self.quota.charge(&names, content.len()).map_err(|why| {
            let head: String = path.chars().take(64).collect();
            ToolError::new(format!("cannot write {head:?}: {why}"))
        })?;
        let root = Arc::clone(&self.root);
        let shown = path.clone();
        // The filesystem calls run on a blocking-pool thread, so a runtime
        // thread never waits in open() or on a disk (and none of the opens
        // can block: see `sandbox`).
        let written = tokio::task::spawn_blocking(move || {
            root.write(&names, content.as_bytes())
                .map(|()| content)
                .map_err(|e| e.for_path(&path))
        })
        .await
        .map_err(|e| ToolError::new(format!("cannot write {shown:?}: {e}")))
        .and_then(|written| written);
        let content = match written {
            Ok(content) => content,
            Err(e) => {
                self.quota.refund(charge);
                return Err(e);
            }
        };
        let bytes_written = content.len();
        self.last_write.set(content);
        Ok(Written {
            status: Success::Success,
            bytes_written,
        })
    }
}

/// What the file-writer's files may hold in all by default: 64 MiB.
const DEFAULT_ROOT_QUOTA: u64 = 64 << 20;
/// The most files the file-writer writes.
const MAX_FILES: usize = 1024;

/// What the file-writer has written, so that no client can fill the disk:
/// at most [`MAX_FILES`] files and a number of bytes in all (a file written
/// again counts its new size). Files that were in the root before the
/// server started are not counted.
struct Quota {
    most_bytes: u64,
    written: std::sync::Mutex<WrittenFiles>,
}

/// The size of each file written, by its names from the root, with the
/// number of the write that counted it; their sum; and how many writes
/// were counted.
#[derive(Default)]
struct WrittenFiles {
    sizes: std::collections::HashMap<Vec<OsString>, (u64, u64)>,
    bytes: u64,
    writes: u64,
}

/// A write's place in the quota: its number, and what the file held
/// before it.
struct Charge {
    names: Vec<OsString>,
    write: u64,
    before: Option<(u64, u64)>,
}

impl Quota {
    fn new(most_bytes: u64) -> Self {
        Quota {
            most_bytes,
            written: std::sync::Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, WrittenFiles> {
        self.written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts a write of `size` bytes to the file `names` names, or says
    /// which bound it would pass.
    fn charge(&self, names: &[OsString], size: usize) -> Result<Charge, String> {
        let size = size as u64;
        let mut written = self.lock();
        let before = written.sizes.get(names).copied();
        if before.is_none() && written.sizes.len() >= MAX_FILES {
            return Err(format!(
                "the root holds the most files it may ({MAX_FILES})"
            ));
        }
        let bytes = written.bytes - before.map_or(0, |(size, _)| size) + size;
        if bytes > self.most_bytes {
            return Err(format!(
                "the root's files would hold {bytes} bytes, over the quota of {}",
                self.most_bytes
            ));
        }
        written.bytes = bytes;
        written.writes += 1;
        let write = written.writes;
        written.sizes.insert(names.to_vec(), (size, write));
        Ok(Charge {
            names: names.to_vec(),
            write,
            before,
        })
    }

    /// Gives back a write that failed, unless another write to the same
    /// file was counted since (its size stands then).
    fn refund(&self, charge: Charge) {
        let mut written = self.lock();
        let Some(&(size, write)) = written.sizes.get(&charge.names) else {
            return;
        };
        if write != charge.write {
            return;
        }
        written.bytes = written.bytes - size + charge.before.map_or(0, |(size, _)| size);
        match charge.before {
            Some(before) => written.sizes.insert(charge.names, before),
            None => written.sizes.remove(&charge.names),
        };
    }
}

/// The longest path the file-writer takes, in bytes.
const MAX_PATH_BYTES: usize = 1024;
/// The most components (names, `.` and `..`) a path may have.
const MAX_PATH_COMPONENTS: usize = 32;

/// The names on the way from the root to the file `path` names (the file's
/// own name last), after refusing what a client may never ask for: a path
/// over [`MAX_PATH_BYTES`] or [`MAX_PATH_COMPONENTS`], an absolute path,
/// `..` that leaves the root, a path that names no file. These checks read
/// the text only, before anything is created; `sandbox` enforces the rest
/// as it opens each name.
fn relative_names(path: &str) -> Result<Vec<OsString>, ToolError> {
    let refuse = |why: &str| ToolError::new(format!("refused path {path:?}: {why}"));
    // An over-long path is named by its first 64 characters.
    let shown = |why: String| {
        let head: String = path.chars().take(64).collect();
        ToolError::new(format!("refused path {head:?}…: {why}"))
    };
    if path.len() > MAX_PATH_BYTES {
        return Err(shown(format!(
            "it is {} bytes long, over the limit of {MAX_PATH_BYTES}",
            path.len()
        )));
    }
    if path.contains('\0') {
        return Err(refuse("it contains a NUL character"));
    }
    let depth = Path::new(path).components().count();
    if depth > MAX_PATH_COMPONENTS {
        return Err(shown(format!(
            "it has {depth} components, over the limit of {MAX_PATH_COMPONENTS}"
        )));
    }
    let mut names = Vec::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(name) => names.push(name.to_os_string()),
            Component::CurDir => {}
            Component::ParentDir => {
                if names.pop().is_none() {
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
    if names.is_empty() {
        return Err(refuse("it names no file"));
    }
    Ok(names)
}

/// Why a write did not happen.
#[derive(Debug)]
enum WriteError {
    /// The path names something the file-writer does not write to.
    Refused(String),
    /// The system refused an operation.
    Io(std::io::Error),
}

impl WriteError {
    /// The tool error for the client, naming the path it gave.
    fn for_path(self, path: &str) -> ToolError {
        match self {
            WriteError::Refused(why) => ToolError::new(format!("refused path {path:?}: {why}")),
            WriteError::Io(e) => ToolError::new(format!("cannot write {path:?}: {e}")),
        }
    }
}

/// The file-writer's sandbox on Linux: every name is opened relative to a
/// folder already open, with `openat2`, so nothing can be swapped between a
/// check and a use.
///
/// - The root is opened once, at startup, as a directory descriptor.
/// - Each folder on the way is opened with `RESOLVE_BENEATH |
///   RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS` (and `O_NOFOLLOW`), and
///   created with `mkdirat` when missing: a symbolic link anywhere on the
///   way is refused, and no name resolves above the root.
/// - The file is opened, and created when missing, in one step relative to
///   its folder's descriptor, with the same rules plus `RESOLVE_NO_XDEV`, and
///   `O_NONBLOCK`, so that a FIFO or a device cannot block the open (a FIFO
///   without a reader fails at once with `ENXIO`). It is never truncated at
///   open: `fstat` on the open descriptor must show a regular file with
///   exactly one link (a hard link to a file outside the root is refused),
///   and only then is it truncated and written.
/// - Without `openat2` (Linux before 5.6, or a seccomp filter that denies
///   it) every write is refused: the sandbox fails closed.
#[cfg(target_os = "linux")]
mod sandbox {
    use std::ffi::{OsStr, OsString};
    use std::io::Write;
    use std::path::Path;

    use rustix::fd::OwnedFd;
    use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};
    use rustix::io::Errno;

    use super::WriteError;

    /// A folder, opened only to resolve names under it.
    const FOLDER: OFlags = OFlags::PATH
        .union(OFlags::DIRECTORY)
        .union(OFlags::NOFOLLOW)
        .union(OFlags::CLOEXEC);
    /// The file: opened to write, created when missing, never truncated at
    /// open, never followed, never waited on.
    const FILE: OFlags = OFlags::WRONLY
        .union(OFlags::CREATE)
        .union(OFlags::NONBLOCK)
        .union(OFlags::NOCTTY)
        .union(OFlags::NOFOLLOW)
        .union(OFlags::CLOEXEC);
    /// No name resolves above the folder it is opened in, and no symbolic
    /// link (nor `/proc` magic link) is followed.
    const BENEATH: ResolveFlags = ResolveFlags::BENEATH
        .union(ResolveFlags::NO_SYMLINKS)
        .union(ResolveFlags::NO_MAGICLINKS);

    /// The root folder, open.
    pub struct Root {
        fd: OwnedFd,
    }

    impl Root {
        /// Opens the folder `path` (already created and canonical).
        pub fn open(path: &Path) -> std::io::Result<Root> {
            let fd = rustix::fs::open(
                path,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            if let Err(Errno::NOSYS) = rustix::fs::openat2(&fd, ".", FOLDER, Mode::empty(), BENEATH)
            {
                tracing::warn!("{UNAVAILABLE}");
            }
            Ok(Root { fd })
        }

        /// Writes `content` to the file `names` leads to under the root
        /// (its folders created when missing), replacing what it held.
        pub fn write(&self, names: &[OsString], content: &[u8]) -> Result<(), WriteError> {
            let Some((name, folders)) = names.split_last() else {
                return Err(WriteError::Refused("it names no file".into()));
            };
            let mut folder: Option<OwnedFd> = None;
            for (depth, folder_name) in folders.iter().enumerate() {
                let at = folder.as_ref().unwrap_or(&self.fd);
                let shown = || join(&names[..=depth]);
                folder = Some(open_folder(at, folder_name, shown)?);
            }
            let at = folder.as_ref().unwrap_or(&self.fd);
            let fd = rustix::fs::openat2(
                at,
                name.as_os_str(),
                FILE,
                Mode::from_raw_mode(0o644),
                BENEATH | ResolveFlags::NO_XDEV,
            )
            .map_err(|e| match e {
                Errno::LOOP => refused("it is a symbolic link"),
                Errno::ISDIR => refused("it is a folder"),
                Errno::NXIO => refused("it is not a regular file (a FIFO, socket or device)"),
                Errno::XDEV => refused("it is a mount point or leaves the root folder"),
                e => other(e),
            })?;
            let stat = rustix::fs::fstat(&fd).map_err(other)?;
            match FileType::from_raw_mode(stat.st_mode) {
                FileType::RegularFile => {}
                FileType::Directory => return Err(refused("it is a folder")),
                _ => return Err(refused("it is not a regular file")),
            }
            if stat.st_nlink != 1 {
                return Err(refused(
                    "it has other hard links, which may be outside the root folder",
                ));
            }
            rustix::fs::ftruncate(&fd, 0).map_err(other)?;
            std::fs::File::from(fd)
                .write_all(content)
                .map_err(WriteError::Io)
        }
    }

    /// Opens the folder `name` under `at`, creating it when missing.
    fn open_folder(
        at: &OwnedFd,
        name: &OsStr,
        shown: impl Fn() -> String,
    ) -> Result<OwnedFd, WriteError> {
        let open = || rustix::fs::openat2(at, name, FOLDER, Mode::empty(), BENEATH);
        let opened = match open() {
            Err(Errno::NOENT) => match rustix::fs::mkdirat(at, name, Mode::from_raw_mode(0o755)) {
                // Created, or created by someone else meanwhile: open what is there.
                Ok(()) | Err(Errno::EXIST) => open(),
                Err(e) => Err(e),
            },
            opened => opened,
        };
        opened.map_err(|e| match e {
            // O_DIRECTORY turns a symbolic link into ENOTDIR: say which it is
            // (for the message only; nothing was opened).
            Errno::LOOP | Errno::NOTDIR => {
                let link = rustix::fs::statat(at, name, AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Symlink);
                if link {
                    refused(&format!("{:?} is a symbolic link", shown()))
                } else {
                    refused(&format!("{:?} is not a folder", shown()))
                }
            }
            Errno::XDEV => refused("it leaves the root folder"),
            e => other(e),
        })
    }

    const UNAVAILABLE: &str = "this system does not offer openat2 (Linux 5.6 or later, not \
                               denied by a seccomp filter), which the file-writer needs to write \
                               safely: every write is refused";

    fn refused(why: &str) -> WriteError {
        WriteError::Refused(why.into())
    }

    /// A system error, or the refusal to write at all without openat2.
    fn other(e: Errno) -> WriteError {
        match e {
            Errno::NOSYS => refused(UNAVAILABLE),
            e => WriteError::Io(e.into()),
        }
    }

    fn join(names: &[OsString]) -> String {
        names
            .iter()
            .map(|n| n.to_string_lossy())
            .collect::<Vec<_>>()
            .join("/")
    }
}

/// Elsewhere than on Linux the file-writer refuses every write: it relies
/// on `openat2` to open files without races.
#[cfg(not(target_os = "linux"))]
mod sandbox {
    use std::ffi::OsString;
    use std::path::Path;

    use super::WriteError;

    const UNAVAILABLE: &str = "the file-writer writes only on Linux, where openat2 lets it open \
                               files without races: every write is refused on this system";

    /// The root folder (unused: every write is refused).
    pub struct Root;

    impl Root {
        pub fn open(_path: &Path) -> std::io::Result<Root> {
            tracing::warn!("{UNAVAILABLE}");
            Ok(Root)
        }

        pub fn write(&self, _names: &[OsString], _content: &[u8]) -> Result<(), WriteError> {
            Err(WriteError::Refused(UNAVAILABLE.into()))
        }
    }
}
