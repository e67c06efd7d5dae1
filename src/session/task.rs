//! A task's life in this process (the tasks extension, docs/model-context.md
//! §8): the request that starts it is answered once the task is in the
//! store; its tool call then runs detached from that request, to its end,
//! which the store records. The call's questions to the client
//! (`ctx.elicit` and the like) put the task in `input_required` and wait,
//! in the same running call, for the answers a `tasks/update` brings; a
//! `tasks/cancel` fires its cancellation. Signals reach this process
//! through the store, whichever process the client sent them to.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

use super::job::Job;
use super::shared::Shared;
use crate::client::{ClientError, LogLevel};
use crate::dialect::{Dialect, Listing, ServerInner};
use crate::engine::operation::{self, Arguments};
use crate::engine::{Done, Failure, Work};
use crate::error::RpcError;
use crate::handle::ServerHandle;
use crate::jsonrpc::RequestId;
use crate::principal::{Caller, CountedAs};
use crate::round_trip::RoundTrip;
use crate::task::{TaskError, TaskSignal, TaskState, TaskStatus, json_size};
use crate::tool::{
    CancelReason, Cancellation, ClientLink, ClientRequest, ContextSource, LazyContext,
};

/// What a task is started with: the items its request was read against,
/// its work (a tool call) and what its request declared.
pub(crate) struct Start {
    pub(crate) listing: Arc<Listing>,
    pub(crate) work: Work,
    pub(crate) round: Option<Arc<RoundTrip>>,
    /// The span of the request that starts it (feature `otel`), the
    /// parent of the task's own.
    pub(crate) parent: Option<tracing::Span>,
}

/// The job of a request answered with a task: it creates the task in the
/// store, starts its call, and ends with the task as created.
pub(crate) fn starting(shared: &Arc<Shared>, id: RequestId, start: Start, caller: &Caller) -> Job {
    let listing = start.listing.clone();
    let round = start.round.clone();
    let work = create(shared.server.clone(), start, caller.clone());
    Job::of_work(
        listing,
        id,
        Dialect::Revision2026,
        caller,
        (None, None),
        work,
    )
    .in_round(round)
}

