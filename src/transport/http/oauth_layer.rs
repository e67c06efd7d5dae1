//! The endpoint's OAuth gate as a tower [`Layer`], for an app's own routes
//! beside the MCP endpoint (feature `oauth`): the same verification, the
//! same challenges, and the verified [`Principal`] in the request's
//! extensions for the route's handler.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response};
use tower_layer::Layer;
use tower_service::Service;

use super::auth::Gate;
use crate::oauth::OAuth;
use crate::principal::Principal;
use crate::server::Server;

/// A tower [`Layer`] that passes a request on only with a bearer token the
/// [`OAuth`] settings' verifier accepts and the scopes they require, and
/// hands the route an `Arc<Principal>` in the request's extensions (axum:
/// `Extension<Arc<Principal>>`). A refused request gets the endpoint's
/// challenge (`401`, `403` or `503`, with `WWW-Authenticate`) and never
/// reaches the inner service. `server` lends its scope hierarchy
/// ([`ServerBuilder::scope_grants`](crate::ServerBuilder::scope_grants))
/// and its name for the metadata.
///
/// ```
/// use std::sync::Arc;
/// use axum::{Extension, Router, routing::get};
/// use clawmcp::{Principal, Server};
/// use clawmcp::oauth::OAuth;
/// use clawmcp::transport::OAuthLayer;
///
/// # fn app(server: &Server) -> Router {
/// let oauth = OAuth::jwt("https://mcp.example.com/mcp", "https://auth.example.com/");
/// Router::new()
///     .route(
///         "/api/me",
///         get(|Extension(who): Extension<Arc<Principal>>| async move {
///             who.subject().unwrap_or("nobody").to_owned()
///         }),
///     )
///     .layer(OAuthLayer::new(server, oauth))
/// # }
/// ```
#[derive(Clone)]
pub struct OAuthLayer(Arc<Gate>);

impl std::fmt::Debug for OAuthLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthLayer").finish_non_exhaustive()
    }
}

impl OAuthLayer {
    /// The gate of `oauth`, with `server`'s scope rules.
    pub fn new(server: &Server, oauth: OAuth) -> Self {
        Self(Arc::new(Gate::new(oauth, server)))
    }
}

impl<S> Layer<S> for OAuthLayer {
    type Service = OAuthGuard<S>;

    fn layer(&self, inner: S) -> OAuthGuard<S> {
        OAuthGuard {
            inner,
            gate: self.0.clone(),
        }
    }
}

/// The service [`OAuthLayer`] wraps around an inner one.
#[derive(Clone)]
pub struct OAuthGuard<S> {
    inner: S,
    gate: Arc<Gate>,
}

impl<S> std::fmt::Debug for OAuthGuard<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthGuard").finish_non_exhaustive()
    }
}

/// The response of an [`OAuthGuard`], under way.
pub type OAuthGuarded<R, E> = Pin<Box<dyn Future<Output = Result<Response<R>, E>> + Send>>;

impl<S, B, R> Service<Request<B>> for OAuthGuard<S>
where
    S: Service<Request<B>, Response = Response<R>> + Clone + Send + 'static,
    S::Future: Send,
    B: Send + 'static,
    R: From<String> + Send + 'static,
{
    type Response = Response<R>;
    type Error = S::Error;
    type Future = OAuthGuarded<R, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // The service polled ready goes with this request; its clone stays
        // for the next (tower's usual hand-over).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let gate = self.gate.clone();
        Box::pin(async move {
            let (mut parts, body) = request.into_parts();
            match gate.authenticate(&parts).await {
                Ok(principal) => {
                    parts.extensions.insert::<Arc<Principal>>(principal);
                    inner.call(Request::from_parts(parts, body)).await
                }
                Err(refused) => Ok(refused.response(&parts)),
            }
        })
    }
}
