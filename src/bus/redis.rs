//! [`RedisBus`]: the processes of a deployment share announcements through
//! Redis pub/sub, and [`SharedResource`](crate::SharedResource) contents
//! through a Redis hash.
//!
//! Two tasks run per process, both reconnecting by themselves:
//! - the publisher takes messages from a bounded queue (publishing never
//!   waits: a queue full, of [`QUEUE`] messages or [`QUEUE_BYTES`] bytes,
//!   drops the message, logged, unless it is a session's end, which waits
//!   apart) and sends each with
//!   `PUBLISH` on the deployment's channel; a content also goes into the
//!   deployment's hash (`HSET`), in the same round trip;
//! - the subscriber reads the channel and delivers what the other
//!   processes published (its own messages, tagged with this process's
//!   random origin, are skipped: this process delivered them itself).
//!   Each time it (re)subscribes it reads the hash and gives every shared
//!   resource the deployment's content; after a lost connection it also
//!   tells every stream of a [gap](super::Inbox::gap), since messages sent
//!   meanwhile were lost.
//!
//! Sessions are shared: each Streamable HTTP session's state is a key
//! (`clawmcp:{deployment}:session:{id}`, JSON, expiring after the
//! endpoint's session idle timeout), written by the publisher in order
//! with the messages through one script (a renewal only extends a stored
//! state's life, and readiness never goes back), and read when a process
//! is asked for a session it does not have. An ended session's key holds
//! its mark ([`SessionRecord::ended_mark`]) for [`ENDED_KEPT`], which no save
//! overwrites. Its subscriptions are a set beside it
//! (`…:session:{id}:subscriptions`, one `SADD` or `SREM` a change, so a
//! change costs the same however many it holds), and the process holding
//! its `GET` stream is named by a key (`…:session:{id}:stream`, set and
//! given up only by its holder, through scripts). The requests its copies
//! sent the client are noted in a sorted set (`…:session:{id}:asked`, each
//! scored by its deadline), and a client's response to one that reached
//! another process is kept in another (`…:session:{id}:responses`), for
//! a copy that missed its announcement. Each process keeps a
//! key of its own alive (`clawmcp:{deployment}:process:{origin}`, renewed
//! every second, gone [`LIVENESS`] after the process): a claim whose
//! holder's key is gone is free, for a process that has kept its own key
//! for [`JUDGES_AFTER`] (so that, after Redis was away, every live
//! process has set its key again before any is judged gone).

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, PoisonError};
use std::time::Duration;

use ::redis::AsyncCommands;
use futures_core::Stream;
use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, mpsc};

use super::{Bus, BusMessage, Inbox, SessionRecord, StreamClaim};

/// How many messages wait for the publisher at most.
const QUEUE: usize = 4096;
/// How many bytes of messages wait for the publisher at most (a client's
/// response or a shared content can be large).
const QUEUE_BYTES: usize = 64 << 20;
/// How many sessions' ends wait apart at most while the queue is full
/// ([`Outbound::must_arrive`]).
const KEPT_APART: usize = 1 << 16;
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
/// a hash for shared contents, a key per Streamable HTTP session (so that
/// any process serves any session). Make it inside the tokio runtime the
/// server runs on; it connects, and reconnects, by itself. Announcements
/// never wait for Redis. A request does to load a session another process
/// made (at most 2 s a try), to claim a session's `GET` stream (at most
/// 2 s), and, for a task, to read or write the task's record (its
/// [`task_store`](Self::task_store)).
/// While Redis is down, announcements reach only the streams of the
/// process that made them; when it is back, every process tells its
/// streams of the gap (every list changed, every resource was updated)
/// and takes the shared contents again.
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
    queue: mpsc::Sender<Outbound>,
    /// The bytes of what waits in `queue` ([`Outbound::bytes`]).
    queued_bytes: Arc<AtomicUsize>,
    /// What must reach Redis though `queue` was full when it came (a
    /// session's end, [`Outbound::must_arrive`]): the publisher takes it
    /// before the queue's next message.
    kept_apart: std::sync::Mutex<std::collections::VecDeque<Outbound>>,
    inbox: OnceLock<Inbox>,
    started: Notify,
    client: ::redis::Client,
    names: Names,
    /// The connection session states are read on, once made.
    reader: tokio::sync::OnceCell<::redis::aio::ConnectionManager>,
    /// Since when this process's liveness key has been renewed without a
    /// miss, and when last (`None`: its last renewal failed, or none was
    /// made yet).
    live_since: std::sync::Mutex<Option<(std::time::Instant, std::time::Instant)>>,
    /// The runners of the tasks this process runs, which every task store
    /// on this bus shares: the process, not a store, runs a task.
    task_runners: Arc<crate::task::Runners>,
    /// The runtime the bus was made in, where its task stores start theirs
    /// too.
    runtime: tokio::runtime::Handle,
}

