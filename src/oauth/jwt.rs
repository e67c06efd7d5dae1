//! JWT access tokens (RFC 9068) verified against the issuer's key set
//! (JWKS), found through the issuer's metadata.
//!
//! - The algorithm is the key's, never the token's choice: each key
//!   allows only its `alg` (or, without one, its key type's signature
//!   algorithms); symmetric keys are never used, so `alg: none` and HS/RS
//!   confusion are refused.
//! - A token naming a key the set lacks refreshes the set once — one
//!   fetch at a time, and at most one per [`JwtVerifier::min_refresh_interval`]
//!   — so a flood of unknown `kid`s costs the issuer a bounded number of
//!   fetches.
//! - A set older than [`JwtVerifier::max_key_age`] is fetched again at the
//!   next token, so that a key the issuer removed stops verifying; a key
//!   set that does not read keeps the keys it has, and a key of a type
//!   this crate cannot use is skipped, not the whole set.
//! - Keys once fetched keep serving while the issuer is down.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::discovery::discover;
use super::issuer::Issuer;
use super::{AcceptedAudiences, TokenVerifier, VerifyError};
use crate::error::clipped;
use crate::principal::Principal;

/// Verifies JWT access tokens of one issuer against its JWKS.
///
/// ```
/// use std::time::Duration;
/// use clawmcp::oauth::JwtVerifier;
///
/// let verifier = JwtVerifier::new("https://auth.example.com")
///     .leeway(Duration::from_secs(30))
///     .min_refresh_interval(Duration::from_secs(10))
///     .max_key_age(Duration::from_secs(3600));
/// # let _ = verifier;
/// ```
pub struct JwtVerifier {
    issuer: Issuer,
    jwks_uri: Option<String>,
    min_refresh: Duration,
    max_age: Duration,
    /// Shared with the fetches, which run in tasks of their own.
    keys: Arc<RwLock<Arc<KeySet>>>,
    refresh: tokio::sync::Mutex<Refresh>,
    fetches: Arc<AtomicU64>,
    /// The key set's URL, once discovered.
    discovered: Arc<std::sync::OnceLock<String>>,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.issuer.id)
            .field("jwks_uri", &self.jwks_uri)
            .field("leeway", &self.issuer.leeway)
            .field("min_refresh", &self.min_refresh)
            .field("max_age", &self.max_age)
            .finish_non_exhaustive()
    }
}

/// The refresher's own state, behind the single-flight lock.
#[derive(Default)]
struct Refresh {
    last: Option<Instant>,
    /// Why the last fetch failed, if it did: said again until the next
    /// one may be tried, so that a valid token meets `503`, not `401`.
    failed: Option<VerifyError>,
}

/// How old a key set grows before the next token fetches it again
/// ([`JwtVerifier::max_key_age`]).
const DEFAULT_MAX_KEY_AGE: Duration = Duration::from_secs(3600);

/// The keys of the last fetched set that can verify signatures.
#[derive(Default)]
struct KeySet {
    keys: Vec<Jwk>,
    /// When the set was fetched (`None`: never, the empty set).
    fetched: Option<Instant>,
}

/// One key of the issuer's key set (a JWK), ready to verify with.
struct Jwk {
    kid: Option<String>,
    algorithms: Vec<Algorithm>,
    decoding: DecodingKey,
}

impl JwtVerifier {
    /// Tokens of `issuer` (its issuer identifier, exactly as its metadata
    /// and its tokens' `iss` write it). Its key set is found through its
    /// metadata (RFC 8414, or OpenID Connect Discovery) when first needed.
    /// Defaults: 30 s leeway on `exp` and `nbf`, at most one key-set fetch
    /// per 10 s, a key set fetched again once an hour old, 5 s per request
    /// to the issuer.
    pub fn new(issuer: impl Into<String>) -> Self {
        // jsonwebtoken picks its crypto itself when exactly one of its
        // backends is on; if a dependent turns on the other too, it has
        // none and would panic at the first token. This one, then (an
        // `Err` says one is installed already).
        let _ = jsonwebtoken::crypto::CryptoProvider::install_default(
            &jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER,
        );
        Self {
            issuer: Issuer::new(issuer.into()),
            jwks_uri: None,
            min_refresh: Duration::from_secs(10),
            max_age: DEFAULT_MAX_KEY_AGE,
            keys: Arc::default(),
            refresh: tokio::sync::Mutex::default(),
            fetches: Arc::default(),
            discovered: Arc::default(),
        }
    }

