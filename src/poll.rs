//! Awaiting the next item of a [`Stream`], and polling a future once,
//! without pulling in futures-util.

use std::pin::Pin;

use futures_core::Stream;

/// The next item of `stream`, or `None` at its end.
pub(crate) async fn next<S: Stream + Unpin>(stream: &mut S) -> Option<S::Item> {
    std::future::poll_fn(|cx| Pin::new(&mut *stream).poll_next(cx)).await
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
        }
    }
}

impl<F: std::future::Future> std::future::Future for OnWake<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<F::Output> {
        let this = self.project();
        // The task's waker first, so that a wake from now on reaches it.
        this.flag.remember(cx.waker());
        let woken = this
            .flag
            .woken
            .swap(false, std::sync::atomic::Ordering::AcqRel);
        if *this.started && !woken {
            return std::task::Poll::Pending;
        }
        *this.started = true;
        this.future
            .poll(&mut std::task::Context::from_waker(this.waker))
    }
}

/// Whether an [`OnWake`] future's waker fired, and the task to wake then.
#[derive(Default)]
pub(crate) struct WakeFlag {
    woken: std::sync::atomic::AtomicBool,
    task: atomic_waker::AtomicWaker,
}

impl WakeFlag {
    /// The task to wake (cheap when it is the one remembered already).
    fn remember(&self, waker: &std::task::Waker) {
        self.task.register(waker);
    }
}

impl std::task::Wake for WakeFlag {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.woken.store(true, std::sync::atomic::Ordering::Release);
        // The task polls its `OnWake` again, which remembers it anew.
        self.task.wake();
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
}
