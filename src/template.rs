//! Resource templates: resources whose URIs follow an RFC 6570 level-1
//! template (`file:///logs/{date}.txt`), read by a function of the URI and
//! its variables, listed by `resources/templates/list` and read by
//! `resources/read` in the Model Context Protocol dialect.
//!
//! ```
//! use clawmcp::template::resource_template;
//!
//! let notes = resource_template(
//!     "notes://{id}", "note", "A note by its id.", "text/plain",
//!     |_uri, vars| async move { Ok(format!("note {}", vars.get("id").unwrap_or("?")).into()) },
//! )
//! .unwrap();
//! # let _ = clawmcp::Server::builder().resource_template(notes).build().unwrap();
//! ```

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;

use crate::completion::Complete;
use crate::content::ResourceBody;
use crate::definition::Presentation;
use crate::error::{BuildError, ToolError};

/// An RFC 6570 URI template of level 1: literal text and `{name}`
/// variables (simple string expansion).
///
/// A variable's value, once percent-decoded, is safe to use as one path
/// segment: it is never empty, `.` or `..`, and never holds `/`, `\`, NUL
/// or another control character. A URI whose value would is matched by no
/// template, so its read gets the dialect's not-found error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    text: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Variable(String),
}

impl UriTemplate {
    /// Parses a template.
    ///
    /// # Errors
    /// An unmatched brace, an empty or invalid variable name, two variables
    /// with nothing between them, or an operator of a higher level (`+`,
    /// `#`, `.`, `/`, `;`, `?`, `&`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some((literal, after)) = rest.split_once('{') {
            if literal.contains('}') {
                return Err("an unmatched '}'".into());
            }
            if !literal.is_empty() {
                parts.push(Part::Literal(literal.to_owned()));
            }
            let (name, after) = after.split_once('}').ok_or("an unmatched '{'")?;
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!(
                    "{{{name}}}: only level-1 variables ({{name}}, letters, digits and _) are supported"
                ));
            }
            if matches!(parts.last(), Some(Part::Variable(_))) {
                return Err(format!("{{{name}}} follows another variable directly"));
            }
            parts.push(Part::Variable(name.to_owned()));
            rest = after;
        }
        if rest.contains('}') {
            return Err("an unmatched '}'".into());
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(Self {
            text: text.to_owned(),
            parts,
        })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The variables' names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Variable(name) => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// The variables of `uri` when it matches the template (values
    /// percent-decoded, each a safe path segment), else `None`.
    ///
    /// ```
    /// let t = clawmcp::template::UriTemplate::parse("test://template/{id}/data").unwrap();
    /// assert_eq!(t.matches("test://template/123/data").unwrap().get("id"), Some("123"));
    /// assert!(t.matches("test://template/1/2/data").is_none());
    /// assert!(t.matches("test://template/..%2F..%2Fetc%2Fpasswd/data").is_none());
    /// assert!(t.matches("test://template/a%00b/data").is_none());
    /// ```
    pub fn matches(&self, uri: &str) -> Option<Variables> {
        let mut rest = uri;
        let mut values = Vec::new();
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(literal) => rest = rest.strip_prefix(literal.as_str())?,
                Part::Variable(name) => {
                    let end = match parts.peek() {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let (raw, after) = rest.split_at_checked(end)?;
                    if raw.contains('/') {
                        return None;
                    }
                    let value = percent_decode(raw)?;
                    if !is_segment(&value) {
                        return None;
                    }
                    values.push((name.clone(), value));
                    rest = after;
                }
            }
        }
        rest.is_empty().then_some(Variables(values))
    }
}

/// Whether a decoded value is one safe path segment: not empty, `.` or
/// `..`, and free of separators (`/`, `\`) and control characters (NUL
/// among them).
fn is_segment(value: &str) -> bool {
    !matches!(value, "" | "." | "..")
        && !value
            .chars()
            .any(|c| c == '/' || c == '\\' || c.is_control())
}

/// Decodes `%XX` escapes; `None` for a bad escape or non-UTF-8 result.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        if byte == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(byte);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The variables of a URI that matched a template.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Variables(Vec<(String, String)>);

impl Variables {
    /// The value of variable `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every variable, in template order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }
}

/// Reads the resource a template's URI names.
#[async_trait]
pub trait ReadTemplate: Send + Sync + 'static {
    /// The body of the resource `uri`, whose variables are `variables`.
    /// An `Err` fails `resources/read` with `-32603`, or with `-32602` when
    /// that is [its code](ToolError::code).
    async fn read(&self, uri: &str, variables: &Variables) -> Result<ResourceBody, ToolError>;
}

/// A [`ReadTemplate`] made of an async function.
struct FnReader<F>(F);

