//! The HTTP/1.1 transport on hyper (docs/mcp-v1.md §8): `POST /mcp` as a
//! single exchange or a streaming session, as a hyper service to mount in
//! an existing app ([`McpService`]) or a standalone server
//! ([`Server::serve_http`]).
//!
//! Both dialects share the endpoint (docs/model-context.md §1): a request whose
//! headers or first message are the Model Context Protocol's is served as
//! Streamable HTTP (or as a 2026-07-28 request), any other as MCP v1.0;
//! `dialect::choice` decides, from the facts `sniff` reads.
//!
//! - `guard`: `Host`, `Origin` and bearer-token checks, and `layer`, the
//!   same checks as a tower layer for an app's own routes; `cors`, the
//!   CORS headers of a response to a request with an `Origin`;
//! - `auth`: OAuth (feature `oauth`): the protected-resource metadata, the
//!   token every request carries, the challenges; `oauth_layer`, the same
//!   gate as a tower layer for an app's own routes;
//! - `post`: every `POST`, read until its first value, then served as MCP
//!   v1.0 (a single exchange or a streaming session) or handed on;
//! - `sniff`: what a request's head says of its protocol;
//! - `streamable`, `sessions`: Streamable HTTP and its sessions;
//! - `revision_2026`: a 2026-07-28 request, with its mirrored headers;
//! - `quota`: the limits per principal;
//! - `forwarded`: the client a trusted reverse proxy names;
//! - `body`: request bodies read as session input, the response bodies;
//! - `serve`: the standalone server (accept loop, connection hygiene).
//!
//! ## Guards, limits and the protocol
//! [`McpService`] answers an MCP request whole, so that mounting it alone
//! is safe: its `Host`/`Origin` and bearer checks are [`GuardLayer`]'s
//! code, and its OAuth gate is [`OAuthLayer`]'s, run in the same order —
//! path, then `Host`/`Origin`, then the token — which is why neither layer
//! is needed in front of it; they exist for an app's own routes. The
//! message-size limit and the body-stall timeout
//! ([`HttpConfig::body_timeout`]) are not layers, by design: they hold per
//! message, not per request — an MCP v1.0 streaming POST is one long body
//! of many messages, and a GET stream lives for hours — so a request-wide
//! body limit or timeout (tower-http's) would cut those streams; and a
//! refused body is drained for reuse or its connection closed, which only
//! the reader of the body can decide. A request-wide limit or timeout an
//! app adds in front of the service applies as it would to any route.

#[cfg(feature = "oauth")]
mod auth;
mod body;
mod cors;
mod forwarded;
mod guard;
mod layer;
#[cfg(feature = "oauth")]
mod oauth_layer;
mod post;
mod quota;
mod revision_2026;
mod serve;
mod sessions;
mod sniff;
mod streamable;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{
    ALLOW, CACHE_CONTROL, CONNECTION, CONTENT_TYPE, EXPECT, HeaderValue, RETRY_AFTER,
};
use http::request::Parts;
use http::{Method, Request, Response, StatusCode};
use http_body::Body;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

pub use body::McpBody;
use body::next_data;
pub use forwarded::IpNet;
use forwarded::TrustedProxies;
use guard::{Accepted, HostRule, Rules};
pub use layer::{Guard, GuardLayer, Guarded};
#[cfg(feature = "oauth")]
pub use oauth_layer::{OAuthGuard, OAuthGuarded, OAuthLayer};
pub use quota::PeerAddr;
use sessions::Sessions;

use crate::dialect::ByHead;
use crate::principal::{Caller, Head};
use crate::server::Server;

