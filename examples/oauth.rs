//! Your own server behind OAuth: a tool that greets whoever the access
//! token says is calling, and a tool that only tokens with `notes:write`
//! may call. Tokens come from your authorization server (Auth0, Keycloak,
//! Entra ID, Okta, oidc-provider, …) as JWTs for this server's URL.
//!
//! ```sh
//! cargo run --features oauth --example oauth -- \
//!     --issuer https://auth.example.com/ --public-url https://mcp.example.com/mcp \
//!     [--listen 127.0.0.1:8080]
//! ```
//! (`https` issuers need `--features oauth-tls`.) Hosts that connect find
//! the authorization server through
//! `/.well-known/oauth-protected-resource/mcp`, get a token with scope
//! `mcp` for `--public-url`, and send it on every request.

use clawmcp::oauth::OAuth;
use clawmcp::transport::HttpConfig;
use clawmcp::{Server, ToolContext, ToolError, typed_tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// No arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Nothing {}

/// A greeting.
#[derive(Serialize, JsonSchema)]
struct Greeting {
    /// Hello to the token's subject.
    greeting: String,
    /// The scopes the token was granted.
    scopes: Vec<String>,
}

async fn whoami(_: Nothing, ctx: ToolContext) -> Result<Greeting, ToolError> {
    let principal = ctx
        .principal()
        .ok_or_else(|| ToolError::new("no verified caller (this example serves OAuth only)"))?;
    Ok(Greeting {
        greeting: format!("Hello, {}!", principal.subject().unwrap_or("stranger")),
        scopes: principal.scopes().to_vec(),
    })
}

/// A note to keep.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Note {
    /// Its text.
    text: String,
}

/// What was kept.
#[derive(Serialize, JsonSchema)]
struct Kept {
    /// How many characters.
    characters: usize,
}

async fn keep(note: Note) -> Result<Kept, ToolError> {
    Ok(Kept {
        characters: note.text.chars().count(),
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _log = clawmcp::logging::init();
    let mut issuer = None;
    let mut public_url = None;
    let mut listen = "127.0.0.1:8080".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--issuer" => issuer = args.next(),
            "--public-url" => public_url = args.next(),
            "--listen" => listen = args.next().ok_or("--listen needs ADDR:PORT")?,
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    let issuer = issuer.ok_or("--issuer URL is required")?;
    let public_url = public_url.ok_or("--public-url URL is required")?;

    let server = Server::builder()
        .name("oauth-example")
        .tool(typed_tool(
            "mcp://oauth-example/tools/whoami",
            "whoami",
            "Greets the caller named by the access token.",
            whoami,
        ))
        .tool(typed_tool(
            "mcp://oauth-example/tools/keep_note",
            "keep_note",
            "Keeps a note (needs the notes:write scope).",
            keep,
        ))
        .require_scopes("keep_note", ["notes:write"])
        .build()?;

    let oauth = OAuth::jwt(&public_url, issuer)
        .required_scopes(["mcp"])
        .resource_name("OAuth example");
    let mut config = HttpConfig::default().oauth(oauth);
    // The public name clients use (behind a proxy, the proxy's).
    if let Some(host) = public_url
        .split_once("://")
        .and_then(|(_, rest)| rest.split('/').next())
    {
        config = config.allow_host(host);
    }
    let addr = listen.parse()?;
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    server.serve_http(addr, config, stop).await?;
    Ok(())
}
