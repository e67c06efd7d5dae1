//! [`RedisBus`]: the processes of a deployment share announcements through
//! Redis pub/sub, and [`SharedResource`](crate::SharedResource) contents
//! through a Redis hash.
//!
//! Two tasks run per process, both reconnecting by themselves:
//! - the publisher takes messages from a bounded queue (publishing never
//!   waits: a full queue drops the message, logged) and sends each with
//!   `PUBLISH` on the deployment's channel; a content also goes into the
//!   deployment's hash (`HSET`), in the same round trip;
//! - the subscriber listens on the channel and delivers what the other
//!   processes published (its own messages, tagged with this process's
//!   random origin, are skipped: this process delivered them itself).
//!   Each time it (re)subscribes it reads the hash and gives every shared
//!   resource the deployment's content; after a lost connection it also
//!   tells every stream of a [gap](super::Inbox::gap), since messages sent
//!   meanwhile were lost.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ::redis::AsyncCommands;
use futures_core::Stream;
use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, mpsc};

use super::{Bus, BusMessage, Inbox};

/// How many messages wait for the publisher at most.
const QUEUE: usize = 4096;
/// The longest wait between two attempts to reach Redis.
const MOST_BACKOFF: Duration = Duration::from_secs(2);

/// Why a [`RedisBus`] could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedisBusError {
    /// The URL is not a Redis URL (`redis://host:port/db`).
    #[error("not a Redis URL: {0}")]
    Url(String),
    /// It was made outside a tokio runtime (its tasks need one).
    #[error("a RedisBus must be made inside a tokio runtime")]
    NoRuntime,
}

/// A [`Bus`] through Redis (feature `redis`): pub/sub for announcements,
/// a hash for shared contents. Make it inside the tokio runtime the server
/// runs on; it connects, and reconnects, by itself, and never makes a
/// request wait for Redis. While Redis is down, announcements reach only
/// the streams of the process that made them; when it is back, every
/// process tells its streams of the gap (every list changed, every
/// resource was updated) and takes the shared contents again.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use clawmcp::bus::RedisBus;
///
/// let bus = RedisBus::connect("redis://127.0.0.1:6379/", "my-deployment")?;
/// let server = clawmcp::Server::builder().bus(bus).build()?;
/// # let _ = server; Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisBus(Arc<Shared>);

struct Shared {
    /// This process's tag on what it publishes.
    origin: u64,
    queue: mpsc::Sender<BusMessage>,
    inbox: OnceLock<Inbox>,
    started: Notify,
}

impl std::fmt::Debug for RedisBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBus")
            .field("origin", &self.0.origin)
            .finish()
    }
}

/// A message as it travels.
#[derive(Serialize, Deserialize)]
struct Envelope {
    origin: u64,
    message: BusMessage,
}

impl RedisBus {
    /// A bus on the Redis server at `url`, for the processes that share
    /// `deployment` (its channel is `clawmcp:{deployment}:changes`, its
    /// hash of contents `clawmcp:{deployment}:contents`). Starts its tasks
    /// on the current tokio runtime; Redis need not be up yet.
    pub fn connect(url: &str, deployment: &str) -> Result<Self, RedisBusError> {
        let client = ::redis::Client::open(url).map_err(|e| RedisBusError::Url(e.to_string()))?;
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| RedisBusError::NoRuntime)?;
        let mut origin = [0u8; 8];
        getrandom::fill(&mut origin).map_err(|e| RedisBusError::Url(e.to_string()))?;
        let (queue, outbound) = mpsc::channel(QUEUE);
        let shared = Arc::new(Shared {
            origin: u64::from_le_bytes(origin),
            queue,
            inbox: OnceLock::new(),
            started: Notify::new(),
        });
        let names = Names {
            channel: format!("clawmcp:{deployment}:changes"),
            contents: format!("clawmcp:{deployment}:contents"),
        };
        runtime.spawn(publish(
            client.clone(),
            names.clone(),
            shared.origin,
            outbound,
        ));
        runtime.spawn(subscribe(client, names, shared.clone()));
        Ok(Self(shared))
    }
}

