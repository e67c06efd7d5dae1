//! The session layer: one connection's (or one HTTP exchange's) loop —
//! read a message, dispatch it, run its work, send its reply — with its
//! in-flight [`slots`], its [`outbox`], its requests to the client
//! ([`peer`]), and the forwarder of the changes announced to it ([`push`]).
//! Transports feed it [`Input`] and drain its outbox; it speaks to them in
//! [`Outgoing`] messages.

mod dispatch;
mod job;
mod link;
pub(crate) mod outbox;
mod peer;
mod push;
mod shared;
mod slots;

pub(crate) use dispatch::{Alone, Session, alone};
#[cfg(feature = "http")]
pub(crate) use dispatch::{Beside, beside};
pub use dispatch::{Input, MAX_PARKED};
#[cfg(feature = "http")]
pub(crate) use outbox::About;
pub(crate) use outbox::Outgoing;
pub(crate) use shared::Shared;
