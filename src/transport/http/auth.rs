//! The endpoint's OAuth gate (docs/oauth.md): the protected-resource
//! metadata it serves, the bearer token every request must carry, and the
//! challenges for requests it refuses. Both dialects, and `POST`, `GET`
//! and `DELETE` alike, pass through [`Gate::authenticate`].

use std::sync::Arc;

use bytes::Bytes;
use http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, ACCESS_CONTROL_REQUEST_HEADERS,
    AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, HeaderValue, ORIGIN, RETRY_AFTER, VARY,
    WWW_AUTHENTICATE,
};
use http::request::Parts;
use http::{Method, Response, StatusCode};

use super::body::McpBody;
use super::guard::one_of;
use crate::engine::access::Access;
use crate::oauth::{Challenge, OAuth, VerifyError};
use crate::principal::Principal;
use crate::server::Server;

/// The least time between two verifications of one stream's token.
const RECHECK_AT_MOST_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// An endpoint's OAuth settings, resolved against its server.
pub(super) struct Gate {
    oauth: OAuth,
    /// The server's scope rules (its hierarchy hook among them).
    access: Access,
    /// The metadata document, encoded once.
    metadata: Bytes,
    /// Where it is served: the path-inserted URL and the root one.
    metadata_paths: [String; 2],
    metadata_url: String,
    /// The challenge of a request without a token.
    no_token: HeaderValue,
}

impl Gate {
    pub(super) fn new(mut oauth: OAuth, server: &Server) -> Self {
        let inner = server.inner();
        // The scopes the items need now (the metadata is made once: scopes
        // of items added later are not in it), and the rules that grant
        // scopes, which no edit changes.
        let listing = inner.listing();
        // Each endpoint remembers the tokens it verified for its own
        // audience: clones of one `OAuth` share nothing.
        oauth.verified = Default::default();
        let scopes_supported = oauth.scopes_supported.clone().unwrap_or_else(|| {
            let mut all = oauth.required.clone();
            for scope in listing.catalog.access.all_scopes() {
                if !all.contains(&scope) {
                    all.push(scope);
                }
            }
            all
        });
        let name = oauth
            .resource_name
            .clone()
            .unwrap_or_else(|| inner.info.name.clone());
        let document = crate::oauth::metadata_document(&oauth, &scopes_supported, &name);
        let metadata_url = oauth.metadata_url();
        let no_token = header_value(&Challenge::NoToken.header(&metadata_url, &oauth.required));
        Self {
            metadata: Bytes::from(document.to_string()),
            metadata_paths: [oauth.metadata_path(), crate::oauth::WELL_KNOWN.to_owned()],
            metadata_url,
            no_token,
            access: listing.catalog.access.clone(),
            oauth,
        }
    }

