//! OAuth 2.1 for the HTTP endpoint (feature `oauth`; the rules are the
//! crate's `docs/oauth.md`): the server as an OAuth *resource server*, as
//! the Model Context Protocol's authorization spec asks of a remote server.
//!
//! - **Protected-resource metadata** (RFC 9728) at
//!   `/.well-known/oauth-protected-resource{path}` and at the root one,
//!   readable from any origin: where hosts (Claude, VS Code, Cursor, MCP
//!   Inspector) learn which authorization server to ask.
//! - **Challenges**: `401` with `WWW-Authenticate: Bearer
//!   resource_metadata="…", scope="…"` (no `error` when the request had no
//!   token, `error="invalid_token"` when its token is bad), `403
//!   error="insufficient_scope"` naming every scope the request needs.
//! - **Verification of every request** by a [`TokenVerifier`]: a
//!   [`JwtVerifier`] (the issuer's JWKS, found through its metadata) or an
//!   [`IntrospectionVerifier`] (RFC 7662), or your own. Each checks the
//!   issuer, the audience — the endpoint's canonical URL, by default the
//!   only one (RFC 8707) — expiry and not-before. Verified tokens are
//!   remembered until they expire (found by a keyed hash, compared whole),
//!   so a JWT costs one signature check per token, not per request.
//! - **Scopes**: for the whole endpoint ([`OAuth::required_scopes`]) and
//!   per item ([`ServerBuilder::require_scopes`](crate::ServerBuilder::require_scopes)).
//! - **The principal** reaches tools ([`ToolContext::principal`](crate::ToolContext::principal))
//!   and resource and prompt handlers ([`Principal::current`]).
//! - A Model Context Protocol session belongs to the principal that opened
//!   it; another principal's requests with its id get `404`.
//!
//! Tokens are never forwarded anywhere: a tool that calls another service
//! gets a token of its own for it. Stdio is never subject to OAuth (the
//! spec: credentials come from the environment there).
//!
//! ```no_run
//! use clawmcp::Server;
//! use clawmcp::oauth::OAuth;
//! use clawmcp::transport::HttpConfig;
//!
//! # async fn run(server: Server) -> std::io::Result<()> {
//! let oauth = OAuth::jwt("https://mcp.example.com/mcp", "https://auth.example.com")
//!     .required_scopes(["mcp"])
//!     .resource_name("Example tools");
//! let config = HttpConfig::default().allow_host("mcp.example.com").oauth(oauth);
//! let addr = "0.0.0.0:8080".parse().expect("an address");
//! server.serve_http(addr, config, std::future::pending()).await
//! # }
//! ```

mod cache;
mod challenge;
mod discovery;
mod fetch;
mod introspection;
mod issuer;
mod jwt;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

pub use introspection::IntrospectionVerifier;
pub use jwt::JwtVerifier;

pub use crate::principal::Principal;
use cache::Verified;
pub(crate) use challenge::{Challenge, WELL_KNOWN};

/// Why a token was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The token is not valid here: malformed, badly signed, expired, not
    /// yet valid, for another audience or from another issuer, revoked
    /// (`401`, `error="invalid_token"`).
    #[error("invalid token: {0}")]
    Invalid(String),
    /// The authorization server could not be asked (down, slow, answering
    /// errors): the token is refused, never let through (`503`).
    #[error("the authorization server is unavailable: {0}")]
    Unavailable(String),
    /// The verifier's own settings are wrong (a bad URL, an issuer whose
    /// metadata names another issuer): refused (`503`), and logged.
    #[error("the token verifier is misconfigured: {0}")]
    Config(String),
}

/// What a token must be for: the audiences a verifier accepts (the
/// endpoint's canonical URL, and any added by
/// [`OAuth::extra_audience`]).
///
/// Audiences are compared as canonical URLs ([`canonical_resource`]): the
/// scheme and host in any case, with or without a trailing `/`, as
/// clients that read the resource with a URL parser send it (the root
/// `https://mcp.example.com` comes back `https://mcp.example.com/`).
///
/// ```
/// use clawmcp::oauth::AcceptedAudiences;
///
/// let audience = AcceptedAudiences::new(["https://mcp.example.com"]);
/// assert!(audience.accepts(["HTTPS://MCP.example.com/"].into_iter()));
/// assert!(!audience.accepts(["https://mcp.example.com/other"].into_iter()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedAudiences {
    accepted: Vec<String>,
    /// `accepted`, each as [`canonical_resource`] writes it.
    canonical: Vec<String>,
}

impl AcceptedAudiences {
    /// These audiences.
    pub fn new<I, S>(accepted: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut audiences = Self {
            accepted: Vec::new(),
            canonical: Vec::new(),
        };
        for audience in accepted {
            audiences.add(audience.into());
        }
        audiences
    }

    fn add(&mut self, audience: String) {
        self.canonical.push(canonical_resource(&audience));
        self.accepted.push(audience);
    }

    /// The accepted audiences, as given.
    pub fn accepted(&self) -> &[String] {
        &self.accepted
    }

