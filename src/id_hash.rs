//! A fast hasher for the short keys of the hot path: mcpIds, tool names
//! and request ids.

/// A fast hasher for the short keys of the hot path (mcpIds, request ids),
/// which come from the server's own registrations or from one client's own
/// session, so flooding one bucket only slows that client. It reads eight
/// bytes at a step (an mcpId is some 40), multiplying as FxHash does, and
/// mixes the sum at the end (MurmurHash3's finaliser) so that every byte
/// reaches the low bits that pick a bucket.
#[derive(Clone, Copy, Default)]
pub(crate) struct IdHasher;

impl std::hash::BuildHasher for IdHasher {
    type Hasher = IdHash;

    fn build_hasher(&self) -> IdHash {
        IdHash(0)
    }
}

/// The state of [`IdHasher`].
pub(crate) struct IdHash(u64);

impl IdHash {
    const K: u64 = 0xf135_7aea_2e62_a9c5;

    fn add(&mut self, word: u64) {
        self.0 = (self.0 ^ word).wrapping_mul(Self::K);
    }
}

impl std::hash::Hasher for IdHash {
    fn finish(&self) -> u64 {
        // MurmurHash3's finaliser.
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^ (h >> 33)
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.add(<[u8; 8]>::try_from(word).map_or(0, u64::from_le_bytes));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            for (to, &byte) in last.iter_mut().zip(rest) {
                *to = byte;
            }
            // The length tells `"a"` from `"a\0"`.
            self.add(u64::from_le_bytes(last) ^ ((rest.len() as u64) << 59));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys that differ in any one byte, anywhere, land apart.
    #[test]
    fn id_hashes_differ_in_every_byte_and_length() {
        use std::hash::BuildHasher;
        let base = "mcp://clawmcp/examples/tools/echo:v1".as_bytes().to_vec();
        let mut seen = std::collections::HashSet::new();
        assert!(seen.insert(IdHasher.hash_one(&base)));
        for i in 0..base.len() {
            let mut key = base.clone();
            key[i] ^= 1;
            assert!(seen.insert(IdHasher.hash_one(&key)), "byte {i}");
        }
        let buckets: std::collections::HashSet<u64> = (0..1000)
            .map(|n| IdHasher.hash_one(format!("mcp://x/tools/t{n}:v1")) & 63)
            .collect();
        assert_eq!(buckets.len(), 64, "all 64 buckets are used");
        assert_ne!(IdHasher.hash_one("a"), IdHasher.hash_one("a\0"));
        assert_ne!(IdHasher.hash_one(""), IdHasher.hash_one("\0"));
    }
}
