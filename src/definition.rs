//! The definitions of a server's items — tools, resources, prompts — and
//! of the server itself, as a server author writes them and both protocols
//! list them. They serialise with MCP v1.0's spelling (`mcpId`,
//! `inputSchema`, …); the Model Context Protocol maps them once, when the
//! server is built.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool as `mcp/listTools` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    /// A unique, stable URI, e.g. `mcp://acme-corp/tools/file-writer:v1`.
    pub mcp_id: String,
    /// A short human-readable name.
    pub name: String,
    /// What the tool does, its parameters and its output.
    pub description: String,
    /// The JSON Schema of `arguments` (an object schema).
    ///
    /// A property may say `"x-mcp-header": "Region"`: a 2026-07-28 client
    /// over HTTP then sends that argument as the `Mcp-Param-Region`
    /// header too, and a request whose header and argument differ is
    /// refused. The value must be an HTTP token, unique regardless of
    /// case, on a `string`, `integer` or `boolean` property reached from
    /// the root through `properties` alone (not through `$ref`: a nested
    /// struct that schemars puts under `$defs` cannot carry one). A server
    /// that speaks the Model Context Protocol refuses a tool that breaks
    /// one of these rules when it is registered
    /// ([`BuildError::InvalidHeaderMirror`](crate::BuildError::InvalidHeaderMirror)).
    pub input_schema: Value,
    /// The JSON Schema of `output`.
    pub output_schema: Value,
}

/// A resource as `mcp/listResources` lists it, content included.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDefinition {
    /// A unique, stable URI, e.g. `mcp://my-server/resources/config.json`.
    pub mcp_id: String,
    /// A short human-readable name.
    pub name: String,
    /// The resource's purpose and content.
    pub description: String,
    /// The IANA media type of `content`, e.g. `text/plain`.
    pub media_type: String,
    /// The full content.
    pub content: String,
}

/// The role of a prompt's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A system instruction.
    System,
    /// A user message.
    User,
    /// An assistant message.
    Assistant,
}

/// A prompt as `mcp/listPrompts` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptDefinition {
    /// A unique, stable URI, e.g. `mcp://my-prompts/system/planner-v2`.
    pub mcp_id: String,
    /// A short human-readable name.
    pub name: String,
    /// The prompt's purpose and expected use (optional in the reference).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The role of the content.
    pub role: Role,
    /// The text of the prompt.
    pub content: String,
}

/// `serverInfo` in the `initialize` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// The server's name.
    pub name: String,
    /// The server's version.
    pub version: String,
}

/// How a host may present a tool, and what the tool promises about its
/// effects (the Model Context Protocol's `title`, `annotations` and
/// `icons`; MCP v1.0 lists none of them). Hosts show the title and icons,
/// and use the hints when they ask a user for permission; the hints are
/// claims of the server, not enforced.
///
/// ```
/// use clawmcp::definition::{Icon, ToolAnnotations, ToolMetadata};
///
/// let metadata = ToolMetadata::new()
///     .title("Write a file")
///     .annotations(ToolAnnotations::new().destructive(true).idempotent(true))
///     .icon(Icon::new("https://example.com/pen.png").mime_type("image/png"));
/// assert_eq!(metadata.title.as_deref(), Some("Write a file"));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ToolMetadata {
    /// A display name for people (the `name` stays the identifier).
    pub title: Option<String>,
    /// The behaviour hints.
    pub annotations: Option<ToolAnnotations>,
    /// Icons, in the order a host should prefer them.
    pub icons: Vec<Icon>,
    /// The app page a host renders with the tool's results (MCP Apps,
    /// [`crate::app`]).
    pub app: Option<ToolApp>,
    /// A visibility set before [`app`](Self::app) linked a page: the
    /// page's, once linked.
    visibility: Option<AppVisibility>,
}

impl ToolMetadata {
    /// No title, no annotations, no icons.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the display name.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the behaviour hints.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Adds an icon.
    pub fn icon(mut self, icon: Icon) -> Self {
        self.icons.push(icon);
        self
    }

    /// Links the app page at `resource_uri` (a registered
    /// [`AppResource`](crate::app::AppResource); checked at build): a host
    /// that renders apps shows it with the tool's results. The model and
    /// the page may both call the tool, unless
    /// [`app_visibility`](Self::app_visibility) says otherwise (before or
    /// after this call).
    pub fn app(mut self, resource_uri: impl Into<String>) -> Self {
        let visibility = (self.app.as_ref().map(|app| app.visibility))
            .or(self.visibility)
            .unwrap_or_default();
        self.app = Some(ToolApp {
            resource_uri: resource_uri.into(),
            visibility,
        });
        self
    }

