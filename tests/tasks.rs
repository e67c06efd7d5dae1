//! The tasks extension (`io.modelcontextprotocol/tasks`) for 2026-07-28
//! requests, over an in-process connection: which call becomes a task,
//! `tasks/get`, `tasks/update` and `tasks/cancel`, who may see a task, and
//! the bound on tasks per principal (docs/model-context.md §8).

mod http_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use clawmcp::client::Elicitation;
use clawmcp::definition::ToolDefinition;
use clawmcp::task::{
    MemoryTaskStore, TaskError, TaskSignal, TaskState, TaskStatus, TaskStore, TaskSupport,
};
use clawmcp::testing::TestClient;
use clawmcp::tool::rich_tool_fn;
use clawmcp::{Principal, Server, ToolContext, ToolError, ToolOutput};
use serde_json::{Value, json};

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn def(name: &str) -> ToolDefinition {
    ToolDefinition {
        mcp_id: format!("mcp://tasks-test/tools/{name}:v1"),
        name: name.into(),
        description: format!("The {name} fixture."),
        input_schema: json!({"type": "object"}),
        output_schema: json!({}),
    }
}

/// `slow` sleeps `ms`; `ask` asks for a name and counts its runs;
/// `required` runs only as a task; `plain` never does.
fn server(runs: &Arc<AtomicUsize>, most: usize) -> Server {
    let counted = runs.clone();
    Server::builder()
        .tool(
            rich_tool_fn(def("slow"), |args: Value, ctx: ToolContext| async move {
                ctx.set_status_message("sleeping").await;
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(ToolOutput::text(format!("slept {ms}")))
            })
            .with_task_support(TaskSupport::Optional),
        )
        .tool(
            rich_tool_fn(def("ask"), move |_args: Value, ctx: ToolContext| {
                let runs = counted.clone();
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    let form =
                        Elicitation::new("Name?").field("name", json!({"type": "string"}), true);
                    let answer = ctx.keyed("name").elicit(form).await?;
                    let name = answer
                        .content
                        .and_then(|c| c.get("name").and_then(Value::as_str).map(str::to_owned))
                        .unwrap_or_default();
                    Ok(ToolOutput::text(format!("Hello, {name}!")))
                }
            })
            .with_task_support(TaskSupport::Optional),
        )
        .tool(
            rich_tool_fn(
                def("required"),
                |_args: Value, _ctx: ToolContext| async move {
                    Err::<ToolOutput, _>(ToolError::new("it failed"))
                },
            )
            .with_task_support(TaskSupport::Required),
        )
        .tool(
            rich_tool_fn(def("gated"), |_args: Value, ctx: ToolContext| async move {
                let form = Elicitation::new("Name?").field("name", json!({"type": "string"}), true);
                let answer = ctx.elicit_before_task("user_name", form).await?;
                let name = answer
                    .content
                    .and_then(|c| c["name"].as_str().map(str::to_owned));
                tokio::time::sleep(Duration::from_millis(20)).await;
                Ok(ToolOutput::text(format!(
                    "Hello, {}!",
                    name.unwrap_or_default()
                )))
            })
            .with_task_support(TaskSupport::Required),
        )
        .tool(rich_tool_fn(
            def("plain"),
            |_args: Value, _ctx: ToolContext| async move { Ok(ToolOutput::text("plain")) },
        ))
        .task_poll_interval(Duration::from_millis(20))
        .max_tasks_per_principal(most)
        .build()
        .expect("the test server builds")
}

fn caps(tasks: bool) -> Value {
    let mut caps = json!({"elicitation": {}});
    if tasks {
        caps["extensions"] = json!({ TASKS: {} });
    }
    caps
}

fn request(method: &str, mut params: Value, tasks: bool) -> Value {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps(tasks),
    });
    json!({"jsonrpc": "2.0", "id": NEXT.fetch_add(1, Ordering::Relaxed), "method": method, "params": params})
}

async fn exchange(client: &mut TestClient, message: Value) -> Value {
    client.send(&message).await;
    client.reply(&message["id"]).await
}

async fn call(client: &mut TestClient, tool: &str, arguments: Value, tasks: bool) -> Value {
    exchange(
        client,
        request(
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
            tasks,
        ),
    )
    .await
}

async fn get(client: &mut TestClient, task_id: &str) -> Value {
    exchange(
        client,
        request("tasks/get", json!({"taskId": task_id}), true),
    )
    .await
}