    /// The metadata response, when `parts` asks for it (any of its paths):
    /// readable from every origin (CORS `*`, no credentials involved).
    pub(super) fn metadata_response(&self, parts: &Parts) -> Option<Response<McpBody>> {
        let path = parts.uri.path();
        if !self.metadata_paths.iter().any(|p| p == path) {
            return None;
        }
        let mut response = match parts.method {
            Method::GET | Method::HEAD => {
                let body = if parts.method == Method::HEAD {
                    McpBody::empty()
                } else {
                    McpBody::full(self.metadata.to_vec())
                };
                let mut response = Response::new(body);
                let headers = response.headers_mut();
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                headers.insert(
                    CACHE_CONTROL,
                    HeaderValue::from_static("public, max-age=3600"),
                );
                response
            }
            Method::OPTIONS => {
                let mut response = Response::new(McpBody::empty());
                *response.status_mut() = StatusCode::NO_CONTENT;
                let headers = response.headers_mut();
                let asked = parts
                    .headers
                    .get(ACCESS_CONTROL_REQUEST_HEADERS)
                    .cloned()
                    .unwrap_or_else(|| HeaderValue::from_static("mcp-protocol-version"));
                headers.insert(ACCESS_CONTROL_ALLOW_HEADERS, asked);
                headers.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("86400"));
                response
            }
            _ => {
                let mut response = super::plain(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "the protected-resource metadata takes GET",
                );
                response.headers_mut().insert(
                    http::header::ALLOW,
                    HeaderValue::from_static("GET, HEAD, OPTIONS"),
                );
                response
            }
        };
        let headers = response.headers_mut();
        headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
        headers.insert(
            ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, HEAD, OPTIONS"),
        );
        Some(response)
    }

    /// The verified principal of the request's bearer token, or the
    /// refusal: `401` without a token (or with a bad one), `403` when it
    /// lacks the endpoint's required scopes, `503` when the authorization
    /// server cannot be asked.
    pub(super) async fn authenticate(&self, parts: &Parts) -> Result<Arc<Principal>, Refused> {
        self.authenticate_as(parts, false).await
    }

    /// [`authenticate`](Self::authenticate), asking the verifier again (`fresh`) whatever
    /// it answered before.
    async fn authenticate_as(&self, parts: &Parts, fresh: bool) -> Result<Arc<Principal>, Refused> {
        let token = match bearer(parts) {
            Bearer::Missing => return Err(self.challenge(&Challenge::NoToken)),
            Bearer::Malformed(why) => {
                return Err(self.challenge(&Challenge::InvalidToken(why.into())));
            }
            Bearer::Token(token) => token,
        };
        let verified = if fresh {
            self.oauth.principal_fresh(token).await
        } else {
            self.oauth.principal(token).await
        };
        let principal = match verified {
            Ok(principal) => principal,
            Err(VerifyError::Invalid(why)) => {
                tracing::debug!("a token was refused: {why}");
                return Err(self.challenge(&Challenge::InvalidToken(why)));
            }
            Err(error) => {
                tracing::warn!("a token could not be verified: {error}");
                return Err(Refused {
                    status: StatusCode::SERVICE_UNAVAILABLE,
                    challenge: None,
                    text: "the access token cannot be verified now (the authorization server \
                           is unavailable); try again later"
                        .into(),
                });
            }
        };
        if !self.access.allows(&principal, &self.oauth.required) {
            let needed = self.oauth.required.clone();
            return Err(self.challenge(&Challenge::InsufficientScope(needed)));
        }
        Ok(principal)
    }

    /// How often the token of a long-lived stream is verified again: as
    /// often as the verifier's answers are remembered (an introspecting
    /// verifier's `cache_answers_for`), but at most once a second, so that
    /// streams cannot flood the issuer; `None` for a verifier whose answers
    /// are not remembered (a JWT holds until its `exp`).
    pub(super) fn recheck_every(&self) -> Option<std::time::Duration> {
        self.oauth
            .verifier
            .cache_for()
            .map(|every| every.max(RECHECK_AT_MOST_EVERY))
    }

    /// Whether the token `parts` carries is still active, as the verifier
    /// says now (nothing remembered is taken for it): `Some(false)` when
    /// the issuer says it is not (or it expired), `None` when the issuer
    /// cannot be asked now.
    pub(super) async fn still_active(&self, parts: &Parts) -> Option<bool> {
        match self.authenticate_as(parts, true).await {
            Ok(_) => Some(true),
            Err(refused) if refused.status == StatusCode::SERVICE_UNAVAILABLE => None,
            Err(_) => Some(false),
        }
    }

    /// The `403` for a request whose item needs `needed`: the challenge
    /// names the endpoint's required scopes and the item's, every one.
    pub(super) fn forbidden(&self, parts: &Parts, needed: &[String]) -> Response<McpBody> {
        let mut all = self.oauth.required.clone();
        for scope in needed {
            if !all.contains(scope) {
                all.push(scope.clone());
            }
        }
        self.challenge(&Challenge::InsufficientScope(all))
            .response(parts)
    }

    /// A challenge: its status, its `WWW-Authenticate` and its text.
    fn challenge(&self, challenge: &Challenge) -> Refused {
        let status = match challenge {
            Challenge::InsufficientScope(_) => StatusCode::FORBIDDEN,
            _ => StatusCode::UNAUTHORIZED,
        };
        let value = match challenge {
            Challenge::NoToken => self.no_token.clone(),
            _ => header_value(&challenge.header(&self.metadata_url, &self.oauth.required)),
        };
        Refused {
            status,
            challenge: Some(value),
            text: challenge.text(),
        }
    }
}

/// A request the gate refused: what its response says.
#[derive(Debug)]
pub(super) struct Refused {
    status: StatusCode,
    /// `WWW-Authenticate` (none for a `503`).
    challenge: Option<HeaderValue>,
    text: String,
}