/// Creates the task (a `tasks/get` anywhere finds it once this returns)
/// and runs its call on in a task of its own. The call's first poll runs
/// here, first: a question it asks before the task exists
/// ([`ToolContext::elicit_before_task`](crate::ToolContext::elicit_before_task))
/// and the round cannot answer ends the request with the question instead
/// (`Failure::InputRequired`), and no task is made.
async fn create(server: Arc<ServerInner>, start: Start, caller: Caller) -> Result<Done, Failure> {
    let Work::CallTool { tool, arguments } = start.work else {
        return Err(Failure::Rpc(RpcError::internal(
            "only a tool call runs as a task",
        )));
    };
    let settings = &server.tasks;
    let name = start
        .listing
        .catalog
        .tools
        .get(tool)
        .map(|t| t.definition.name.clone())
        .unwrap_or_default();
    let (owner, capabilities) = match &start.round {
        Some(round) => (
            round.binding().owner().to_owned(),
            round.capabilities().clone(),
        ),
        None => (String::new(), Map::new()),
    };
    let mut task =
        TaskState::new(owner, name, settings.ttl, settings.poll_interval).ok_or_else(|| {
            Failure::Rpc(RpcError::internal(
                "the system gave no random numbers for a task id",
            ))
        })?;
    // A token's tasks count against its owner; a caller without one by its
    // peer's address, where the transport knows it.
    if caller.principal.is_none() {
        task.counted_as = CountedAs::of(&caller).map(|counted| counted.key());
    }
    // Counted before the call's first poll: a principal past its bytes
    // runs nothing.
    let arguments_bytes = match &arguments {
        Arguments::Text(text) => text.len() as u64,
        Arguments::Value(value) => json_size(value),
    };
    let reservation = settings
        .ledger
        .reserve(
            &task.task_id,
            task.counts_against(),
            arguments_bytes,
            settings.max_bytes_per_principal,
        )
        .map_err(|e| Failure::Rpc(RpcError::invalid_request(e.to_string())))?;
    let span = task_span(start.parent.as_ref(), &task.tool, &task.task_id);
    let runner = Arc::new(Runner {
        arguments_bytes,
        server: server.clone(),
        span,
        task: Mutex::new(task),
        waiting: Mutex::new(HashMap::new()),
        keys: Mutex::new(HashSet::new()),
        unnamed: AtomicUsize::new(0),
        capabilities,
        saving: tokio::sync::Mutex::new(()),
        round: start.round.clone(),
        created: AtomicBool::new(false),
        created_news: tokio::sync::Notify::new(),
        cancel: Cancellation::default(),
    });
    let call = Call {
        listing: start.listing,
        tool,
        arguments,
        caller,
    };
    let _ends = EndedUnlessCreated(runner.clone());
    let mut running = runner.clone().call(call);
    let first = std::future::poll_fn(|cx| Poll::Ready(running.as_mut().poll(cx))).await;
    // From here a question (from a task the call spawned) waits for the
    // task, and is the task's.
    if start.round.as_ref().is_some_and(|r| r.close()) {
        return Err(Failure::InputRequired);
    }
    let task_id = runner.lock().task_id.clone();
    // Heard before the task exists, so that no signal is missed.
    let signals = settings.store.signals_for(&task_id);
    let seed = runner.lock().clone();
    settings
        .store
        .create(&seed, settings.max_per_principal)
        .await
        .map_err(|e| {
            Failure::Rpc(match e {
                TaskError::TooMany(_) => RpcError::invalid_request(e.to_string()),
                TaskError::Ended | TaskError::Store(_) => RpcError::internal(e.to_string()),
            })
        })?;
    runner.created.store(true, Ordering::Release);
    runner.created_news.notify_waiters();
    reservation.kept();
    let created = runner.lock().clone();
    // From here the task exists: it runs to its end whatever becomes of
    // the request that created it (a client gone before the answer leaves
    // no task `working` for ever).
    settings.running.spawn(async move {
        // What the first poll changed, if anything, is saved now.
        runner.save().await;
        match first {
            Poll::Ready(handled) => runner.end(handled.reply.map(|r| r.bytes).as_deref()).await,
            Poll::Pending => runner.run_on(running, signals).await,
        }
    });
    Ok(Done::TaskCreated(Box::new(created)))
}

/// Ends the call's request when dropped before the task exists (its
/// request asked first, the store refused it, or the request stopped
/// while it was created): the call goes with it, and a question its
/// spawned work waits on stops waiting.
struct EndedUnlessCreated(Arc<Runner>);

impl Drop for EndedUnlessCreated {
    fn drop(&mut self) {
        if !self.0.created.load(Ordering::Acquire) {
            self.0.cancel.end();
        }
    }
}

/// After how long a save its store keeps failing is logged as an error
/// (it is still tried again).
const SAVE_LATE: Duration = Duration::from_secs(30);

/// A task's tool call.
struct Call {
    listing: Arc<Listing>,
    tool: usize,
    arguments: Arguments,
    caller: Caller,
}

/// A task's call, running: its reply (none when it was cancelled).
type RunningTask = Pin<Box<dyn Future<Output = super::outbox::Handled> + Send>>;

