//! [`RedisTaskStore`]: the tasks of a deployment in Redis, so that any
//! process reads, answers and cancels any task.
//!
//! - A task is a key (`clawmcp:{deployment}:task:{id}`, JSON: the task and
//!   the process running it), expiring when an ended task's time to live
//!   has passed. Every write is a script that never replaces an ended
//!   state: a task that ended stays as it ended, whoever writes after.
//! - The tasks that count against one principal are a sorted set
//!   (`…:tasks-of:{TaskState::counts_against in hex}`, scored by when each
//!   may go; a running one never), read by one script that also creates
//!   the task, so the bound per principal holds across processes. The set
//!   expires with the last of its tasks.
//! - `tasks/update` and `tasks/cancel` are queued on the task
//!   (`…:signals:{id}`, kept an hour) and announced on
//!   `clawmcp:{deployment}:task-signals`; the process running the task
//!   takes its queue when it hears that, and again whenever it
//!   (re)subscribes, so a signal sent while it reconnects is not lost. A
//!   signal leaves its queue only once handed to the task's runner: it is
//!   handed at least once (twice when a reply is lost on the way, which
//!   an answer or a cancel shrugs off).
//!   Each saved state is announced there too, for the processes' task
//!   watchers (`notifications/tasks`).
//! - A running task names its process, and sits in that process's set of
//!   running tasks (`…:running:{process}`); the process's liveness key
//!   (kept by the bus, gone a few seconds after the process) says whether
//!   it still runs, to a process that has kept its own key long enough to
//!   tell (`RedisBus::judges_liveness`: after Redis was away, not before
//!   every live process has set its key again). A process knows its own
//!   tasks by its runners, not by its key. A read of a running task whose
//!   process is gone (or, this process's, that no runner here has) makes
//!   it `failed`, and every process sweeps the sets of dead processes,
//!   and its own, every few seconds, so no task stays `working` after its
//!   process died, read or not, and its place in the bound is freed once
//!   it expires. A save the store fails is tried again by its runner
//!   until the store takes it, and a signal queue that could not be taken
//!   is taken again.

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

/// Creates a task unless the set of the tasks counted against its
/// principal (`KEYS[1]`) holds `ARGV[3]` already: drops that set's
/// expired entries (`ARGV[2]` is now), then adds the task (which keeps the
/// set while it runs: a set expires with the last of its tasks, `WRITE`)
/// (`KEYS[2]`, `ARGV[1]` its JSON) to its process's running set (`KEYS[4]`;
/// the process to the set of processes with tasks, `KEYS[5]`) with the
/// process's liveness renewed (`KEYS[3]`, for `ARGV[5]` ms) so that it
/// holds from the start. 1, or 0 when that set is full.
const CREATE: &str = r"
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('ZADD', KEYS[1], 'inf', ARGV[4])
redis.call('PERSIST', KEYS[1])
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SET', KEYS[3], 1, 'PX', ARGV[5])
redis.call('SADD', KEYS[4], ARGV[4])
redis.call('SADD', KEYS[5], KEYS[3])
return 1";

/// Writes a task's state, unless the one stored has ended (0) or is gone
/// (2); with `ARGV[1]` (1) the stored text must be `ARGV[1]` exactly (a
/// compare-and-set), else nothing is written (0). `KEYS`: the task, the
/// set it counts in, its process's running set, its signal queue. `ARGV`: the
/// expected text or empty, the new text, its time to live in ms (0:
/// none), its score in that set, the task id, whether it ended ("1"), the
/// channel and the announcement. 1 when written. A set whose tasks all
/// expire expires with the last of them.
/// (A key of another type reads as gone; a stored text that does not
/// read as a task as one that has not ended.)
const WRITE: &str = r"
local current = redis.pcall('GET', KEYS[1])
if type(current) ~= 'string' then
  return 2
end
if ARGV[1] ~= '' then
  if current ~= ARGV[1] then
    return 0
  end
else
  local read, stored = pcall(cjson.decode, current)
  local status = nil
  if read and type(stored) == 'table' and type(stored.task) == 'table' then
    status = stored.task.status
  end
  if status == 'completed' or status == 'failed' or status == 'cancelled' then
    return 0
  end
