//! How a protocol writes a tool call, as data: the method, the params
//! member naming the tool, and the members read with it. The one-pass
//! readers of calls (`fast::plain_call`, `jsonrpc::parse`) read by it and
//! name no protocol of their own; the dialects give the table.

/// The most params members a [`CallForm`] keeps (besides its tool,
/// `arguments` and `_meta`).
pub(crate) const KEPT: usize = 2;

/// The most `_meta` members a [`CallForms`] keeps.
pub(crate) const KEPT_META: usize = 4;

/// How a protocol writes a tool call.
#[derive(Debug)]
pub(crate) struct CallForm {
    /// The request's method.
    pub(crate) method: &'static str,
    /// The params member that names the tool (a string).
    pub(crate) tool: &'static str,
    /// Whether `arguments` must be an object when present (else any
    /// value, `null` reading as none).
    pub(crate) object_arguments: bool,
    /// Params members kept as text, in this order (at most [`KEPT`]).
    pub(crate) kept: &'static [&'static str],
}

/// The tool calls the server reads in one pass, and the members of their
/// `_meta` kept as text (at most [`KEPT_META`], in this order).
#[derive(Debug)]
pub(crate) struct CallForms {
    pub(crate) forms: &'static [CallForm],
    pub(crate) meta: &'static [&'static str],
}
