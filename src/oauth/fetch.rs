//! The HTTP client that reaches the authorization server: discovery, the
//! key set, introspection. One request per connection, a deadline on the
//! whole exchange, and a cap on what is read; `https` only with the
//! `oauth-tls` feature.

use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, USER_AGENT};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::VerifyError;

/// The most an issuer's answer may hold.
const MAX_ANSWER: usize = 1 << 20;

/// How an issuer is reached: its deadline per exchange.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Client {
    pub(crate) timeout: Duration,
}

impl Default for Client {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(5),
        }
    }
}

impl Client {
    /// `GET url`, its JSON answer. (Metadata and key sets concern no
    /// token: a `400` is the issuer's configuration, not a token's fault.)
    pub(crate) async fn get_json(&self, url: &str) -> Result<serde_json::Value, VerifyError> {
        self.send(Method::GET, url, None, None)
            .await
            .map_err(|error| match error {
                VerifyError::Invalid(why) => VerifyError::Config(why),
                other => other,
            })
    }

    /// `POST url` with a form body and HTTP Basic credentials, its JSON
    /// answer.
    pub(crate) async fn post_form(
        &self,
        url: &str,
        basic: (&str, &str),
        form: &[(&str, &str)],
    ) -> Result<serde_json::Value, VerifyError> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let credentials = basic_credentials(basic.0, basic.1);
        self.send(Method::POST, url, Some(credentials), Some(body))
            .await
    }

    async fn send(
        &self,
        method: Method,
        url: &str,
        authorization: Option<String>,
        form: Option<String>,
    ) -> Result<serde_json::Value, VerifyError> {
        let sending = self.send_unbounded(method, url, authorization, form);
        match tokio::time::timeout(self.timeout, sending).await {
            Ok(result) => result,
            Err(_) => Err(VerifyError::Unavailable(format!(
                "{url} did not answer within {:?}",
                self.timeout
            ))),
        }
    }

    async fn send_unbounded(
        &self,
        method: Method,
        url: &str,
        authorization: Option<String>,
        form: Option<String>,
    ) -> Result<serde_json::Value, VerifyError> {
        let unavailable = |why: String| VerifyError::Unavailable(format!("{url}: {why}"));
        let uri: Uri = url
            .parse()
            .map_err(|e| VerifyError::Config(format!("{url} is not a URL: {e}")))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(VerifyError::Config(format!("{url} is not http(s)"))),
        };
        let authority = uri
            .authority()
            .ok_or_else(|| VerifyError::Config(format!("{url} has no host")))?
            .clone();
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        // Keys and introspection answers decide who gets in: over plain
        // HTTP anyone on the path could forge them. Loopback only.
        if !https && !is_loopback(host) {
            return Err(VerifyError::Config(format!(
                "{url} is plain http to a host that is not loopback: use https (feature oauth-tls)"
            )));
        }
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        let stream = TcpStream::connect((host, port))
            .await
            .map_err(|e| unavailable(format!("connecting failed: {e}")))?;
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(HOST, authority.as_str())
            .header(ACCEPT, "application/json")
            .header(USER_AGENT, concat!("clawmcp/", env!("CARGO_PKG_VERSION")));
        if let Some(value) = authorization {
            request = request.header(AUTHORIZATION, value);
        }
        if form.is_some() {
            request = request.header(CONTENT_TYPE, "application/x-www-form-urlencoded");
        }
        let request = request
            .body(Full::new(Bytes::from(form.unwrap_or_default())))
            .map_err(|e| VerifyError::Config(format!("{url}: {e}")))?;
        let (status, body) = if https {
            send(tls(stream, host).await?, request).await
        } else {
            send(stream, request).await
        }
        .map_err(unavailable)?;
        if !status.is_success() {
            let why = format!("{url} answered {status}");
            return Err(match status {
                // RFC 7662 §2.3 / RFC 6749 §5.2: the issuer will not answer
                // for this token (oidc-provider: "structured tokens cannot
                // be introspected"). The client is told so, not where the
                // issuer's endpoint is.
                StatusCode::BAD_REQUEST => {
                    tracing::debug!("{why}");
                    VerifyError::Invalid("the issuer will not answer for this token".into())
                }
                s if s.is_server_error() || s == StatusCode::TOO_MANY_REQUESTS => {
                    VerifyError::Unavailable(why)
                }
                _ => VerifyError::Config(why),
            });
        }
        serde_json::from_slice(&body)
            .map_err(|e| unavailable(format!("the answer is not JSON: {e}")))
    }
}

