//! The [`Prompt`] trait (a [`PromptDefinition`] is itself a prompt),
//! [`prompt_fn`] for prompts whose messages a function makes from their
//! arguments, and [`PromptTemplate`], a prompt with placeholders filled at
//! build time or, as its arguments, at `prompts/get`.

use std::collections::HashMap;
use std::future::Future;
use std::marker::PhantomData;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::content::Content;
pub use crate::content::MessageRole;
use crate::definition::{Presentation, PromptDefinition, Role};
use crate::error::{BuildError, ToolError};
use crate::tool::ToolContext;

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
/// use clawmcp::definition::{PromptDefinition, Role};
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

    /// Its title and icons as the Model Context Protocol lists them (none
    /// by default; read once when the server is built).
    fn presentation(&self) -> Presentation {
        Presentation::default()
    }

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

    /// The messages for `arguments`, with the request's context: for a
    /// prompt that asks its client something first
    /// ([`ToolContext::elicit`], [`sample`](ToolContext::sample),
    /// [`roots`](ToolContext::roots)) — in a 2026-07-28 request the
    /// question travels in an `InputRequiredResult` and this runs again on
    /// the retry, as a tool does. By default [`messages`](Self::messages).
    async fn messages_with(
        &self,
        arguments: &PromptArguments,
        ctx: &ToolContext,
    ) -> Result<Vec<PromptMessage>, ToolError> {
        let _ = ctx;
        self.messages(arguments).await
    }

    /// Checks the prompt when the server is built: an `Err` fails
    /// `build()` (default: nothing to check).
    fn check(&self) -> Result<(), BuildError> {
        Ok(())
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
/// use clawmcp::definition::{PromptDefinition, Role};
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
/// registered as it is: [`fill`](Self::fill) fixes a placeholder's value
/// when the server is built; every placeholder left unfilled is an argument
/// of the prompt (required, in order of first appearance; describe it with
/// [`argument`](Self::argument)), filled by the client at the Model Context
/// Protocol's `prompts/get`. `{{` and `}}` stand for literal braces.
///
/// MCP v1.0's `mcp/listPrompts` has no arguments: it shows the content with
/// the fixed values in and the arguments' placeholders as written
/// (`{topic}`). `build()` fails for an unmatched brace, or a value or
/// description given for a placeholder the template does not have.
///
/// ```
/// use clawmcp::prompt::PromptTemplate;
/// use clawmcp::definition::Role;
/// use clawmcp::testing::TestClient;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let review = PromptTemplate::new(
///     "mcp://example/prompts/review:v1", "review", Role::User,
///     "Review this {language} code in {{at most}} {limit} words:\n{code}",
/// )
/// .description("A code review.")
/// .fill("language", "Rust")
/// .fill("limit", "50")
/// .argument("code", "The code to review.");
/// let server = clawmcp::Server::builder().prompt(review).build().unwrap();
///
/// let mut client = TestClient::model_context(&server, serde_json::json!({})).await;
/// let got = client.get_prompt("review", serde_json::json!({"code": "fn main() {}"})).await.unwrap();
/// assert_eq!(got["messages"][0]["content"]["text"],
///     "Review this Rust code in {at most} 50 words:\nfn main() {}");
/// # }
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
    described: Vec<(String, String)>,
}

