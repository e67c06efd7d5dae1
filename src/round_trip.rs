//! One round of a 2026-07-28 request (docs/model-context.md §7): what the
//! client declared with it, the answers it brought to earlier questions,
//! and the questions its work asks now.
//!
//! The revision keeps no connection to ask the client on, so a tool's
//! question cannot be sent and awaited. A question whose answer the round
//! brought is answered at once; any other is recorded here, and the work
//! is stopped at the end of the poll in which it asked (so questions asked
//! together, as with `join!`, travel together). The request is then
//! answered with the recorded questions, and the client's retry runs the
//! work again from its start with the answers. Questions are told apart by
//! their keys: the one the tool named, else `input-<n>` for the n-th
//! question asked without one, so a tool that asks in the same order on
//! every run gets the same keys.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::client::LogLevel;

/// A question to the client, as an `InputRequiredResult` carries it.
#[derive(Debug)]
pub(crate) struct Question {
    /// Its key in `inputRequests`.
    pub(crate) key: String,
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub(crate) method: &'static str,
    /// Its params.
    pub(crate) params: Box<RawValue>,
}

/// What a round's sealed state is bound to: the call it continues and who
/// made it, kept as received; its canonical bytes are made only when a
/// state is opened or sealed.
#[derive(Debug, Default)]
pub(crate) struct Binding {
    /// The method, the item (the tool or prompt name, or the resource
    /// URI), the token's owner (issuer, subject, client; empty without
    /// one) and the arguments' JSON text (empty: none), one after another:
    /// one allocation for the four.
    text: String,
    /// Where the item, the owner and the arguments begin in `text`.
    starts: [usize; 3],
}

impl Binding {
    /// What a state of a call of `method` on `item` with `arguments` (JSON
    /// text), made by `owner`, is bound to.
    pub(crate) fn new(method: &str, item: &str, arguments: &str, owner: &str) -> Self {
        let mut text =
            String::with_capacity(method.len() + item.len() + owner.len() + arguments.len());
        let mut starts = [0; 3];
        for (start, part) in starts.iter_mut().zip([method, item, owner]) {
            text.push_str(part);
            *start = text.len();
        }
        text.push_str(arguments);
        Self { text, starts }
    }

    /// The token's owner, empty without one.
    pub(crate) fn owner(&self) -> &str {
        (self.text.get(self.starts[1]..self.starts[2])).unwrap_or_default()
    }

    /// The associated data a state is sealed with: the parts, the
    /// arguments as canonical JSON (object keys sorted at every level, no
    /// spaces), so that a retry that writes them otherwise still opens it.
    pub(crate) fn bytes(&self) -> Vec<u8> {
        let [item, owner, arguments] = self.starts;
        let text = self.text.as_bytes();
        let mut out = Vec::with_capacity(64 + text.len());
        out.extend_from_slice(b"clawmcp-state-v1\0");
        // (`starts` are offsets `new` took in `text`, in order.)
        out.extend_from_slice(text.get(..item).unwrap_or_default());
        out.push(0);
        out.extend_from_slice(text.get(item..owner).unwrap_or_default());
        out.push(0);
        let arguments = self.text.get(arguments..).unwrap_or_default();
        if let Ok(value) = serde_json::from_str::<Value>(arguments) {
            canonical(&value, &mut out);
        }
        out.push(0);
        out.extend_from_slice(self.owner().as_bytes());
        out
    }
}

/// `value` as canonical JSON: keys sorted, whatever order the map keeps.
fn canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let _ = serde_json::to_writer(&mut *out, key);
                out.push(b':');
                canonical(value, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical(item, out);
            }
            out.push(b']');
        }
        scalar => {
            let _ = serde_json::to_writer(&mut *out, scalar);
        }
    }
}

/// One round of a 2026-07-28 request.
#[derive(Debug, Default)]
pub(crate) struct RoundTrip {
    /// The capabilities the client declared with this request, as JSON
    /// text (an object), read when first asked.
    declared: String,
    capabilities: OnceLock<Map<String, Value>>,
    /// The least severe log level the request asked for (none: no log
    /// lines at all).
    log_level: Option<LogLevel>,
    /// Answers by key: the earlier rounds' (from the request state) and
    /// this round's `inputResponses`.
    answers: Map<String, Value>,
    /// How many questions were asked without a key.
    unnamed: AtomicUsize,
    /// The questions asked that the answers do not cover.
    asked: Mutex<Vec<Question>>,
    /// Woken when a question is asked: the work that waits, which ends
    /// with it (a question asked off the work's own task, from a task it
    /// spawned, wakes it there).
    asker: Mutex<Option<std::task::Waker>>,
    /// It takes no more questions (it is closed): its request goes on as
    /// a task, which asks its own. Set under `asked`'s lock.
    closed: std::sync::atomic::AtomicBool,
    /// Capabilities a question needed that the client did not declare.
    missing: Mutex<Vec<&'static str>>,
    /// What the round's sealed state is bound to (the request, its
    /// caller).
    binding: Binding,
}