/// Polls until the task's status is `want` or an end.
async fn until(client: &mut TestClient, task_id: &str, want: &str) -> Value {
    for _ in 0..500 {
        let reply = get(client, task_id).await;
        let status = reply["result"]["status"].as_str().unwrap_or("").to_owned();
        if status == want || ["completed", "failed", "cancelled"].contains(&status.as_str()) {
            return reply["result"].clone();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {task_id} never reached {want}");
}

fn task_id(reply: &Value) -> String {
    assert_eq!(reply["result"]["resultType"], "task", "{reply}");
    reply["result"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_owned()
}

fn ada() -> Principal {
    Principal::new("https://as.example").with_subject("ada")
}

#[tokio::test]
async fn a_declaring_call_to_a_task_tool_gets_a_task_whose_get_inlines_the_result() {
    let server = server(&Arc::default(), 10);
    let mut client = TestClient::connect_model_context(&server).await;
    let created = call(&mut client, "slow", json!({"ms": 50}), true).await;
    let id = task_id(&created);
    let task = &created["result"];
    assert_eq!(id.len(), 32, "128 random bits in hex");
    assert_eq!(task["status"], "working");
    assert!(
        task["createdAt"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{task}"
    );
    assert!(
        task["ttlMs"].as_u64().is_some() && task["pollIntervalMs"] == 20,
        "{task}"
    );
    assert!(task.get("result").is_none() && task.get("requestState").is_none());
    // It exists before its CreateTaskResult is read.
    let read = get(&mut client, &id).await;
    assert_eq!(read["result"]["resultType"], "complete");
    assert_eq!(read["result"]["taskId"], id.as_str());
    let ended = until(&mut client, &id, "completed").await;
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(ended["result"]["content"][0]["text"], "slept 50");
}

#[tokio::test]
async fn a_call_without_the_extension_is_answered_in_its_request_and_a_required_tool_refuses_it() {
    let server = server(&Arc::default(), 10);
    let mut client = TestClient::connect_model_context(&server).await;
    let plain = call(&mut client, "slow", json!({"ms": 0}), false).await;
    assert_eq!(plain["result"]["resultType"], "complete", "{plain}");
    assert_eq!(plain["result"]["content"][0]["text"], "slept 0");
    let refused = call(&mut client, "required", json!({}), false).await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert!(refused["error"]["data"]["requiredCapabilities"]["extensions"][TASKS].is_object());
    // A tool that never runs as a task answers a declaring request too.
    let never = call(&mut client, "plain", json!({}), true).await;
    assert_eq!(never["result"]["resultType"], "complete", "{never}");
}

#[tokio::test]
async fn a_tool_error_completes_the_task_with_is_error() {
    let server = server(&Arc::default(), 10);
    let mut client = TestClient::connect_model_context(&server).await;
    let id = task_id(&call(&mut client, "required", json!({}), true).await);
    let ended = until(&mut client, &id, "completed").await;
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(ended["result"]["isError"], true);
}

#[tokio::test]
async fn a_question_waits_in_input_requests_and_the_answer_resumes_the_same_call() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(&runs, 10);
    let mut client = TestClient::connect_model_context(&server).await;
    let id = task_id(&call(&mut client, "ask", json!({}), true).await);
    let waiting = until(&mut client, &id, "input_required").await;
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    assert_eq!(
        waiting["inputRequests"]["name"]["method"],
        "elicitation/create"
    );
    // An answer to no outstanding question changes nothing.
    let ignored = json!({"taskId": id, "inputResponses": {"other": {"action": "accept"}}});
    let ack = exchange(&mut client, request("tasks/update", ignored, true)).await;
    assert_eq!(
        ack["result"],
        json!({"resultType": "complete", "_meta": ack["result"]["_meta"]})
    );
    assert_eq!(
        get(&mut client, &id).await["result"]["status"],
        "input_required"
    );
    let answer = json!({"taskId": id, "inputResponses": {
        "name": {"action": "accept", "content": {"name": "Luca"}}}});
    exchange(&mut client, request("tasks/update", answer, true)).await;
    let ended = until(&mut client, &id, "completed").await;
    assert_eq!(
        ended["result"]["content"][0]["text"], "Hello, Luca!",
        "{ended}"
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the call ran once, not again with the answer"
    );
}

#[tokio::test]
async fn cancel_stops_a_running_task_and_an_ended_one_acks_the_same() {
    let server = server(&Arc::default(), 10);
    let mut client = TestClient::connect_model_context(&server).await;
    let id = task_id(&call(&mut client, "slow", json!({"ms": 60_000}), true).await);
    let ack = exchange(
        &mut client,
        request("tasks/cancel", json!({"taskId": id}), true),
    )
    .await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    assert!(ack["result"].get("taskId").is_none());
    let ended = until(&mut client, &id, "cancelled").await;
    assert_eq!(ended["status"], "cancelled", "{ended}");
    let again = exchange(
        &mut client,
        request("tasks/cancel", json!({"taskId": id}), true),
    )
    .await;
    assert_eq!(again["result"]["resultType"], "complete", "{again}");
}

#[tokio::test]
async fn tasks_methods_need_the_extension_a_known_id_and_tasks_list_is_not_a_method() {
    let server = server(&Arc::default(), 10);
    let mut client = TestClient::connect_model_context(&server).await;
    let undeclared = exchange(
        &mut client,
        request("tasks/get", json!({"taskId": "x"}), false),
    )
    .await;
    assert_eq!(undeclared["error"]["code"], -32021, "{undeclared}");
    let unknown = get(&mut client, &"0".repeat(32)).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    for method in ["tasks/list", "tasks/result"] {
        let reply = exchange(&mut client, request(method, json!({"taskId": "x"}), true)).await;
        assert_eq!(reply["error"]["code"], -32601, "{method}: {reply}");
    }
    let listen = json!({"notifications": {"taskIds": ["x"]}});
    let refused = exchange(&mut client, request("subscriptions/listen", listen, false)).await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
}

#[tokio::test]
async fn a_task_belongs_to_its_principal_and_another_one_finds_none() {
    let server = server(&Arc::default(), 10);
    let mut owner = TestClient::connect_as(&server, true, ada()).await;
    let id = task_id(&call(&mut owner, "slow", json!({"ms": 0}), true).await);
    assert!(get(&mut owner, &id).await.get("result").is_some());
    let bob = Principal::new("https://as.example").with_subject("bob");
    let mut other = TestClient::connect_as(&server, true, bob).await;
    let hidden = get(&mut other, &id).await;
    assert_eq!(
        hidden["error"]["code"], -32602,
        "as for an unknown id: {hidden}"
    );
    let cancel = exchange(
        &mut other,
        request("tasks/cancel", json!({"taskId": id}), true),
    )
    .await;
    assert_eq!(cancel["error"]["code"], -32602, "{cancel}");
}

#[tokio::test]
async fn a_principal_holds_at_most_the_bound_of_tasks() {
    let server = server(&Arc::default(), 1);
    let mut client = TestClient::connect_as(&server, true, ada()).await;
    task_id(&call(&mut client, "slow", json!({"ms": 60_000}), true).await);
    let refused = call(&mut client, "slow", json!({"ms": 0}), true).await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let bob = Principal::new("https://as.example").with_subject("bob");
    let mut other = TestClient::connect_as(&server, true, bob).await;
    task_id(&call(&mut other, "slow", json!({"ms": 0}), true).await);
}

/// A principal's tasks hold at most `max_task_bytes_per_principal` bytes
/// of arguments and state: a call past it runs nothing and is refused;
/// an ended task's arguments stop counting, its kept result does not.
#[tokio::test]
async fn a_principals_tasks_hold_at_most_the_bound_of_bytes_running_or_kept() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let big = rich_tool_fn(def("big"), move |args: Value, _ctx: ToolContext| {
        counted.fetch_add(1, Ordering::SeqCst);
        async move {
            let size = args.get("size").and_then(Value::as_u64).unwrap_or(0);
            let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(ToolOutput::text(
                "r".repeat(usize::try_from(size).unwrap_or(0)),
            ))
        }
    })
    .with_task_support(TaskSupport::Optional);
    let server = Server::builder()
        .tool(big)
        .task_poll_interval(Duration::from_millis(20))
        .max_task_bytes_per_principal(10_000)
        .build()
        .expect("the test server builds");
    let mut client = TestClient::connect_as(&server, true, ada()).await;
    let pad = "p".repeat(12_000);
    // Alone, a task passes whatever its size; while it runs it holds its
    // arguments, and the next call is refused before its tool runs.
    let first = task_id(&call(&mut client, "big", json!({"ms": 200, "pad": pad}), true).await);
    let refused = call(&mut client, "big", json!({}), true).await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let message = refused["error"].to_string();
    assert!(
        message.contains("bytes") && message.contains("10000"),
        "{message}"
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the refused call ran nothing"
    );
    // Another principal is not held back.
    let bob = Principal::new("https://as.example").with_subject("bob");
    let mut other = TestClient::connect_as(&server, true, bob).await;
    task_id(&call(&mut other, "big", json!({}), true).await);
    // Ended, its arguments go: a small kept result leaves room...
    until(&mut client, &first, "completed").await;
    let kept = task_id(&call(&mut client, "big", json!({"size": 12_000}), true).await);
    // ...and a large one is counted until its time to live has passed.
    until(&mut client, &kept, "completed").await;
    let refused = call(&mut client, "big", json!({}), true).await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
}

/// Without a token, tasks count against the peer's address (as streams
/// and sessions do): one client at its bound leaves the others theirs.
#[tokio::test]
async fn without_a_token_each_peer_address_holds_its_own_bound_of_tasks() {
    let server = server(&Arc::default(), 1);
    let (addr, _stop, _serve) = over_http(&server).await;
    let here = "127.0.0.1".parse().unwrap();
    let there = "127.0.0.2".parse().unwrap();
    let slow = |ms: u64| {
        request(
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": ms}}),
            true,
        )
    };
    let mut first = http_support::Client::connect_from(addr, here).await;
    let held = task_id(&post_2026(&mut first, &slow(60_000), "slow").await);
    let refused = post_2026(&mut first, &slow(0), "slow").await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let mut second = http_support::Client::connect_from(addr, there).await;
    let other = task_id(&post_2026(&mut second, &slow(0), "slow").await);
    assert_ne!(held, other);
    // The owner is still everyone without a token: the id is the secret.
    let read = post_2026(
        &mut second,
        &request("tasks/get", json!({"taskId": held}), true),
        &held,
    )
    .await;
    assert_eq!(read["result"]["status"], "working", "{read}");
}

#[tokio::test]
async fn at_shutdown_a_running_task_gets_the_grace_period_then_ends_failed() {
    let store = Arc::new(clawmcp::task::MemoryTaskStore::new());
    let slow = rich_tool_fn(def("slow"), |_args: Value, _ctx: ToolContext| async move {
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok(ToolOutput::text("never"))
    })
    .with_task_support(TaskSupport::Optional);
    let server = Server::builder()
        .tool(slow)
        .task_store(store.clone())
        .shutdown_grace(Duration::from_millis(50))
        .build()
        .expect("the test server builds");
    let mut client = TestClient::connect_model_context(&server).await;
    let id = task_id(&call(&mut client, "slow", json!({}), true).await);
    server.handle().shutdown();
    let store: &dyn clawmcp::task::TaskStore = &*store;
    for _ in 0..500 {
        let task = store.get(&id).await.unwrap().expect("the task is kept");
        if task.status.is_terminal() {
            assert_eq!(task.status, clawmcp::task::TaskStatus::Failed, "{task:?}");
            // (The Model Context Protocol answers shutdown -32603.)
            let error = task.error.as_ref().expect("a failed task's error");
            assert_eq!(error["code"], -32603, "{task:?}");
            assert_eq!(task.status_message.as_deref(), Some("server shutting down"));
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the task never ended after the grace period");
}

#[tokio::test]
async fn a_question_before_the_task_goes_back_in_the_request_and_the_retry_starts_the_task() {
    let server = server(&Arc::default(), 10);
    let mut client = TestClient::connect_model_context(&server).await;
    let first = call(&mut client, "gated", json!({}), true).await;
    let asked = &first["result"];
    assert_eq!(asked["resultType"], "input_required", "{first}");
    assert!(asked.get("taskId").is_none());
    assert_eq!(
        asked["inputRequests"]["user_name"]["method"],
        "elicitation/create"
    );
    let mut params = json!({"name": "gated", "arguments": {},
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}}});
    if let Some(state) = asked.get("requestState") {
        params["requestState"] = state.clone();
    }
    let retry = exchange(&mut client, request("tools/call", params, true)).await;
    let id = task_id(&retry);
    assert!(
        retry["result"].get("requestState").is_none()
            && retry["result"].get("inputRequests").is_none()
    );
    let ended = until(&mut client, &id, "completed").await;
    assert_eq!(
        ended["result"]["content"][0]["text"], "Hello, Alice!",
        "{ended}"
    );
}

/// The `notifications/tasks` of task `id` until one has status `want`.
async fn pushed_until(client: &mut TestClient, id: &str, want: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let params = client
            .notification("notifications/tasks")
            .await
            .expect("the stream goes on");
        assert_eq!(params["taskId"], id, "only the agreed task: {params}");
        let status = params["status"].as_str().unwrap_or_default().to_owned();
        seen.push(params);
        if status == want {
            return seen;
        }
    }
}

#[tokio::test]
async fn a_listen_stream_hears_each_new_state_of_the_callers_own_tasks_until_they_end() {
    let server = server(&Arc::default(), 10);
    let mut client = TestClient::connect_as(&server, true, ada()).await;
    let id = task_id(&call(&mut client, "ask", json!({}), true).await);
    let bob = Principal::new("https://as.example").with_subject("bob");
    let mut other = TestClient::connect_as(&server, true, bob).await;
    let bobs = task_id(&call(&mut other, "slow", json!({"ms": 60_000}), true).await);
    let asked = json!({"notifications": {"taskIds": [id, bobs, "not-a-task", id]}});
    let listen = request("subscriptions/listen", asked, true);
    client.send(&listen).await;
    let ack = client
        .notification("notifications/subscriptions/acknowledged")
        .await
        .expect("an acknowledgement");
    assert_eq!(
        ack["notifications"]["taskIds"],
        json!([id]),
        "another's task and a malformed id are not agreed, a repeated one once: {ack}"
    );
    // Its state when the stream began, then each new one: the question.
    let waiting = pushed_until(&mut client, &id, "input_required").await;
    let asking = waiting.last().expect("a state");
    assert_eq!(
        asking["inputRequests"]["name"]["method"], "elicitation/create",
        "as tasks/get shows it: {asking}"
    );
    assert_eq!(
        asking["_meta"]["io.modelcontextprotocol/subscriptionId"],
        listen["id"]
    );
    let answer = json!({"taskId": id, "inputResponses": {
        "name": {"action": "accept", "content": {"name": "Luca"}}}});
    exchange(&mut client, request("tasks/update", answer, true)).await;
    let ended = pushed_until(&mut client, &id, "completed").await;
    let last = ended.last().expect("a state");
    assert_eq!(
        last["result"]["content"][0]["text"], "Hello, Luca!",
        "{last}"
    );
    // An ended task is heard of no more; bob's never was.
    let later = client.collect(Duration::from_millis(100)).await;
    assert!(
        later.iter().all(|m| m["method"] != "notifications/tasks"),
        "{later:?}"
    );
}

/// A store whose saves wait `delay` milliseconds (a slow backend), and
/// whose next `failing` saves fail (a backend away for a moment), over
/// memory; `saves` counts the saves begun. A save of an ended state fails
/// until `ends_fail_until`. A creation waits `create_delay`, then fails
/// if `create_fails`.
#[derive(Debug, Default)]
struct SlowSaves {
    inner: Arc<MemoryTaskStore>,
    delay: AtomicU64,
    failing: AtomicUsize,
    saves: AtomicUsize,
    create_delay: AtomicU64,
    create_fails: AtomicBool,
    /// Until when every save of an ended state fails.
    ends_fail_until: std::sync::Mutex<Option<std::time::Instant>>,
}

#[async_trait::async_trait]
impl TaskStore for SlowSaves {
    async fn create(&self, task: &TaskState, most: usize) -> Result<(), TaskError> {
        let delay = self.create_delay.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(delay)).await;
        if self.create_fails.load(Ordering::SeqCst) {
            return Err(TaskError::Store("the backend is away".into()));
        }
        self.inner.create(task, most).await
    }
    async fn get(&self, task_id: &str) -> Result<Option<TaskState>, TaskError> {
        self.inner.get(task_id).await
    }
    async fn put(&self, task: &TaskState) -> Result<(), TaskError> {
        self.saves.fetch_add(1, Ordering::SeqCst);
        let delay = self.delay.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(delay)).await;
        let fails = self
            .failing
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        let down = (self.ends_fail_until.lock().unwrap())
            .is_some_and(|t| task.status.is_terminal() && std::time::Instant::now() < t);
        if fails.is_ok() || down {
            return Err(TaskError::Store("the backend is away".into()));
        }
        self.inner.put(task).await
    }
    async fn signal(&self, task_id: &str, signal: TaskSignal) -> Result<(), TaskError> {
        self.inner.signal(task_id, signal).await
    }
    fn signals_for(&self, task_id: &str) -> tokio::sync::mpsc::UnboundedReceiver<TaskSignal> {
        self.inner.signals_for(task_id)
    }
    fn changes(&self) -> tokio::sync::broadcast::Receiver<Arc<str>> {
        self.inner.changes()
    }
}