end
if tonumber(ARGV[3]) > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[5])
  local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  local until_ms = tonumber(last[2])
  if until_ms and until_ms < math.huge then
    redis.call('PEXPIREAT', KEYS[2], until_ms)
  end
else
  redis.call('SET', KEYS[1], ARGV[2])
end
if ARGV[6] == '1' then
  redis.call('SREM', KEYS[3], ARGV[5])
  redis.call('DEL', KEYS[4])
end
redis.call('PUBLISH', ARGV[7], ARGV[8])
return 1";

/// Queues a signal for a task (`KEYS[1]`, kept `ARGV[2]` ms) and announces
/// it (`ARGV[3]`, `ARGV[4]`).
const SIGNAL: &str = r"
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1";

/// Forgets process `ARGV[1]` in the set of processes with tasks
/// (`KEYS[2]`) when its set of running tasks (`KEYS[1]`) is empty: in one
/// step, so that a task it creates meanwhile keeps it listed.
const FORGET_PROCESS: &str = r"
if redis.call('SCARD', KEYS[1]) == 0 then
  return redis.call('SREM', KEYS[2], ARGV[1])
end
return 0";

/// Removes the signals handed to a task's runner (`ARGV`, oldest first)
/// from the head of its queue (`KEYS[1]`), each only while it is still
/// there: another take may have removed it first, and what was queued
/// since stays. (Signals are read first and removed once handed over, so
/// a reply lost on the way loses none: they are handed again, and both
/// kinds do nothing the second time.)
const TAKEN: &str = r"
for _, handed in ipairs(ARGV) do
  if redis.call('LINDEX', KEYS[1], 0) ~= handed then
    return 0
  end
  redis.call('LPOP', KEYS[1])
end
return 1";

/// The longest time to live a task's key is given (about 100 years):
/// Redis refuses an expiry past its clock's range, and a longer one is
/// kept for ever.
const KEPT_AT_MOST_MS: u64 = 100 * 365 * 24 * 3_600_000;

/// How long a queued signal waits for its task's runner.
const SIGNAL_KEPT_MS: u64 = 3_600_000;

/// How often each process sweeps the running sets of dead processes.
const SWEEP_EVERY: Duration = Duration::from_secs(3);

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
    /// The bus's: shared by every task store on it.
    runners: Arc<Runners>,
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

/// What travels on the signals channel: the news that a task has signals
/// queued for its runner, or that it was saved with a new state.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Travelling {
    Signalled { signalled: String },
    Changed { changed: String },
}

impl RedisBus {
    /// A task store on this bus's Redis and deployment: any process of the
    /// deployment reads, answers and cancels any task, and a task whose
    /// process died reads as `failed` within a few seconds (to a process
    /// that has run for 10 s, the time every live process has to set its
    /// liveness key again after Redis was away). Starts its
    /// subscriber and its sweeper on the runtime the bus was made in
    /// (wherever this is called).
    pub fn task_store(&self) -> RedisTaskStore {
        let (prefix, process) = self.task_names();
        let store = RedisTaskStore(Arc::new(Inner {
            bus: self.clone(),
            runners: self.task_runners(),
            changes: TaskChanges::default(),
            prefix,
            process,
        }));
        let runtime = self.runtime();
        runtime.spawn(relay_channel(Arc::downgrade(&store.0)));
        runtime.spawn(sweep_dead_runners(Arc::downgrade(&store.0)));
        store
    }
}

impl Inner {
    fn task_key(&self, id: &str) -> String {
        format!("{}task:{id}", self.prefix)
    }

    /// The set of the tasks that count against `key`
    /// ([`TaskState::counts_against`]).
    fn counted_key(&self, key: &str) -> String {
        format!("{}tasks-of:{}", self.prefix, hex::encode(key))
    }

    fn channel(&self) -> String {
        format!("{}task-signals", self.prefix)
    }

    /// The set of the tasks `process` runs.
    fn running_key(&self, process: &str) -> String {
        format!("{}running:{process}", self.prefix)
    }

    /// The set of the processes that ran tasks (swept when dead).
    fn processes_key(&self) -> String {
        format!("{}task-processes", self.prefix)
    }

