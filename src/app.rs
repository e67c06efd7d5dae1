//! MCP Apps (the Model Context Protocol's `io.modelcontextprotocol/ui`
//! extension): a tool links an HTML page, and a host that supports apps
//! (Claude, ChatGPT, VS Code, Goose and others) renders the page in a
//! sandboxed iframe beside the tool's result. The page talks to the host
//! over `postMessage` (JSON-RPC: `ui/initialize`, then `tools/call` and
//! the like, which the host forwards to this server).
//!
//! - An [`AppResource`] is the page: a `ui://` resource of HTML served as
//!   `text/html;profile=mcp-app`, with what the host should allow it
//!   ([`Csp`], [`Permissions`]), checked when the server is built.
//! - A tool links it with [`ToolMetadata::app`](crate::definition::ToolMetadata::app)
//!   and says who may call it ([`AppVisibility`]). The tool's result is the
//!   same for every host: its `content` is the text fallback a host without
//!   apps (and the model) reads; `structuredContent` is what the page
//!   renders.
//! - The server declares the extension in its capabilities when it has an
//!   app, in every revision of the Model Context Protocol; a tool asks
//!   whether the requesting client renders apps with
//!   [`ToolContext::client_supports_apps`](crate::ToolContext::client_supports_apps).
//!   MCP v1.0 has no apps: its `mcp/listResources` leaves app pages out.
//!
//! ```
//! use clawmcp::app::{AppResource, Csp};
//! use clawmcp::definition::ToolMetadata;
//! use clawmcp::{Server, ToolError, typed_tool};
//!
//! #[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
//! struct Echo { message: String }
//!
//! let page = AppResource::new(
//!     "ui://example/echo.html",
//!     "echo-app",
//!     "A page that echoes what you type.",
//!     "<!DOCTYPE html><html><body><p>Echo</p></body></html>",
//! )
//! .csp(Csp::new().connect("https://api.example.com"))
//! .prefers_border(true);
//! let echo = typed_tool(
//!     "mcp://example/tools/echo:v1",
//!     "echo",
//!     "Returns the message it is given.",
//!     |args: Echo| async move { Ok::<_, ToolError>(args) },
//! )
//! .with_metadata(ToolMetadata::new().app("ui://example/echo.html"));
//! let server = Server::builder().resource(page).tool(echo).build()?;
//! # let _ = server;
//! # Ok::<(), clawmcp::error::BuildError>(())
//! ```

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{BuildError, ToolError};
use crate::resource::{Resource, ResourceInfo};

pub use crate::definition::{AppVisibility, ToolApp};

/// The extension's name, as capabilities declare it.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The media type of an app page.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The scheme every app page's URI has.
pub const SCHEME: &str = "ui://";

/// An app page: HTML a host renders in a sandboxed iframe, at a `ui://`
/// URI, served as [`MIME_TYPE`], with what the host should allow it in
/// `_meta.ui` (on its listing and on its read contents alike).
///
/// The page must be self-contained unless its [`Csp`] names the origins
/// it loads from or connects to: a host's default policy allows inline
/// script and style, and nothing from the network.
#[derive(Debug, Clone)]
pub struct AppResource {
    info: ResourceInfo,
    html: String,
    ui: AppUi,
}

/// What an app page asks of its host (`_meta.ui` of the resource).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
struct AppUi {
    #[serde(skip_serializing_if = "Csp::is_empty")]
    csp: Csp,
    #[serde(skip_serializing_if = "Permissions::is_empty")]
    permissions: Permissions,
    #[serde(skip_serializing_if = "Option::is_none")]
    domain: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prefers_border: Option<bool>,
}

impl AppResource {
    /// The page `html` at `uri` (which must start with `ui://`; checked at
    /// build), with its name and description.
    pub fn new(
        uri: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        html: impl Into<String>,
    ) -> Self {
        Self {
            info: ResourceInfo::new(uri, name, description, MIME_TYPE),
            html: html.into(),
            ui: AppUi::default(),
        }
    }

    /// The origins the page may reach ([`Csp`]); nothing beyond the page
    /// itself by default.
    pub fn csp(mut self, csp: Csp) -> Self {
        self.ui.csp = csp;
        self
    }

    /// The browser permissions the page asks for (a host may refuse them).
    pub fn permissions(mut self, permissions: Permissions) -> Self {
        self.ui.permissions = permissions;
        self
    }