/// Whether `host` (without brackets) names this machine's loopback
/// interface, for a connection about to be made in plain HTTP: stricter
/// than the HTTP guard's reading of a `Host` header. `localhost.` is
/// refused (a resolver may ask DNS for an absolute name), and so is an
/// IPv4-mapped address, which no issuer URL needs.
fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Sends `request` on a connection of its own and reads the answer whole.
async fn send<S>(stream: S, request: Request<Full<Bytes>>) -> Result<(StatusCode, Bytes), String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("the HTTP handshake failed: {e}"))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!("an issuer connection ended: {e}");
        }
    });
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("the request failed: {e}"))?;
    let status = response.status();
    let body = Limited::new(response.into_body(), MAX_ANSWER)
        .collect()
        .await
        .map_err(|e| format!("reading the answer failed: {e}"))?
        .to_bytes();
    Ok((status, body))
}

/// `Basic` credentials, form-encoded first as RFC 6749 §2.3.1 asks.
fn basic_credentials(id: &str, secret: &str) -> String {
    use base64::Engine as _;
    let encode =
        |text: &str| url::form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
    let pair = format!("{}:{}", encode(id), encode(secret));
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

#[cfg(feature = "oauth-tls")]
async fn tls(
    stream: TcpStream,
    host: &str,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, VerifyError> {
    use std::sync::{Arc, OnceLock};
    type Config = Result<Arc<tokio_rustls::rustls::ClientConfig>, String>;
    static CONFIG: OnceLock<Config> = OnceLock::new();
    let config = CONFIG.get_or_init(|| {
        let roots = tokio_rustls::rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        tokio_rustls::rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map(|builder| Arc::new(builder.with_root_certificates(roots).with_no_client_auth()))
            .map_err(|e| e.to_string())
    });
    let config = config
        .as_ref()
        .map_err(|e| VerifyError::Config(format!("no TLS configuration: {e}")))?;
    let name = tokio_rustls::rustls::pki_types::ServerName::try_from(host.to_owned())
        .map_err(|e| VerifyError::Config(format!("{host} is not a TLS server name: {e}")))?;
    tokio_rustls::TlsConnector::from(config.clone())
        .connect(name, stream)
        .await
        .map_err(|e| VerifyError::Unavailable(format!("TLS with {host} failed: {e}")))
}

#[cfg(not(feature = "oauth-tls"))]
async fn tls(_stream: TcpStream, host: &str) -> Result<TcpStream, VerifyError> {
    Err(VerifyError::Config(format!(
        "{host} is https: build clawmcp with the `oauth-tls` feature to reach it"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn plain_http_reaches_loopback_only() {
        let client = Client::default();
        let refused = client
            .get_json("http://auth.example.com/.well-known/x")
            .await;
        assert!(matches!(refused, Err(VerifyError::Config(why)) if why.contains("not loopback")));
        assert!(is_loopback("127.0.0.1") && is_loopback("::1") && is_loopback("LOCALHOST"));
        assert!(!is_loopback("127.0.0.1.example.com"));
    }

    #[test]
    fn basic_credentials_are_form_encoded_first() {
        assert_eq!(basic_credentials("a", "b"), "Basic YTpi");
        // "a b:c" → "a+b%3Ac" before base64.
        assert_eq!(basic_credentials("a b", ":"), "Basic YStiOiUzQQ==");
    }
}
