//! The endpoint's guards as a tower layer (`GuardLayer`) on an app's own
//! routes: the same `Host`, `Origin` and bearer rules as the MCP endpoint,
//! refusals that never reach the route, and a refused request with a body
//! left unread closes its connection.
#![cfg(feature = "http")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::body::Body;
use axum::routing::{get, post};
use clawmcp::transport::{GuardLayer, HttpConfig};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use tower_service::Service;

/// An app with `/` behind the guard of `config`, and how often the route ran.
fn app(config: &HttpConfig) -> (Router, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let counted = move || {
        let seen = seen.clone();
        async move {
            seen.fetch_add(1, Ordering::SeqCst);
            "ok"
        }
    };
    let router = Router::new()
        .route("/", get(counted.clone()))
        .route("/", post(counted))
        .layer(GuardLayer::new(config));
    (router, calls)
}

async fn send(app: &mut Router, request: Request<Body>) -> (Response<Body>, String) {
    std::future::poll_fn(|cx| <Router as Service<Request<Body>>>::poll_ready(app, cx))
        .await
        .unwrap();
    let response = app.call(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    (
        Response::from_parts(parts, Body::empty()),
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

fn get_with(headers: &[(&str, &str)]) -> Request<Body> {
    let mut request = Request::get("/");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.body(Body::empty()).unwrap()
}

#[tokio::test]
async fn loopback_requests_reach_the_route() {
    let (mut app, calls) = app(&HttpConfig::default());
    for host in ["127.0.0.1:8080", "localhost", "[::1]:3000"] {
        let (response, body) = send(&mut app, get_with(&[("host", host)])).await;
        assert_eq!(response.status(), StatusCode::OK, "{host}");
        assert_eq!(body, "ok");
    }
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_foreign_host_or_origin_is_refused_before_the_route_runs() {
    let (mut app, calls) = app(&HttpConfig::default());
    let (response, body) = send(&mut app, get_with(&[("host", "evil.example")])).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert!(body.contains("Host is not allowed"), "{body}");
    let (response, body) = send(
        &mut app,
        get_with(&[("host", "localhost"), ("origin", "https://evil.example")]),
    )
    .await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert!(body.contains("Origin is not allowed"), "{body}");
    // A name that only looks like loopback is not taken for it.
    let (response, _) = send(&mut app, get_with(&[("host", "127.0.0.1.evil.example")])).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn allowed_hosts_and_origins_are_passed_on() {
    let config = HttpConfig::default()
        .allow_host("mcp.example.com")
        .allow_origin("https://app.example.com");
    let (mut app, calls) = app(&config);
    let (response, _) = send(
        &mut app,
        get_with(&[
            ("host", "mcp.example.com"),
            ("origin", "https://app.example.com"),
        ]),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let (response, _) = send(&mut app, get_with(&[("host", "other.example.com")])).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_bearer_token_is_required_when_configured() {
    let (mut app, calls) = app(&HttpConfig::default().bearer_token("s3cret"));
    for authorization in [None, Some("Bearer wrong"), Some("Basic czNjcmV0")] {
        let mut headers = vec![("host", "localhost")];
        headers.extend(authorization.map(|a| ("authorization", a)));
        let (response, _) = send(&mut app, get_with(&headers)).await;
        assert_eq!(
            response.status(),
            StatusCode::UNAUTHORIZED,
            "{authorization:?}"
        );
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
    }
    let (response, _) = send(
        &mut app,
        get_with(&[("host", "localhost"), ("authorization", "Bearer s3cret")]),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// Behind the layer a CORS preflight needs the token like any request: the
/// inner service would receive it (an app answers preflights with a CORS
/// layer outside this one).
#[tokio::test]
async fn a_cors_preflight_needs_the_token_behind_the_layer() {
    let (mut app, calls) = app(&HttpConfig::default().bearer_token("s3cret"));
    let options = |headers: &[(&str, &str)]| {
        let mut request = Request::options("/");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(Body::empty()).unwrap()
    };
    let preflight = [
        ("host", "localhost"),
        ("origin", "http://localhost:3000"),
        ("access-control-request-method", "POST"),
    ];
    let (response, _) = send(&mut app, options(&preflight)).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let mut with_token = preflight.to_vec();
    with_token.push(("authorization", "Bearer s3cret"));
    let (response, _) = send(&mut app, options(&with_token)).await;
    assert_eq!(
        response.status(),
        StatusCode::METHOD_NOT_ALLOWED,
        "with the token it reaches the app, which has no OPTIONS route"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn malformed_host_headers_are_bad_requests() {
    let (mut app, _) = app(&HttpConfig::default());
    let (response, _) = send(
        &mut app,
        get_with(&[("host", "localhost"), ("host", "127.0.0.1")]),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_refusal_with_an_unread_body_closes_the_connection() {
    let (mut app, _) = app(&HttpConfig::default());
    let request = Request::post("/")
        .header("host", "evil.example")
        .body(Body::from("{\"jsonrpc\":\"2.0\"}"))
        .unwrap();
    let (response, _) = send(&mut app, request).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert_eq!(response.headers()["connection"], "close");
    // Without a body there is nothing to drain: the connection is reused.
    let (response, _) = send(&mut app, get_with(&[("host", "evil.example")])).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert!(!response.headers().contains_key("connection"));
}
