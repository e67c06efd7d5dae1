//! The [`Prompt`] trait. A [`PromptDefinition`] is itself a prompt.

use crate::protocol::PromptDefinition;

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
