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
    let spaced = spaced_out(text);
    let admitted = quick.admits(text);
    assert_eq!(admitted, quick.admits(&spaced), "{spaced}");
    assert!(!admitted || is_valid, "admitted {text} against {schema}");
    Some((admitted, is_valid))
}

/// `text` with whitespace around it and around every `,` and `:` outside
/// its strings: the same JSON value, spelled otherwise.
fn spaced_out(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2 + 2);
    out.push(' ');
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            ',' if !in_string => {
                out.push_str(" ,\n");
                continue;
            }
            ':' if !in_string => {
                out.push_str("\t: ");
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out.push(' ');
    out
}
