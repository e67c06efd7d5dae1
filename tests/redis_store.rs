//! The Redis bus keeps a shared session's state by the rules of
//! `clawmcp::bus::Bus`, and its task store a task's by those of
//! `clawmcp::task::TaskStore`, against a real redis-server (started here
//! on loopback, stopped with the test; the test fails, never skips,
//! without one: Debian `apt-get install -y redis-server`). Sessions:
//! - a renewal extends the stored state's life and never writes its copy's
//!   state over it;
//! - a renewal of a state no longer stored writes it again;
//! - a save by a copy that is not ready never unreadies the stored state;
//! - an ended session's mark stays its full time: no save, renewal or
//!   subscription brings the session back; it is written though the
//!   bus's queue was full;
//! - a key of another type in a state's place does not stop the writes;
//! - a copy that missed its session's end (Redis away) ends at its next
//!   renewal, which finds the end's mark;
//! - a client's response is handed on (kept and announced) once, and
//!   only for a request a copy sent, each note and response for its own
//!   time, 16 at most.
//!
//! Messages: a write Redis refuses for now (out of memory) is sent again,
//! alone: what Redis took of the message is not sent twice. A write it
//! refuses for good (a key of another type where the shared contents go)
//! is dropped, not sent again, and holds up nothing queued after it; a
//! subscriber that cannot read the contents still subscribes.
//!
//! A session's `GET` stream stays with its holder while Redis was away
//! (its liveness key missing), for a process that cannot tell yet.
//!
//! Tasks:
//! - a task whose runner lives is never failed because its process's
//!   liveness key went missing (Redis away for a while);
//! - a task this process created and no runner here runs is failed (the
//!   runners are the process's: every store on its bus sees them);
//! - a dead process's task is failed by a process that can tell;
//! - a save of a task the store no longer holds is `Ended`.

mod http_support;

use std::pin::Pin;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clawmcp::bus::{Bus, BusMessage, RedisBus, SessionRecord, StreamClaim};
use clawmcp::client::LogLevel;
use clawmcp::task::{TaskError, TaskSignal, TaskState, TaskStatus, TaskStore};
use clawmcp::testing::TestClient;
use clawmcp::{Server, SharedResource};
use redis::AsyncCommands;
use serde_json::json;
use tokio::time::timeout;

/// A hang guard, never a performance bound.
const PATIENCE: Duration = Duration::from_secs(10);
const DEPLOYMENT: &str = "store-test";

