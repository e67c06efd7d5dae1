//! Fixtures for the Model Context Protocol tests: a server with one item per
//! behaviour of docs/model-context.md §3, and a probe that lets a test see (and
//! hold) what the tools do.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use clawmcp::client::{ClientError, Elicitation, LogLevel, Sampling};
use clawmcp::content::{Content, ResourceBody, ResourceContents};
use clawmcp::definition::{PromptDefinition, Role, ToolDefinition};
use clawmcp::prompt::{MessageRole, PromptArgument, PromptMessage, prompt_fn};
use clawmcp::resource::BinaryResource;
use clawmcp::template::resource_template;
use clawmcp::tool::rich_tool_fn;
use clawmcp::{
    Server, ServerBuilder, SharedResource, TextResource, ToolContext, ToolError, ToolOutput,
    tool_fn,
};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

/// A hang guard, never a performance bound.
pub const PATIENCE: Duration = Duration::from_secs(10);
/// How long to listen to conclude that nothing (more) is coming.
pub const QUIET: Duration = Duration::from_millis(300);

pub const NOTES: &str = "test://notes.txt";
pub const LOGO: &str = "test://logo.png";
pub const STATUS: &str = "test://status";
pub const LOGO_BYTES: &[u8] = b"\x89PNG\r\n\x1a\nlogo";

/// What the tools did, and a gate that holds `gate` calls.
#[derive(Clone)]
pub struct Probe {
    pub gate: Arc<Semaphore>,
    pub started: Arc<AtomicUsize>,
    pub cancelled: Arc<AtomicUsize>,
    /// What `elicit`, `sample` and `roots` got back, as text.
    pub answers: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Default for Probe {
    fn default() -> Self {
        Self {
            gate: Arc::new(Semaphore::new(0)),
            started: Arc::default(),
            cancelled: Arc::default(),
            answers: Arc::default(),
        }
    }
}

impl Probe {
    pub fn started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }

    pub fn cancelled(&self) -> usize {
        self.cancelled.load(Ordering::SeqCst)
    }

    pub fn answers(&self) -> Vec<String> {
        self.answers.lock().map(|a| a.clone()).unwrap_or_default()
    }

    pub async fn wait_for(&self, what: &str, condition: impl Fn(&Probe) -> bool) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while !condition(self) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "gave up waiting for {what}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    fn record(&self, answer: String) {
        if let Ok(mut answers) = self.answers.lock() {
            answers.push(answer);
        }
    }
}

fn def(name: &str, input: Value, output: Value) -> ToolDefinition {
    ToolDefinition {
        mcp_id: format!("mcp://mc-test/tools/{name}"),
        name: name.into(),
        description: format!("The {name} test tool."),
        input_schema: input,
        output_schema: output,
    }
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required,
           "additionalProperties": false})
}

/// The status resource, changed by the `touch` tool.
pub fn status() -> SharedResource {
    SharedResource::new(
        STATUS,
        "status",
        "The current status.",
        "text/plain",
        "idle",
    )
}

