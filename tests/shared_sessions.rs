//! Streamable HTTP sessions shared between processes (docs/model-context.md
//! §5, "Sessions across processes"): two servers in one process stand for
//! two processes, each on its own loopback port, joined by a bus that
//! shares sessions (an in-memory hub standing for Redis). A session opened
//! on one is served by the other; a subscription made on one reaches the
//! `GET` stream held by the other; an elicitation answered to the other
//! reaches the tool, after a gap in the bus too; `DELETE` on one ends it
//! on both; one `GET` stream per
//! session across both, taken over once its holder is gone; a session's
//! subscriptions saved one at a time, within their bound.

mod http_support;
mod model_context_support;

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clawmcp::bus::{Bus, BusMessage, Inbox, SessionRecord, StreamClaim};
use clawmcp::client::LogLevel;
use clawmcp::transport::HttpConfig;
use clawmcp::{Server, SharedResource};
use http_body_util::BodyExt;
use http_support::{Client, ReqBody, empty, full, request};
use hyper::body::Incoming;
use hyper::{Method, Response, StatusCode};
use model_context_support::{PATIENCE, Probe, STATUS};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::time::timeout;

const ACCEPT: &str = "application/json, text/event-stream";

/// What the processes share: every inbox, the saved sessions, their
/// subscriptions, who holds each session's `GET` stream, and which
/// processes are gone (their claims are free).
#[derive(Default)]
struct Hub {
    inboxes: Mutex<Vec<(usize, Inbox)>>,
    sessions: Mutex<HashMap<String, SessionRecord>>,
    subscriptions: Mutex<HashMap<String, HashSet<String>>>,
    /// Each session's `GET` stream claim: the process, and the claim.
    streams: Mutex<HashMap<String, (usize, String)>>,
    gone: Mutex<HashSet<usize>>,
    /// The JSON length of every record saved.
    saved_sizes: Mutex<Vec<usize>>,
    /// Processes whose announcements are lost (they hear nothing).
    deaf: Mutex<HashSet<usize>>,
    /// How many renewals reached the store.
    renewals: Mutex<usize>,
    /// How many saves asked to write a session not ready over its ready
    /// state (which the store refuses).
    unreadying: Mutex<usize>,
    /// While set, each load reads the state when it is asked, then waits
    /// for a permit (a read that answers late).
    late_loads: Mutex<Option<Arc<tokio::sync::Semaphore>>>,
    /// How many loads were asked.
    loads: Mutex<usize>,
    /// How many of the next loads find nothing (a store slow to answer).
    unread_loads: Mutex<usize>,
    /// Every announcement published.
    announced: Mutex<Vec<BusMessage>>,
    /// The requests to the client a copy noted, by session.
    client_requests: Mutex<HashMap<String, HashSet<u64>>>,
    /// The client's responses kept, by session.
    client_responses: Mutex<HashMap<String, Vec<String>>>,
}

impl Hub {
    /// Waits until session `id` is saved ready (the 202 of `initialized`
    /// comes before the session takes it).
    async fn saved_ready(&self, id: &str) {
        timeout(PATIENCE, async {
            while !self.is_saved_ready(id) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("saved ready in time");
    }

    /// Whether session `id` is saved ready.
    fn is_saved_ready(&self, id: &str) -> bool {
        (self.sessions.lock().unwrap().get(id)).is_some_and(|r| r.ready)
    }

    /// The client says `initialized` to `on` (and it is saved) while
    /// process `deaf` hears no announcement; it stays deaf.
    async fn initialized_unheard(&self, on: &Process, id: &str, deaf: usize) {
        self.deaf.lock().unwrap().insert(deaf);
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (_c, response) = send(on, post(Some(id), &initialized)).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED);
        self.saved_ready(id).await;
    }

    /// Tells process `who` that it may have missed announcements.
    fn gap(&self, who: usize) {
        let inboxes = self.inboxes.lock().unwrap().clone();
        inboxes
            .iter()
            .filter(|(me, _)| *me == who)
            .for_each(|(_, inbox)| inbox.gap());
    }
}

/// One process's end of the hub.
struct End {
    hub: Arc<Hub>,
    me: usize,
}

impl Bus for End {
    fn publish(&self, message: BusMessage) {
        self.hub.announced.lock().unwrap().push(message.clone());
        let inboxes = self.hub.inboxes.lock().unwrap().clone();
        let deaf = self.hub.deaf.lock().unwrap().clone();
        for (who, inbox) in inboxes {
            if who != self.me && !deaf.contains(&who) {
                inbox.deliver(message.clone());
            }
        }
    }