impl Bus for RedisBus {
    fn publish(&self, message: BusMessage) {
        if self.0.queue.try_send(message).is_err() {
            tracing::warn!("the Redis bus's queue is full: an announcement is dropped");
        }
    }

    fn start(&self, inbox: Inbox) {
        let _ = self.0.inbox.set(inbox);
        self.0.started.notify_one();
    }
}

#[derive(Clone)]
struct Names {
    channel: String,
    contents: String,
}

/// The publisher: each queued message, in order, once Redis takes it.
async fn publish(
    client: ::redis::Client,
    names: Names,
    origin: u64,
    mut outbound: mpsc::Receiver<BusMessage>,
) {
    let mut connection = None;
    let mut backoff = Duration::from_millis(50);
    while let Some(message) = outbound.recv().await {
        let Ok(payload) = serde_json::to_string(&Envelope {
            origin,
            message: message.clone(),
        }) else {
            continue;
        };
        loop {
            let manager = match &mut connection {
                Some(manager) => manager,
                None => match ::redis::aio::ConnectionManager::new(client.clone()).await {
                    Ok(manager) => connection.insert(manager),
                    Err(e) => {
                        tracing::warn!("the Redis bus cannot reach Redis: {e}");
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(MOST_BACKOFF);
                        continue;
                    }
                },
            };
            let mut pipe = ::redis::pipe();
            if let BusMessage::ResourceContent { uri, content } = &message {
                pipe.hset(&names.contents, uri, content).ignore();
            }
            pipe.publish(&names.channel, &payload).ignore();
            match pipe.query_async::<()>(manager).await {
                Ok(()) => {
                    backoff = Duration::from_millis(50);
                    break;
                }
                Err(e) => {
                    tracing::warn!("the Redis bus could not publish (retrying): {e}");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MOST_BACKOFF);
                }
            }
        }
    }
}

/// The subscriber: the other processes' messages, and the shared contents
/// each time it (re)subscribes.
async fn subscribe(client: ::redis::Client, names: Names, shared: Arc<Shared>) {
    let inbox = loop {
        if let Some(inbox) = shared.inbox.get() {
            break inbox.clone();
        }
        shared.started.notified().await;
    };
    let mut subscribed_before = false;
    let mut backoff = Duration::from_millis(50);
    loop {
        match listen(&client, &names, shared.origin, &inbox, subscribed_before).await {
            Ok(()) => {
                tracing::warn!("the Redis bus lost its subscription: reconnecting");
                backoff = Duration::from_millis(50);
            }
            Err(e) => tracing::warn!("the Redis bus cannot subscribe (retrying): {e}"),
        }
        subscribed_before = true;
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MOST_BACKOFF);
    }
}

/// One subscription, to its end (`Ok` when Redis closed it).
async fn listen(
    client: &::redis::Client,
    names: &Names,
    origin: u64,
    inbox: &Inbox,
    after_a_gap: bool,
) -> ::redis::RedisResult<()> {
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub.subscribe(&names.channel).await?;
    // Subscribed first, then the contents read: no content set in between
    // is missed.
    let mut connection = client.get_multiplexed_async_connection().await?;
    let contents: HashMap<String, String> = connection.hgetall(&names.contents).await?;
    drop(connection);
    if after_a_gap {
        inbox.gap();
    }
    for (uri, content) in contents {
        inbox.deliver(BusMessage::ResourceContent { uri, content });
    }
    tracing::info!(channel = %names.channel, "the Redis bus is subscribed");
    let mut messages = pubsub.into_on_message();
    while let Some(message) = std::future::poll_fn(|cx| Pin::new(&mut messages).poll_next(cx)).await
    {
        let Ok(payload) = message.get_payload::<String>() else {
            continue;
        };
        match serde_json::from_str::<Envelope>(&payload) {
            Ok(envelope) if envelope.origin != origin => inbox.deliver(envelope.message),
            Ok(_) => {}
            Err(e) => tracing::warn!("the Redis bus skipped a message it cannot read: {e}"),
        }
    }
    Ok(())
}
