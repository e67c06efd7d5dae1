//! Awaiting the next item of a [`Stream`] without pulling in futures-util.

use std::pin::Pin;

use futures_core::Stream;

/// The next item of `stream`, or `None` at its end.
pub(crate) async fn next<S: Stream + Unpin>(stream: &mut S) -> Option<S::Item> {
    std::future::poll_fn(|cx| Pin::new(&mut *stream).poll_next(cx)).await
}
