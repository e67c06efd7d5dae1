//! Errors: the wire error a client sees ([`RpcError`] with its [`ErrorCode`]),
//! and the library's own failures ([`BuildError`]).
//!
//! Every code of docs/mcp-v1.md §2, and the three the 2026-07-28 revision
//! adds (docs/model-context.md §7.3), is named once, in [`ErrorCode`],
//! together with its message text. The Model Context Protocol dialect reads
//! its messages from the same table, except `-32002`, which means another
//! thing there.

use std::fmt;

/// A JSON-RPC error code.
///
/// An open newtype: the named constants are the codes of docs/mcp-v1.md §2
/// and of the 2026-07-28 revision (`-32020`…`-32022`), and
/// [`ErrorCode::message`] gives each its fixed message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// `-32700`: the body is not valid JSON, or a stdio frame header is unreadable.
    pub const PARSE_ERROR: Self = Self(-32700);
    /// `-32600`: not a JSON-RPC 2.0 request; a misplaced or repeated `initialize`.
    pub const INVALID_REQUEST: Self = Self(-32600);
    /// `-32601`: unknown method, or a method whose capability is `false`.
    pub const METHOD_NOT_FOUND: Self = Self(-32601);
    /// `-32602`: params of the wrong shape, or arguments failing `inputSchema`.
    pub const INVALID_PARAMS: Self = Self(-32602);
    /// `-32603`: a tool panicked, or its output failed its `outputSchema`.
    pub const INTERNAL_ERROR: Self = Self(-32603);
    /// `-32000`: the tool returned an error.
    pub const TOOL_EXECUTION_FAILED: Self = Self(-32000);
    /// `-32001`: no tool, resource or prompt with that `mcpId`.
    pub const UNKNOWN_MCP_ID: Self = Self(-32001);
    /// `-32002`: a request arrived before `initialize`.
    pub const SERVER_NOT_INITIALIZED: Self = Self(-32002);
    /// `-32003`: the client cancelled the request with `$/cancelRequest`.
    pub const REQUEST_CANCELLED: Self = Self(-32003);
    /// `-32004`: the tool ran past its time limit.
    pub const REQUEST_TIMED_OUT: Self = Self(-32004);
    /// `-32005`: the request arrived after shutdown began.
    pub const SERVER_SHUTTING_DOWN: Self = Self(-32005);
    /// `-32006`: the message is over the size limit.
    pub const MESSAGE_TOO_LARGE: Self = Self(-32006);
    /// `-32007`: the request's OAuth token lacks a scope its item needs
    /// (docs/oauth.md §4; over HTTP a `403` challenge says so first, where
    /// it still can).
    pub const INSUFFICIENT_SCOPE: Self = Self(-32007);
    /// `-32008`: the request's OAuth token expired while the stream that
    /// carries it (an MCP v1.0 streaming session) went on.
    pub const TOKEN_EXPIRED: Self = Self(-32008);
    /// `-32020`: a 2026-07-28 request's HTTP headers are missing, malformed
    /// or say otherwise than its body (HTTP `400`).
    pub const HEADER_MISMATCH: Self = Self(-32020);
    /// `-32021`: a 2026-07-28 request needs a client capability it did not
    /// declare in its `_meta` (HTTP `400`).
    pub const MISSING_CLIENT_CAPABILITY: Self = Self(-32021);
    /// `-32022`: a request names a protocol version this server does not
    /// speak (HTTP `400`).
    pub const UNSUPPORTED_PROTOCOL_VERSION: Self = Self(-32022);

    /// The fixed `message` text of this code (docs/mcp-v1.md §2, and the
    /// 2026-07-28 revision's three), or `"Server error"` for a code the
    /// table does not name.
    pub fn message(self) -> &'static str {
        match self.0 {
            -32700 => "Parse error",
            -32600 => "Invalid Request",
            -32601 => "Method not found",
            -32602 => "Invalid params",
            -32603 => "Internal error",
            -32000 => "Tool execution failed",
            -32001 => "Unknown mcpId",
            -32002 => "Server not initialized",
            -32003 => "Request cancelled",
            -32004 => "Request timed out",
            -32005 => "Server shutting down",
            -32006 => "Message too large",
            -32007 => "Insufficient scope",
            -32008 => "Token expired",
            -32020 => "Header mismatch",
            -32021 => "Missing required client capability",
            -32022 => "Unsupported protocol version",
            _ => "Server error",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.0, self.message())
    }
}

/// The error object of a JSON-RPC response: a code, its fixed message, and
/// `data`, a human-readable string saying exactly what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    /// The code; its `message` follows from it.
    pub code: ErrorCode,
    /// What exactly was wrong, for a human.
    pub data: String,
}

impl RpcError {
    /// An error with `code` and the explanation `data`.
    pub fn new(code: ErrorCode, data: impl Into<String>) -> Self {
        Self {
            code,
            data: data.into(),
        }
    }