/// A server of `tool` alone, its tasks kept in `store`.
fn one_tool_server(tool: impl clawmcp::Tool, store: impl TaskStore) -> Server {
    Server::builder()
        .tool(tool)
        .task_store(store)
        .build()
        .expect("the test server builds")
}

/// The store's task `id` once it has ended.
async fn ended_in(store: &dyn TaskStore, id: &str) -> TaskState {
    for _ in 0..1000 {
        if let Some(task) = store.get(id).await.expect("the store works")
            && task.status.is_terminal()
        {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {id} never ended");
}

#[tokio::test]
async fn a_task_whose_creating_client_left_before_the_answer_still_runs_to_its_end() {
    let memory = Arc::new(MemoryTaskStore::new());
    let store = SlowSaves {
        inner: memory.clone(),
        delay: 200.into(),
        ..SlowSaves::default()
    };
    let server = one_tool_server(
        rich_tool_fn(def("slow"), |_args: Value, ctx: ToolContext| async move {
            ctx.set_status_message("working").await;
            Ok(ToolOutput::text("done"))
        })
        .with_task_support(TaskSupport::Optional),
        store,
    );
    let mut client = TestClient::connect_model_context(&server).await;
    let mut watch = memory.changes();
    client
        .send(&request(
            "tools/call",
            json!({"name": "slow", "arguments": {}}),
            true,
        ))
        .await;
    // The task exists (its first save is under way): the client leaves.
    let id = watch.recv().await.expect("the task's first save");
    drop(client);
    let task = ended_in(&*memory, &id).await;
    assert_eq!(task.status, TaskStatus::Completed, "{task:?}");
}

/// An answer that arrives while a save of the call's own is under way (a
/// slow store) does not wait for that save, which only the call's own
/// polling finishes: the call goes on and ends.
#[tokio::test]
async fn an_answer_during_a_save_of_the_calls_own_does_not_stop_the_call() {
    let memory = Arc::new(MemoryTaskStore::new());
    let store = Arc::new(SlowSaves {
        inner: memory.clone(),
        ..SlowSaves::default()
    });
    let go = Arc::new(tokio::sync::Notify::new());
    let told = go.clone();
    let server = one_tool_server(
        rich_tool_fn(
            def("asks_then_saves"),
            move |_args: Value, ctx: ToolContext| {
                let told = told.clone();
                async move {
                    let form =
                        Elicitation::new("Name?").field("name", json!({"type": "string"}), true);
                    let ask = ctx.keyed("name").elicit(form);
                    // A save of its own, once told, while it waits.
                    let save = async {
                        told.notified().await;
                        ctx.set_status_message("saving").await;
                    };
                    let (answer, ()) = tokio::join!(ask, save);
                    answer?;
                    Ok(ToolOutput::text("done"))
                }
            },
        )
        .with_task_support(TaskSupport::Optional),
        store.clone(),
    );
    let mut client = TestClient::connect_model_context(&server).await;
    let id = task_id(&call(&mut client, "asks_then_saves", json!({}), true).await);
    let waiting = until(&mut client, &id, "input_required").await;
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    // Its next save takes a second: the answer comes meanwhile.
    store.delay.store(1000, Ordering::SeqCst);
    let before = store.saves.load(Ordering::SeqCst);
    go.notify_one();
    while store.saves.load(Ordering::SeqCst) == before {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let answer = json!({"taskId": id, "inputResponses": {
        "name": {"action": "accept", "content": {"name": "Luca"}}}});
    exchange(&mut client, request("tasks/update", answer, true)).await;
    let task = ended_in(&*memory, &id).await;
    assert_eq!(task.status, TaskStatus::Completed, "{task:?}");
}

/// A `tasks/update` is acknowledged once the task's saved state has taken
/// its answers: the `tasks/get` the client sends next no longer lists the
/// question it answered, though the store takes its time to save, and
/// still lists the one it did not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_get_after_an_acknowledged_answer_reads_the_answer_taken() {
    let memory = Arc::new(MemoryTaskStore::new());
    let store = Arc::new(SlowSaves {
        inner: memory.clone(),
        ..SlowSaves::default()
    });
    let server = one_tool_server(
        rich_tool_fn(
            def("asks_two"),
            |_args: Value, ctx: ToolContext| async move {
                let form =
                    |q: &str| Elicitation::new(q).field("name", json!({"type": "string"}), true);
                let (first, second) = tokio::join!(
                    ctx.keyed("first").elicit(form("First?")),
                    ctx.keyed("second").elicit(form("Second?"))
                );
                first?;
                second?;
                Ok(ToolOutput::text("both"))
            },
        )
        .with_task_support(TaskSupport::Optional),
        store.clone(),
    );
    let mut client = TestClient::connect_model_context(&server).await;
    let id = task_id(&call(&mut client, "asks_two", json!({}), true).await);
    let mut waiting = until(&mut client, &id, "input_required").await;
    while waiting["inputRequests"].as_object().map_or(0, |r| r.len()) < 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        waiting = get(&mut client, &id).await["result"].clone();
    }
    // Each save now takes 200 ms.
    store.delay.store(200, Ordering::SeqCst);
    let answer = json!({"taskId": id, "inputResponses": {
        "first": {"action": "accept", "content": {"name": "Ada"}}}});
    exchange(&mut client, request("tasks/update", answer, true)).await;
    let read = get(&mut client, &id).await["result"].clone();
    let asked = read["inputRequests"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    assert!(
        !asked.contains_key("first"),
        "the answered question: {read}"
    );
    assert!(asked.contains_key("second"), "the other question: {read}");
    assert_eq!(read["status"], "input_required", "{read}");
    let answer = json!({"taskId": id, "inputResponses": {
        "second": {"action": "accept", "content": {"name": "Bo"}}}});
    exchange(&mut client, request("tasks/update", answer, true)).await;
    let task = ended_in(&*memory, &id).await;
    assert_eq!(task.status, TaskStatus::Completed, "{task:?}");
}

/// A tool that asks before its task (`elicit_before_task`) from a task it
/// spawned, once its request is on its way to becoming a task (the store
/// takes its time to create it): the question is the task's, and the
/// task's answer reaches it. If the task is never created, the question
/// ends `Cancelled`.
fn asks_from_a_spawned_task(
    asked: tokio::sync::mpsc::UnboundedSender<&'static str>,
) -> impl clawmcp::Tool {
    rich_tool_fn(def("asks_later"), move |_args: Value, ctx: ToolContext| {
        let asked = asked.clone();
        async move {
            let asking = tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let form = Elicitation::new("Name?").field("name", json!({"type": "string"}), true);
                let answer = ctx.elicit_before_task("name", form).await;
                let _ = asked.send(match &answer {
                    Ok(_) => "answered",
                    Err(clawmcp::client::ClientError::Cancelled) => "cancelled",
                    Err(_) => "failed",
                });
                answer
            });
            asking.await.expect("the asking task ran")?;
            Ok(ToolOutput::text("done"))
        }
    })
    .with_task_support(TaskSupport::Optional)
}

