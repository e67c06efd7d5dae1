//! The [`Resource`] trait and ready-made resources: [`TextResource`] (fixed
//! content, from a string or a file), [`SharedResource`] (content set at run
//! time, announcing each change by itself) and [`resource_fn`] (content
//! produced by an async function at each `mcp/listResources`).

use std::future::Future;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use async_trait::async_trait;

use crate::content::ResourceBody;
use crate::definition::Presentation;
use crate::error::{BuildError, ToolError};
use crate::handle::ServerHandle;

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

impl ResourceInfo {
    /// Metadata from its four parts.
    pub fn new(
        mcp_id: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        media_type: impl Into<String>,
    ) -> Self {
        Self {
            mcp_id: mcp_id.into(),
            name: name.into(),
            description: description.into(),
            media_type: media_type.into(),
        }
    }
}

/// A resource listed by `mcp/listResources`, its content read at each call.
///
/// When the content changes, announce it with
/// [`ServerHandle::resource_changed`](crate::ServerHandle::resource_changed):
/// every ready session then receives `mcp/resourceDidChange`.
/// [`SharedResource`] does that by itself.
#[async_trait]
pub trait Resource: Send + Sync + 'static {
    /// The resource's metadata, read once when the server is built.
    fn info(&self) -> ResourceInfo;

    /// Its title and icons as the Model Context Protocol lists them (none
    /// by default; read when a list is made).
    fn presentation(&self) -> Presentation {
        Presentation::default()
    }

    /// The current content as text (MCP v1.0 lists it; a binary
    /// resource gives its bytes as base64 here). An `Err` fails the
    /// `mcp/listResources` call with `-32603 Internal error`.
    async fn content(&self) -> Result<String, ToolError>;

    /// The current body for `resources/read` (Model Context Protocol):
    /// by default [`content`](Self::content) as text. A binary resource
    /// returns [`ResourceBody::Blob`] (see [`BinaryResource`]). An `Err`
    /// fails the read with `-32603 Internal error`, or with `-32602` when
    /// that is [its code](ToolError::code).
    async fn read(&self) -> Result<ResourceBody, ToolError> {
        self.content().await.map(ResourceBody::Text)
    }

    /// Its `_meta` as the Model Context Protocol shows it, on its listing
    /// and on its read contents alike (an app page's `ui`, say); none by
    /// default. Read when the server is built and at each read.
    fn meta(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        None
    }

    /// Checked once when the server is built: an `Err` refuses the build
    /// (an app page's origins, say). Passes by default.
    fn check(&self) -> Result<(), BuildError> {
        Ok(())
    }

    /// Called once when the server is built, with the server's handle: a
    /// resource that changes keeps it to announce its changes. Does nothing
    /// by default.
    fn bind(&self, _server: &ServerHandle) {}

    /// Takes the content another process of the deployment set (a
    /// [`SharedResource`]'s, carried by the [bus](crate::bus)), without
    /// announcing it again: whether the content changed. Does nothing by
    /// default.
    fn mirror(&self, _content: &str) -> bool {
        false
    }
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
            info: ResourceInfo::new(mcp_id, name, description, media_type),
            content: content.into(),
        }
    }

    /// A resource holding a file's content, read now; its media type follows
    /// from the file's extension ([`media_type_of`]) unless set with
    /// [`with_media_type`](Self::with_media_type).
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("config.json");
    /// # std::fs::write(&path, "{}")?;
    /// let config = clawmcp::TextResource::from_file(
    ///     "mcp://example/resources/config.json", "config", "The configuration.", &path,
    /// )?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// The file cannot be read, or is not UTF-8.
    pub fn from_file(
        mcp_id: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        path: impl AsRef<Path>,
    ) -> std::io::Result<Self> {
        let path = path.as_ref();
        let content = std::fs::read_to_string(path)?;
        Ok(Self::new(
            mcp_id,
            name,
            description,
            media_type_of(path),
            content,
        ))
    }

    /// Sets the media type.
    #[must_use]
    pub fn with_media_type(mut self, media_type: impl Into<String>) -> Self {
        self.info.media_type = media_type.into();
        self
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

/// A resource whose content is fixed bytes: read as a base64 `blob`
/// (Model Context Protocol); MCP v1.0 lists its `content` as that base64
/// text.
///
/// ```
/// let logo = clawmcp::resource::BinaryResource::new(
///     "mcp://example/resources/logo.png", "logo", "The logo.", "image/png", vec![0x89, b'P', b'N', b'G'],
/// );
/// # let _ = clawmcp::Server::builder().resource(logo).build().unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct BinaryResource {
    info: ResourceInfo,
    bytes: Arc<[u8]>,
}

impl BinaryResource {
    /// A resource with the given metadata and bytes.
    pub fn new(
        mcp_id: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        media_type: impl Into<String>,
        bytes: impl Into<Vec<u8>>,
    ) -> Self {
        Self {
            info: ResourceInfo::new(mcp_id, name, description, media_type),
            bytes: bytes.into().into(),
        }
    }
}

#[async_trait]
impl Resource for BinaryResource {
    fn info(&self) -> ResourceInfo {
        self.info.clone()
    }

    async fn content(&self) -> Result<String, ToolError> {
        Ok(ResourceBody::Blob(self.bytes.to_vec()).as_v1_content())
    }

    async fn read(&self) -> Result<ResourceBody, ToolError> {
        Ok(ResourceBody::Blob(self.bytes.to_vec()))
    }
}

