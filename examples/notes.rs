//! A small notes server: two typed tools over one shared store, and a
//! resource that changes when a note is added — served on stdio, or over
//! HTTP inside an axum app beside its own `/health`. Both dialects (MCP
//! v1.0 and the Model Context Protocol) on either transport.
//!
//! ```sh
//! cargo run --example notes                        # stdio
//! cargo run --example notes -- --http 127.0.0.1:3000
//! curl -s http://127.0.0.1:3000/health
//! ```
//!
//! The store is registered once with `ServerBuilder::state`; each tool takes
//! it with the `State` extractor, as an axum handler would.

use std::sync::{Arc, Mutex, PoisonError};

use clawmcp::state::State;
use clawmcp::transport::HttpConfig;
use clawmcp::typed_tool;
use clawmcp::{Server, SharedResource, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The `index` resource's id.
pub const INDEX: &str = "mcp://notes/resources/index";

/// A note.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Note {
    /// The note's number, from 1.
    pub id: u32,
    /// Its title.
    pub title: String,
    /// Its text.
    pub text: String,
}

/// The store the tools share: cheap to clone, clones share the notes.
#[derive(Clone)]
pub struct Notes {
    notes: Arc<Mutex<Vec<Note>>>,
    /// The titles, as a resource that announces each change.
    index: SharedResource,
}

impl Notes {
    /// An empty store and its index resource.
    pub fn new() -> Self {
        let index = SharedResource::json(INDEX, "index", "The notes' titles.", &[] as &[&str])
            .expect("an empty list is JSON");
        Self {
            notes: Arc::default(),
            index,
        }
    }

    /// Adds a note and updates the index; returns the new note's id.
    fn add(&self, title: String, text: String) -> Result<u32, ToolError> {
        let mut notes = self.notes.lock().unwrap_or_else(PoisonError::into_inner);
        let id = u32::try_from(notes.len() + 1).map_err(|_| ToolError::new("too many notes"))?;
        notes.push(Note { id, title, text });
        let titles: Vec<&str> = notes.iter().map(|n| n.title.as_str()).collect();
        self.index
            .set_json(&titles)
            .map_err(|e| ToolError::new(e.to_string()))?;
        Ok(id)
    }

    /// The notes whose title or text contains `query` (any case).
    fn search(&self, query: &str) -> Vec<Note> {
        let query = query.to_lowercase();
        let notes = self.notes.lock().unwrap_or_else(PoisonError::into_inner);
        notes
            .iter()
            .filter(|n| {
                n.title.to_lowercase().contains(&query) || n.text.to_lowercase().contains(&query)
            })
            .cloned()
            .collect()
    }
}

impl Default for Notes {
    fn default() -> Self {
        Self::new()
    }
}

/// Arguments of `add_note`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddNote {
    /// A short title.
    #[schemars(length(min = 1, max = 200))]
    pub title: String,
    /// The note's text.
    pub text: String,
}

/// The result of `add_note`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Added {
    /// The new note's id.
    pub id: u32,
}

/// Arguments of `search_notes`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Search {
    /// Text to look for in titles and texts (any case).
    pub query: String,
}

/// The result of `search_notes`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Found {
    /// The matching notes, oldest first.
    pub notes: Vec<Note>,
}

/// Adds a note.
pub async fn add_note(State(notes): State<Notes>, args: AddNote) -> Result<Added, ToolError> {
    let id = notes.add(args.title, args.text)?;
    Ok(Added { id })
}

/// Finds notes.
pub async fn search_notes(State(notes): State<Notes>, args: Search) -> Result<Found, ToolError> {
    Ok(Found {
        notes: notes.search(&args.query),
    })
}

/// The notes server over `notes`.
pub fn server(notes: Notes) -> Result<Server, clawmcp::BuildError> {
    Server::builder()
        .name("notes")
        .resource(notes.index.clone())
        .state(notes)
        .tool(typed_tool(
            "mcp://notes/tools/add_note:v1",
            "add_note",
            "Adds a note.",
            add_note,
        ))
        .tool(typed_tool(
            "mcp://notes/tools/search_notes:v1",
            "search_notes",
            "Finds notes whose title or text contains a query.",
            search_notes,
        ))
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _log = clawmcp::logging::init();
    let server = server(Notes::new())?;
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next()) {
        (None, _) => server.serve_stdio().await?,
        (Some("--http"), Some(addr)) => {
            let app = axum::Router::new()
                .route("/health", axum::routing::get(|| async { "ok\n" }))
                .nest_service("/mcp", server.http_service(HttpConfig::default()));
            let listener = tokio::net::TcpListener::bind(&addr).await?;
            tracing::info!(addr = %listener.local_addr()?, "serving /health and /mcp");
            axum::serve(listener, app)
                .with_graceful_shutdown(server.handle().shutdown_on(async {
                    let _ = tokio::signal::ctrl_c().await;
                }))
                .await?;
        }
        _ => {
            eprintln!("usage: notes [--http ADDR]");
            std::process::exit(2);
        }
    }
    Ok(())
}