    fn start(&self, inbox: Inbox) {
        self.hub.inboxes.lock().unwrap().push((self.me, inbox));
    }

    fn shares_sessions(&self) -> bool {
        true
    }

    /// Saved as `Bus::save_session` says: readiness never goes back, and
    /// an ended session stays ended.
    fn save_session(&self, id: &str, record: &SessionRecord, _ttl: Duration) {
        let size = serde_json::to_string(record).expect("a record").len();
        self.hub.saved_sizes.lock().unwrap().push(size);
        let mut sessions = self.hub.sessions.lock().unwrap();
        if sessions.get(id).is_some_and(|r| r.ended) {
            return;
        }
        let was_ready = sessions.get(id).is_some_and(|r| r.ready);
        if was_ready && !record.ready {
            *self.hub.unreadying.lock().unwrap() += 1;
        }
        let mut record = record.clone();
        record.ready |= was_ready;
        sessions.insert(id.to_owned(), record);
    }

    /// Renewed as `Bus::renew_session` says: what is stored stays.
    fn renew_session(&self, id: &str, record: &SessionRecord, ttl: Duration) {
        *self.hub.renewals.lock().unwrap() += 1;
        if !self.hub.sessions.lock().unwrap().contains_key(id) {
            self.save_session(id, record, ttl);
        }
    }

    fn save_subscription(&self, id: &str, uri: &str, on: bool, _ttl: Duration) {
        let mut all = self.hub.subscriptions.lock().unwrap();
        let uris = all.entry(id.to_owned()).or_default();
        if on {
            uris.insert(uri.to_owned());
        } else {
            uris.remove(uri);
        }
    }

    fn save_client_request(&self, id: &str, request: u64, _ttl: Duration) {
        let mut all = self.hub.client_requests.lock().unwrap();
        all.entry(id.to_owned()).or_default().insert(request);
    }

    /// Handed once, for a request a copy noted, as `Bus` says: kept and
    /// announced.
    fn hand_client_response(&self, id: &str, request: u64, response: &str, _ttl: Duration) {
        let mut requests = self.hub.client_requests.lock().unwrap();
        if !requests.get_mut(id).is_some_and(|r| r.remove(&request)) {
            return;
        }
        drop(requests);
        let mut all = self.hub.client_responses.lock().unwrap();
        all.entry(id.to_owned())
            .or_default()
            .push(response.to_owned());
        drop(all);
        self.publish(BusMessage::ClientResponse {
            session: id.to_owned(),
            message: response.to_owned(),
        });
    }

    fn load_client_responses<'a>(
        &'a self,
        id: &'a str,
    ) -> Pin<Box<dyn std::future::Future<Output = Vec<String>> + Send + 'a>> {
        let responses = self.hub.client_responses.lock().unwrap();
        let kept = responses.get(id).cloned().unwrap_or_default();
        Box::pin(async move { kept })
    }

    /// Keeps the ended session's mark, as the Redis bus does.
    fn remove_session(&self, id: &str) {
        let ended = SessionRecord::ended_mark();
        self.hub
            .sessions
            .lock()
            .unwrap()
            .insert(id.to_owned(), ended);
        self.hub.subscriptions.lock().unwrap().remove(id);
        self.hub.streams.lock().unwrap().remove(id);
    }

    fn load_session<'a>(
        &'a self,
        id: &'a str,
    ) -> Pin<Box<dyn std::future::Future<Output = Option<SessionRecord>> + Send + 'a>> {
        *self.hub.loads.lock().unwrap() += 1;
        let mut record = self.hub.sessions.lock().unwrap().get(id).cloned();
        let mut unread = self.hub.unread_loads.lock().unwrap();
        if *unread > 0 {
            *unread -= 1;
            record = None;
        }
        drop(unread);
        if let Some(record) = &mut record {
            let uris = self.hub.subscriptions.lock().unwrap();
            record.subscriptions = uris.get(id).into_iter().flatten().cloned().collect();
        }
        let late = self.hub.late_loads.lock().unwrap().clone();
        Box::pin(async move {
            if let Some(late) = late {
                let _permit = late.acquire().await;
            }
            record
        })
    }

    fn claim_stream<'a>(
        &'a self,
        id: &'a str,
        claim: &'a str,
        _lease: Duration,
    ) -> Pin<Box<dyn std::future::Future<Output = StreamClaim> + Send + 'a>> {
        let gone = self.hub.gone.lock().unwrap().clone();
        let mut streams = self.hub.streams.lock().unwrap();
        let answer = match streams.get(id) {
            Some((holder, _)) if *holder != self.me && !gone.contains(holder) => {
                StreamClaim::HeldElsewhere
            }
            _ => {
                streams.insert(id.to_owned(), (self.me, claim.to_owned()));
                StreamClaim::Granted
            }
        };
        Box::pin(async move { answer })
    }

    fn release_stream(&self, id: &str, claim: &str) {
        let mut streams = self.hub.streams.lock().unwrap();
        if streams.get(id) == Some(&(self.me, claim.to_owned())) {
            streams.remove(id);
        }
    }
}

