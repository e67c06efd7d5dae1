//! A session's request slots: at most `max_in_flight` requests run at
//! once. A slot is taken with one atomic step and freed with one; the
//! session's reader, when it waits (for a slot for a parked request, or
//! for every slot to be free at its end), is told, and only then.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

/// The slots of one session.
#[derive(Debug)]
pub(crate) struct Slots {
    max: usize,
    used: AtomicUsize,
    /// Tasks waiting in [`take`](Self::take) or [`all_free`](Self::all_free).
    waiting: AtomicUsize,
    freed: Notify,
}

/// A taken slot, freed when dropped: lent by its session's slots (a
/// request served on the reader, which owes no reference count) or holding
/// them (one handed to a task: [`owned`](Self::owned)).
#[derive(Debug)]
pub(crate) struct Slot<'a> {
    /// `None` once handed on by [`owned`](Self::owned).
    slots: Option<SlotsRef<'a>>,
}

#[derive(Debug)]
enum SlotsRef<'a> {
    Lent(&'a Arc<Slots>),
    Owned(Arc<Slots>),
}

impl Slot<'_> {
    /// The same slot, free of the borrow (for a task).
    pub(crate) fn owned(mut self) -> Slot<'static> {
        let slots = match self.slots.take() {
            Some(SlotsRef::Lent(slots)) => Some(SlotsRef::Owned(slots.clone())),
            Some(SlotsRef::Owned(slots)) => Some(SlotsRef::Owned(slots)),
            None => None,
        };
        Slot { slots }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let slots: &Slots = match &self.slots {
            Some(SlotsRef::Lent(slots)) => slots,
            Some(SlotsRef::Owned(slots)) => slots,
            None => return,
        };
        slots.used.fetch_sub(1, Ordering::SeqCst);
        // A waiter counts itself before it looks at `used` (both SeqCst):
        // either it sees this slot free, or this sees it waiting.
        if slots.waiting.load(Ordering::SeqCst) > 0 {
            slots.freed.notify_waiters();
        }
    }
}

impl Slots {
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max,
            used: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            freed: Notify::new(),
        })
    }

    /// A slot, if one is free.
    pub(crate) fn try_take(self: &Arc<Self>) -> Option<Slot<'_>> {
        self.take_in_order(0)
    }

    /// A slot for a request that would start now: none while `parked`
    /// requests wait before it (it would overtake them), nor while every
    /// slot is taken. The session's reader and a request served beside it
    /// both start a request by this one rule.
    pub(crate) fn take_in_order(self: &Arc<Self>, parked: usize) -> Option<Slot<'_>> {
        if parked > 0 {
            return None;
        }
        self.used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                (used < self.max).then_some(used + 1)
            })
            .ok()
            .map(|_| Slot {
                slots: Some(SlotsRef::Lent(self)),
            })
    }

    /// Whether no slot is taken.
    pub(crate) fn all_are_free(&self) -> bool {
        self.used.load(Ordering::SeqCst) == 0
    }

    /// A slot, once one is free.
    pub(crate) async fn take(self: &Arc<Self>) -> Slot<'static> {
        self.wait_until(|slots| slots.try_take().map(Slot::owned))
            .await
    }

    /// Completes once no slot is taken.
    pub(crate) async fn all_free(self: &Arc<Self>) {
        self.wait_until(|slots| slots.all_are_free().then_some(()))
            .await;
    }

    async fn wait_until<T>(self: &Arc<Self>, ready: impl Fn(&Arc<Self>) -> Option<T>) -> T {
        if let Some(done) = ready(self) {
            return done;
        }
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let _counted = CountedWaiter(self);
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if let Some(done) = ready(self) {
                return done;
            }
            freed.await;
        }
    }
}

/// Counts a waiter for as long as it waits (also when its future is
/// dropped).
struct CountedWaiter<'a>(&'a Slots);

impl Drop for CountedWaiter<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request that would overtake a parked one gets no slot, free or
    /// not; with none parked it gets one while one is free.
    #[test]
    fn a_slot_is_taken_in_order() {
        let slots = Slots::new(1);
        assert!(slots.take_in_order(1).is_none(), "one is parked before it");
        let slot = slots.take_in_order(0).expect("nothing parked, a slot free");
        assert!(slots.take_in_order(0).is_none(), "every slot is taken");
        drop(slot);
        assert!(slots.try_take().is_some());
    }

    /// No more than `max` slots are taken at once; a waiter gets the one
    /// freed, and `all_free` completes with the last.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slots_are_bounded_and_freed_ones_reach_waiters() {
        let slots = Slots::new(2);
        let a = slots.try_take().expect("a free slot");
        let b = slots.try_take().expect("a second free slot");
        assert!(slots.try_take().is_none(), "a third slot");
        let waiter = tokio::spawn({
            let slots = slots.clone();
            async move { slots.take().await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        drop(a);
        let c = waiter.await.expect("the waiter got the freed slot");
        let all = tokio::spawn({
            let slots = slots.clone();
            async move { slots.all_free().await }
        });
        drop(b);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(!all.is_finished() && !slots.all_are_free());
        drop(c);
        all.await.expect("all slots free");
        assert!(slots.all_are_free());
    }

    /// A lent slot made owned is still the one slot: freed once, when the
    /// owned one goes (in a task of its own), not when the loan ends.
    #[tokio::test]
    async fn a_lent_slot_handed_to_a_task_is_freed_once_when_the_task_drops_it() {
        let slots = Slots::new(1);
        let owned = slots.try_take().expect("a free slot").owned();
        assert!(slots.try_take().is_none(), "the slot stays taken");
        assert_eq!(
            Arc::strong_count(&slots),
            2,
            "the owned slot holds the slots"
        );
        tokio::spawn(async move { drop(owned) })
            .await
            .expect("the task ran");
        assert!(slots.all_are_free());
        assert_eq!(Arc::strong_count(&slots), 1);
        let lent = slots.try_take().expect("the slot again");
        assert_eq!(Arc::strong_count(&slots), 1, "a lent slot holds no count");
        drop(lent);
        assert!(slots.all_are_free());
    }

    /// Many tasks taking and freeing slots never exceed the bound, and
    /// none is left waiting.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contended_slots_never_exceed_the_bound() {
        let slots = Slots::new(3);
        let peak = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let (slots, peak) = (slots.clone(), peak.clone());
                tokio::spawn(async move {
                    for _ in 0..200 {
                        let slot = slots.take().await;
                        let used = slots.used.load(Ordering::SeqCst);
                        peak.fetch_max(used, Ordering::SeqCst);
                        tokio::task::yield_now().await;
                        drop(slot);
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("a task finished");
        }
        assert!(peak.load(Ordering::SeqCst) <= 3);
        assert!(slots.all_are_free());
        assert_eq!(slots.waiting.load(Ordering::SeqCst), 0);
    }
}