/// What the publisher sends, in order.
enum Outbound {
    Publish(BusMessage),
    /// A session's state (`SAVE`).
    SaveSession {
        id: String,
        json: String,
        /// The same record ready, when `json`'s is not.
        ready_json: Option<String>,
        ttl: Duration,
        /// Only renew what is stored, if anything is.
        renewal: bool,
    },
    SaveSubscription {
        id: String,
        uri: String,
        on: bool,
        ttl: Duration,
    },
    /// A request a copy of a session sent its client.
    SaveClientRequest {
        id: String,
        request: u64,
        ttl: Duration,
    },
    /// The client's response to it, which reached another process
    /// (`HAND_RESPONSE`): kept unless too large to keep, and announced as
    /// `announcement`.
    HandClientResponse {
        id: String,
        request: u64,
        kept: Option<String>,
        announcement: String,
        ttl: Duration,
        /// How many times it found no note ([`HAND_AGAIN`]).
        tries: usize,
    },
    RemoveSession(String),
    /// Answered once everything queued before it is written.
    Written(tokio::sync::oneshot::Sender<()>),
    ReleaseStream {
        id: String,
        claim: String,
    },
}

impl Outbound {
    /// Whether it must reach Redis though the queue is full: a session's
    /// end (its mark, and its news), lest another process keep serving a
    /// session its client ended.
    fn must_arrive(&self) -> bool {
        matches!(
            self,
            Outbound::RemoveSession(_) | Outbound::Publish(BusMessage::SessionEnded { .. })
        )
    }

    /// The bytes it holds, as [`QUEUE_BYTES`] counts them.
    fn bytes(&self) -> usize {
        match self {
            Outbound::Publish(message) => match message {
                BusMessage::ResourceUpdated { uri } => uri.len(),
                BusMessage::ResourceContent { uri, content } => uri.len() + content.len(),
                BusMessage::ListChanged { .. } => 0,
                BusMessage::SessionChanged { id } | BusMessage::SessionEnded { id } => id.len(),
                BusMessage::LogLevelChanged { session, .. } => session.len(),
                BusMessage::SubscriptionChanged { session, uri, .. } => session.len() + uri.len(),
                BusMessage::ClientResponse { session, message } => session.len() + message.len(),
            },
            Outbound::SaveSession {
                json, ready_json, ..
            } => json.len() + ready_json.as_ref().map_or(0, String::len),
            Outbound::SaveSubscription { id, uri, .. } => id.len() + uri.len(),
            Outbound::SaveClientRequest { id, .. } | Outbound::RemoveSession(id) => id.len(),
            Outbound::HandClientResponse {
                kept, announcement, ..
            } => kept.as_ref().map_or(0, String::len) + announcement.len(),
            Outbound::Written(_) => 0,
            Outbound::ReleaseStream { id, claim } => id.len() + claim.len(),
        }
    }
}

/// Sets the stream's claim to `ARGV[1]` (`origin:claim`) for `ARGV[2]`
/// milliseconds when it is free: unset, this very claim (a renewal), a
/// claim of this process (`ARGV[5]`, whose caller holds no stream for the
/// session), or one whose process's liveness key (`ARGV[3]` and the
/// holder's origin) is gone, when this process can tell (`ARGV[6]` = `1`,
/// [`RedisBus::judges_liveness`]): 1, else 0. A claim also renews the claimer's
/// own liveness key (for `ARGV[4]` milliseconds), so that it holds from
/// the claim on, even right after Redis lost its keys.
const CLAIM: &str = r"
local holder = redis.call('GET', KEYS[1])
local free = holder == false or holder == ARGV[1]
if not free then
  local origin = string.match(holder, '^([^:]*)')
  free = origin == ARGV[5]
    or (ARGV[6] == '1' and redis.call('EXISTS', ARGV[3] .. origin) == 0)
end
if free then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  redis.call('SET', ARGV[3] .. ARGV[5], 1, 'PX', ARGV[4])
  return 1
end
return 0";

/// Lua that reads the session state stored at `KEYS[1]` into `stored`
/// (its text, or `false`: none, or a key of another type) and `old` (the
/// state decoded, or `nil`), and sets `ended` when it is an ended
/// session's mark.
macro_rules! read_stored {
    () => {
        r"
local stored = redis.pcall('GET', KEYS[1])
if type(stored) ~= 'string' then stored = false end
local old = nil
if stored then
  local read, decoded = pcall(cjson.decode, stored)
  if read and type(decoded) == 'table' then old = decoded end
end
local ended = old ~= nil and old.ended == true
"
    };
}

