//! CORS for browser clients of the endpoint (MCP Inspector, web hosts):
//! a page of an allowed origin (the `Origin` check, `guard`) may call the
//! endpoint and read its answers. Preflights are answered before any
//! token is asked for (a browser sends none with them); every answer to
//! an allowed origin names it and exposes the headers a client reads.

use http::HeaderMap;
use http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, ACCESS_CONTROL_REQUEST_HEADERS,
    HeaderValue, VARY,
};
use http::request::Parts;
use http::{Response, StatusCode};

use super::body::McpBody;

/// The headers a client of the endpoint reads.
const EXPOSED: HeaderValue =
    HeaderValue::from_static("Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate");

/// The answer to a preflight (`OPTIONS` with `Origin`) of an allowed
/// origin: every method of the endpoint, the headers it asks for.
pub(super) fn preflight(parts: &Parts, origin: &HeaderValue) -> Response<McpBody> {
    let mut response = Response::new(McpBody::empty());
    *response.status_mut() = StatusCode::NO_CONTENT;
    let headers = response.headers_mut();
    headers.insert(
        ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, DELETE"),
    );
    let asked = parts
        .headers
        .get(ACCESS_CONTROL_REQUEST_HEADERS)
        .cloned()
        .unwrap_or_else(|| HeaderValue::from_static("content-type"));
    headers.insert(ACCESS_CONTROL_ALLOW_HEADERS, asked);
    headers.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    allow(headers, origin);
    response
}

/// Lets `origin` (allowed already) read this answer.
pub(super) fn allow(headers: &mut HeaderMap, origin: &HeaderValue) {
    headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    headers.insert(ACCESS_CONTROL_EXPOSE_HEADERS, EXPOSED);
    let varies = headers
        .get_all(VARY)
        .iter()
        .any(|v| v.as_bytes().eq_ignore_ascii_case(b"origin"));
    if !varies {
        headers.append(VARY, HeaderValue::from_static("Origin"));
    }
}
