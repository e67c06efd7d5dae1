//! What every task of one session shares: the output channel, the trace
//! level, the handshake's "ready" flag, and the registry of requests in
//! flight that `$/cancelRequest` reaches.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tokio::sync::mpsc;

use super::push::Subscription;
use super::{IdHasher, ServerInner};
use crate::jsonrpc::{RequestId, encode_notification};
use crate::protocol::{LogTraceParams, TraceValue, methods};
use crate::tool::{CancelReason, Cancellation};

/// What the whole session's tasks share.
pub(super) struct Shared {
    pub(super) server: Arc<ServerInner>,
    pub(super) out: mpsc::Sender<Vec<u8>>,
    /// 0 off, 1 messages, 2 verbose.
    trace: AtomicU8,
    /// Past `initialized`: server notifications may be sent.
    ready: AtomicBool,
    /// Requests waiting for async work, by id (several may share an id),
    /// each with its registration number and cancellation token. A request
    /// that completes on its first poll is never registered: no
    /// `$/cancelRequest` can be read while it runs.
    in_flight: Mutex<InFlight>,
    /// Numbers the registrations of `in_flight`.
    registrations: AtomicU64,
    /// Keeps the session registered for pushes until the last task is done.
    pub(super) subscription: Mutex<Option<Subscription>>,
}

/// Requests in flight by id.
type InFlight = HashMap<RequestId, Vec<(u64, Cancellation)>, IdHasher>;

/// A request in [`Shared::in_flight`].
pub(super) struct Registration {
    id: RequestId,
    number: u64,
}

impl Shared {
    pub(super) fn new(server: Arc<ServerInner>, out: mpsc::Sender<Vec<u8>>) -> Self {
        Self {
            server,
            out,
            trace: AtomicU8::new(0),
            ready: AtomicBool::new(false),
            in_flight: Mutex::new(HashMap::default()),
            registrations: AtomicU64::new(0),
            subscription: Mutex::new(None),
        }
    }

    pub(super) async fn send(&self, message: Vec<u8>) {
        tracing::trace!("-> {}", String::from_utf8_lossy(&message));
        if self.out.send(message).await.is_err() {
            tracing::debug!("the transport's writer is gone; a message was dropped");
        }
    }

    pub(super) async fn send_with_trace(&self, reply: Vec<u8>, trace: Option<Vec<u8>>) {
        self.send(reply).await;
        if let Some(trace) = trace {
            self.send(trace).await;
        }
    }

    fn in_flight(&self) -> std::sync::MutexGuard<'_, InFlight> {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a request that waits, so `$/cancelRequest` can reach it.
    pub(super) fn register(&self, id: &RequestId, cancel: &Cancellation) -> Registration {
        let number = self.registrations.fetch_add(1, Ordering::Relaxed);
        self.in_flight()
            .entry(id.clone())
            .or_default()
            .push((number, cancel.clone()));
        Registration {
            id: id.clone(),
            number,
        }
    }

    pub(super) fn unregister(&self, registration: &Registration) {
        let mut map = self.in_flight();
        if let Some(entries) = map.get_mut(&registration.id) {
            entries.retain(|(number, _)| *number != registration.number);
            if entries.is_empty() {
                map.remove(&registration.id);
            }
        }
    }

    /// Stops every request in flight, for `reason` (the shutdown grace
    /// period is over, or the client is gone).
    pub(super) fn cancel_all(&self, reason: CancelReason) {
        for entries in self.in_flight().values() {
            for (_, token) in entries {
                token.cancel(reason);
            }
        }
    }

    /// Fires the cancellation of the requests in flight with `id`; says
    /// whether there was one.
    pub(super) fn cancel(&self, id: &RequestId) -> bool {
        match self.in_flight().get(id) {
            Some(entries) => {
                entries
                    .iter()
                    .for_each(|(_, token)| token.cancel(CancelReason::Client));
                true
            }
            None => false,
        }
    }

    pub(super) fn trace_on(&self) -> bool {
        self.trace.load(Ordering::Relaxed) > 0
    }

    pub(super) fn set_trace(&self, value: TraceValue) {
        let level = match value {
            TraceValue::Off => 0,
            TraceValue::Messages | TraceValue::On => 1,
            TraceValue::Verbose => 2,
        };
        self.trace.store(level, Ordering::Relaxed);
    }

    pub(super) fn set_ready(&self) {
        self.ready.store(true, Ordering::Release);
    }

    /// The `$/logTrace` line for a handled request, when trace is on and the
    /// handshake is complete.
    pub(super) fn trace_line(
        &self,
        method: &str,
        id: &RequestId,
        started: Option<Instant>,
        reply: &[u8],
    ) -> Option<Vec<u8>> {
        let level = self.trace.load(Ordering::Relaxed);
        if level == 0 || !self.ready.load(Ordering::Acquire) {
            return None;
        }
        let params = LogTraceParams {
            message: format!(
                "Received request '{method} - ({id})'. Processed in {}µs.",
                started.map_or(0, |t| t.elapsed().as_micros())
            ),
            verbose: (level == 2).then(|| {
                let text = String::from_utf8_lossy(reply);
                let mut shown: String = text.chars().take(1000).collect();
                if shown.len() < text.len() {
                    shown.push('…');
                }
                format!("Reply: {shown}")
            }),
        };
        Some(encode_notification(methods::LOG_TRACE, &params))
    }
}