/// Writes a session's state `ARGV[1]` (`KEYS[1]`) for `ARGV[2]`
/// milliseconds, with its subscriptions (`KEYS[2]`). A renewal
/// (`ARGV[4]` = `1`) of a state that is stored only extends its life.
/// Readiness never goes back: a record not ready over a stored one that
/// is ready is written as `ARGV[3]`, the same record ready. Nothing is
/// written over a session that ended (a renewal extends its mark's life,
/// never shortens it). 1 when it wrote, 0 when it did not, [`ENDED`] when
/// the session ended.
const SAVE: &str = concat!(
    read_stored!(),
    r"
if ended then
  if ARGV[4] == '1' and redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  return -1
end
if stored and ARGV[4] == '1' then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  return 0
end
local record = ARGV[1]
if old and ARGV[3] ~= '' and old.ready == true then
  record = ARGV[3]
end
redis.call('SET', KEYS[1], record, 'PX', ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1"
);

/// What [`SAVE`] and [`SUBSCRIBE`] answer for a session that ended: the
/// copy that wrote ends too, as if it had heard
/// [`BusMessage::SessionEnded`] (which it may have missed while the bus was
/// away).
const ENDED: i64 = -1;

/// Adds (`ARGV[2]` = `1`) or removes the subscription `ARGV[1]` of the
/// session stored at `KEYS[1]` to its set `KEYS[2]`, kept for `ARGV[3]`
/// milliseconds; nothing for a session that ended. 1 when it wrote,
/// [`ENDED`] when the session ended.
const SUBSCRIBE: &str = concat!(
    read_stored!(),
    r"
if ended then return -1 end
-- (A set of another type stays as it is: no write of its can succeed.)
if ARGV[2] == '1' then
  redis.pcall('SADD', KEYS[2], ARGV[1])
else
  redis.pcall('SREM', KEYS[2], ARGV[1])
end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1"
);

/// Lua that sets `now` to Redis's clock, in milliseconds: the deadlines
/// of noted requests and kept responses are on it.
macro_rules! redis_now {
    () => {
        r"
local clock = redis.call('TIME')
local now = clock[1] * 1000 + math.floor(clock[2] / 1000)
"
    };
}

/// Notes request `ARGV[1]` in the sorted set `KEYS[1]`, due in `ARGV[2]`
/// milliseconds (its score is its deadline), and forgets those past
/// theirs: the set holds the requests sent within the client request
/// timeout, the newest [`REQUESTS_NOTED`] (`ARGV[3]`) at most.
const NOTE_REQUEST: &str = concat!(
    redis_now!(),
    r"
redis.pcall('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + ARGV[2], ARGV[1])
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -1 - ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1"
);

/// Hands the client's response to request `ARGV[1]`, when the request is
/// noted in `KEYS[1]` and not past its deadline: keeps `ARGV[2]` (unless
/// empty) in the sorted set `KEYS[2]` for `ARGV[3]` milliseconds (its
/// score is its deadline), the newest [`RESPONSES_KEPT`] (`ARGV[4]`) at
/// most; the note goes, so a request's response is handed once; then it
/// publishes `ARGV[6]` on channel `ARGV[5]`. The writes come before the
/// announcement: a write Redis refuses for now stops the script before
/// anything is announced, and the script sent again announces once. 1
/// when it handed the response, else 0.
const HAND_RESPONSE: &str = concat!(
    redis_now!(),
    r"
local due = redis.pcall('ZSCORE', KEYS[1], ARGV[1])
if type(due) ~= 'string' or tonumber(due) <= now then return 0 end
if ARGV[2] ~= '' then
  redis.pcall('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  redis.call('ZADD', KEYS[2], now + ARGV[3], ARGV[2])
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -1 - ARGV[4])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 1"
);

/// The responses kept in the sorted set `KEYS[1]` whose deadline has not
/// passed (none, for a key of another type).
const KEPT_RESPONSES: &str = concat!(
    redis_now!(),
    r"
local kept = redis.pcall('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')
if type(kept) ~= 'table' or kept.err then return {} end
return kept"
);

/// How many of a session's client responses are kept at most (the newest).
const RESPONSES_KEPT: usize = 16;
/// The largest client response kept (a larger one is only announced).
const RESPONSE_KEPT_BYTES: usize = 1 << 20;
/// How many requests to the client a session has noted at most (the
/// newest).
const REQUESTS_NOTED: usize = 1024;

/// How long an ended session's mark ([`SessionRecord::ended_mark`]) stays in
/// its key's place: longer than an outage of the bus that a copy which
/// missed the news recovers from, short enough that a deployment whose
/// clients end many sessions keeps few marks.
const ENDED_KEPT: Duration = Duration::from_secs(10 * 60);

/// How long a process's liveness key outlives its last renewal.
const LIVENESS: Duration = Duration::from_secs(LIVENESS_MS / 1000);
/// The same, in milliseconds (for the task store's scripts).
pub(super) const LIVENESS_MS: u64 = 5000;
/// How often a process renews its liveness key.
const BEAT: Duration = Duration::from_secs(1);
/// How long a process keeps its own liveness key without a miss before
/// it takes another's missing key for a process gone
/// ([`RedisBus::judges_liveness`]).
const JUDGES_AFTER: Duration = Duration::from_secs(2 * LIVENESS_MS / 1000);

/// Deletes the stream's claim when the claim `ARGV[1]` (`origin:claim`)
/// holds it.
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0";

/// How long a claim of a stream may wait for Redis.
const CLAIM_PATIENCE: Duration = Duration::from_secs(2);

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl std::fmt::Debug for RedisBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBus")
            .field("origin", &self.0.origin)
            .finish()
    }
}

/// A message as it travels, stamped with the process it comes from.
#[derive(Serialize, Deserialize)]
struct Stamped {
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
        let names = Names {
            channel: format!("clawmcp:{deployment}:changes"),
            contents: format!("clawmcp:{deployment}:contents"),
            sessions: format!("clawmcp:{deployment}:session:"),
            processes: format!("clawmcp:{deployment}:process:"),
        };
        let shared = Arc::new(Shared {
            origin: u64::from_le_bytes(origin),
            queue,
            queued_bytes: Arc::default(),
            kept_apart: std::sync::Mutex::default(),
            inbox: OnceLock::new(),
            started: Notify::new(),
            client: client.clone(),
            names: names.clone(),
            reader: tokio::sync::OnceCell::new(),
            live_since: std::sync::Mutex::new(None),
            task_runners: Arc::default(),
            runtime: runtime.clone(),
        });
        runtime.spawn(publish(
            client.clone(),
            names.clone(),
            (shared.origin, Arc::downgrade(&shared)),
            (outbound, shared.queued_bytes.clone()),
        ));
        runtime.spawn(beat(
            client.clone(),
            format!("{}{}", names.processes, shared.origin),
            Arc::downgrade(&shared),
        ));
        runtime.spawn(subscribe(client, names, shared.clone()));
        Ok(Self(shared))
    }
}

