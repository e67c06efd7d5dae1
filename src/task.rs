//! Tasks: tool calls that outlive the request that started them (the
//! Model Context Protocol's `io.modelcontextprotocol/tasks` extension, for
//! 2026-07-28 requests).
//!
//! A tool says whether it may run as a task ([`Tool::task_support`]):
//! never (the default), when the request allows it, or always. When a
//! `tools/call` declares the extension in its `_meta` client capabilities
//! and the tool supports tasks, the server answers at once with a task
//! (`resultType: "task"`) and runs the tool detached from the request; the
//! client polls `tasks/get`, answers the tool's questions with
//! `tasks/update` and stops it with `tasks/cancel`. The tool's code does
//! not change: [`ToolContext::elicit`](crate::ToolContext::elicit) and the
//! like put the task in `input_required` until the answer comes, and
//! resume the same running call.
//!
//! Tasks are kept in a [`TaskStore`]: [`MemoryTaskStore`] (the default)
//! keeps them in this process.
//!
//! [`Tool::task_support`]: crate::Tool::task_support

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::{broadcast, mpsc};

mod ledger;

pub(crate) use ledger::{TaskLedger, json_size};

/// The extension's name, as capabilities declare it.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Whether a tool may run as a task: a long build, a crawl, a human's
/// approval. Set by the tool's `with_task_support` (or its own
/// [`Tool::task_support`](crate::Tool::task_support)).
///
/// ```
/// use clawmcp::task::TaskSupport;
/// use clawmcp::{ToolError, typed_tool};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Build { target: String }
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Built { artifact: String }
///
/// async fn build(args: Build) -> Result<Built, ToolError> {
///     tokio::time::sleep(std::time::Duration::from_millis(10)).await;
///     Ok(Built { artifact: format!("{}.tar.gz", args.target) })
/// }
///
/// let tool = typed_tool("mcp://ci/tools/build:v1", "build", "Builds a target.", build)
///     .with_task_support(TaskSupport::Optional);
/// # let _ = clawmcp::Server::builder().tool(tool).build().unwrap();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskSupport {
    /// Never: every call is answered in its request. The default.
    #[default]
    Never,
    /// When the request declares the tasks extension: such a call always
    /// gets a task, any other is answered in its request.
    Optional,
    /// Always, for a 2026-07-28 request: one that does not declare the
    /// extension is refused (`-32021`, naming the extension). Sessions of
    /// the earlier revisions and MCP v1.0, which have no tasks, run it in
    /// the request.
    Required,
}

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The tool runs.
    Working,
    /// The tool waits for the client's answers to its questions.
    InputRequired,
    /// The tool returned a result (`isError: true` included).
    Completed,
    /// The call ended with a JSON-RPC error.
    Failed,
    /// The call was cancelled before it ended.
    Cancelled,
}

impl TaskStatus {
    /// Whether the task has ended (completed, failed or cancelled).
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// A task as its store keeps it: what `tasks/get` shows, and whom it
/// belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskState {
    /// Its id: 32 lowercase hex digits (128 random bits).
    pub task_id: String,
    /// Who created it: the token's issuer, subject and client, empty
    /// without a token. Only the same owner sees it.
    pub owner: String,
    /// Whom it counts against for the bound of tasks per principal, when
    /// not its owner: a creator without a token, by its address (the
    /// peer's, or the one a trusted reverse proxy named; `peer ` and the
    /// address, an IPv6 one by its /64), so that one
    /// client cannot take every anonymous caller's tasks. `None`: its
    /// owner ([`counts_against`](Self::counts_against)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted_as: Option<String>,
    /// The name of the tool it runs.
    pub tool: String,
    /// Its status.
    pub status: TaskStatus,
    /// What the tool last said of its state, if anything.
    pub status_message: Option<String>,
    /// When it was created, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// When it last changed, in milliseconds since the Unix epoch.
    pub last_updated_at_ms: u64,
    /// How long after its creation it may be deleted, in milliseconds
    /// (`None`: never). Extended when the task ends, so that an ended task
    /// is kept for the server's time to live from its end.
    pub ttl_ms: Option<u64>,
    /// How often the client should poll, in milliseconds.
    pub poll_interval_ms: u64,
    /// The questions outstanding, by key: `{"method", "params"}` each.
    pub input_requests: Map<String, Value>,
    /// The call's result object, once `completed`.
    pub result: Option<Value>,
    /// The call's JSON-RPC error object, once `failed`.
    pub error: Option<Value>,
}

