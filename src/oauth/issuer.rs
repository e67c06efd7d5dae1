//! What every verifier holds of the issuer it trusts: the issuer's
//! identifier, the clock leeway its tokens get, and the HTTP client that
//! asks it, with the builder setters they share.

use std::time::Duration;

use super::fetch::Client;

/// The issuer a verifier trusts, and how it talks to it.
pub(crate) struct Issuer {
    /// The issuer identifier, exactly as its metadata and tokens write it.
    pub(crate) id: String,
    /// How far past `exp` (and before `nbf`) a token is still accepted.
    pub(crate) leeway: Duration,
    /// The client that fetches its metadata, keys and answers.
    pub(crate) client: Client,
}

impl Issuer {
    /// `id`, with 30 s leeway and 5 s per request.
    pub(crate) fn new(id: String) -> Self {
        Self {
            id,
            leeway: Duration::from_secs(30),
            client: Client::default(),
        }
    }
}

/// The setters every verifier has, over its `issuer: Issuer` field.
macro_rules! issuer_setters {
    () => {
        /// How far past `exp` (and before `nbf`) a token is still
        /// accepted, for clocks that disagree (default 30 s).
        #[must_use]
        pub fn leeway(mut self, leeway: std::time::Duration) -> Self {
            self.issuer.leeway = leeway;
            self
        }

        /// How long a request to the issuer may take (default 5 s).
        #[must_use]
        pub fn issuer_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.issuer.client.timeout = timeout;
            self
        }
    };
}

pub(crate) use issuer_setters;
