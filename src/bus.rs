//! The bus: how the processes of one deployment tell each other what
//! changed, so that a change made on one process reaches every stream,
//! whichever process holds it.
//!
//! Every announcement a server makes crosses it: a resource's update
//! ([`ServerHandle::resource_changed`](crate::ServerHandle::resource_changed)),
//! a [`SharedResource`](crate::SharedResource)'s new content, and a list
//! change ([`ServerHandle::add_tool`](crate::ServerHandle::add_tool) and the
//! like). The process that makes a change delivers it to its own streams at
//! once; the bus carries it to the others, each of which delivers it to its
//! own. So each stream hears of a change exactly once.
//!
//! A bus may also keep Streamable HTTP sessions where every process reads
//! them ([`Bus::shares_sessions`]): then any process serves any session,
//! and a client's answer to a request a tool sent reaches the process
//! where the tool waits, whichever process it was posted to.
//!
//! A server without a bus ([`LocalBus`], the default) is one process.
//! `RedisBus` (feature `redis`) connects the processes through Redis
//! pub/sub. Publishing never makes a request wait: it hands the message
//! over and returns. A request waits for the bus in two places: a request
//! naming a Streamable HTTP session this process does not have
//! ([`Bus::load_session`], at most 2 s a try, four tries), and a `GET`
//! stream's claim ([`Bus::claim_stream`], which the bus itself bounds).

#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "redis")]
mod redis_tasks;

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

#[cfg(feature = "redis")]
pub use self::redis::{RedisBus, RedisBusError};
#[cfg(feature = "redis")]
pub use self::redis_tasks::RedisTaskStore;

/// A list whose items changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ListKind {
    /// The tools.
    Tools,
    /// The prompts.
    Prompts,
    /// The resources.
    Resources,
}

/// A change one process announces to the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
#[non_exhaustive]
pub enum BusMessage {
    /// The content of the resource with this URI (mcpId) changed.
    ResourceUpdated {
        /// The resource's URI.
        uri: String,
    },
    /// A [`SharedResource`](crate::SharedResource)'s new content: every
    /// process takes it as its copy's content, then announces the update.
    ResourceContent {
        /// The resource's URI.
        uri: String,
        /// Its content.
        content: String,
    },
    /// The items of a list changed.
    ListChanged {
        /// Which list.
        list: ListKind,
    },
    /// A Streamable HTTP session's state changed (its [`SessionRecord`]
    /// was saved again): a process serving it reads it anew.
    SessionChanged {
        /// The session's id.
        id: String,
    },
    /// A Streamable HTTP session's client set its log level
    /// (`logging/setLevel`): every copy of it takes the level as it is,
    /// with no read of the session's state.
    LogLevelChanged {
        /// The session's id.
        session: String,
        /// The least severe level sent from now on.
        level: crate::client::LogLevel,
    },
    /// A Streamable HTTP session subscribed to (`on`) or unsubscribed from
    /// a resource: every copy of it takes the change as it is, with no
    /// read of the session's state.
    SubscriptionChanged {
        /// The session's id.
        session: String,
        /// The resource's URI.
        uri: String,
        /// Subscribed (`true`) or unsubscribed.
        on: bool,
    },
    /// A Streamable HTTP session ended (`DELETE`): every process drops it.
    SessionEnded {
        /// The session's id.
        id: String,
    },
    /// The client's response to a request the server sent in a session
    /// (elicitation, sampling, roots), received by a process whose copy of
    /// the session did not send that request: the one that did takes it.
    ClientResponse {
        /// The session's id.
        session: String,
        /// The response, as the client wrote it (one JSON-RPC response).
        message: String,
    },
}

/// What a Streamable HTTP session (2025-11-25 family) is, for a process
/// that did not create it: enough to serve its requests and its `GET`
/// stream as the process that created it would.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionRecord {
    /// The negotiated protocol version.
    pub version: String,
    /// The client's declared capabilities.
    pub capabilities: serde_json::Value,
    /// Who opened it, when its endpoint verifies tokens: (issuer,
    /// subject, client); the only principal it serves.
    pub owner: Option<(String, Option<String>, Option<String>)>,
    /// The client sent `initialized`: server notifications may flow.
    pub ready: bool,
    /// The least severe log level sent (`logging/setLevel`).
    pub log_level: crate::client::LogLevel,
    /// The resource URIs it subscribed to. Empty in the record
    /// [`Bus::save_session`] is given: each subscription is saved on its
    /// own ([`Bus::save_subscription`]), so that a change costs the same
    /// however many a session holds; [`Bus::load_session`] gives them back
    /// here.
    pub subscriptions: Vec<String>,
    /// The session was ended ([`Bus::remove_session`]): what a store may
    /// keep for a while in its place ([`SessionRecord::ended_mark`]), so that a
    /// copy that missed [`BusMessage::SessionEnded`] learns of it, and no
    /// copy's later save brings the session back. No process serves it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ended: bool,
}

