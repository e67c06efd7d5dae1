//! The one-pass readers of tool calls held to the general reading, for
//! their generated-input tests and their fuzz target: what the plain reader
//! (`fast::plain_call`) takes, serde's reading takes alike (the same id,
//! method and params), and it reads as a value; what serde's one-pass
//! reading takes, the general reading (the envelope, then the params)
//! reads alike.

use super::{CallTable, Envelope, Incoming, classify, from_plain, read_tool_call_with_serde};
use crate::fast::plain_call::read;

/// What a reading made of a tool call: id, method and params.
pub(crate) fn summary(incoming: &Incoming<'_>) -> Option<String> {
    match incoming {
        Incoming::Request {
            id,
            method,
            call: Some(params),
            ..
        } => Some(format!("{id:?} {method} {params:?}")),
        _ => None,
    }
}

/// serde's reading: its one-pass reading, else the general one.
pub(crate) fn serde_reading<T: CallTable>(text: &str) -> Option<String> {
    if let Some(incoming) = read_tool_call_with_serde::<T>(text) {
        return summary(&incoming);
    }
    general_reading::<T>(text)
}

/// The general reading: the envelope, then the params as the dialect reads
/// them.
pub(crate) fn general_reading<T: CallTable>(text: &str) -> Option<String> {
    let envelope: Envelope<'_> = serde_json::from_str(text).ok()?;
    let Incoming::Request {
        id,
        method,
        params: Some(raw),
        call: None,
    } = classify(envelope)
    else {
        return None;
    };
    if !raw.get().starts_with('{') {
        return None;
    }
    let form = T::FORMS.iter().find(|form| form.method == method)?;
    let params = super::read_params(form, T::META, raw.get()).ok()?;
    Some(format!("{id:?} {method} {params:?}"))
}

/// The reference reading: the params into a value, arguments and all.
/// What the plain reader takes must read so too.
pub(crate) fn value_reading(text: &str) -> bool {
    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Message {
        jsonrpc: String,
        params: serde_json::Map<String, serde_json::Value>,
    }
    serde_json::from_str::<Message>(text).is_ok_and(|m| {
        m.params
            .get("arguments")
            .is_some_and(serde_json::Value::is_object)
    })
}

/// Whether the plain reader takes `text` as a call of table `T`; panics
/// where what it reads differs from serde's reading, or does not read as
/// a value, and where serde's one-pass reading differs from the general
/// one.
pub(crate) fn agrees<T: CallTable>(text: &str) -> bool {
    if let Some(one_pass) = read_tool_call_with_serde::<T>(text) {
        assert_eq!(summary(&one_pass), general_reading::<T>(text), "{text}");
    }
    let plain = read::<T>(text).map(from_plain).as_ref().and_then(summary);
    if let Some(plain) = &plain {
        assert_eq!(Some(plain), serde_reading::<T>(text).as_ref(), "{text}");
        // (Within the nesting a message-wide value reading allows.)
        assert!(
            value_reading(text) || text.matches('[').count() > 100,
            "{text}"
        );
    }
    plain.is_some()
}

#[cfg(test)]
pub(crate) mod tests;