    /// Who may call the tool, for a tool linked to an app page (see
    /// [`AppVisibility`]), in either order with [`app`](Self::app).
    ///
    /// ```
    /// use clawmcp::definition::ToolMetadata;
    /// use clawmcp::app::AppVisibility;
    ///
    /// let first = ToolMetadata::new().app_visibility(AppVisibility::App).app("ui://x/p.html");
    /// let then = ToolMetadata::new().app("ui://x/p.html").app_visibility(AppVisibility::App);
    /// assert_eq!(first.app, then.app);
    /// assert_eq!(first.app.map(|app| app.visibility), Some(AppVisibility::App));
    /// ```
    pub fn app_visibility(mut self, visibility: AppVisibility) -> Self {
        match &mut self.app {
            Some(app) => app.visibility = visibility,
            None => self.visibility = Some(visibility),
        }
        self
    }
}

/// A tool's link to its app page (`_meta.ui` of the tool, MCP Apps).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolApp {
    /// The page's `ui://` URI.
    pub resource_uri: String,
    /// Who may call the tool.
    pub visibility: AppVisibility,
}

impl ToolApp {
    /// The tool's `_meta` as the extension writes it: `ui.resourceUri`,
    /// `ui.visibility` (when not the default), and the flat
    /// `ui/resourceUri` key hosts of the first drafts read.
    pub fn meta(&self) -> serde_json::Map<String, Value> {
        let mut ui = serde_json::Map::new();
        ui.insert("resourceUri".into(), self.resource_uri.clone().into());
        let visibility = match self.visibility {
            AppVisibility::ModelAndApp => None,
            AppVisibility::Model => Some(vec!["model"]),
            AppVisibility::App => Some(vec!["app"]),
        };
        if let Some(visibility) = visibility {
            ui.insert("visibility".into(), visibility.into());
        }
        serde_json::Map::from_iter([
            ("ui".to_owned(), Value::Object(ui)),
            (
                "ui/resourceUri".to_owned(),
                self.resource_uri.clone().into(),
            ),
        ])
    }
}

/// Who may call a tool linked to an app page. The host enforces it: a
/// tool only its page calls stays out of the model's tools, and a page may
/// not call a tool the model alone may. The server lists every tool and
/// serves every call alike, since both reach it through the host's one
/// client. A client that does not render apps (it did not declare the
/// extension, or speaks a revision before 2025-06-18, or MCP v1.0) knows
/// nothing of visibility: its model sees an app-only tool as any other,
/// so describe such a tool for a model too, or have it check
/// [`ToolContext::client_supports_apps`](crate::ToolContext::client_supports_apps).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AppVisibility {
    /// The model and the page (the default).
    #[default]
    ModelAndApp,
    /// The model only: the page may not call it.
    Model,
    /// The page only: the model does not see it.
    App,
}

/// A tool's behaviour hints (`ToolAnnotations`); each is left out of the
/// listing until set, and a client then assumes the specification's
/// default (not read-only, destructive, not idempotent, open world).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// A display name (a host prefers the tool's own `title`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy or overwrite (meaningful when not read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it again with the same arguments has no further effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches an open world (the web), not a closed one (a
    /// local store).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// No hint set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `readOnlyHint`.
    pub fn read_only(mut self, on: bool) -> Self {
        self.read_only_hint = Some(on);
        self
    }

    /// Sets `destructiveHint`.
    pub fn destructive(mut self, on: bool) -> Self {
        self.destructive_hint = Some(on);
        self
    }

    /// Sets `idempotentHint`.
    pub fn idempotent(mut self, on: bool) -> Self {
        self.idempotent_hint = Some(on);
        self
    }

    /// Sets `openWorldHint`.
    pub fn open_world(mut self, on: bool) -> Self {
        self.open_world_hint = Some(on);
        self
    }

    /// Sets `title`.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
}

/// An icon a host may show for an item (`Icon`): an `https:` URL or a
/// `data:` URI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Icon {
    /// Where the image is.
    pub src: String,
    /// Its media type, when the source does not say (`image/png`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The sizes it fits (`"48x48"`, `"any"`); none means any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<String>,
    /// The background it is drawn for; none means any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theme: Option<IconTheme>,
}

impl Icon {
    /// An icon at `src`.
    pub fn new(src: impl Into<String>) -> Self {
        Self {
            src: src.into(),
            mime_type: None,
            sizes: Vec::new(),
            theme: None,
        }
    }

    /// Sets the media type.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Adds a size it fits.
    pub fn size(mut self, size: impl Into<String>) -> Self {
        self.sizes.push(size.into());
        self
    }

    /// Sets the background it is drawn for.
    pub fn theme(mut self, theme: IconTheme) -> Self {
        self.theme = Some(theme);
        self
    }
}

/// The background an [`Icon`] is drawn for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IconTheme {
    /// A light background.
    Light,
    /// A dark background.
    Dark,
}

/// How a host may present a resource, a resource template or a prompt
/// (`title` and `icons` in the Model Context Protocol).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Presentation {
    /// A display name for people.
    pub title: Option<String>,
    /// Icons, in the order a host should prefer them.
    pub icons: Vec<Icon>,
}

impl Presentation {
    /// No title, no icons.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the display name.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Adds an icon.
    pub fn icon(mut self, icon: Icon) -> Self {
        self.icons.push(icon);
        self
    }
}
