//! What the endpoint tells a client about authorization: the protected
//! resource metadata document (RFC 9728 §2-3) and the `WWW-Authenticate`
//! challenges (RFC 6750 §3).

use serde_json::{Value, json};

/// The well-known prefix of protected-resource metadata.
pub(crate) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// RFC 9728 §3.1: the well-known segment goes between the host and the
/// resource's path (`https://h/mcp` → `/.well-known/oauth-protected-resource/mcp`).
pub(crate) fn metadata_path(resource: &str) -> String {
    let path = url::Url::parse(resource)
        .map(|url| url.path().trim_end_matches('/').to_owned())
        .unwrap_or_default();
    format!("{WELL_KNOWN}{path}")
}

/// The metadata document's URL.
pub(crate) fn metadata_url(resource: &str) -> String {
    match url::Url::parse(resource) {
        Ok(url) => format!(
            "{}{}",
            url.origin().ascii_serialization(),
            metadata_path(resource)
        ),
        Err(_) => format!("{resource}{WELL_KNOWN}"),
    }
}

/// The metadata document.
pub(crate) fn metadata(
    resource: &str,
    authorization_servers: &[String],
    scopes_supported: &[String],
    resource_name: Option<&str>,
    resource_documentation: Option<&str>,
) -> Value {
    let scopes: Vec<&String> = scopes_supported
        .iter()
        .filter(|s| *s != "offline_access")
        .collect();
    let mut document = json!({
        "resource": resource,
        "authorization_servers": authorization_servers,
        "bearer_methods_supported": ["header"],
    });
    if let Some(map) = document.as_object_mut() {
        if !scopes.is_empty() {
            map.insert("scopes_supported".into(), json!(scopes));
        }
        if let Some(name) = resource_name {
            map.insert("resource_name".into(), json!(name));
        }
        if let Some(url) = resource_documentation {
            map.insert("resource_documentation".into(), json!(url));
        }
    }
    document
}

/// A refusal of a request's credentials, as a status and its challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Challenge {
    /// `401`, the request carried no token: no `error` (RFC 6750 §3.1).
    NoToken,
    /// `401 error="invalid_token"`.
    InvalidToken(String),
    /// `403 error="insufficient_scope"`, naming every scope the request
    /// needs.
    InsufficientScope(Vec<String>),
}

impl Challenge {
    /// The `WWW-Authenticate` value: `Bearer resource_metadata="…"`, the
    /// scopes (`scope`, the endpoint's required ones for a `401`), and the
    /// error with its description.
    pub(crate) fn header(&self, metadata_url: &str, required: &[String]) -> String {
        let mut value = format!("Bearer resource_metadata=\"{}\"", quoted(metadata_url));
        let scopes: &[String] = match self {
            Self::InsufficientScope(needed) => needed,
            _ => required,
        };
        let scopes: Vec<&str> = scopes
            .iter()
            .map(String::as_str)
            .filter(|s| *s != "offline_access")
            .collect();
        if !scopes.is_empty() {
            value.push_str(&format!(", scope=\"{}\"", quoted(&scopes.join(" "))));
        }
        match self {
            Self::NoToken => {}
            Self::InvalidToken(why) => value.push_str(&format!(
                ", error=\"invalid_token\", error_description=\"{}\"",
                quoted(why)
            )),
            Self::InsufficientScope(_) => value.push_str(&format!(
                ", error=\"insufficient_scope\", error_description=\"{}\"",
                quoted("the token lacks a scope this request needs")
            )),
        }
        value
    }

    /// The text of the response body.
    pub(crate) fn text(&self) -> String {
        match self {
            Self::NoToken => {
                "this endpoint needs an OAuth access token (Authorization: Bearer)".into()
            }
            Self::InvalidToken(why) => format!("the access token is not accepted: {why}"),
            Self::InsufficientScope(needed) => format!(
                "the access token lacks a scope this request needs; it needs \"{}\"",
                needed.join(" ")
            ),
        }
    }
}

/// RFC 6750 §3: `error_description` and the other values are quoted
/// strings of printable ASCII without `"` and `\`: anything else is
/// replaced.
fn quoted(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c.is_ascii() && !c.is_ascii_control() => c,
            _ => '?',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_path_inserts_the_well_known_segment_before_the_resource_path() {
        assert_eq!(
            metadata_path("https://mcp.example.com/mcp"),
            "/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_path("https://mcp.example.com"),
            "/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            metadata_url("http://127.0.0.1:8080/api/mcp"),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource/api/mcp"
        );
    }

    #[test]
    fn a_request_without_a_token_is_challenged_without_an_error() {
        let header = Challenge::NoToken.header("https://h/.well-known/x", &["mcp".into()]);
        assert_eq!(
            header,
            "Bearer resource_metadata=\"https://h/.well-known/x\", scope=\"mcp\""
        );
    }

    #[test]
    fn scope_challenges_name_every_needed_scope_once_and_never_offline_access() {
        let needed = vec!["mcp".into(), "files:write".into(), "offline_access".into()];
        let header = Challenge::InsufficientScope(needed).header("u", &[]);
        assert!(
            header.contains("scope=\"mcp files:write\", error=\"insufficient_scope\""),
            "{header}"
        );
    }

    #[test]
    fn descriptions_cannot_break_out_of_their_quotes() {
        let header = Challenge::InvalidToken("bad \"token\" \\ é".into()).header("u", &[]);
        assert!(
            header.ends_with("error_description=\"bad 'token' ' ?\""),
            "{header}"
        );
    }

    #[test]
    fn metadata_never_lists_offline_access() {
        let doc = metadata(
            "https://h/mcp",
            &["https://as".into()],
            &["mcp".into(), "offline_access".into()],
            Some("Tools"),
            None,
        );
        assert_eq!(doc["scopes_supported"], json!(["mcp"]));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
        assert_eq!(doc["resource_name"], "Tools");
    }
}