/// Settings of the HTTP transport. Every setter states its default.
///
/// ```
/// use std::time::Duration;
/// use clawmcp::transport::HttpConfig;
///
/// let config = HttpConfig::default()
///     .path("/api/mcp")
///     .allow_origin("https://app.example.com")
///     .allow_host("mcp.example.com")
///     .bearer_token("s3cret")
///     .header_read_timeout(Duration::from_secs(5))
///     .body_timeout(Duration::from_secs(20))
///     .max_connections(256)
///     .max_streams(64)
///     .max_sessions(100)
///     .session_idle_timeout(Duration::from_secs(600))
///     .sse_keep_alive(Duration::from_secs(20));
/// # let _ = config;
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct HttpConfig {
    path: Option<String>,
    rules: Rules,
    any_host: bool,
    trusted_proxies: TrustedProxies,
    header_read_timeout: Duration,
    body_timeout: Duration,
    send_timeout: Duration,
    max_connections: usize,
    max_connections_per_peer: Option<usize>,
    max_streams: usize,
    max_streams_per_principal: Option<usize>,
    max_sessions: usize,
    max_sessions_per_principal: Option<usize>,
    session_idle_timeout: Duration,
    sse_keep_alive: Duration,
    #[cfg(feature = "oauth")]
    oauth: Option<crate::oauth::OAuth>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            path: None,
            rules: Rules::default(),
            any_host: false,
            trusted_proxies: TrustedProxies::default(),
            header_read_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            send_timeout: Duration::from_secs(60),
            max_connections: 1024,
            max_connections_per_peer: None,
            max_streams: 512,
            max_streams_per_principal: None,
            max_sessions: 1024,
            max_sessions_per_principal: None,
            session_idle_timeout: Duration::from_secs(30 * 60),
            sse_keep_alive: Duration::from_secs(15),
            #[cfg(feature = "oauth")]
            oauth: None,
        }
    }
}

