//! The bytes each principal's tasks hold in this process: their
//! arguments while they run, and their states (questions, results) while
//! they run and for their time to live after. A principal holding its
//! bound gets no new task, so that one client cannot make a process hold
//! gigabytes through tasks within the bound of tasks per principal.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use super::now_ms;
use crate::tally::Tally;

/// The tasks this process ran or runs, and the bytes they hold, by whom
/// they count against ([`TaskState::counts_against`](super::TaskState::counts_against)).
#[derive(Debug, Default)]
pub(crate) struct TaskLedger(Mutex<Ledger>);

#[derive(Debug, Default)]
struct Ledger {
    /// Bytes held, by principal key.
    held: Tally<String>,
    /// Every task counted: whom against, and how many bytes.
    tasks: HashMap<String, CountedTask>,
    /// When each ended task stops counting, soonest first.
    expiries: BTreeSet<(u64, String)>,
}

/// A task the ledger counts: its principal's key and its bytes.
#[derive(Debug)]
struct CountedTask {
    key: String,
    bytes: u64,
    /// Its end is counted: a save of an earlier state no longer resizes
    /// it.
    ended: bool,
}

/// Why a task was not counted: its principal's tasks hold `held` bytes,
/// and `most` is the bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "this caller's tasks hold {held} bytes of arguments and state (the most is {most}, running or kept for their time to live): try again once one has gone"
)]
pub(crate) struct OverBudget {
    pub(crate) held: u64,
    pub(crate) most: u64,
}

/// A task's place in the ledger: counted until it is dropped, unless
/// [`kept`](Self::kept); then it counts until its end and time to live.
#[derive(Debug)]
pub(crate) struct Reservation {
    ledger: Arc<TaskLedger>,
    task_id: Option<String>,
}

impl Reservation {
    /// The task exists: it stays counted after this is dropped, until
    /// [`TaskLedger::ended`] and its time to live.
    pub(crate) fn kept(mut self) {
        self.task_id = None;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(id) = self.task_id.take() {
            self.ledger.lock().remove(&id);
        }
    }
}

impl Ledger {
    fn remove(&mut self, task_id: &str) {
        if let Some(entry) = self.tasks.remove(task_id) {
            self.held.give_back(&entry.key, entry.bytes);
        }
    }

    /// Stops counting the ended tasks whose time to live has passed.
    fn sweep(&mut self, now: u64) {
        while self.expiries.first().is_some_and(|(at, _)| *at <= now) {
            if let Some((_, id)) = self.expiries.pop_first() {
                self.remove(&id);
            }
        }
    }
}

