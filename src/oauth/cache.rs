//! Verified tokens, remembered until they expire (or the verifier's own
//! limit), so that a client sending the same token on every request costs
//! one verification, not one per request. They are found by a keyed hash
//! of their last bytes (SipHash with a random key per process; a JWT ends
//! in its signature) and then compared whole, in constant time: a hit is
//! the very token that was verified, never one that merely hashes alike.
//! Only verified tokens are stored, so nobody can fill a hash bucket with
//! tokens of their making. (A SHA-256 of every whole token, the other way
//! to find them, costs more than all the rest of a request.) Bounded: when
//! full, expired entries go first, then all.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use crate::principal::Principal;

/// How many verified tokens are remembered at most.
const CAPACITY: usize = 10_000;
/// The longest a verified token is remembered, whatever its expiry.
const LONGEST: Duration = Duration::from_secs(24 * 60 * 60);

/// How many of a token's last bytes its hash covers.
const HASHED: usize = 48;

/// The remembered verifications.
#[derive(Debug, Default)]
pub(crate) struct Verified {
    key: RandomState,
    /// By the token's keyed hash: the tokens with that hash (one, but for
    /// a collision).
    entries: Mutex<HashMap<u64, Vec<VerifiedToken>>>,
}

/// A token verified before, its principal, and until when it is trusted.
#[derive(Debug)]
struct VerifiedToken {
    token: Box<[u8]>,
    principal: Arc<Principal>,
    until: Instant,
}

impl Verified {
    /// The principal of `token`, if it was verified and has not expired.
    pub(crate) fn get(&self, token: &[u8]) -> Option<Arc<Principal>> {
        let hash = self.hash(token);
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        entries
            .get(&hash)?
            .iter()
            .find(|entry| same(&entry.token, token))
            .filter(|entry| now < entry.until)
            .map(|entry| entry.principal.clone())
    }

    /// Remembers `token`'s principal until it expires, and no longer than
    /// `limit` (nor than a day). A token that says no expiry is remembered for `limit`, or
    /// not at all.
    pub(crate) fn remember(
        &self,
        token: &[u8],
        principal: &Arc<Principal>,
        limit: Option<Duration>,
    ) {
        let now = Instant::now();
        let expires = principal.expires_at().map(|at| {
            at.duration_since(SystemTime::now())
                .unwrap_or(Duration::ZERO)
        });
        let life = match (expires, limit) {
            (Some(expires), Some(limit)) => expires.min(limit),
            (Some(life), None) | (None, Some(life)) => life,
            (None, None) => return,
        };
        // `Instant` holds less than a claim can say: a day is long enough.
        let life = life.min(LONGEST);
        if life.is_zero() {
            return;
        }
        let hash = self.hash(token);
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= CAPACITY {
            entries.retain(|_, tokens| {
                tokens.retain(|entry| entry.until > now);
                !tokens.is_empty()
            });
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        let tokens = entries.entry(hash).or_default();
        tokens.retain(|entry| !same(&entry.token, token) && entry.until > now);
        tokens.push(VerifiedToken {
            token: token.into(),
            principal: principal.clone(),
            until: now + life,
        });
    }

    /// The keyed hash of a token's length and last bytes.
    fn hash(&self, token: &[u8]) -> u64 {
        let bytes = token;
        let tail = bytes
            .get(bytes.len().saturating_sub(HASHED)..)
            .unwrap_or(bytes);
        self.key.hash_one((bytes.len(), tail))
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().unwrap().values().map(Vec::len).sum()
    }
}

/// Whether two tokens are equal, in time that depends on their lengths
/// only.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (a_words, b_words) = (a.chunks_exact(8), b.chunks_exact(8));
    let tails = a_words
        .remainder()
        .iter()
        .zip(b_words.remainder())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y));
    let words = a_words.zip(b_words).fold(0u64, |acc, (x, y)| {
        let word = |bytes: &[u8]| u64::from_ne_bytes(bytes.try_into().unwrap_or([0; 8]));
        acc | (word(x) ^ word(y))
    });
    words == 0 && tails == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expiring_in(seconds: u64) -> Arc<Principal> {
        Arc::new(
            Principal::new("iss").with_expiry(SystemTime::now() + Duration::from_secs(seconds)),
        )
    }

    #[test]
    fn a_token_is_remembered_until_it_expires_and_no_longer_than_the_limit() {
        let verified = Verified::default();
        verified.remember(b"a", &expiring_in(60), None);
        assert!(verified.get(b"a").is_some());
        assert!(verified.get(b"b").is_none());
        assert!(verified.get(b"a ").is_none(), "only the very token");
        verified.remember(b"short", &expiring_in(60), Some(Duration::ZERO));
        assert!(
            verified.get(b"short").is_none(),
            "a zero limit remembers nothing"
        );
        let expired =
            Arc::new(Principal::new("iss").with_expiry(SystemTime::now() - Duration::from_secs(1)));
        verified.remember(b"old", &expired, None);
        assert!(verified.get(b"old").is_none());
        verified.remember(b"forever", &Arc::new(Principal::new("iss")), None);
        assert!(
            verified.get(b"forever").is_none(),
            "no expiry and no limit: not remembered"
        );
    }

    #[test]
    fn a_token_that_expires_past_what_an_instant_holds_is_remembered_for_a_day() {
        let verified = Verified::default();
        let far = SystemTime::UNIX_EPOCH + Duration::from_secs(i64::MAX as u64 / 2);
        verified.remember(
            b"far",
            &Arc::new(Principal::new("iss").with_expiry(far)),
            None,
        );
        assert!(verified.get(b"far").is_some());
    }

    #[test]
    fn the_cache_is_bounded() {
        let verified = Verified::default();
        for i in 0..CAPACITY + 10 {
            verified.remember(format!("t{i}").as_bytes(), &expiring_in(60), None);
        }
        assert!(verified.len() <= CAPACITY);
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"ab"));
        let long = "x".repeat(100);
        assert!(same(long.as_bytes(), long.clone().as_bytes()));
        assert!(!same(
            long.as_bytes(),
            format!("{}y", &long[..99]).as_bytes()
        ));
        assert!(
            !same(long.as_bytes(), format!("y{}", &long[1..]).as_bytes()),
            "a difference before the hashed tail"
        );
    }
}