    /// The queue of a task's signals.
    fn signals_key(&self, id: &str) -> String {
        format!("{}signals:{id}", self.prefix)
    }

    async fn connection(&self) -> Result<::redis::aio::ConnectionManager, TaskError> {
        self.bus.connection().await.map_err(TaskError::Store)
    }

    /// Writes `task`, run by `runner`: an ended one expires with its time
    /// to live, and its place in the set it counts in with it, and leaves its
    /// runner's set. Every process hears of the new state after it is
    /// there to read. With `expected`, only over exactly that stored text
    /// (`Ok(false)`: nothing was written, the task is gone or `expected` is
    /// not there); else never over an ended state, nor a task no longer
    /// stored (`TaskError::Ended` either way: nobody can read what the
    /// runner would write).
    async fn write(
        &self,
        runner: &str,
        task: &TaskState,
        expected: Option<&str>,
    ) -> Result<bool, TaskError> {
        let json = serde_json::to_string(&Stored {
            runner: runner.to_owned(),
            task: task.clone(),
        })
        .map_err(|e| TaskError::Store(e.to_string()))?;
        let changed = serde_json::to_string(&Travelling::Changed {
            changed: task.task_id.clone(),
        })
        .map_err(|e| TaskError::Store(e.to_string()))?;
        // (An expiry further than Redis's clock counts is none: the task
        // is kept for ever, as with no time to live.)
        let (ttl, score) = match task
            .expires_at_ms()
            .map(|at| (at, at.saturating_sub(now_ms())))
        {
            Some((at, left)) if left <= KEPT_AT_MOST_MS => (left.max(1), at),
            _ => (0, 0),
        };
        let mut connection = self.connection().await?;
        let written: i64 = ::redis::cmd("EVAL")
            .arg(WRITE)
            .arg(4)
            .arg(self.task_key(&task.task_id))
            .arg(self.counted_key(task.counts_against()))
            .arg(self.running_key(runner))
            .arg(self.signals_key(&task.task_id))
            .arg(expected.unwrap_or_default())
            .arg(json)
            .arg(ttl)
            .arg(score)
            .arg(&task.task_id)
            .arg(if task.status.is_terminal() { "1" } else { "0" })
            .arg(self.channel())
            .arg(changed)
            .query_async(&mut connection)
            .await
            .map_err(|e| TaskError::Store(e.to_string()))?;
        match written {
            1 => Ok(true),
            _ if expected.is_none() => Err(TaskError::Ended),
            _ => Ok(false),
        }
    }

    /// The task's stored text, as Redis holds it.
    async fn read(&self, task_id: &str) -> Result<Option<String>, TaskError> {
        let mut connection = self.connection().await?;
        ::redis::cmd("GET")
            .arg(self.task_key(task_id))
            .query_async(&mut connection)
            .await
            .map_err(|e| TaskError::Store(e.to_string()))
    }

    /// Takes the signals queued for `task_id` and hands them to its runner
    /// here: read, handed over, then removed ([`TAKEN`]), so that a signal
    /// is handed at least once.
    async fn take_signals(&self, task_id: &str) -> Result<(), TaskError> {
        let key = self.signals_key(task_id);
        let mut connection = self.connection().await?;
        let queued: Vec<String> = ::redis::cmd("LRANGE")
            .arg(&key)
            .arg(0)
            .arg(-1)
            .query_async(&mut connection)
            .await
            .map_err(|e| TaskError::Store(e.to_string()))?;
        if queued.is_empty() {
            return Ok(());
        }
        for payload in &queued {
            match serde_json::from_str::<TaskSignal>(payload) {
                Ok(signal) => self.runners.deliver(task_id, signal),
                Err(e) => {
                    tracing::warn!("a queued task signal that does not read was skipped: {e}")
                }
            }
        }
        ::redis::cmd("EVAL")
            .arg(TAKEN)
            .arg(1)
            .arg(&key)
            .arg(&queued)
            .query_async::<i64>(&mut connection)
            .await
            .map(drop)
            .map_err(|e| TaskError::Store(e.to_string()))
    }

