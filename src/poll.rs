//! Awaiting the next item of a [`Stream`], and polling a future once,
//! without pulling in futures-util; deadlines from configured durations.

use std::pin::Pin;

use futures_core::Stream;

/// The next item of `stream`, or `None` at its end.
pub(crate) async fn next<S: Stream + Unpin>(stream: &mut S) -> Option<S::Item> {
    std::future::poll_fn(|cx| Pin::new(&mut *stream).poll_next(cx)).await
}

/// The longest wait a configured duration stands for: about 30 years,
/// as `tokio::time::sleep` takes a longer one. `Duration::MAX` (a "no
/// limit") added to an instant would panic.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) const FAR_AWAY: std::time::Duration = std::time::Duration::from_secs(86_400 * 365 * 30);

/// The instant `after` from now, or [`FAR_AWAY`] from now for a longer
/// duration; never a panic.
pub(crate) fn deadline_in(after: std::time::Duration) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    now.checked_add(after.min(FAR_AWAY)).unwrap_or(now)
}

/// `future`'s output if it is ready at its first poll (no timer, no
/// waiting); `None` if it would wait — it is then dropped.
#[cfg(feature = "http")]
pub(crate) async fn ready_now<F: std::future::Future>(future: F) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(|cx| {
        std::task::Poll::Ready(match future.as_mut().poll(cx) {
            std::task::Poll::Ready(output) => Some(output),
            std::task::Poll::Pending => None,
        })
    })
    .await
}

pin_project_lite::pin_project! {
    /// A future that is polled only when its own waker fired (or the first
    /// time). Inside `tokio::join!` or `select!`, where every branch shares
    /// the task's waker, a wake meant for one branch polls them all; a
    /// branch that is costly to poll and rarely ready (a shutdown signal, a
    /// cancellation) is wrapped in this, and then costs a flag check.
    pub(crate) struct OnWake<F> {
        #[pin]
        future: F,
        flag: std::sync::Arc<WakeFlag>,
        waker: std::task::Waker,
        started: bool,
        // The task's waker as registered with `flag`.
        registered: Option<std::task::Waker>,
    }
}

impl<F: std::future::Future> OnWake<F> {
    pub(crate) fn new(future: F) -> Self {
        let flag = std::sync::Arc::new(WakeFlag::default());
        Self {
            future,
            waker: std::task::Waker::from(flag.clone()),
            flag,
            started: false,
            registered: None,
        }
    }
}

impl<F: std::future::Future> std::future::Future for OnWake<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<F::Output> {
        use std::sync::atomic::Ordering;
        let this = self.project();
        // The task's waker first, so that a wake from now on reaches it:
        // only when it changed (the flag keeps it across wakes), so that
        // a poll by the same task costs two loads, not a lock.
        if !this
            .registered
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            this.flag.remember(cx.waker());
            *this.registered = Some(cx.waker().clone());
        }
        let woken = this.flag.woken.load(Ordering::Acquire)
            && this.flag.woken.swap(false, Ordering::AcqRel);
        if *this.started && !woken {
            return std::task::Poll::Pending;
        }
        *this.started = true;
        this.future
            .poll(&mut std::task::Context::from_waker(this.waker))
    }
}

/// Whether an [`OnWake`] future's waker fired, and the task to wake then
/// (kept across wakes: a wake does not take it).
#[derive(Default)]
pub(crate) struct WakeFlag {
    woken: std::sync::atomic::AtomicBool,
    task: std::sync::Mutex<Option<std::task::Waker>>,
}

impl WakeFlag {
    /// The task to wake from now on.
    fn remember(&self, waker: &std::task::Waker) {
        *self
            .task
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(waker.clone());
    }
}

impl std::task::Wake for WakeFlag {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        // Set before the lock: a poll that registers its waker after this
        // lock then sees the flag, and a waker registered before it is the
        // one woken here (rare: shutdown, a closed output).
        self.woken.store(true, std::sync::atomic::Ordering::Release);
        // Woken outside the lock (a clone: wakes are rare).
        let task = self
            .task
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(task) = task {
            task.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn an_on_wake_future_is_polled_only_when_its_own_waker_fires() {
        let polls = Arc::new(AtomicUsize::new(0));
        let (tell, told) = tokio::sync::oneshot::channel::<()>();
        let counted = {
            let polls = polls.clone();
            let mut told = told;
            OnWake::new(std::future::poll_fn(move |cx| {
                polls.fetch_add(1, Ordering::SeqCst);
                std::pin::Pin::new(&mut told).poll(cx).map(|_| ())
            }))
        };
        let busy = async {
            // Many wakes of the shared task, none for `counted`.
            for _ in 0..100 {
                tokio::task::yield_now().await;
            }
            let _ = tell.send(());
        };
        tokio::join!(counted, busy);
        // The first poll, then the one its own wake caused.
        assert_eq!(polls.load(Ordering::SeqCst), 2);
    }

    /// The task's waker stays registered across wakes (a poll by the same
    /// task does not register it again): every later wake still reaches
    /// the task, however many came before, from this thread or another.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_wake_reaches_the_task_not_only_the_first() {
        const WAKES: usize = 200;
        let (send, mut receive) = tokio::sync::mpsc::unbounded_channel();
        let (ack, mut acked) = tokio::sync::mpsc::unbounded_channel();
        let waiting = OnWake::new(async move {
            for _ in 0..WAKES {
                receive.recv().await.expect("a message");
                ack.send(()).expect("the sender is there");
            }
        });
        // One message at a time, the next once the last was taken: the
        // waiting future mostly finds none, waits, and needs a wake.
        let waking = tokio::spawn(async move {
            for i in 0..WAKES {
                send.send(i).expect("the receiver is there");
                acked.recv().await.expect("an acknowledgement");
            }
        });
        // In a task of its own, which nothing else wakes: a lost wake
        // would leave `waiting` pending for good.
        let joined = tokio::spawn(waiting);
        let joined = tokio::time::timeout(std::time::Duration::from_secs(60), joined);
        assert!(joined.await.is_ok(), "a wake was lost");
        waking.await.expect("the waking task ran");
    }

    #[tokio::test]
    async fn a_deadline_past_what_an_instant_holds_is_far_away_not_a_panic() {
        let far = deadline_in(std::time::Duration::MAX);
        assert!(far > tokio::time::Instant::now() + std::time::Duration::from_secs(86_400 * 365));
        let near = deadline_in(std::time::Duration::from_secs(1));
        assert!(near <= tokio::time::Instant::now() + std::time::Duration::from_secs(1));
    }
}
