//! # clawmcp
//!
//! Embed a tool, resource and prompt server for AI agents in a Rust
//! program: register tools, resources and prompts on a [`Server`] builder,
//! pick a transport (stdio or HTTP), and clawmcp does the protocol —
//! framing, JSON-RPC 2.0, the handshake, JSON Schema validation, errors and
//! notifications. One server speaks two protocols, chosen per connection:
//! MCP v1.0 (the Machine-to-Clawpedia Protocol) and the Model Context
//! Protocol (revisions 2025-11-25, 2025-06-18 and 2025-03-26 in sessions,
//! and the sessionless 2026-07-28). Tool code never knows which one called
//! it.
//!
//! ```no_run
//! use clawmcp::{Server, ToolError, typed_tool};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! /// The echo tool's arguments and result.
//! #[derive(Deserialize, Serialize, JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct Echo {
//!     /// The text to send back.
//!     message: String,
//! }
//!
//! async fn echo(args: Echo) -> Result<Echo, ToolError> {
//!     Ok(args)
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let echo = typed_tool("mcp://hello/tools/echo:v1", "echo", "Returns its message.", echo);
//!     let server = Server::builder().name("hello").tool(echo).build()?;
//!     server.serve_stdio().await?; // until stdin ends
//!     Ok(())
//! }
//! ```
//!
//! The argument and result types derive their JSON Schemas (feature
//! `schemars`, on by default; add `schemars = "1"` and `serde` to your
//! `Cargo.toml`), with the doc comments as descriptions. Tools can also
//! implement the [`Tool`] trait by hand, with schemas written as JSON, or be
//! built from a [`ToolDefinition`](definition::ToolDefinition) and a closure
//! with [`tool_fn`].
//!
//! This is `examples/hello.rs`. `examples/reference.rs` serves every kind
//! of item; `docs/by-hand.md` shows how to talk to it by hand.
//!
//! ## What the crate guarantees
//! - Every request gets exactly one reply; notifications never get one.
//!   Bad input gets a JSON-RPC error (the tables are in the crate's
//!   `docs/mcp-v1.md` §2 and `docs/model-context.md` §3) and the session
//!   goes on.
//! - Arguments are validated against `inputSchema` before a tool runs, and
//!   its output against `outputSchema` before the reply is sent, with
//!   validators compiled once in [`ServerBuilder::build`].
//! - Requests run concurrently and are answered in completion order; a
//!   session has at most [`ServerBuilder::max_in_flight`] requests in flight
//!   and reads no more input past that.
//! - A tool that panics is answered `-32603`; the session and server live on.
//!   The crate's own code keeps what a client sends away from panics: it
//!   has no `unsafe`, and clippy (an error in its CI) allows no `unwrap`,
//!   `expect`, `panic!` or `unreachable!`, and no unchecked indexing or
//!   slicing of slices and strings, outside tests (the JSON string writer
//!   and one lookup at build time keep theirs, with their bounds stated).
//!   What clippy does not see, a buffer's `advance` in the framers, is
//!   checked against the buffer's length first; the readers are fuzzed.
//!
//! ## Where to go next
//! - Items: [`Tool`] and [`typed_tool`] (with [`ToolContext`] for
//!   progress, logs and questions to the client), [`Resource`],
//!   [`TextResource`] and [`template`], [`Prompt`]; changes announced
//!   through [`ServerHandle`].
//! - Transports: [`Server::serve_stdio`], [`Server::serve_http`] (feature
//!   `http`, on by default), or [`transport::McpService`] mounted in an
//!   axum or tower app; [`transport::HttpConfig`] holds the HTTP limits.
//! - Several processes as one: [`bus`] (feature `redis` for
//!   `RedisBus`).
//! - OAuth 2.1 as a resource server: `oauth` (feature `oauth`).
//! - Tests of your own server, in-process, as any principal: `testing`
//!   (feature `testing`).
//! - The rules on the wire: the crate's `docs/` (`mcp-v1.md`,
//!   `model-context.md`, `oauth.md`), and `docs/architecture.md` for how a
//!   request travels through the code.
//!
//! ## Layers
//! The crate is built in layers, lowest first. A module may name modules of
//! its own layer and of the layers before it, never one after it, and no
//! two sibling modules name each other; `tests/layers.rs` reads this list
//! and holds the code to it.
//!
//! 1. **wire** (`call_form`, `fast`, `jsonrpc`, `error`, `id_hash`,
//!    `poll`, `test_rng`): how a tool call is written, as a table the
//!    dialects give; the hot path's hand-written JSON readers, behind one
//!    boundary (feature `fast-path`); JSON-RPC 2.0 messages, ids, error
//!    objects and their encoding; a hasher for ids; a stream adapter and
//!    deadlines.
//! 2. **model** (`definition`, `content`, `client`, `state`, `principal`,
//!    `tally`, `in_flight`, `round_trip`, `trace_context`): the shapes
//!    items, results and client requests have, whoever speaks them, who
//!    sent a request, what each principal holds and what its requests in
//!    flight hold, one round of a 2026-07-28 request, and a request's trace
//!    (feature `otel`).
//! 3. **items** (`tool`, `typed`, `resource`, `app`, `prompt`,
//!    `template`, `completion`, `bus`, `handle`, `task`): what a server
//!    author implements or builds — tools and their [`ToolContext`], typed
//!    tools, resources, app pages, prompts — the [`ServerHandle`] they
//!    announce changes through, the bus that carries those to the
//!    deployment's other processes, and the store of tasks.
//! 4. **engine** (`engine`): the registry of compiled items, schema
//!    validation, and the neutral operations every dialect maps onto.
//! 5. **dialect** (`dialect`): each protocol as a table of params readers
//!    and result encoders over the engine's operations, its handshake, its
//!    error table, and the built server a session serves.
//! 6. **session** (`session`): one connection's loop — read, dispatch,
//!    run, send — its in-flight slots, its outbox and its requests to the
//!    client.
//! 7. **server** (`server`): the [`ServerBuilder`] and the built [`Server`].
//! 8. **transport** (`transport`, `oauth`): stdio framing and HTTP,
//!    adapters over the session; OAuth token verification and the
//!    protected-resource metadata the HTTP endpoint serves.
//! 9. **extras** (`testing`, `logging`, `otel`, `fuzzing`): a test
//!    client, a log set-up, trace export, and the fuzz targets' entry
//!    points.
//!
//! The core is transport-agnostic: [`Server::serve_io`] runs a session over
//! any byte stream, e.g. `tokio::io::duplex` in tests, and
//! [`Server::serve_message`] serves one message without any.

