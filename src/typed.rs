//! Typed tools (feature `schemars`, on by default): an async function of a
//! `Deserialize + JsonSchema` argument type returning `Result<O, E>` with
//! `O: Serialize + JsonSchema`. Both schemas are derived from the types
//! (doc comments become descriptions); arguments are validated against the
//! derived `inputSchema` first, then deserialised; `E` is answered `-32000`
//! with its text (an `isError` result in the Model Context Protocol). The
//! output is structured output: `output` in MCP v1.0; `structuredContent`
//! (when `O`'s schema is an object schema) plus its JSON as a text block in
//! the Model Context Protocol.
//!
//! A typed tool is a [`Tool`] like any other: validation, time limits,
//! cancellation and panics take the same path inside the server.
//!
//! ```
//! use clawmcp::typed::typed_tool;
//! use clawmcp::{Server, ToolError};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(deny_unknown_fields)] // becomes "additionalProperties": false
//! struct Greet {
//!     /// Who to greet.
//!     name: String,
//!     /// How many exclamation marks (none if absent).
//!     excitement: Option<u8>,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Greeting {
//!     /// The greeting.
//!     text: String,
//! }
//!
//! let greet = typed_tool("mcp://example/tools/greet:v1", "greet", "Greets someone.",
//!     |args: Greet| async move {
//!         let bang = "!".repeat(args.excitement.unwrap_or(0).into());
//!         Ok::<_, ToolError>(Greeting { text: format!("Hello, {}{bang}", args.name) })
//!     });
//! let server = Server::builder().tool(greet).build().unwrap();
//! # drop(server);
//! ```

use std::fmt::Display;
use std::future::Future;
use std::marker::PhantomData;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use schemars::Schema;
use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::content::{ToolOutput, output_not_json};
use crate::definition::{ToolDefinition, ToolMetadata};
use crate::error::{ErrorCode, ToolError};
use crate::handle::ServerHandle;
use crate::state::{State, StateType};
use crate::tool::{
    CallFailure, Calling, LazyContext, Tool, ToolContext, ToolOptions, tool_options_setters,
};

pub(crate) use sealed::Sealed;

mod sealed {
    /// Seals [`TypedHandler::call_lazily`](super::TypedHandler::call_lazily):
    /// code outside this crate cannot name this type, so it cannot
    /// override it.
    #[derive(Debug, Clone, Copy)]
    pub struct Sealed(pub(crate) ());
}

/// The JSON Schema (draft 2020-12) of `T`, as `schemars` derives it.
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct Point { x: f64, y: f64 }
/// let schema = clawmcp::typed::schema_of::<Point>();
/// assert_eq!(schema["type"], "object");
/// ```
///
/// Integers carry their type's full range: schemars bounds only 8- and
/// 16-bit integers, so `minimum`/`maximum` are added for the wider ones
/// (`format` `int32`, `uint32`, `int64`, `uint64`, `int`, `uint`) — an
/// out-of-range number is refused by validation, at its path, and the
/// client can see the range.
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct Page { limit: u32 }
/// let schema = clawmcp::typed::schema_of::<Page>();
/// assert_eq!(schema["properties"]["limit"]["maximum"], u32::MAX);
/// ```
pub fn schema_of<T: JsonSchema + ?Sized>() -> Value {
    SchemaSettings::draft2020_12()
        .with_transform(RecursiveTransform(bound_integers as fn(&mut Schema)))
        .into_generator()
        .into_root_schema_for::<T>()
        .into()
}

/// Adds the range of a wide integer `format` that schemars leaves open.
fn bound_integers(schema: &mut Schema) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let (minimum, maximum): (Value, Value) = match object.get("format").and_then(Value::as_str) {
        Some("int32") => (i32::MIN.into(), i32::MAX.into()),
        Some("uint32") => (0.into(), u32::MAX.into()),
        Some("int64") => (i64::MIN.into(), i64::MAX.into()),
        Some("uint64") => (0.into(), u64::MAX.into()),
        Some("int") => (isize::MIN.into(), isize::MAX.into()),
        Some("uint") => (0.into(), usize::MAX.into()),
        _ => return,
    };
    object.entry("minimum").or_insert(minimum);
    object.entry("maximum").or_insert(maximum);
}

/// An async function that can serve a typed tool, in one of four shapes
/// (`Fut: Future<Output = Result<O, E>>`):
///
/// - `Fn(A) -> Fut`
/// - `Fn(A, ToolContext) -> Fut`
/// - `Fn(State<S>, A) -> Fut`
/// - `Fn(State<S>, A, ToolContext) -> Fut`
///
/// where [`State<S>`](State) is a clone of the value registered with
/// [`ServerBuilder::state`](crate::ServerBuilder::state). `M` only tells the
/// shapes apart; it is inferred.
pub trait TypedHandler<A, O, E, M>: Send + Sync + 'static {
    /// The function's future (awaited where the tool runs: not boxed).
    type Future: Future<Output = Result<O, E>> + Send;

    /// Starts the function; `Err` when it needs state the server does not
    /// hold (which `build()` rules out for tools it registers).
    fn call(&self, arguments: A, ctx: ToolContext) -> Result<Self::Future, ToolError>;

    /// [`call`](Self::call) with a context made only if the function
    /// takes one (the server's fast path; sealed).
    #[doc(hidden)]
    fn call_lazily(
        &self,
        arguments: A,
        ctx: LazyContext<'_>,
        _: Sealed,
    ) -> Result<Self::Future, ToolError> {
        self.call(arguments, ctx.get())
    }

    /// The state type the function takes, if any.
    fn state(&self) -> Option<StateType> {
        None
    }
}

