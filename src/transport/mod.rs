//! Transports: adapters that move bytes between a peer and a session. The
//! core ([`crate::server`]) knows nothing of them.

mod frame;
mod stdio;

pub use frame::{DEFAULT_MAX_HEADER_SIZE, FrameCodec};