/// A piece of a parsed template.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    /// Literal text (escapes already undone).
    Text(std::borrow::Cow<'a, str>),
    /// A `{name}` placeholder.
    Placeholder(&'a str),
}

impl PromptTemplate {
    /// A template; fix placeholders with [`fill`](Self::fill), describe the
    /// rest with [`argument`](Self::argument).
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
            described: Vec::new(),
        }
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Gives placeholder `{name}` a fixed value.
    pub fn fill(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.values.push((name.into(), value.into()));
        self
    }

    /// Describes the argument that placeholder `{name}` (left unfilled)
    /// stands for, as `prompts/list` shows it.
    pub fn argument(mut self, name: impl Into<String>, description: impl Into<String>) -> Self {
        self.described.push((name.into(), description.into()));
        self
    }

    /// The prompt with every placeholder filled by [`fill`](Self::fill),
    /// as a plain [`PromptDefinition`].
    ///
    /// # Errors
    /// A placeholder has no value, a value has no placeholder, or a brace
    /// is unmatched.
    pub fn render(&self) -> Result<PromptDefinition, BuildError> {
        self.check()?;
        let arguments = PromptArguments::new();
        let content = self
            .fill_in(&arguments)
            .map_err(|name| self.problem(format!("placeholder {{{name}}} has no value")))?;
        Ok(self.definition_with(content))
    }

    fn problem(&self, problem: String) -> BuildError {
        BuildError::PromptTemplate {
            mcp_id: self.mcp_id.clone(),
            problem,
        }
    }

    fn definition_with(&self, content: String) -> PromptDefinition {
        PromptDefinition {
            mcp_id: self.mcp_id.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            role: self.role,
            content,
        }
    }

    /// The template's pieces, or what is wrong with its braces.
    fn pieces(&self) -> Result<Vec<Piece<'_>>, String> {
        let mut pieces = Vec::new();
        let mut rest = self.template.as_str();
        while let Some((text, tail)) = rest
            .find(['{', '}'])
            .and_then(|at| rest.split_at_checked(at))
        {
            if !text.is_empty() {
                pieces.push(Piece::Text(text.into()));
            }
            if let Some(after) = tail.strip_prefix("{{") {
                pieces.push(Piece::Text("{".into()));
                rest = after;
                continue;
            }
            if let Some(after) = tail.strip_prefix("}}") {
                pieces.push(Piece::Text("}".into()));
                rest = after;
                continue;
            }
            let Some((name, after)) = tail.strip_prefix('{').and_then(|t| t.split_once('}')) else {
                return Err(match tail.starts_with('}') {
                    true => "an unmatched '}' (write '}}' for a brace)".into(),
                    false => "an unmatched '{' (write '{{' for a brace)".into(),
                });
            };
            pieces.push(Piece::Placeholder(name));
            rest = after;
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.into()));
        }
        Ok(pieces)
    }

    fn value(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The text with fixed values and `arguments` in; `Err(name)` for a
    /// placeholder that has neither. (Braces are checked at build.)
    fn fill_in(&self, arguments: &PromptArguments) -> Result<String, String> {
        let mut content = String::with_capacity(self.template.len());
        for piece in self.pieces().unwrap_or_default() {
            match piece {
                Piece::Text(text) => content.push_str(&text),
                Piece::Placeholder(name) => {
                    let value = self
                        .value(name)
                        .or_else(|| arguments.get(name).map(String::as_str))
                        .ok_or_else(|| name.to_owned())?;
                    content.push_str(value);
                }
            }
        }
        Ok(content)
    }
}

#[async_trait]
impl Prompt for PromptTemplate {
    /// The content with the fixed values in and the arguments'
    /// placeholders as written.
    fn definition(&self) -> PromptDefinition {
        let mut content = String::with_capacity(self.template.len());
        for piece in self.pieces().unwrap_or_default() {
            match piece {
                Piece::Text(text) => content.push_str(&text),
                Piece::Placeholder(name) => match self.value(name) {
                    Some(value) => content.push_str(value),
                    None => {
                        content.push('{');
                        content.push_str(name);
                        content.push('}');
                    }
                },
            }
        }
        self.definition_with(content)
    }

