//! The fixtures of the official Model Context Protocol conformance suite
//! (`@modelcontextprotocol/conformance` 0.1.16 and 0.2.0, server mode): the tools,
//! resources, resource template, prompts and completion its scenarios call,
//! with the names, texts and payloads of the suite's reference
//! "everything server".
//!
//! ```sh
//! cargo run --example conformance                              # HTTP on 127.0.0.1:8080
//! cargo run --example conformance -- --http 127.0.0.1:3001     # HTTP on another address
//! cargo run --example conformance -- --stdio                   # stdio instead of HTTP
//! # then, with the server running (the suite needs Node 22 or later):
//! npx @modelcontextprotocol/conformance@0.1.16 server --url http://127.0.0.1:3001/mcp
//! npx @modelcontextprotocol/conformance@0.1.16 server --url http://127.0.0.1:3001/mcp --suite pending
//! ```
//! The endpoint is `POST /mcp` (Streamable HTTP). The server stops on
//! SIGINT or SIGTERM (or, on stdio, at the end of stdin); bad arguments
//! exit 2, a failure to start or serve exits 1. Logs go to stderr through
//! `clawmcp::logging` (`RUST_LOG=debug` for more); stdout carries frames
//! only on stdio.
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use clawmcp::client::{ElicitResult, Elicitation, LogLevel, Sampling};
use clawmcp::content::{ResourceBody, ResourceContents};
use clawmcp::definition::{PromptDefinition, Role, ToolDefinition};
use clawmcp::prompt::{
    MessageRole, Prompt, PromptArgument, PromptArguments, PromptMessage, prompt_fn,
};
use clawmcp::resource::BinaryResource;
use clawmcp::task::TaskSupport;
use clawmcp::template::resource_template;
use clawmcp::tool::rich_tool_fn;
use clawmcp::transport::HttpConfig;
use clawmcp::{Content, Server, TextResource, ToolContext, ToolError, ToolOutput};
use serde_json::{Value, json};

/// The prefix of every tool's and prompt's mcpId (MCP v1.0 needs one; the
/// Model Context Protocol calls them by name).
const BASE: &str = "mcp://conformance";

/// A 1×1 red PNG pixel (the suite's `TEST_IMAGE_BASE64`).
const TEST_IMAGE_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV file (the suite's `TEST_AUDIO_BASE64`).
const TEST_AUDIO_BASE64: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

fn main() {
    let log = clawmcp::logging::init();
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(e) => exit(log, 2, &e),
    };
    // HTTP serves many connections on as many threads as there are cores;
    // one stdio session needs one thread.
    let runtime = match options.mode {
        Mode::Http(_) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
        Mode::Stdio => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
    };
    let result = runtime.map_err(Into::into).and_then(|rt| {
        let result = rt.block_on(run(options));
        // Do not wait for a blocking read of a terminal's stdin.
        rt.shutdown_background();
        result
    });
    match result {
        Ok(()) => drop(log),
        Err(e) => exit(log, 1, &e.to_string()),
    }
}

/// Logs why the server stops (never `eprintln!`, which panics when stderr
/// is gone), flushes the log and exits with `code`.
fn exit(log: clawmcp::logging::LogGuard, code: i32, why: &str) -> ! {
    tracing::error!("conformance: {why}");
    drop(log);
    std::process::exit(code);
}