impl<F, Fut, A, O, E> TypedHandler<A, O, E, fn(A)> for F
where
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, E>> + Send,
{
    type Future = Fut;

    fn call(&self, arguments: A, _ctx: ToolContext) -> Result<Fut, ToolError> {
        Ok(self(arguments))
    }

    fn call_lazily(&self, arguments: A, _: LazyContext<'_>, _: Sealed) -> Result<Fut, ToolError> {
        Ok(self(arguments))
    }
}

impl<F, Fut, A, O, E> TypedHandler<A, O, E, fn(A, ToolContext)> for F
where
    F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, E>> + Send,
{
    type Future = Fut;

    fn call(&self, arguments: A, ctx: ToolContext) -> Result<Fut, ToolError> {
        Ok(self(arguments, ctx))
    }
}

impl<F, Fut, S, A, O, E> TypedHandler<A, O, E, fn(State<S>, A)> for F
where
    F: Fn(State<S>, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, E>> + Send,
    S: Clone + Send + Sync + 'static,
{
    type Future = Fut;

    fn call(&self, arguments: A, ctx: ToolContext) -> Result<Fut, ToolError> {
        let state = state_of::<S>(ctx.server())?;
        Ok(self(state, arguments))
    }

    fn call_lazily(&self, arguments: A, ctx: LazyContext<'_>, _: Sealed) -> Result<Fut, ToolError> {
        let state = state_of::<S>(ctx.server())?;
        Ok(self(state, arguments))
    }

    fn state(&self) -> Option<StateType> {
        Some(StateType::of::<S>())
    }
}

impl<F, Fut, S, A, O, E> TypedHandler<A, O, E, fn(State<S>, A, ToolContext)> for F
where
    F: Fn(State<S>, A, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, E>> + Send,
    S: Clone + Send + Sync + 'static,
{
    type Future = Fut;

    fn call(&self, arguments: A, ctx: ToolContext) -> Result<Fut, ToolError> {
        let state = state_of::<S>(ctx.server())?;
        Ok(self(state, arguments, ctx))
    }

    fn state(&self) -> Option<StateType> {
        Some(StateType::of::<S>())
    }
}

/// A clone of the server's `S`, or the error for a server without one.
fn state_of<S: Clone + Send + Sync + 'static>(
    server: &ServerHandle,
) -> Result<State<S>, ToolError> {
    server.state::<S>().cloned().map(State).ok_or_else(|| {
        ToolError::with_code(
            ErrorCode::INTERNAL_ERROR,
            format!(
                "the server holds no state of type {}",
                std::any::type_name::<S>()
            ),
        )
    })
}

/// The types a typed tool's function is generic over, as a `Send + Sync`
/// marker.
type Signature<A, O, E, M> = fn(A, M) -> (O, E);

/// A tool made of a typed async function; see the [module docs](self).
pub struct TypedTool {
    definition: ToolDefinition,
    options: ToolOptions,
    /// The function, its argument and output types erased.
    function: Box<dyn TypedCall>,
}

/// A typed tool's function, its types erased: called with a `Value` (the
/// [`Tool`] path) or with the arguments' JSON text (the server's fast path).
#[async_trait]
trait TypedCall: Send + Sync + 'static {
    /// Reads the arguments from a `Value` that passed `inputSchema`, runs
    /// the function and serialises its output.
    async fn call_value(
        &self,
        mcp_id: &str,
        arguments: Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError>;

    /// The same, reading the arguments straight from their JSON text, with
    /// a context made only if the function takes one; hands the call back
    /// (`Err`) when the type does not read the text.
    fn call_text<'c>(
        &self,
        arguments: &str,
        ctx: LazyContext<'c>,
    ) -> Result<Calling, LazyContext<'c>>;

    /// The state types the function takes.
    fn needs_state(&self) -> Vec<StateType>;
}

/// A function of a typed tool, with the types it is called with.
struct Typed<A, O, E, H, M> {
    handler: H,
    _types: PhantomData<Signature<A, O, E, M>>,
}