impl RedisBus {
    fn queue(&self, outbound: Outbound) {
        self.0.enqueue(outbound);
    }
}

impl Shared {
    /// Queues `outbound` for the publisher, or drops it (logged) when the
    /// queue holds [`QUEUE`] messages or [`QUEUE_BYTES`] bytes: a message
    /// larger than that is never sent.
    ///
    /// A session's end is never dropped: it waits apart, and goes before
    /// the queue's next message. (Its order does not matter: no save or
    /// renewal writes over the mark it leaves.)
    fn enqueue(&self, outbound: Outbound) {
        let bytes = outbound.bytes();
        let queued = &self.queued_bytes;
        let refused = if queued.fetch_add(bytes, Ordering::Relaxed) + bytes > QUEUE_BYTES {
            Some(outbound)
        } else {
            match self.queue.try_send(outbound) {
                Ok(()) => None,
                Err(mpsc::error::TrySendError::Full(outbound)) => Some(outbound),
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    // The publisher is gone: nothing is sent any more.
                    queued.fetch_sub(bytes, Ordering::Relaxed);
                    None
                }
            }
        };
        let Some(outbound) = refused else {
            return;
        };
        queued.fetch_sub(bytes, Ordering::Relaxed);
        let mut apart = self
            .kept_apart
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if outbound.must_arrive() && apart.len() < KEPT_APART {
            tracing::warn!("the Redis bus's queue is full: a session's end waits apart");
            apart.push_back(outbound);
        } else {
            tracing::warn!("the Redis bus's queue is full: a message is dropped");
        }
    }

    /// The oldest message kept apart ([`Shared::kept_apart`]), if any.
    fn take_kept_apart(&self) -> Option<Outbound> {
        let mut apart = self
            .kept_apart
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        apart.pop_front()
    }
}

impl Bus for RedisBus {
    fn publish(&self, message: BusMessage) {
        self.queue(Outbound::Publish(message));
    }

    fn start(&self, inbox: Inbox) {
        let _ = self.0.inbox.set(inbox);
        self.0.started.notify_one();
    }

    fn shares_sessions(&self) -> bool {
        true
    }

    fn save_session(&self, id: &str, record: &SessionRecord, ttl: Duration) {
        self.queue_save(id, record, ttl, false);
    }

    fn renew_session(&self, id: &str, record: &SessionRecord, ttl: Duration) {
        self.queue_save(id, record, ttl, true);
    }

    fn save_subscription(&self, id: &str, uri: &str, on: bool, ttl: Duration) {
        self.queue(Outbound::SaveSubscription {
            id: id.to_owned(),
            uri: uri.to_owned(),
            on,
            ttl,
        });
    }

    fn save_client_request(&self, id: &str, request: u64, ttl: Duration) {
        self.queue(Outbound::SaveClientRequest {
            id: id.to_owned(),
            request,
            ttl,
        });
    }

    fn hand_client_response(&self, id: &str, request: u64, response: &str, ttl: Duration) {
        let announcement = serde_json::to_string(&Stamped {
            origin: self.0.origin,
            message: BusMessage::ClientResponse {
                session: id.to_owned(),
                message: response.to_owned(),
            },
        });
        match announcement {
            Ok(announcement) => self.queue(Outbound::HandClientResponse {
                id: id.to_owned(),
                request,
                kept: (response.len() <= RESPONSE_KEPT_BYTES).then(|| response.to_owned()),
                announcement,
                ttl,
                tries: 0,
            }),
            Err(e) => tracing::warn!("a client's response cannot be handed on: {e}"),
        }
    }

    fn remove_session(&self, id: &str) {
        self.queue(Outbound::RemoveSession(id.to_owned()));
    }

