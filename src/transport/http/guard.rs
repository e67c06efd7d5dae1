//! Who may use the endpoint (docs/mcp-v1.md §8): the `Host` and `Origin`
//! headers — parsed as a browser parses them, so that a name that only
//! looks like loopback (`http://127.0.0.1:80@evil.com`,
//! `http://[::1].evil.com`) is not taken for it — and the bearer token.
//!
//! Loopback is every name a browser sends for this machine's loopback
//! interface: `localhost`, all of `127.0.0.0/8` and `::1` (also written as
//! an IPv4-mapped address). Pure functions, no I/O.

use std::net::IpAddr;

use http::header::{ACCESS_CONTROL_REQUEST_METHOD, AUTHORIZATION, HOST, HeaderValue, ORIGIN};
use http::{HeaderMap, Method};
use url::{Host, Url};

/// Why a request is refused before it is served.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// 400: a malformed request (RFC 9112 §3.2: no `Host` on HTTP/1.1, two
    /// of them, or an invalid one; two `Origin` headers).
    BadRequest(&'static str),
    /// 403: a foreign `Origin` or `Host` (DNS-rebinding defence).
    Forbidden(&'static str),
    /// 401: the bearer token is missing or wrong.
    Unauthorized,
}

/// Which `Host` names a request may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum HostRule {
    /// Any name (a server on a public address with no allowed hosts
    /// configured, or [`HttpConfig::allow_any_host`](super::HttpConfig::allow_any_host)).
    Any,
    /// Loopback names and the configured hosts only.
    Listed,
}

/// What the guard checks against: the configuration, resolved.
#[derive(Debug, Clone, Default)]
pub(super) struct Rules {
    /// Allowed origins: full origins (`https://app.example.com`) or bare
    /// hosts (`app.example.com`), lowercase.
    pub(super) origins: Vec<String>,
    /// Allowed hosts besides loopback: `name` (any port) or `name:port`,
    /// lowercase.
    pub(super) hosts: Vec<String>,
    /// The bearer token every request must carry, if any.
    pub(super) bearer_token: Option<String>,
}

/// How many accepted `Host` (and `Origin`) values are remembered.
const REMEMBERED: usize = 16;

/// `Host` and `Origin` values that passed the parser and the rules, so that
/// the next request carrying the same bytes skips both (a client sends the
/// same ones on every request). Only accepted values are remembered, and at
/// most [`REMEMBERED`] of each: the decision is always the parser's.
#[derive(Debug, Default)]
pub(super) struct Accepted {
    hosts: std::sync::Mutex<Vec<Box<[u8]>>>,
    origins: std::sync::Mutex<Vec<Box<[u8]>>>,
}

impl Accepted {
    fn knows(list: &std::sync::Mutex<Vec<Box<[u8]>>>, value: &[u8]) -> bool {
        list.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .any(|known| **known == *value)
    }

    fn remember(list: &std::sync::Mutex<Vec<Box<[u8]>>>, value: &[u8]) {
        let mut known = list
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if known.len() < REMEMBERED && !known.iter().any(|k| **k == *value) {
            known.push(value.into());
        }
    }
}

/// The parts of a request the checks read.
#[derive(Debug, Clone, Copy)]
pub(super) struct Asked<'h> {
    pub(super) method: &'h Method,
    pub(super) headers: &'h HeaderMap,
    /// The request target's authority (absolute form), which stands for
    /// `Host`.
    pub(super) authority: Option<&'h str>,
    /// HTTP/1.1 or later, where `Host` is required.
    pub(super) http11: bool,
}

impl<'h> Asked<'h> {
    /// The parts of `request` the checks read.
    pub(super) fn of(
        method: &'h Method,
        headers: &'h HeaderMap,
        uri: &'h http::Uri,
        version: http::Version,
    ) -> Self {
        Self {
            method,
            headers,
            authority: uri.authority().map(http::uri::Authority::as_str),
            http11: version >= http::Version::HTTP_11,
        }
    }

