//! An authorization server's metadata (RFC 8414, with OpenID Connect
//! Discovery as the fallback): where its keys and its introspection
//! endpoint are. The document must name the issuer it was fetched for
//! (RFC 8414 §3.3), or it is refused.

use super::VerifyError;
use super::fetch::Client;

/// What a verifier needs of an issuer's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IssuerMetadata {
    pub(crate) jwks_uri: Option<String>,
    pub(crate) introspection_endpoint: Option<String>,
}

/// The metadata URLs of `issuer`, in the order they are tried: RFC 8414's
/// (the well-known segment before the issuer's path), then OpenID
/// Connect's (after it).
pub(crate) fn metadata_urls(issuer: &str) -> Vec<String> {
    let trimmed = issuer.trim_end_matches('/');
    let mut urls = Vec::with_capacity(3);
    if let Ok(url) = url::Url::parse(trimmed) {
        let origin = url.origin().ascii_serialization();
        let path = url.path().trim_end_matches('/');
        urls.push(format!(
            "{origin}/.well-known/oauth-authorization-server{path}"
        ));
        if !path.is_empty() {
            urls.push(format!("{origin}/.well-known/openid-configuration{path}"));
        }
    }
    urls.push(format!("{trimmed}/.well-known/openid-configuration"));
    urls
}

/// Fetches `issuer`'s metadata: the first of its metadata URLs that
/// answers. An answer that names another issuer is refused.
pub(crate) async fn discover(client: &Client, issuer: &str) -> Result<IssuerMetadata, VerifyError> {
    let mut last = VerifyError::Unavailable(format!("no metadata URL for {issuer}"));
    for url in metadata_urls(issuer) {
        match client.get_json(&url).await {
            Ok(document) => {
                let named = document.get("issuer").and_then(|i| i.as_str());
                if named != Some(issuer) {
                    return Err(VerifyError::Config(format!(
                        "the metadata at {url} names issuer {named:?}, not {issuer:?}"
                    )));
                }
                let text = |key: &str| {
                    document
                        .get(key)
                        .and_then(|v| v.as_str())
                        .map(str::to_owned)
                };
                return Ok(IssuerMetadata {
                    jwks_uri: text("jwks_uri"),
                    introspection_endpoint: text("introspection_endpoint"),
                });
            }
            Err(error @ VerifyError::Unavailable(_)) => return Err(error),
            Err(error) => last = error,
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_urls_follow_rfc8414_then_openid_connect() {
        assert_eq!(
            metadata_urls("https://auth.example.com"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            metadata_urls("https://auth.example.com/tenant/1/"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant/1",
                "https://auth.example.com/.well-known/openid-configuration/tenant/1",
                "https://auth.example.com/tenant/1/.well-known/openid-configuration"
            ]
        );
    }
}