impl TaskState {
    /// A new working task of `owner`'s running `tool`, kept `ttl` after
    /// it ends; `None` when the system has no random numbers for its id.
    pub fn new(
        owner: String,
        tool: String,
        ttl: Option<Duration>,
        poll_interval: Duration,
    ) -> Option<Self> {
        let now = now_ms();
        Some(Self {
            task_id: new_task_id()?,
            owner,
            counted_as: None,
            tool,
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: now,
            last_updated_at_ms: now,
            ttl_ms: ttl.map(duration_ms),
            poll_interval_ms: duration_ms(poll_interval).max(1),
            input_requests: Map::new(),
            result: None,
            error: None,
        })
    }

    /// The key of whom it counts against for the bound of tasks per
    /// principal: [`counted_as`](Self::counted_as), else its owner. A
    /// store counts the tasks it holds by this key.
    pub fn counts_against(&self) -> &str {
        self.counted_as.as_deref().unwrap_or(&self.owner)
    }

    /// When the store may delete it (milliseconds since the epoch), if
    /// ever: never while it runs.
    pub fn expires_at_ms(&self) -> Option<u64> {
        if !self.status.is_terminal() {
            return None;
        }
        self.ttl_ms
            .map(|ttl| self.created_at_ms.saturating_add(ttl))
    }

    /// Moves it to `status` now; an ended task's time to live is extended
    /// to count from its end.
    pub fn set_status(&mut self, status: TaskStatus, ttl: Option<Duration>) {
        let now = now_ms();
        self.status = status;
        self.last_updated_at_ms = now;
        if status.is_terminal() {
            self.input_requests.clear();
            self.ttl_ms = ttl.map(|ttl| {
                now.saturating_sub(self.created_at_ms)
                    .saturating_add(duration_ms(ttl))
            });
        }
    }
}

/// What a client's `tasks/update` or `tasks/cancel` asks of the process
/// running a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum TaskSignal {
    /// Answers to outstanding questions, by key.
    Answers {
        /// The answers.
        responses: Map<String, Value>,
    },
    /// Stop the call.
    Cancel,
}

/// Why a task store could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// Whom the task counts against holds as many tasks as it may.
    #[error(
        "this caller holds the most tasks it may ({0}, running or kept for their time to live): try again once one has gone"
    )]
    TooMany(usize),
    /// The task has ended already (another process found its runner
    /// gone and failed it, say): its ended state stays.
    #[error("the task has ended already")]
    Ended,
    /// The store itself failed (its backend is unreachable, say).
    #[error("the task store failed: {0}")]
    Store(String),
}

/// Where tasks are kept, and how a signal reaches the process running a
/// task. A store shared by a deployment's processes lets any process read
/// a task and signal it.
///
/// ```
/// use clawmcp::task::{MemoryTaskStore, TaskState, TaskStore};
/// use std::time::Duration;
///
/// # tokio_test_block_on(async {
/// let store = MemoryTaskStore::new();
/// let task = TaskState::new(String::new(), "build".into(), Some(Duration::from_secs(60)), Duration::from_secs(1))
///     .expect("the system's random numbers");
/// store.create(&task, 10).await.expect("room for a task");
/// let read = store.get(&task.task_id).await.expect("the store works");
/// assert_eq!(read, Some(task));
/// # });
/// # fn tokio_test_block_on(f: impl std::future::Future<Output = ()>) {
/// #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
/// # }
/// ```
#[async_trait::async_trait]
pub trait TaskStore: Send + Sync + fmt::Debug + 'static {
    /// Saves a new task, unless whom it counts against
    /// ([`TaskState::counts_against`]) holds `most` tasks already.
    /// Returns once a [`get`](Self::get) anywhere finds it.
    async fn create(&self, task: &TaskState, most: usize) -> Result<(), TaskError>;

    /// The task with this id, if it exists (and has not expired).
    async fn get(&self, task_id: &str) -> Result<Option<TaskState>, TaskError>;

    /// Saves a task's new state (from the process running it). An ended
    /// task's state is never replaced: that is [`TaskError::Ended`], and
    /// the runner stops its call. So is a task the store no longer holds
    /// (it expired, or was lost): nobody could read what it would save.
    /// [`TaskError::Store`] is tried again, with the newest state, until
    /// the store takes it (or the process ends).
    async fn put(&self, task: &TaskState) -> Result<(), TaskError>;

    /// Delivers `signal` to the process running the task, wherever it
    /// runs; nothing when none runs it.
    async fn signal(&self, task_id: &str, signal: TaskSignal) -> Result<(), TaskError>;

    /// Where this process hears the signals for a task it runs, until the
    /// receiver is dropped.
    fn signals_for(&self, task_id: &str) -> mpsc::UnboundedReceiver<TaskSignal>;

    /// Where this process hears which tasks were saved with a new state
    /// ([`put`](Self::put)), by any process: the ids, in order. A receiver
    /// that falls behind hears [`Lagged`](broadcast::error::RecvError::Lagged)
    /// and re-reads what it watches ([`TaskChanges`] keeps the channel).
    fn changes(&self) -> broadcast::Receiver<Arc<str>>;
}

