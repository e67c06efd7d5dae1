//! Completion of prompt arguments and template variables
//! (`completion/complete` in the Model Context Protocol dialect): a
//! [`Complete`] provider per argument or variable, registered with
//! [`ServerBuilder::complete_prompt_argument`](crate::ServerBuilder::complete_prompt_argument)
//! or [`ResourceTemplate::complete`](crate::template::ResourceTemplate::complete).
//!
//! A list of values is a provider: it offers those that start with what the
//! user typed (ignoring case).
//!
//! ```
//! use clawmcp::completion::{Complete, CompletionContext};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let cities = vec!["paris", "park", "rome"];
//! let done = cities.complete("PA", &CompletionContext::default()).await.unwrap();
//! assert_eq!(done.values, ["paris", "park"]);
//! # }
//! ```

use std::collections::BTreeMap;
use std::future::Future;

use async_trait::async_trait;

use crate::error::ToolError;

/// At most this many values go into one completion (`schema.ts`).
pub const MAX_VALUES: usize = 100;

/// What a completion offers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    /// Suggested values (at most [`MAX_VALUES`] are sent).
    pub values: Vec<String>,
    /// How many values there are in all, if known.
    pub total: Option<usize>,
    /// Whether there are more than those sent.
    pub has_more: bool,
}

impl Completion {
    /// A completion of these values (cut to [`MAX_VALUES`], with `total`
    /// and `has_more` set accordingly).
    pub fn of(values: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut values: Vec<String> = values.into_iter().map(Into::into).collect();
        let total = values.len();
        values.truncate(MAX_VALUES);
        Self {
            has_more: total > values.len(),
            total: Some(total),
            values,
        }
    }
}

/// What else a client knows when it asks for a completion.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompletionContext {
    /// Arguments (or variables) the user already filled in.
    pub arguments: BTreeMap<String, String>,
}

/// Suggests values for one prompt argument or template variable.
#[async_trait]
pub trait Complete: Send + Sync + 'static {
    /// Values for what the user typed so far (`value`).
    async fn complete(
        &self,
        value: &str,
        context: &CompletionContext,
    ) -> Result<Completion, ToolError>;
}

#[async_trait]
impl<S: AsRef<str> + Send + Sync + 'static> Complete for Vec<S> {
    async fn complete(
        &self,
        value: &str,
        _context: &CompletionContext,
    ) -> Result<Completion, ToolError> {
        let typed = value.to_lowercase();
        Ok(Completion::of(
            self.iter()
                .map(AsRef::as_ref)
                .filter(|v| v.to_lowercase().starts_with(&typed)),
        ))
    }
}

/// A provider made of an async function of the typed value and the context.
///
/// ```
/// use clawmcp::completion::{complete_fn, Completion};
///
/// let numbers = complete_fn(|value: String, _ctx| async move {
///     Ok(Completion::of((1..=3).map(|n| format!("{value}{n}"))))
/// });
/// # let _ = numbers;
/// ```
pub fn complete_fn<F, Fut>(function: F) -> FnComplete<F>
where
    F: Fn(String, CompletionContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Completion, ToolError>> + Send + 'static,
{
    FnComplete(function)
}

/// The provider [`complete_fn`] returns.
pub struct FnComplete<F>(F);

#[async_trait]
impl<F, Fut> Complete for FnComplete<F>
where
    F: Fn(String, CompletionContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Completion, ToolError>> + Send + 'static,
{
    async fn complete(
        &self,
        value: &str,
        context: &CompletionContext,
    ) -> Result<Completion, ToolError> {
        (self.0)(value.to_owned(), context.clone()).await
    }
}