/// A task this process runs: its state, the questions its call waits on,
/// and what its request declared.
struct Runner {
    server: Arc<ServerInner>,
    /// The size of the call's arguments, counted against its principal
    /// while it runs (`TaskLedger`).
    arguments_bytes: u64,
    /// The span its call runs in: a child of the creating request's
    /// (feature `otel`), ended with the task.
    span: tracing::Span,
    task: Mutex<TaskState>,
    /// The answer each outstanding question waits for, by key.
    waiting: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    /// Every key asked so far: a key is never used twice in a task's life.
    keys: Mutex<HashSet<String>>,
    unnamed: AtomicUsize,
    /// The client capabilities its request declared.
    capabilities: Map<String, Value>,
    /// Held while a state is saved, so that the last save carries the
    /// newest state.
    saving: tokio::sync::Mutex<()>,
    /// The round of the request that started it, whose questions come
    /// before the task exists.
    round: Option<Arc<RoundTrip>>,
    /// The task is in the store: saves go there from now on.
    created: AtomicBool,
    /// Told when `created` is set.
    created_news: tokio::sync::Notify,
    /// Stops the call.
    cancel: Cancellation,
}

impl Runner {
    /// The task's call, as a job on a session state of its own (which
    /// nobody reads), stopped by the runner's cancellation.
    fn call(self: Arc<Self>, call: Call) -> RunningTask {
        let task_id = self.lock().task_id.clone();
        let id = RequestId::String(task_id.as_str().into());
        let (shared, unread) = Shared::unread(self.server.clone(), Dialect::Revision2026);
        let span = self.span.clone();
        let mut cancel = Some(self.cancel.clone());
        let mut progress = None;
        let source = TaskSource(self.clone());
        let ctx = LazyContext::of_parts(
            &id,
            &mut cancel,
            &source,
            &span,
            &mut progress,
            &call.caller,
        )
        .get();
        let work =
            operation::call_tool(call.listing.clone(), call.tool, call.arguments, ctx, false);
        let job = Job::of_work(
            call.listing,
            id,
            Dialect::Revision2026,
            &call.caller,
            (Some(call.tool), Some(self.cancel.clone())),
            work,
        );
        Box::pin(async move {
            let _unread = unread;
            job.run_to_end(Arc::new(shared)).await
        })
    }