impl RoundTrip {
    /// A round with the client's declared capabilities (`declared`, the
    /// JSON text of an object), its requested `log_level`, the `answers`
    /// known so far, and what its state is bound to.
    pub(crate) fn new(
        declared: String,
        log_level: Option<LogLevel>,
        answers: Map<String, Value>,
        binding: Binding,
    ) -> Self {
        Self {
            declared,
            log_level,
            answers,
            binding,
            ..Self::default()
        }
    }

    /// What the round's sealed state is bound to.
    pub(crate) fn binding(&self) -> &Binding {
        &self.binding
    }

    /// The capabilities the client declared with this request.
    pub(crate) fn capabilities(&self) -> &Map<String, Value> {
        self.capabilities
            .get_or_init(|| serde_json::from_str(&self.declared).unwrap_or_default())
    }

    /// Whether a log line at `level` goes to the client.
    pub(crate) fn logs(&self, level: LogLevel) -> bool {
        self.log_level.is_some_and(|least| level >= least)
    }

    /// What the client declared of `capability` (`None`: nothing).
    pub(crate) fn declared(&self, capability: &'static str) -> Option<&Value> {
        self.capabilities().get(capability)
    }

    /// Records `capability` as missing: declared too little, or not at
    /// all (the request then fails with `-32021`).
    pub(crate) fn lacks(&self, capability: &'static str) {
        let mut missing = self.missing.lock().unwrap_or_else(PoisonError::into_inner);
        if !missing.contains(&capability) {
            missing.push(capability);
        }
    }

    /// The key of a question: `named`, else the next unnamed one's.
    pub(crate) fn key(&self, named: Option<&str>) -> String {
        match named {
            Some(key) => key.to_owned(),
            None => format!("input-{}", self.unnamed.fetch_add(1, Ordering::Relaxed)),
        }
    }

    /// The answer to the question `key`, when the round brought one.
    pub(crate) fn answer(&self, key: &str) -> Option<&Value> {
        self.answers.get(key)
    }

    /// Records a question the answers do not cover, and wakes the work
    /// that waits ([`wake_on_question`](Self::wake_on_question)); gives it
    /// back when the round is [closed](Self::close).
    pub(crate) fn ask(&self, question: Question) -> Result<(), Question> {
        {
            let mut asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
            if self.closed.load(Ordering::Relaxed) {
                return Err(question);
            }
            if asked.iter().any(|q| q.key == question.key) {
                return Ok(());
            }
            asked.push(question);
        }
        let asker = self
            .asker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(asker) = asker {
            asker.wake();
        }
        Ok(())
    }

    /// Takes no more questions from now on (its request goes on as a
    /// task); whether it was asked any before.
    pub(crate) fn close(&self) -> bool {
        let asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
        self.closed.store(true, Ordering::Relaxed);
        !asked.is_empty()
    }

    /// Wakes `waker` at the next question asked (its work looks at the
    /// questions after each poll).
    pub(crate) fn wake_on_question(&self, waker: &std::task::Waker) {
        let mut asker = self.asker.lock().unwrap_or_else(PoisonError::into_inner);
        if !asker.as_ref().is_some_and(|a| a.will_wake(waker)) {
            *asker = Some(waker.clone());
        }
    }

    /// Whether the work asked a question this round cannot answer.
    pub(crate) fn waits_for_input(&self) -> bool {
        !self
            .asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }

    /// The questions asked this round, taken.
    pub(crate) fn take_questions(&self) -> Vec<Question> {
        std::mem::take(&mut *self.asked.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The capabilities a question needed and the client did not declare.
    pub(crate) fn missing(&self) -> Vec<&'static str> {
        self.missing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Every answer known, for the next round's state.
    pub(crate) fn answers(&self) -> &Map<String, Value> {
        &self.answers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sealed state opens only where its binding's bytes are the same:
    /// they are pinned, so that a process of another build in the same
    /// deployment still opens the states this one sealed.
    #[test]
    fn a_bindings_bytes_are_pinned() {
        let binding = Binding::new(
            "tools/call",
            "echo",
            r#"{ "b": 1, "a": [2, {"d": null, "c": "x"}] }"#,
            "https://as.example ada client",
        );
        assert_eq!(binding.owner(), "https://as.example ada client");
        assert_eq!(
            binding.bytes(),
            b"clawmcp-state-v1\0tools/call\0echo\0{\"a\":[2,{\"c\":\"x\",\"d\":null}],\"b\":1}\0https://as.example ada client"
        );
        // No arguments, no owner: the parts still in their places.
        assert_eq!(
            Binding::new("prompts/get", "plan", "", "").bytes(),
            b"clawmcp-state-v1\0prompts/get\0plan\0\0"
        );
        assert_eq!(Binding::default().bytes(), b"clawmcp-state-v1\0\0\0\0");
    }
}