    /// The key set's URL, instead of discovering it.
    #[must_use]
    pub fn jwks_uri(mut self, url: impl Into<String>) -> Self {
        self.jwks_uri = Some(url.into());
        self
    }

    super::issuer::issuer_setters!();

    /// The least time between two fetches of the key set.
    #[must_use]
    pub fn min_refresh_interval(mut self, interval: Duration) -> Self {
        self.min_refresh = interval;
        self
    }

    /// How old the key set may grow before the next token fetches it
    /// again (default an hour): a key the issuer removed from its set (a
    /// retired or leaked one) stops verifying at most this long after its
    /// removal. While the issuer cannot be asked, the keys fetched last
    /// keep verifying; the next try waits
    /// [`min_refresh_interval`](Self::min_refresh_interval).
    #[must_use]
    pub fn max_key_age(mut self, age: Duration) -> Self {
        self.max_age = age;
        self
    }

    /// How many times the key set was fetched (for monitoring, and for
    /// tests that a flood of unknown keys stays bounded).
    pub fn key_set_fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    fn current(&self) -> Arc<KeySet> {
        self.keys
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Fetches the key set again, unless another caller did since `seen`
    /// was current, or the last fetch is too recent: the set to look in.
    async fn refresh(&self, seen: &Arc<KeySet>) -> Result<Arc<KeySet>, VerifyError> {
        let mut state = self.refresh.lock().await;
        self.refresh_under(&mut state, seen).await
    }

    /// `seen`, or the set fetched again when `seen` is older than
    /// [`max_key_age`](Self::max_key_age). No token waits for another's
    /// fetch of an old set: while one is under way, `seen` serves; and a
    /// fetch that fails keeps `seen`, as a set of keys that still verify.
    async fn renewed(&self, seen: Arc<KeySet>) -> Arc<KeySet> {
        if seen.fetched.is_none_or(|at| at.elapsed() < self.max_age) {
            return seen;
        }
        let Ok(mut state) = self.refresh.try_lock() else {
            return seen;
        };
        match self.refresh_under(&mut state, &seen).await {
            Ok(renewed) => renewed,
            Err(why) => {
                tracing::debug!(issuer = %self.issuer.id, "the key set was not fetched again: {why}");
                seen
            }
        }
    }

    /// [`refresh`](Self::refresh), under its lock.
    async fn refresh_under(
        &self,
        state: &mut Refresh,
        seen: &Arc<KeySet>,
    ) -> Result<Arc<KeySet>, VerifyError> {
        let current = self.current();
        if !Arc::ptr_eq(&current, seen) {
            return Ok(current);
        }
        if state
            .last
            .is_some_and(|last| last.elapsed() < self.min_refresh)
        {
            return match &state.failed {
                Some(why) => Err(why.clone()),
                None => Ok(current),
            };
        }
        state.last = Some(Instant::now());
        let fetched = self.fetch().await;
        state.failed = fetched.as_ref().err().cloned();
        fetched
    }

    /// Fetches the key set (discovering where it is, the first time), in
    /// a task of its own: a caller that goes (its client disconnected) does
    /// not stop the fetch, so a set grown old is renewed whoever asked.
    async fn fetch(&self) -> Result<Arc<KeySet>, VerifyError> {
        let (client, issuer) = (self.issuer.client, self.issuer.id.clone());
        let configured = self.jwks_uri.clone();
        let (discovered, keys, fetches) = (
            self.discovered.clone(),
            self.keys.clone(),
            self.fetches.clone(),
        );
        let fetching = tokio::spawn(async move {
            let uri = match configured.or_else(|| discovered.get().cloned()) {
                Some(uri) => uri,
                None => {
                    let metadata = discover(&client, &issuer).await?;
                    let uri = metadata.jwks_uri.ok_or_else(|| {
                        VerifyError::Config(format!("the metadata of {issuer} has no jwks_uri"))
                    })?;
                    discovered.get_or_init(|| uri).clone()
                }
            };
            fetches.fetch_add(1, Ordering::Relaxed);
            let document = client.get_json(&uri).await?;
            let fetched = KeySet::read(document).map_err(|why| {
                VerifyError::Unavailable(format!("{uri} is not a JWK set: {why}"))
            })?;
            let fetched = Arc::new(fetched);
            tracing::debug!(%issuer, keys = fetched.keys.len(), "fetched the key set");
            *keys.write().unwrap_or_else(PoisonError::into_inner) = fetched.clone();
            Ok(fetched)
        });
        fetching.await.unwrap_or_else(|e| {
            Err(VerifyError::Unavailable(format!(
                "fetching the key set: {e}"
            )))
        })
    }
}

impl KeySet {
    /// The usable keys of a JWK set document, fetched now. A key that does
    /// not read as a JWK this crate knows (a curve or key type it has no
    /// verifier for, say) is skipped, as one it cannot use is: the set's
    /// other keys still serve.
    fn read(document: Value) -> Result<Self, String> {
        let Value::Object(mut document) = document else {
            return Err("not an object".into());
        };
        let Some(Value::Array(keys)) = document.remove("keys") else {
            return Err("no \"keys\" list".into());
        };
        let keys = keys.into_iter().filter_map(|key| {
            serde_json::from_value::<jsonwebtoken::jwk::Jwk>(key)
                .inspect_err(|e| tracing::debug!("a key of the set was skipped: {e}"))
                .ok()
        });
        Ok(Self::of(keys, Some(Instant::now())))
    }