#[tokio::test]
async fn a_question_asked_while_the_task_is_created_is_the_tasks() {
    let memory = Arc::new(MemoryTaskStore::new());
    let store = SlowSaves {
        inner: memory.clone(),
        create_delay: 200.into(),
        ..SlowSaves::default()
    };
    let (asked, mut answers) = tokio::sync::mpsc::unbounded_channel();
    let server = one_tool_server(asks_from_a_spawned_task(asked), store);
    let mut client = TestClient::connect_model_context(&server).await;
    let id = task_id(&call(&mut client, "asks_later", json!({}), true).await);
    let waiting = until(&mut client, &id, "input_required").await;
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    let answer = json!({"taskId": id, "inputResponses": {
        "name": {"action": "accept", "content": {"name": "Luca"}}}});
    exchange(&mut client, request("tasks/update", answer, true)).await;
    assert_eq!(
        until(&mut client, &id, "completed").await["status"],
        "completed"
    );
    assert_eq!(answers.recv().await, Some("answered"));
}

#[tokio::test]
async fn a_question_asked_while_the_task_fails_to_be_created_is_cancelled() {
    let store = SlowSaves {
        create_delay: 200.into(),
        create_fails: true.into(),
        ..SlowSaves::default()
    };
    let (asked, mut answers) = tokio::sync::mpsc::unbounded_channel();
    let server = one_tool_server(asks_from_a_spawned_task(asked), store);
    let mut client = TestClient::connect_model_context(&server).await;
    let reply = call(&mut client, "asks_later", json!({}), true).await;
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    let ended = tokio::time::timeout(Duration::from_secs(10), answers.recv()).await;
    assert_eq!(ended.expect("the question ends"), Some("cancelled"));
}