/// A store shared behind an `Arc` (to read it from outside the server,
/// say) is a store.
#[async_trait::async_trait]
impl<T: TaskStore> TaskStore for Arc<T> {
    async fn create(&self, task: &TaskState, most: usize) -> Result<(), TaskError> {
        (**self).create(task, most).await
    }

    async fn get(&self, task_id: &str) -> Result<Option<TaskState>, TaskError> {
        (**self).get(task_id).await
    }

    async fn put(&self, task: &TaskState) -> Result<(), TaskError> {
        (**self).put(task).await
    }

    async fn signal(&self, task_id: &str, signal: TaskSignal) -> Result<(), TaskError> {
        (**self).signal(task_id, signal).await
    }

    fn signals_for(&self, task_id: &str) -> mpsc::UnboundedReceiver<TaskSignal> {
        (**self).signals_for(task_id)
    }

    fn changes(&self) -> broadcast::Receiver<Arc<str>> {
        (**self).changes()
    }
}

/// The signals of the tasks this process runs, by task id.
#[derive(Debug, Default)]
pub struct Runners(Mutex<RunnerMap>);

#[derive(Debug, Default)]
struct RunnerMap {
    senders: HashMap<String, mpsc::UnboundedSender<TaskSignal>>,
    /// How many it held after its last clean-up: the next comes at twice
    /// that, so that cleaning costs O(1) a registration.
    kept: usize,
}

impl Runners {
    /// Registers a runner for `task_id`, until its receiver is dropped.
    pub fn register(&self, task_id: &str) -> mpsc::UnboundedReceiver<TaskSignal> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if map.senders.len() >= (2 * map.kept).max(64) {
            map.senders.retain(|_, tx| !tx.is_closed());
            map.kept = map.senders.len();
        }
        map.senders.insert(task_id.to_owned(), tx);
        rx
    }

    /// Hands `signal` to the runner of `task_id` here, if there is one.
    pub fn deliver(&self, task_id: &str, signal: TaskSignal) {
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tx) = map.senders.get(task_id) {
            let _ = tx.send(signal);
        }
    }

    /// Whether a runner of `task_id` is registered here.
    pub fn runs(&self, task_id: &str) -> bool {
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.senders.get(task_id).is_some_and(|tx| !tx.is_closed())
    }

    /// The ids of the tasks whose runners are registered here.
    pub fn ids(&self) -> Vec<String> {
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        (map.senders.iter())
            .filter(|(_, tx)| !tx.is_closed())
            .map(|(id, _)| id.clone())
            .collect()
    }
}

/// The ids of the tasks saved with a new state, for every watcher in this
/// process (a store's [`changes`](TaskStore::changes)). Announcing with
/// no watcher costs nothing but the check.
#[derive(Debug)]
pub struct TaskChanges(broadcast::Sender<Arc<str>>);

impl Default for TaskChanges {
    fn default() -> Self {
        // A watcher further behind than this re-reads its tasks.
        Self(broadcast::channel(256).0)
    }
}

impl TaskChanges {
    /// Tells every watcher that task `task_id` has a new state.
    pub fn announce(&self, task_id: &str) {
        if self.0.receiver_count() > 0 {
            let _ = self.0.send(task_id.into());
        }
    }

    /// A watcher's receiver, hearing every announcement from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<str>> {
        self.0.subscribe()
    }
}