    fn arguments(&self) -> Vec<PromptArgument> {
        let mut arguments: Vec<PromptArgument> = Vec::new();
        for piece in self.pieces().unwrap_or_default() {
            if let Piece::Placeholder(name) = piece
                && self.value(name).is_none()
                && !arguments.iter().any(|a| a.name == name)
            {
                arguments.push(PromptArgument {
                    name: name.to_owned(),
                    description: self
                        .described
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, d)| d.clone()),
                    required: true,
                });
            }
        }
        arguments
    }

    async fn messages(&self, arguments: &PromptArguments) -> Result<Vec<PromptMessage>, ToolError> {
        let content = self.fill_in(arguments).map_err(|name| {
            ToolError::with_code(
                crate::error::ErrorCode::INVALID_PARAMS,
                format!("missing argument {name:?} for prompt {}", self.name),
            )
        })?;
        Ok(vec![PromptMessage::new(
            self.role.into(),
            Content::text(content),
        )])
    }

    fn check(&self) -> Result<(), BuildError> {
        let pieces = self.pieces().map_err(|p| self.problem(p))?;
        // A placeholder names an argument a client fills in: a word.
        let unnamable = pieces.iter().find_map(|piece| match piece {
            Piece::Placeholder(name)
                if name.is_empty()
                    || !name
                        .chars()
                        .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.')) =>
            {
                Some(*name)
            }
            _ => None,
        });
        if let Some(name) = unnamable {
            return Err(self.problem(format!(
                "placeholder {{{name}}}: a name is letters, digits, '_', '-' or '.' \
                 (write '{{{{' for a literal brace)"
            )));
        }
        let has = |name: &str| pieces.contains(&Piece::Placeholder(name));
        if let Some((name, _)) = self.values.iter().find(|(n, _)| !has(n)) {
            return Err(self.problem(format!(
                "a value for {{{name}}}, which the template does not have"
            )));
        }
        if let Some((name, _)) = self.described.iter().find(|(n, _)| !has(n)) {
            return Err(self.problem(format!(
                "a description of argument {{{name}}}, which the template does not have"
            )));
        }
        if let Some((name, _)) = self.described.iter().find(|(n, _)| self.value(n).is_some()) {
            return Err(self.problem(format!(
                "{{{name}}} is both filled and described as an argument"
            )));
        }
        Ok(())
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
    fn rendering_needs_every_placeholder_filled_and_braces_matched() {
        assert!(template("{a}").render().is_err());
        assert!(template("none").fill("a", "x").render().is_err());
        assert!(template("{a").fill("a", "x").render().is_err());
        assert!(template("a}").render().is_err());
    }

    #[test]
    fn unfilled_placeholders_are_required_arguments_in_order_of_first_use() {
        let p = template("{b} {a} {fixed} {b}")
            .fill("fixed", "F")
            .argument("a", "The a.");
        assert!(p.check().is_ok());
        let arguments = p.arguments();
        let names: Vec<&str> = arguments.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["b", "a"]);
        assert!(arguments.iter().all(|a| a.required));
        assert_eq!(arguments[1].description.as_deref(), Some("The a."));
        assert_eq!(p.definition().content, "{b} {a} F {b}");
    }

    #[test]
    fn a_template_checks_its_braces_values_and_descriptions_at_build() {
        assert!(template("{a").check().is_err());
        assert!(template("}").check().is_err());
        assert!(template("{a}").fill("b", "x").check().is_err());
        assert!(template("{a}").argument("b", "x").check().is_err());
        assert!(
            template("{a}")
                .fill("a", "x")
                .argument("a", "x")
                .check()
                .is_err()
        );
        assert!(template("{{a}}").check().is_ok());
        assert!(template("{}").check().is_err(), "an empty name");
        assert!(template("{a{b}").check().is_err(), "a brace in a name");
        assert!(template("{two words}").check().is_err());
        assert!(template("{snake_case-and.dots9}").check().is_ok());
        assert!(template("{{a}}").arguments().is_empty());
    }

    #[tokio::test]
    async fn messages_fill_the_arguments_and_fixed_values() {
        let p = template("{x}+{y}").fill("x", "1");
        let args = PromptArguments::from([("y".to_owned(), "2".to_owned())]);
        let messages = p.messages(&args).await.unwrap();
        assert_eq!(messages, vec![PromptMessage::user("1+2")]);
        let missing = p.messages(&PromptArguments::new()).await.unwrap_err();
        assert_eq!(missing.code(), crate::error::ErrorCode::INVALID_PARAMS);
    }
}
