//! Who sent a request: the verified [`Principal`] of an OAuth access token,
//! and the request's HTTP head, as the transport hands them to the
//! request's work ([`Caller`]).
//!
//! A principal is made by a token verifier (the `oauth` feature's, or a
//! user's own) and read by tools through
//! [`ToolContext::principal`](crate::ToolContext::principal), and by
//! resource and prompt handlers through [`Principal::current`]. A request
//! over stdio has none: stdio is never subject to OAuth.

use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{Map, Value};

/// The verified identity behind a request's access token.
///
/// ```
/// use clawmcp::Principal;
///
/// let who = Principal::new("https://auth.example.com")
///     .with_subject("user-42")
///     .with_client_id("claude")
///     .with_scopes(["mcp", "files:write"]);
/// assert!(who.has_scope("files:write"));
/// assert_eq!(who.subject(), Some("user-42"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct Principal {
    issuer: String,
    subject: Option<String>,
    client_id: Option<String>,
    scopes: Vec<String>,
    audiences: Vec<String>,
    expires_at: Option<SystemTime>,
    claims: Map<String, Value>,
}

impl Principal {
    /// A principal vouched for by `issuer` (the authorization server's
    /// issuer identifier), with no subject, client, scope or claims yet.
    pub fn new(issuer: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            subject: None,
            client_id: None,
            scopes: Vec::new(),
            audiences: Vec::new(),
            expires_at: None,
            claims: Map::new(),
        }
    }

    /// With subject `sub` (the end user, or for a client-credentials token
    /// often the client).
    pub fn with_subject(mut self, subject: impl Into<String>) -> Self {
        self.subject = Some(subject.into());
        self
    }

    /// With the OAuth client the token was issued to.
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// With these granted scopes.
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// With the token's audiences (`aud`).
    pub fn with_audiences<I, S>(mut self, audiences: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.audiences = audiences.into_iter().map(Into::into).collect();
        self
    }

    /// With the token's expiry.
    pub fn with_expiry(mut self, expires_at: SystemTime) -> Self {
        self.expires_at = Some(expires_at);
        self
    }

    /// With the token's claims (a JWT's payload, or an introspection
    /// answer), all of them, as the issuer wrote them.
    pub fn with_claims(mut self, claims: Map<String, Value>) -> Self {
        self.claims = claims;
        self
    }

    /// The issuer that vouched for the token.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The subject (`sub`), if the token names one.
    pub fn subject(&self) -> Option<&str> {
        self.subject.as_deref()
    }

    /// The client the token was issued to (`client_id` or `azp`).
    pub fn client_id(&self) -> Option<&str> {
        self.client_id.as_deref()
    }

    /// The granted scopes.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// Whether `scope` was granted (exactly; a server's scope hierarchy is
    /// its own hook, see `ServerBuilder::scope_grants`).
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|granted| granted == scope)
    }

    /// The token's audiences.
    pub fn audiences(&self) -> &[String] {
        &self.audiences
    }

    /// When the token expires, if it says.
    pub fn expires_at(&self) -> Option<SystemTime> {
        self.expires_at
    }

    /// Every claim of the token.
    pub fn claims(&self) -> &Map<String, Value> {
        &self.claims
    }

    /// Who the token names: the issuer, the subject and the client, as
    /// [`TokenId`] holds them.
    pub(crate) fn identity(&self) -> (&str, Option<&str>, Option<&str>) {
        (&self.issuer, self.subject(), self.client_id())
    }

    /// The principal of the request whose work is running on this task —
    /// for resource and completion handlers and prompts without a context,
    /// which have no other way to it (a tool, and a prompt's
    /// [`messages_with`](crate::prompt::Prompt::messages_with), have
    /// [`ToolContext::principal`](crate::ToolContext::principal)). `None`
    /// inside a tool's call, outside a request, over stdio, and for
    /// requests no verifier checked.
    ///
    /// ```
    /// assert!(clawmcp::Principal::current().is_none());
    /// ```
    pub fn current() -> Option<Arc<Principal>> {
        CURRENT
            .try_with(|caller| caller.principal.clone())
            .ok()
            .flatten()
    }
}

tokio::task_local! {
    /// The caller of the request whose resource or prompt work is polled.
    static CURRENT: Caller;
}