    fn claim_stream<'a>(
        &'a self,
        id: &'a str,
        claim: &'a str,
        lease: Duration,
    ) -> Pin<Box<dyn std::future::Future<Output = StreamClaim> + Send + 'a>> {
        Box::pin(async move {
            // Tried again while there is time: a connection that Redis
            // dropped (a restart) fails once, then reconnects.
            let claim = async {
                let mut wait = Duration::from_millis(20);
                loop {
                    let tried = async {
                        let mut connection = self.reader().await?;
                        let key = format!("{}{id}:stream", self.0.names.sessions);
                        ::redis::cmd("EVAL")
                            .arg(CLAIM)
                            .arg(1)
                            .arg(key)
                            .arg(format!("{}:{claim}", self.0.origin))
                            .arg(millis(lease).max(1))
                            .arg(&self.0.names.processes)
                            .arg(millis(LIVENESS))
                            .arg(self.0.origin.to_string())
                            .arg(if self.judges_liveness() { "1" } else { "0" })
                            .query_async::<i64>(&mut connection)
                            .await
                            .map_err(|e| e.to_string())
                    };
                    match tried.await {
                        Ok(claimed) => return Ok::<i64, String>(claimed),
                        Err(e) => tracing::debug!("claiming a session's stream failed: {e}"),
                    }
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_millis(500));
                }
            };
            match tokio::time::timeout(CLAIM_PATIENCE, claim).await {
                Ok(Ok(1)) => StreamClaim::Granted,
                Ok(Ok(_)) => StreamClaim::HeldElsewhere,
                Ok(Err(e)) => {
                    tracing::warn!("the Redis bus cannot claim a session's stream: {e}");
                    StreamClaim::Unknown
                }
                Err(_) => {
                    tracing::warn!("the Redis bus could not claim a session's stream in time");
                    StreamClaim::Unknown
                }
            }
        })
    }

    fn release_stream(&self, id: &str, claim: &str) {
        self.queue(Outbound::ReleaseStream {
            id: id.to_owned(),
            claim: claim.to_owned(),
        });
    }

    fn load_session<'a>(
        &'a self,
        id: &'a str,
    ) -> Pin<Box<dyn std::future::Future<Output = Option<SessionRecord>> + Send + 'a>> {
        Box::pin(async move {
            let key = format!("{}{id}", self.0.names.sessions);
            let mut query = ::redis::pipe();
            query.get(&key).smembers(format!("{key}:subscriptions"));
            let read = self.read::<(Option<String>, Vec<String>)>(&query).await;
            let (json, subscriptions) = match read {
                Ok(read) => read,
                Err(e) => {
                    tracing::warn!("the Redis bus cannot read a session: {e}");
                    return None;
                }
            };
            let mut record: SessionRecord = serde_json::from_str(&json?).ok()?;
            record.subscriptions = subscriptions;
            Some(record)
        })
    }

    fn load_client_responses<'a>(
        &'a self,
        id: &'a str,
    ) -> Pin<Box<dyn std::future::Future<Output = Vec<String>> + Send + 'a>> {
        Box::pin(async move {
            let mut query = ::redis::pipe();
            query
                .cmd("EVAL")
                .arg(KEPT_RESPONSES)
                .arg(1)
                .arg(format!("{}{id}:responses", self.0.names.sessions));
            match self.read::<(Vec<String>,)>(&query).await {
                Ok((kept,)) => kept,
                Err(e) => {
                    tracing::warn!("the Redis bus cannot read a session's client responses: {e}");
                    Vec::new()
                }
            }
        })
    }
}

impl RedisBus {
    /// What `query` reads, tried three times: a connection that Redis
    /// dropped (a restart) fails once, then reconnects.
    async fn read<T: ::redis::FromRedisValue>(
        &self,
        query: &::redis::Pipeline,
    ) -> Result<T, String> {
        let mut read = Err(String::new());
        for wait in [0, 20, 100] {
            tokio::time::sleep(Duration::from_millis(wait)).await;
            let mut connection = match self.reader().await {
                Ok(connection) => connection,
                Err(e) => {
                    read = Err(e);
                    continue;
                }
            };
            read = query
                .query_async::<T>(&mut connection)
                .await
                .map_err(|e| e.to_string());
            if read.is_ok() {
                break;
            }
        }
        read
    }
}

impl RedisBus {
    /// Queues a write of session `id`'s state (`SAVE`): a save, or a
    /// `renewal` that writes only what is not stored.
    fn queue_save(&self, id: &str, record: &SessionRecord, ttl: Duration, renewal: bool) {
        let ready_json = if record.ready {
            Ok(None)
        } else {
            let ready = SessionRecord {
                ready: true,
                ..record.clone()
            };
            serde_json::to_string(&ready).map(Some)
        };
        match (serde_json::to_string(record), ready_json) {
            (Ok(json), Ok(ready_json)) => self.queue(Outbound::SaveSession {
                id: id.to_owned(),
                json,
                ready_json,
                ttl,
                renewal,
            }),
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!("a session's state cannot be written: {e}");
            }
        }
    }

    /// The task store's names: the deployment's key prefix, and this
    /// process's liveness key.
    pub(super) fn task_names(&self) -> (String, String) {
        let names = &self.0.names;
        let prefix = names
            .channel
            .strip_suffix("changes")
            .unwrap_or(&names.channel)
            .to_owned();
        (prefix, format!("{}{}", names.processes, self.0.origin))
    }

    /// The connection states are read and written on.
    pub(super) async fn connection(&self) -> Result<::redis::aio::ConnectionManager, String> {
        self.reader().await
    }

    /// The runners of the tasks this process runs.
    pub(super) fn task_runners(&self) -> Arc<crate::task::Runners> {
        self.0.task_runners.clone()
    }

    /// The runtime the bus was made in.
    pub(super) fn runtime(&self) -> &tokio::runtime::Handle {
        &self.0.runtime
    }

    /// The Redis client, for a subscription of its own.
    pub(super) fn client(&self) -> ::redis::Client {
        self.0.client.clone()
    }

    /// Whether a missing liveness key says its process is gone: this
    /// process has kept its own key for [`JUDGES_AFTER`] without a miss,
    /// its last renewal a moment ago, so that every live process has had
    /// the time to reconnect and set its key again since Redis was last
    /// away (or since this process started). A live process whose own
    /// reconnection takes longer may be judged gone.
    pub(super) fn judges_liveness(&self) -> bool {
        let kept = *self
            .0
            .live_since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.is_some_and(|(since, last)| {
            since.elapsed() >= JUDGES_AFTER && last.elapsed() < LIVENESS - BEAT
        })
    }

    /// The connection session states and claims are read on.
    async fn reader(&self) -> Result<::redis::aio::ConnectionManager, String> {
        let shared = &self.0;
        shared
            .reader
            .get_or_try_init(|| ::redis::aio::ConnectionManager::new(shared.client.clone()))
            .await
            .cloned()
            .map_err(|e| e.to_string())
    }
}

