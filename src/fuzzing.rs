//! Entry points for the fuzz targets in `fuzz/`: each runs one of the fast
//! path's hand-written readers, or its writer, on an input and panics where
//! it disagrees with serde_json or jsonschema. Not part of the API: hidden, and only
//! with the `fuzzing` feature.

use serde_json::Value;

use crate::engine::validate;
use crate::fast::quick_check::{QuickCheck, differential};
use crate::jsonrpc;

/// Reads `text` with the one-pass readers of tool calls; panics when what
/// the plain reader takes is not what serde's reading takes, or does not
/// read as a value, or when what serde's one-pass reading takes is not
/// what the general reading reads. Returns whether the plain reader took
/// the text.
pub fn plain_call(text: &str) -> bool {
    jsonrpc::differential::agrees::<crate::dialect::Calls>(text)
}

/// Writes `text` as a JSON string with the fast path's writer; panics
/// when that is not, byte for byte, what serde_json writes.
pub fn escape(text: &str) {
    let mut fast = Vec::new();
    crate::fast::escape::write_quoted(&mut fast, text);
    let serde = serde_json::to_vec(text).unwrap_or_default();
    assert_eq!(
        fast, serde,
        "the fast writer and serde_json differ on {text:?}"
    );
}

/// Checks the JSON text prefilter on `text`, for the needle its first byte
/// picks: panics when a string of the text (a key or a value, as
/// serde_json reads it) holds the needle and the prefilter says it cannot.
pub fn prefilter(data: &[u8]) {
    use crate::fast::prefilter::{ESCAPE_NEEDLES, Prefilter};
    let Some((pick, text)) = data.split_first() else {
        return;
    };
    let needles = || {
        ["initialize", "io.modelcontextprotocol/protocolVersion"]
            .into_iter()
            .chain(ESCAPE_NEEDLES)
    };
    let Some(needle) = needles().nth(usize::from(*pick) % needles().count()) else {
        return;
    };
    let Ok(value) = serde_json::from_slice::<Value>(text) else {
        return;
    };
    fn holds(value: &Value, needle: &str) -> bool {
        match value {
            Value::String(s) => s.contains(needle),
            Value::Array(items) => items.iter().any(|v| holds(v, needle)),
            Value::Object(map) => map
                .iter()
                .any(|(k, v)| k.contains(needle) || holds(v, needle)),
            _ => false,
        }
    }
    if holds(&value, needle) {
        assert!(
            Prefilter::new(needle).may_hold(text),
            "the prefilter missed {needle:?} in {:?}",
            String::from_utf8_lossy(text)
        );
    }
}

/// One schema of the quick check's subset, compiled once with its full
/// validator, for a fuzz target to check many texts against.
pub struct QuickCheckTarget {
    schema: Value,
    quick: QuickCheck,
    full: jsonschema::Validator,
}

impl QuickCheckTarget {
    /// The target for `schema`; `None` when the schema is not in the quick
    /// check's subset or is not a valid schema.
    pub fn new(schema: Value) -> Option<Self> {
        let quick = QuickCheck::compile(&schema)?;
        let full = validate::compile("fuzz", "inputSchema", &schema).ok()?;
        Some(Self {
            schema,
            quick,
            full,
        })
    }

    /// Checks `text` with the quick check; panics when it admits what the
    /// full validator refuses, or answers otherwise for the same text
    /// spaced out. Returns whether it admitted the text.
    pub fn check(&self, text: &str) -> bool {
        differential::agrees(&self.quick, &self.full, &self.schema, text)
            .is_some_and(|(admitted, _)| admitted)
    }
}