/// What the transport knows of a request's sender, handed to its work: the
/// verified principal and (over HTTP) the request's head, without its
/// `Authorization` header. Two reference counts; the default (stdio,
/// tests) is neither.
#[derive(Clone, Default)]
pub(crate) struct Caller {
    /// The token's principal, when a verifier checked one.
    pub(crate) principal: Option<Arc<Principal>>,
    /// The HTTP request's method, URI and headers.
    #[cfg(feature = "http")]
    pub(crate) head: Option<Arc<Head>>,
    /// For a long-lived stream whose token is watched: set once its issuer
    /// says the token is no longer active.
    pub(crate) revocation: Option<Arc<Revocation>>,
}

/// Who a request is counted against for the limits per principal (the
/// endpoint's streams and sessions, the tasks one may hold): a verified
/// token's issuer, subject and client; without a token, the client's
/// address: the peer's ([`PeerAddr`]), or the one a trusted reverse proxy
/// forwarded the request for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum CountedAs {
    /// A verified token's issuer, subject and client.
    Token(TokenId),
    /// The client's address (no token); an IPv6 client by its /64, the
    /// least a host is given, so that it cannot count as many by changing
    /// address.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    Address(std::net::IpAddr),
}

impl Caller {
    /// Whether the request can be counted against anyone
    /// ([`CountedAs::of`]): a token, or an HTTP head (which may name the
    /// peer).
    pub(crate) fn may_be_counted(&self) -> bool {
        #[cfg(feature = "http")]
        if self.head.is_some() {
            return true;
        }
        self.principal.is_some()
    }
}

impl CountedAs {
    /// What `caller` counts as, if it can be told: a request with neither
    /// a token nor a peer's address (stdio, or an endpoint mounted in an
    /// app that does not tell the peer) cannot.
    pub(crate) fn of(caller: &Caller) -> Option<Self> {
        if let Some(principal) = caller.principal.as_deref() {
            return Some(Self::token(principal));
        }
        #[cfg(feature = "http")]
        {
            let client = caller.head.as_ref()?.client_ip()?;
            Some(Self::address(client))
        }
        #[cfg(not(feature = "http"))]
        None
    }

    /// What a request from a client at `ip` without a token counts as.
    #[cfg(feature = "http")]
    pub(crate) fn address(ip: std::net::IpAddr) -> Self {
        use std::net::{IpAddr, Ipv6Addr};
        Self::Address(match ip.to_canonical() {
            IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from_bits(v6.to_bits() & !((1u128 << 64) - 1))),
            v4 => v4,
        })
    }

    /// What a request with `principal`'s token counts as.
    pub(crate) fn token(principal: &Principal) -> Self {
        Self::Token(TokenId::of(principal))
    }

    /// As a store's key: a token's parts joined by NUL (as a task's owner
    /// is written), an address as `peer ` and the address, which holds no
    /// NUL, so that the two never meet (the `peer ` prefix is what stored
    /// tasks already say).
    pub(crate) fn key(&self) -> String {
        match self {
            Self::Token(id) => id.key(),
            Self::Address(ip) => format!("peer {ip}"),
        }
    }
}

/// Who a verified token names: its issuer, subject and client. A session
/// opened with one serves no other, and the limits per principal count it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct TokenId {
    pub(crate) issuer: String,
    pub(crate) subject: Option<String>,
    pub(crate) client: Option<String>,
}

impl TokenId {
    /// `principal`'s.
    pub(crate) fn of(principal: &Principal) -> Self {
        let (issuer, subject, client) = principal.identity();
        Self {
            issuer: issuer.to_owned(),
            subject: subject.map(str::to_owned),
            client: client.map(str::to_owned),
        }
    }

    /// Whether `principal`'s token names the same.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn is(&self, principal: &Principal) -> bool {
        principal.identity()
            == (
                &*self.issuer,
                self.subject.as_deref(),
                self.client.as_deref(),
            )
    }

    /// As a store's key ([`token_key`]).
    pub(crate) fn key(&self) -> String {
        token_key(
            &self.issuer,
            self.subject.as_deref(),
            self.client.as_deref(),
        )
    }
}

/// A token's issuer, subject and client as a store's key (a task's owner,
/// what a sealed state is bound to): joined by NUL.
pub(crate) fn token_key(issuer: &str, subject: Option<&str>, client: Option<&str>) -> String {
    format!(
        "{issuer}\u{0}{}\u{0}{}",
        subject.unwrap_or_default(),
        client.unwrap_or_default()
    )
}