/// One "process": a server of the test items on a loopback port.
struct Process {
    addr: SocketAddr,
    status: SharedResource,
    _server: Server,
}

async fn process(hub: &Arc<Hub>, me: usize) -> Process {
    process_with(hub, me, HttpConfig::default()).await
}

async fn process_with(hub: &Arc<Hub>, me: usize, config: HttpConfig) -> Process {
    let probe = Probe::default();
    let status = model_context_support::status();
    let server = model_context_support::builder(&probe, &status)
        .bus(End {
            hub: hub.clone(),
            me,
        })
        .build()
        .expect("builds");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let addr = listener.local_addr().expect("an address");
    let serving = server.clone();
    tokio::spawn(async move {
        serving
            .serve_http_on(listener, config, std::future::pending())
            .await
    });
    Process {
        addr,
        status,
        _server: server,
    }
}

fn post(session: Option<&str>, message: &Value) -> hyper::Request<ReqBody> {
    let mut headers = vec![("content-type", "application/json"), ("accept", ACCEPT)];
    if let Some(id) = session {
        headers.push(("mcp-session-id", id));
    }
    let body = full(serde_json::to_vec(message).expect("serialisable"));
    request(Method::POST, "/mcp", &headers, body)
}

async fn send(to: &Process, request: hyper::Request<ReqBody>) -> (Client, Response<Incoming>) {
    let mut client = Client::connect(to.addr).await;
    let response = client.send(request).await;
    (client, response)
}

async fn body_text(response: Response<Incoming>) -> String {
    let bytes = timeout(PATIENCE, response.into_body().collect())
        .await
        .expect("a body in time")
        .expect("a body")
        .to_bytes();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The JSON messages of an SSE or JSON body.
fn messages(text: &str) -> Vec<Value> {
    if text.trim_start().starts_with('{') {
        return vec![serde_json::from_str(text).expect("JSON")];
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

/// Reads an open SSE body until a message satisfies `wanted`.
async fn until(body: &mut Incoming, buffer: &mut String, wanted: impl Fn(&Value) -> bool) -> Value {
    loop {
        if let Some(found) = messages(buffer).into_iter().find(|m| wanted(m)) {
            buffer.clear();
            return found;
        }
        let frame = timeout(PATIENCE, body.frame())
            .await
            .expect("a message in time")
            .expect("the stream is open")
            .expect("a frame");
        if let Some(data) = frame.data_ref() {
            buffer.push_str(&String::from_utf8_lossy(data));
        }
    }
}

async fn open_session(on: &Process) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25",
                                 "capabilities": {"elicitation": {}},
                                 "clientInfo": {"name": "t", "version": "1"}}});
    let (_c, response) = send(on, post(None, &init)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let id = response
        .headers()
        .get("mcp-session-id")
        .expect("a session id")
        .to_str()
        .expect("ASCII")
        .to_owned();
    body_text(response).await;
    id
}

/// A session opened on `on` whose client said `initialized` there.
async fn ready_session(on: &Process) -> String {
    let id = open_session(on).await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    send(on, post(Some(&id), &initialized)).await;
    id
}

/// The `ask` tool (request 7), called on `on` in session `id`: its
/// response's open stream, what is read of it and not taken, and the
/// question it asked.
async fn asking(on: &Process, id: &str) -> (Client, Incoming, String, Value) {
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "ask", "arguments": {}}});
    let (client, response) = send(on, post(Some(id), &call)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let mut buffer = String::new();
    let question = until(&mut body, &mut buffer, |m| {
        m["method"] == "elicitation/create"
    })
    .await;
    (client, body, buffer, question)
}

/// The client's answer to `question`: it is Ada.
fn ada(question: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": question["id"],
           "result": {"action": "accept", "content": {"name": "Ada", "sure": true}}})
}

/// Reads the `ask` tool's reply from its stream: it heard that it is Ada.
async fn answered_ada(body: &mut Incoming, buffer: &mut String) {
    let reply = until(body, buffer, |m| m["id"] == 7).await;
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("Ada"), "{reply}");
}

/// The `ask` tool, called on `on` in session `id`, asks its question at
/// once (the process knows the client said `initialized`).
async fn asks_at_once(on: &Process, id: &str) {
    let (_c, _body, _buffer, question) = asking(on, id).await;
    assert_eq!(question["params"]["message"], "Who are you?");
}