    /// A CORS preflight: an `OPTIONS` with an `Origin` and an
    /// `Access-Control-Request-Method` (browsers send no credentials on
    /// one).
    fn is_preflight(&self, origin: Option<&HeaderValue>) -> bool {
        *self.method == Method::OPTIONS
            && origin.is_some()
            && self.headers.contains_key(ACCESS_CONTROL_REQUEST_METHOD)
    }
}

/// Who answers a CORS preflight that passed the `Host` and `Origin`
/// checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Preflights {
    /// The caller answers it itself (204 and CORS headers; nothing is
    /// dispatched), so it needs no token: the MCP endpoint.
    Answered,
    /// It goes on to an inner service like any request, so it needs the
    /// token: [`GuardLayer`](super::GuardLayer).
    Guarded,
}

/// What a request that passed [`Rules::check`] carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Passed<'h> {
    /// Its one `Origin`, if it has one.
    pub(super) origin: Option<&'h HeaderValue>,
    /// It is a CORS preflight.
    pub(super) preflight: bool,
}

impl Rules {
    /// Checks a request: `Host` and `Origin`, then the static bearer
    /// token, which a CORS preflight needs not carry where `preflights`
    /// says the caller answers it. `host_rule` says which `Host` names are
    /// accepted; `accepted` remembers values that passed.
    pub(super) fn check<'h>(
        &self,
        asked: Asked<'h>,
        host_rule: HostRule,
        accepted: &Accepted,
        preflights: Preflights,
    ) -> Result<Passed<'h>, Refusal> {
        let origin = self.check_origin(asked, host_rule, accepted)?;
        let preflight = asked.is_preflight(origin);
        let exempt = preflight && preflights == Preflights::Answered;
        if !exempt
            && let Some(token) = &self.bearer_token
            && !carries_bearer(asked.headers, token)
        {
            return Err(Refusal::Unauthorized);
        }
        Ok(Passed { origin, preflight })
    }

    /// `Host` and `Origin`; `Ok` holds the request's one `Origin`, if it
    /// has one.
    fn check_origin<'h>(
        &self,
        asked: Asked<'h>,
        host_rule: HostRule,
        accepted: &Accepted,
    ) -> Result<Option<&'h HeaderValue>, Refusal> {
        let Asked {
            headers,
            authority: uri_authority,
            http11,
            ..
        } = asked;
        let host = one_of(headers, &HOST)
            .map_err(|()| Refusal::BadRequest("a request carries at most one Host header"))?;
        if host.is_none() && http11 && uri_authority.is_none() {
            return Err(Refusal::BadRequest(
                "an HTTP/1.1 request must carry a Host header",
            ));
        }
        let origin = one_of(headers, &ORIGIN)
            .map_err(|()| Refusal::BadRequest("a request carries at most one Origin header"))?;
        // The request target's authority (absolute form) stands for Host.
        for name in [host.and_then(|h| h.to_str().ok()), uri_authority]
            .into_iter()
            .flatten()
        {
            if Accepted::knows(&accepted.hosts, name.as_bytes()) {
                continue;
            }
            let Some(parsed) = parse_host(name) else {
                return Err(Refusal::BadRequest("the Host header is not a valid host"));
            };
            if host_rule == HostRule::Listed && !self.host_allowed(&parsed, name) {
                return Err(Refusal::Forbidden(
                    "this Host is not allowed (a loopback server answers only loopback names \
                     and the hosts it is configured to allow)",
                ));
            }
            Accepted::remember(&accepted.hosts, name.as_bytes());
        }
        if host.is_some_and(|h| h.to_str().is_err()) {
            return Err(Refusal::BadRequest("the Host header is not a valid host"));
        }
        if let Some(origin) = origin
            && !Accepted::knows(&accepted.origins, origin.as_bytes())
        {
            if !self.origin_allowed(origin) {
                return Err(Refusal::Forbidden("this Origin is not allowed"));
            }
            Accepted::remember(&accepted.origins, origin.as_bytes());
        }
        Ok(origin)
    }

    fn host_allowed(&self, host: &Host<String>, written: &str) -> bool {
        if is_loopback(host) {
            return true;
        }
        let written = written.to_ascii_lowercase();
        let name = host_name(host);
        self.hosts.iter().any(|allowed| {
            *allowed == written || *allowed == name || allowed.trim_end_matches('.') == name
        })
    }

    fn origin_allowed(&self, origin: &HeaderValue) -> bool {
        let Some(url) = origin
            .to_str()
            .ok()
            .and_then(|text| Url::parse(text.trim()).ok())
        else {
            return false; // `null`, garbage: not an origin we can trust
        };
        // An origin is `scheme://host[:port]`: no user, password or path.
        if !url.username().is_empty() || url.password().is_some() || url.path().len() > 1 {
            return false;
        }
        let Some(host) = url.host() else {
            return false;
        };
        let host = host.to_owned();
        if is_loopback(&host) {
            return true;
        }
        let serialized = url.origin().ascii_serialization();
        let name = host_name(&host);
        self.origins
            .iter()
            .any(|allowed| *allowed == serialized || *allowed == name)
    }
}