impl HttpConfig {
    /// The endpoint's path; other paths get 404. Default: `/mcp` for the
    /// standalone server ([`Server::serve_http`]); any path for a service
    /// mounted in an app ([`Server::http_service`]), whose router chooses
    /// the path — axum's `nest_service("/mcp", ..)` hands the service the
    /// path without its prefix.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Allows browser requests from `origin`: a whole origin
    /// (`https://app.example.com`, scheme, host and port must match) or a
    /// bare host (`app.example.com`, any scheme and port). By default only
    /// loopback origins (`localhost`, `127.0.0.0/8`, `[::1]`) are allowed; a
    /// request with any other `Origin` gets 403 (DNS-rebinding defence).
    /// Requests without `Origin` (non-browser clients) are not affected.
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        let origin = origin.into();
        let normalized = match url::Url::parse(origin.trim()) {
            Ok(url) if url.host().is_some() => url.origin().ascii_serialization(),
            _ => origin.trim().trim_end_matches('/').to_ascii_lowercase(),
        };
        self.rules.origins.push(normalized);
        self
    }

    /// Allows requests whose `Host` is `host` (`mcp.example.com` for any
    /// port, or `mcp.example.com:8443`). Loopback names are always
    /// allowed. By default a server on a loopback address — and an
    /// [`McpService`] mounted in an app, which cannot know its address —
    /// answers 403 to any other `Host` (a DNS-rebinding attack sends the
    /// attacker's name); a standalone server on another address accepts
    /// any `Host` until a host is allowed here.
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.rules
            .hosts
            .push(host.into().trim().to_ascii_lowercase());
        self
    }

    /// Accepts any `Host` (default: see [`allow_host`](Self::allow_host)),
    /// e.g. behind a proxy that rewrites it. `Host` must still be present
    /// (HTTP/1.1) and well-formed.
    pub fn allow_any_host(mut self) -> Self {
        self.any_host = true;
        self
    }

    /// Trusts the reverse proxies at `proxies` (an address, or a network
    /// only proxies are on: `"10.8.0.0/24".parse::<IpNet>()`; call again
    /// for more) to say which client a request came from. Default: none,
    /// and `X-Forwarded-For` is never read.
    ///
    /// A request from a trusted proxy is counted as the client its
    /// `X-Forwarded-For` names: walking its fields from the right past
    /// every trusted proxy's address, the first address that is not one,
    /// as nginx's `real_ip_recursive on` reads it. Hops a client wrote
    /// itself are left of its own address, which its proxy appended, and
    /// are not reached. When every field is a trusted proxy's, the
    /// leftmost is the client; a field that is no address (`unknown`)
    /// stops the walk at the trusted proxy that passed it on; without the
    /// header the request is the proxy's own. That client is what the
    /// limits per principal count without OAuth — streams, sessions,
    /// tasks and bytes in flight — and the `client.address` of its trace
    /// span. A trusted proxy's connections are not held to
    /// [`max_connections_per_peer`](Self::max_connections_per_peer) (they
    /// carry many clients), only to [`max_connections`](Self::max_connections):
    /// limit each client's connections in the proxy.
    ///
    /// What to trust:
    /// - only the proxies' own addresses. A client whose address is
    ///   trusted is walked past, so the hops it wrote are believed; so is
    ///   a client that reaches the endpoint directly from a trusted
    ///   address. On one host, give the proxy an address of its own
    ///   (nginx's `proxy_bind 127.0.0.2;`);
    /// - only a proxy that appends its peer to the header (nginx's
    ///   `proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;`,
    ///   HAProxy's `option forwardfor`): one that passes the client's
    ///   header on unchanged lets the client name itself.
    ///
    /// ```
    /// use std::net::{IpAddr, Ipv4Addr};
    /// use clawmcp::transport::{HttpConfig, IpNet};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = HttpConfig::default()
    ///     .trust_proxy(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2))) // nginx's proxy_bind
    ///     .trust_proxy("10.8.0.0/24".parse::<IpNet>()?); // the load balancers' subnet
    /// # let _ = config;
    /// # Ok(())
    /// # }
    /// ```
    pub fn trust_proxy(mut self, proxies: impl Into<IpNet>) -> Self {
        self.trusted_proxies.add(proxies.into());
        self
    }

    /// Requires `Authorization: Bearer <token>`, once, on every request
    /// (default: none); a request without it gets 401, after the `Host` and
    /// `Origin` checks. The one exception is a CORS preflight (an `OPTIONS`
    /// with an allowed `Origin` and an `Access-Control-Request-Method`),
    /// which browsers send without credentials: the endpoint answers it
    /// itself and runs nothing for it. [`GuardLayer`] holds a preflight to
    /// the token too, since the app's service would receive it.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.rules.bearer_token = Some(token.into());
        self
    }

    /// How long a client may take to send a request's headers, how long a
    /// kept-alive connection may stay idle between requests (standalone
    /// server only, [`Server::serve_http`]), and how long a body that is
    /// read whole may stall between two chunks (`408`) (default 10 s).
    /// A streaming session's body may idle as long as the client likes.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// How long a write to a connection may wait for its client to read
    /// (standalone server only, [`Server::serve_http`]; default 60 s): a
    /// client that reads nothing of a response or stream for that long,
    /// while the server has more to send, is cut off, and what the server
    /// held for it is freed. An idle stream writes nothing, and is not cut
    /// off for that.
    pub fn send_timeout(mut self, timeout: Duration) -> Self {
        self.send_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How long a body that is read whole (a single exchange) may take to
    /// arrive in all, however steadily it trickles (default 30 s); past it
    /// the request gets `408` and the connection is closed.
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// How many connections the standalone server keeps open at once
    /// (default 1024); past it, it accepts no more until one closes. See
    /// also [`max_connections_per_peer`](Self::max_connections_per_peer).
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// How many connections the standalone server keeps open at once from
    /// one peer address (default: a quarter of
    /// [`max_connections`](Self::max_connections), at least 1; an IPv6
    /// peer counts by its /64); past it a new connection from that address
    /// gets `429` with `Retry-After` and is closed, so that one client
    /// cannot take every connection. A reverse proxy trusted with
    /// [`trust_proxy`](Self::trust_proxy) is not held to it: its
    /// connections carry many clients.
    pub fn max_connections_per_peer(mut self, connections: usize) -> Self {
        self.max_connections_per_peer = Some(connections.max(1));
        self
    }

    /// How many long-lived streams (MCP v1.0 streaming sessions, Model
    /// Context Protocol `GET` streams, 2026-07-28 `subscriptions/listen`
    /// streams) may be open at once (default 512,
    /// half the connection limit, so that idle streams cannot take every
    /// connection from single exchanges); past it a new one gets `503` with
    /// `Retry-After`.
    pub fn max_streams(mut self, streams: usize) -> Self {
        self.max_streams = streams.max(1);
        self
    }

    /// How many long-lived streams one principal may hold open at once
    /// (default: a quarter of [`max_streams`](Self::max_streams), at
    /// least 1); past it a new one gets `429` with `Retry-After`. A
    /// principal is a verified token's issuer, subject and client, or,
    /// without OAuth, the client's address: the peer's ([`PeerAddr`]), or,
    /// from a reverse proxy trusted with [`trust_proxy`](Self::trust_proxy),
    /// the one it names.
    pub fn max_streams_per_principal(mut self, streams: usize) -> Self {
        self.max_streams_per_principal = Some(streams.max(1));
        self
    }

    /// How many Model Context Protocol sessions one principal may hold at
    /// once on this endpoint (default: a quarter of
    /// [`max_sessions`](Self::max_sessions), at least 1); past it
    /// `initialize` gets `429` with `Retry-After`. With a bus that shares
    /// sessions, a copy of another process's session that this process
    /// adopts for the principal counts too (past the bound, the request
    /// gets `429`). A principal is counted as for
    /// [`max_streams_per_principal`](Self::max_streams_per_principal).
    pub fn max_sessions_per_principal(mut self, sessions: usize) -> Self {
        self.max_sessions_per_principal = Some(sessions.max(1));
        self
    }

    /// How many Model Context Protocol sessions (`Mcp-Session-Id`) may live
    /// at once (default 1024), copies adopted from other processes
    /// included; past it `initialize`, or a request for a session this
    /// process would adopt, gets `503` with `Retry-After` until one ends
    /// (`DELETE`) or expires.
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions.max(1);
        self
    }

    /// How long a Model Context Protocol session may stay idle — no request,
    /// nothing in flight, no `GET` stream open — before it ends (default
    /// 30 minutes); a later request with its id gets `404`.
    pub fn session_idle_timeout(mut self, timeout: Duration) -> Self {
        self.session_idle_timeout = timeout;
        self
    }

    /// Makes the endpoint an OAuth resource server (feature `oauth`,
    /// docs/oauth.md): it serves its protected-resource metadata, and every
    /// request — both dialects, `POST`, `GET` and `DELETE` — must carry a
    /// bearer token the [`OAuth`](crate::oauth::OAuth) settings' verifier
    /// accepts, else `401` with a challenge; a token without a scope the
    /// endpoint or the request's item needs gets `403`. A Model Context
    /// Protocol session then belongs to the principal that opened it.
    /// (A static [`bearer_token`](Self::bearer_token), if also set, is
    /// checked too: set one or the other.)
    #[cfg(feature = "oauth")]
    pub fn oauth(mut self, oauth: crate::oauth::OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// After how long without a message a server-sent event stream gets a
    /// keep-alive comment line (default 15 s).
    pub fn sse_keep_alive(mut self, interval: Duration) -> Self {
        self.sse_keep_alive = interval.max(Duration::from_millis(10));
        self
    }
}

