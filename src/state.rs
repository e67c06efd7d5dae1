//! Shared state for tools, without clone ceremony: values registered with
//! [`ServerBuilder::state`](crate::ServerBuilder::state), one per type,
//! reached from any tool through
//! [`ToolContext::state`](crate::ToolContext::state), and handed to typed
//! tools by the [`State`] extractor (as axum's `State`).
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use clawmcp::state::State;
//! use clawmcp::typed_tool;
//! use clawmcp::{Server, ToolError};
//!
//! #[derive(Clone, Default)]
//! struct Counter(Arc<Mutex<u64>>);
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Step { by: u64 }
//!
//! #[derive(serde::Serialize, schemars::JsonSchema)]
//! struct Total { total: u64 }
//!
//! async fn bump(State(counter): State<Counter>, step: Step) -> Result<Total, ToolError> {
//!     let mut total = counter.0.lock().map_err(|_| ToolError::new("poisoned"))?;
//!     *total += step.by;
//!     Ok(Total { total: *total })
//! }
//!
//! let server = Server::builder()
//!     .state(Counter::default())
//!     .tool(typed_tool("mcp://example/tools/bump:v1", "bump", "Adds to a counter.", bump))
//!     .build()
//!     .unwrap();
//! # drop(server);
//! ```

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// A registered state value, handed to a typed tool (`|State(s): State<S>,
/// args| ...`): a clone of the value registered with
/// [`ServerBuilder::state`](crate::ServerBuilder::state) — typically an
/// `Arc` or a struct of them, so the clone is cheap and shares the state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct State<S>(pub S);

/// The type of a state value a tool needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateType {
    pub(crate) id: TypeId,
    pub(crate) name: &'static str,
}

impl StateType {
    /// The type `S`.
    pub fn of<S: 'static>() -> Self {
        Self {
            id: TypeId::of::<S>(),
            name: std::any::type_name::<S>(),
        }
    }

    /// The type's name.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// The registered values, by type; fixed at build.
#[derive(Default)]
pub(crate) struct States(OnceLock<HashMap<TypeId, Box<dyn Any + Send + Sync>>>);

impl std::fmt::Debug for States {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("States")
            .field(&self.0.get().map_or(0, HashMap::len))
            .finish()
    }
}

impl States {
    /// Fixes the values (once, at build).
    pub(crate) fn set(&self, values: HashMap<TypeId, Box<dyn Any + Send + Sync>>) {
        let _ = self.0.set(values);
    }

    /// The value of type `S`, if one was registered.
    pub(crate) fn get<S: 'static>(&self) -> Option<&S> {
        self.0.get()?.get(&TypeId::of::<S>())?.downcast_ref()
    }

    /// Whether a value of this type was registered.
    pub(crate) fn has(&self, ty: StateType) -> bool {
        self.0
            .get()
            .is_some_and(|values| values.contains_key(&ty.id))
    }
}

/// Shared between a server's handle and its builder.
pub(crate) type SharedStates = Arc<States>;