impl Refused {
    /// The response, in any body type that takes text, readable by a
    /// browser page of the request's (allowed) origin.
    pub(super) fn response<R: From<String>>(self, parts: &Parts) -> Response<R> {
        let mut response = Response::new(R::from(format!("{}\n", self.text)));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        match self.challenge {
            Some(challenge) => {
                headers.insert(WWW_AUTHENTICATE, challenge);
            }
            None => {
                headers.insert(RETRY_AFTER, HeaderValue::from_static("5"));
            }
        }
        expose_challenge(headers, parts);
        response
    }
}

/// Lets a browser page of an allowed origin (the request passed the
/// `Origin` check) read a refusal and its challenge.
pub(super) fn expose_challenge(headers: &mut http::HeaderMap, parts: &Parts) {
    headers.insert(
        ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("WWW-Authenticate"),
    );
    if let Some(origin) = parts.headers.get(ORIGIN) {
        headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
        headers.insert(VARY, HeaderValue::from_static("Origin"));
    }
}

fn header_value(text: &str) -> HeaderValue {
    HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}

/// What a request's `Authorization` says.
enum Bearer<'a> {
    Missing,
    Malformed(&'static str),
    Token(&'a [u8]),
}

/// The longest bearer token read: longer ones are refused before any
/// verifier (or issuer) sees them. Issuers' access tokens take a few KiB
/// at most (and a proxy's header buffer is often 8 KiB).
pub(crate) const MAX_TOKEN_BYTES: usize = 16 << 10;

/// RFC 6750 §2.1: exactly one `Authorization: Bearer <token>` (the scheme
/// in any case), of at most [`MAX_TOKEN_BYTES`]. Tokens in the query or
/// the body are not looked at. Read as bytes: a remembered token is found
/// without a UTF-8 check of it.
fn bearer(parts: &Parts) -> Bearer<'_> {
    let value = match one_of(&parts.headers, &AUTHORIZATION) {
        Ok(Some(value)) => value,
        Ok(None) => return Bearer::Missing,
        Err(()) => return Bearer::Malformed("a request carries one Authorization header"),
    };
    let text = value.as_bytes().trim_ascii();
    if text.eq_ignore_ascii_case(b"bearer") {
        return Bearer::Malformed("the bearer token is missing");
    }
    let Some((scheme, token)) = memchr::memchr(b' ', text).and_then(|at| text.split_at_checked(at))
    else {
        return Bearer::Missing;
    };
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return Bearer::Missing;
    }
    let token = token.trim_ascii();
    if token.is_empty() || memchr::memchr(b' ', token).is_some() {
        Bearer::Malformed("the bearer token is malformed")
    } else if token.len() > MAX_TOKEN_BYTES {
        Bearer::Malformed("the bearer token is longer than 16 KiB")
    } else {
        Bearer::Token(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(auth: &[&str]) -> Parts {
        let mut request = http::Request::builder();
        for value in auth {
            request = request.header(AUTHORIZATION, *value);
        }
        request.body(()).unwrap().into_parts().0
    }

    #[test]
    fn only_one_bearer_header_carries_a_token() {
        assert!(matches!(bearer(&parts(&[])), Bearer::Missing));
        assert!(matches!(bearer(&parts(&["Basic abc"])), Bearer::Missing));
        assert!(matches!(
            bearer(&parts(&["bearer  t0k "])),
            Bearer::Token(b"t0k")
        ));
        assert!(matches!(
            bearer(&parts(&["Bearer a", "Bearer b"])),
            Bearer::Malformed(_)
        ));
        assert!(matches!(
            bearer(&parts(&["Bearer a b"])),
            Bearer::Malformed(_)
        ));
        assert!(matches!(bearer(&parts(&["Bearer "])), Bearer::Malformed(_)));
    }

    #[test]
    fn a_bearer_token_longer_than_16_kib_is_malformed() {
        let most = format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES));
        assert!(matches!(bearer(&parts(&[&most])), Bearer::Token(t) if t.len() == MAX_TOKEN_BYTES));
        let longer = format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES + 1));
        assert!(matches!(bearer(&parts(&[&longer])), Bearer::Malformed(_)));
    }
}