    /// The origin the host should serve the page from, in the host's own
    /// format (for example `{hash}.claudemcpcontent.com`): what an API
    /// that allows the page's origin needs to know.
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.ui.domain = Some(domain.into());
        self
    }

    /// Whether the host should draw a border and background around the page
    /// (left to the host when unset).
    pub fn prefers_border(mut self, prefers: bool) -> Self {
        self.ui.prefers_border = Some(prefers);
        self
    }

    /// The page's HTML.
    pub fn html(&self) -> &str {
        &self.html
    }

    /// `_meta.ui`, as the listing and the read contents carry it.
    fn ui_meta(&self) -> Option<Map<String, Value>> {
        if self.ui == AppUi::default() {
            return None;
        }
        let ui = serde_json::to_value(&self.ui).ok()?;
        Some(Map::from_iter([("ui".to_owned(), ui)]))
    }

    /// Why the page is not one a host can render, if it is not.
    fn problem(&self) -> Option<String> {
        let uri = &self.info.mcp_id;
        if !uri.starts_with(SCHEME) || uri.len() == SCHEME.len() {
            return Some(format!("its URI must start with {SCHEME} and name a page"));
        }
        if self.html.trim().is_empty() {
            return Some("its HTML is empty".into());
        }
        let csp = &self.ui.csp;
        let lists = [
            ("connectDomains", &csp.connect_domains, false),
            ("resourceDomains", &csp.resource_domains, true),
            ("frameDomains", &csp.frame_domains, false),
            ("baseUriDomains", &csp.base_uri_domains, false),
        ];
        for (field, origins, wildcard) in lists {
            for origin in origins {
                if let Err(why) = check_origin(origin, wildcard) {
                    return Some(format!("csp.{field} {origin:?}: {why}"));
                }
            }
        }
        if let Some(domain) = &self.ui.domain {
            let bad = |c: char| c.is_whitespace() || matches!(c, ';' | ',' | '\'' | '"');
            if domain.is_empty() || domain.contains(bad) {
                return Some(format!("domain {domain:?} is empty or holds a separator"));
            }
        }
        None
    }
}

#[crate::async_trait]
impl Resource for AppResource {
    fn info(&self) -> ResourceInfo {
        self.info.clone()
    }

    async fn content(&self) -> Result<String, ToolError> {
        Ok(self.html.clone())
    }

    fn meta(&self) -> Option<Map<String, Value>> {
        self.ui_meta()
    }

    fn check(&self) -> Result<(), BuildError> {
        match self.problem() {
            None => Ok(()),
            Some(problem) => Err(BuildError::InvalidApp {
                uri: self.info.mcp_id.clone(),
                problem,
            }),
        }
    }
}

/// The origins an app page may reach (`_meta.ui.csp`), each written as an
/// origin: `scheme://host[:port]`, with no path. Only `resourceDomains`
/// takes a wildcard, and only as the leftmost label
/// (`https://*.example.com`). A bare `*`, a scheme alone (`https:`), a
/// keyword (`'self'`), `data:` and `blob:` are refused when the server is
/// built: hosts drop them, and the page would fail where they do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Csp {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    connect_domains: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    resource_domains: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    frame_domains: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    base_uri_domains: Vec<String>,
}

impl Csp {
    /// Nothing beyond the page itself.
    pub fn new() -> Self {
        Self::default()
    }

    /// An origin the page may `fetch`, open a `WebSocket` to or post to
    /// (`connect-src`), e.g. `https://api.example.com` or
    /// `wss://live.example.com`.
    pub fn connect(mut self, origin: impl Into<String>) -> Self {
        self.connect_domains.push(origin.into());
        self
    }

    /// An origin the page loads scripts, styles, images, fonts and media
    /// from, e.g. `https://cdn.example.com` or `https://*.example.com`.
    pub fn resource(mut self, origin: impl Into<String>) -> Self {
        self.resource_domains.push(origin.into());
        self
    }

    /// An origin the page may embed in an iframe of its own (none by
    /// default).
    pub fn frame(mut self, origin: impl Into<String>) -> Self {
        self.frame_domains.push(origin.into());
        self
    }

    /// An origin the page's `<base href>` may name (its own by default).
    pub fn base_uri(mut self, origin: impl Into<String>) -> Self {
        self.base_uri_domains.push(origin.into());
        self
    }

    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Browser permissions an app page asks its host for (`_meta.ui.permissions`);
/// a host may refuse any of them, so a page must work without them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Permissions {
    /// The camera.
    pub camera: bool,
    /// The microphone.
    pub microphone: bool,
    /// The location.
    pub geolocation: bool,
    /// Writing to the clipboard.
    pub clipboard_write: bool,
}

impl Permissions {
    /// None.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for the camera.
    pub fn camera(mut self) -> Self {
        self.camera = true;
        self
    }

    /// Asks for the microphone.
    pub fn microphone(mut self) -> Self {
        self.microphone = true;
        self
    }

    /// Asks for the location.
    pub fn geolocation(mut self) -> Self {
        self.geolocation = true;
        self
    }

    /// Asks to write to the clipboard.
    pub fn clipboard_write(mut self) -> Self {
        self.clipboard_write = true;
        self
    }

    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Each permission asked for is an empty object, as the extension writes
/// them: `{"camera": {}, "clipboardWrite": {}}`.
impl Serialize for Permissions {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        for (on, name) in [
            (self.camera, "camera"),
            (self.microphone, "microphone"),
            (self.geolocation, "geolocation"),
            (self.clipboard_write, "clipboardWrite"),
        ] {
            if on {
                map.serialize_entry(name, &Map::new())?;
            }
        }
        map.end()
    }
}