/// Every item of the §3 rows.
pub fn builder(probe: &Probe, status: &SharedResource) -> ServerBuilder {
    let gate = probe.clone();
    let asks = probe.clone();
    let samples = probe.clone();
    let roots = probe.clone();
    let touched = status.clone();
    Server::builder()
        .name("mc-test")
        .version("1.2.3")
        .instructions("Use echo to test.")
        .tool(tool_fn(
            def(
                "echo",
                object(json!({"message": {"type": "string"}}), &["message"]),
                object(json!({"message": {"type": "string"}}), &["message"]),
            ),
            |args: Value, _ctx: ToolContext| async move { Ok(json!({"message": args["message"]})) },
        ))
        .tool(tool_fn(
            // An output schema that is not an object schema: not listed.
            def(
                "count",
                json!({"type": "object"}),
                json!({"type": "integer"}),
            ),
            |_args: Value, _ctx: ToolContext| async move { Ok(json!(3)) },
        ))
        .tool(tool_fn(
            def("fail", json!({"type": "object"}), json!({})),
            |_args: Value, _ctx: ToolContext| async move {
                Err(ToolError::new("the tool failed on purpose"))
            },
        ))
        .tool(tool_fn(
            def(
                "bad-output",
                json!({"type": "object"}),
                object(json!({}), &["x"]),
            ),
            |_args: Value, _ctx: ToolContext| async move { Ok(json!({"y": 1})) },
        ))
        .tool(tool_fn(
            def("panic", json!({"type": "object"}), json!({})),
            |_args: Value, _ctx: ToolContext| async move {
                if std::hint::black_box(true) {
                    panic!("on purpose");
                }
                Ok(json!({}))
            },
        ))
        .tool(tool_fn(
            def("gate", json!({"type": "object"}), json!({})),
            move |_args: Value, ctx: ToolContext| {
                let gate = gate.clone();
                async move {
                    gate.started.fetch_add(1, Ordering::SeqCst);
                    // The tool's future is dropped when it is stopped: watch
                    // the token from a task of its own.
                    let token = ctx.cancellation_token();
                    let cancelled = gate.cancelled.clone();
                    let watcher = tokio::spawn(async move {
                        token.cancelled().await;
                        cancelled.fetch_add(1, Ordering::SeqCst);
                    });
                    if let Ok(permit) = gate.gate.acquire().await {
                        permit.forget();
                    }
                    watcher.abort();
                    Ok(json!({"opened": true}))
                }
            },
        ))
        .tool(rich_tool_fn(
            def("rich", json!({"type": "object"}), json!({})),
            |_args: Value, _ctx: ToolContext| async move {
                Ok(ToolOutput::content([
                    Content::text("a picture:"),
                    Content::image(LOGO_BYTES, "image/png"),
                    Content::audio(b"RIFF", "audio/wav"),
                    Content::resource(ResourceContents::text(NOTES, "text/plain", "notes")),
                    Content::resource_link(clawmcp::content::ResourceLink::new(LOGO, "logo")),
                ]))
            },
        ))
        .tool(rich_tool_fn(
            def("progress", json!({"type": "object"}), json!({})),
            |_args: Value, ctx: ToolContext| async move {
                for step in [0.0, 50.0, 50.0, 25.0, 100.0] {
                    ctx.progress(step, Some(100.0), Some(&format!("step {step}")))
                        .await;
                }
                Ok(ToolOutput::text("done"))
            },
        ))
        .tool(rich_tool_fn(
            def("log", json!({"type": "object"}), json!({})),
            |_args: Value, ctx: ToolContext| async move {
                ctx.log(LogLevel::Debug, "a debug line").await;
                ctx.log(LogLevel::Info, "an info line").await;
                ctx.log(LogLevel::Error, json!({"code": 7})).await;
                Ok(ToolOutput::text("logged"))
            },
        ))
        .tool(rich_tool_fn(
            def("touch", json!({"type": "object"}), json!({})),
            move |_args: Value, _ctx: ToolContext| {
                let status = touched.clone();
                async move {
                    status.set("touched");
                    Ok(ToolOutput::text("touched"))
                }
            },
        ))
        .tool(rich_tool_fn(
            def("ask", json!({"type": "object"}), json!({})),
            move |_args: Value, ctx: ToolContext| {
                let probe = asks.clone();
                async move {
                    let form = Elicitation::new("Who are you?")
                        .text("name", "Your name", true)
                        .boolean("sure", "Sure?", false);
                    let answer = match ctx.elicit(form).await {
                        Ok(r) => format!("{:?} {}", r.action, json!(r.content)),
                        Err(e) => format!("error: {e}"),
                    };
                    probe.record(answer.clone());
                    Ok(ToolOutput::text(answer))
                }
            },
        ))
        .tool(rich_tool_fn(
            def("sample", json!({"type": "object"}), json!({})),
            move |_args: Value, ctx: ToolContext| {
                let probe = samples.clone();
                async move {
                    let answer = match ctx.sample(Sampling::new("Say hi", 50)).await {
                        Ok(r) => format!("{} from {}", r.text(), r.model),
                        Err(e) => format!("error: {e}"),
                    };
                    probe.record(answer.clone());
                    Ok(ToolOutput::text(answer))
                }
            },
        ))
        .tool(rich_tool_fn(
            def("roots", json!({"type": "object"}), json!({})),
            move |_args: Value, ctx: ToolContext| {
                let probe = roots.clone();
                async move {
                    let answer = match ctx.roots().await {
                        Ok(roots) => roots
                            .iter()
                            .map(|r| r.uri.clone())
                            .collect::<Vec<_>>()
                            .join(","),
                        Err(ClientError::CapabilityMissing(what)) => format!("missing {what}"),
                        Err(e) => format!("error: {e}"),
                    };
                    probe.record(answer.clone());
                    Ok(ToolOutput::text(answer))
                }
            },
        ))
        .resource(TextResource::new(
            NOTES,
            "notes",
            "Some notes.",
            "text/plain",
            "hello notes",
        ))
        .resource(BinaryResource::new(
            LOGO,
            "logo",
            "The logo.",
            "image/png",
            LOGO_BYTES,
        ))
        .resource(status.clone())
        .resource_template(
            resource_template(
                "test://items/{id}",
                "item",
                "An item by id.",
                "application/json",
                |_uri, vars| async move {
                    Ok(ResourceBody::Text(
                        json!({"id": vars.get("id")}).to_string(),
                    ))
                },
            )
            .expect("a valid template")
            .complete("id", vec!["alpha", "alpine", "beta"]),
        )
        .prompt(PromptDefinition {
            mcp_id: "mcp://mc-test/prompts/planner".into(),
            name: "planner".into(),
            description: Some("Plans.".into()),
            role: Role::System,
            content: "Plan first.".into(),
        })
        .prompt(prompt_fn(
            PromptDefinition {
                mcp_id: "mcp://mc-test/prompts/greet".into(),
                name: "greet".into(),
                description: Some("Greets someone.".into()),
                role: Role::User,
                content: "Greet someone.".into(),
            },
            [
                PromptArgument::required("who", "Whom to greet."),
                PromptArgument::optional("mood", "How."),
            ],
            |args| async move {
                Ok(vec![
                    PromptMessage::user(format!("Greet {}", args["who"])),
                    PromptMessage::new(
                        MessageRole::Assistant,
                        Content::text(
                            args.get("mood")
                                .cloned()
                                .unwrap_or_else(|| "plainly".into()),
                        ),
                    ),
                ])
            },
        ))
        .complete_prompt_argument("greet", "who", vec!["alice", "albert", "bob"])
}

pub fn server() -> (Server, Probe, SharedResource) {
    let probe = Probe::default();
    let status = status();
    let server = builder(&probe, &status)
        .build()
        .expect("the test server builds");
    (server, probe, status)
}