    fn of(set: impl IntoIterator<Item = jsonwebtoken::jwk::Jwk>, fetched: Option<Instant>) -> Self {
        let keys = set
            .into_iter()
            .filter(|jwk| {
                matches!(
                    jwk.common.public_key_use,
                    None | Some(PublicKeyUse::Signature)
                )
            })
            .filter_map(|jwk| {
                let family = match &jwk.algorithm {
                    AlgorithmParameters::RSA(_) => AlgorithmFamily::Rsa,
                    AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
                        EllipticCurve::P256 | EllipticCurve::P384 => AlgorithmFamily::Ec,
                        _ => return None,
                    },
                    AlgorithmParameters::OctetKeyPair(_) => AlgorithmFamily::Ed,
                    // Symmetric keys are never published for verification;
                    // one that is would let anyone who read the set sign.
                    _ => return None,
                };
                let allowed = family.algorithms();
                let algorithms = match jwk.common.key_algorithm {
                    Some(named) => {
                        let named = Algorithm::try_from(named).ok()?;
                        if !allowed.contains(&named) {
                            return None;
                        }
                        vec![named]
                    }
                    None => match &jwk.algorithm {
                        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
                            EllipticCurve::P256 => vec![Algorithm::ES256],
                            _ => vec![Algorithm::ES384],
                        },
                        _ => allowed.to_vec(),
                    },
                };
                let decoding = DecodingKey::from_jwk(&jwk).ok()?;
                Some(Jwk {
                    kid: jwk.common.key_id,
                    algorithms,
                    decoding,
                })
            })
            .collect();
        Self { keys, fetched }
    }

    /// The key for a token's header: by `kid`, or, for a token without
    /// one, the only key that allows its algorithm.
    fn find(&self, kid: Option<&str>, alg: Algorithm) -> Option<&Jwk> {
        match kid {
            Some(kid) => self.keys.iter().find(|k| k.kid.as_deref() == Some(kid)),
            None => {
                let mut fitting = self.keys.iter().filter(|k| k.algorithms.contains(&alg));
                let first = fitting.next();
                if fitting.next().is_some() {
                    None
                } else {
                    first
                }
            }
        }
    }
}