/// Whether `headers` carry bearer `token` (one `Authorization` header),
/// compared in constant time.
fn carries_bearer(headers: &HeaderMap, token: &str) -> bool {
    let given = one_of(headers, &AUTHORIZATION)
        .ok()
        .flatten()
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.trim().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map_or("", |(_, token)| token);
    constant_time_eq(given.trim().as_bytes(), token.as_bytes())
}

/// The one value of header `name`: `Err` when it is repeated. The headers
/// the endpoint checks that may come once (`Host`, `Origin`,
/// `Authorization`, `Content-Type`, `Mcp-Session-Id`, `Mcp-Method`,
/// `Mcp-Name`, `Mcp-Param-*`) are read through this;
/// `MCP-Protocol-Version`, which the head's one pass reads
/// (`sniff::head`), is refused there when repeated.
pub(super) fn one_of<'a>(
    headers: &'a HeaderMap,
    name: &http::header::HeaderName,
) -> Result<Option<&'a HeaderValue>, ()> {
    let mut values = headers.get_all(name).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(());
    }
    Ok(first)
}

/// A `Host` value (`host[:port]`, RFC 9110 §7.2), parsed as a browser's URL
/// parser would read it; `None` when it is not one (a user part, a path,
/// an invalid port or address).
pub(super) fn parse_host(value: &str) -> Option<Host<String>> {
    let value = value.trim();
    if value.is_empty()
        || value
            .bytes()
            .any(|b| matches!(b, b'@' | b'/' | b'\\' | b'?' | b'#') || b <= b' ')
    {
        return None;
    }
    let url = Url::parse(&format!("http://{value}/")).ok()?;
    url.host().map(|h| h.to_owned())
}