    /// Whether any of a token's audiences is accepted.
    pub fn accepts<'a>(&self, mut audiences: impl Iterator<Item = &'a str>) -> bool {
        audiences.any(|aud| {
            let aud = canonical_resource(aud);
            self.canonical.contains(&aud)
        })
    }

    /// `Ok` when one of `principal`'s audiences is accepted (RFC 8707: a
    /// token without an audience, or for another, is not for this server).
    pub(crate) fn check(&self, principal: &Principal) -> Result<(), VerifyError> {
        if self.accepts(principal.audiences().iter().map(String::as_str)) {
            return Ok(());
        }
        Err(VerifyError::Invalid(format!(
            "the token is for {:?}, not for this server",
            principal.audiences()
        )))
    }
}

/// Checks an access token and says whose it is. Implement it to plug in a
/// verifier of your own (a database of API tokens, a different issuer
/// protocol); [`JwtVerifier`] and [`IntrospectionVerifier`] are built in.
///
/// A verifier must check that the token is meant for `audience` (RFC
/// 8707): without that check, a token issued for any other service that
/// trusts the same issuer would be accepted here.
///
/// ```
/// use async_trait::async_trait;
/// use clawmcp::Principal;
/// use clawmcp::oauth::{AcceptedAudiences, TokenVerifier, VerifyError};
///
/// /// Static API keys, each standing for one principal.
/// struct ApiKeys;
///
/// #[async_trait]
/// impl TokenVerifier for ApiKeys {
///     async fn verify(&self, token: &str, _audience: &AcceptedAudiences) -> Result<Principal, VerifyError> {
///         match token {
///             "key-of-alice" => Ok(Principal::new("api-keys").with_subject("alice").with_scopes(["mcp"])),
///             _ => Err(VerifyError::Invalid("unknown API key".into())),
///         }
///     }
/// }
/// ```
#[async_trait]
pub trait TokenVerifier: Send + Sync + 'static {
    /// The principal of `token`, if it is valid and meant for `audience`.
    async fn verify(
        &self,
        token: &str,
        audience: &AcceptedAudiences,
    ) -> Result<Principal, VerifyError>;

    /// How long an answer may be remembered, at most, besides the token's
    /// own expiry (default: until it expires). An introspecting verifier
    /// keeps this short, so that a revoked token stops working soon.
    fn cache_for(&self) -> Option<Duration> {
        None
    }
}

/// A shared verifier verifies as the one it shares (keep an `Arc` of a
/// [`JwtVerifier`] to read its fetch count).
#[async_trait]
impl<T: TokenVerifier> TokenVerifier for Arc<T> {
    async fn verify(
        &self,
        token: &str,
        audience: &AcceptedAudiences,
    ) -> Result<Principal, VerifyError> {
        (**self).verify(token, audience).await
    }

    fn cache_for(&self) -> Option<Duration> {
        (**self).cache_for()
    }
}

/// The endpoint's OAuth settings: who it is (its canonical URL), who
/// vouches for tokens (the authorization servers), how tokens are
/// verified, and what every request needs. Given to
/// [`HttpConfig::oauth`](crate::transport::HttpConfig::oauth).
#[derive(Clone)]
#[must_use]
pub struct OAuth {
    pub(crate) resource: String,
    pub(crate) authorization_servers: Vec<String>,
    pub(crate) verifier: Arc<dyn TokenVerifier>,
    pub(crate) audience: AcceptedAudiences,
    pub(crate) required: Vec<String>,
    pub(crate) scopes_supported: Option<Vec<String>>,
    pub(crate) resource_name: Option<String>,
    pub(crate) resource_documentation: Option<String>,
    pub(crate) verified: Arc<Verified>,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("audience", &self.audience)
            .field("required", &self.required)
            .finish_non_exhaustive()
    }
}

impl OAuth {
    /// The endpoint at `resource` — its canonical public URL, as clients
    /// reach it (`https://mcp.example.com/mcp`; behind a proxy, the
    /// proxy's) — trusting tokens `verifier` accepts from the
    /// authorization server `issuer`. The URL is normalised as RFC 8707
    /// asks: lowercase scheme and host, no fragment, no trailing `/`.
    pub fn new(
        resource: impl AsRef<str>,
        issuer: impl Into<String>,
        verifier: impl TokenVerifier,
    ) -> Self {
        let resource = canonical_resource(resource.as_ref());
        Self {
            audience: AcceptedAudiences::new([resource.clone()]),
            resource,
            authorization_servers: vec![issuer.into()],
            verifier: Arc::new(verifier),
            required: Vec::new(),
            scopes_supported: None,
            resource_name: None,
            resource_documentation: None,
            verified: Arc::default(),
        }
    }

    /// JWT access tokens from `issuer`, verified against its JWKS
    /// ([`JwtVerifier`] with its defaults).
    pub fn jwt(resource: impl AsRef<str>, issuer: impl Into<String>) -> Self {
        let issuer = issuer.into();
        Self::new(resource, issuer.clone(), JwtVerifier::new(issuer))
    }

