//! The forwarder of a ready session's change queue: each change the
//! [`ServerHandle`](crate::ServerHandle) announced is encoded in the
//! session's dialect — a resource's change as `mcp/resourceDidChange` in
//! MCP v1.0 and `notifications/resources/updated` (to sessions that
//! subscribed to the resource) in the Model Context Protocol, a list's as
//! the Model Context Protocol's `notifications/…/list_changed` — and sent
//! on its output.

use std::sync::Arc;

use super::outbox::{About, Outbox, Outgoing};
use crate::dialect::{Dialect, Subscriptions};
use crate::handle::{PushRegistration, PushRegistry};

/// Registers a session that became ready and starts the task that forwards
/// its queue, encoded by the session's dialect, into `out`. The returned
/// guard unregisters it; the forwarder then sends what is queued and stops.
pub(crate) fn forward_pushes(
    registry: &Arc<PushRegistry>,
    out: Outbox,
    dialect: Dialect,
    subscriptions: Arc<Subscriptions>,
) -> PushRegistration {
    let (registration, queue) = registry.register();
    tokio::spawn(async move {
        while let Some(batch) = queue.next_batch().await {
            for push in batch {
                let Some(bytes) = dialect.pushed(&subscriptions, &push) else {
                    continue;
                };
                let message = Outgoing {
                    bytes,
                    about: About::Session,
                };
                if out.send(message).await.is_err() {
                    return;
                }
            }
        }
    });
    registration
}