    /// Runs the call on to its end (or its cancellation), hearing the
    /// task's signals meanwhile, and records how it ended.
    async fn run_on(
        self: Arc<Self>,
        mut running: RunningTask,
        mut signals: mpsc::UnboundedReceiver<TaskSignal>,
    ) {
        // At shutdown (the handle's, or an HTTP server's) the call gets
        // the grace period, then ends `failed`, recorded.
        let stop = self.server.handle.stop_token().clone();
        let stopping = self.server.tasks.stopping.clone();
        let grace = self.server.limits.shutdown_grace;
        let out_of_grace = async move {
            tokio::select! {
                () = stop.cancelled() => {}
                () = stopping.cancelled() => {}
            }
            tokio::time::sleep(grace).await;
        };
        tokio::pin!(out_of_grace);
        let mut stopping = true;
        let handled = loop {
            tokio::select! {
                handled = &mut running => break handled,
                () = &mut out_of_grace, if stopping => {
                    stopping = false;
                    self.cancel.cancel(CancelReason::Shutdown);
                }
                Some(signal) = signals.recv() => match signal {
                    // Saved beside the call, not here: a save of the call's
                    // own may hold `saving`, and only this loop polls it.
                    TaskSignal::Answers { responses } => {
                        if self.answer(responses) {
                            let saving = self.clone();
                            (self.server.tasks.running).spawn(async move { saving.save().await });
                        }
                    }
                    TaskSignal::Cancel => self.cancel.cancel(CancelReason::Client),
                },
            }
        };
        self.end(handled.reply.map(|r| r.bytes).as_deref()).await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TaskState> {
        self.task.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until the task is in the store; `Cancelled` when its call
    /// stops first (its creation failed, say).
    async fn until_created(&self, cancel: &Cancellation) -> Result<(), ClientError> {
        loop {
            let news = self.created_news.notified();
            tokio::pin!(news);
            // Listen before looking, so that the news in between is heard.
            news.as_mut().enable();
            if self.created.load(Ordering::Acquire) {
                return Ok(());
            }
            tokio::select! {
                () = news => {}
                () = cancel.cancelled_or_ended() => return Err(ClientError::Cancelled),
            }
        }
    }

    /// Saves the task's state as it is now, once the task is in the store
    /// (until then its state waits here, and is created as it is). A store
    /// that fails (its backend away) is tried again, with the newest state
    /// each time, until it takes it, the task has ended elsewhere, or the
    /// process ends: a task's end, or its question, is never given up while
    /// its runner lives (and the runner, which keeps the task from being
    /// found dead, lives until its end is saved).
    async fn save(&self) {
        if !self.created.load(Ordering::Acquire) {
            return;
        }
        let first_try = tokio::time::Instant::now();
        let (mut wait, mut tries, mut told_late) = (Duration::from_millis(50), 0u32, false);
        loop {
            // The state is read under `saving`, so that saves land in the
            // order of their states; a retry waits outside it.
            let (task_id, saved) = {
                let _saving = self.saving.lock().await;
                let task = self.lock().clone();
                if !task.status.is_terminal() {
                    let bytes = self.arguments_bytes + json_size(&task);
                    self.server.tasks.ledger.resize(&task.task_id, bytes);
                }
                (
                    task.task_id.clone(),
                    self.server.tasks.store.put(&task).await,
                )
            };
            tries += 1;
            match saved {
                Ok(()) if tries > 1 => {
                    return tracing::info!(%task_id, "a task's state was saved after {tries} tries");
                }
                Ok(()) => return,
                // Ended elsewhere (failed as a dead process's, say): the
                // call has nobody to answer, and its state stays as it
                // ended.
                Err(TaskError::Ended) => return self.cancel.cancel(CancelReason::Gone),
                Err(e) => {
                    if tries == 1 {
                        tracing::warn!(%task_id, "a task's state was not saved (trying again): {e}");
                    } else if !told_late && first_try.elapsed() >= SAVE_LATE {
                        told_late = true;
                        tracing::error!(
                            %task_id,
                            "a task's state is still not saved after {SAVE_LATE:?} (trying until it is): {e}"
                        );
                    }
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(2));
                }
            }
        }
    }

    /// Hands the answers to the questions they answer; the task works
    /// again once none is outstanding. Answers to no outstanding question
    /// are ignored. Whether the state changed (and is to be saved).
    fn answer(&self, responses: Map<String, Value>) -> bool {
        let mut task = self.lock();
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let mut changed = false;
        for (key, answer) in responses {
            if let Some(waits) = waiting.remove(&key) {
                task.input_requests.remove(&key);
                let _ = waits.send(answer);
                changed = true;
            }
        }
        if changed && task.input_requests.is_empty() {
            task.set_status(TaskStatus::Working, None);
        }
        changed
    }

    /// Records how the call ended: its reply's result (`completed`) or
    /// error (`failed`), or none (`cancelled`).
    async fn end(&self, reply: Option<&[u8]>) {
        #[derive(Deserialize)]
        struct Reply {
            #[serde(default)]
            result: Option<Value>,
            #[serde(default)]
            error: Option<Value>,
        }
        let ended = reply.map(|bytes| {
            serde_json::from_slice::<Reply>(bytes).unwrap_or(Reply {
                result: None,
                error: Some(json!({"code": -32603, "message": "the call's reply did not read"})),
            })
        });
        {
            let ttl = self.server.tasks.ttl;
            let mut task = self.lock();
            match ended {
                None => task.set_status(TaskStatus::Cancelled, ttl),
                Some(Reply {
                    result: Some(result),
                    ..
                }) => {
                    task.result = Some(result);
                    task.set_status(TaskStatus::Completed, ttl);
                }
                Some(Reply { error, .. }) => {
                    let error =
                        error.unwrap_or_else(|| json!({"code": -32603, "message": "no result"}));
                    // (The error's data says more than its fixed message.)
                    task.status_message = ["data", "message"]
                        .iter()
                        .find_map(|k| error.get(k).and_then(Value::as_str))
                        .map(str::to_owned);
                    task.error = Some(error);
                    task.set_status(TaskStatus::Failed, ttl);
                }
            }
        }
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        #[cfg(feature = "otel")]
        self.record_end();
        // Counted as it ended here, before a client can read the end (and
        // whether or not it is saved: it may have ended elsewhere first):
        // its arguments go with the call, its state stays its time to live.
        let (task_id, bytes, expires_at_ms) = {
            let task = self.lock();
            (
                task.task_id.clone(),
                json_size(&*task),
                task.expires_at_ms(),
            )
        };
        (self.server.tasks.ledger).ended(&task_id, bytes, expires_at_ms);
        self.save().await;
    }

    /// Records how the task ended on its span (feature `otel`).
    #[cfg(feature = "otel")]
    fn record_end(&self) {
        use crate::trace_context::{SpanEnd, ended};
        let task = self.lock().clone();
        let message = task.status_message.as_deref().unwrap_or_default();
        let code = (task.error.as_ref())
            .and_then(|e| e.get("code")?.as_i64())
            .and_then(|c| i32::try_from(c).ok());
        let outcome = match (task.status, code) {
            (TaskStatus::Failed, Some(code)) => SpanEnd::Error(code, message),
            (TaskStatus::Failed, None) => SpanEnd::Failed("_OTHER", message),
            (TaskStatus::Cancelled, _) => SpanEnd::Failed("cancelled", "the task was cancelled"),
            (TaskStatus::Completed, _) if is_error(task.result.as_ref()) => {
                SpanEnd::ToolError(message)
            }
            _ => SpanEnd::Result,
        };
        ended(&self.span, outcome);
    }
}

/// Whether a tool result is marked an error (`isError`).
#[cfg(feature = "otel")]
fn is_error(result: Option<&Value>) -> bool {
    result.and_then(|r| r.get("isError")?.as_bool()) == Some(true)
}

/// The span a task's call runs in: a child of the span of the request
/// that created it (feature `otel`), else `task` at debug level.
fn task_span(parent: Option<&tracing::Span>, tool: &str, task_id: &str) -> tracing::Span {
    #[cfg(feature = "otel")]
    if let Some(parent) = parent.filter(|p| !p.is_disabled()) {
        return crate::trace_context::task_span(parent, tool, task_id);
    }
    let _ = (parent, tool);
    tracing::debug_span!("task", task_id = %task_id)
}

/// What a task's context is made from: the server's handle and the task's
/// link.
struct TaskSource(Arc<Runner>);

impl ContextSource for TaskSource {
    fn handle(&self) -> &ServerHandle {
        &self.0.server.handle
    }

