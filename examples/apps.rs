//! A poll as an MCP App: the model creates a poll, the host shows it as a
//! page where the user votes with a click, and the page draws the tallies
//! as a bar chart — served on stdio, or over Streamable HTTP at `/mcp`.
//!
//! ```sh
//! cargo run --example apps                            # stdio
//! cargo run --example apps -- --http 127.0.0.1:8080   # HTTP, POST /mcp
//! ```
//!
//! What it shows (the Model Context Protocol's `io.modelcontextprotocol/ui`
//! extension, [`clawmcp::app`]):
//! - one page, `ui://clawmcp/examples/poll.html` (examples/apps/poll.html,
//!   an [`AppResource`]): self-contained HTML with inline script and style
//!   (a host's default policy lets a page reach no network), speaking to
//!   its host over `postMessage` — `ui/initialize`, the tool's input and
//!   result as the host hands them on, and `tools/call` through the host;
//! - `create_poll` (question and options) links the page: it returns the
//!   poll as `structuredContent`, which the page renders as buttons and a
//!   chart, and as text in `content`, which the model reads (and a host
//!   without apps shows). The text depends on
//!   [`ToolContext::client_supports_apps`]: with apps it says the user
//!   votes in the page; without, that voting needs an app-capable host;
//! - `vote` is the page's own tool ([`AppVisibility::App`]): a host keeps
//!   it out of the model's tool list, and the page calls it on each click;
//! - `results` (model and page) gives the tallies, as text and as data
//!   the same page draws.
//!
//! The polls live in this process, in a `Mutex` (at most 1000 of them).

use std::sync::{Arc, Mutex, PoisonError};

use clawmcp::app::{AppResource, AppVisibility};
use clawmcp::definition::{ToolAnnotations, ToolDefinition, ToolMetadata};
use clawmcp::tool::rich_tool_fn;
use clawmcp::transport::HttpConfig;
use clawmcp::typed::schema_of;
use clawmcp::{Server, ToolContext, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The poll page's URI.
const POLL_APP: &str = "ui://clawmcp/examples/poll.html";

/// How many polls the process keeps.
const MAX_POLLS: usize = 1000;

/// Arguments of `create_poll`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CreatePoll {
    /// The question, e.g. "Where do we have lunch?".
    #[schemars(length(min = 1, max = 200))]
    question: String,
    /// The answers to choose from, 2 to 8 different ones, each at most 80
    /// characters.
    #[schemars(length(min = 2, max = 8))]
    options: Vec<String>,
}

/// Arguments of `vote`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Vote {
    /// The poll's id.
    poll: u32,
    /// The option voted for, as the poll spells it.
    option: String,
}

/// Arguments of `results`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Results {
    /// The poll's id.
    poll: u32,
}

/// A poll as the tools return it (`structuredContent`), what the page draws.
#[derive(Debug, Clone, Serialize, JsonSchema)]
struct PollView {
    /// The poll's id, from 1.
    id: u32,
    /// Its question.
    question: String,
    /// Each option and its votes, in the poll's order.
    tallies: Vec<Tally>,
    /// All the votes.
    total: u32,
}

/// One option's votes.
#[derive(Debug, Clone, Serialize, JsonSchema)]
struct Tally {
    /// The option.
    option: String,
    /// Its votes.
    votes: u32,
}

/// The polls, shared by the tools.
#[derive(Clone, Default)]
struct Polls(Arc<Mutex<Vec<PollView>>>);