    /// Opaque access tokens from `issuer`, introspected (RFC 7662) with
    /// this server's own client credentials ([`IntrospectionVerifier`]).
    pub fn introspection(
        resource: impl AsRef<str>,
        issuer: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        let issuer = issuer.into();
        let verifier = IntrospectionVerifier::new(issuer.clone(), client_id, client_secret);
        Self::new(resource, issuer, verifier)
    }

    /// Also lists `issuer` as an authorization server in the metadata
    /// (the verifier must accept its tokens).
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// Also accepts tokens whose audience is `audience` (default: only the
    /// canonical resource URL). Only for a deployment that knows why: a
    /// token for another audience was meant for another service.
    pub fn extra_audience(mut self, audience: impl Into<String>) -> Self {
        self.audience.add(audience.into());
        self
    }

    /// Scopes every request needs (default: none); a token without them
    /// gets `403 insufficient_scope`. They are also the `scope` of the
    /// `401` challenge, so a client asks for them first.
    pub fn required_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The metadata's `scopes_supported` (default: the required scopes
    /// and every scope an item requires). `offline_access` is never
    /// listed: refresh tokens are the client's business.
    pub fn scopes_supported<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes_supported = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// The metadata's `resource_name`: what a host shows its user (default:
    /// the server's name).
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// The metadata's `resource_documentation` URL.
    pub fn resource_documentation(mut self, url: impl Into<String>) -> Self {
        self.resource_documentation = Some(url.into());
        self
    }

    /// The canonical resource URL (also the accepted audience).
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The metadata's path for the endpoint (`/.well-known/oauth-protected-resource/mcp`).
    pub fn metadata_path(&self) -> String {
        challenge::metadata_path(&self.resource)
    }

    /// The URL of the metadata document (the challenges'
    /// `resource_metadata`).
    pub fn metadata_url(&self) -> String {
        challenge::metadata_url(&self.resource)
    }

    /// The principal of `token`: remembered, or verified now.
    pub(crate) async fn principal(&self, token: &[u8]) -> Result<Arc<Principal>, VerifyError> {
        if let Some(known) = self.verified.get(token) {
            return Ok(known);
        }
        self.principal_fresh(token).await
    }

    /// [`principal`](Self::principal), asking the verifier whatever is
    /// remembered (the answer is remembered in turn).
    pub(crate) async fn principal_fresh(
        &self,
        token: &[u8],
    ) -> Result<Arc<Principal>, VerifyError> {
        let text = std::str::from_utf8(token)
            .map_err(|_| VerifyError::Invalid("the token is not UTF-8".into()))?;
        let principal = Arc::new(self.verifier.verify(text, &self.audience).await?);
        self.verified
            .remember(token, &principal, self.verifier.cache_for());
        Ok(principal)
    }
}

/// The protected-resource metadata document of `oauth`'s endpoint.
pub(crate) fn metadata_document(
    oauth: &OAuth,
    scopes_supported: &[String],
    resource_name: &str,
) -> serde_json::Value {
    challenge::metadata(
        &oauth.resource,
        &oauth.authorization_servers,
        scopes_supported,
        Some(resource_name),
        oauth.resource_documentation.as_deref(),
    )
}

/// RFC 8707 §2: an absolute URI without a fragment; scheme and host
/// lowercase; no trailing `/` unless a query follows, even where `/` is
/// the whole path (`https://mcp.example.com/` is `https://mcp.example.com`).
pub fn canonical_resource(url: &str) -> String {
    match url::Url::parse(url.trim()) {
        Ok(mut parsed) => {
            parsed.set_fragment(None);
            let text = parsed.to_string();
            match text.strip_suffix('/') {
                Some(trimmed) if parsed.query().is_none() => trimmed.to_owned(),
                _ => text,
            }
        }
        Err(_) => url.trim().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_are_canonical_as_rfc8707_asks() {
        assert_eq!(
            canonical_resource("HTTPS://MCP.Example.com/mcp/#frag"),
            "https://mcp.example.com/mcp"
        );
        assert_eq!(
            canonical_resource("https://mcp.example.com"),
            "https://mcp.example.com"
        );
        assert_eq!(
            canonical_resource("http://127.0.0.1:8080/mcp"),
            "http://127.0.0.1:8080/mcp"
        );
    }

    #[test]
    fn audiences_match_as_canonical_urls() {
        let audience = AcceptedAudiences::new(["https://a.example/mcp"]);
        assert!(audience.accepts(["x", "https://a.example/mcp"].into_iter()));
        assert!(audience.accepts(["https://a.example/mcp/"].into_iter()));
        assert!(audience.accepts(["HTTPS://A.EXAMPLE/mcp"].into_iter()));
        assert!(!audience.accepts(["https://a.example/MCP"].into_iter()));
        assert!(!audience.accepts(["https://a.example/mcp/x"].into_iter()));
        assert!(!audience.accepts(["https://b.example/mcp"].into_iter()));
        assert!(!audience.accepts(["https://a.example:8443/mcp"].into_iter()));
        assert!(!audience.accepts(std::iter::empty()));
        let root = AcceptedAudiences::new(["https://a.example"]);
        assert!(root.accepts(["https://a.example/"].into_iter()));
        assert!(!root.accepts(["https://a.example/mcp"].into_iter()));
    }
}