impl TaskLedger {
    fn lock(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a new task of `bytes` against `key`, unless `key`'s tasks
    /// hold something already and adding it would pass `most`. A task
    /// alone passes whatever its size: a request is bounded by the
    /// message size.
    pub(crate) fn reserve(
        self: &Arc<Self>,
        task_id: &str,
        key: &str,
        bytes: u64,
        most: u64,
    ) -> Result<Reservation, OverBudget> {
        let mut ledger = self.lock();
        ledger.sweep(now_ms());
        ledger
            .held
            .take(key.to_owned(), bytes, most)
            .map_err(|held| OverBudget { held, most })?;
        let entry = CountedTask {
            key: key.to_owned(),
            bytes,
            ended: false,
        };
        ledger.tasks.insert(task_id.to_owned(), entry);
        Ok(Reservation {
            ledger: self.clone(),
            task_id: Some(task_id.to_owned()),
        })
    }

    /// A counted running task now holds `bytes`.
    pub(crate) fn resize(&self, task_id: &str, bytes: u64) {
        self.set(task_id, bytes, false);
    }

    fn set(&self, task_id: &str, bytes: u64, ending: bool) {
        let mut ledger = self.lock();
        let Some(entry) = ledger.tasks.get_mut(task_id) else {
            return;
        };
        if entry.ended {
            return;
        }
        entry.ended = ending;
        let before = std::mem::replace(&mut entry.bytes, bytes);
        let key = entry.key.clone();
        ledger.held.give_back(&key, before);
        ledger.held.add(key, bytes);
    }

    /// A counted task has ended holding `bytes` (its kept state); it
    /// counts until `expires_at_ms` (`None`: for as long as the process).
    pub(crate) fn ended(&self, task_id: &str, bytes: u64, expires_at_ms: Option<u64>) {
        self.set(task_id, bytes, true);
        if let Some(at) = expires_at_ms {
            let mut ledger = self.lock();
            if ledger.tasks.contains_key(task_id) {
                ledger.expiries.insert((at, task_id.to_owned()));
            }
        }
    }

    /// The bytes `key`'s tasks hold now.
    #[cfg(test)]
    fn held(&self, key: &str) -> u64 {
        let mut ledger = self.lock();
        ledger.sweep(now_ms());
        ledger.held.held(key)
    }
}

/// How many bytes `value` takes as JSON, counted as serde_json writes it
/// (nothing is kept).
pub(crate) fn json_size(value: &impl Serialize) -> u64 {
    struct Counting(u64);
    impl std::io::Write for Counting {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counting = Counting(0);
    // (Writing into a counter fails only where serialising fails at all.)
    let _ = serde_json::to_writer(&mut counting, value);
    counting.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_principal_past_its_bytes_gets_no_new_task_and_one_alone_passes_whatever_its_size() {
        let ledger = Arc::new(TaskLedger::default());
        let big = ledger.reserve("a", "peer 1", 5_000, 1_000).expect("alone");
        big.kept();
        assert_eq!(
            ledger.reserve("b", "peer 1", 1, 1_000).unwrap_err(),
            OverBudget {
                held: 5_000,
                most: 1_000
            }
        );
        // Another principal is not held back.
        ledger
            .reserve("c", "peer 2", 10, 1_000)
            .expect("another")
            .kept();
        assert_eq!(ledger.held("peer 2"), 10);
    }

    #[test]
    fn a_reservation_dropped_before_the_task_exists_frees_its_bytes() {
        let ledger = Arc::new(TaskLedger::default());
        let first = ledger.reserve("a", "k", 600, 1_000).expect("room");
        assert!(ledger.reserve("b", "k", 600, 1_000).is_err());
        drop(first);
        assert_eq!(ledger.held("k"), 0);
        ledger.reserve("b", "k", 600, 1_000).expect("room again");
    }

    #[test]
    fn a_task_counts_its_new_size_and_an_ended_one_goes_at_its_expiry() {
        let ledger = Arc::new(TaskLedger::default());
        ledger.reserve("a", "k", 100, 1_000).expect("room").kept();
        ledger.resize("a", 900);
        assert_eq!(ledger.held("k"), 900);
        assert!(ledger.reserve("b", "k", 200, 1_000).is_err());
        // Ended: its arguments go, its state stays until its expiry.
        ledger.ended("a", 300, Some(now_ms() + 60_000));
        assert_eq!(ledger.held("k"), 300);
        ledger.resize("a", 900);
        assert_eq!(ledger.held("k"), 300, "an earlier state saved late");
        ledger.reserve("b", "k", 200, 1_000).expect("room").kept();
        ledger.ended("b", 50, Some(0));
        assert_eq!(ledger.held("k"), 300, "an expired task stops counting");
        ledger.reserve("c", "k", 10, 1_000).expect("room").kept();
        ledger.ended("c", 10, None);
        assert_eq!(ledger.held("k"), 310, "kept without a time to live");
    }

    #[test]
    fn json_size_is_the_length_serde_json_writes() {
        let value = serde_json::json!({"a": [1, "two", null], "b": "\u{e9}\n"});
        let written = serde_json::to_vec(&value).expect("serialises");
        assert_eq!(json_size(&value), written.len() as u64);
    }
}