#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::unreachable,
    clippy::todo,
    clippy::unimplemented,
    clippy::indexing_slicing,
    clippy::string_slice
)]
#![cfg_attr(
    test,
    allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::unreachable,
        clippy::indexing_slicing,
        clippy::string_slice
    )
)]
// The guide and a few items' docs (the builder's limits, `otel`) link the
// HTTP transport and typed tools, which a build without their features does
// not have: such a build lets every unresolved link go. The default and
// all-features builds have them, and hold every link (`-D warnings` in CI).
#![cfg_attr(
    not(all(feature = "http", feature = "schemars")),
    allow(rustdoc::broken_intra_doc_links)
)]

pub mod app;
pub mod bus;
mod call_form;
pub mod client;
pub mod completion;
pub mod content;
pub mod definition;
mod dialect;
mod engine;
pub mod error;
mod fast;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod handle;
mod id_hash;
mod in_flight;
pub mod jsonrpc;
#[cfg(feature = "logging")]
pub mod logging;
#[cfg(feature = "oauth")]
pub mod oauth;
#[cfg(feature = "otel")]
pub mod otel;
mod poll;
mod principal;
pub mod prompt;
pub mod resource;
mod round_trip;
pub mod server;
mod session;
pub mod state;
mod tally;
pub mod task;
pub mod template;
#[cfg(test)]
mod test_rng;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tool;
#[cfg(feature = "otel")]
mod trace_context;
pub mod transport;
#[cfg(feature = "schemars")]
pub mod typed;

/// The README's examples, compiled as doc tests, as a reader pastes them:
/// with the features they name (the README's test command turns them on).
#[doc = include_str!("../README.md")]
#[cfg(all(doctest, unix, feature = "oauth", feature = "schemars"))]
pub struct ReadmeDoctests;

pub use async_trait::async_trait;
pub use content::{Content, ToolOutput};
pub use error::{BuildError, ToolError};
pub use principal::Principal;
pub use prompt::Prompt;
pub use resource::{Resource, SharedResource, TextResource};
#[cfg(feature = "schemars")]
pub use schemars;
pub use server::{Server, ServerBuilder, ServerHandle};
pub use tool::{Tool, ToolContext, tool_fn};
#[cfg(feature = "schemars")]
pub use typed::typed_tool;