impl SessionRecord {
    /// The record that says only that a session ended: nothing else in it
    /// is read.
    ///
    /// ```
    /// let ended = clawmcp::bus::SessionRecord::ended_mark();
    /// assert!(ended.ended && !ended.ready);
    /// ```
    pub fn ended_mark() -> Self {
        SessionRecord {
            version: String::new(),
            capabilities: serde_json::Value::Null,
            owner: None,
            ready: false,
            log_level: crate::client::LogLevel::Info,
            subscriptions: Vec::new(),
            ended: true,
        }
    }
}

/// The answer to [`Bus::claim_stream`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamClaim {
    /// This process holds the stream now.
    Granted,
    /// Another process of the deployment holds it.
    HeldElsewhere,
    /// The bus cannot tell now (it cannot reach its store): the process
    /// decides alone.
    Unknown,
}

/// Where a bus delivers what the other processes announced: the server's
/// handle, given to [`Bus::start`] when the server is built.
#[derive(Clone)]
pub struct Inbox(Arc<dyn Delivery>);

/// What an [`Inbox`] delivers to (the server's handle, a layer up).
pub(crate) trait Delivery: Send + Sync {
    fn deliver(&self, message: BusMessage);
    fn gap(&self);
}

impl Inbox {
    pub(crate) fn new(delivery: Arc<dyn Delivery>) -> Self {
        Self(delivery)
    }

    /// Delivers another process's announcement to this process's streams.
    pub fn deliver(&self, message: BusMessage) {
        self.0.deliver(message);
    }

    /// Tells every stream of this process that it may have missed
    /// changes (the bus lost its connection for a while): each hears that
    /// every list changed and that every resource was updated, so that its
    /// client fetches them again; and each shared session this process
    /// holds reads its saved state again (its client's `initialized`, log
    /// level or subscriptions may have reached another process meanwhile).
    pub fn gap(&self) {
        self.0.gap();
    }
}

impl fmt::Debug for Inbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Inbox")
    }
}