#[cfg(feature = "http")]
/// The address of the peer a request came from, in the request's
/// extensions: the standalone server ([`Server::serve_http`]) puts it
/// there; an app that mounts the endpoint may too, so that the limits per
/// principal hold without OAuth.
///
/// Behind a reverse proxy every request comes from the proxy's address:
/// then all clients without a token are one principal. Trust the proxy to
/// name the client
/// ([`HttpConfig::trust_proxy`](crate::transport::HttpConfig::trust_proxy),
/// which reads `X-Forwarded-For` from it, and from the address a
/// `PeerAddr` gives too), or verify tokens
/// (`HttpConfig::oauth`, feature `oauth`).
///
/// [`Server::serve_http`]: crate::Server::serve_http
///
/// ```
/// use clawmcp::transport::PeerAddr;
///
/// let mut request = http::Request::new(());
/// request.extensions_mut().insert(PeerAddr("192.0.2.7:50123".parse().unwrap()));
/// assert!(request.extensions().get::<PeerAddr>().is_some());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerAddr(pub std::net::SocketAddr);

/// An HTTP request's head, and the address of the connection it came on
/// when the endpoint's own server accepted it (an app that mounts the
/// endpoint may put a `PeerAddr` in the request's extensions instead).
/// It reads as its [`Parts`](http::request::Parts).
#[cfg(feature = "http")]
pub(crate) struct Head {
    pub(crate) parts: http::request::Parts,
    pub(crate) peer: Option<std::net::SocketAddr>,
    /// The client a trusted reverse proxy said the request came from
    /// (`HttpConfig::trust_proxy`), when the peer is such a proxy.
    pub(crate) forwarded_for: Option<std::net::IpAddr>,
}

#[cfg(feature = "http")]
impl Head {
    /// The address of the peer the request came from: the connection's, or
    /// the [`PeerAddr`] an app that mounts the endpoint put in its
    /// extensions.
    pub(crate) fn peer_addr(&self) -> Option<std::net::SocketAddr> {
        self.peer
            .or_else(|| self.parts.extensions.get::<PeerAddr>().map(|p| p.0))
    }

    /// The address of the client the request is counted as: the one a
    /// trusted proxy forwarded it for, else its peer's.
    pub(crate) fn client_ip(&self) -> Option<std::net::IpAddr> {
        self.forwarded_for
            .or_else(|| self.peer_addr().map(|peer| peer.ip()))
    }
}

#[cfg(feature = "http")]
impl std::ops::Deref for Head {
    type Target = http::request::Parts;

    fn deref(&self) -> &http::request::Parts {
        &self.parts
    }
}

/// Whether the token of a long-lived stream was revoked, as the watch
/// that verifies it again finds (docs/oauth.md §3).
#[derive(Debug, Default)]
pub(crate) struct Revocation {
    revoked: std::sync::atomic::AtomicBool,
    /// Told when a request was refused for it.
    refused: tokio::sync::Notify,
}

impl Revocation {
    /// The issuer says the token is no longer active.
    #[cfg_attr(not(feature = "oauth"), allow(dead_code))]
    pub(crate) fn revoke(&self) {
        self.revoked
            .store(true, std::sync::atomic::Ordering::Release);
    }

    pub(crate) fn is_revoked(&self) -> bool {
        self.revoked.load(std::sync::atomic::Ordering::Acquire)
    }

    /// A request was refused for it.
    pub(crate) fn refused(&self) {
        self.refused.notify_one();
    }

    /// Until a request is refused for it (at once when one was).
    #[cfg_attr(not(feature = "oauth"), allow(dead_code))]
    pub(crate) async fn until_refused(&self) {
        self.refused.notified().await;
    }
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut debug = f.debug_struct("Caller");
        debug.field("principal", &self.principal);
        #[cfg(feature = "http")]
        if let Some(head) = &self.head {
            debug.field("method", &head.method).field("uri", &head.uri);
        }
        debug.finish_non_exhaustive()
    }
}

impl Caller {
    /// Whether its token was revoked while its stream was open.
    pub(crate) fn is_revoked(&self) -> bool {
        self.revocation
            .as_deref()
            .is_some_and(Revocation::is_revoked)
    }

    /// Runs `work` with this caller as [`Principal::current`]'s.
    pub(crate) async fn scope<F: Future>(self, work: F) -> F::Output {
        CURRENT.scope(self, work).await
    }
}