/// Tasks kept in this process's memory: the default store. Ended tasks
/// are deleted once their time to live has passed (a save of a task no
/// longer held is [`TaskError::Ended`]); every operation costs the same
/// however many tasks it holds.
#[derive(Debug, Default)]
pub struct MemoryTaskStore {
    kept: Mutex<Kept>,
    runners: Runners,
    changes: TaskChanges,
}

#[derive(Debug, Default)]
struct Kept {
    tasks: HashMap<String, TaskState>,
    /// How many tasks each principal holds, by
    /// [`TaskState::counts_against`].
    held: HashMap<String, usize>,
    /// When each ended task may go, soonest first.
    expiries: std::collections::BTreeSet<(u64, String)>,
}

impl Kept {
    /// Drops the tasks whose time to live has passed.
    fn sweep(&mut self, now: u64) {
        while let Some((at, _)) = self.expiries.first() {
            if *at > now {
                break;
            }
            let Some((_, id)) = self.expiries.pop_first() else {
                break;
            };
            // (A task saved again since is kept under its new expiry.)
            if let Some(task) = self.tasks.get(&id)
                && task.expires_at_ms().is_some_and(|at| at <= now)
                && let Some(task) = self.tasks.remove(&id)
                && let Some(held) = self.held.get_mut(task.counts_against())
            {
                *held -= 1;
                if *held == 0 {
                    self.held.remove(task.counts_against());
                }
            }
        }
    }
}

impl MemoryTaskStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait::async_trait]
impl TaskStore for MemoryTaskStore {
    async fn create(&self, task: &TaskState, most: usize) -> Result<(), TaskError> {
        let mut kept = self.lock();
        kept.sweep(now_ms());
        let key = task.counts_against();
        let held = kept.held.get(key).copied().unwrap_or(0);
        if held >= most {
            return Err(TaskError::TooMany(most));
        }
        kept.held.insert(key.to_owned(), held + 1);
        kept.tasks.insert(task.task_id.clone(), task.clone());
        Ok(())
    }

    async fn get(&self, task_id: &str) -> Result<Option<TaskState>, TaskError> {
        let mut kept = self.lock();
        kept.sweep(now_ms());
        Ok(kept.tasks.get(task_id).cloned())
    }

    async fn put(&self, task: &TaskState) -> Result<(), TaskError> {
        let mut kept = self.lock();
        // (Only a task it holds is saved: one swept already stays gone.)
        let Some(slot) = kept.tasks.get_mut(&task.task_id) else {
            return Err(TaskError::Ended);
        };
        if slot.status.is_terminal() {
            return Err(TaskError::Ended);
        }
        *slot = task.clone();
        if let Some(at) = task.expires_at_ms() {
            kept.expiries.insert((at, task.task_id.clone()));
        }
        drop(kept);
        self.changes.announce(&task.task_id);
        Ok(())
    }

    async fn signal(&self, task_id: &str, signal: TaskSignal) -> Result<(), TaskError> {
        self.runners.deliver(task_id, signal);
        Ok(())
    }

    fn signals_for(&self, task_id: &str) -> mpsc::UnboundedReceiver<TaskSignal> {
        self.runners.register(task_id)
    }

    fn changes(&self) -> broadcast::Receiver<Arc<str>> {
        self.changes.subscribe()
    }
}

/// The default bound of bytes one principal's tasks hold in a process
/// ([`ServerBuilder::max_task_bytes_per_principal`](crate::ServerBuilder::max_task_bytes_per_principal)):
/// 64 MiB.
pub const DEFAULT_MAX_TASK_BYTES: usize = 64 << 20;

/// How a server keeps and shows its tasks
/// ([`ServerBuilder::task_store`](crate::ServerBuilder::task_store) and its
/// neighbours).
#[derive(Debug, Clone)]
pub(crate) struct TaskSettings {
    pub(crate) store: Arc<dyn TaskStore>,
    /// How long an ended task is kept (`None`: until the process ends).
    pub(crate) ttl: Option<Duration>,
    /// The polling interval suggested to clients.
    pub(crate) poll_interval: Duration,
    /// The most tasks one principal holds at once (running or kept).
    pub(crate) max_per_principal: usize,
    /// The most bytes of arguments and state one principal's tasks hold
    /// in this process at once (running or kept).
    pub(crate) max_bytes_per_principal: u64,
    /// What each principal's tasks hold in this process.
    pub(crate) ledger: Arc<TaskLedger>,
    /// The tasks this process runs, waited for at shutdown.
    pub(crate) running: tokio_util::task::TaskTracker,
    /// Cancelled when this process's tasks start their shutdown grace
    /// (an HTTP server's shutdown, or the handle's).
    pub(crate) stopping: tokio_util::sync::CancellationToken,
}

