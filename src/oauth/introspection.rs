//! Opaque access tokens, verified by asking the issuer (RFC 7662
//! introspection) with the server's own client credentials. An answer is
//! remembered no longer than the token's `exp` and the verifier's cache
//! time (so a revoked token stops working within it); when the issuer
//! cannot be asked, the token is refused. At most
//! [`MAX_ASKING`] questions are asked at once (clients that send made-up
//! tokens cannot turn the server into a flood against its issuer), and a
//! failed discovery is not tried again for a few seconds.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::Value;

use super::discovery::discover;
use super::issuer::Issuer;
use super::jwt::principal_of;
use super::{AcceptedAudiences, TokenVerifier, VerifyError};
use crate::principal::Principal;

/// How many introspection requests may be under way at once.
pub const MAX_ASKING: usize = 16;

/// How long a failed discovery of the endpoint is not tried again.
const DISCOVERY_BACKOFF: Duration = Duration::from_secs(5);

/// Verifies tokens by introspection at their issuer.
///
/// ```
/// use std::time::Duration;
/// use clawmcp::oauth::IntrospectionVerifier;
///
/// let verifier = IntrospectionVerifier::new("https://auth.example.com", "mcp-server", "its-secret")
///     .cache_answers_for(Duration::from_secs(10));
/// # let _ = verifier;
/// ```
pub struct IntrospectionVerifier {
    issuer: Issuer,
    client_id: String,
    client_secret: String,
    endpoint: Option<String>,
    cache_for: Duration,
    discovered: tokio::sync::OnceCell<String>,
    /// When discovery last failed, and why.
    discovery_failed: Mutex<Option<(Instant, VerifyError)>>,
    asking: tokio::sync::Semaphore,
}

impl std::fmt::Debug for IntrospectionVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionVerifier")
            .field("issuer", &self.issuer.id)
            .field("client_id", &self.client_id)
            .field("endpoint", &self.endpoint)
            .field("cache_for", &self.cache_for)
            .finish_non_exhaustive()
    }
}

impl IntrospectionVerifier {
    /// Tokens of `issuer`, introspected as the client `client_id` with
    /// `client_secret` (HTTP Basic). The endpoint is found through the
    /// issuer's metadata when first needed. Defaults: answers remembered
    /// for 30 s at most, 5 s per request to the issuer.
    pub fn new(
        issuer: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        Self {
            issuer: Issuer::new(issuer.into()),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            endpoint: None,
            cache_for: Duration::from_secs(30),
            discovered: tokio::sync::OnceCell::new(),
            discovery_failed: Mutex::new(None),
            asking: tokio::sync::Semaphore::new(MAX_ASKING),
        }
    }

    /// The introspection endpoint, instead of discovering it.
    #[must_use]
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }

    /// How long a positive answer is remembered at most (never past the
    /// token's `exp`); `Duration::ZERO` asks the issuer on every request.
    #[must_use]
    pub fn cache_answers_for(mut self, time: Duration) -> Self {
        self.cache_for = time;
        self
    }

    super::issuer::issuer_setters!();

    async fn endpoint_url(&self) -> Result<String, VerifyError> {
        if let Some(url) = &self.endpoint {
            return Ok(url.clone());
        }
        if let Some(url) = self.discovered.get() {
            return Ok(url.clone());
        }
        let failed = |slot: &Mutex<Option<(Instant, VerifyError)>>| {
            let failed = slot
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            failed
                .as_ref()
                .filter(|(at, _)| at.elapsed() < DISCOVERY_BACKOFF)
                .map(|(_, why)| why.clone())
        };
        if let Some(why) = failed(&self.discovery_failed) {
            return Err(why);
        }
        let found = self
            .discovered
            .get_or_try_init(|| async {
                let metadata = discover(&self.issuer.client, &self.issuer.id).await?;
                metadata.introspection_endpoint.ok_or_else(|| {
                    VerifyError::Config(format!(
                        "the metadata of {} has no introspection_endpoint",
                        self.issuer.id
                    ))
                })
            })
            .await
            .cloned();
        if let Err(why) = &found {
            *self
                .discovery_failed
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) =
                Some((Instant::now(), why.clone()));
        }
        found
    }
}

#[async_trait]
impl TokenVerifier for IntrospectionVerifier {
    async fn verify(
        &self,
        token: &str,
        audience: &AcceptedAudiences,
    ) -> Result<Principal, VerifyError> {
        let endpoint = self.endpoint_url().await?;
        let _asking = self
            .asking
            .acquire()
            .await
            .map_err(|_| VerifyError::Unavailable("the verifier is closed".into()))?;
        let answer = self
            .issuer
            .client
            .post_form(
                &endpoint,
                (&self.client_id, &self.client_secret),
                &[("token", token), ("token_type_hint", "access_token")],
            )
            .await?;
        let Value::Object(claims) = answer else {
            return Err(VerifyError::Unavailable(
                "the introspection answer is not an object".into(),
            ));
        };
        if claims.get("active") != Some(&Value::Bool(true)) {
            return Err(VerifyError::Invalid(
                "the issuer says the token is not active (expired, revoked or unknown)".into(),
            ));
        }
        if let Some(iss) = claims.get("iss").and_then(Value::as_str)
            && iss != self.issuer.id
        {
            return Err(VerifyError::Invalid(format!("issued by {iss:?}")));
        }
        if claims
            .get("token_type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.eq_ignore_ascii_case("refresh_token"))
        {
            return Err(VerifyError::Invalid(
                "a refresh token is not an access token".into(),
            ));
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let leeway = self.issuer.leeway.as_secs();
        if claims
            .get("exp")
            .and_then(Value::as_u64)
            .is_some_and(|exp| exp.saturating_add(leeway) <= now)
        {
            return Err(VerifyError::Invalid("the token has expired".into()));
        }
        if claims
            .get("nbf")
            .and_then(Value::as_u64)
            .is_some_and(|nbf| nbf > now.saturating_add(leeway))
        {
            return Err(VerifyError::Invalid("the token is not valid yet".into()));
        }
        let principal = principal_of(&self.issuer.id, claims);
        audience.check(&principal)?;
        Ok(principal)
    }

    fn cache_for(&self) -> Option<Duration> {
        Some(self.cache_for)
    }
}