/// Whether `origin` is written as an origin a host's content security
/// policy takes: `https`, `wss`, `http` or `ws`, a host, an optional port,
/// nothing after; a wildcard only where `wildcard` allows it, as the
/// leftmost label of a name with two labels after it.
fn check_origin(origin: &str, wildcard: bool) -> Result<(), &'static str> {
    let Some((scheme, rest)) = origin.split_once("://") else {
        return Err("not an origin (scheme://host[:port])");
    };
    if !matches!(scheme, "https" | "wss" | "http" | "ws") {
        return Err("the scheme must be https, wss, http or ws");
    }
    // An IPv6 address is bracketed: `http://[::1]:3000`.
    let (host, port) = match rest.strip_prefix('[') {
        Some(inner) => {
            let (address, after) = inner.split_once(']').ok_or("an unclosed [")?;
            if address.is_empty() || !address.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
                return Err("not an IPv6 address in the brackets");
            }
            match after {
                "" => return Ok(()),
                after => (
                    "ipv6",
                    Some(after.strip_prefix(':').ok_or("junk after the address")?),
                ),
            }
        }
        None => match rest.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (rest, None),
        },
    };
    if let Some(port) = port
        && (!port.bytes().all(|b| b.is_ascii_digit()) || port.parse::<u16>().is_err())
    {
        return Err("the port must be a number from 0 to 65535 (no wildcard)");
    }
    if host.is_empty() {
        return Err("the host is missing");
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '*');
    if !host.chars().all(allowed) {
        return Err(
            "the host may hold letters, digits, dots and dashes only (no path, query, user or space)",
        );
    }
    if let Some(star) = host.find('*') {
        if !wildcard {
            return Err("a wildcard is allowed in resourceDomains only");
        }
        let rest = host.strip_prefix("*.").filter(|_| star == 0);
        let labels = rest.map_or(0, |r| r.split('.').filter(|l| !l.is_empty()).count());
        if rest.is_none_or(|r| r.contains('*')) || labels < 2 {
            return Err(
                "a wildcard must be the leftmost label of a name with two more (https://*.example.com)",
            );
        }
    }
    if host.split('.').any(str::is_empty) {
        return Err("the host has an empty label");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_scheme_host_and_port_and_a_wildcard_only_leads_a_resource_domain() {
        for ok in [
            "https://api.example.com",
            "wss://live.example.com:8443",
            "http://127.0.0.1:8080",
            "http://[::1]:3000",
            "http://[::1]",
            "http://localhost",
        ] {
            assert_eq!(check_origin(ok, false), Ok(()), "{ok}");
        }
        assert_eq!(check_origin("https://*.example.com", true), Ok(()));
        for (bad, wildcard) in [
            ("*", true),
            ("https:", true),
            ("'self'", true),
            ("data:", true),
            ("blob:", true),
            ("https://*.example.com", false),
            ("https://*.com", true),
            ("https://a.*.example.com", true),
            ("https://example.com/path", false),
            ("https://example.com:*", false),
            ("https://example.com:99999", false),
            ("https://example.com:", false),
            ("https://user@example.com", false),
            ("https://example.com; script-src *", false),
            ("ftp://example.com", false),
            ("https://", false),
            ("https://example..com", false),
            ("http://[::1", false),
            ("http://[::1]x", false),
        ] {
            assert!(check_origin(bad, wildcard).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_page_with_nothing_asked_carries_no_meta_and_what_it_asks_is_written_as_the_extension_spells_it()
     {
        let page = AppResource::new("ui://t/p.html", "p", "d", "<p>x</p>");
        assert_eq!(page.ui_meta(), None);
        let page = page
            .csp(
                Csp::new()
                    .connect("https://api.example.com")
                    .resource("https://*.cdn.example.com"),
            )
            .permissions(Permissions::new().camera().clipboard_write())
            .domain("abc.example-host.com")
            .prefers_border(false);
        let meta = Value::Object(page.ui_meta().expect("a ui meta"));
        assert_eq!(
            meta,
            serde_json::json!({"ui": {
                "csp": {"connectDomains": ["https://api.example.com"],
                        "resourceDomains": ["https://*.cdn.example.com"]},
                "permissions": {"camera": {}, "clipboardWrite": {}},
                "domain": "abc.example-host.com",
                "prefersBorder": false,
            }})
        );
        assert_eq!(page.problem(), None);
    }

    #[test]
    fn a_page_outside_ui_or_with_a_bad_origin_is_refused() {
        let page = |uri: &str| AppResource::new(uri, "p", "d", "<p>x</p>");
        assert!(page("https://t/p.html").problem().is_some());
        assert!(page("ui://").problem().is_some());
        assert!(
            AppResource::new("ui://t/p", "p", "d", " ")
                .problem()
                .is_some()
        );
        let wild = page("ui://t/p").csp(Csp::new().connect("https://*.example.com"));
        assert!(wild.problem().is_some_and(|p| p.contains("connectDomains")));
        let spaced = page("ui://t/p").domain("a b");
        assert!(spaced.problem().is_some());
    }
}