/// The media type of a file by its extension (`text/plain` when unknown).
///
/// ```
/// assert_eq!(clawmcp::resource::media_type_of("a/b.json".as_ref()), "application/json");
/// assert_eq!(clawmcp::resource::media_type_of("notes".as_ref()), "text/plain");
/// ```
pub fn media_type_of(path: &Path) -> &'static str {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match extension.as_str() {
        "json" => "application/json",
        "md" | "markdown" => "text/markdown",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "xml" => "application/xml",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "js" | "mjs" => "text/javascript",
        "svg" => "image/svg+xml",
        _ => "text/plain",
    }
}

/// A resource whose content the program sets at run time; each
/// [`set`](Self::set) announces `mcp/resourceDidChange` to every ready
/// session by itself. Clones share the content.
///
/// ```
/// use clawmcp::{Server, SharedResource};
///
/// let status = SharedResource::new("mcp://example/resources/status", "status",
///     "The current status.", "text/plain", "starting");
/// let server = Server::builder().resource(status.clone()).build().unwrap();
/// status.set("ready"); // every ready session hears of it
/// assert_eq!(status.get(), "ready");
/// # drop(server);
/// ```
#[derive(Debug, Clone)]
pub struct SharedResource {
    shared: Arc<SharedContent>,
}

#[derive(Debug)]
struct SharedContent {
    info: ResourceInfo,
    content: Mutex<String>,
    server: OnceLock<ServerHandle>,
}

impl SharedResource {
    /// A resource with the given metadata and initial content.
    pub fn new(
        mcp_id: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        media_type: impl Into<String>,
        initial: impl Into<String>,
    ) -> Self {
        Self {
            shared: Arc::new(SharedContent {
                info: ResourceInfo::new(mcp_id, name, description, media_type),
                content: Mutex::new(initial.into()),
                server: OnceLock::new(),
            }),
        }
    }

    /// Replaces the content and announces the change (once the resource is
    /// registered on a built server).
    pub fn set(&self, content: impl Into<String>) {
        let content = content.into();
        match self.shared.server.get() {
            // Replaced before it is announced: whoever hears of it reads it.
            Some(server) => {
                self.replace(content.clone());
                server.content_changed(&self.shared.info.mcp_id, &content);
            }
            None => self.replace(content),
        }
    }

    fn replace(&self, content: String) {
        *self
            .shared
            .content
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = content;
    }

    /// A resource of JSON content (`application/json`): `initial`
    /// serialised; replace it with [`set_json`](Self::set_json).
    ///
    /// ```
    /// use clawmcp::SharedResource;
    ///
    /// #[derive(serde::Serialize)]
    /// struct Stats { notes: usize }
    ///
    /// let stats = SharedResource::json("mcp://example/resources/stats", "stats",
    ///     "Note statistics.", &Stats { notes: 0 }).unwrap();
    /// stats.set_json(&Stats { notes: 1 }).unwrap();
    /// assert_eq!(stats.get(), r#"{"notes":1}"#);
    /// ```
    pub fn json<T: serde::Serialize + ?Sized>(
        mcp_id: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        initial: &T,
    ) -> Result<Self, serde_json::Error> {
        let initial = serde_json::to_string(initial)?;
        Ok(Self::new(
            mcp_id,
            name,
            description,
            "application/json",
            initial,
        ))
    }

    /// Replaces the content with `value` serialised as JSON and announces
    /// the change, as [`set`](Self::set); on a serialisation error the
    /// content is left as it was and nothing is announced.
    pub fn set_json<T: serde::Serialize + ?Sized>(
        &self,
        value: &T,
    ) -> Result<(), serde_json::Error> {
        self.set(serde_json::to_string(value)?);
        Ok(())
    }

    /// The current content.
    pub fn get(&self) -> String {
        self.shared
            .content
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[async_trait]
impl Resource for SharedResource {
    fn info(&self) -> ResourceInfo {
        self.shared.info.clone()
    }

    async fn content(&self) -> Result<String, ToolError> {
        Ok(self.get())
    }

    fn bind(&self, server: &ServerHandle) {
        let _ = self.shared.server.set(server.clone());
    }

    fn mirror(&self, content: &str) -> bool {
        let mut current = (self.shared.content.lock()).unwrap_or_else(PoisonError::into_inner);
        if *current == content {
            return false;
        }
        content.clone_into(&mut current);
        true
    }
}

/// A resource whose content an async function produces at each
/// `mcp/listResources`.
///
/// ```
/// use clawmcp::resource::{ResourceInfo, resource_fn};
///
/// let clock = resource_fn(
///     ResourceInfo::new("mcp://example/resources/uptime", "uptime", "Seconds since start.", "text/plain"),
///     || async { Ok(format!("{}", 42)) },
/// );
/// # let _ = clawmcp::Server::builder().resource(clock).build().unwrap();
/// ```
pub fn resource_fn<F, Fut>(info: ResourceInfo, function: F) -> FnResource<F, Fut>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
{
    FnResource {
        info,
        function,
        _future: PhantomData,
    }
}

/// The resource [`resource_fn`] returns.
pub struct FnResource<F, Fut> {
    info: ResourceInfo,
    function: F,
    _future: PhantomData<fn() -> Fut>,
}

#[async_trait]
impl<F, Fut> Resource for FnResource<F, Fut>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
{
    fn info(&self) -> ResourceInfo {
        self.info.clone()
    }

    async fn content(&self) -> Result<String, ToolError> {
        (self.function)().await
    }
}