#[async_trait]
impl TokenVerifier for JwtVerifier {
    async fn verify(
        &self,
        token: &str,
        audience: &AcceptedAudiences,
    ) -> Result<Principal, VerifyError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| VerifyError::Invalid(format!("not a signed JWT: {e}")))?;
        // RFC 9068 §2.1: an access token says `at+jwt`; many issuers write
        // `JWT`. Any other type (a logout token's, say) is not an access
        // token. (An ID token is refused by its audience, the client's.)
        if let Some(typ) = &header.typ
            && !["at+jwt", "application/at+jwt", "jwt"]
                .iter()
                .any(|t| typ.eq_ignore_ascii_case(t))
        {
            return Err(VerifyError::Invalid(format!(
                "a {:?} token is not an access token",
                clipped(typ)
            )));
        }
        let kid = header.kid.as_deref();
        let mut keys = self.renewed(self.current()).await;
        if keys.find(kid, header.alg).is_none() {
            keys = self.refresh(&keys).await?;
        }
        let Some(key) = keys.find(kid, header.alg) else {
            return Err(VerifyError::Invalid(match kid {
                Some(kid) => format!("the issuer has no key {:?}", clipped(kid)),
                None => "the token names no key, and no single key fits it".into(),
            }));
        };
        if !key.algorithms.contains(&header.alg) {
            return Err(VerifyError::Invalid(format!(
                "the key does not sign with {:?}",
                header.alg
            )));
        }
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.set_issuer(&[&self.issuer.id]);
        // The audience is checked below, by `AcceptedAudiences::accepts`,
        // as the introspected token's is.
        validation.validate_aud = false;
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.validate_nbf = true;
        validation.leeway = self.issuer.leeway.as_secs();
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.decoding, &validation)
            .map_err(|e| VerifyError::Invalid(e.to_string()))?;
        let principal = principal_of(&self.issuer.id, data.claims);
        audience.check(&principal)?;
        Ok(principal)
    }
}