    /// `-32700 Parse error`.
    pub fn parse_error(data: impl Into<String>) -> Self {
        Self::new(ErrorCode::PARSE_ERROR, data)
    }

    /// `-32600 Invalid Request`.
    pub fn invalid_request(data: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_REQUEST, data)
    }

    /// `-32601 Method not found`, naming the method.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: '{method}'"),
        )
    }

    /// `-32602 Invalid params`.
    pub fn invalid_params(data: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, data)
    }

    /// `-32603 Internal error`.
    pub fn internal(data: impl Into<String>) -> Self {
        Self::new(ErrorCode::INTERNAL_ERROR, data)
    }

    /// `-32005 Server shutting down`.
    pub fn shutting_down(data: impl Into<String>) -> Self {
        Self::new(ErrorCode::SERVER_SHUTTING_DOWN, data)
    }

    /// `-32007 Insufficient scope`, naming every scope the request needs.
    pub fn insufficient_scope(needed: &[String]) -> Self {
        Self::new(
            ErrorCode::INSUFFICIENT_SCOPE,
            format!(
                "insufficient scope: this request needs the scopes \"{}\"",
                needed.join(" ")
            ),
        )
    }

    /// `-32001 Unknown mcpId`, naming the id and its kind.
    pub fn unknown_mcp_id(kind: &str, mcp_id: &str) -> Self {
        Self::new(
            ErrorCode::UNKNOWN_MCP_ID,
            format!("No {kind} with mcpId {mcp_id}"),
        )
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.data)
    }
}

impl std::error::Error for RpcError {}

/// What a tool returns when it fails: answered `-32000 Tool execution failed`
/// with the error's text as `data` in MCP v1.0, and as a result with
/// `isError: true` and that text in the Model Context Protocol (see
/// [`Tool::call`](crate::Tool::call) for other codes).
///
/// Any error type converts into it with `?`, so a tool body can use the
/// errors of the libraries it calls directly:
///
/// ```
/// use clawmcp::ToolError;
///
/// fn parse(text: &str) -> Result<u32, ToolError> {
///     let n: u32 = text.parse()?; // a ParseIntError becomes a ToolError
///     if n == 0 {
///         return Err(ToolError::new("zero is not allowed"));
///     }
///     Ok(n)
/// }
/// assert_eq!(parse("0").unwrap_err().message(), "zero is not allowed");
/// assert!(parse("x").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    code: ErrorCode,
    message: String,
}

impl ToolError {
    /// A tool failure explained by `message`: `-32000 Tool execution failed`.
    pub fn new(message: impl Into<String>) -> Self {
        Self::with_code(ErrorCode::TOOL_EXECUTION_FAILED, message)
    }