    fn link(&self, _progress: Option<Box<RawValue>>) -> Option<Arc<dyn ClientLink>> {
        Some(Arc::new(TaskLink(self.0.clone())))
    }
}

/// A task's way back to its client: questions surface in `tasks/get` and
/// wait for `tasks/update`; no progress or log lines (the extension
/// carries none).
struct TaskLink(Arc<Runner>);

impl std::fmt::Debug for TaskLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("TaskLink").finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl ClientLink for TaskLink {
    async fn progress(&self, _: &RequestId, _: f64, _: Option<f64>, _: Option<&str>) {}

    fn logs(&self, _level: LogLevel) -> bool {
        false
    }

    async fn log(&self, _: &RequestId, _: LogLevel, _: Box<RawValue>) {}

    fn can_ask(&self, request: ClientRequest) -> Result<(), ClientError> {
        request.check_capability(self.0.capabilities.get(request.capability()))
    }

    async fn ask(
        &self,
        _related: &RequestId,
        request: ClientRequest,
        params: Box<RawValue>,
        key: Option<&str>,
        cancel: &Cancellation,
    ) -> Result<Value, ClientError> {
        self.can_ask(request)?;
        let runner = &self.0;
        let key = {
            let mut keys = runner.keys.lock().unwrap_or_else(PoisonError::into_inner);
            let mut key = key.map_or_else(
                || format!("input-{}", runner.unnamed.fetch_add(1, Ordering::Relaxed)),
                str::to_owned,
            );
            // A key names one question in a task's whole life.
            while keys.contains(&key) {
                key = format!("{key}-{}", runner.unnamed.fetch_add(1, Ordering::Relaxed));
            }
            keys.insert(key.clone());
            key
        };
        let method = method_of(request);
        let params: Value = serde_json::from_str(params.get()).unwrap_or(Value::Null);
        let (tx, answered) = oneshot::channel();
        {
            let mut task = runner.lock();
            // (A context kept past the call's end asks nobody.)
            if task.status.is_terminal() {
                return Err(ClientError::Gone);
            }
            task.input_requests
                .insert(key.clone(), json!({"method": method, "params": params}));
            task.set_status(TaskStatus::InputRequired, None);
            runner
                .waiting
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key.clone(), tx);
        }
        // Outstanding until answered, or until the tool stops waiting.
        let outstanding = Outstanding {
            runner: runner.clone(),
            key,
        };
        runner.save().await;
        let answer = tokio::select! {
            biased;
            answer = answered => answer.map_err(|_| ClientError::Gone),
            () = cancel.cancelled_or_ended() => Err(ClientError::Cancelled),
        };
        drop(outstanding);
        answer
    }

