//! What one principal may hold of an endpoint: its long-lived streams and
//! its sessions, each within a limit per principal as well as the
//! endpoint's own, so that one client cannot take every slot.
//!
//! A principal is who a request is counted against ([`CountedAs`]): with OAuth its
//! token's issuer, subject and client; without, the address of the peer
//! that sent it ([`PeerAddr`]), or of the client a trusted reverse proxy
//! forwarded it for (`forwarded`). A request known by neither (an endpoint
//! mounted in an app that does not tell the peer) is held to the
//! endpoint's limits only.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use crate::principal::PeerAddr;
use crate::principal::{Caller, CountedAs};
use crate::tally::Tally;

/// How many of one kind of thing each principal holds, within a limit.
#[derive(Debug)]
pub(super) struct Quota {
    most: u64,
    held: Mutex<Tally<CountedAs>>,
}

/// One thing a principal holds, given back when dropped.
#[derive(Debug)]
pub(super) struct Held {
    quota: Arc<Quota>,
    principal: CountedAs,
}

impl Quota {
    /// At most `most` per principal.
    pub(super) fn new(most: usize) -> Arc<Self> {
        Arc::new(Self {
            most: most.max(1) as u64,
            held: Mutex::default(),
        })
    }

    /// One more for `principal`: `Err` when it holds its most already.
    /// Nothing is counted for a principal that cannot be told.
    pub(super) fn take(self: &Arc<Self>, principal: Option<CountedAs>) -> Result<Option<Held>, ()> {
        let Some(principal) = principal else {
            return Ok(None);
        };
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take(principal.clone(), 1, self.most)
            .map_err(|_| ())?;
        Ok(Some(Held {
            quota: self.clone(),
            principal,
        }))
    }

    /// How many `principal` holds.
    #[cfg(test)]
    fn holds(&self, principal: &CountedAs) -> u64 {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.held(principal)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.quota
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .give_back(&self.principal, 1);
    }
}

/// Why a long-lived stream could not open.
#[derive(Debug)]
pub(super) enum NoSlot {
    /// Every slot of the endpoint is taken (`503`).
    Endpoint,
    /// Its principal holds its most (`429`).
    Principal,
}

/// What a long-lived stream holds while it is open: one of the endpoint's
/// stream slots, one of its principal's, and what is to be done when it
/// ends (its claim given up, its token no longer watched).
pub(super) struct StreamSlot {
    _endpoint: OwnedSemaphorePermit,
    _principal: Option<Held>,
    on_end: Vec<Box<dyn FnOnce() + Send + Sync>>,
}

impl StreamSlot {
    /// A slot of `streams` and of `quota` for `caller`.
    pub(super) fn take(
        streams: &Arc<Semaphore>,
        quota: &Arc<Quota>,
        caller: &Caller,
    ) -> Result<Self, NoSlot> {
        // The endpoint's limit first: when it is reached, it is for everyone.
        let endpoint = streams
            .clone()
            .try_acquire_owned()
            .map_err(|_| NoSlot::Endpoint)?;
        let principal = quota
            .take(CountedAs::of(caller))
            .map_err(|()| NoSlot::Principal)?;
        Ok(Self {
            _endpoint: endpoint,
            _principal: principal,
            on_end: Vec::new(),
        })
    }

    /// Runs `f` when the stream ends.
    pub(super) fn on_end(&mut self, f: impl FnOnce() + Send + Sync + 'static) {
        self.on_end.push(Box::new(f));
    }
}

impl std::fmt::Debug for StreamSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamSlot").finish_non_exhaustive()
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        for f in self.on_end.drain(..) {
            f();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::principal::Head;
    use std::net::SocketAddr;

    #[test]
    fn each_principal_holds_at_most_its_quota_and_gets_it_back_when_it_lets_go() {
        let quota = Quota::new(2);
        let a = CountedAs::Address("192.0.2.1".parse().unwrap());
        let b = CountedAs::Token(crate::principal::TokenId {
            issuer: "https://as".into(),
            subject: Some("u".into()),
            client: None,
        });
        let first = quota.take(Some(a.clone())).unwrap();
        let second = quota.take(Some(a.clone())).unwrap();
        assert!(quota.take(Some(a.clone())).is_err(), "a's third is refused");
        assert!(
            quota.take(Some(b.clone())).unwrap().is_some(),
            "b opens its first"
        );
        drop(first);
        assert_eq!(quota.holds(&a), 1);
        let _third = quota.take(Some(a.clone())).unwrap();
        drop(second);
        assert!(quota.take(None).unwrap().is_none(), "nobody is not counted");
    }

    #[test]
    fn an_ipv6_peer_counts_by_its_64_and_a_mapped_ipv4_peer_as_itself() {
        let of = |addr: &str| {
            let mut parts = http::Request::new(()).into_parts().0;
            parts
                .extensions
                .insert(PeerAddr(SocketAddr::new(addr.parse().unwrap(), 1)));
            CountedAs::of(&Caller {
                principal: None,
                head: Some(Arc::new(Head {
                    parts,
                    peer: None,
                    forwarded_for: None,
                })),
                revocation: None,
            })
        };
        assert_eq!(of("2001:db8:1:2:aaaa::1"), of("2001:db8:1:2:ffff::9"));
        assert_ne!(of("2001:db8:1:2::1"), of("2001:db8:1:3::1"));
        assert_eq!(of("::ffff:192.0.2.7"), of("192.0.2.7"));
    }
}
