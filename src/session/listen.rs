//! A 2026-07-28 `subscriptions/listen` stream, as a request's work: its
//! acknowledgement first, then every change the filter opts in to, each
//! tagged with the stream's id, on the request's own output — until the
//! client closes the stream (HTTP) or cancels the request (stdio), or the
//! server shuts down, which ends it with its result.

use std::sync::Arc;

use super::outbox::{About, Outgoing};
use super::shared::Shared;
use crate::dialect::stateless::{self, Filter};
use crate::engine::Done;
use crate::jsonrpc::RequestId;

/// The stream's work: `Ok` when the server shut down (its graceful end).
pub(crate) async fn listen(
    shared: Arc<Shared>,
    id: RequestId,
    filter: Filter,
) -> Result<Done, crate::engine::Failure> {
    let handle = &shared.server.handle;
    // Registered before the acknowledgement: no change after it is missed.
    let (subscription, queue) = handle.registry().register();
    let about = || About::Related(id.clone());
    shared
        .send(Outgoing {
            bytes: stateless::acknowledged(&id, &filter),
            about: about(),
        })
        .await;
    let stop = handle.stop_token().clone();
    loop {
        let batch = tokio::select! {
            batch = queue.next_batch() => batch,
            () = stop.cancelled() => break,
            () = shared.streams_end.cancelled() => break,
        };
        let Some(batch) = batch else { break };
        for change in batch.iter().filter(|change| filter.wants(change)) {
            shared
                .send(Outgoing {
                    bytes: stateless::pushed(&id, change),
                    about: about(),
                })
                .await;
        }
    }
    drop(subscription);
    Ok(Done::SubscriptionEnded)
}
