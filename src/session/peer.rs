//! Requests the server sends to the client from inside a tool (Model
//! Context Protocol): each gets an id of the session's own, a pending entry
//! that the client's response completes, a time limit, and a guard that
//! removes the entry however the wait ends. Responses are routed here by
//! the session reader as they are read — they never wait for an in-flight
//! slot — and every pending request fails with
//! [`ClientError::Gone`] when the session's input ends or its output goes.
//!
//! The session's `ClientLink` (`link.rs`) sends them and waits here.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use crate::client::ClientError;
use crate::jsonrpc::RequestId;

/// An answer the client gave: a result, or why there is none.
pub(crate) type Answer = Result<Value, ClientError>;

/// The requests a session sent and waits on.
#[derive(Default)]
pub(crate) struct Peer {
    next_id: AtomicU64,
    pending: Mutex<Pending>,
}

#[derive(Default)]
struct Pending {
    /// The client can no longer answer: new requests fail at once.
    closed: bool,
    waiting: HashMap<u64, oneshot::Sender<Answer>>,
}

impl Peer {
    /// A peer whose requests are numbered from `first` (a copy of a session
    /// on another process numbers its own apart from the original's).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn numbered_from(first: u64) -> Self {
        Self {
            next_id: AtomicU64::new(first),
            pending: Mutex::default(),
        }
    }

    /// Whether request `id` waits for its answer here.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn waits_for(&self, id: Option<&RequestId>) -> bool {
        Self::number_of(id).is_some_and(|n| self.pending().waiting.contains_key(&n))
    }

    /// The number a response's `id` gives, if it could answer a request
    /// a session sent (they are numbered): `None` for any other id.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn number_of(id: Option<&RequestId>) -> Option<u64> {
        match id {
            Some(RequestId::Number(digits)) => digits.parse::<u64>().ok(),
            _ => None,
        }
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A fresh id and the receiver of its answer.
    pub(crate) fn start(&self) -> Result<(u64, oneshot::Receiver<Answer>), ClientError> {
        let mut pending = self.pending();
        if pending.closed {
            return Err(ClientError::Gone);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (answer, receiver) = oneshot::channel();
        pending.waiting.insert(id, answer);
        Ok((id, receiver))
    }

    /// Drops the pending entry of request `id`.
    pub(crate) fn forget(&self, id: u64) {
        self.pending().waiting.remove(&id);
    }

    /// The client can no longer answer: every pending request fails with
    /// [`ClientError::Gone`], and so does every later one.
    pub(crate) fn close(&self) {
        let waiting = {
            let mut pending = self.pending();
            pending.closed = true;
            std::mem::take(&mut pending.waiting)
        };
        for (_, answer) in waiting {
            let _ = answer.send(Err(ClientError::Gone));
        }
    }

    /// Completes the request `id` with the client's response.
    pub(crate) fn answer(&self, id: Option<&RequestId>, outcome: Result<&RawValue, &RawValue>) {
        let number = match id {
            Some(RequestId::Number(digits)) => digits.parse::<u64>().ok(),
            _ => None,
        };
        let Some(answer) = number.and_then(|n| self.pending().waiting.remove(&n)) else {
            tracing::debug!(?id, "a response to no request of ours; ignored");
            return;
        };
        let answer_value = match outcome {
            Ok(result) => serde_json::from_str::<Value>(result.get())
                .map_err(|e| ClientError::Malformed(e.to_string())),
            Err(error) => Err(refusal(error)),
        };
        let _ = answer.send(answer_value);
    }
}

/// The client's error object as a [`ClientError::Refused`].
fn refusal(error: &RawValue) -> ClientError {
    #[derive(serde::Deserialize)]
    struct ErrorObject {
        code: i64,
        #[serde(default)]
        message: String,
        #[serde(default)]
        data: Option<Value>,
    }
    match serde_json::from_str::<ErrorObject>(error.get()) {
        Ok(e) => ClientError::Refused {
            code: e.code,
            message: e.message,
            data: e.data,
        },
        Err(e) => ClientError::Malformed(format!("an error object that is not one: {e}")),
    }
}
