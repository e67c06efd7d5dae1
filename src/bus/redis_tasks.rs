//! [`RedisTaskStore`]: the tasks of a deployment in Redis, so that any
//! process reads, answers and cancels any task.
//!
//! - A task is a key (`clawmcp:{deployment}:task:{id}`, JSON: the task and
//!   the process running it), expiring when an ended task's time to live
//!   has passed.
//! - Each owner's tasks are a sorted set (`…:tasks-of:{owner in hex}`,
//!   scored by when each may go; a running one never), read by one script
//!   that also creates the task, so the bound per owner holds across
//!   processes.
//! - `tasks/update` and `tasks/cancel` are published on
//!   `clawmcp:{deployment}:task-signals`; every process listens there and
//!   hands a signal to its runner of the task, if it has one. Each saved
//!   state is announced there too, for the processes' task watchers
//!   (`notifications/tasks`).
//! - A running task names its process; that process's liveness key (kept
//!   by the bus, gone a few seconds after the process) says whether it
//!   still runs. A read of a running task whose process is gone makes it
//!   `failed`, so no task stays `working` after its process died.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_core::Stream;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::{broadcast, mpsc};

use super::redis::RedisBus;
use crate::task::{
    Runners, TaskChanges, TaskError, TaskSignal, TaskState, TaskStatus, TaskStore, now_ms,
};

/// Creates a task unless its owner holds `ARGV[3]` tasks already: drops
/// the owner's expired entries (`ARGV[2]` is now), then adds the task
/// (`KEYS[2]`, `ARGV[1]` its JSON) with its process's liveness renewed
/// (`KEYS[3]`, for `ARGV[5]` ms) so that it holds from the start. 1, or 0
/// when the owner is full.
const CREATE: &str = r"
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('ZADD', KEYS[1], 'inf', ARGV[4])
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SET', KEYS[3], 1, 'PX', ARGV[5])
return 1";

/// A [`TaskStore`] in Redis (feature `redis`), on the connection and
/// deployment of a [`RedisBus`] ([`RedisBus::task_store`]).
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use clawmcp::bus::RedisBus;
///
/// let bus = RedisBus::connect("redis://127.0.0.1:6379/", "my-deployment")?;
/// let server = clawmcp::Server::builder()
///     .task_store(bus.task_store())
///     .bus(bus)
///     .build()?;
/// # let _ = server; Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisTaskStore(Arc<Inner>);

struct Inner {
    bus: RedisBus,
    runners: Runners,
    changes: TaskChanges,
    /// `clawmcp:{deployment}:`.
    prefix: String,
    /// The liveness key of this process.
    process: String,
}

impl std::fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTaskStore")
            .field("prefix", &self.0.prefix)
            .finish_non_exhaustive()
    }
}

/// A task as Redis keeps it.
#[derive(Serialize, Deserialize)]
struct Stored {
    /// The liveness key of the process running it.
    runner: String,
    task: TaskState,
}

/// What travels on the signals channel: a signal for a task's runner, or
/// the news that a task was saved with a new state.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Travelling {
    Signal { task_id: String, signal: TaskSignal },
    Changed { changed: String },
}

impl RedisBus {
    /// A task store on this bus's Redis and deployment: any process of the
    /// deployment reads, answers and cancels any task, and a task whose
    /// process died reads as `failed` within a few seconds. Starts its
    /// listener on the current tokio runtime.
    pub fn task_store(&self) -> RedisTaskStore {
        let (prefix, process) = self.task_names();
        let store = RedisTaskStore(Arc::new(Inner {
            bus: self.clone(),
            runners: Runners::default(),
            changes: TaskChanges::default(),
            prefix,
            process,
        }));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(listen_for_signals(Arc::downgrade(&store.0)));
        }
        store
    }
}

impl Inner {
    fn task_key(&self, id: &str) -> String {
        format!("{}task:{id}", self.prefix)
    }

    fn owner_key(&self, owner: &str) -> String {
        format!("{}tasks-of:{}", self.prefix, hex::encode(owner))
    }

    fn channel(&self) -> String {
        format!("{}task-signals", self.prefix)
    }

    async fn connection(&self) -> Result<::redis::aio::ConnectionManager, TaskError> {
        self.bus.connection().await.map_err(TaskError::Store)
    }

    /// Writes `task`, run by `runner`: an ended one expires with its time
    /// to live, and its place in its owner's set with it. Every process
    /// hears of the new state after it is there to read.
    async fn write(&self, runner: &str, task: &TaskState) -> Result<(), TaskError> {
        let json = serde_json::to_string(&Stored {
            runner: runner.to_owned(),
            task: task.clone(),
        })
        .map_err(|e| TaskError::Store(e.to_string()))?;
        let key = self.task_key(&task.task_id);
        let mut pipe = ::redis::pipe();
        match task.expires_at_ms() {
            Some(at) => {
                let ttl = at.saturating_sub(now_ms()).max(1);
                pipe.pset_ex(&key, json, ttl).ignore();
                pipe.zadd(self.owner_key(&task.owner), &task.task_id, at)
                    .ignore();
            }
            None => {
                pipe.set(&key, json).ignore();
            }
        }
        let changed = serde_json::to_string(&Travelling::Changed {
            changed: task.task_id.clone(),
        })
        .map_err(|e| TaskError::Store(e.to_string()))?;
        pipe.publish(self.channel(), changed).ignore();
        let mut connection = self.connection().await?;
        pipe.query_async::<()>(&mut connection)
            .await
            .map_err(|e| TaskError::Store(e.to_string()))
    }
}