#[derive(Clone)]
struct Names {
    channel: String,
    contents: String,
    /// The prefix of session keys.
    sessions: String,
    /// The prefix of the processes' liveness keys.
    processes: String,
}

/// The publisher: each queued message, in order, once Redis takes it (or
/// refuses it for good, [`refused_for_good`]).
async fn publish(
    client: ::redis::Client,
    names: Names,
    (origin, bus): (u64, std::sync::Weak<Shared>),
    (mut outbound, queued_bytes): (mpsc::Receiver<Outbound>, Arc<AtomicUsize>),
) {
    let mut connection = None;
    let mut backoff = Duration::from_millis(50);
    loop {
        let kept_apart = bus.upgrade().and_then(|shared| shared.take_kept_apart());
        let next = match kept_apart {
            Some(next) => next,
            None => match outbound.recv().await {
                Some(next) => {
                    queued_bytes.fetch_sub(next.bytes(), Ordering::Relaxed);
                    next
                }
                None => break,
            },
        };
        let mut pipe = ::redis::pipe();
        match &next {
            Outbound::Written(_) => {
                // Everything queued before it is written.
                if let Outbound::Written(written) = next {
                    let _ = written.send(());
                }
                continue;
            }
            Outbound::Publish(message) => {
                let Ok(payload) = serde_json::to_string(&Stamped {
                    origin,
                    message: message.clone(),
                }) else {
                    continue;
                };
                if let BusMessage::ResourceContent { uri, content } = message {
                    pipe.hset(&names.contents, uri, content);
                }
                pipe.publish(&names.channel, &payload);
            }
            Outbound::SaveSession {
                id,
                json,
                ready_json,
                ttl,
                renewal,
            } => {
                let key = format!("{}{id}", names.sessions);
                pipe.cmd("EVAL")
                    .arg(SAVE)
                    .arg(2)
                    .arg(&key)
                    .arg(format!("{key}:subscriptions"))
                    .arg(json)
                    .arg(millis(*ttl).max(1))
                    .arg(ready_json.as_deref().unwrap_or(""))
                    .arg(if *renewal { "1" } else { "0" });
            }
            Outbound::SaveSubscription { id, uri, on, ttl } => {
                let key = format!("{}{id}", names.sessions);
                pipe.cmd("EVAL")
                    .arg(SUBSCRIBE)
                    .arg(2)
                    .arg(&key)
                    .arg(format!("{key}:subscriptions"))
                    .arg(uri)
                    .arg(if *on { "1" } else { "0" })
                    .arg(millis(*ttl).max(1));
            }
            Outbound::SaveClientRequest { id, request, ttl } => {
                pipe.cmd("EVAL")
                    .arg(NOTE_REQUEST)
                    .arg(1)
                    .arg(format!("{}{id}:asked", names.sessions))
                    .arg(request)
                    .arg(millis(*ttl).max(1))
                    .arg(REQUESTS_NOTED);
            }
            Outbound::HandClientResponse {
                id,
                request,
                kept,
                announcement,
                ttl,
                ..
            } => {
                let key = format!("{}{id}", names.sessions);
                pipe.cmd("EVAL")
                    .arg(HAND_RESPONSE)
                    .arg(2)
                    .arg(format!("{key}:asked"))
                    .arg(format!("{key}:responses"))
                    .arg(request)
                    .arg(kept.as_deref().unwrap_or(""))
                    .arg(millis(*ttl).max(1))
                    .arg(RESPONSES_KEPT)
                    .arg(&names.channel)
                    .arg(announcement);
            }
            Outbound::RemoveSession(id) => {
                let key = format!("{}{id}", names.sessions);
                match serde_json::to_string(&SessionRecord::ended_mark()) {
                    Ok(ended) => pipe.pset_ex(&key, ended, millis(ENDED_KEPT)),
                    Err(_) => pipe.del(&key),
                };
                pipe.del(&[
                    format!("{key}:subscriptions"),
                    format!("{key}:stream"),
                    format!("{key}:asked"),
                    format!("{key}:responses"),
                ]);
            }
            Outbound::ReleaseStream { id, claim } => {
                pipe.cmd("EVAL")
                    .arg(RELEASE)
                    .arg(1)
                    .arg(format!("{}{id}:stream", names.sessions))
                    .arg(format!("{origin}:{claim}"));
            }
        }
        pipe.ignore_errors();
        // A client's response that found no note: its note may be on its
        // way still, in another process's queue.
        let mut unnoted;
        loop {
            let manager = match connected(&mut connection, &client).await {
                Ok(manager) => manager,
                Err(e) => {
                    tracing::warn!("the Redis bus cannot reach Redis: {e}");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MOST_BACKOFF);
                    continue;
                }
            };
            match pipe.query_async::<Vec<::redis::Value>>(manager).await {
                Ok(replies) => {
                    if let Outbound::SaveSession { id, .. } | Outbound::SaveSubscription { id, .. } =
                        &next
                        && replies.contains(&::redis::Value::Int(ENDED))
                    {
                        ended_here(&bus, id);
                    }
                    unnoted = matches!(next, Outbound::HandClientResponse { .. })
                        && replies == [::redis::Value::Int(0)];
                    let Some(again) = refused_for_now(&pipe, &replies) else {
                        backoff = Duration::from_millis(50);
                        break;
                    };
                    pipe = again;
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MOST_BACKOFF);
                }
                Err(e) => {
                    tracing::warn!("the Redis bus could not publish (retrying): {e}");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MOST_BACKOFF);
                }
            }
        }
        if unnoted
            && let Outbound::HandClientResponse { tries, .. } = &next
            && let Some(wait) = HAND_AGAIN.get(*tries)
        {
            hand_again(bus.clone(), next, *wait);
        }
    }
}

