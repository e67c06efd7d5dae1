//! How a protocol writes a tool call, as data: the method, the params
//! member naming the tool, and the members read with it. The one-pass
//! readers of calls (`fast::plain_call`, `jsonrpc::parse`) read by it and
//! name no protocol of their own; the dialects give the table.

/// The most params members a [`CallForm`] keeps (besides its tool,
/// `arguments` and `_meta`).
pub(crate) const KEPT: usize = 2;

/// The most `_meta` members a [`CallTable`] keeps (with the feature
/// `otel`, three more: a call's trace context).
#[cfg(not(feature = "otel"))]
pub(crate) const KEPT_META: usize = 4;
/// The most `_meta` members a [`CallTable`] keeps (with the feature
/// `otel`, three more: a call's trace context).
#[cfg(feature = "otel")]
pub(crate) const KEPT_META: usize = 7;

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

/// The tool calls a server reads in one pass, and the members of their
/// `_meta` kept as text (at most [`KEPT_META`], in this order): a table a
/// protocol layer gives as a type, so that the readers see its names as
/// constants.
pub(crate) trait CallTable: 'static {
    /// The forms, the first whose method matches first.
    const FORMS: &'static [CallForm];
    /// The `_meta` members kept.
    const META: &'static [&'static str];
}