/// The memory store refuses a save of a task it does not hold (expired,
/// say): the runner then stops its call.
#[tokio::test]
async fn a_save_of_a_task_the_memory_store_does_not_hold_is_ended() {
    let task = TaskState::new(String::new(), "t".into(), None, Duration::from_secs(1))
        .expect("the system's random numbers");
    let saved = MemoryTaskStore::new().put(&task).await;
    assert!(matches!(saved, Err(TaskError::Ended)), "{saved:?}");
}

/// A store that fails for a moment does not lose the task's end: the
/// save is tried again, with the newest state.
/// A tool that answers at once, run as a task when asked.
fn quick() -> impl clawmcp::Tool {
    rich_tool_fn(def("quick"), |_args: Value, _ctx: ToolContext| async move {
        Ok(ToolOutput::text("done"))
    })
    .with_task_support(TaskSupport::Optional)
}

#[tokio::test]
async fn a_task_whose_saves_fail_for_a_moment_still_records_its_end() {
    let memory = Arc::new(MemoryTaskStore::new());
    let store = SlowSaves {
        inner: memory.clone(),
        // Two tries of its first saves.
        failing: 2.into(),
        ..SlowSaves::default()
    };
    let server = one_tool_server(quick(), store);
    let mut client = TestClient::connect_model_context(&server).await;
    let reply = call(&mut client, "quick", json!({}), true).await;
    let task = ended_in(&*memory, &task_id(&reply)).await;
    assert_eq!(task.status, TaskStatus::Completed, "{task:?}");
}

