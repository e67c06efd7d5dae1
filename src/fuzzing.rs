//! Entry points for the fuzz targets in `fuzz/`: each runs one of the fast
//! path's hand-written readers on an input and panics where it disagrees
//! with serde_json or jsonschema. Not part of the API: hidden, and only
//! with the `fuzzing` feature.

use serde_json::Value;

use crate::engine::quick_check::{QuickCheck, differential};
use crate::engine::validate;
use crate::jsonrpc::plain_call;

/// Reads `text` with the one-pass reader of plain tool calls; panics when
/// what it takes is not what serde's reading takes, or does not read as a
/// value. Returns whether it took the text.
pub fn plain_call(text: &str) -> bool {
    plain_call::differential::agrees(text)
}

/// Whether `schema` is in the quick check's subset (else
/// [`quick_check`] checks nothing).
pub fn in_quick_subset(schema: &Value) -> bool {
    QuickCheck::compile(schema).is_some()
}

/// Checks `text` against `schema` with the quick check (when the schema is
/// in its subset); panics when it admits what the full validator refuses,
/// or answers otherwise for the same text spaced out. Returns whether it
/// admitted the text.
pub fn quick_check(schema: &Value, text: &str) -> bool {
    let Some(quick) = QuickCheck::compile(schema) else {
        return false;
    };
    let Ok(full) = validate::compile("fuzz", "inputSchema", schema) else {
        return false;
    };
    differential::agrees(&quick, &full, schema, text).is_some_and(|(admitted, _)| admitted)
}