/// How long a client's response that found no note waits before it is
/// handed again, each time: the asking process's queue may be behind
/// (Redis was slow, or away), and its note on the way.
const HAND_AGAIN: [Duration; 3] = [
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_secs(2),
];

/// Queues `outbound`, a client's response that found no note, again
/// after `wait`, without holding up the queue meanwhile.
fn hand_again(bus: std::sync::Weak<Shared>, mut outbound: Outbound, wait: Duration) {
    if let Outbound::HandClientResponse { tries, .. } = &mut outbound {
        *tries += 1;
    }
    tokio::spawn(async move {
        tokio::time::sleep(wait).await;
        if let Some(shared) = bus.upgrade() {
            shared.enqueue(outbound);
        }
    });
}

/// Ends this process's copy of session `id`, which the store says ended
/// (a [`SAVE`] or [`SUBSCRIBE`] answered [`ENDED`]).
fn ended_here(bus: &std::sync::Weak<Shared>, id: &str) {
    if let Some(inbox) = bus.upgrade().and_then(|shared| shared.inbox.get().cloned()) {
        inbox.deliver(BusMessage::SessionEnded { id: id.to_owned() });
    }
}

/// What of `pipe` to send again, given Redis's `replies` to it: the
/// commands Redis refused for a while (loading, busy, out of memory, a
/// replica, …), alone, so that none it took runs twice; `None` when
/// nothing is left. A command refused for what it is, for good (a key of
/// another type, a script's error), is dropped with an error logged:
/// sending it again would be refused again and hold up every message
/// queued behind it.
fn refused_for_now(
    pipe: &::redis::Pipeline,
    replies: &[::redis::Value],
) -> Option<::redis::Pipeline> {
    let mut again = ::redis::pipe();
    for (command, reply) in pipe.cmd_iter().zip(replies) {
        let ::redis::Value::ServerError(error) = reply else {
            continue;
        };
        if refused_for_good(error.code(), error.details()) {
            tracing::error!("Redis refused a write of the bus for good, which is dropped: {error}");
        } else {
            tracing::warn!("Redis refused a write of the bus for now (retrying): {error}");
            again.add_command(command.clone());
        }
    }
    again.ignore_errors();
    (!again.is_empty()).then_some(again)
}

/// Whether Redis would refuse the same command again, whatever time
/// passes: a key of another type (`WRONGTYPE`), or an error raised by a
/// script. Every other refusal (`LOADING`, `BUSY`, `OOM`, `READONLY`,
/// `MISCONF`, `NOPERM`, …) depends on the server's state, which changes;
/// so does a script's error that only carries one of those (Redis before
/// 7 reports a refused `redis.call` as `ERR Error running script … -OOM
/// …`). `code` and `details` are the refusal's first word and the rest.
fn refused_for_good(code: &str, details: Option<&str>) -> bool {
    /// The refusals that pass, as a script's error carries them.
    const FOR_NOW: [&str; 9] = [
        "-OOM",
        "-READONLY",
        "-LOADING",
        "-MISCONF",
        "-BUSY",
        "-TRYAGAIN",
        "-NOREPLICAS",
        "-MASTERDOWN",
        "-CLUSTERDOWN",
    ];
    match (code, details) {
        ("WRONGTYPE", _) => true,
        ("ERR", Some(details)) => {
            details.contains("script") && !FOR_NOW.iter().any(|code| details.contains(code))
        }
        _ => false,
    }
}

/// The connection a task keeps in `slot`, made first when it has none
/// (a connection manager then reconnects by itself).
async fn connected<'c>(
    slot: &'c mut Option<::redis::aio::ConnectionManager>,
    client: &::redis::Client,
) -> Result<&'c mut ::redis::aio::ConnectionManager, ::redis::RedisError> {
    match slot {
        Some(manager) => Ok(manager),
        None => {
            let manager = ::redis::aio::ConnectionManager::new(client.clone()).await?;
            Ok(slot.insert(manager))
        }
    }
}