/// How a server's announcements reach the other processes of its
/// deployment ([`ServerBuilder::bus`](crate::ServerBuilder::bus)).
///
/// ```
/// use clawmcp::bus::{Bus, BusMessage, Inbox};
///
/// /// A bus that only logs what it would send.
/// struct Logged;
///
/// impl Bus for Logged {
///     fn publish(&self, message: BusMessage) {
///         eprintln!("would publish {message:?}");
///     }
///     fn start(&self, _inbox: Inbox) {}
/// }
///
/// let server = clawmcp::Server::builder().bus(Logged).build().unwrap();
/// # let _ = server;
/// ```
pub trait Bus: Send + Sync + 'static {
    /// Hands `message` to the other processes. Never waits: a bus that
    /// cannot send now queues the message or drops it (and its peers then
    /// hear of a [gap](Inbox::gap)).
    fn publish(&self, message: BusMessage);

    /// Starts delivering the other processes' messages to `inbox`; called
    /// once, when the server is built.
    fn start(&self, inbox: Inbox);

    /// Whether the deployment keeps Streamable HTTP sessions where every
    /// process can read them ([`save_session`](Self::save_session),
    /// [`load_session`](Self::load_session)): then a session's requests
    /// may go to any process (default: `false`, each session lives on
    /// the process that created it).
    fn shares_sessions(&self) -> bool {
        false
    }

    /// Keeps session `id`'s state for `ttl` from now (each save renews
    /// it). Never waits: the write is queued.
    ///
    /// Readiness only ever goes from not ready to ready: a record saved
    /// with `ready: false` over a stored one that is ready keeps it ready
    /// (a copy that has not heard the client's `initialized` may save a
    /// change of its own after another copy saved it ready).
    fn save_session(&self, _id: &str, _record: &SessionRecord, _ttl: std::time::Duration) {}

    /// Keeps session `id`'s state, as it is stored, for `ttl` from now;
    /// writes `record` (as [`save_session`](Self::save_session) does) only
    /// when none is stored (it lapsed, or the store lost it). A copy
    /// renews what it holds while its client uses it: a renewal never
    /// writes its copy's state over a newer one another copy saved. Never
    /// waits. The default saves `record`, for a store that cannot tell.
    fn renew_session(&self, id: &str, record: &SessionRecord, ttl: std::time::Duration) {
        self.save_session(id, record, ttl);
    }

    /// Adds `uri` to session `id`'s subscriptions (`on`), or removes it,
    /// kept as long as the session's state. Never waits: the write is
    /// queued, in order with [`save_session`](Self::save_session).
    fn save_subscription(&self, _id: &str, _uri: &str, _on: bool, _ttl: std::time::Duration) {}

    /// Notes that a copy of session `id` sent the client request numbered
    /// `request` (an elicitation, a sampling, a roots request), whose
    /// response may reach another process: kept for `ttl` (the client
    /// request timeout). Never waits: the write is queued, in order with
    /// the others.
    fn save_client_request(&self, _id: &str, _request: u64, _ttl: std::time::Duration) {}

    /// Hands the client's `response` to request `request` of session
    /// `id`, which reached this process and not the copy that asked, to
    /// that copy. The default announces it
    /// ([`BusMessage::ClientResponse`]). A store that notes requests
    /// ([`save_client_request`](Self::save_client_request)) announces it
    /// only for a request noted and not yet answered, so that a client
    /// cannot make every process read what it sends; and it keeps it for
    /// `ttl` (the newest few, and none too large to keep), so that the
    /// copy that asked takes it though it missed the announcement
    /// ([`load_client_responses`](Self::load_client_responses)). Never
    /// waits.
    fn hand_client_response(
        &self,
        id: &str,
        _request: u64,
        response: &str,
        _ttl: std::time::Duration,
    ) {
        self.publish(BusMessage::ClientResponse {
            session: id.to_owned(),
            message: response.to_owned(),
        });
    }

    /// The client's responses kept for session `id`
    /// ([`hand_client_response`](Self::hand_client_response)) whose time
    /// has not run out, each as the client wrote it (one JSON-RPC
    /// response): read by a copy after a [gap](Inbox::gap). The default
    /// keeps none.
    fn load_client_responses<'a>(
        &'a self,
        _id: &'a str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Vec<String>> + Send + 'a>> {
        Box::pin(async { Vec::new() })
    }

    /// Forgets session `id`, its subscriptions and its stream's claim.
    /// Never waits. A store that can keeps [`SessionRecord::ended_mark`] in its
    /// place for a while (as [`load_session`](Self::load_session) gives
    /// it back), and writes no save or renewal over it.
    fn remove_session(&self, _id: &str) {}

    /// Claims session `id`'s `GET` stream for the stream named `claim`
    /// (unique per stream) on this process, for `lease` from now; claiming
    /// again with the same `claim` renews it. At most one stream of the
    /// deployment holds it. The claim is free when it lapsed, when the
    /// process holding it is gone, or when it is this process's own (the
    /// caller holds no stream for the session any more). The default, for
    /// a bus that shares no sessions, grants every claim (the process
    /// decides alone).
    fn claim_stream<'a>(
        &'a self,
        _id: &'a str,
        _claim: &'a str,
        _lease: std::time::Duration,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = StreamClaim> + Send + 'a>> {
        Box::pin(async { StreamClaim::Granted })
    }

    /// Gives up the claim named `claim` of session `id`'s `GET` stream (it
    /// closed), if it still holds it. Never waits.
    fn release_stream(&self, _id: &str, _claim: &str) {}

    /// Session `id`'s state, if the deployment keeps it: read when a
    /// request names a session this process does not have (one of the two
    /// places a request waits for the bus, with
    /// [`claim_stream`](Self::claim_stream)).
    fn load_session<'a>(
        &'a self,
        _id: &'a str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<SessionRecord>> + Send + 'a>>
    {
        Box::pin(async { None })
    }
}

/// One process, no peers: publishing sends nothing. The default.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalBus;

impl Bus for LocalBus {
    fn publish(&self, _message: BusMessage) {}

    fn start(&self, _inbox: Inbox) {}
}
