//! What each principal holds of one bound (streams, sessions, bytes in
//! flight, bytes of tasks), and the rule the bounds per principal share:
//! a principal that holds nothing may take any amount (one request is
//! bounded by the message size), one that holds something may not pass
//! the bound. A key that holds nothing has no entry, so the map shrinks
//! as principals leave.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;

/// Amounts held, by key.
#[derive(Debug)]
pub(crate) struct Tally<K>(HashMap<K, u64>);

impl<K> Default for Tally<K> {
    fn default() -> Self {
        Self(HashMap::new())
    }
}

impl<K: Hash + Eq> Tally<K> {
    /// What `key` holds.
    pub(crate) fn held<Q>(&self, key: &Q) -> u64
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.0.get(key).copied().unwrap_or(0)
    }

    /// Counts `amount` more against `key`, unless `key` holds something
    /// already and that would take it past `most`: then `Err` with what
    /// it holds, and nothing is counted.
    pub(crate) fn take(&mut self, key: K, amount: u64, most: u64) -> Result<(), u64> {
        let held = self.held(&key);
        if held > 0 && held.saturating_add(amount) > most {
            return Err(held);
        }
        self.add(key, amount);
        Ok(())
    }

    /// Counts `amount` more against `key`, whatever it holds.
    pub(crate) fn add(&mut self, key: K, amount: u64) {
        if amount > 0 {
            let held = self.0.entry(key).or_insert(0);
            *held = held.saturating_add(amount);
        }
    }

    /// Gives `amount` of `key`'s back; at zero its entry goes.
    pub(crate) fn give_back<Q>(&mut self, key: &Q, amount: u64)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if let Some(held) = self.0.get_mut(key) {
            *held = held.saturating_sub(amount);
            if *held == 0 {
                self.0.remove(key);
            }
        }
    }

    /// Whether no key holds anything.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_holding_nothing_takes_any_amount_and_one_holding_something_stays_within_the_bound() {
        let mut tally = Tally::default();
        assert_eq!(tally.take("a", 5_000, 1_000), Ok(()), "alone: any amount");
        assert_eq!(tally.take("a", 1, 1_000), Err(5_000));
        assert_eq!(tally.held("a"), 5_000, "a refusal counts nothing");
        assert_eq!(tally.take("b", 600, 1_000), Ok(()));
        assert_eq!(tally.take("b", 400, 1_000), Ok(()), "up to the bound");
        assert_eq!(tally.take("b", 1, 1_000), Err(1_000));
    }

    #[test]
    fn what_is_given_back_leaves_no_entry_at_zero() {
        let mut tally = Tally::default();
        tally.add("a", 3);
        tally.add("a", 0);
        tally.add("b", 0);
        tally.give_back("a", 3);
        assert!(tally.is_empty(), "nothing added is no entry");
        tally.add("a", 3);
        tally.give_back("a", 2);
        assert_eq!(tally.held("a"), 1);
        tally.give_back("a", 5);
        assert_eq!(tally.held("a"), 0);
        assert!(tally.is_empty());
        tally.give_back("absent", 1);
        assert!(tally.is_empty());
    }
}