#[tokio::test]
async fn a_session_opened_on_one_process_is_served_by_another_with_its_state() {
    let hub = Arc::new(Hub::default());
    let a = process(&hub, 0).await;
    let b = process(&hub, 1).await;
    let id = open_session(&a).await;
    // Its `initialized` and its requests may go to the other process.
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (_c, response) = send(&b, post(Some(&id), &initialized)).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let (_c, response) = send(&b, post(Some(&id), &list)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let reply = messages(&body_text(response).await).remove(0);
    assert!(reply["result"]["tools"].is_array(), "{reply}");

    // A subscription made on A reaches the GET stream held by B.
    let (_g, stream) = send(
        &b,
        request(
            Method::GET,
            "/mcp",
            &[("accept", "text/event-stream"), ("mcp-session-id", &id)],
            empty(),
        ),
    )
    .await;
    assert_eq!(stream.status(), StatusCode::OK);
    let mut stream = stream.into_body();
    let subscribe = json!({"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe",
                           "params": {"uri": STATUS}});
    let (_c, response) = send(&a, post(Some(&id), &subscribe)).await;
    assert_eq!(response.status(), StatusCode::OK);
    body_text(response).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    a.status.set("changed on A");
    let mut buffer = String::new();
    let updated = until(&mut stream, &mut buffer, |m| {
        m["method"] == "notifications/resources/updated"
    })
    .await;
    assert_eq!(updated["params"]["uri"], STATUS);
    assert_eq!(b.status.get(), "changed on A", "the content crossed too");
}

#[tokio::test]
async fn an_elicitation_answered_to_another_process_reaches_the_waiting_tool() {
    let hub = Arc::new(Hub::default());
    let a = process(&hub, 0).await;
    let b = process(&hub, 1).await;
    let id = ready_session(&a).await;
    let (_c, mut body, mut buffer, question) = asking(&a, &id).await;
    let (_c, response) = send(&b, post(Some(&id), &ada(&question))).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    answered_ada(&mut body, &mut buffer).await;
}

/// A process that lost the announcement of the client's response to its
/// elicitation, which reached another process, takes the response from
/// the saved state when its bus reports the gap: the tool goes on.
#[tokio::test]
async fn after_a_gap_a_process_takes_a_response_to_its_request_that_reached_another() {
    let hub = Arc::new(Hub::default());
    let a = process(&hub, 0).await;
    let b = process(&hub, 1).await;
    let id = ready_session(&a).await;
    let (_c, mut body, mut buffer, question) = asking(&a, &id).await;
    hub.deaf.lock().unwrap().insert(0);
    // A response to no request of the session's is kept nowhere.
    let stray = json!({"jsonrpc": "2.0", "id": 999_999, "result": {"action": "decline"}});
    let (_c, response) = send(&b, post(Some(&id), &stray)).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let (_c, response) = send(&b, post(Some(&id), &ada(&question))).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let kept = hub.client_responses.lock().unwrap().get(&id).cloned();
    assert_eq!(kept.map(|k| k.len()), Some(1), "the answer, not the stray");
    hub.deaf.lock().unwrap().remove(&0);
    hub.gap(0);
    answered_ada(&mut body, &mut buffer).await;
}

/// A log level set through one process reaches another's copy of the
/// session as it is: that copy reads nothing of the saved state for it.
#[tokio::test]
async fn a_log_level_set_on_one_process_reaches_another_without_a_read() {
    let hub = Arc::new(Hub::default());
    let (a, b, id) = adopted_pair(&hub).await;
    let loads = *hub.loads.lock().unwrap();
    debug_level_on(&a, &id).await;
    logs_at_debug_on(&b, &id).await;
    assert_eq!(*hub.loads.lock().unwrap(), loads, "B read nothing");
}

/// Processes 0 (A) and 1 (B) of `hub`, and a ready session opened on A
/// that B adopted.
async fn adopted_pair(hub: &Arc<Hub>) -> (Process, Process, String) {
    let a = process(hub, 0).await;
    let b = process(hub, 1).await;
    let id = ready_session(&a).await;
    hub.saved_ready(&id).await;
    assert_eq!(pinged(&b, &id, 2).await, StatusCode::OK, "B adopted it");
    tokio::time::sleep(Duration::from_millis(100)).await;
    (a, b, id)
}

/// The client sets session `id`'s log level to `debug` through `on`.
async fn debug_level_on(on: &Process, id: &str) {
    let level = json!({"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel",
                       "params": {"level": "debug"}});
    let (_c, response) = send(on, post(Some(id), &level)).await;
    body_text(response).await;
}

/// The `log` tool, called on `on` in session `id`, sends its debug line:
/// that copy's level is `debug`.
async fn logs_at_debug_on(on: &Process, id: &str) {
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                      "params": {"name": "log", "arguments": {}}});
    let (_c, response) = send(on, post(Some(id), &call)).await;
    let sent = messages(&body_text(response).await);
    assert!(
        sent.iter()
            .any(|m| m["method"] == "notifications/message" && m["params"]["level"] == "debug"),
        "{sent:?}"
    );
}