    /// Fails, in the store, the running tasks of the processes that died
    /// (once this process can tell a dead one, `RedisBus::judges_liveness`),
    /// and those of this process that no runner here runs (a task whose
    /// creating request stopped after the store took it). One task or
    /// process that cannot be read is skipped, not the sweep.
    async fn sweep(&self) -> Result<(), TaskError> {
        let mut connection = self.connection().await?;
        let processes: Vec<String> = ::redis::cmd("SMEMBERS")
            .arg(self.processes_key())
            .query_async(&mut connection)
            .await
            .map_err(|e| TaskError::Store(e.to_string()))?;
        let judges = self.bus.judges_liveness();
        for process in processes {
            let mine = process == self.process;
            if !mine {
                if !judges {
                    continue;
                }
                let alive = ::redis::cmd("EXISTS")
                    .arg(&process)
                    .query_async::<bool>(&mut connection)
                    .await;
                if alive.unwrap_or(true) {
                    continue;
                }
            }
            let running: Vec<String> = match ::redis::cmd("SMEMBERS")
                .arg(self.running_key(&process))
                .query_async(&mut connection)
                .await
            {
                Ok(running) => running,
                Err(e) => {
                    tracing::warn!("the running tasks of {process} were not read: {e}");
                    continue;
                }
            };
            for task_id in running {
                if mine && self.runners.runs(&task_id) {
                    continue;
                }
                // A read fails it (or finds it ended, or gone).
                match self.get_stored(&task_id).await {
                    Ok(Some(_)) => {}
                    Ok(None) => {
                        let removed = ::redis::cmd("SREM")
                            .arg(self.running_key(&process))
                            .arg(&task_id)
                            .query_async::<i64>(&mut connection)
                            .await;
                        if let Err(e) = removed {
                            tracing::warn!("a gone task {task_id} stays listed: {e}");
                        }
                    }
                    Err(e) => tracing::warn!("task {task_id} was not swept: {e}"),
                }
            }
            if !mine {
                let forgotten = ::redis::cmd("EVAL")
                    .arg(FORGET_PROCESS)
                    .arg(2)
                    .arg(self.running_key(&process))
                    .arg(self.processes_key())
                    .arg(&process)
                    .query_async::<i64>(&mut connection)
                    .await;
                if let Err(e) = forgotten {
                    tracing::warn!("the dead process {process} stays listed: {e}");
                }
            }
        }
        Ok(())
    }

    /// Whether `runner` still runs task `task_id`: this process when a
    /// runner here has it; another while its liveness key is there, or
    /// while this process cannot tell (`RedisBus::judges_liveness`).
    async fn runs(&self, runner: &str, task_id: &str) -> Result<bool, TaskError> {
        if runner == self.process {
            return Ok(self.runners.runs(task_id));
        }
        if !self.bus.judges_liveness() {
            return Ok(true);
        }
        let mut connection = self.connection().await?;
        ::redis::cmd("EXISTS")
            .arg(runner)
            .query_async(&mut connection)
            .await
            .map_err(|e| TaskError::Store(e.to_string()))
    }

    /// The task with this id, as its store holds it now: a running task
    /// whose process is gone is failed first (once, by whichever process
    /// reads it first).
    async fn get_stored(&self, task_id: &str) -> Result<Option<TaskState>, TaskError> {
        // (Each round loses only to a write that changed the task.)
        for _ in 0..4 {
            let Some(text) = self.read(task_id).await? else {
                return Ok(None);
            };
            let Ok(Stored { runner, mut task }) = serde_json::from_str(&text) else {
                return Ok(None);
            };
            if task.status.is_terminal() {
                return Ok(Some(task));
            }
            if self.runs(&runner, &task.task_id).await? {
                return Ok(Some(task));
            }
            // Its process is gone (or, this process, runs it no more): the
            // task cannot end by itself any more.
            let message = if runner == self.process {
                "the task's call stopped before the task ended"
            } else {
                "the process running the task ended before the task did"
            };
            task.error = Some(json!({"code": -32603, "message": message}));
            task.status_message = Some(message.to_owned());
            // (A running task's `ttlMs` is still the server's time to
            // live for ended tasks.)
            let ttl = task.ttl_ms.map(Duration::from_millis);
            task.set_status(TaskStatus::Failed, ttl);
            if self.write(&runner, &task, Some(&text)).await? {
                return Ok(Some(task));
            }
        }
        Err(TaskError::Store(
            "the task changed on every read: try again".into(),
        ))
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
            .arg(5)
            .arg(inner.counted_key(task.counts_against()))
            .arg(inner.task_key(&task.task_id))
            .arg(&inner.process)
            .arg(inner.running_key(&inner.process))
            .arg(inner.processes_key())
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
        self.0.get_stored(task_id).await
    }