/// A principal from a token's claims (RFC 9068 §2.2, RFC 7662 §2.2):
/// `sub`, `client_id` (or `azp`), `scope` (or `scp`), `aud`, `exp`.
pub(super) fn principal_of(issuer: &str, claims: Map<String, Value>) -> Principal {
    let text = |key: &str| claims.get(key).and_then(Value::as_str).map(str::to_owned);
    let mut principal = Principal::new(issuer);
    if let Some(sub) = text("sub") {
        principal = principal.with_subject(sub);
    }
    if let Some(client) = text("client_id").or_else(|| text("azp")) {
        principal = principal.with_client_id(client);
    }
    let scopes: Vec<String> = match claims.get("scope").or_else(|| claims.get("scp")) {
        Some(Value::String(scopes)) => scopes.split_ascii_whitespace().map(str::to_owned).collect(),
        Some(Value::Array(scopes)) => scopes
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    let audiences: Vec<String> = match claims.get("aud") {
        Some(Value::String(aud)) => vec![aud.clone()],
        Some(Value::Array(auds)) => auds
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    // A time past what `SystemTime` holds is the far future: no expiry.
    if let Some(at) = claims
        .get("exp")
        .and_then(Value::as_u64)
        .and_then(|exp| SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(exp)))
    {
        principal = principal.with_expiry(at);
    }
    principal
        .with_scopes(scopes)
        .with_audiences(audiences)
        .with_claims(claims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn symmetric_and_encryption_keys_are_never_used_and_a_named_alg_is_the_only_one() {
        let keys = KeySet::read(json!({"keys": [
            {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac", "alg": "HS256"},
            {"kty": "RSA", "use": "enc", "kid": "enc", "n": "sXch", "e": "AQAB"},
            {"kty": "RSA", "kid": "rsa", "alg": "RS256", "n": "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw", "e": "AQAB"}
        ]}))
        .unwrap();
        assert_eq!(keys.keys.len(), 1);
        assert!(keys.find(Some("hmac"), Algorithm::HS256).is_none());
        let rsa = keys.find(Some("rsa"), Algorithm::RS256).unwrap();
        assert_eq!(rsa.algorithms, [Algorithm::RS256]);
    }

    #[test]
    fn a_key_of_a_type_this_crate_cannot_read_is_skipped_not_the_whole_set() {
        let keys = KeySet::read(json!({"keys": [
            {"kty": "OKP", "crv": "Ed448", "kid": "ed448", "x": "AAAA"},
            {"kty": "EC", "crv": "secp256k1", "kid": "k1", "x": "AAAA", "y": "AAAA"},
            {"kty": "RSA", "kid": "x5c-only", "x5c": ["AAAA"]},
            {"kty": "future", "kid": "new"},
            {"kty": "OKP", "crv": "Ed25519", "kid": "ed", "alg": "EdDSA", "x": TEST_KEY_X}
        ]}))
        .expect("a set with one usable key reads");
        assert_eq!(keys.keys.len(), 1);
        assert!(keys.find(Some("ed"), Algorithm::EdDSA).is_some());
        assert!(keys.fetched.is_some());
        assert!(KeySet::read(json!({"keys": {}})).is_err());
        assert!(KeySet::read(json!([])).is_err());
    }

    #[test]
    fn principals_read_rfc9068_claims() {
        let claims = json!({
            "sub": "u1", "client_id": "c1", "scope": "mcp files:write",
            "aud": ["https://h/mcp"], "exp": 2_000_000_000u64, "extra": true
        });
        let Value::Object(claims) = claims else {
            unreachable!()
        };
        let p = principal_of("https://as", claims);
        assert_eq!(p.subject(), Some("u1"));
        assert_eq!(p.client_id(), Some("c1"));
        assert_eq!(p.scopes(), ["mcp", "files:write"]);
        assert_eq!(p.audiences(), ["https://h/mcp"]);
        assert!(p.expires_at().is_some());
        assert_eq!(p.claims()["extra"], true);
    }

    /// An Ed25519 key of the tests' own (never an issuer's): PKCS #8 DER,
    /// in base64.
    const TEST_KEY: &str = "MC4CAQAwBQYDK2VwBCIEIACQxObdex1h6nCmk0KGRgc+D6mChjn2wwM137euxmvq";
    const TEST_KEY_X: &str = "K6fFnAO63eBDXT00w55f1R8MCmT_zz3n1tcnXd5tUxI";

    #[tokio::test]
    async fn a_signed_token_whose_exp_is_past_what_a_time_holds_is_verified_without_a_panic() {
        let verifier = JwtVerifier::new("https://as");
        let keys = KeySet::read(json!({"keys": [
            {"kty": "OKP", "crv": "Ed25519", "kid": "ed", "alg": "EdDSA", "x": TEST_KEY_X}
        ]}))
        .unwrap();
        *verifier.keys.write().unwrap() = Arc::new(keys);
        use base64::Engine as _;
        let der = base64::engine::general_purpose::STANDARD
            .decode(TEST_KEY)
            .unwrap();
        let key = jsonwebtoken::EncodingKey::from_ed_der(&der);
        let mut header = jsonwebtoken::Header::new(Algorithm::EdDSA);
        header.kid = Some("ed".into());
        let audience = AcceptedAudiences::new(["https://h/mcp"]);
        for exp in [1u64 << 63, u64::MAX, 1 << 40] {
            let claims =
                json!({"iss": "https://as", "aud": "https://h/mcp", "sub": "u", "exp": exp});
            let token = jsonwebtoken::encode(&header, &claims, &key).unwrap();
            let principal = verifier.verify(&token, &audience).await.unwrap();
            assert_eq!(principal.subject(), Some("u"));
            if let Some(at) = principal.expires_at() {
                assert!(at > SystemTime::now(), "exp {exp}: {at:?}");
            }
        }
    }
}