#[async_trait]
impl<F, Fut> ReadTemplate for FnReader<F>
where
    F: Fn(String, Variables) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ResourceBody, ToolError>> + Send + 'static,
{
    async fn read(&self, uri: &str, variables: &Variables) -> Result<ResourceBody, ToolError> {
        (self.0)(uri.to_owned(), variables.clone()).await
    }
}

/// A family of resources named by a URI template, with the function that
/// reads them and optional completers for its variables.
#[derive(Clone)]
pub struct ResourceTemplate {
    pub(crate) template: UriTemplate,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) mime_type: String,
    pub(crate) presentation: Presentation,
    pub(crate) reader: Arc<dyn ReadTemplate>,
    pub(crate) completers: Vec<(String, Arc<dyn Complete>)>,
}

impl std::fmt::Debug for ResourceTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceTemplate")
            .field("template", &self.template.as_str())
            .field("name", &self.name)
            .finish()
    }
}

/// A resource template read by an async function of the URI and its
/// variables.
///
/// # Errors
/// The template is not a valid level-1 URI template.
pub fn resource_template<F, Fut>(
    uri_template: &str,
    name: impl Into<String>,
    description: impl Into<String>,
    mime_type: impl Into<String>,
    reader: F,
) -> Result<ResourceTemplate, BuildError>
where
    F: Fn(String, Variables) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ResourceBody, ToolError>> + Send + 'static,
{
    ResourceTemplate::new(uri_template, name, description, mime_type, FnReader(reader))
}

impl ResourceTemplate {
    /// A template with a reader of your own.
    ///
    /// # Errors
    /// The template is not a valid level-1 URI template.
    pub fn new(
        uri_template: &str,
        name: impl Into<String>,
        description: impl Into<String>,
        mime_type: impl Into<String>,
        reader: impl ReadTemplate,
    ) -> Result<Self, BuildError> {
        let template =
            UriTemplate::parse(uri_template).map_err(|problem| BuildError::InvalidTemplate {
                template: uri_template.to_owned(),
                problem,
            })?;
        Ok(Self {
            template,
            name: name.into(),
            description: description.into(),
            mime_type: mime_type.into(),
            presentation: Presentation::default(),
            reader: Arc::new(reader),
            completers: Vec::new(),
        })
    }

    /// Completes values of `variable` for `completion/complete`.
    #[must_use]
    pub fn complete(mut self, variable: impl Into<String>, completer: impl Complete) -> Self {
        self.completers.push((variable.into(), Arc::new(completer)));
        self
    }

    /// Sets its title and icons as the Model Context Protocol lists them.
    #[must_use]
    pub fn with_presentation(mut self, presentation: Presentation) -> Self {
        self.presentation = presentation;
        self
    }

    /// The URI template.
    pub fn uri_template(&self) -> &UriTemplate {
        &self.template
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_one_templates_parse_and_higher_levels_are_refused() {
        assert!(UriTemplate::parse("file:///{dir}/{name}.txt").is_ok());
        for bad in ["a{", "a}", "{}", "{+x}", "{#x}", "{x,y}", "{a}{b}", "{a b}"] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn uris_match_with_decoded_values() {
        let t = UriTemplate::parse("file:///{dir}/{name}.txt").unwrap();
        let v = t.matches("file:///logs/a%20b.txt").unwrap();
        assert_eq!(v.get("dir"), Some("logs"));
        assert_eq!(v.get("name"), Some("a b"));
        assert!(t.matches("file:///logs/.txt").is_none(), "empty value");
        assert!(
            t.matches("file:///a/b/c.txt").is_none(),
            "a slash in a value"
        );
        assert!(
            t.matches("file:///logs/a.txt.bak").is_none(),
            "trailing text"
        );
        assert!(t.matches("file:///logs/%zz.txt").is_none(), "bad escape");
        let tail = UriTemplate::parse("notes://{id}").unwrap();
        assert_eq!(tail.matches("notes://42").unwrap().get("id"), Some("42"));
    }

    #[test]
    fn a_decoded_value_never_holds_a_separator_a_control_character_or_a_dot_segment() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        for bad in [
            "..%2F..%2Fetc%2Fpasswd",
            "a%2Fb",
            "a%5Cb",
            "a\\b",
            "a%00b",
            "a%0Ab",
            "%1B",
            "%7F",
            "%C2%85",
            ".",
            "..",
            "%2E%2E",
            "%2e",
        ] {
            let uri = format!("test://template/{bad}/data");
            assert!(t.matches(&uri).is_none(), "{uri}");
        }
        for good in ["123", "a.b", "...", "%2E%2E%2E", "caf%C3%A9", "a%20b"] {
            let uri = format!("test://template/{good}/data");
            assert!(t.matches(&uri).is_some(), "{uri}");
        }
    }
}