    fn client_capabilities(&self) -> Option<Value> {
        Some(Value::Object(self.0.capabilities.clone()))
    }

    async fn ask_before_task(
        &self,
        related: &RequestId,
        request: ClientRequest,
        params: Box<RawValue>,
        key: Option<&str>,
        cancel: &Cancellation,
    ) -> Result<Value, ClientError> {
        let runner = &self.0;
        let Some(round) = runner
            .round
            .as_ref()
            .filter(|_| !runner.created.load(Ordering::Acquire))
        else {
            return self.ask(related, request, params, key, cancel).await;
        };
        self.can_ask(request)?;
        let asked = super::link::ask_in_round(round, method_of(request), params, key, cancel);
        match asked.await {
            Ok(answered) => answered,
            // The request is becoming a task: the question is the task's,
            // once it exists.
            Err(params) => {
                runner.until_created(cancel).await?;
                self.ask(related, request, params, key, cancel).await
            }
        }
    }

    async fn status(&self, message: String) {
        {
            let mut task = self.0.lock();
            // (An ended task's state stays as it ended.)
            if task.status.is_terminal() {
                return;
            }
            task.status_message = Some(message);
            task.last_updated_at_ms = crate::task::now_ms();
        }
        self.0.save().await;
    }
}

/// A question the task shows in `inputRequests` while its tool waits for
/// the answer: when the tool stops waiting (it is cancelled, or it drops
/// the wait), the question is withdrawn, and the task works again once
/// none is outstanding. (An answered question was withdrawn already.)
struct Outstanding {
    runner: Arc<Runner>,
    key: String,
}

impl Drop for Outstanding {
    fn drop(&mut self) {
        let runner = &self.runner;
        let withdrawn = {
            let mut task = runner.lock();
            let mut waiting = runner
                .waiting
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let withdrawn = waiting.remove(&self.key).is_some()
                && task.input_requests.remove(&self.key).is_some();
            if withdrawn && task.input_requests.is_empty() && !task.status.is_terminal() {
                task.set_status(TaskStatus::Working, None);
            }
            withdrawn
        };
        if withdrawn && let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let saving = runner.clone();
            let tracker = &runner.server.tasks.running;
            tracker.spawn_on(async move { saving.save().await }, &runtime);
        }
    }
}

/// The method of a question to the client, as the 2026-07-28 revision
/// names it.
fn method_of(request: ClientRequest) -> &'static str {
    Dialect::Revision2026
        .to_client()
        .map_or("", |to_client| (to_client.method)(request))
}