    /// A failure answered with another code, e.g. `-32602` for arguments
    /// that passed the schema but that the tool still cannot accept (in
    /// the Model Context Protocol, `-32000` and `-32602` are both an
    /// `isError` result, as is, in a 2026-07-28 request, a code that
    /// revision forbids a server to send: `-32002` and `-32020` to
    /// `-32099`; any other code is a JSON-RPC error).
    pub fn with_code(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The code the request is answered with (in MCP v1.0 always; in the
    /// Model Context Protocol unless it is `-32000` or `-32602`).
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The explanation, sent as the error's `data`.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error> From<E> for ToolError {
    fn from(error: E) -> Self {
        Self::new(error.to_string())
    }
}

/// Why [`ServerBuilder::build`](crate::ServerBuilder::build) refused the
/// registered items (docs/mcp-v1.md §6). Checked once, when the server is built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// An `mcpId` that is not an absolute URI (`scheme:rest`).
    #[error(
        "{kind} mcpId {mcp_id:?} is not an absolute URI (expected scheme:..., e.g. mcp://authority/path)"
    )]
    MalformedMcpId {
        /// `tool`, `resource` or `prompt`.
        kind: &'static str,
        /// The offending id.
        mcp_id: String,
    },
    /// Two items of one kind share an `mcpId`.
    #[error("{kind} mcpId {mcp_id} is registered twice")]
    DuplicateMcpId {
        /// `tool`, `resource` or `prompt`.
        kind: &'static str,
        /// The repeated id.
        mcp_id: String,
    },
    /// Scopes were required of an item no tool, resource, resource
    /// template or prompt is named by.
    #[error("scopes are required of {item:?}, which names no tool, resource, template or prompt")]
    UnknownItem {
        /// The name as given.
        item: String,
    },
    /// A required scope that is not an OAuth scope token (RFC 6749 §3.3:
    /// printable ASCII without spaces, `"` or `\\`).
    #[error("{item}: {scope:?} is not an OAuth scope (printable ASCII, no space, '\"' or '\\')")]
    InvalidScope {
        /// The item it was required of.
        item: String,
        /// The scope.
        scope: String,
    },
    /// A tool's schema is not a valid JSON Schema (or not an object schema,
    /// for `inputSchema`).
    #[error("tool {mcp_id}: {which} is not a valid JSON Schema: {reason}")]
    InvalidSchema {
        /// The tool's id.
        mcp_id: String,
        /// `inputSchema` or `outputSchema`.
        which: &'static str,
        /// What the schema compiler said.
        reason: String,
    },
    /// A prompt template with a placeholder left unfilled, or a value for
    /// a placeholder it does not have.
    #[error("prompt {mcp_id}: {problem}")]
    PromptTemplate {
        /// The prompt's id.
        mcp_id: String,
        /// What is wrong with the template.
        problem: String,
    },
    /// A resource template that is not a level-1 URI template.
    #[error("resource template {template:?}: {problem}")]
    InvalidTemplate {
        /// The template as written.
        template: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A name the Model Context Protocol cannot carry: a tool name outside
    /// `[A-Za-z0-9_.-]{1,128}`, or two tools, prompts or templates with one
    /// name.
    #[error("{kind} {name:?}: {problem}")]
    InvalidName {
        /// `tool`, `prompt` or `resource template`.
        kind: &'static str,
        /// The name.
        name: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A tool's `x-mcp-header` annotation that breaks a rule of the
    /// 2026-07-28 revision: refused by a server that speaks the Model
    /// Context Protocol, since a client leaves such a tool out of its
    /// list.
    #[error("tool {mcp_id}: {problem}")]
    InvalidHeaderMirror {
        /// The tool's id.
        mcp_id: String,
        /// Which annotation, and the rule it breaks.
        problem: String,
    },
    /// A completer for an argument or variable nobody declares.
    #[error("completion for {target}: {problem}")]
    UnknownCompletionTarget {
        /// The prompt argument or template variable.
        target: String,
        /// What is wrong.
        problem: &'static str,
    },
    /// A tool needs a state value of a type nobody registered with
    /// [`ServerBuilder::state`](crate::ServerBuilder::state).
    #[error("tool {mcp_id} needs state of type {state}: register one with ServerBuilder::state")]
    MissingState {
        /// The tool's id.
        mcp_id: String,
        /// The type's name.
        state: &'static str,
    },
    /// The keys that seal a 2026-07-28 request's state could not be set:
    /// a list that is not 32-byte keys in hex
    /// ([`request_state_keys_from_hex`](crate::server::request_state_keys_from_hex)), or
    /// no random key (the operating system's source failed).
    #[error("request state keys: {0}")]
    RequestStateKeys(String),
    /// An extension ([`ServerBuilder::extension`](crate::ServerBuilder::extension))
    /// whose identifier has no prefix (`vendor/name`) or whose settings are
    /// not an object.
    #[error(
        "extension {0:?}: the identifier needs a prefix (vendor/name) and the settings must be an object"
    )]
    InvalidExtension(String),
    /// An item was added to or removed from a server through its
    /// [`ServerHandle`](crate::ServerHandle) before the server was built
    /// (or after it was dropped).
    #[error("the server is not built: register items on the ServerBuilder")]
    NotBuilt,
    /// A required field (name, description, …) is empty.
    #[error("{kind} {mcp_id}: {field} must not be empty")]
    EmptyField {
        /// `tool`, `resource` or `prompt`.
        kind: &'static str,
        /// The item's id.
        mcp_id: String,
        /// The empty field.
        field: &'static str,
    },
    /// An app page a host could not render, or a tool's link to a page
    /// that is not a registered one (MCP Apps, [`crate::app`]).
    #[error("app page {uri}: {problem}")]
    InvalidApp {
        /// The page's URI (as the tool links it).
        uri: String,
        /// What is wrong.
        problem: String,
    },
}

/// A value the client sent, as an error message quotes it: its first 64
/// characters, then `…` if it was longer. An error then stays small
/// whatever the client sent (a forged cursor, a long URI).
pub(crate) fn clipped(value: &str) -> std::borrow::Cow<'_, str> {
    const MOST: usize = 64;
    match value.char_indices().nth(MOST) {
        None => std::borrow::Cow::Borrowed(value),
        Some((end, _)) => {
            std::borrow::Cow::Owned(format!("{}…", value.get(..end).unwrap_or(value)))
        }
    }
}

#[cfg(test)]
mod clipped_tests {
    #[test]
    fn a_clipped_value_keeps_its_first_64_characters() {
        assert_eq!(super::clipped("short"), "short");
        let long = "é".repeat(100);
        let clipped = super::clipped(&long);
        assert_eq!(clipped.chars().count(), 65);
        assert!(clipped.ends_with('…'));
        assert_eq!(super::clipped(&"x".repeat(64)), "x".repeat(64));
    }
}