impl Polls {
    fn create(&self, args: CreatePoll) -> Result<PollView, ToolError> {
        let question = args.question.trim().to_owned();
        let mut options: Vec<String> = Vec::with_capacity(args.options.len());
        for option in args.options {
            let option = option.trim().to_owned();
            if option.is_empty() || option.chars().count() > 80 {
                return Err(ToolError::new("each option must have 1 to 80 characters"));
            }
            if options.contains(&option) {
                return Err(ToolError::new(format!(
                    "the option {option:?} is given twice"
                )));
            }
            options.push(option);
        }
        if question.is_empty() {
            return Err(ToolError::new("the question is empty"));
        }
        let mut polls = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if polls.len() >= MAX_POLLS {
            return Err(ToolError::new(format!(
                "this server keeps at most {MAX_POLLS} polls"
            )));
        }
        let id = u32::try_from(polls.len() + 1).map_err(|_| ToolError::new("too many polls"))?;
        let poll = PollView {
            id,
            question,
            tallies: options
                .into_iter()
                .map(|option| Tally { option, votes: 0 })
                .collect(),
            total: 0,
        };
        polls.push(poll.clone());
        Ok(poll)
    }

    fn vote(&self, args: &Vote) -> Result<PollView, ToolError> {
        let mut polls = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let poll = find(&mut polls, args.poll)?;
        let tally = poll
            .tallies
            .iter_mut()
            .find(|t| t.option == args.option)
            .ok_or_else(|| {
                ToolError::new(format!("poll {} has no option {:?}", poll.id, args.option))
            })?;
        tally.votes = tally.votes.saturating_add(1);
        poll.total = poll.total.saturating_add(1);
        Ok(poll.clone())
    }

    fn results(&self, id: u32) -> Result<PollView, ToolError> {
        let mut polls = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        find(&mut polls, id).map(|poll| poll.clone())
    }
}

fn find(polls: &mut [PollView], id: u32) -> Result<&mut PollView, ToolError> {
    usize::try_from(id)
        .ok()
        .and_then(|id| id.checked_sub(1))
        .and_then(|index| polls.get_mut(index))
        .ok_or_else(|| ToolError::new(format!("there is no poll {id}")))
}

/// The tallies as a line of text: `pizza 2, soup 1 (3 votes)`.
fn tallies_text(poll: &PollView) -> String {
    let tallies: Vec<String> = poll
        .tallies
        .iter()
        .map(|t| format!("{} {}", t.option, t.votes))
        .collect();
    let votes = if poll.total == 1 { "vote" } else { "votes" };
    format!("{} ({} {votes})", tallies.join(", "), poll.total)
}

/// What the model reads of a new poll: where the user votes depends on
/// whether this client renders apps.
fn created_text(poll: &PollView, apps: bool) -> String {
    let options: Vec<&str> = poll.tallies.iter().map(|t| t.option.as_str()).collect();
    let head = format!(
        "Poll {} created: {:?} with the options {}.",
        poll.id,
        poll.question,
        options.join(", ")
    );
    if apps {
        format!(
            "{head} It is shown to the user as an app, where they vote with a click; \
             call results with poll {} for the tallies.",
            poll.id
        )
    } else {
        format!(
            "{head} Voting happens in the poll's app page: open the poll in an \
             app-capable host to vote. Meanwhile, read the options to the user; \
             results with poll {} gives the tallies.",
            poll.id
        )
    }
}

/// The tool's answer: the text for the model, the poll for the page.
fn answer(poll: &PollView, text: String) -> Result<ToolOutput, ToolError> {
    let structured = serde_json::to_value(poll).map_err(|e| ToolError::new(e.to_string()))?;
    Ok(ToolOutput::text(text).with_structured(structured))
}

/// Arguments that passed the input schema, read into their type.
fn read<T: DeserializeOwned>(arguments: Value) -> Result<T, ToolError> {
    serde_json::from_value(arguments).map_err(|e| ToolError::new(e.to_string()))
}

/// A tool's definition, its schemas derived from its types.
fn definition<A: JsonSchema>(name: &str, description: &str) -> ToolDefinition {
    ToolDefinition {
        mcp_id: format!("mcp://apps-example/tools/{name}:v1"),
        name: name.into(),
        description: description.into(),
        input_schema: schema_of::<A>(),
        output_schema: schema_of::<PollView>(),
    }
}

