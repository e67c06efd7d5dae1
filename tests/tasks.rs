//! The tasks extension (`io.modelcontextprotocol/tasks`) for 2026-07-28
//! requests, over an in-process connection: which call becomes a task,
//! `tasks/get`, `tasks/update` and `tasks/cancel`, who may see a task, and
//! the bound on tasks per principal (docs/model-context.md §8).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use clawmcp::client::Elicitation;
use clawmcp::definition::ToolDefinition;
use clawmcp::task::TaskSupport;
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
    let asked = json!({"notifications": {"taskIds": [id, bobs, "not-a-task"]}});
    let listen = request("subscriptions/listen", asked, true);
    client.send(&listen).await;
    let ack = client
        .notification("notifications/subscriptions/acknowledged")
        .await
        .expect("an acknowledgement");
    assert_eq!(
        ack["notifications"]["taskIds"],
        json!([id]),
        "another's task and a malformed id are not agreed: {ack}"
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