/// The MCP endpoint — both dialects on one path — as a tower `Service` (for
/// axum: `Router::new().nest_service("/mcp", server.http_service(config))`)
/// and a hyper [`Service`](hyper::service::Service); or let
/// [`Server::serve_http`] run it alone. Cheap to clone.
///
/// ```
/// # fn app(server: clawmcp::Server) {
/// use clawmcp::transport::{HttpConfig, McpService};
///
/// fn assert_tower<S: tower_service::Service<http::Request<String>>>(_: &S) {}
/// let mcp: McpService = server.http_service(HttpConfig::default());
/// assert_tower(&mcp);
/// # }
/// ```
#[derive(Clone)]
pub struct McpService(Arc<ServiceParts>);

/// What an [`McpService`] shares among its clones: one reference count per
/// request (hyper and tower clone the service for each), not one per part.
struct ServiceParts {
    server: Server,
    config: Arc<HttpConfig>,
    /// Which `Host` names are accepted.
    host_rule: HostRule,
    /// Free slots for long-lived streams.
    streams: Arc<Semaphore>,
    /// The long-lived streams each principal holds.
    stream_quota: Arc<quota::Quota>,
    /// The Model Context Protocol's sessions.
    sessions: Arc<Sessions>,
    /// `Host` and `Origin` values that passed the checks.
    accepted: Arc<Accepted>,
    /// Cancelled when a standalone server shuts down (or the server's
    /// handle does): sessions drain and end once their replies are written.
    stop: Arc<CancellationToken>,
    /// The OAuth gate, when the endpoint verifies tokens.
    #[cfg(feature = "oauth")]
    gate: Option<auth::Gate>,
}

impl std::fmt::Debug for McpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpService")
            .field("config", &self.0.config)
            .finish()
    }
}

impl Server {
    /// The HTTP endpoint of this server, as a hyper service. Mounted in an
    /// app, it cannot know the address it is served on, so it accepts only
    /// loopback `Host` names unless configured otherwise
    /// ([`HttpConfig::allow_host`], [`HttpConfig::allow_any_host`]).
    pub fn http_service(&self, config: HttpConfig) -> McpService {
        self.http_service_on(config, None)
    }

