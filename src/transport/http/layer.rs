//! The endpoint's guards as a tower [`Layer`]: the `Host` and `Origin`
//! checks (DNS-rebinding defence) and the bearer token, the same ones the
//! MCP endpoint makes, for an app's own routes beside it — an axum
//! `Router`, or any tower service over `http` requests.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::{CONNECTION, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use http::{Request, Response, StatusCode};
use http_body::Body;
use tower_layer::Layer;
use tower_service::Service;

use super::HttpConfig;
use super::guard::{Accepted, Asked, HostRule, Preflights, Refusal, Rules};

/// A tower [`Layer`] that passes a request on only when its `Host` and
/// `Origin` are allowed and, if a token is configured, it carries
/// `Authorization: Bearer <token>` — the checks of the MCP endpoint, from
/// the same [`HttpConfig`] settings ([`allow_origin`](HttpConfig::allow_origin),
/// [`allow_host`](HttpConfig::allow_host),
/// [`allow_any_host`](HttpConfig::allow_any_host),
/// [`bearer_token`](HttpConfig::bearer_token)). Every request needs the
/// token, a CORS preflight too, since the inner service would receive it:
/// browsers send no credentials on a preflight, so a route that pages call
/// needs a CORS layer *outside* this one, which answers the preflight
/// before the guard sees it. A refused request gets
/// 400, 403 or 401 (with `WWW-Authenticate: Bearer`) and a one-line text
/// body, never reaches the inner service, and — when it has a body left
/// unread — carries `Connection: close`. As for a mounted endpoint, only
/// loopback `Host` names are accepted unless hosts are allowed.
///
/// ```
/// use axum::{Router, routing::get};
/// use clawmcp::transport::{GuardLayer, HttpConfig};
///
/// let config = HttpConfig::default().bearer_token("s3cret");
/// let app: Router = Router::new()
///     .route("/admin", get(|| async { "ok" }))
///     .layer(GuardLayer::new(&config));
/// # let _ = app;
/// ```
#[derive(Debug, Clone)]
pub struct GuardLayer(Arc<GuardRules>);

#[derive(Debug)]
struct GuardRules {
    rules: Rules,
    host_rule: HostRule,
    accepted: Accepted,
}

impl GuardLayer {
    /// The guard of `config`'s origin, host and bearer settings.
    pub fn new(config: &HttpConfig) -> Self {
        let host_rule = if config.any_host {
            HostRule::Any
        } else {
            HostRule::Listed
        };
        Self(Arc::new(GuardRules {
            rules: config.rules.clone(),
            host_rule,
            accepted: Accepted::default(),
        }))
    }
}

impl<S> Layer<S> for GuardLayer {
    type Service = Guard<S>;

    fn layer(&self, inner: S) -> Guard<S> {
        Guard {
            inner,
            guard: self.0.clone(),
        }
    }
}

/// The service [`GuardLayer`] wraps around an inner one.
#[derive(Debug, Clone)]
pub struct Guard<S> {
    inner: S,
    guard: Arc<GuardRules>,
}

impl<S, B, R> Service<Request<B>> for Guard<S>
where
    S: Service<Request<B>, Response = Response<R>>,
    B: Body,
    R: From<String>,
{
    type Response = Response<R>;
    type Error = S::Error;
    type Future = Guarded<S::Future, R>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let guard = &self.guard;
        let verdict = guard.rules.check(
            Asked::of(
                request.method(),
                request.headers(),
                request.uri(),
                request.version(),
            ),
            guard.host_rule,
            &guard.accepted,
            Preflights::Guarded,
        );
        match verdict {
            Ok(_) => Guarded::Admitted {
                future: self.inner.call(request),
            },
            Err(refusal) => {
                let unread = !request.body().is_end_stream();
                Guarded::Refused {
                    response: Some(refused(&refusal, unread)),
                }
            }
        }
    }
}

pin_project_lite::pin_project! {
    /// The response to a request a [`Guard`] refused, or the inner
    /// service's.
    // (pin-project-lite takes no doc comments on an enum's fields; the
    // variants say what they hold.)
    #[project = GuardedProjection]
    #[allow(missing_docs)]
    pub enum Guarded<F, R> {
        /// The inner service's response, under way: `future`.
        Admitted {
            #[pin]
            future: F,
        },
        /// The refusal: `response`, until it is taken.
        Refused {
            response: Option<Response<R>>,
        },
    }
}

impl<F, R> std::fmt::Debug for Guarded<F, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Admitted { .. } => f.write_str("Guarded::Admitted"),
            Self::Refused { .. } => f.write_str("Guarded::Refused"),
        }
    }
}

impl<F, R, E> Future for Guarded<F, R>
where
    F: Future<Output = Result<Response<R>, E>>,
{
    type Output = Result<Response<R>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            GuardedProjection::Admitted { future } => future.poll(cx),
            // Taken once: a future is not polled again after `Ready`.
            GuardedProjection::Refused { response } => match response.take() {
                Some(response) => Poll::Ready(Ok(response)),
                None => Poll::Pending,
            },
        }
    }
}

/// The response for a refused request (`unread`: its body was not read to
/// its end, so the connection cannot be reused).
pub(super) fn refused<R: From<String>>(refusal: &Refusal, unread: bool) -> Response<R> {
    let (status, text) = match refusal {
        Refusal::BadRequest(why) => (StatusCode::BAD_REQUEST, *why),
        Refusal::Forbidden(why) => (StatusCode::FORBIDDEN, *why),
        Refusal::Unauthorized => (StatusCode::UNAUTHORIZED, "a valid bearer token is required"),
    };
    let mut response = Response::new(R::from(format!("{text}\n")));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    if matches!(refusal, Refusal::Unauthorized) {
        headers.insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    if unread {
        headers.insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
}
