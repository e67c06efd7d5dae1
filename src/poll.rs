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
