//! The [`Resource`] trait and [`TextResource`], a resource with fixed content.

use async_trait::async_trait;

use crate::error::ToolError;

/// What `mcp/listResources` shows of a resource besides its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// A unique, stable URI, e.g. `mcp://my-server/resources/config.json`.
    pub mcp_id: String,
    /// A short human-readable name.
    pub name: String,
    /// The resource's purpose and content.
    pub description: String,
    /// The IANA media type of the content, e.g. `text/plain`.
    pub media_type: String,
}

/// A resource listed by `mcp/listResources`, its content read at each call.
///
/// When the content changes, announce it with
/// [`ServerHandle::resource_changed`](crate::ServerHandle::resource_changed):
/// every ready session then receives `mcp/resourceDidChange`.
#[async_trait]
pub trait Resource: Send + Sync + 'static {
    /// The resource's metadata, read once when the server is built.
    fn info(&self) -> ResourceInfo;

    /// The current content. An `Err` fails the `mcp/listResources` call
    /// with `-32603 Internal error`.
    async fn content(&self) -> Result<String, ToolError>;
}

/// A resource whose content never changes.
///
/// ```
/// use clawmcp::TextResource;
///
/// let about = TextResource::new(
///     "mcp://example/resources/about.txt",
///     "about",
///     "What this server is.",
///     "text/plain",
///     "An example server.",
/// );
/// # let _ = clawmcp::Server::builder().resource(about).build().unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct TextResource {
    info: ResourceInfo,
    content: String,
}

impl TextResource {
    /// A resource with the given metadata and content.
    pub fn new(
        mcp_id: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        media_type: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Self {
            info: ResourceInfo {
                mcp_id: mcp_id.into(),
                name: name.into(),
                description: description.into(),
                media_type: media_type.into(),
            },
            content: content.into(),
        }
    }
}

#[async_trait]
impl Resource for TextResource {
    fn info(&self) -> ResourceInfo {
        self.info.clone()
    }

    async fn content(&self) -> Result<String, ToolError> {
        Ok(self.content.clone())
    }
}