    /// The service for a listener on `local` (`None`: unknown).
    fn http_service_on(&self, config: HttpConfig, local: Option<std::net::IpAddr>) -> McpService {
        let host_rule = if config.any_host {
            HostRule::Any
        } else if !config.rules.hosts.is_empty() || local.is_none_or(guard::is_loopback_ip) {
            HostRule::Listed
        } else {
            HostRule::Any
        };
        #[cfg(feature = "oauth")]
        let gate = config
            .oauth
            .clone()
            .map(|oauth| auth::Gate::new(oauth, self));
        McpService(Arc::new(ServiceParts {
            #[cfg(feature = "oauth")]
            gate,
            server: self.clone(),
            streams: Arc::new(Semaphore::new(config.max_streams)),
            stream_quota: quota::Quota::new(
                config
                    .max_streams_per_principal
                    .unwrap_or(config.max_streams / 4),
            ),
            sessions: Sessions::new(
                config.max_sessions,
                config
                    .max_sessions_per_principal
                    .unwrap_or(config.max_sessions / 4),
                config.session_idle_timeout,
                self,
            ),
            accepted: Arc::default(),
            config: Arc::new(config),
            host_rule,
            stop: Arc::new(self.handle().stop_token().child_token()),
        }))
    }
}

impl<B> hyper::service::Service<Request<B>> for McpService
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: std::fmt::Display,
{
    type Response = Response<McpBody>;
    type Error = Infallible;
    type Future = Responding;

    fn call(&self, request: Request<B>) -> Self::Future {
        let service = self.clone();
        Box::pin(async move { Ok(service.respond(request).await) })
    }
}

/// A response under way, as both the hyper and the tower `Service` give it.
type Responding = Pin<Box<dyn Future<Output = Result<Response<McpBody>, Infallible>> + Send>>;

/// What is left of a request's body once its response is ready.
pub(super) enum Leftover<B> {
    /// Read to its end (or handed to a session that reads it).
    Done,
    /// Not read, or not to its end: drained before the connection is
    /// reused, or the connection is closed.
    Unread(Pin<Box<B>>),
    /// Unusable (a read failed, stalled or went over the limit): the
    /// connection is closed after the response.
    Broken,
}

impl<B> tower_service::Service<Request<B>> for McpService
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: std::fmt::Display,
{
    type Response = Response<McpBody>;
    type Error = Infallible;
    type Future = Responding;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Infallible>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let service = self.clone();
        Box::pin(async move { Ok(service.respond(request).await) })
    }
}

impl McpService {
    /// Answers one HTTP request (docs/mcp-v1.md §8, docs/model-context.md §5): for an
    /// application that routes requests itself and hands this endpoint's to
    /// it. (In a tower-based app such as axum, mount the service itself:
    /// it is a tower `Service`.)
    ///
    /// A response sent before the request's body was read to its end
    /// either drains the rest (up to the message limit, within the
    /// header-read timeout) so the connection can be reused, or carries
    /// `Connection: close`: a client reusing the connection never meets a
    /// reset it was not told of.
    pub async fn respond<B>(&self, request: Request<B>) -> Response<McpBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: std::fmt::Display,
    {
        self.respond_to(request, None).await
    }

