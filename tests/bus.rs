//! The bus (clawmcp::bus): what one server announces reaches the streams of
//! another server that shares its bus — exactly once on each — a shared
//! resource's content reads the same on both, and a gap makes every stream
//! hear that every list changed and every resource was updated. Two
//! servers in one process stand for two processes, joined by a bus that
//! hands each message to the other's inbox (as Redis pub/sub does).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use clawmcp::bus::{Bus, BusMessage, Inbox};
use clawmcp::testing::TestClient;
use clawmcp::{Server, SharedResource};
use serde_json::{Value, json};
use tokio::time::timeout;

/// A hang guard, never a performance bound.
const PATIENCE: Duration = Duration::from_secs(10);
const STATUS: &str = "mcp://test/resources/status";

/// One end of a two-process bus: what it publishes goes to the other
/// end's inbox.
#[derive(Clone, Default)]
struct End {
    mine: Arc<Mutex<Option<Inbox>>>,
    peer: Arc<Mutex<Option<Inbox>>>,
}

impl Bus for End {
    fn publish(&self, message: BusMessage) {
        if let Some(peer) = self.peer.lock().unwrap().clone() {
            peer.deliver(message);
        }
    }

    fn start(&self, inbox: Inbox) {
        *self.mine.lock().unwrap() = Some(inbox);
    }
}

fn pair() -> (End, End) {
    let a = End::default();
    let b = End {
        mine: a.peer.clone(),
        peer: a.mine.clone(),
    };
    (a, b)
}

fn process(bus: End) -> (Server, SharedResource) {
    let status = SharedResource::new(STATUS, "status", "Status.", "text/plain", "starting");
    let server = Server::builder()
        .resource(status.clone())
        .bus(bus)
        .build()
        .expect("builds");
    (server, status)
}

async fn subscribed(server: &Server) -> TestClient {
    let mut client = TestClient::model_context(server, json!({})).await;
    client
        .call("resources/subscribe", Some(json!({"uri": STATUS})))
        .await
        .expect("subscribes");
    client
}

async fn next_of(client: &mut TestClient, method: &str) -> Value {
    timeout(PATIENCE, client.notification(method))
        .await
        .expect("in time")
        .expect("a notification")
}

#[tokio::test]
async fn a_set_on_one_process_reaches_the_streams_of_the_other_once_and_reads_the_same() {
    let (a_bus, b_bus) = pair();
    let (a, a_status) = process(a_bus);
    let (b, b_status) = process(b_bus);
    let mut on_a = subscribed(&a).await;
    let mut on_b = subscribed(&b).await;
    let mut v1_on_b = TestClient::initialized(&b).await;

    a_status.set("ready");
    for client in [&mut on_a, &mut on_b] {
        let updated = next_of(client, "notifications/resources/updated").await;
        assert_eq!(updated["uri"], STATUS);
    }
    let changed = next_of(&mut v1_on_b, "mcp/resourceDidChange").await;
    assert_eq!(changed["mcpId"], STATUS);
    assert_eq!(
        b_status.get(),
        "ready",
        "the content crossed with the change"
    );
    let read = on_b.read_resource(STATUS).await.expect("reads");
    assert_eq!(read["text"], "ready");
    // Exactly once on each stream.
    for client in [&mut on_a, &mut on_b] {
        let more = client.collect(Duration::from_millis(100)).await;
        assert!(more.is_empty(), "{more:?}");
    }
}

#[tokio::test]
async fn list_changes_and_resource_changed_cross_too() {
    let (a_bus, b_bus) = pair();
    let (a, _) = process(a_bus);
    let (b, _) = process(b_bus);
    let mut on_b = subscribed(&b).await;
    a.handle().resource_changed(STATUS);
    let updated = next_of(&mut on_b, "notifications/resources/updated").await;
    assert_eq!(updated["uri"], STATUS);
    let echo = clawmcp::tool_fn(
        clawmcp::definition::ToolDefinition {
            mcp_id: "mcp://test/tools/echo:v1".into(),
            name: "echo".into(),
            description: "Echoes.".into(),
            input_schema: json!({"type": "object"}),
            output_schema: json!({"type": "object"}),
        },
        |args: Value, _: clawmcp::ToolContext| async move { Ok(args) },
    );
    a.handle().add_tool(echo).expect("adds");
    next_of(&mut on_b, "notifications/tools/list_changed").await;
}

#[tokio::test]
async fn after_a_gap_every_stream_hears_that_everything_may_have_changed() {
    let (a_bus, b_bus) = pair();
    let (_a, _) = process(a_bus.clone());
    let (b, _) = process(b_bus);
    let mut on_b = subscribed(&b).await;
    // The bus of B reports a gap (Redis came back after an outage).
    let inbox = a_bus.peer.lock().unwrap().clone().expect("B's inbox");
    inbox.gap();
    next_of(&mut on_b, "notifications/resources/list_changed").await;
    let updated = next_of(&mut on_b, "notifications/resources/updated").await;
    assert_eq!(updated["uri"], STATUS);
}

#[tokio::test]
async fn an_unknown_resource_is_ignored_and_an_unchanged_content_still_announced() {
    let (a_bus, b_bus) = pair();
    let (_a, _) = process(a_bus.clone());
    let (b, b_status) = process(b_bus);
    let mut on_b = subscribed(&b).await;
    let inbox = a_bus.peer.lock().unwrap().clone().expect("B's inbox");
    inbox.deliver(BusMessage::ResourceUpdated {
        uri: "mcp://test/resources/unknown".into(),
    });
    let quiet = on_b.collect(Duration::from_millis(100)).await;
    assert!(quiet.is_empty(), "{quiet:?}");
    // A set with the content it already had is announced on the process
    // that made it, so on every other too.
    let message: BusMessage = serde_json::from_value(json!({
        "kind": "resourceContent", "uri": STATUS, "content": "starting"
    }))
    .expect("a bus message");
    inbox.deliver(message);
    let updated = next_of(&mut on_b, "notifications/resources/updated").await;
    assert_eq!(updated["uri"], STATUS);
    assert_eq!(b_status.get(), "starting");
}