/// Waits until `$ready` (a block that may `.await`) holds, looking every
/// 20 ms; fails with `$what` past `$patience` (a hang guard).
macro_rules! eventually {
    ($patience:expr, $what:expr, $ready:block) => {
        timeout($patience, async {
            while !$ready {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect($what)
    };
}

/// A redis-server of its own, killed when dropped.
struct RedisServer {
    child: Child,
    url: String,
}

/// A free loopback port.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

impl RedisServer {
    async fn start() -> Self {
        Self::start_on(free_port()).await
    }

    async fn start_on(port: u16) -> Self {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("redis-server runs (Debian: apt-get install -y redis-server)");
        let server = RedisServer {
            child,
            url: format!("redis://127.0.0.1:{port}/"),
        };
        eventually!(PATIENCE, "redis-server listens", {
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
        });
        server
    }

    async fn connection(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url.as_str())
            .expect("a Redis URL")
            .get_multiplexed_async_connection()
            .await
            .expect("connects")
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn record(ready: bool, log_level: LogLevel) -> SessionRecord {
    let mut record: SessionRecord = serde_json::from_value(json!({
        "version": "2025-11-25",
        "capabilities": {},
        "owner": null,
        "ready": ready,
        "log_level": "info",
        "subscriptions": [],
    }))
    .expect("a record");
    record.log_level = log_level;
    record
}

/// Waits until the bus wrote what it queued: the key's life exceeds
/// `at_least` milliseconds.
async fn lives_longer_than(redis: &RedisServer, id: &str, at_least: i64) {
    let mut connection = redis.connection().await;
    let key = format!("clawmcp:{DEPLOYMENT}:session:{id}");
    eventually!(PATIENCE, "the write landed", {
        let left: i64 = connection.pttl(&key).await.expect("PTTL");
        left > at_least
    });
}

async fn loaded(bus: &RedisBus, id: &str) -> SessionRecord {
    timeout(PATIENCE, bus.load_session(id))
        .await
        .expect("read in time")
        .expect("stored")
}

#[tokio::test]
async fn a_renewal_extends_the_stored_state_and_never_writes_over_it() {
    let redis = RedisServer::start().await;
    let bus = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let id = "a".repeat(32);
    bus.save_session(&id, &record(true, LogLevel::Debug), Duration::from_secs(5));
    bus.save_subscription(&id, "mcp://a", true, Duration::from_secs(5));
    // A copy that missed the change renews with its older state.
    bus.renew_session(&id, &record(false, LogLevel::Info), Duration::from_secs(60));
    lives_longer_than(&redis, &id, 30_000).await;
    let stored = loaded(&bus, &id).await;
    assert!(stored.ready, "{stored:?}");
    assert_eq!(stored.log_level, LogLevel::Debug);
    assert_eq!(stored.subscriptions, ["mcp://a"]);
    let mut connection = redis.connection().await;
    let subscriptions_left: i64 = connection
        .pttl(format!("clawmcp:{DEPLOYMENT}:session:{id}:subscriptions"))
        .await
        .expect("PTTL");
    assert!(
        subscriptions_left > 30_000,
        "the subscriptions live as long"
    );
}

#[tokio::test]
async fn a_renewal_of_a_state_no_longer_stored_writes_it_again() {
    let redis = RedisServer::start().await;
    let bus = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let id = "b".repeat(32);
    bus.renew_session(
        &id,
        &record(true, LogLevel::Warning),
        Duration::from_secs(60),
    );
    lives_longer_than(&redis, &id, 30_000).await;
    let stored = loaded(&bus, &id).await;
    assert!(stored.ready);
    assert_eq!(stored.log_level, LogLevel::Warning);
}

#[tokio::test]
async fn an_ended_session_stays_ended_whatever_a_copy_saves_or_renews() {
    let redis = RedisServer::start().await;
    let bus = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let id = "e".repeat(32);
    bus.save_session(&id, &record(true, LogLevel::Info), Duration::from_secs(60));
    bus.save_subscription(&id, "mcp://a", true, Duration::from_secs(60));
    bus.remove_session(&id);
    // A copy that missed the news saves a change, and renews.
    bus.save_session(&id, &record(true, LogLevel::Debug), Duration::from_secs(5));
    bus.renew_session(
        &id,
        &record(true, LogLevel::Debug),
        Duration::from_secs(3600),
    );
    // (The renewal extends the mark past its own 10 minutes.)
    lives_longer_than(&redis, &id, 30 * 60 * 1000).await;
    let stored = loaded(&bus, &id).await;
    assert!(stored.ended, "{stored:?}");
    assert!(
        stored.subscriptions.is_empty(),
        "its subscriptions are gone"
    );
}

/// A renewal by a copy whose idle timeout is short never shortens the
/// mark; a subscription written after the end is not kept.
#[tokio::test]
async fn an_ended_session_keeps_its_mark_its_full_time_and_takes_no_subscription() {
    let redis = RedisServer::start().await;
    let bus = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let id = "f".repeat(32);
    bus.save_session(&id, &record(true, LogLevel::Info), Duration::from_secs(60));
    bus.remove_session(&id);
    bus.renew_session(&id, &record(true, LogLevel::Info), Duration::from_secs(1));
    bus.save_subscription(&id, "mcp://late", true, Duration::from_secs(60));
    // Written in order: once the marker below is stored, all above is.
    let marker = "9".repeat(32);
    bus.save_session(
        &marker,
        &record(true, LogLevel::Info),
        Duration::from_secs(60),
    );
    lives_longer_than(&redis, &marker, 30_000).await;
    let mut connection = redis.connection().await;
    let key = format!("clawmcp:{DEPLOYMENT}:session:{id}");
    let left: i64 = connection.pttl(&key).await.expect("PTTL");
    assert!(
        left > 60_000,
        "the mark keeps its 10 minutes: {left} ms left"
    );
    let subscriptions: bool = connection
        .exists(format!("{key}:subscriptions"))
        .await
        .expect("EXISTS");
    assert!(
        !subscriptions,
        "no subscription is kept for an ended session"
    );
    assert!(loaded(&bus, &id).await.ended);
}

/// A key of another type where a session's state goes does not stop the
/// bus's writes: the state is written over it, and what was queued after
/// it is written too.
#[tokio::test]
async fn a_key_of_another_type_is_written_over() {
    let redis = RedisServer::start().await;
    let bus = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let id = "7".repeat(32);
    let mut connection = redis.connection().await;
    let key = format!("clawmcp:{DEPLOYMENT}:session:{id}");
    let _: i64 = connection.rpush(&key, "not a state").await.expect("RPUSH");
    bus.save_session(
        &id,
        &record(true, LogLevel::Notice),
        Duration::from_secs(60),
    );
    lives_longer_than(&redis, &id, 30_000).await;
    assert_eq!(loaded(&bus, &id).await.log_level, LogLevel::Notice);
}

#[tokio::test]
async fn a_save_by_a_copy_not_ready_never_unreadies_the_stored_state() {
    let redis = RedisServer::start().await;
    let bus = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let id = "c".repeat(32);
    bus.save_session(&id, &record(true, LogLevel::Info), Duration::from_secs(5));
    // Its change (a level set before it heard `initialized`) is written,
    // its readiness is not.
    bus.save_session(
        &id,
        &record(false, LogLevel::Error),
        Duration::from_secs(60),
    );
    lives_longer_than(&redis, &id, 30_000).await;
    let stored = loaded(&bus, &id).await;
    assert!(stored.ready, "{stored:?}");
    assert_eq!(stored.log_level, LogLevel::Error);

    // A session never saved ready is saved as it is.
    let fresh = "d".repeat(32);
    bus.save_session(
        &fresh,
        &record(false, LogLevel::Info),
        Duration::from_secs(60),
    );
    lives_longer_than(&redis, &fresh, 30_000).await;
    assert!(!loaded(&bus, &fresh).await.ready);
}

fn task() -> TaskState {
    TaskState::new(
        String::new(),
        "build".into(),
        Some(Duration::from_secs(60)),
        Duration::from_secs(1),
    )
    .expect("the system's random numbers")
}

/// The liveness key of the process that runs task `id`, as stored.
async fn runner_of(redis: &RedisServer, id: &str) -> String {
    let mut connection = redis.connection().await;
    let text: String = connection
        .get(format!("clawmcp:{DEPLOYMENT}:task:{id}"))
        .await
        .expect("the task is stored");
    let stored: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    stored["runner"].as_str().expect("a runner").to_owned()
}

#[tokio::test]
async fn a_task_whose_runner_lives_is_not_failed_when_its_liveness_key_went_missing() {
    let redis = RedisServer::start().await;
    let bus = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let store = bus.task_store();
    let task = task();
    let _runner = store.signals_for(&task.task_id);
    store.create(&task, 10).await.expect("created");
    // Redis was away longer than the key lives: it is gone, for now.
    let mut connection = redis.connection().await;
    let _: i64 = connection
        .del(runner_of(&redis, &task.task_id).await)
        .await
        .expect("DEL");
    let read = store.get(&task.task_id).await.expect("read");
    assert_eq!(read.map(|t| t.status), Some(TaskStatus::Working), "its own");
    // Another process, which cannot tell yet, does not fail it either.
    let other = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let read = other.task_store().get(&task.task_id).await.expect("read");
    assert_eq!(
        read.map(|t| t.status),
        Some(TaskStatus::Working),
        "another's"
    );
}

#[tokio::test]
async fn a_task_no_runner_here_runs_is_failed_when_read() {
    let redis = RedisServer::start().await;
    let bus = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let store = bus.task_store();
    let task = task();
    // Created, but its creating request stopped before a runner took it.
    store.create(&task, 10).await.expect("created");
    let read = store.get(&task.task_id).await.expect("read").expect("kept");
    assert_eq!(read.status, TaskStatus::Failed, "{read:?}");
}

/// The set of the tasks counted against a principal expires with the
/// last of them: a principal that is gone leaves nothing behind.
#[tokio::test]
async fn a_principals_set_of_tasks_expires_with_its_last_task() {
    let redis = RedisServer::start().await;
    let bus = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let store = bus.task_store();
    let task = task();
    store.create(&task, 10).await.expect("created");
    let mut connection = redis.connection().await;
    let sets: Vec<String> = connection
        .keys(format!("clawmcp:{DEPLOYMENT}:tasks-of:*"))
        .await
        .expect("KEYS");
    assert_eq!(sets.len(), 1, "{sets:?}");
    // Read with no runner here: failed, and kept for its time to live.
    let read = store.get(&task.task_id).await.expect("read").expect("kept");
    assert_eq!(read.status, TaskStatus::Failed);
    let left: i64 = connection.pttl(&sets[0]).await.expect("PTTL");
    assert!(left > 30_000 && left <= 60_000, "expires with it: {left}");
}

/// A time to live past what Redis's clock counts (`Duration::MAX`, say)
/// keeps an ended task for ever, rather than making Redis refuse its end.
#[tokio::test]
async fn an_ended_task_whose_time_to_live_is_past_redis_clock_is_kept_for_ever() {
    let redis = RedisServer::start().await;
    let bus = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let store = bus.task_store();
    let mut task = TaskState::new(
        String::new(),
        "build".into(),
        Some(Duration::MAX),
        Duration::from_secs(1),
    )
    .expect("the system's random numbers");
    let _runner = store.signals_for(&task.task_id);
    store.create(&task, 10).await.expect("created");
    task.result = Some(json!({"content": []}));
    task.set_status(TaskStatus::Completed, Some(Duration::MAX));
    store.put(&task).await.expect("its end is written");
    let read = store.get(&task.task_id).await.expect("read").expect("kept");
    assert_eq!(read.status, TaskStatus::Completed);
    let mut connection = redis.connection().await;
    let key = format!("clawmcp:{DEPLOYMENT}:task:{}", task.task_id);
    let left: i64 = connection.pttl(&key).await.expect("PTTL");
    assert_eq!(left, -1, "kept for ever");
}

/// A task store made outside any runtime (from a thread of its own, after
/// the bus was made in one) still hears the signals of its tasks.
#[tokio::test]
async fn a_task_store_made_outside_the_runtime_hears_its_tasks_signals() {
    let redis = RedisServer::start().await;
    let bus = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let store = std::thread::spawn(move || bus.task_store())
        .join()
        .expect("made on a thread of its own");
    let task = task();
    let mut signals = store.signals_for(&task.task_id);
    store.create(&task, 10).await.expect("created");
    let other = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let other = other.task_store();
    // (The other store's signal may come before the subscriber is ready:
    // it is queued in Redis, and taken once the relay hears the next.)
    let delivered = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            other
                .signal(&task.task_id, TaskSignal::Cancel)
                .await
                .expect("signalled");
            if let Ok(Some(signal)) =
                tokio::time::timeout(Duration::from_millis(500), signals.recv()).await
            {
                return signal;
            }
        }
    })
    .await
    .expect("the signal reaches the runner");
    assert!(matches!(delivered, TaskSignal::Cancel), "{delivered:?}");
}

/// A TCP relay to Redis that, once armed, passes on the next command that
/// names `LRANGE` and closes the connection before Redis's reply comes
/// back: Redis ran it, and its client never heard.
async fn reply_losing_relay(redis_port: u16, armed: Arc<AtomicBool>) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let port = listener.local_addr().expect("its address").port();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", redis_port)).await else {
                continue;
            };
            let armed = armed.clone();
            let cut = Arc::new(AtomicBool::new(false));
            let (mut from_client, mut to_client) = client.into_split();
            let (mut from_server, mut to_server) = server.into_split();
            let cutting = cut.clone();
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 1 << 16];
                while let Ok(n @ 1..) = from_client.read(&mut buffer).await {
                    let chunk = &buffer[..n];
                    let names_it = chunk.windows(6).any(|w| w == b"LRANGE");
                    if names_it && armed.swap(false, Ordering::SeqCst) {
                        cutting.store(true, Ordering::SeqCst);
                    }
                    if to_server.write_all(chunk).await.is_err() {
                        return;
                    }
                    if cutting.load(Ordering::SeqCst) {
                        return;
                    }
                }
            });
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 1 << 16];
                while let Ok(n @ 1..) = from_server.read(&mut buffer).await {
                    if cut.load(Ordering::SeqCst)
                        || to_client.write_all(&buffer[..n]).await.is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// A signal leaves its queue only once handed to the task's runner: when
/// Redis's reply to the take is lost on the way, the signal is taken
/// again and reaches the runner.
#[tokio::test]
async fn a_signal_whose_take_lost_its_reply_still_reaches_the_runner() {
    let redis = RedisServer::start().await;
    let redis_port: u16 = (redis.url.trim_end_matches('/').rsplit(':').next())
        .and_then(|p| p.parse().ok())
        .expect("the port");
    let armed = Arc::new(AtomicBool::new(false));
    let relay = reply_losing_relay(redis_port, armed.clone()).await;
    let relayed = format!("redis://127.0.0.1:{relay}/");
    let bus = RedisBus::connect(&relayed, DEPLOYMENT).expect("a bus");
    let store = bus.task_store();
    let task = task();
    let mut signals = store.signals_for(&task.task_id);
    store.create(&task, 10).await.expect("created");
    // The runner's subscription is made (a first signal reaches it).
    let other = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let other = other.task_store();
    let ready = timeout(PATIENCE, async {
        loop {
            other
                .signal(&task.task_id, TaskSignal::Cancel)
                .await
                .expect("signalled");
            if let Ok(Some(_)) = timeout(Duration::from_millis(200), signals.recv()).await {
                return;
            }
        }
    })
    .await;
    assert!(ready.is_ok(), "the runner hears its signals");
    while signals.try_recv().is_ok() {}
    // The next take's reply is lost.
    armed.store(true, Ordering::SeqCst);
    let mut responses = serde_json::Map::new();
    responses.insert("q1".into(), json!({"action": "accept"}));
    other
        .signal(&task.task_id, TaskSignal::Answers { responses })
        .await
        .expect("signalled");
    let handed = timeout(PATIENCE, async {
        loop {
            match signals.recv().await {
                Some(TaskSignal::Answers { responses }) => return responses,
                Some(_) => continue,
                None => panic!("the runner's channel closed"),
            }
        }
    })
    .await
    .expect("the answer reaches the runner");
    assert!(handed.contains_key("q1"), "{handed:?}");
    assert!(!armed.load(Ordering::SeqCst), "a take's reply was lost");
}

/// Two task stores on one bus (two servers in one process) run tasks
/// for one process: neither fails a task the other runs.
#[tokio::test]
async fn a_task_run_through_one_store_of_a_bus_lives_for_another() {
    let redis = RedisServer::start().await;
    let bus = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let (first, second) = (bus.task_store(), bus.task_store());
    let task = task();
    let _runner = first.signals_for(&task.task_id);
    first.create(&task, 10).await.expect("created");
    let read = second.get(&task.task_id).await.expect("read");
    assert_eq!(read.map(|t| t.status), Some(TaskStatus::Working));
}

/// A process that has kept its own liveness key long enough (10 s) takes
/// another's missing key for a process gone: a dead process's task is
/// failed then, and left `working` before.
#[tokio::test]
async fn a_dead_process_task_is_failed_once_the_reader_can_tell() {
    let redis = RedisServer::start().await;
    let reader = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let reader = reader.task_store();
    let task = task();
    let other = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let store = other.task_store();
    let _runner = store.signals_for(&task.task_id);
    store.create(&task, 10).await.expect("created");
    // Its runner becomes a process that is gone (its key lapsed).
    let mut connection = redis.connection().await;
    let key = format!("clawmcp:{DEPLOYMENT}:task:{}", task.task_id);
    let text: String = connection.get(&key).await.expect("stored");
    let mut stored: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    stored["runner"] = json!(format!("clawmcp:{DEPLOYMENT}:process:gone"));
    let _: () = connection.set(&key, stored.to_string()).await.expect("SET");
    let early = reader.get(&task.task_id).await.expect("read");
    assert_eq!(
        early.map(|t| t.status),
        Some(TaskStatus::Working),
        "too early to tell"
    );
    eventually!(
        Duration::from_secs(30),
        "failed once the reader can tell",
        {
            let read = reader.get(&task.task_id).await.expect("read");
            read.is_some_and(|t| t.status == TaskStatus::Failed)
        }
    );
}

#[tokio::test]
async fn a_save_of_a_task_the_store_no_longer_holds_is_ended() {
    let redis = RedisServer::start().await;
    let bus = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let saved = bus.task_store().put(&task()).await;
    assert!(matches!(saved, Err(TaskError::Ended)), "{saved:?}");
}

#[tokio::test]
async fn a_stream_claim_stays_with_its_holder_whose_liveness_key_went_missing() {
    let redis = RedisServer::start().await;
    let holder = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let id = "5".repeat(32);
    let lease = Duration::from_secs(60);
    let claimed = holder.claim_stream(&id, "first", lease).await;
    assert_eq!(claimed, StreamClaim::Granted);
    // Redis was away longer than the holder's key lives: it is gone, for
    // now (the claim set it; the holder's own beat may have too).
    let mut connection = redis.connection().await;
    let keys: Vec<String> = connection
        .keys(format!("clawmcp:{DEPLOYMENT}:process:*"))
        .await
        .expect("KEYS");
    assert!(!keys.is_empty(), "the holder's liveness key");
    let _: i64 = connection.del(&keys).await.expect("DEL");
    let newcomer = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let claimed = newcomer.claim_stream(&id, "second", lease).await;
    assert_eq!(claimed, StreamClaim::HeldElsewhere);
}

/// Puts a key of another type (a string) where the deployment's shared
/// contents (a hash) go.
async fn contents_of_another_type(redis: &RedisServer) {
    let mut connection = redis.connection().await;
    let contents = format!("clawmcp:{DEPLOYMENT}:contents");
    let _: () = connection.set(&contents, "not a hash").await.expect("SET");
}

/// The changes channel, as a test process hears it.
type Heard = Pin<Box<dyn futures_core::Stream<Item = redis::Msg> + Send>>;

async fn listen(redis: &RedisServer) -> Heard {
    let client = redis::Client::open(redis.url.as_str()).expect("a Redis URL");
    let mut pubsub = client.get_async_pubsub().await.expect("connects");
    pubsub
        .subscribe(format!("clawmcp:{DEPLOYMENT}:changes"))
        .await
        .expect("SUBSCRIBE");
    Box::pin(pubsub.into_on_message())
}

/// The next message published on the changes channel, as its text.
async fn next_heard(heard: &mut Heard) -> String {
    timeout(
        PATIENCE,
        std::future::poll_fn(|cx| heard.as_mut().poll_next(cx)),
    )
    .await
    .expect("published in time")
    .expect("still subscribed")
    .get_payload::<String>()
    .expect("text")
}

#[tokio::test]
async fn a_write_refused_for_now_is_sent_again_alone() {
    let redis = RedisServer::start().await;
    let mut connection = redis.connection().await;
    let mut heard = listen(&redis).await;
    let bus = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    // Out of memory: Redis refuses writes (`OOM`), and takes `PUBLISH`.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("1")
        .query_async(&mut connection)
        .await
        .expect("CONFIG SET");
    bus.publish(BusMessage::ResourceContent {
        uri: "mcp://t/resources/status".into(),
        content: "ready".into(),
    });
    assert!(
        next_heard(&mut heard)
            .await
            .contains("mcp://t/resources/status")
    );
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("0")
        .query_async(&mut connection)
        .await
        .expect("CONFIG SET");
    let contents = format!("clawmcp:{DEPLOYMENT}:contents");
    eventually!(PATIENCE, "the content is stored once Redis has memory", {
        let stored: Option<String> = connection
            .hget(&contents, "mcp://t/resources/status")
            .await
            .expect("HGET");
        stored.as_deref() == Some("ready")
    });
    bus.publish(BusMessage::ResourceUpdated {
        uri: "mcp://t/resources/after".into(),
    });
    let next = next_heard(&mut heard).await;
    assert!(
        next.contains("mcp://t/resources/after"),
        "published twice: {next}"
    );
}

#[tokio::test]
async fn a_write_refused_for_good_is_dropped_and_holds_up_nothing_after_it() {
    let redis = RedisServer::start().await;
    contents_of_another_type(&redis).await;
    let mut heard = listen(&redis).await;
    let bus = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    // Its `HSET` is refused (`WRONGTYPE`); its `PUBLISH` is taken.
    bus.publish(BusMessage::ResourceContent {
        uri: "mcp://t/resources/refused".into(),
        content: "new".into(),
    });
    bus.publish(BusMessage::ResourceUpdated {
        uri: "mcp://t/resources/after".into(),
    });
    let first = next_heard(&mut heard).await;
    assert!(first.contains("mcp://t/resources/refused"), "{first}");
    let next = next_heard(&mut heard).await;
    assert!(next.contains("mcp://t/resources/after"), "{next}");
}

#[tokio::test]
async fn a_process_that_cannot_read_the_shared_contents_still_hears_the_others() {
    let redis = RedisServer::start().await;
    contents_of_another_type(&redis).await;
    let status = SharedResource::new(
        "mcp://t/resources/status",
        "status",
        "Status.",
        "text/plain",
        "starting",
    );
    let hearing = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let server = Server::builder()
        .resource(status.clone())
        .bus(hearing)
        .build()
        .expect("a server");
    let mut client = TestClient::initialized(&server).await;
    let mut connection = redis.connection().await;
    let channel = format!("clawmcp:{DEPLOYMENT}:changes");
    eventually!(PATIENCE, "the process subscribed", {
        let (_, listeners): (String, u64) = redis::cmd("PUBSUB")
            .arg("NUMSUB")
            .arg(&channel)
            .query_async(&mut connection)
            .await
            .expect("PUBSUB NUMSUB");
        listeners > 0
    });
    let telling = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    telling.publish(BusMessage::ResourceContent {
        uri: "mcp://t/resources/status".into(),
        content: "ready".into(),
    });
    let changed = timeout(PATIENCE, client.notification("mcp/resourceDidChange"))
        .await
        .expect("heard in time")
        .expect("a notification");
    assert_eq!(changed["mcpId"], "mcp://t/resources/status");
    assert_eq!(status.get(), "ready");
}

/// A POST of `message` in session `id` (none: opening one); the status,
/// the session id it names, and the body.
async fn post_in(
    addr: std::net::SocketAddr,
    id: Option<&str>,
    message: serde_json::Value,
) -> (hyper::StatusCode, Option<String>) {
    let mut headers = vec![("accept", "application/json, text/event-stream")];
    if let Some(id) = id {
        headers.push(("mcp-session-id", id));
    }
    let body = http_support::full(serde_json::to_vec(&message).expect("JSON"));
    let mut client = http_support::Client::connect(addr).await;
    let reply = client
        .exchange(http_support::post_with(&headers, body))
        .await;
    (
        reply.status,
        reply.header("mcp-session-id").map(str::to_owned),
    )
}

#[tokio::test]
async fn a_copy_that_missed_its_sessions_end_ends_at_its_next_renewal() {
    let redis = RedisServer::start().await;
    let bus = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let server = Server::builder().bus(bus).build().expect("a server");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let addr = listener.local_addr().expect("an address");
    // Idle for 2 s at most: a request renews the saved state once the
    // last save is half a second old.
    let config =
        clawmcp::transport::HttpConfig::default().session_idle_timeout(Duration::from_secs(2));
    tokio::spawn(async move {
        server
            .serve_http_on(listener, config, std::future::pending())
            .await
    });
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}});
    let (status, id) = post_in(addr, None, initialize).await;
    assert_eq!(status, hyper::StatusCode::OK);
    let id = id.expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post_in(addr, Some(&id), initialized).await;
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    assert_eq!(
        post_in(addr, Some(&id), ping.clone()).await.0,
        hyper::StatusCode::OK
    );
    // Another process ended the session; its `SessionEnded` never came.
    let mut connection = redis.connection().await;
    let mark = serde_json::to_string(&SessionRecord::ended_mark()).expect("JSON");
    let key = format!("clawmcp:{DEPLOYMENT}:session:{id}");
    let _: () = connection
        .pset_ex(&key, mark, 600_000)
        .await
        .expect("PSETEX");
    tokio::time::sleep(Duration::from_millis(600)).await;
    eventually!(PATIENCE, "the copy ended", {
        post_in(addr, Some(&id), ping.clone()).await.0 == hyper::StatusCode::NOT_FOUND
    });
}

