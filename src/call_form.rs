//! How a protocol writes a tool call, as data: the method, the params
//! member naming the tool, and the members read with it. The one-pass
//! readers of calls (`fast::plain_call`, `jsonrpc::parse`) read by it and
//! name no protocol of their own; the dialects give the table.

/// The most params members a [`CallForm`] keeps (besides its tool,
/// `arguments` and `_meta`).
pub(crate) const KEPT: usize = 2;

/// The most `_meta` members a [`CallForms`] keeps (with the feature
/// `otel`, three more: a call's trace context).
#[cfg(not(feature = "otel"))]
pub(crate) const KEPT_META: usize = 4;
/// The most `_meta` members a [`CallForms`] keeps (with the feature
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

/// The tool calls the server reads in one pass, and the members of their
/// `_meta` kept as text (at most [`KEPT_META`], in this order).
#[derive(Debug)]
pub(crate) struct CallForms {
    pub(crate) forms: &'static [CallForm],
    pub(crate) meta: &'static [&'static str],
    /// A searcher for each form's method, made at first use (a quick look
    /// for the method's text before serde reads a call).
    pub(crate) finders: std::sync::OnceLock<Vec<memchr::memmem::Finder<'static>>>,
}

impl CallForms {
    /// The first form whose method `text` holds, if any.
    pub(crate) fn named_in(&self, text: &[u8]) -> Option<&'static CallForm> {
        let finders = self.finders.get_or_init(|| {
            let forms = self.forms.iter();
            forms
                .map(|f| memchr::memmem::Finder::new(f.method))
                .collect()
        });
        let forms = self.forms;
        (forms.iter().zip(finders))
            .find(|(_, finder)| finder.find(text).is_some())
            .map(|(form, _)| form)
    }
}
