//! Transports: adapters that move bytes between a peer and a session. The
//! core ([`crate::server`]) knows nothing of them.

#[cfg(test)]
mod chunked;
mod frame;
#[cfg(feature = "http")]
mod http;
mod json_stream;
mod ndjson;
mod stdio;

pub use frame::{DEFAULT_MAX_HEADER_SIZE, FrameCodec};
#[cfg(feature = "http")]
pub use http::{Guard, GuardLayer, Guarded, HttpConfig, IpNet, McpBody, McpService, PeerAddr};
#[cfg(all(feature = "http", feature = "oauth"))]
pub use http::{OAuthGuard, OAuthGuarded, OAuthLayer};
pub use json_stream::JsonStreamDecoder;
pub use ndjson::LineCodec;