/// Session `id`'s kept client responses, once there are `n` (the bus
/// writes in order: once the last is kept, every other was handled).
async fn kept_responses(bus: &RedisBus, id: &str, n: usize) -> Vec<String> {
    timeout(PATIENCE, async {
        loop {
            let kept = bus.load_client_responses(id).await;
            if kept.len() >= n {
                return kept;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("kept in time")
}

fn client_response(n: u64, name: &str) -> String {
    json!({"jsonrpc": "2.0", "id": n, "result": {"action": "accept",
           "content": {"name": name}}})
    .to_string()
}

#[tokio::test]
async fn a_client_response_is_handed_once_and_only_for_a_request_a_copy_sent() {
    let redis = RedisServer::start().await;
    let mut heard = listen(&redis).await;
    let bus = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let id = "6".repeat(32);
    let ttl = Duration::from_secs(60);
    bus.save_session(&id, &record(true, LogLevel::Info), ttl);
    bus.hand_client_response(&id, 40, &client_response(40, "never asked"), ttl);
    bus.save_client_request(&id, 41, ttl);
    bus.hand_client_response(&id, 41, &client_response(41, "Ada"), ttl);
    bus.hand_client_response(&id, 41, &client_response(41, "again"), ttl);
    bus.save_client_request(&id, 42, ttl);
    bus.hand_client_response(&id, 42, &client_response(42, "Grace"), ttl);
    let kept = kept_responses(&bus, &id, 2).await;
    assert_eq!(
        kept,
        [client_response(41, "Ada"), client_response(42, "Grace")]
    );
    // Announced as kept: never the response to a request not noted, nor
    // a second response to one.
    for name in ["Ada", "Grace"] {
        let announced = next_heard(&mut heard).await;
        assert!(announced.contains(name), "{announced}");
    }
    // A response too large to keep is only announced.
    let large = client_response(43, &"x".repeat(1 << 20));
    bus.save_client_request(&id, 43, ttl);
    bus.hand_client_response(&id, 43, &large, ttl);
    assert!(next_heard(&mut heard).await.contains("xxxx"));
    assert_eq!(bus.load_client_responses(&id).await.len(), 2);
    let mut connection = redis.connection().await;
    let left: i64 = connection
        .pttl(format!("clawmcp:{DEPLOYMENT}:session:{id}:responses"))
        .await
        .expect("PTTL");
    assert!(left > 30_000 && left <= 60_000, "kept for its time: {left}");
    bus.remove_session(&id);
    lives_longer_than(&redis, &id, 120_000).await;
    assert!(bus.load_client_responses(&id).await.is_empty());
}

/// A response that reaches Redis before its request's note (the asking
/// process's queue behind) is handed again a little later, and then
/// kept and announced.
#[tokio::test]
async fn a_response_that_comes_before_its_note_is_handed_once_the_note_is_there() {
    let redis = RedisServer::start().await;
    let mut heard = listen(&redis).await;
    let answering = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let asking = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let id = "9".repeat(32);
    let ttl = Duration::from_secs(60);
    answering.hand_client_response(&id, 50, &client_response(50, "early"), ttl);
    tokio::time::sleep(Duration::from_millis(200)).await;
    asking.save_client_request(&id, 50, ttl);
    assert!(next_heard(&mut heard).await.contains("early"));
    assert_eq!(
        kept_responses(&answering, &id, 1).await,
        [client_response(50, "early")]
    );
}

/// A session's end reaches Redis though the bus's queue was full when it
/// came (Redis away while the processes kept announcing): no process keeps
/// serving a session its client ended.
#[tokio::test]
async fn a_sessions_end_reaches_redis_though_the_queue_was_full() {
    let port = free_port();
    let bus = RedisBus::connect(&format!("redis://127.0.0.1:{port}/"), DEPLOYMENT).expect("a bus");
    for n in 0..5000 {
        bus.publish(clawmcp::bus::BusMessage::ResourceUpdated {
            uri: format!("mcp://t/resources/{n}"),
        });
    }
    let id = "4".repeat(32);
    bus.remove_session(&id);
    let redis = RedisServer::start_on(port).await;
    let mut connection = redis.connection().await;
    let key = format!("clawmcp:{DEPLOYMENT}:session:{id}");
    eventually!(Duration::from_secs(30), "the end's mark is written", {
        let stored: Option<String> = connection.get(&key).await.expect("GET");
        stored.is_some_and(|s| s.contains("\"ended\":true"))
    });
}

/// A note and a kept response each live their own time, however many come
/// after them, and a session keeps its newest 16 responses at most.
#[tokio::test]
async fn kept_client_responses_are_bounded_in_time_and_number() {
    let redis = RedisServer::start().await;
    let bus = RedisBus::connect(&redis.url, DEPLOYMENT).expect("a bus");
    let id = "8".repeat(32);
    let short = Duration::from_millis(300);
    let long = Duration::from_secs(60);
    // Noted and answered with a short time: gone once it passed, though
    // later notes and responses renew the keys.
    bus.save_client_request(&id, 1, short);
    bus.hand_client_response(&id, 1, &client_response(1, "soon gone"), short);
    // Noted with a short time, answered after it passed: not kept.
    bus.save_client_request(&id, 2, short);
    let mut connection = redis.connection().await;
    let asked = format!("clawmcp:{DEPLOYMENT}:session:{id}:asked");
    eventually!(PATIENCE, "noted in time", {
        let due: Option<f64> = connection.zscore(&asked, 2).await.expect("ZSCORE");
        due.is_some()
    });
    tokio::time::sleep(Duration::from_millis(400)).await;
    bus.hand_client_response(&id, 2, &client_response(2, "too late"), long);
    for n in 10..30 {
        bus.save_client_request(&id, n, long);
        bus.hand_client_response(&id, n, &client_response(n, "in time"), long);
    }
    let kept = kept_responses(&bus, &id, 16).await;
    let newest: Vec<String> = (14..30).map(|n| client_response(n, "in time")).collect();
    assert_eq!(kept, newest);
    let noted: i64 = connection.zcard(&asked).await.expect("ZCARD");
    assert_eq!(noted, 0, "every note answered or past its time");
}
