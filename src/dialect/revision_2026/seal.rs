//! The sealing of a 2026-07-28 request's `requestState`: AES-256-GCM under
//! the server's state keys, bound to the request it continues.
//!
//! A sealed state is `v1.` and the base64url (no padding) of a random
//! 96-bit nonce followed by the ciphertext and its 128-bit tag. Its
//! associated data names the request — method, item, arguments (as
//! canonical JSON) and the owner of the token (issuer, subject, client) —
//! so a state opens only for the same call by the same principal. The
//! first key seals; every key opens, so keys rotate by putting the new one
//! first and dropping the old one after a TTL. A state that does not open
//! under any key — tampered, truncated, sealed for another request or
//! under a key this server does not have — is refused, as is one past its
//! expiry.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// The version prefix of a sealed state.
const PREFIX: &str = "v1.";
/// The nonce's length.
const NONCE: usize = 12;

/// Why a state was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unsealed {
    /// It does not open under any key, for this request.
    #[error("requestState is not valid for this request")]
    Invalid,
    /// It opened, but its time is up.
    #[error("requestState has expired: start the request again without it")]
    Expired,
}

/// The server's state keys: the first seals, all open.
pub(crate) struct RequestStateKeys {
    keys: Vec<Aes256Gcm>,
}

impl std::fmt::Debug for RequestStateKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestStateKeys")
            .field("keys", &self.keys.len())
            .finish()
    }
}

impl RequestStateKeys {
    /// Keys from 32-byte secrets, the sealing one first; `None` when there
    /// are none.
    pub(crate) fn new(secrets: &[[u8; 32]]) -> Option<Self> {
        let keys: Vec<_> = secrets
            .iter()
            .map(|secret| Aes256Gcm::new(secret.into()))
            .collect();
        (!keys.is_empty()).then_some(Self { keys })
    }

    /// One key of this process's own, from the operating system's random
    /// source.
    pub(crate) fn random() -> Result<Self, getrandom::Error> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret)?;
        Ok(Self {
            keys: vec![Aes256Gcm::new((&secret).into())],
        })
    }

    /// `plaintext` sealed for the request `bound_to` names.
    pub(crate) fn seal(&self, bound_to: &[u8], plaintext: &[u8]) -> Option<String> {
        let key = self.keys.first()?;
        let mut nonce = [0u8; NONCE];
        getrandom::fill(&mut nonce).ok()?;
        let sealed = key
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad: bound_to,
                },
            )
            .ok()?;
        let mut bytes = Vec::with_capacity(NONCE + sealed.len());
        bytes.extend_from_slice(&nonce);
        bytes.extend_from_slice(&sealed);
        Some(format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes)))
    }

    /// The plaintext of `state`, sealed for the request `bound_to` names.
    pub(crate) fn open(&self, bound_to: &[u8], state: &str) -> Result<Vec<u8>, Unsealed> {
        let bytes = state
            .strip_prefix(PREFIX)
            .and_then(|b64| URL_SAFE_NO_PAD.decode(b64).ok())
            .ok_or(Unsealed::Invalid)?;
        let Some((nonce, sealed)) = bytes.split_at_checked(NONCE).filter(|(_, s)| s.len() >= 16)
        else {
            return Err(Unsealed::Invalid);
        };
        self.keys
            .iter()
            .find_map(|key| {
                key.decrypt(
                    Nonce::from_slice(nonce),
                    Payload {
                        msg: sealed,
                        aad: bound_to,
                    },
                )
                .ok()
            })
            .ok_or(Unsealed::Invalid)
    }
}

/// Reads a list of 32-byte keys written as hex, comma-separated (the
/// sealing one first), as `CLAWMCP_REQUEST_STATE_KEYS` holds them.
pub(crate) fn keys_from_hex(list: &str) -> Result<Vec<[u8; 32]>, String> {
    list.split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .enumerate()
        .map(|(i, text)| {
            let mut key = [0u8; 32];
            hex::decode_to_slice(text, &mut key)
                .map_err(|e| format!("state key {} is not 64 hex digits (32 bytes): {e}", i + 1))?;
            Ok(key)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(seed: u8) -> RequestStateKeys {
        RequestStateKeys::new(&[[seed; 32]]).unwrap()
    }

    #[test]
    fn a_state_opens_only_for_the_request_and_key_it_was_sealed_with() {
        let sealed = keys(1).seal(b"tools/call\0ask", b"{\"a\":1}").unwrap();
        assert_eq!(
            keys(1).open(b"tools/call\0ask", &sealed).unwrap(),
            b"{\"a\":1}"
        );
        assert_eq!(
            keys(1).open(b"tools/call\0other", &sealed),
            Err(Unsealed::Invalid)
        );
        assert_eq!(
            keys(2).open(b"tools/call\0ask", &sealed),
            Err(Unsealed::Invalid)
        );
    }

    #[test]
    fn tampered_and_truncated_states_are_refused() {
        let sealed = keys(1).seal(b"x", b"plain").unwrap();
        let mut tampered = sealed.clone().into_bytes();
        let last = tampered.len() - 1;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        for state in [
            tampered.as_str(),
            &sealed[..sealed.len() - 4],
            "v1.",
            "garbage",
            "",
        ] {
            assert_eq!(keys(1).open(b"x", state), Err(Unsealed::Invalid), "{state}");
        }
    }

    #[test]
    fn the_first_key_seals_and_every_key_opens() {
        let old = keys(7).seal(b"x", b"old").unwrap();
        let rotated = RequestStateKeys::new(&[[8; 32], [7; 32]]).unwrap();
        assert_eq!(rotated.open(b"x", &old).unwrap(), b"old");
        let new = rotated.seal(b"x", b"new").unwrap();
        assert_eq!(keys(8).open(b"x", &new).unwrap(), b"new");
        assert_eq!(keys(7).open(b"x", &new), Err(Unsealed::Invalid));
    }

    #[test]
    fn hex_key_lists_are_read_and_bad_ones_refused() {
        let a = "00".repeat(32);
        let b = "ff".repeat(32);
        let keys = keys_from_hex(&format!("{a}, {b}")).unwrap();
        assert_eq!(keys, vec![[0u8; 32], [255u8; 32]]);
        assert!(keys_from_hex("abc").is_err());
        assert!(keys_from_hex(&"zz".repeat(32)).is_err());
        assert!(keys_from_hex("").unwrap().is_empty());
    }
}