/// A typed tool: `inputSchema` from `A`, `outputSchema` from `O`.
pub fn typed_tool<A, O, E, H, M>(
    mcp_id: impl Into<String>,
    name: impl Into<String>,
    description: impl Into<String>,
    handler: H,
) -> TypedTool
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    O: Serialize + JsonSchema + Send + 'static,
    E: Display + Send + 'static,
    H: TypedHandler<A, O, E, M>,
    // Always so for a `'static` function; said, so that a call can be
    // handed to a task once polled.
    H::Future: 'static,
    M: 'static,
{
    TypedTool {
        definition: ToolDefinition {
            mcp_id: mcp_id.into(),
            name: name.into(),
            description: description.into(),
            input_schema: schema_of::<A>(),
            output_schema: schema_of::<O>(),
        },
        options: ToolOptions::default(),
        function: Box::new(Typed {
            handler,
            _types: PhantomData,
        }),
    }
}

impl TypedTool {
    tool_options_setters!();

    /// The definition as it will be listed, e.g. to adjust a derived schema.
    pub fn definition_mut(&mut self) -> &mut ToolDefinition {
        &mut self.definition
    }

    /// The server's fast path: the call with the arguments' JSON text, or
    /// the context back.
    pub(crate) fn call_text<'c>(
        &self,
        arguments: &str,
        ctx: LazyContext<'c>,
    ) -> Result<Calling, LazyContext<'c>> {
        self.function.call_text(arguments, ctx)
    }
}

impl std::fmt::Debug for TypedTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedTool")
            .field("definition", &self.definition)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Tool for TypedTool {
    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }

    fn metadata(&self) -> ToolMetadata {
        self.options.metadata.clone()
    }

    async fn call(&self, arguments: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.function
            .call_value(&self.definition.mcp_id, arguments, ctx)
            .await
    }

    fn time_limit(&self) -> Option<Duration> {
        self.options.time_limit
    }

    fn may_block(&self) -> bool {
        self.options.may_block
    }

    fn task_support(&self) -> crate::task::TaskSupport {
        self.options.task_support
    }

    fn needs_state(&self) -> Vec<StateType> {
        self.function.needs_state()
    }
}

#[async_trait]
impl<A, O, E, H, M> TypedCall for Typed<A, O, E, H, M>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    O: Serialize + JsonSchema + Send + 'static,
    E: Display + Send + 'static,
    H: TypedHandler<A, O, E, M>,
    H::Future: 'static,
    M: 'static,
{
    async fn call_value(
        &self,
        mcp_id: &str,
        arguments: Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        // The schema passed; a type stricter than its schema can still
        // refuse. Read from the borrowed value, so that on that (rare) path
        // it can be read again to find where.
        let arguments = match A::deserialize(&arguments) {
            Ok(arguments) => arguments,
            Err(e) => return Err(refused::<A>(mcp_id, &arguments, &e)),
        };
        let output = self
            .handler
            .call(arguments, ctx)?
            .await
            .map_err(|e| ToolError::new(e.to_string()))?;
        ToolOutput::serialize(&output).map_err(|e| output_not_json(mcp_id, &e))
    }

    /// `A` read straight from the text, the output only serialised (the
    /// server reads it back unless its quick check admits it). Any failure
    /// to read `A` hands the call back, and [`call_value`](Self::call_value)
    /// answers with the `Value` path's reading (a repeated key, for one,
    /// which a `Value` reads as its last occurrence).
    fn call_text<'c>(
        &self,
        arguments: &str,
        ctx: LazyContext<'c>,
    ) -> Result<Calling, LazyContext<'c>> {
        let Ok(arguments) = serde_json::from_str::<A>(arguments) else {
            return Err(ctx);
        };
        let running = self.handler.call_lazily(arguments, ctx, Sealed(()));
        Ok(Box::pin(async move {
            let output = running
                .map_err(CallFailure::Tool)?
                .await
                .map_err(|e| CallFailure::Tool(ToolError::new(e.to_string())))?;
            ToolOutput::serialized(&output).map_err(CallFailure::NotJson)
        }))
    }

    fn needs_state(&self) -> Vec<StateType> {
        self.handler.state().into_iter().collect()
    }
}

/// The error for arguments that passed the schema but that `A` refuses,
/// naming where.
fn refused<A: DeserializeOwned>(
    mcp_id: &str,
    arguments: &Value,
    error: &serde_json::Error,
) -> ToolError {
    let (path, reason) = match serde_path_to_error::deserialize::<_, A>(arguments) {
        Err(e) => (pointer(e.path()), e.inner().to_string()),
        Ok(_) => (String::new(), error.to_string()),
    };
    ToolError::with_code(
        ErrorCode::INVALID_PARAMS,
        format!("Invalid value at '{path}': {reason} in arguments for tool {mcp_id}"),
    )
}

/// A deserialisation path as a JSON Pointer (`/items/0/name`), the form
/// validation errors use.
fn pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut pointer = String::new();
    for segment in path {
        pointer.push('/');
        match segment {
            Segment::Seq { index } => pointer.push_str(&index.to_string()),
            Segment::Map { key } => pointer.push_str(&key.replace('~', "~0").replace('/', "~1")),
            Segment::Enum { variant } => pointer.push_str(variant),
            Segment::Unknown => pointer.push('?'),
        }
    }
    pointer
}
