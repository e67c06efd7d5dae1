//! The [`Prompt`] trait (a [`PromptDefinition`] is itself a prompt) and
//! [`PromptTemplate`], a prompt with placeholders filled at build time.

use crate::error::BuildError;
use crate::protocol::{PromptDefinition, Role};

/// A prompt listed by `mcp/listPrompts`. Prompts are fixed once the server
/// is built: their list is serialised then, once.
///
/// ```
/// use clawmcp::protocol::{PromptDefinition, Role};
///
/// let planner = PromptDefinition {
///     mcp_id: "mcp://example/prompts/planner:v1".into(),
///     name: "planner".into(),
///     description: Some("Plans before acting.".into()),
///     role: Role::System,
///     content: "Make a plan, then follow it.".into(),
/// };
/// # let _ = clawmcp::Server::builder().prompt(planner).build().unwrap();
/// ```
pub trait Prompt: Send + Sync + 'static {
    /// The prompt as `mcp/listPrompts` shows it.
    fn definition(&self) -> PromptDefinition;
}

impl Prompt for PromptDefinition {
    fn definition(&self) -> PromptDefinition {
        self.clone()
    }
}

/// A prompt written as a template with named placeholders (`{topic}`),
/// filled when the server is built. `{{` and `}}` stand for literal braces.
///
/// ```
/// use clawmcp::prompt::PromptTemplate;
/// use clawmcp::protocol::Role;
///
/// let prompt = PromptTemplate::new(
///     "mcp://example/prompts/review:v1", "review", Role::System,
///     "You review {language} code. Reply in {{at most}} {limit} words.",
/// )
/// .description("A code reviewer.")
/// .fill("language", "Rust")
/// .fill("limit", "50")
/// .render()
/// .unwrap();
/// assert_eq!(prompt.content, "You review Rust code. Reply in {at most} 50 words.");
/// # let _ = clawmcp::Server::builder().prompt(prompt).build().unwrap();
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct PromptTemplate {
    mcp_id: String,
    name: String,
    description: Option<String>,
    role: Role,
    template: String,
    values: Vec<(String, String)>,
}

impl PromptTemplate {
    /// A template; fill its placeholders with [`fill`](Self::fill).
    pub fn new(
        mcp_id: impl Into<String>,
        name: impl Into<String>,
        role: Role,
        template: impl Into<String>,
    ) -> Self {
        Self {
            mcp_id: mcp_id.into(),
            name: name.into(),
            description: None,
            role,
            template: template.into(),
            values: Vec::new(),
        }
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Gives placeholder `{name}` its value.
    pub fn fill(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.values.push((name.into(), value.into()));
        self
    }

    /// The prompt with every placeholder filled.
    ///
    /// # Errors
    /// A placeholder has no value, a value has no placeholder, or a brace
    /// is unmatched.
    pub fn render(&self) -> Result<PromptDefinition, BuildError> {
        let problem = |problem: String| BuildError::PromptTemplate {
            mcp_id: self.mcp_id.clone(),
            problem,
        };
        let mut content = String::with_capacity(self.template.len());
        let mut used = vec![false; self.values.len()];
        let mut rest = self.template.as_str();
        while let Some(i) = rest.find(['{', '}']) {
            content.push_str(&rest[..i]);
            let tail = &rest[i..];
            if tail.starts_with("{{") || tail.starts_with("}}") {
                content.push_str(&tail[..1]);
                rest = &tail[2..];
                continue;
            }
            if tail.starts_with('}') {
                return Err(problem("an unmatched '}' (write '}}' for a brace)".into()));
            }
            let Some(end) = tail.find('}') else {
                return Err(problem("an unmatched '{' (write '{{' for a brace)".into()));
            };
            let name = &tail[1..end];
            let Some(k) = self.values.iter().position(|(n, _)| n == name) else {
                return Err(problem(format!("placeholder {{{name}}} has no value")));
            };
            used[k] = true;
            content.push_str(&self.values[k].1);
            rest = &tail[end + 1..];
        }
        content.push_str(rest);
        if let Some(k) = used.iter().position(|u| !u) {
            let name = &self.values[k].0;
            return Err(problem(format!(
                "a value for {{{name}}}, which the template does not have"
            )));
        }
        Ok(PromptDefinition {
            mcp_id: self.mcp_id.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            role: self.role,
            content,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(text: &str) -> PromptTemplate {
        PromptTemplate::new("mcp://t/prompts/p", "p", Role::User, text)
    }

    #[test]
    fn placeholders_are_filled_and_braces_escaped() {
        let p = template("{a}-{{b}}-{a}").fill("a", "x").render().unwrap();
        assert_eq!(p.content, "x-{b}-x");
    }

    #[test]
    fn unfilled_unknown_and_unmatched_are_errors() {
        assert!(template("{a}").render().is_err());
        assert!(template("none").fill("a", "x").render().is_err());
        assert!(template("{a").fill("a", "x").render().is_err());
        assert!(template("a}").render().is_err());
    }
}
