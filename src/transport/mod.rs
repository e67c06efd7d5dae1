//! Transports: adapters that move bytes between a peer and a session. The
//! core ([`crate::server`]) knows nothing of them.

mod frame;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "http")]
mod http_body;
mod json_stream;
mod stdio;

pub use frame::{DEFAULT_MAX_HEADER_SIZE, FrameCodec};
#[cfg(feature = "http")]
pub use http::{HttpConfig, McpService};
#[cfg(feature = "http")]
pub use http_body::McpBody;
pub use json_stream::JsonStreamDecoder;
