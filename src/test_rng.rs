//! The source of choices for the generated-input tests of the hand-written
//! JSON walks: a sequence of numbers drawn by proptest (so a failure
//! shrinks towards the first choices: fewer members, shallower nesting,
//! the first pooled values), each read as a pick among a few.

use proptest::prelude::*;

/// Choices drawn by proptest; past their end every choice is the first.
#[derive(Debug, Clone)]
pub(crate) struct Rng {
    choices: Vec<u64>,
    at: usize,
}

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        let choice = self.choices.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        choice
    }

    /// A number below `n` (> 0).
    #[allow(clippy::cast_possible_truncation)]
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub(crate) fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
}

/// Sequences of up to `len` choices.
pub(crate) fn choices(len: usize) -> impl Strategy<Value = Rng> {
    prop::collection::vec(any::<u64>(), 0..len).prop_map(|choices| Rng { choices, at: 0 })
}

/// Sequences of exactly `len` choices: enough that a generator seldom
/// runs out of them (a population like the inputs a test means).
pub(crate) fn full_choices(len: usize) -> impl Strategy<Value = Rng> {
    prop::collection::vec(any::<u64>(), len).prop_map(|choices| Rng { choices, at: 0 })
}

/// `count` values of `strategy`, drawn by proptest's deterministic runner:
/// for tests that count how much of a generated population passes.
pub(crate) fn sample<S: Strategy>(strategy: &S, count: usize) -> Vec<S::Value> {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    (0..count)
        .filter_map(|_| {
            strategy
                .new_tree(&mut runner)
                .ok()
                .map(|tree| tree.current())
        })
        .collect()
}