    async fn put(&self, task: &TaskState) -> Result<(), TaskError> {
        self.0.write(&self.0.process, task, None).await.map(drop)
    }

    async fn signal(&self, task_id: &str, signal: TaskSignal) -> Result<(), TaskError> {
        let inner = &self.0;
        let payload =
            serde_json::to_string(&signal).map_err(|e| TaskError::Store(e.to_string()))?;
        let news = serde_json::to_string(&Travelling::Signalled {
            signalled: task_id.to_owned(),
        })
        .map_err(|e| TaskError::Store(e.to_string()))?;
        let mut connection = inner.connection().await?;
        ::redis::cmd("EVAL")
            .arg(SIGNAL)
            .arg(1)
            .arg(inner.signals_key(task_id))
            .arg(payload)
            .arg(SIGNAL_KEPT_MS)
            .arg(inner.channel())
            .arg(news)
            .query_async::<i64>(&mut connection)
            .await
            .map(drop)
            .map_err(|e| TaskError::Store(e.to_string()))
    }

    fn signals_for(&self, task_id: &str) -> mpsc::UnboundedReceiver<TaskSignal> {
        self.0.runners.register(task_id)
    }

    fn changes(&self) -> broadcast::Receiver<Arc<str>> {
        self.0.changes.subscribe()
    }
}

/// Takes the signals queued for `task_id`, tried again while that fails
/// and a runner here still has the task: else they would wait in their
/// queue for the next signal, which may never come.
async fn take_signals_patiently(store: std::sync::Weak<Inner>, task_id: String) {
    let mut wait = Duration::from_millis(50);
    loop {
        let Some(inner) = store.upgrade() else {
            return;
        };
        if !inner.runners.runs(&task_id) {
            return;
        }
        match inner.take_signals(&task_id).await {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!("the signals of task {task_id} were not read (trying again): {e}")
            }
        }
        drop(inner);
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(Duration::from_secs(2));
    }
}

/// Hands the queued signals of every task this process runs to its
/// runner when they are announced (and all of them whenever it
/// subscribes, so that none sent meanwhile is lost), and every saved state
/// to this process's watchers, while the store lives; resubscribes after
/// a lost connection.
async fn relay_channel(store: std::sync::Weak<Inner>) {
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
            // Signals queued before this subscription.
            if let Some(inner) = store.upgrade() {
                for task_id in inner.runners.ids() {
                    if inner.take_signals(&task_id).await.is_err() {
                        tokio::spawn(take_signals_patiently(store.clone(), task_id));
                    }
                }
            }
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
                    Ok(Travelling::Signalled { signalled }) if inner.runners.runs(&signalled) => {
                        if inner.take_signals(&signalled).await.is_err() {
                            tokio::spawn(take_signals_patiently(store.clone(), signalled));
                        }
                    }
                    Ok(Travelling::Signalled { .. }) => {}
                    Ok(Travelling::Changed { changed }) => inner.changes.announce(&changed),
                    Err(e) => {
                        tracing::warn!("a task announcement that does not read was skipped: {e}")
                    }
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

/// Every few seconds, while the store lives, fails the running tasks of
/// the processes that died (read or not, none stays `working`).
async fn sweep_dead_runners(store: std::sync::Weak<Inner>) {
    let mut every = tokio::time::interval(SWEEP_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let Some(inner) = store.upgrade() else {
            return;
        };
        if let Err(e) = inner.sweep().await {
            tracing::debug!("the sweep of dead processes' tasks did not finish: {e}");
        }
    }
}