    /// [`respond`](Self::respond), for a request that came on a connection
    /// from `peer` (the endpoint's own server knows it; a request without
    /// one is counted by the `PeerAddr` in its extensions, if any).
    pub(super) async fn respond_to<B>(
        &self,
        request: Request<B>,
        peer: Option<PeerAddr>,
    ) -> Response<McpBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: std::fmt::Display,
    {
        let (parts, body) = request.into_parts();
        let mut head = Head {
            parts,
            peer: peer.map(|p| p.0),
            forwarded_for: None,
        };
        let trusted = &self.0.config.trusted_proxies;
        if !trusted.is_empty() {
            head.forwarded_for = head
                .peer_addr()
                .and_then(|peer| trusted.client(peer.ip(), &head.headers));
        }
        // Shared with the request's work (its context's HTTP headers).
        let parts = Arc::new(head);
        let (mut response, leftover) = self.answer(&parts, Box::pin(body)).await;
        let keep = match leftover {
            Leftover::Done => true,
            Leftover::Broken => false,
            Leftover::Unread(body) => self.discard(&parts, body).await,
        };
        if !keep {
            response
                .headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }

    async fn answer<B>(
        &self,
        parts: &Arc<Head>,
        body: Pin<Box<B>>,
    ) -> (Response<McpBody>, Leftover<B>)
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: std::fmt::Display,
    {
        #[cfg(feature = "oauth")]
        if let Some(gate) = &self.0.gate {
            if let Some(response) = gate.metadata_response(parts) {
                return (response, Leftover::Unread(body));
            }
            // Another resource's metadata, or any other well-known
            // document, is not here: clients try the next URL on a 404
            // only.
            if parts.uri.path().starts_with("/.well-known/") {
                let response = plain(StatusCode::NOT_FOUND, "no such well-known document here");
                return (response, Leftover::Unread(body));
            }
        }
        if self
            .0
            .config
            .path
            .as_ref()
            .is_some_and(|path| parts.uri.path() != path)
        {
            let response = plain(
                StatusCode::NOT_FOUND,
                "not found: the MCP endpoint is elsewhere",
            );
            return (response, Leftover::Unread(body));
        }
        let checked = self.0.config.rules.check(
            guard::Asked::of(&parts.method, &parts.headers, &parts.uri, parts.version),
            self.0.host_rule,
            &self.0.accepted,
            guard::Preflights::Answered,
        );
        let guard::Passed { origin, preflight } = match checked {
            Ok(passed) => passed,
            // The connection's fate is `respond_to`'s: the body is drained
            // or the connection closed.
            Err(refusal) => return (layer::refused(&refusal, false), Leftover::Unread(body)),
        };
        let (mut response, leftover) = match origin {
            Some(origin) if preflight => (cors::preflight(parts, origin), Leftover::Unread(body)),
            _ => self.past_checks(parts, body).await,
        };
        // A browser page of an allowed origin may read every answer.
        if let Some(origin) = origin
            && !preflight
        {
            cors::allow(response.headers_mut(), origin);
        }
        (response, leftover)
    }

    /// A request past the `Host` and `Origin` checks: its caller, then the
    /// method's answer.
    async fn past_checks<B>(
        &self,
        parts: &Arc<Head>,
        body: Pin<Box<B>>,
    ) -> (Response<McpBody>, Leftover<B>)
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: std::fmt::Display,
    {
        let caller = match self.caller(parts).await {
            Ok(caller) => caller,
            Err(refusal) => return (refusal, Leftover::Unread(body)),
        };
        let dialects = self.0.server.inner().protocols;
        let head = sniff::head(parts);
        let verdict = dialects.by_head(&head);
        if head.version_repeated {
            // (The 2026-07-28 revision answers a header it cannot hold to
            // the body in JSON, so that a client knows the revision.)
            let response = match verdict.protocol {
                ByHead::Revision2026 => revision_2026::repeated_version(),
                _ => plain(
                    StatusCode::BAD_REQUEST,
                    "a request carries at most one MCP-Protocol-Version header",
                ),
            };
            return (response, Leftover::Unread(body));
        }
        match parts.method {
            Method::POST => {}
            Method::GET | Method::DELETE if verdict.protocol == ByHead::Revision2026 => {
                return (revision_2026::not_allowed(), Leftover::Unread(body));
            }
            Method::GET if verdict.protocol == ByHead::ModelContext => {
                return (
                    self.streamable_get(parts, &caller, verdict.version).await,
                    Leftover::Unread(body),
                );
            }
            // (Without a session id: 400, as a session request without one.)
            Method::DELETE if verdict.protocol == ByHead::ModelContext => {
                return (
                    self.streamable_delete(parts, &caller, verdict.version)
                        .await,
                    Leftover::Unread(body),
                );
            }
            _ => {
                let allow = if dialects.model_context() {
                    "GET, POST, DELETE"
                } else {
                    "POST"
                };
                let mut response = plain(
                    StatusCode::METHOD_NOT_ALLOWED,
                    &format!("the MCP endpoint takes {allow}"),
                );
                response
                    .headers_mut()
                    .insert(ALLOW, HeaderValue::from_static(allow));
                return (response, Leftover::Unread(body));
            }
        }
        // (A repeated Content-Type says no one type.)
        if !is_json(guard::one_of(&parts.headers, &CONTENT_TYPE).ok().flatten()) {
            let response = plain(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Content-Type must be application/json",
            );
            return (response, Leftover::Unread(body));
        }
        self.post(parts, body, verdict, &caller).await
    }

    /// Who sent the request: its verified principal, when the endpoint
    /// verifies tokens (else the response that refuses it), and its head.
    async fn caller(&self, parts: &Arc<Head>) -> Result<Caller, Response<McpBody>> {
        #[cfg(feature = "oauth")]
        let principal = match &self.0.gate {
            Some(gate) => Some(
                gate.authenticate(parts)
                    .await
                    .map_err(|r| r.response(parts))?,
            ),
            None => None,
        };
        #[cfg(not(feature = "oauth"))]
        let principal = None;
        // (Work reads the head through `RequestHeaders`, which never shows
        // the token: docs/oauth.md §6.)
        Ok(Caller {
            principal,
            head: Some(parts.clone()),
            revocation: None,
        })
    }

    /// The response for a request whose item needs `needed` scopes its
    /// token lacks, sent in place of `reply` (its JSON-RPC error) where
    /// the endpoint can challenge.
    pub(super) fn forbidden(
        &self,
        parts: &Parts,
        needed: &[String],
        reply: Vec<u8>,
    ) -> Response<McpBody> {
        #[cfg(feature = "oauth")]
        if let Some(gate) = &self.0.gate {
            return gate.forbidden(parts, needed);
        }
        let _ = (parts, needed);
        json(StatusCode::FORBIDDEN, reply)
    }

    /// Reads what is left of a body the response did not need, so that the
    /// connection can serve the next request; `false` when that is not
    /// possible (the client waits for `100 Continue`, the body is over the
    /// message limit, it stalls past the header-read timeout, or it fails).
    async fn discard<B>(&self, parts: &Parts, mut body: Pin<Box<B>>) -> bool
    where
        B: Body<Data = Bytes>,
        B::Error: std::fmt::Display,
    {
        if body.is_end_stream() {
            return true;
        }
        if parts
            .headers
            .get(EXPECT)
            .is_some_and(|e| e.as_bytes().eq_ignore_ascii_case(b"100-continue"))
        {
            // The client has not sent its body: it waits to be told to.
            return false;
        }
        let limit = self.0.server.max_message_size();
        let deadline = crate::poll::deadline_in(self.0.config.header_read_timeout);
        let mut seen = 0usize;
        loop {
            match tokio::time::timeout_at(deadline, next_data(&mut body)).await {
                Ok(None) => return true,
                Ok(Some(Ok(data))) => {
                    seen = seen.saturating_add(data.len());
                    if seen > limit {
                        return false;
                    }
                }
                Ok(Some(Err(_))) | Err(_) => return false,
            }
        }
    }
}

/// `MCP-Protocol-Version`.
const PROTOCOL_VERSION: http::HeaderName = http::HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method` (2026-07-28).
const MCP_METHOD: http::HeaderName = http::HeaderName::from_static("mcp-method");

/// An SSE response: not cached, and not buffered by a proxy (nginx reads
/// `X-Accel-Buffering`).
fn sse(body: McpBody) -> Response<McpBody> {
    Response::builder()
        .status(StatusCode::OK)
        .header(CONTENT_TYPE, "text/event-stream")
        .header(CACHE_CONTROL, "no-cache")
        .header("x-accel-buffering", "no")
        .body(body)
        .unwrap_or_default()
}

/// `503` with `Retry-After` when every long-lived stream slot of the
/// endpoint is taken; `429` with `Retry-After` when the principal holds
/// its most.
fn too_many_streams(why: &quota::NoSlot) -> Response<McpBody> {
    match why {
        quota::NoSlot::Endpoint => retry_later(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many streams are open; try again later",
            "1",
        ),
        quota::NoSlot::Principal => retry_later(
            StatusCode::TOO_MANY_REQUESTS,
            "you hold as many open streams as one client may \
             (max_streams_per_principal); close one, or try again later",
            "1",
        ),
    }
}

impl McpService {
    /// A long-lived event stream of `messages`, opened by `caller` in
    /// `slot`: it ends at shutdown, or once the caller's token is revoked
    /// (`watch_token`), and gives the slot back when it ends.
    fn long_lived_sse(
        &self,
        caller: &Caller,
        mut slot: quota::StreamSlot,
        messages: impl Into<body::Feed>,
    ) -> Response<McpBody> {
        let stop = self.0.stop.child_token();
        self.watch_token(caller, &mut slot, {
            let stop = stop.clone();
            move || stop.cancel()
        });
        sse(McpBody::sse(
            None,
            messages,
            self.0.config.sse_keep_alive,
            stop,
            Some(slot),
        ))
    }

    /// Watches the token of a long-lived stream opened by `caller`, while
    /// `slot` is held: `revoked` runs at the token's expiry, or once the
    /// issuer says it is no longer active; it is asked again as often as
    /// the verifier's answers are remembered (an issuer that cannot be
    /// asked leaves the stream open until it can). Nothing to watch
    /// without OAuth.
    fn watch_token(
        &self,
        caller: &Caller,
        slot: &mut quota::StreamSlot,
        revoked: impl FnOnce() + Send + 'static,
    ) {
        #[cfg(feature = "oauth")]
        {
            let Some(gate) = self.0.gate.as_ref() else {
                return;
            };
            let every = gate.recheck_every();
            let expires = caller
                .principal
                .as_deref()
                .and_then(crate::Principal::expires_at);
            let (Some(parts), true) = (caller.head.clone(), every.is_some() || expires.is_some())
            else {
                return;
            };
            let done = CancellationToken::new();
            slot.on_end({
                let done = done.clone();
                move || done.cancel()
            });
            let service = self.clone();
            tokio::spawn(async move {
                let expiry = async {
                    match expires {
                        Some(at) => {
                            let left = at.duration_since(std::time::SystemTime::now());
                            tokio::time::sleep(left.unwrap_or_default()).await;
                        }
                        None => std::future::pending().await,
                    }
                };
                tokio::pin!(expiry);
                loop {
                    let tick = async {
                        match every {
                            Some(every) => tokio::time::sleep(every).await,
                            None => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        () = done.cancelled() => return,
                        () = &mut expiry => break,
                        () = tick => {}
                    }
                    let Some(gate) = service.0.gate.as_ref() else {
                        return;
                    };
                    if gate.still_active(&parts).await == Some(false) {
                        break;
                    }
                }
                tracing::debug!("a long-lived stream's token is no longer active");
                revoked();
            });
        }
        #[cfg(not(feature = "oauth"))]
        let _ = (caller, slot, revoked);
    }

    /// A long-lived stream's slot for `caller`, or why there is none
    /// ([`too_many_streams`] answers it).
    fn stream_slot(&self, caller: &Caller) -> Result<quota::StreamSlot, quota::NoSlot> {
        quota::StreamSlot::take(&self.0.streams, &self.0.stream_quota, caller)
    }
}

/// A refusal to try again after `seconds`: [`plain`] with `Retry-After`.
fn retry_later(status: StatusCode, text: &str, seconds: &'static str) -> Response<McpBody> {
    let mut response = plain(status, text);
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from_static(seconds));
    response
}

fn plain(status: StatusCode, text: &str) -> Response<McpBody> {
    Response::builder()
        .status(status)
        .header(CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(McpBody::full(format!("{text}\n")))
        .unwrap_or_default()
}

/// A JSON response: built in place, with a static header value (a builder
/// and a `&str` value each cost a copy or a check on every reply).
fn json(status: StatusCode, body: Vec<u8>) -> Response<McpBody> {
    let mut response = Response::new(McpBody::full(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// `application/json`, with any parameters.
fn is_json(content_type: Option<&HeaderValue>) -> bool {
    content_type.is_some_and(|value| {
        let value = value.as_bytes();
        let media = memchr::memchr(b';', value)
            .and_then(|end| value.get(..end))
            .unwrap_or(value);
        media.trim_ascii().eq_ignore_ascii_case(b"application/json")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types() {
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON;charset=UTF-8",
        ] {
            assert!(is_json(Some(&HeaderValue::from_static(ok))), "{ok}");
        }
        for bad in [
            "text/plain",
            "application/jsonl",
            "application/x-www-form-urlencoded",
            "application/json-patch+json",
            "; application/json",
        ] {
            assert!(!is_json(Some(&HeaderValue::from_static(bad))), "{bad}");
        }
        assert!(!is_json(None));
    }

    #[test]
    fn configured_origins_are_normalised() {
        let config = HttpConfig::default()
            .allow_origin("HTTPS://App.Example.com:443/")
            .allow_origin("Tools.Example.org");
        assert_eq!(
            config.rules.origins,
            ["https://app.example.com", "tools.example.org"]
        );
    }
}
