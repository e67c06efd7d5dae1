//! The bytes of the requests each principal has in flight in this process
//! ([`ServerBuilder::max_in_flight_bytes_per_principal`]): a request that
//! waits (on a slow tool, or on the client's answer to the tool's
//! question) holds its arguments until it ends, and sessions bound only
//! how many requests each has in flight, not how large they are.
//!
//! Only requests of [`COUNTED_FROM`] bytes or more are counted: a smaller
//! one holds little, and costs a length check only.
//!
//! [`ServerBuilder::max_in_flight_bytes_per_principal`]: crate::ServerBuilder::max_in_flight_bytes_per_principal

use std::sync::{Arc, Mutex, PoisonError};

use crate::principal::CountedAs;
use crate::tally::Tally;

/// The size from which a request is counted: 16 KiB.
pub(crate) const COUNTED_FROM: usize = 16 << 10;

/// The bytes in flight, by whom they count against.
#[derive(Debug, Default)]
pub(crate) struct InFlight(Mutex<Tally<CountedAs>>);

/// Why a request was refused: its `bytes` would take its principal's
/// requests in flight, which hold `held` bytes, past `most`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "this request's {bytes} bytes would take this caller's requests in flight ({held} bytes) past the limit of {most} bytes: try again once one has ended"
)]
pub(crate) struct OverBudget {
    pub(crate) bytes: usize,
    pub(crate) held: usize,
    pub(crate) most: usize,
}

/// A request's bytes, counted until it is dropped (with the request's
/// work).
#[derive(Debug)]
pub(crate) struct Reservation {
    in_flight: Arc<InFlight>,
    key: CountedAs,
    bytes: usize,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.in_flight
            .lock()
            .give_back(&self.key, self.bytes as u64);
    }
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, Tally<CountedAs>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a request of `bytes` against `key` (`None`: nobody to count
    /// it against, as on stdio), unless it is small, or unless `key`'s
    /// requests in flight hold something already and it would take them
    /// past `most`. A request alone passes whatever its size: the message
    /// size bounds it.
    pub(crate) fn reserve(
        self: &Arc<Self>,
        key: impl FnOnce() -> Option<CountedAs>,
        bytes: usize,
        most: usize,
    ) -> Result<Option<Reservation>, OverBudget> {
        if bytes < COUNTED_FROM {
            return Ok(None);
        }
        let Some(key) = key() else {
            return Ok(None);
        };
        self.lock()
            .take(key.clone(), bytes as u64, most as u64)
            .map_err(|held| OverBudget {
                bytes,
                held: usize::try_from(held).unwrap_or(usize::MAX),
                most,
            })?;
        Ok(Some(Reservation {
            in_flight: self.clone(),
            key,
            bytes,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A principal, by the subject of its token.
    fn principal(subject: u8) -> Option<CountedAs> {
        let subject = Some(subject.to_string());
        Some(CountedAs::Token(crate::principal::TokenId {
            issuer: "https://as.example".into(),
            subject,
            client: None,
        }))
    }

    #[test]
    fn a_principal_past_its_bytes_is_refused_until_a_request_ends_and_others_are_not() {
        let in_flight = Arc::new(InFlight::default());
        let most = 3 * COUNTED_FROM;
        let first = in_flight
            .reserve(|| principal(1), 2 * COUNTED_FROM, most)
            .unwrap();
        let second = in_flight
            .reserve(|| principal(1), COUNTED_FROM, most)
            .unwrap();
        assert_eq!(
            in_flight
                .reserve(|| principal(1), COUNTED_FROM, most)
                .unwrap_err(),
            OverBudget {
                bytes: COUNTED_FROM,
                held: 3 * COUNTED_FROM,
                most
            }
        );
        assert!(
            in_flight
                .reserve(|| principal(2), COUNTED_FROM, most)
                .is_ok()
        );
        drop(second);
        assert!(
            in_flight
                .reserve(|| principal(1), COUNTED_FROM, most)
                .is_ok()
        );
        drop(first);
        assert!(in_flight.lock().is_empty(), "nothing held once all ended");
    }

    #[test]
    fn a_request_alone_passes_and_small_or_unattributed_ones_are_not_counted() {
        let in_flight = Arc::new(InFlight::default());
        let big = in_flight.reserve(|| principal(1), 10 * COUNTED_FROM, COUNTED_FROM);
        assert!(big.unwrap().is_some(), "alone, whatever its size");
        let small = in_flight.reserve(|| principal(1), COUNTED_FROM - 1, COUNTED_FROM);
        assert!(small.unwrap().is_none());
        let stdio = in_flight.reserve(|| None, 10 * COUNTED_FROM, COUNTED_FROM);
        assert!(stdio.unwrap().is_none());
    }
}
