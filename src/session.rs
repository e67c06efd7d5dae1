//! The session layer: one connection's (or one HTTP exchange's) loop —
//! receive a message ([`reader`]), [`dispatch`] it, submit its work to the
//! executor policy, send its reply — with its
//! in-flight [`slots`], its [`outbox`], its requests to the client
//! ([`peer`]), and the forwarder of the changes announced to it ([`push`]).
//! Transports feed it [`Input`] and drain its outbox; it speaks to them in
//! [`Outgoing`] messages. A 2026-07-28 listen stream ([`listen`]) runs as a
//! session's job, or, over HTTP, on its own: the response body reads its
//! `Listener`.

mod batch;
pub(crate) mod bounded;
mod dispatch;
mod job;
mod link;
mod listen;
pub(crate) mod outbox;
mod peer;
mod push;
mod reader;
mod shared;
mod slots;
mod task;
mod traced;

pub(crate) use dispatch::{Alone, Dispatched, alone};
#[cfg(feature = "http")]
pub(crate) use dispatch::{Beside, beside};
#[cfg(feature = "http")]
pub(crate) use listen::{Listener, Listening};
#[cfg(feature = "http")]
pub(crate) use outbox::About;
pub(crate) use outbox::Outgoing;
#[cfg(feature = "http")]
pub(crate) use peer::Peer;
#[cfg(feature = "http")]
pub(crate) use reader::Resumed;
pub(crate) use reader::Session;
pub use reader::{Input, MAX_PARKED};
#[cfg(feature = "http")]
pub(crate) use shared::Observed;
pub(crate) use shared::Shared;