/// Keeps this process's liveness key alive while its bus lives; deletes
/// it when the bus is dropped.
async fn beat(client: ::redis::Client, key: String, bus: std::sync::Weak<Shared>) {
    let mut connection = None;
    let mut beats = tokio::time::interval(BEAT);
    beats.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Whether this beat renewed the key: since when it has been, unbroken.
    let renewed = |done: bool| {
        if let Some(bus) = bus.upgrade() {
            let mut since =
                (bus.live_since.lock()).unwrap_or_else(std::sync::PoisonError::into_inner);
            let now = std::time::Instant::now();
            *since = match (done, *since) {
                (true, None) => Some((now, now)),
                (true, Some((from, _))) => Some((from, now)),
                (false, _) => None,
            };
        }
    };
    loop {
        beats.tick().await;
        let alive = bus.strong_count() > 0;
        let manager = match connected(&mut connection, &client).await {
            Ok(manager) => manager,
            Err(e) => {
                tracing::debug!("the Redis bus cannot renew this process's liveness: {e}");
                renewed(false);
                continue;
            }
        };
        let done = if alive {
            manager.pset_ex::<_, _, ()>(&key, 1, millis(LIVENESS)).await
        } else {
            manager.del::<_, ()>(&key).await
        };
        if let Err(e) = &done {
            tracing::debug!("the Redis bus cannot renew this process's liveness: {e}");
        }
        renewed(done.is_ok());
        if !alive {
            return;
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
        let from = (shared.origin, &shared.queue);
        match one_subscription(&client, &names, from, &inbox, subscribed_before).await {
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

/// How long a gap's report waits for the publisher to write what was
/// queued before it.
const WRITTEN_PATIENCE: Duration = Duration::from_secs(5);

/// Waits (for [`WRITTEN_PATIENCE`] at most) until the publisher has
/// written everything queued so far.
async fn written(queue: &mpsc::Sender<Outbound>) {
    let (done, answered) = tokio::sync::oneshot::channel();
    let waited = tokio::time::timeout(WRITTEN_PATIENCE, async {
        if queue.send(Outbound::Written(done)).await.is_ok() {
            let _ = answered.await;
        }
    })
    .await;
    if waited.is_err() {
        tracing::warn!("the Redis bus reports a gap before its queue is written");
    }
}

/// One subscription, to its end (`Ok` when Redis closed it).
async fn one_subscription(
    client: &::redis::Client,
    names: &Names,
    (origin, queue): (u64, &mpsc::Sender<Outbound>),
    inbox: &Inbox,
    after_a_gap: bool,
) -> ::redis::RedisResult<()> {
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub.subscribe(&names.channel).await?;
    // Subscribed first, then the contents read: no content set in between
    // is missed.
    let mut connection = client.get_multiplexed_async_connection().await?;
    let contents: HashMap<String, String> = match connection.hgetall(&names.contents).await {
        Ok(contents) => contents,
        Err(e)
            if e.code()
                .is_some_and(|code| refused_for_good(code, e.detail())) =>
        {
            // A key of another type holds no contents, and reading it
            // again would fail again: the subscription goes on without.
            tracing::error!("the Redis bus cannot read the shared contents: {e}");
            HashMap::new()
        }
        Err(e) => return Err(e),
    };
    drop(connection);
    if after_a_gap {
        // What this process queued while Redis was away is written first,
        // so that its sessions' copies read their own changes back.
        written(queue).await;
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
        match serde_json::from_str::<Stamped>(&payload) {
            Ok(stamped) if stamped.origin != origin => inbox.deliver(stamped.message),
            Ok(_) => {}
            Err(e) => tracing::warn!("the Redis bus skipped a message it cannot read: {e}"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_queue_holds_so_many_bytes_at_most_and_small_messages_still_pass() {
        // No Redis there: what is published waits in the queue.
        let bus = RedisBus::connect("redis://127.0.0.1:1/", "queue-test").expect("a bus");
        let content = "x".repeat(1 << 20);
        for n in 0..80 {
            bus.publish(BusMessage::ResourceContent {
                uri: format!("mcp://t/resources/{n}"),
                content: content.clone(),
            });
        }
        let queued = || QUEUE - bus.0.queue.capacity();
        assert_eq!(queued(), QUEUE_BYTES / (1 << 20) - 1);
        assert!(bus.0.queued_bytes.load(Ordering::Relaxed) <= QUEUE_BYTES);
        bus.publish(BusMessage::ResourceUpdated {
            uri: "mcp://t/resources/small".into(),
        });
        assert_eq!(queued(), QUEUE_BYTES / (1 << 20));
    }

    #[test]
    fn only_a_wrong_type_or_a_scripts_error_is_refused_for_good() {
        assert!(refused_for_good(
            "WRONGTYPE",
            Some("Operation against a key holding the wrong kind of value")
        ));
        assert!(refused_for_good(
            "ERR",
            Some("user_script:3: Script attempted to access nonexistent global variable")
        ));
        assert!(refused_for_good(
            "ERR",
            Some("Error running script (call to f_1): @user_script:1: oops")
        ));
        for (code, details) in [
            ("ERR", "max number of clients reached"),
            (
                "ERR",
                "Error running script (call to f_1): @user_script:3: -OOM command not allowed",
            ),
            (
                "ERR",
                "Error running script (call to f_1): @user_script:3: -READONLY You can't write",
            ),
            ("OOM", "command not allowed when used memory > 'maxmemory'."),
            ("LOADING", "Redis is loading the dataset in memory"),
            ("BUSY", "Redis is busy running a script."),
            ("READONLY", "You can't write against a read only replica."),
            ("MISCONF", "Redis is configured to save RDB snapshots"),
            (
                "NOPERM",
                "this user has no permissions to run the 'eval' command",
            ),
            ("TRYAGAIN", "Multiple keys request during rehashing of slot"),
        ] {
            assert!(!refused_for_good(code, Some(details)), "{code}");
        }
    }
}
