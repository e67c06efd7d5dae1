//! The [`Prompt`] trait (a [`PromptDefinition`] is itself a prompt),
//! [`prompt_fn`] for prompts whose messages a function makes from their
//! arguments, and [`PromptTemplate`], a prompt with placeholders filled at
//! build time.

use std::collections::HashMap;
use std::future::Future;
use std::marker::PhantomData;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::content::Content;
use crate::error::{BuildError, ToolError};
use crate::protocol::{PromptDefinition, Role};

/// One argument a prompt declares (`schema.ts`: `PromptArgument`), filled
/// by the client at `prompts/get`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptArgument {
    /// The argument's name.
    pub name: String,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether `prompts/get` must give it (a missing one is `-32602`).
    #[serde(default)]
    pub required: bool,
}

impl PromptArgument {
    /// A required argument.
    pub fn required(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: Some(description.into()),
            required: true,
        }
    }

    /// An optional argument.
    pub fn optional(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            required: false,
            ..Self::required(name, description)
        }
    }
}

/// Who speaks a prompt message. The Model Context Protocol has no system
/// role: a [`Role::System`] prompt is sent as a `user` message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageRole {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

impl From<Role> for MessageRole {
    fn from(role: Role) -> Self {
        match role {
            Role::Assistant => Self::Assistant,
            Role::User | Role::System => Self::User,
        }
    }
}

/// One message of a prompt (`schema.ts`: `PromptMessage`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptMessage {
    /// Who speaks it.
    pub role: MessageRole,
    /// What it says.
    pub content: Content,
}

impl PromptMessage {
    /// A text message from the user.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: MessageRole::User,
            content: Content::text(text),
        }
    }

    /// A text message from the assistant.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: MessageRole::Assistant,
            content: Content::text(text),
        }
    }

    /// A message with any content block.
    pub fn new(role: MessageRole, content: Content) -> Self {
        Self { role, content }
    }
}

/// A prompt's arguments as `prompts/get` gives them.
pub type PromptArguments = HashMap<String, String>;

/// A prompt. [`definition`](Prompt::definition) is what `mcp/listPrompts`
/// shows (read once, when the server is built);
/// [`arguments`](Prompt::arguments) are listed by `prompts/list`, and
/// [`messages`](Prompt::messages) answers `prompts/get` — by default one
/// message with the definition's content (a system prompt as a `user`
/// message).
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
#[async_trait]
pub trait Prompt: Send + Sync + 'static {
    /// The prompt as `mcp/listPrompts` shows it.
    fn definition(&self) -> PromptDefinition;

    /// The arguments `prompts/get` fills (none by default).
    fn arguments(&self) -> Vec<PromptArgument> {
        Vec::new()
    }

    /// The messages for `arguments` (every required one is present). An
    /// `Err` fails `prompts/get` with its code (`-32602` for
    /// [`ToolError::with_code`]`(INVALID_PARAMS, ..)`, else `-32603`).
    async fn messages(&self, arguments: &PromptArguments) -> Result<Vec<PromptMessage>, ToolError> {
        let _ = arguments;
        let definition = self.definition();
        Ok(vec![PromptMessage::new(
            definition.role.into(),
            Content::text(definition.content),
        )])
    }
}

impl Prompt for PromptDefinition {
    fn definition(&self) -> PromptDefinition {
        self.clone()
    }
}

/// A prompt whose messages an async function makes from its arguments; its
/// definition (for MCP v1.0's listing) and declared arguments are given.
///
/// ```
/// use clawmcp::prompt::{prompt_fn, PromptArgument, PromptMessage};
/// use clawmcp::protocol::{PromptDefinition, Role};
///
/// let summarize = prompt_fn(
///     PromptDefinition {
///         mcp_id: "mcp://example/prompts/summarize:v1".into(),
///         name: "summarize".into(),
///         description: Some("Summarizes a text.".into()),
///         role: Role::User,
///         content: "Summarize the following text.".into(),
///     },
///     [PromptArgument::required("text", "The text to summarize.")],
///     |args| async move {
///         Ok(vec![PromptMessage::user(format!("Summarize the following text.\n\n{}", args["text"]))])
///     },
/// );
/// # let _ = clawmcp::Server::builder().prompt(summarize).build().unwrap();
/// ```
pub fn prompt_fn<F, Fut>(
    definition: PromptDefinition,
    arguments: impl IntoIterator<Item = PromptArgument>,
    messages: F,
) -> FnPrompt<F, Fut>
where
    F: Fn(PromptArguments) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<PromptMessage>, ToolError>> + Send + 'static,
{
    FnPrompt {
        definition,
        arguments: arguments.into_iter().collect(),
        messages,
        _future: PhantomData,
    }
}

/// The prompt [`prompt_fn`] returns.
pub struct FnPrompt<F, Fut> {
    definition: PromptDefinition,
    arguments: Vec<PromptArgument>,
    messages: F,
    _future: PhantomData<fn() -> Fut>,
}

#[async_trait]
impl<F, Fut> Prompt for FnPrompt<F, Fut>
where
    F: Fn(PromptArguments) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<PromptMessage>, ToolError>> + Send + 'static,
{
    fn definition(&self) -> PromptDefinition {
        self.definition.clone()
    }

    fn arguments(&self) -> Vec<PromptArgument> {
        self.arguments.clone()
    }

    async fn messages(&self, arguments: &PromptArguments) -> Result<Vec<PromptMessage>, ToolError> {
        (self.messages)(arguments.clone()).await
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