/// A read of the saved state that began before a log level reached a copy
/// does not set the copy's level back when it answers.
#[tokio::test]
async fn a_read_begun_before_a_log_level_arrived_does_not_set_it_back() {
    let hub = Arc::new(Hub::default());
    let (a, b, id) = adopted_pair(&hub).await;
    // B reads the state (level info) and gets the answer late.
    let late = Arc::new(tokio::sync::Semaphore::new(0));
    *hub.late_loads.lock().unwrap() = Some(late.clone());
    let loads = *hub.loads.lock().unwrap();
    hub.gap(1);
    timeout(PATIENCE, async {
        while *hub.loads.lock().unwrap() == loads {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("B reads the session's state");
    debug_level_on(&a, &id).await;
    late.add_permits(1000);
    tokio::time::sleep(Duration::from_millis(100)).await;
    logs_at_debug_on(&b, &id).await;
}

/// A copy a process adopts counts in the caller's quota of sessions
/// there, as a session it opened would: one client cannot fill every
/// process with copies of its sessions.
#[tokio::test]
async fn an_adopted_copy_counts_in_its_callers_quota_of_sessions() {
    let hub = Arc::new(Hub::default());
    let a = process(&hub, 0).await;
    let b = process_with(&hub, 1, HttpConfig::default().max_sessions_per_principal(1)).await;
    let first = ready_session(&a).await;
    let second = ready_session(&a).await;
    hub.saved_ready(&first).await;
    hub.saved_ready(&second).await;
    assert_eq!(pinged(&b, &first, 2).await, StatusCode::OK, "B adopts one");
    let (_c, response) = send(&b, post(Some(&second), &ping(3))).await;
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(response.headers().contains_key("retry-after"));
    body_text(response).await;
    assert_eq!(
        pinged(&a, &second, 4).await,
        StatusCode::OK,
        "A still serves it"
    );
    // Once the first ends, its place is free on B.
    let (_c, response) = send(
        &a,
        request(
            Method::DELETE,
            "/mcp",
            &[("mcp-session-id", &first)],
            empty(),
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    ended_on(&b, &first).await;
    assert_eq!(pinged(&b, &second, 5).await, StatusCode::OK);
}

/// A request that changes nothing of a session's state (a log level set
/// again as it is, an unsubscription from a resource not subscribed to)
/// is neither saved nor announced: a client cannot make every process
/// read the session again for nothing.
#[tokio::test]
async fn a_request_that_changes_nothing_is_neither_saved_nor_announced() {
    let hub = Arc::new(Hub::default());
    let a = process(&hub, 0).await;
    let id = ready_session(&a).await;
    hub.saved_ready(&id).await;
    let saves = hub.saved_sizes.lock().unwrap().len();
    let announced = hub.announced.lock().unwrap().len();
    for (n, (method, params)) in [
        ("logging/setLevel", json!({"level": "info"})),
        (
            "resources/unsubscribe",
            json!({"uri": "mcp://t/resources/never"}),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let request = json!({"jsonrpc": "2.0", "id": 10 + n, "method": method, "params": params});
        let (_c, response) = send(&a, post(Some(&id), &request)).await;
        assert_eq!(response.status(), StatusCode::OK);
        body_text(response).await;
    }
    assert_eq!(hub.saved_sizes.lock().unwrap().len(), saves);
    let after = hub.announced.lock().unwrap()[announced..].to_vec();
    assert!(after.is_empty(), "{after:?}");
    // A change is still saved and announced.
    let level = json!({"jsonrpc": "2.0", "id": 20, "method": "logging/setLevel",
                       "params": {"level": "debug"}});
    let (_c, response) = send(&a, post(Some(&id), &level)).await;
    body_text(response).await;
    assert_eq!(hub.saved_sizes.lock().unwrap().len(), saves + 1);
}

/// A process that lost the announcement that the client said
/// `initialized` elsewhere reads the session's saved state again when its
/// bus reports the gap: its tool may then ask the client at once.
#[tokio::test]
async fn after_a_gap_a_process_learns_the_client_said_initialized_elsewhere() {
    let hub = Arc::new(Hub::default());
    let a = process(&hub, 0).await;
    let b = process(&hub, 1).await;
    let id = open_session(&a).await;
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let (_c, response) = send(&b, post(Some(&id), &ping)).await;
    assert_eq!(response.status(), StatusCode::OK, "B adopted it, not ready");
    body_text(response).await;
    hub.initialized_unheard(&a, &id, 1).await;
    hub.deaf.lock().unwrap().remove(&1);
    hub.gap(1);
    asks_at_once(&b, &id).await;
}

/// A process that lost the announcement of a subscription made through
/// another process takes it from the saved state when its bus reports the
/// gap: the session's `GET` stream it holds hears of the resource's
/// updates.
#[tokio::test]
async fn after_a_gap_a_process_takes_the_subscriptions_made_elsewhere() {
    let hub = Arc::new(Hub::default());
    let a = process(&hub, 0).await;
    let b = process(&hub, 1).await;
    let id = ready_session(&a).await;
    hub.saved_ready(&id).await;
    let (_g, stream) = send(&b, get(&id)).await;
    assert_eq!(
        stream.status(),
        StatusCode::OK,
        "B adopted it and holds its stream"
    );
    let mut stream = stream.into_body();
    hub.deaf.lock().unwrap().insert(1);
    let subscribe = json!({"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe",
                           "params": {"uri": STATUS}});
    let (_c, response) = send(&a, post(Some(&id), &subscribe)).await;
    body_text(response).await;
    hub.deaf.lock().unwrap().remove(&1);
    hub.gap(1);
    tokio::time::sleep(Duration::from_millis(100)).await;
    a.status.set("changed on A");
    let mut buffer = String::new();
    let updated = until(&mut stream, &mut buffer, |m| {
        m["method"] == "notifications/resources/updated" && m["params"]["uri"] == STATUS
    })
    .await;
    assert_eq!(updated["params"]["uri"], STATUS);
}

/// A process that lost the announcement that a session was ended
/// (`DELETE` on another process) ends its copy when its bus reports the
/// gap, also when its first read then finds nothing; no copy's save
/// brings the session back.
#[tokio::test]
async fn after_a_gap_a_process_ends_its_copy_of_a_session_ended_elsewhere() {
    let hub = Arc::new(Hub::default());
    let (a, b, id) = adopted_pair(&hub).await;
    hub.deaf.lock().unwrap().insert(1);
    let (_c, response) = send(
        &a,
        request(Method::DELETE, "/mcp", &[("mcp-session-id", &id)], empty()),
    )
    .await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    // B, which missed it, still serves the session, and saves a change.
    let level = json!({"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel",
        "params": {"level": "debug"}});
    let (_c, response) = send(&b, post(Some(&id), &level)).await;
    assert_eq!(response.status(), StatusCode::OK);
    body_text(response).await;
    hub.deaf.lock().unwrap().remove(&1);
    // Its first read after the gap finds nothing (Redis slow as it comes
    // back): it reads again.
    *hub.unread_loads.lock().unwrap() = 1;
    hub.gap(1);
    ended_on(&b, &id).await;
    assert_eq!(
        pinged(&a, &id, 5).await,
        StatusCode::NOT_FOUND,
        "and A adopts nothing"
    );
}

/// A process that adopts a session while it is ended on another process
/// (it read the state before the end, and heard the end before it had a
/// copy) ends its copy: it reads the state once more after it adopts it.
#[tokio::test]
async fn a_session_ended_while_a_process_adopts_it_ends_there_too() {
    let hub = Arc::new(Hub::default());
    let a = process(&hub, 0).await;
    let b = process(&hub, 1).await;
    let id = ready_session(&a).await;
    hub.saved_ready(&id).await;
    let late = Arc::new(tokio::sync::Semaphore::new(0));
    *hub.late_loads.lock().unwrap() = Some(late.clone());
    let adopting = {
        let request = post(Some(&id), &ping(2));
        let addr = b.addr;
        tokio::spawn(async move {
            let mut client = Client::connect(addr).await;
            client.send(request).await.status()
        })
    };
    timeout(PATIENCE, async {
        while *hub.loads.lock().unwrap() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("B reads the session's state");
    let (_c, response) = send(
        &a,
        request(Method::DELETE, "/mcp", &[("mcp-session-id", &id)], empty()),
    )
    .await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    late.add_permits(1000);
    timeout(PATIENCE, adopting)
        .await
        .expect("answered in time")
        .expect("the request ran");
    ended_on(&b, &id).await;
}

/// A copy that has not heard `initialized` renews the saved state by
/// reading it first: it never writes "not ready" over the "ready" another
/// copy saved, and is readied by it.
#[tokio::test]
async fn a_copy_not_ready_renews_the_saved_state_without_unreadying_it() {
    let hub = Arc::new(Hub::default());
    let (a, b) = renewing_pair(&hub).await;
    let id = open_session(&a).await;
    pinged(&b, &id, 2).await;
    hub.initialized_unheard(&a, &id, 1).await;
    renewed_on(&b, &id, 3).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        *hub.unreadying.lock().unwrap(),
        0,
        "B never asked to unready it"
    );
    asks_at_once(&b, &id).await;
}

/// A copy renews the saved state's life, not its content: a copy that
/// missed another's change (here a log level) never writes its own
/// older state over it.
#[tokio::test]
async fn a_renewal_keeps_the_state_another_copy_saved() {
    let hub = Arc::new(Hub::default());
    let (a, b) = renewing_pair(&hub).await;
    let id = ready_session(&a).await;
    hub.saved_ready(&id).await;
    pinged(&b, &id, 2).await;
    // B, ready, misses A's change.
    hub.deaf.lock().unwrap().insert(1);
    let level = json!({"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel",
        "params": {"level": "debug"}});
    let (_c, response) = send(&a, post(Some(&id), &level)).await;
    body_text(response).await;
    let saved_level = || hub.sessions.lock().unwrap().get(&id).map(|r| r.log_level);
    assert_eq!(saved_level(), Some(LogLevel::Debug));
    renewed_on(&b, &id, 4).await;
    timeout(PATIENCE, async {
        while *hub.renewals.lock().unwrap() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("B renewed the saved state");
    assert_eq!(
        saved_level(),
        Some(LogLevel::Debug),
        "B's renewal kept A's level"
    );
}

#[tokio::test]
async fn delete_on_one_process_ends_the_session_on_every_process() {
    let hub = Arc::new(Hub::default());
    let a = process(&hub, 0).await;
    let b = process(&hub, 1).await;
    let id = open_session(&a).await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let (_c, response) = send(&b, post(Some(&id), &list)).await;
    assert_eq!(response.status(), StatusCode::OK, "B adopted it");
    let (_c, response) = send(
        &b,
        request(Method::DELETE, "/mcp", &[("mcp-session-id", &id)], empty()),
    )
    .await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    tokio::time::sleep(Duration::from_millis(100)).await;
    for on in [&a, &b] {
        let (_c, response) = send(on, post(Some(&id), &list)).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
    }
    // An id no process saved: a clean 404.
    let (_c, response) = send(&b, post(Some(&"0".repeat(32)), &list)).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

/// A `ping` with id `n`.
fn ping(n: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": n, "method": "ping"})
}

/// Pings session `id` on `on` (which serves its copy, or adopts one) and
/// reads the answer: its status.
async fn pinged(on: &Process, id: &str, n: u64) -> StatusCode {
    let (_c, response) = send(on, post(Some(id), &ping(n))).await;
    let status = response.status();
    body_text(response).await;
    status
}

/// Two processes of `hub` whose sessions expire after 2 s idle: a copy
/// renews its saved state once its last save is half a second old.
async fn renewing_pair(hub: &Arc<Hub>) -> (Process, Process) {
    let config = || HttpConfig::default().session_idle_timeout(Duration::from_secs(2));
    (
        process_with(hub, 0, config()).await,
        process_with(hub, 1, config()).await,
    )
}

/// Lets a quarter of a [`renewing_pair`]'s idle timeout pass, then pings
/// session `id` on `on`: its copy renews the saved state.
async fn renewed_on(on: &Process, id: &str, n: u64) {
    tokio::time::sleep(Duration::from_millis(600)).await;
    pinged(on, id, n).await;
}

/// Waits until process `on` has no session `id` (404), as it serves its
/// copy meanwhile.
async fn ended_on(on: &Process, id: &str) {
    timeout(PATIENCE, async {
        while pinged(on, id, 90).await != StatusCode::NOT_FOUND {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the process ended its copy");
}

/// A `GET` request for session `id`'s stream.
fn get(id: &str) -> hyper::Request<ReqBody> {
    request(
        Method::GET,
        "/mcp",
        &[("accept", "text/event-stream"), ("mcp-session-id", id)],
        empty(),
    )
}

/// A `GET` stream for session `id` on `on`, tried for up to a second (a
/// claim given up a moment ago is freed in order with the bus).
async fn get_soon(on: &Process, id: &str) -> Option<(Client, Response<Incoming>)> {
    for _ in 0..50 {
        let (client, response) = send(on, get(id)).await;
        if response.status() == StatusCode::OK {
            return Some((client, response));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

#[tokio::test]
async fn a_session_has_one_get_stream_in_the_deployment_and_a_new_one_takes_over_once_its_holder_is_gone()
 {
    let hub = Arc::new(Hub::default());
    let a = process(&hub, 0).await;
    let b = process(&hub, 1).await;
    let id = open_session(&a).await;
    let (held, stream) = send(&a, get(&id)).await;
    assert_eq!(stream.status(), StatusCode::OK);
    // A second GET, on the other process: 409 with Retry-After.
    let (_c, second) = send(&b, get(&id)).await;
    assert_eq!(second.status(), StatusCode::CONFLICT);
    assert!(second.headers().contains_key("retry-after"));
    // The holder closes its stream: its claim is given up, B may open one.
    drop(stream);
    held.close().await;
    let (_b_client, _b_stream) = get_soon(&b, &id)
        .await
        .expect("B opens the stream once A closed its own");
    let (_c, on_a) = send(&a, get(&id)).await;
    assert_eq!(on_a.status(), StatusCode::CONFLICT, "now A is refused");
    // B's client reconnects on B: its own stale claim is free to it, and
    // the old stream's release does not undo the new one's claim.
    drop(_b_stream);
    drop(_b_client);
    let (_b_client, _b_stream) = get_soon(&b, &id)
        .await
        .expect("B opens a new stream after its own closed");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (_c, on_a) = send(&a, get(&id)).await;
    assert_eq!(
        on_a.status(),
        StatusCode::CONFLICT,
        "B's new stream still holds it"
    );
    // B's process is gone (its claim is no longer alive): A takes over.
    hub.gone.lock().unwrap().insert(1);
    let (_c, taken) = send(&a, get(&id)).await;
    assert_eq!(taken.status(), StatusCode::OK);
}

#[tokio::test]
async fn subscriptions_are_saved_one_at_a_time_and_bounded_per_session() {
    let hub = Arc::new(Hub::default());
    let a = process(&hub, 0).await;
    let b = process(&hub, 1).await;
    let id = ready_session(&a).await;
    let subscribe = |n: u64, uri: &str| json!({"jsonrpc": "2.0", "id": n, "method": "resources/subscribe", "params": {"uri": uri}});
    // The test items' template `test://items/{id}` takes any id.
    let most = clawmcp::server::DEFAULT_MAX_SUBSCRIPTIONS;
    for n in 0..most {
        let uri = format!("test://items/{n}");
        let (_c, response) = send(&a, post(Some(&id), &subscribe(10 + n as u64, &uri))).await;
        let reply = messages(&body_text(response).await).remove(0);
        assert!(reply.get("result").is_some(), "{reply}");
    }
    let sizes = hub.saved_sizes.lock().unwrap().clone();
    // The record is saved for the handshake only (its client, `initialized`),
    // never for a subscription, and holds none of them.
    assert!(
        sizes.len() <= 3 && sizes.iter().all(|size| *size < 200),
        "a saved record does not grow with its subscriptions: {sizes:?}"
    );
    assert_eq!(hub.subscriptions.lock().unwrap()[&id].len(), most);
    // One past the bound, on either process: -32602 naming it.
    for on in [&a, &b] {
        let (_c, response) = send(on, post(Some(&id), &subscribe(9, "test://items/over"))).await;
        let reply = messages(&body_text(response).await).remove(0);
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
        assert!(
            reply["error"]["data"]
                .as_str()
                .unwrap_or_default()
                .contains("max_subscriptions"),
            "{reply}"
        );
    }
    // A URI over the length bound, even as the first: -32602 naming it.
    let other = open_session(&a).await;
    let long = format!(
        "test://items/{}",
        "x".repeat(clawmcp::server::DEFAULT_MAX_URI_LENGTH)
    );
    let (_c, response) = send(&a, post(Some(&other), &subscribe(8, &long))).await;
    let reply = messages(&body_text(response).await).remove(0);
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(
        reply["error"]["data"]
            .as_str()
            .unwrap_or_default()
            .contains("max_uri_length"),
        "{reply}"
    );
    // Unsubscribing frees a place.
    let unsubscribe = json!({"jsonrpc": "2.0", "id": 7, "method": "resources/unsubscribe",
                             "params": {"uri": "test://items/0"}});
    let (_c, response) = send(&b, post(Some(&id), &unsubscribe)).await;
    body_text(response).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (_c, response) = send(&a, post(Some(&id), &subscribe(6, "test://items/over"))).await;
    let reply = messages(&body_text(response).await).remove(0);
    assert!(reply.get("result").is_some(), "{reply}");
}
