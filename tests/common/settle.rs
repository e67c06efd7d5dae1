//! Waiting for work to stop: the tests that prove a bound holds work back
//! let the work run until it is held, then count how far it went.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Looks at `count` every 200 ms until it is above zero and has not moved
/// since the last look (at most 50 looks), and returns it.
pub async fn settled(count: &AtomicUsize) -> usize {
    let mut seen = 0;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = count.load(Ordering::SeqCst);
        if now == seen && now > 0 {
            break;
        }
        seen = now;
    }
    seen
}