async fn run(options: Options) -> Result<(), Box<dyn std::error::Error>> {
    let server = build()?;
    match options.mode {
        Mode::Http(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            tracing::info!(addr = %listener.local_addr()?, "serving MCP over HTTP on POST /mcp");
            server
                .serve_http_on(listener, HttpConfig::default(), shutdown_signal())
                .await?;
        }
        Mode::Stdio => server.serve_stdio_until(shutdown_signal()).await?,
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

/// Where the server serves.
enum Mode {
    Http(SocketAddr),
    Stdio,
}

/// Command-line options.
struct Options {
    mode: Mode,
}

impl Options {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut mode = Mode::Http(SocketAddr::from(([127, 0, 0, 1], 8080)));
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--http" => {
                    let addr = args
                        .next()
                        .ok_or("--http needs an address, e.g. 127.0.0.1:8080")?;
                    let addr = addr.parse().map_err(|e| format!("--http {addr:?}: {e}"))?;
                    mode = Mode::Http(addr);
                }
                "--stdio" => mode = Mode::Stdio,
                "--help" | "-h" => {
                    use std::io::Write;
                    let _ = writeln!(
                        std::io::stderr(),
                        "usage: conformance [--http ADDR:PORT (default 127.0.0.1:8080) | --stdio]"
                    );
                    std::process::exit(0);
                }
                other => return Err(format!("unknown argument {other:?} (try --help)")),
            }
        }
        Ok(Options { mode })
    }
}

/// Decodes one of the suite's base64 fixtures (constants known to be valid).
fn decode(base64: &str) -> Vec<u8> {
    STANDARD
        .decode(base64)
        .expect("the fixtures are valid base64")
}

/// The definition of a tool whose output is content blocks only.
fn tool(name: &str, description: &str, input_schema: Value) -> ToolDefinition {
    ToolDefinition {
        mcp_id: format!("{BASE}/tools/{name}"),
        name: name.into(),
        description: description.into(),
        input_schema,
        // Not an object schema: the Model Context Protocol lists none.
        output_schema: json!({}),
    }
}

/// The input schema of a tool without arguments.
fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}})
}

/// The definition of a prompt (its content is what MCP v1.0 lists).
fn prompt(name: &str, description: &str, content: &str) -> PromptDefinition {
    PromptDefinition {
        mcp_id: format!("{BASE}/prompts/{name}"),
        name: name.into(),
        description: Some(description.into()),
        role: Role::User,
        content: content.into(),
    }
}

/// How an elicitation ended, as the reference server words it.
/// A prompt that asks the user for its context first (an elicitation:
/// in a 2026-07-28 request, a round trip).
struct AsksForContext;

#[clawmcp::async_trait]
impl Prompt for AsksForContext {
    fn definition(&self) -> PromptDefinition {
        prompt(
            "test_input_required_result_prompt",
            "A prompt that asks the user what context to use",
            "Use the context the user gives.",
        )
    }

    async fn messages_with(
        &self,
        _arguments: &PromptArguments,
        ctx: &ToolContext,
    ) -> Result<Vec<PromptMessage>, ToolError> {
        let form = Elicitation::new("What context should the prompt use?").text(
            "context",
            "The context",
            true,
        );
        let answer = ctx.keyed("user_context").elicit(form).await?;
        let context = field(&answer, "context");
        Ok(vec![PromptMessage::user(format!(
            "Answer with this context in mind: {context}"
        ))])
    }
}

/// Asks the user for a name under `key`: the name, or `"?"` when the
/// user declined.
async fn ask_name(ctx: &ToolContext, key: &str, question: &str) -> Result<String, ToolError> {
    let form = Elicitation::new(question).text("name", "Your name", true);
    let answer = ctx.keyed(key).elicit(form).await?;
    Ok(field(&answer, "name"))
}

/// A text field of an elicitation's answer (`"?"` when missing).
fn field(answer: &ElicitResult, name: &str) -> String {
    answer
        .content
        .as_ref()
        .and_then(|c| c.get(name))
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_owned()
}

fn describe(answer: &ElicitResult) -> String {
    let action = serde_json::to_value(answer.action)
        .ok()
        .and_then(|a| a.as_str().map(str::to_owned))
        .unwrap_or_default();
    let content = answer.content.as_ref().map_or_else(
        || "null".to_owned(),
        |c| Value::Object(c.clone()).to_string(),
    );
    format!("action={action}, content={content}")
}

/// Every fixture of the suite.
/// The tool `test_trigger_tool_change` adds and removes.
const DYNAMIC_TOOL: &str = "test_dynamic_tool";
/// The prompt `test_trigger_prompt_change` adds and removes.
const DYNAMIC_PROMPT: &str = "test_dynamic_prompt";