impl Default for TaskSettings {
    fn default() -> Self {
        Self {
            store: Arc::new(MemoryTaskStore::new()),
            ttl: Some(Duration::from_secs(3600)),
            poll_interval: Duration::from_millis(500),
            max_per_principal: 1000,
            max_bytes_per_principal: DEFAULT_MAX_TASK_BYTES as u64,
            ledger: Arc::default(),
            running: tokio_util::task::TaskTracker::new(),
            stopping: tokio_util::sync::CancellationToken::new(),
        }
    }
}

/// A new task id: 128 bits from the operating system, in lowercase hex;
/// `None` when it has no random numbers to give.
fn new_task_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(hex::encode(bytes))
}

/// Whether `id` is written as this crate writes task ids.
pub(crate) fn is_task_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Now, in milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, duration_ms)
}

/// `ms` milliseconds since the Unix epoch as ISO 8601 in UTC:
/// `2026-12-03T19:04:05.123Z`.
pub(crate) fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        ms % 1000
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso_8601_in_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(1_796_325_845_123), "2026-12-03T19:24:05.123Z");
    }

    #[test]
    fn task_ids_are_128_random_bits_in_hex() {
        let a = new_task_id().unwrap();
        let b = new_task_id().unwrap();
        assert!(is_task_id(&a) && is_task_id(&b));
        assert_ne!(a, b);
    }

    #[tokio::test]
    async fn an_ended_task_is_kept_for_its_time_to_live_from_its_end_then_deleted() {
        let store = MemoryTaskStore::new();
        let mut task = TaskState::new(
            "me".into(),
            "t".into(),
            Some(Duration::ZERO),
            Duration::from_secs(1),
        )
        .unwrap();
        store.create(&task, 1).await.unwrap();
        // A running task never expires.
        assert!(store.get(&task.task_id).await.unwrap().is_some());
        task.set_status(TaskStatus::Completed, Some(Duration::ZERO));
        store.put(&task).await.unwrap();
        std::thread::sleep(Duration::from_millis(2));
        assert!(store.get(&task.task_id).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_principal_holds_at_most_the_bound_of_tasks() {
        let store = MemoryTaskStore::new();
        let ttl = Some(Duration::from_secs(60));
        let first = TaskState::new("me".into(), "t".into(), ttl, Duration::from_secs(1)).unwrap();
        store.create(&first, 1).await.unwrap();
        let second = TaskState::new("me".into(), "t".into(), ttl, Duration::from_secs(1)).unwrap();
        assert!(matches!(
            store.create(&second, 1).await,
            Err(TaskError::TooMany(1))
        ));
        let other = TaskState::new("you".into(), "t".into(), ttl, Duration::from_secs(1)).unwrap();
        store.create(&other, 1).await.unwrap();
    }

    #[tokio::test]
    async fn tasks_count_against_their_counted_as_and_an_ended_one_frees_it_there() {
        let store = MemoryTaskStore::new();
        let poll = Duration::from_secs(1);
        let of = |peer: &str| {
            let mut task = TaskState::new(String::new(), "t".into(), Some(Duration::ZERO), poll)
                .expect("random numbers");
            task.counted_as = Some(format!("peer {peer}"));
            task
        };
        let mut first = of("192.0.2.1");
        store.create(&first, 1).await.unwrap();
        assert!(
            matches!(
                store.create(&of("192.0.2.1"), 1).await,
                Err(TaskError::TooMany(1))
            ),
            "the same peer is at its bound"
        );
        store.create(&of("192.0.2.2"), 1).await.unwrap();
        let anonymous = TaskState::new(String::new(), "t".into(), None, poll).unwrap();
        store.create(&anonymous, 1).await.unwrap();
        // An ended task past its time to live frees its place.
        first.set_status(TaskStatus::Completed, Some(Duration::ZERO));
        store.put(&first).await.unwrap();
        std::thread::sleep(Duration::from_millis(2));
        store.create(&of("192.0.2.1"), 1).await.unwrap();
    }
}