/// A task's end is tried again until its store takes it: a result is
/// never given up while its runner lives, however long the store fails.
/// (Real time, about 33 s: the store fails for longer than the 30 s after
/// which a save used to be given up, and tokio's paused clock would need
/// its `test-util` feature in every build of the examples, benchmarks
/// included.)
#[tokio::test]
async fn a_tasks_end_is_saved_however_long_its_store_fails() {
    let memory = Arc::new(MemoryTaskStore::new());
    let store = SlowSaves {
        inner: memory.clone(),
        ends_fail_until: Some(std::time::Instant::now() + Duration::from_secs(31)).into(),
        ..SlowSaves::default()
    };
    let server = one_tool_server(quick(), store);
    let mut client = TestClient::connect_model_context(&server).await;
    let id = task_id(&call(&mut client, "quick", json!({}), true).await);
    // (Saved by 33 s: the tries are at most 2 s apart.)
    for _ in 0..400 {
        let task = memory.get(&id).await.unwrap().expect("the task");
        if task.status.is_terminal() {
            assert_eq!(task.status, TaskStatus::Completed, "{task:?}");
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the task's end was never saved");
}

#[tokio::test]
async fn an_ended_state_is_never_replaced_and_its_runner_stops_the_call() {
    let store = Arc::new(MemoryTaskStore::new());
    let ticks = Arc::new(AtomicUsize::new(0));
    let counted = ticks.clone();
    let ticking = rich_tool_fn(def("ticking"), move |_args: Value, ctx: ToolContext| {
        let ticks = counted.clone();
        async move {
            loop {
                ticks.fetch_add(1, Ordering::SeqCst);
                ctx.set_status_message("tick").await;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    })
    .with_task_support(TaskSupport::Optional);
    let server = one_tool_server(ticking, store.clone());
    let mut client = TestClient::connect_model_context(&server).await;
    let id = task_id(&call(&mut client, "ticking", json!({}), true).await);
    // Another process fails it (its runner seemed dead, say).
    let mut failed = store.get(&id).await.unwrap().expect("the task");
    failed.error = Some(json!({"code": -32603, "message": "failed elsewhere"}));
    failed.set_status(TaskStatus::Failed, Some(Duration::from_secs(60)));
    store
        .put(&failed)
        .await
        .expect("a running task's state is saved");
    assert!(
        matches!(store.put(&failed).await, Err(TaskError::Ended)),
        "an ended state is never replaced"
    );
    // The runner's next save finds it ended and stops the call.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stopped = ticks.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        ticks.load(Ordering::SeqCst),
        stopped,
        "the call was stopped"
    );
    let kept = store.get(&id).await.unwrap().expect("the task");
    assert_eq!(kept, failed, "the ended state stays as it ended");
}

#[tokio::test]
async fn a_question_the_tool_stops_waiting_for_is_withdrawn() {
    let store = Arc::new(MemoryTaskStore::new());
    let asked = Arc::new(AtomicBool::new(false));
    let gave_up = asked.clone();
    let impatient = rich_tool_fn(def("impatient"), move |_args: Value, ctx: ToolContext| {
        let gave_up = gave_up.clone();
        async move {
            let form = Elicitation::new("Name?").field("name", json!({"type": "string"}), true);
            let waited = tokio::time::timeout(Duration::from_millis(50), ctx.elicit(form)).await;
            assert!(waited.is_err(), "nobody answers");
            gave_up.store(true, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(ToolOutput::text("never"))
        }
    })
    .with_task_support(TaskSupport::Optional);
    let server = one_tool_server(impatient, store.clone());
    let mut client = TestClient::connect_model_context(&server).await;
    let id = task_id(&call(&mut client, "impatient", json!({}), true).await);
    let waiting = until(&mut client, &id, "input_required").await;
    assert!(
        waiting["inputRequests"]
            .as_object()
            .is_some_and(|q| q.len() == 1),
        "{waiting}"
    );
    for _ in 0..500 {
        let task = get(&mut client, &id).await["result"].clone();
        if asked.load(Ordering::SeqCst) && task["status"] == "working" {
            assert!(task.get("inputRequests").is_none(), "{task}");
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the question the tool gave up on stayed outstanding");
}

/// A loopback HTTP server of `server`, stopped by the sender (or its drop).
async fn over_http(
    server: &Server,
) -> (
    std::net::SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = server.clone();
    let serve = tokio::spawn(async move {
        let config = clawmcp::transport::HttpConfig::default();
        serving
            .serve_http_on(listener, config, async {
                let _ = stopped.await;
            })
            .await
    });
    (addr, stop, serve)
}

/// A 2026-07-28 `POST` of `message` with the headers that mirror it.
async fn post_2026(client: &mut http_support::Client, message: &Value, name: &str) -> Value {
    let method = message["method"].as_str().unwrap_or_default();
    let mut headers = vec![
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if !name.is_empty() {
        headers.push(("mcp-name", name));
    }
    let body = http_support::full(serde_json::to_vec(message).unwrap());
    client
        .exchange(http_support::post_with(&headers, body))
        .await
        .json()
}

#[tokio::test]
async fn a_method_the_revision_lacks_is_not_found_before_its_meta_is_read() {
    let server = server(&Arc::default(), 10);
    let (addr, _stop, _serve) = over_http(&server).await;
    let mut client = http_support::Client::connect(addr).await;
    for method in ["tasks/list", "tasks/result", "no/such"] {
        let bare = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {}});
        let reply = post_2026(&mut client, &bare, "").await;
        assert_eq!(reply["error"]["code"], -32601, "{method}: {reply}");
    }
}

#[tokio::test]
async fn an_http_servers_shutdown_gives_running_tasks_the_grace_period_and_records_their_end() {
    let store = Arc::new(MemoryTaskStore::new());
    let server = Server::builder()
        .tool(
            rich_tool_fn(def("slow"), |_args: Value, _ctx: ToolContext| async move {
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok(ToolOutput::text("never"))
            })
            .with_task_support(TaskSupport::Optional),
        )
        .task_store(store.clone())
        .shutdown_grace(Duration::from_millis(100))
        .build()
        .expect("the test server builds");
    let (addr, stop, serve) = over_http(&server).await;
    let mut client = http_support::Client::connect(addr).await;
    let message = request("tools/call", json!({"name": "slow", "arguments": {}}), true);
    let id = task_id(&post_2026(&mut client, &message, "slow").await);
    drop(client);
    // The shutdown future, not the handle: the task's grace starts too,
    // and serve_http_on returns once its end is recorded.
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(10), serve)
        .await
        .expect("serve_http_on returns")
        .unwrap()
        .unwrap();
    let task = store.get(&id).await.unwrap().expect("the task is kept");
    assert_eq!(
        task.status,
        TaskStatus::Failed,
        "recorded before the return: {task:?}"
    );
    assert_eq!(task.status_message.as_deref(), Some("server shutting down"));
}