/// The poll server over `polls`.
fn server(polls: Polls) -> Result<Server, clawmcp::BuildError> {
    let create = {
        let polls = polls.clone();
        rich_tool_fn(
            definition::<CreatePoll>(
                "create_poll",
                "Creates a poll (a question and 2 to 8 options) and shows it to the user, \
                 who votes in it.",
            ),
            move |arguments: Value, ctx: ToolContext| {
                let polls = polls.clone();
                async move {
                    let poll = polls.create(read(arguments)?)?;
                    answer(&poll, created_text(&poll, ctx.client_supports_apps()))
                }
            },
        )
        .with_metadata(
            ToolMetadata::new()
                .title("Create a poll")
                .annotations(
                    ToolAnnotations::new()
                        .read_only(false)
                        .destructive(false)
                        .open_world(false),
                )
                .app(POLL_APP),
        )
    };
    let vote = {
        let polls = polls.clone();
        rich_tool_fn(
            definition::<Vote>(
                "vote",
                "Counts one vote for an option of a poll (the poll page's tool).",
            ),
            move |arguments: Value, _ctx: ToolContext| {
                let polls = polls.clone();
                async move {
                    let args: Vote = read(arguments)?;
                    let poll = polls.vote(&args)?;
                    let text = format!(
                        "Vote counted for {:?}. {:?}: {}",
                        args.option,
                        poll.question,
                        tallies_text(&poll)
                    );
                    answer(&poll, text)
                }
            },
        )
        .with_metadata(
            ToolMetadata::new()
                .title("Vote")
                .annotations(
                    ToolAnnotations::new()
                        .read_only(false)
                        .destructive(false)
                        .idempotent(false)
                        .open_world(false),
                )
                .app(POLL_APP)
                // The page calls it; the model does not see it (the host filters).
                .app_visibility(AppVisibility::App),
        )
    };
    let results = rich_tool_fn(
        definition::<Results>("results", "The tallies of a poll so far."),
        move |arguments: Value, _ctx: ToolContext| {
            let polls = polls.clone();
            async move {
                let args: Results = read(arguments)?;
                let poll = polls.results(args.poll)?;
                let text = format!(
                    "Poll {} {:?}: {}",
                    poll.id,
                    poll.question,
                    tallies_text(&poll)
                );
                answer(&poll, text)
            }
        },
    )
    .with_metadata(
        ToolMetadata::new()
            .title("Poll results")
            .annotations(ToolAnnotations::new().read_only(true).open_world(false))
            .app(POLL_APP),
    );
    Server::builder()
        .name("apps-example")
        .version(env!("CARGO_PKG_VERSION"))
        .instructions(
            "Polls: create_poll shows a poll to the user, who votes in its page; results \
             gives the tallies.",
        )
        .resource(
            AppResource::new(
                POLL_APP,
                "poll-app",
                "A poll: one button per option, and the tallies as a bar chart.",
                include_str!("apps/poll.html"),
            )
            .prefers_border(true),
        )
        .tool(create)
        .tool(vote)
        .tool(results)
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _log = clawmcp::logging::init();
    let server = server(Polls::default())?;
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next(), args.next()) {
        (None, _, _) => server.serve_stdio_until(shutdown_signal()).await?,
        (Some("--http"), Some(addr), None) => {
            // Loopback only, as every example here (see SECURITY.md).
            let listener = tokio::net::TcpListener::bind(&addr).await?;
            tracing::info!(addr = %listener.local_addr()?, "serving MCP over HTTP on POST /mcp");
            server
                .serve_http_on(listener, HttpConfig::default(), shutdown_signal())
                .await?;
        }
        _ => {
            eprintln!("usage: apps [--http ADDR]");
            std::process::exit(2);
        }
    }
    Ok(())
}

/// Completes on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = async {
            match term.as_mut() {
                Some(term) => { term.recv().await; }
                None => std::future::pending().await,
            }
        } => {}
    }
}