fn dynamic_tool() -> impl clawmcp::Tool {
    rich_tool_fn(
        tool(DYNAMIC_TOOL, "A tool added at run time", no_arguments()),
        |_args: Value, _ctx: ToolContext| async move { Ok(ToolOutput::text("dynamic")) },
    )
}

fn dynamic_prompt() -> impl clawmcp::prompt::Prompt {
    prompt_fn(
        prompt(DYNAMIC_PROMPT, "A prompt added at run time", "Dynamic."),
        [],
        |_args| async move { Ok(vec![PromptMessage::user("Dynamic.")]) },
    )
}

fn build() -> Result<Server, clawmcp::BuildError> {
    let template = resource_template(
        "test://template/{id}/data",
        "template",
        "A resource template with parameter substitution",
        "application/json",
        |_uri, vars| async move {
            let id = vars.get("id").unwrap_or_default();
            // The reference's JSON.stringify order: id, templateTest, data.
            let text = format!(
                r#"{{"id":{},"templateTest":true,"data":{}}}"#,
                Value::from(id),
                Value::from(format!("Data for ID: {id}")),
            );
            Ok(ResourceBody::Text(text))
        },
    )?;

    let builder = Server::builder()
        .name("clawmcp-conformance")
        .version(env!("CARGO_PKG_VERSION"))
        // Tools, in the reference's order.
        .tool(rich_tool_fn(
            tool(
                "test_simple_text",
                "Tests simple text content response",
                no_arguments(),
            ),
            |_args: Value, _ctx: ToolContext| async move {
                Ok(ToolOutput::text(
                    "This is a simple text response for testing.",
                ))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_image_content",
                "Tests image content response",
                no_arguments(),
            ),
            |_args: Value, _ctx: ToolContext| async move {
                Ok(ToolOutput::content([Content::image(
                    decode(TEST_IMAGE_BASE64),
                    "image/png",
                )]))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_audio_content",
                "Tests audio content response",
                no_arguments(),
            ),
            |_args: Value, _ctx: ToolContext| async move {
                Ok(ToolOutput::content([Content::audio(
                    decode(TEST_AUDIO_BASE64),
                    "audio/wav",
                )]))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_embedded_resource",
                "Tests embedded resource content response",
                no_arguments(),
            ),
            |_args: Value, _ctx: ToolContext| async move {
                Ok(ToolOutput::content([Content::resource(
                    ResourceContents::text(
                        "test://embedded-resource",
                        "text/plain",
                        "This is an embedded resource content.",
                    ),
                )]))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_multiple_content_types",
                "Tests response with multiple content types (text, image, resource)",
                no_arguments(),
            ),
            |_args: Value, _ctx: ToolContext| async move {
                Ok(ToolOutput::content([
                    Content::text("Multiple content types test:"),
                    Content::image(decode(TEST_IMAGE_BASE64), "image/png"),
                    Content::resource(ResourceContents::text(
                        "test://mixed-content-resource",
                        "application/json",
                        r#"{"test":"data","value":123}"#,
                    )),
                ]))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_tool_with_logging",
                "Tests tool that emits log messages during execution",
                no_arguments(),
            ),
            |_args: Value, ctx: ToolContext| async move {
                ctx.log(LogLevel::Info, "Tool execution started").await;
                tokio::time::sleep(Duration::from_millis(50)).await;
                ctx.log(LogLevel::Info, "Tool processing data").await;
                tokio::time::sleep(Duration::from_millis(50)).await;
                ctx.log(LogLevel::Info, "Tool execution completed").await;
                Ok(ToolOutput::text("Tool with logging executed successfully"))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_tool_with_progress",
                "Tests tool that reports progress notifications",
                no_arguments(),
            ),
            |_args: Value, ctx: ToolContext| async move {
                // Sent only when the request carries _meta.progressToken
                // (the crate echoes the token as received).
                for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    let message = format!("Completed step {step} of 100");
                    ctx.progress(step, Some(100.0), Some(&message)).await;
                }
                Ok(ToolOutput::text("Tool with progress executed successfully"))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_error_handling",
                "Tests error response handling",
                no_arguments(),
            ),
            |_args: Value, _ctx: ToolContext| async move {
                // A tool error is a result with isError: true.
                Err::<ToolOutput, _>(ToolError::new(
                    "This tool intentionally returns an error for testing",
                ))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_reconnection",
                "Tests SSE stream disconnection and client reconnection (SEP-1699). Server will \
                 close the stream mid-call and send the result after client reconnects.",
                no_arguments(),
            ),
            |_args: Value, _ctx: ToolContext| async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(ToolOutput::text(
                    "Reconnection test completed successfully. If you received this, the client \
                     properly reconnected after stream closure.",
                ))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_sampling",
                "Tests server-initiated sampling (LLM completion request)",
                json!({
                    "type": "object",
                    "properties": {
                        "prompt": {"type": "string", "description": "The prompt to send to the LLM"}
                    },
                    "required": ["prompt"]
                }),
            ),
            |args: Value, ctx: ToolContext| async move {
                let prompt = args["prompt"].as_str().unwrap_or_default().to_owned();
                let answer = ctx.sample(Sampling::new(prompt, 100)).await?;
                Ok(ToolOutput::text(format!("LLM response: {}", answer.text())))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_elicitation",
                "Tests server-initiated elicitation (user input request)",
                json!({
                    "type": "object",
                    "properties": {
                        "message": {"type": "string", "description": "The message to show the user"}
                    },
                    "required": ["message"]
                }),
            ),
            |args: Value, ctx: ToolContext| async move {
                let message = args["message"].as_str().unwrap_or_default().to_owned();
                let form = Elicitation::new(message)
                    .text("username", "User's response", true)
                    .text("email", "User's email address", true);
                let answer = ctx.elicit(form).await?;
                Ok(ToolOutput::text(format!(
                    "User response: {}",
                    describe(&answer)
                )))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_elicitation_sep1034_defaults",
                "Tests elicitation with default values per SEP-1034",
                no_arguments(),
            ),
            |_args: Value, ctx: ToolContext| async move {
                let form = Elicitation::new(
                    "Please review and update the form fields with defaults",
                )
                .field(
                    "name",
                    json!({"type": "string", "description": "User name", "default": "John Doe"}),
                    false,
                )
                .field(
                    "age",
                    json!({"type": "integer", "description": "User age", "default": 30}),
                    false,
                )
                .field(
                    "score",
                    json!({"type": "number", "description": "User score", "default": 95.5}),
                    false,
                )
                .field(
                    "status",
                    json!({"type": "string", "description": "User status",
                           "enum": ["active", "inactive", "pending"], "default": "active"}),
                    false,
                )
                .field(
                    "verified",
                    json!({"type": "boolean", "description": "Verification status", "default": true}),
                    false,
                );
                let answer = ctx.elicit(form).await?;
                Ok(ToolOutput::text(format!(
                    "Elicitation completed: {}",
                    describe(&answer)
                )))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_elicitation_sep1330_enums",
                "Tests elicitation with enum schema improvements per SEP-1330",
                no_arguments(),
            ),
            |_args: Value, ctx: ToolContext| async move {
                let form = Elicitation::new("Please select options from the enum fields")
                    .field(
                        "untitledSingle",
                        json!({"type": "string", "description": "Select one option",
                               "enum": ["option1", "option2", "option3"]}),
                        false,
                    )
                    .field(
                        // No `enum` here: a client reads a schema with one
                        // as the legacy form and drops `oneOf`.
                        "titledSingle",
                        json!({"type": "string", "description": "Select one option with titles",
                               "oneOf": [
                                   {"const": "value1", "title": "First Option"},
                                   {"const": "value2", "title": "Second Option"},
                                   {"const": "value3", "title": "Third Option"}
                               ]}),
                        false,
                    )
                    .field(
                        "legacyEnum",
                        json!({"type": "string", "description": "Select one option (legacy)",
                               "enum": ["opt1", "opt2", "opt3"],
                               "enumNames": ["Option One", "Option Two", "Option Three"]}),
                        false,
                    )
                    .field(
                        "untitledMulti",
                        json!({"type": "array", "description": "Select multiple options",
                               "minItems": 1, "maxItems": 3,
                               "items": {"type": "string", "enum": ["option1", "option2", "option3"]}}),
                        false,
                    )
                    .field(
                        "titledMulti",
                        json!({"type": "array", "description": "Select multiple options with titles",
                               "minItems": 1, "maxItems": 3,
                               "items": {"anyOf": [
                                   {"const": "value1", "title": "First Choice"},
                                   {"const": "value2", "title": "Second Choice"},
                                   {"const": "value3", "title": "Third Choice"}
                               ]}}),
                        false,
                    );
                let answer = ctx.elicit(form).await?;
                Ok(ToolOutput::text(format!(
                    "Elicitation completed: {}",
                    describe(&answer)
                )))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "json_schema_2020_12_tool",
                "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
                json!({
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "type": "object",
                    "$defs": {
                        "address": {
                            "$anchor": "addressDef",
                            "type": "object",
                            "properties": {
                                "street": {"type": "string"},
                                "city": {"type": "string"}
                            }
                        }
                    },
                    "properties": {
                        "name": {"type": "string"},
                        "address": {"$ref": "#/$defs/address"},
                        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                        "phone": {"type": "string"},
                        "email": {"type": "string"}
                    },
                    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                    "if": {
                        "properties": {"contactMethod": {"const": "phone"}},
                        "required": ["contactMethod"]
                    },
                    "then": {"required": ["phone"]},
                    "else": {"required": ["email"]},
                    "additionalProperties": false
                }),
            ),
            |args: Value, _ctx: ToolContext| async move {
                Ok(ToolOutput::text(format!(
                    "JSON Schema 2020-12 tool called with: {args}"
                )))
            },
        ))
        // The 2026-07-28 revision's fixtures (the 0.2.0 suite).
        .tool(rich_tool_fn(
            tool(
                "test_missing_capability",
                "Asks the client's model for a completion: a request that does not declare \
                 sampling gets -32021",
                no_arguments(),
            ),
            |_args: Value, ctx: ToolContext| async move {
                let answer = ctx.sample(Sampling::new("Say hello", 20)).await?;
                Ok(ToolOutput::text(answer.text()))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_trigger_tool_change",
                "Adds the tool test_dynamic_tool, or removes it if it is there: the tool \
                 list changes",
                no_arguments(),
            ),
            |_args: Value, ctx: ToolContext| async move {
                let handle = ctx.server();
                let removed = handle.remove_tool(DYNAMIC_TOOL).map_err(|e| ToolError::new(e.to_string()))?;
                if !removed {
                    handle
                        .add_tool(dynamic_tool())
                        .map_err(|e| ToolError::new(e.to_string()))?;
                }
                Ok(ToolOutput::text(if removed { "removed" } else { "added" }))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_trigger_prompt_change",
                "Adds the prompt test_dynamic_prompt, or removes it if it is there: the \
                 prompt list changes",
                no_arguments(),
            ),
            |_args: Value, ctx: ToolContext| async move {
                let handle = ctx.server();
                let removed = (handle.remove_prompt(DYNAMIC_PROMPT)).map_err(|e| ToolError::new(e.to_string()))?;
                if !removed {
                    handle
                        .add_prompt(dynamic_prompt())
                        .map_err(|e| ToolError::new(e.to_string()))?;
                }
                Ok(ToolOutput::text(if removed { "removed" } else { "added" }))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_streaming_elicitation",
                "Reports progress, then asks the user a question",
                no_arguments(),
            ),
            |_args: Value, ctx: ToolContext| async move {
                ctx.progress(0.0, Some(1.0), Some("asking")).await;
                let form = Elicitation::new("Continue?").boolean("ok", "Go on", true);
                let answer = ctx.elicit(form).await?;
                Ok(ToolOutput::text(describe(&answer)))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_logging_tool",
                "Emits log messages (sent only when the request asks for a log level)",
                no_arguments(),
            ),
            |_args: Value, ctx: ToolContext| async move {
                ctx.log(LogLevel::Info, "Tool execution started").await;
                ctx.log(LogLevel::Info, "Tool execution completed").await;
                Ok(ToolOutput::text("Tool with logging executed successfully"))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_input_required_result_elicitation",
                "Asks the user's name (one elicitation round trip)",
                no_arguments(),
            ),
            |_args: Value, ctx: ToolContext| async move {
                let name = ask_name(&ctx, "user_name", "What is your name?").await?;
                Ok(ToolOutput::text(format!("Hello, {name}!")))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_input_required_result_sampling",
                "Asks the client's model a question (one sampling round trip)",
                no_arguments(),
            ),
            |_args: Value, ctx: ToolContext| async move {
                let answer = ctx
                    .keyed("capital_question")
                    .sample(Sampling::new("What is the capital of France?", 100))
                    .await?;
                Ok(ToolOutput::text(format!("LLM response: {}", answer.text())))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_input_required_result_list_roots",
                "Asks the client's roots (one roots/list round trip)",
                no_arguments(),
            ),
            |_args: Value, ctx: ToolContext| async move {
                let roots = ctx.keyed("client_roots").roots().await?;
                let uris: Vec<_> = roots.iter().map(|r| r.uri.as_str()).collect();
                Ok(ToolOutput::text(format!("Roots: {}", uris.join(", "))))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_input_required_result_request_state",
                "Asks for a confirmation; the retry's sealed requestState is checked first",
                no_arguments(),
            ),
            |_args: Value, ctx: ToolContext| async move {
                let form = Elicitation::new("Please confirm").boolean("ok", "Confirm", true);
                let answer = ctx.keyed("confirm").elicit(form).await?;
                Ok(ToolOutput::text(format!("state-ok: {}", describe(&answer))))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_input_required_result_multiple_inputs",
                "Asks three questions at once: a name, a greeting and the roots",
                no_arguments(),
            ),
            |_args: Value, ctx: ToolContext| async move {
                let (name, greeting, roots) = tokio::join!(
                    ask_name(&ctx, "user_name", "What is your name?"),
                    ctx.keyed("greeting")
                        .sample(Sampling::new("Generate a greeting", 50)),
                    ctx.keyed("client_roots").roots(),
                );
                let (name, greeting, roots) = (name?, greeting?, roots?);
                Ok(ToolOutput::text(format!(
                    "{} {name}! ({} roots)",
                    greeting.text(),
                    roots.len()
                )))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_input_required_result_multi_round",
                "Asks two questions, one round after the other",
                no_arguments(),
            ),
            |_args: Value, ctx: ToolContext| async move {
                let name = ask_name(&ctx, "step1", "Step 1: What is your name?").await?;
                let form = Elicitation::new("Step 2: What is your favorite color?")
                    .text("color", "A color", true);
                let color = ctx.keyed("step2").elicit(form).await?;
                let color = field(&color, "color");
                Ok(ToolOutput::text(format!("{name} likes {color}")))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_input_required_result_tampered_state",
                "Asks a question; a retry whose requestState was changed is refused",
                no_arguments(),
            ),
            |_args: Value, ctx: ToolContext| async move {
                let form = Elicitation::new("Please confirm").boolean("ok", "Confirm", true);
                let answer = ctx.keyed("confirm").elicit(form).await?;
                Ok(ToolOutput::text(describe(&answer)))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_input_required_result_capabilities",
                "Asks only what the request's declared capabilities allow",
                no_arguments(),
            ),
            |_args: Value, ctx: ToolContext| async move {
                let declared = ctx.client_capabilities().unwrap_or_default();
                let mut said = Vec::new();
                if declared.get("elicitation").is_some() {
                    said.push(ask_name(&ctx, "user_name", "What is your name?").await?);
                }
                if declared.get("sampling").is_some() {
                    let answer = ctx
                        .keyed("greeting")
                        .sample(Sampling::new("Generate a greeting", 50))
                        .await?;
                    said.push(answer.text());
                }
                Ok(ToolOutput::text(said.join(" ")))
            },
        ))
        .tool(rich_tool_fn(
            tool(
                "test_custom_headers",
                "Arguments mirrored in Mcp-Param-* headers (x-mcp-header)",
                json!({
                    "type": "object",
                    "properties": {
                        "region": {"type": "string", "x-mcp-header": "Region"},
                        "priority": {"type": "integer", "x-mcp-header": "Priority"},
                        "query": {"type": "string"}
                    },
                    "required": ["region"]
                }),
            ),
            |args: Value, _ctx: ToolContext| async move {
                Ok(ToolOutput::text(format!("called with {args}")))
            },
        ))
        // Resources.
        .resource(TextResource::new(
            "test://static-text",
            "static-text",
            "A static text resource for testing",
            "text/plain",
            "This is the content of the static text resource.",
        ))
        .resource(BinaryResource::new(
            "test://static-binary",
            "static-binary",
            "A static binary resource (image) for testing",
            "image/png",
            decode(TEST_IMAGE_BASE64),
        ))
        .resource(TextResource::new(
            "test://watched-resource",
            "watched-resource",
            "A resource that auto-updates every 3 seconds",
            "text/plain",
            "Watched resource content",
        ))
        .resource_template(template)
        // Prompts.
        .prompt(AsksForContext)
        .prompt(prompt_fn(
            prompt(
                "test_simple_prompt",
                "A simple prompt without arguments",
                "This is a simple prompt for testing.",
            ),
            [],
            |_args| async move {
                Ok(vec![PromptMessage::user(
                    "This is a simple prompt for testing.",
                )])
            },
        ))
        .prompt(prompt_fn(
            prompt(
                "test_prompt_with_arguments",
                "A prompt with required arguments",
                "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'",
            ),
            [
                PromptArgument::required("arg1", "First test argument"),
                PromptArgument::required("arg2", "Second test argument"),
            ],
            |args| async move {
                let arg = |name: &str| args.get(name).cloned().unwrap_or_default();
                Ok(vec![PromptMessage::user(format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    arg("arg1"),
                    arg("arg2")
                ))])
            },
        ))
        .prompt(prompt_fn(
            prompt(
                "test_prompt_with_embedded_resource",
                "A prompt that includes an embedded resource",
                "Please process the embedded resource above.",
            ),
            [PromptArgument::required(
                "resourceUri",
                "URI of the resource to embed",
            )],
            |args| async move {
                let uri = args.get("resourceUri").cloned().unwrap_or_default();
                Ok(vec![
                    PromptMessage::new(
                        MessageRole::User,
                        Content::resource(ResourceContents::text(
                            uri,
                            "text/plain",
                            "Embedded resource content for testing.",
                        )),
                    ),
                    PromptMessage::user("Please process the embedded resource above."),
                ])
            },
        ))
        .prompt(prompt_fn(
            prompt(
                "test_prompt_with_image",
                "A prompt that includes image content",
                "Please analyze the image above.",
            ),
            [],
            |_args| async move {
                Ok(vec![
                    PromptMessage::new(
                        MessageRole::User,
                        Content::image(decode(TEST_IMAGE_BASE64), "image/png"),
                    ),
                    PromptMessage::user("Please analyze the image above."),
                ])
            },
        ))
        // Completion (declares the `completions` capability).
        .complete_prompt_argument(
            "test_prompt_with_arguments",
            "arg1",
            vec!["paris", "park", "party"],
        )
        ;
    task_fixtures(builder).build()
}

