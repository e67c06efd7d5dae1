//! The quick check held to the full validator, for its generated-input
//! tests and its fuzz target: it admits only what jsonschema accepts, and
//! spacing a text out changes nothing.

use serde_json::Value;

use super::QuickCheck;

/// Whether `quick` admits `text` only where `full` accepts it, and alike
/// when the text is spaced out; `None` when the text is not JSON.
pub(crate) fn agrees(
    quick: &QuickCheck,
    full: &jsonschema::Validator,
    schema: &Value,
    text: &str,
) -> Option<(bool, bool)> {
    let value = serde_json::from_str::<Value>(text).ok()?;
    let is_valid = full.is_valid(&value);
    // The same text spaced out (no pooled string holds `,` or `:`).
    let spaced = format!(" {} ", text.replace(',', " ,\n").replace(':', "\t: "));
    let admitted = quick.admits(text);
    assert_eq!(admitted, quick.admits(&spaced), "{spaced}");
    assert!(!admitted || is_valid, "admitted {text} against {schema}");
    Some((admitted, is_valid))
}