#[async_trait::async_trait]
impl TaskStore for RedisTaskStore {
    async fn create(&self, task: &TaskState, most: usize) -> Result<(), TaskError> {
        let inner = &self.0;
        let json = serde_json::to_string(&Stored {
            runner: inner.process.clone(),
            task: task.clone(),
        })
        .map_err(|e| TaskError::Store(e.to_string()))?;
        let mut connection = inner.connection().await?;
        let created: i64 = ::redis::cmd("EVAL")
            .arg(CREATE)
            .arg(3)
            .arg(inner.owner_key(&task.owner))
            .arg(inner.task_key(&task.task_id))
            .arg(&inner.process)
            .arg(json)
            .arg(now_ms())
            .arg(most)
            .arg(&task.task_id)
            .arg(super::redis::LIVENESS_MS)
            .query_async(&mut connection)
            .await
            .map_err(|e| TaskError::Store(e.to_string()))?;
        if created == 1 {
            Ok(())
        } else {
            Err(TaskError::TooMany(most))
        }
    }

    async fn get(&self, task_id: &str) -> Result<Option<TaskState>, TaskError> {
        let inner = &self.0;
        let mut connection = inner.connection().await?;
        let json: Option<String> = ::redis::cmd("GET")
            .arg(inner.task_key(task_id))
            .query_async(&mut connection)
            .await
            .map_err(|e| TaskError::Store(e.to_string()))?;
        let Some(Stored { runner, mut task }) = json.and_then(|j| serde_json::from_str(&j).ok())
        else {
            return Ok(None);
        };
        if task.status.is_terminal() {
            return Ok(Some(task));
        }
        let alive: bool = ::redis::cmd("EXISTS")
            .arg(&runner)
            .query_async(&mut connection)
            .await
            .map_err(|e| TaskError::Store(e.to_string()))?;
        if !alive {
            // Its process is gone: the task cannot end by itself any more.
            let message = "the process running the task ended before the task did";
            task.error = Some(json!({"code": -32603, "message": message}));
            task.status_message = Some(message.to_owned());
            // (A running task's `ttlMs` is still the server's time to
            // live for ended tasks.)
            let ttl = task.ttl_ms.map(Duration::from_millis);
            task.set_status(TaskStatus::Failed, ttl);
            inner.write(&runner, &task).await?;
        }
        Ok(Some(task))
    }

    async fn put(&self, task: &TaskState) -> Result<(), TaskError> {
        self.0.write(&self.0.process, task).await
    }

    async fn signal(&self, task_id: &str, signal: TaskSignal) -> Result<(), TaskError> {
        let inner = &self.0;
        let payload = serde_json::to_string(&Travelling::Signal {
            task_id: task_id.to_owned(),
            signal,
        })
        .map_err(|e| TaskError::Store(e.to_string()))?;
        let mut connection = inner.connection().await?;
        ::redis::cmd("PUBLISH")
            .arg(inner.channel())
            .arg(payload)
            .query_async::<i64>(&mut connection)
            .await
            .map(drop)
            .map_err(|e| TaskError::Store(e.to_string()))
    }

    fn listen(&self, task_id: &str) -> mpsc::UnboundedReceiver<TaskSignal> {
        self.0.runners.listen(task_id)
    }

    fn changes(&self) -> broadcast::Receiver<Arc<str>> {
        self.0.changes.subscribe()
    }
}

/// Hands every published signal to this process's runner of its task, and
/// every saved state to this process's watchers, while the store lives;
/// resubscribes after a lost connection.
async fn listen_for_signals(store: std::sync::Weak<Inner>) {
    let mut backoff = Duration::from_millis(50);
    loop {
        let Some(inner) = store.upgrade() else {
            return;
        };
        let client = inner.bus.client();
        let channel = inner.channel();
        drop(inner);
        let subscribed = async {
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(&channel).await?;
            let mut messages = pubsub.into_on_message();
            while let Some(message) =
                std::future::poll_fn(|cx| Pin::new(&mut messages).poll_next(cx)).await
            {
                let Some(inner) = store.upgrade() else {
                    return Ok(());
                };
                let Ok(payload) = message.get_payload::<String>() else {
                    continue;
                };
                match serde_json::from_str::<Travelling>(&payload) {
                    Ok(Travelling::Signal { task_id, signal }) => {
                        inner.runners.deliver(&task_id, signal);
                    }
                    Ok(Travelling::Changed { changed }) => inner.changes.announce(&changed),
                    Err(e) => tracing::warn!("a task signal that does not read was skipped: {e}"),
                }
            }
            Ok::<(), ::redis::RedisError>(())
        };
        match subscribed.await {
            Ok(()) => backoff = Duration::from_millis(50),
            Err(e) => tracing::warn!("the Redis task store cannot subscribe (retrying): {e}"),
        }
        if store.strong_count() == 0 {
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(2));
    }
}