/// The tasks extension's fixtures (2026-07-28): `greet` answers in its
/// request; the others run as tasks when the request declares the
/// extension (`failing_job` only as one).
fn task_fixtures(builder: clawmcp::ServerBuilder) -> clawmcp::ServerBuilder {
    let string = |name: &str| json!({"type": "object", "properties": {name: {"type": "string"}}});
    let confirm =
        || Elicitation::new("Confirm?").field("confirm", json!({"type": "boolean"}), true);
    builder
        .tool(rich_tool_fn(
            tool("greet", "Greets someone, at once", string("name")),
            |args: Value, _ctx: ToolContext| async move {
                let name = args.get("name").and_then(Value::as_str).unwrap_or("World");
                Ok(ToolOutput::text(format!("Hello, {name}!")))
            },
        ))
        .tool(
            rich_tool_fn(
                tool(
                    "slow_compute",
                    "Sleeps `seconds` seconds, then answers",
                    json!({"type": "object", "properties": {
                        "seconds": {"type": "number", "minimum": 0},
                        "label": {"type": "string"}}}),
                ),
                |args: Value, ctx: ToolContext| async move {
                    let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(1.0);
                    let label = args.get("label").and_then(Value::as_str).unwrap_or("");
                    ctx.set_status_message(format!("computing {label}")).await;
                    tokio::time::sleep(Duration::from_secs_f64(seconds.clamp(0.0, 3600.0))).await;
                    Ok(ToolOutput::text(format!("Computed {label} in {seconds}s")))
                },
            )
            .with_task_support(TaskSupport::Optional),
        )
        .tool(
            rich_tool_fn(
                tool("failing_job", "Fails after a second", no_arguments()),
                |_args: Value, _ctx: ToolContext| async move {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    Err::<ToolOutput, _>(ToolError::new("the job failed, as it always does"))
                },
            )
            .with_task_support(TaskSupport::Required),
        )
        .tool(
            rich_tool_fn(
                tool(
                    "protocol_error_job",
                    "Ends in a protocol error",
                    no_arguments(),
                ),
                |_args: Value, _ctx: ToolContext| async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    if std::hint::black_box(true) {
                        panic!("protocol_error_job fails at the protocol level");
                    }
                    Ok(ToolOutput::text("unreachable"))
                },
            )
            .with_task_support(TaskSupport::Optional),
        )
        .tool(
            rich_tool_fn(
                tool(
                    "confirm_delete",
                    "Asks before deleting a file",
                    string("filename"),
                ),
                move |args: Value, ctx: ToolContext| async move {
                    let file = args
                        .get("filename")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_owned();
                    let answer = ctx.elicit(confirm()).await?;
                    Ok(ToolOutput::text(format!(
                        "Deleted {file}: {}",
                        describe(&answer)
                    )))
                },
            )
            .with_task_support(TaskSupport::Optional),
        )
        .tool(
            rich_tool_fn(
                tool(
                    "test_tool_with_task",
                    "Asks a name in its request, then greets as a task",
                    no_arguments(),
                ),
                |_args: Value, ctx: ToolContext| async move {
                    let form = Elicitation::new("Your name?").field(
                        "name",
                        json!({"type": "string"}),
                        true,
                    );
                    let answer = ctx.elicit_before_task("user_name", form).await?;
                    let name = answer
                        .content
                        .as_ref()
                        .and_then(|c| c.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_owned();
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    Ok(ToolOutput::text(format!("Hello, {name}, from a task!")))
                },
            )
            .with_task_support(TaskSupport::Required),
        )
        .tool(
            rich_tool_fn(
                tool("multi_input", "Asks two questions at once", no_arguments()),
                move |_args: Value, ctx: ToolContext| async move {
                    let name = Elicitation::new("Your name?").field(
                        "name",
                        json!({"type": "string"}),
                        true,
                    );
                    let (first, second) = tokio::join!(ctx.elicit(name), ctx.elicit(confirm()));
                    Ok(ToolOutput::text(format!(
                        "Got {} and {}",
                        describe(&first?),
                        describe(&second?)
                    )))
                },
            )
            .with_task_support(TaskSupport::Optional),
        )
}