/// Whether `host` names this machine's loopback interface.
pub(super) fn is_loopback(host: &Host<String>) -> bool {
    match host {
        Host::Domain(name) => name.trim_end_matches('.').eq_ignore_ascii_case("localhost"),
        Host::Ipv4(ip) => ip.is_loopback(),
        Host::Ipv6(ip) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Whether a listening address is loopback (then `Host` is checked).
pub(super) fn is_loopback_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// A host as configuration lists it: a lowercase name, a dotted IPv4
/// address or a bracketed IPv6 one.
fn host_name(host: &Host<String>) -> String {
    match host {
        Host::Domain(name) => name.trim_end_matches('.').to_ascii_lowercase(),
        Host::Ipv4(ip) => ip.to_string(),
        Host::Ipv6(ip) => format!("[{ip}]"),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                http::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    fn check(rules: &Rules, pairs: &[(&str, &str)]) -> Result<(), Refusal> {
        passed(rules, Method::POST, pairs, Preflights::Answered).map(|_| ())
    }

    /// What `Rules::check` says of a request of `method` with these
    /// headers, over HTTP/1.1 to the endpoint: the `Origin` it passed, and
    /// whether it is a preflight.
    fn passed(
        rules: &Rules,
        method: Method,
        pairs: &[(&str, &str)],
        preflights: Preflights,
    ) -> Result<(Option<String>, bool), Refusal> {
        rules
            .check(
                Asked {
                    method: &method,
                    headers: &headers(pairs),
                    authority: None,
                    http11: true,
                },
                HostRule::Listed,
                &Accepted::default(),
                preflights,
            )
            .map(|passed| {
                let origin = passed
                    .origin
                    .map(|o| o.to_str().unwrap_or_default().to_owned());
                (origin, passed.preflight)
            })
    }

    #[test]
    fn remembered_values_are_only_ones_that_passed() {
        let rules = Rules::default();
        let accepted = Accepted::default();
        let with = |host: &str| {
            rules
                .check(
                    Asked {
                        method: &Method::POST,
                        headers: &headers(&[("host", host)]),
                        authority: None,
                        http11: true,
                    },
                    HostRule::Listed,
                    &accepted,
                    Preflights::Answered,
                )
                .map(|_| ())
        };
        assert_eq!(with("127.0.0.1:8080"), Ok(()));
        assert!(matches!(with("evil.com"), Err(Refusal::Forbidden(_))));
        assert!(
            matches!(with("evil.com"), Err(Refusal::Forbidden(_))),
            "never remembered"
        );
        assert_eq!(with("127.0.0.1:8080"), Ok(()));
        for port in 0..100 {
            let _ = with(&format!("127.0.0.1:{port}"));
        }
        assert!(accepted.hosts.lock().unwrap().len() <= REMEMBERED);
    }

    #[test]
    fn origins_that_only_look_like_loopback_are_foreign() {
        let rules = Rules::default();
        for origin in [
            "http://127.0.0.1:80@evil.com",
            "http://[::1].evil.com",
            "http://localhost:80.evil.com",
            "http://localhost.evil.com",
            "http://user@localhost",
            "null",
            "http://evil.com",
        ] {
            assert!(
                matches!(
                    check(&rules, &[("host", "localhost"), ("origin", origin)]),
                    Err(Refusal::Forbidden(_))
                ),
                "{origin}"
            );
        }
    }

    #[test]
    fn every_loopback_origin_is_allowed() {
        let rules = Rules::default();
        for origin in [
            "http://127.0.0.2",
            "http://127.255.0.1:9",
            "http://localhost:3000",
            "HTTP://LOCALHOST.",
            "http://[::1]:8080",
            "http://[::ffff:127.0.0.1]",
        ] {
            assert_eq!(
                check(&rules, &[("host", "localhost"), ("origin", origin)]),
                Ok(()),
                "{origin}"
            );
        }
    }

    #[test]
    fn host_is_required_once_on_http11_and_must_be_valid() {
        let rules = Rules::default();
        assert!(matches!(check(&rules, &[]), Err(Refusal::BadRequest(_))));
        assert!(matches!(
            check(&rules, &[("host", "localhost"), ("host", "localhost")]),
            Err(Refusal::BadRequest(_))
        ));
        for bad in [
            "a@localhost",
            "localhost/x",
            "localhost:80x",
            "[::1].evil.com",
            "",
        ] {
            assert!(
                matches!(check(&rules, &[("host", bad)]), Err(Refusal::BadRequest(_))),
                "{bad:?}"
            );
        }
        assert_eq!(
            rules.check(
                Asked {
                    method: &Method::POST,
                    headers: &HeaderMap::new(),
                    authority: None,
                    http11: false,
                },
                HostRule::Listed,
                &Accepted::default(),
                Preflights::Answered,
            ),
            Ok(Passed {
                origin: None,
                preflight: false
            }),
            "HTTP/1.0 may omit Host"
        );
    }

    #[test]
    fn two_origins_are_a_bad_request() {
        let rules = Rules::default();
        assert!(matches!(
            check(
                &rules,
                &[
                    ("host", "localhost"),
                    ("origin", "http://localhost"),
                    ("origin", "http://evil.com")
                ]
            ),
            Err(Refusal::BadRequest(_))
        ));
    }

    #[test]
    fn foreign_hosts_are_refused_unless_listed_or_any() {
        let rules = Rules {
            hosts: vec!["api.example.com".into(), "tools.example.org:8443".into()],
            ..Rules::default()
        };
        for ok in [
            "127.0.0.1:8080",
            "127.0.0.2",
            "localhost",
            "[::1]:80",
            "api.example.com:9",
            "API.example.com",
            "tools.example.org:8443",
        ] {
            assert_eq!(check(&rules, &[("host", ok)]), Ok(()), "{ok}");
        }
        for foreign in [
            "evil.com",
            "tools.example.org:9",
            "api.example.com.evil.com",
        ] {
            assert!(
                matches!(
                    check(&rules, &[("host", foreign)]),
                    Err(Refusal::Forbidden(_))
                ),
                "{foreign}"
            );
        }
        assert_eq!(
            rules.check(
                Asked {
                    method: &Method::POST,
                    headers: &headers(&[("host", "evil.com")]),
                    authority: None,
                    http11: true,
                },
                HostRule::Any,
                &Accepted::default(),
                Preflights::Answered,
            ),
            Ok(Passed {
                origin: None,
                preflight: false
            })
        );
    }

    #[test]
    fn bearer_tokens_compare_exactly_with_any_scheme_case() {
        let rules = Rules {
            bearer_token: Some("s3cret".into()),
            ..Rules::default()
        };
        let with = |auth: &str| check(&rules, &[("host", "localhost"), ("authorization", auth)]);
        assert_eq!(with("Bearer s3cret"), Ok(()));
        assert_eq!(with("bearer  s3cret "), Ok(()));
        assert_eq!(with("Bearer s3cre"), Err(Refusal::Unauthorized));
        assert_eq!(with("Basic s3cret"), Err(Refusal::Unauthorized));
        assert_eq!(
            check(&rules, &[("host", "localhost")]),
            Err(Refusal::Unauthorized)
        );
        assert_eq!(
            check(
                &rules,
                &[
                    ("host", "localhost"),
                    ("authorization", "Bearer s3cret"),
                    ("authorization", "Bearer s3cret"),
                ]
            ),
            Err(Refusal::Unauthorized),
            "a request carries one Authorization header"
        );
    }

    #[test]
    fn a_cors_preflight_needs_no_token_only_where_it_is_answered() {
        let rules = Rules {
            bearer_token: Some("s3cret".into()),
            ..Rules::default()
        };
        let with = |method: Method, pairs: &[(&str, &str)], preflights: Preflights| {
            passed(&rules, method, pairs, preflights).map(|(_, preflight)| preflight)
        };
        let preflight = [
            ("host", "localhost"),
            ("origin", "http://localhost:3000"),
            ("access-control-request-method", "POST"),
        ];
        assert_eq!(
            with(Method::OPTIONS, &preflight, Preflights::Answered),
            Ok(true),
            "the endpoint answers a preflight itself"
        );
        assert_eq!(
            with(Method::OPTIONS, &preflight, Preflights::Guarded),
            Err(Refusal::Unauthorized),
            "behind the layer, the inner service would get it"
        );
        assert_eq!(
            with(Method::OPTIONS, &preflight[..2], Preflights::Answered),
            Err(Refusal::Unauthorized),
            "an OPTIONS that asks for no method is no preflight"
        );
        assert_eq!(
            with(
                Method::OPTIONS,
                &[("host", "localhost")],
                Preflights::Answered
            ),
            Err(Refusal::Unauthorized),
            "an OPTIONS without an Origin is no preflight"
        );
        assert_eq!(
            with(Method::POST, &preflight, Preflights::Answered),
            Err(Refusal::Unauthorized),
            "a request from a page carries the token"
        );
        assert!(
            matches!(
                with(
                    Method::OPTIONS,
                    &[
                        ("host", "localhost"),
                        ("origin", "https://evil.example"),
                        ("access-control-request-method", "POST"),
                    ],
                    Preflights::Answered
                ),
                Err(Refusal::Forbidden(_))
            ),
            "a preflight's Origin is checked"
        );
    }

    #[test]
    fn the_checks_give_the_one_origin_they_passed() {
        let rules = Rules::default();
        let origin = |pairs: &[(&str, &str)]| {
            passed(&rules, Method::POST, pairs, Preflights::Answered).map(|(origin, _)| origin)
        };
        assert_eq!(origin(&[("host", "localhost")]), Ok(None));
        assert_eq!(
            origin(&[("host", "localhost"), ("origin", "http://localhost:3000")]),
            Ok(Some("http://localhost:3000".to_owned()))
        );
    }
}
