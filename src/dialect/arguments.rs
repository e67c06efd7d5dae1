//! A tool call's `arguments` as the request wrote them: borrowed JSON text,
//! read in both dialects' params without building a `Value`. A tool that
//! reads JSON text gets the text ([`Arguments::Text`]); any other tool gets
//! the value read from it.
//!
//! Reading params into a `Value` refused arguments nested deeper than
//! serde_json reads (127 levels from the params object, which is one of
//! them); capturing text does not count levels, so [`ArgumentsText`]
//! counts them, and refuses exactly what reading a value refused. On a
//! refusal the dialect reads the params again as it used to, for the same
//! error text.

use memchr::memchr2;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::server::{Arguments, Catalog};

/// How deep arguments may nest (their own object is level 1): serde_json
/// reads 127 levels from the root it starts at, the params object.
const MAX_NESTING: usize = 126;

/// The borrowed text of `arguments`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArgumentsText<'a>(&'a RawValue);

impl<'a> ArgumentsText<'a> {
    /// The text.
    pub(crate) fn get(self) -> &'a str {
        self.0.get()
    }

    /// What tool `tool` gets: the text itself, or the value read from it
    /// (which does not fail: the text was read once, within the limits).
    pub(crate) fn for_tool(
        self,
        catalog: &Catalog,
        tool: usize,
    ) -> Result<Arguments, serde_json::Error> {
        match catalog.tools.get(tool) {
            Some(compiled) if compiled.quick_input.is_some() => {
                Ok(Arguments::Text(self.0.to_owned()))
            }
            _ => serde_json::from_str(self.get()).map(Arguments::Value),
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for ArgumentsText<'a> {
    fn deserialize<D: Deserializer<'de>>(reader: D) -> Result<Self, D::Error> {
        let raw = <&'a RawValue>::deserialize(reader)?;
        if nests_within(raw.get().as_bytes(), MAX_NESTING) {
            Ok(Self(raw))
        } else {
            Err(D::Error::custom("recursion limit exceeded"))
        }
    }
}

/// `arguments` that must be a JSON object (MCP v1.0).
pub(crate) fn object<'de: 'a, 'a, D: Deserializer<'de>>(
    reader: D,
) -> Result<Option<ArgumentsText<'a>>, D::Error> {
    let text = ArgumentsText::deserialize(reader)?;
    if text.get().starts_with('{') {
        Ok(Some(text))
    } else {
        Err(D::Error::custom("arguments must be an object"))
    }
}

/// Whether JSON text nests at most `limit` arrays and objects deep. Text
/// shorter than `limit + 1` pairs of brackets cannot nest deeper, and is
/// not looked at (the hot path's small arguments).
fn nests_within(text: &[u8], limit: usize) -> bool {
    if text.len() < 2 * (limit + 1) {
        return true;
    }
    let mut depth = 0usize;
    let mut at = 0;
    while let Some(&byte) = text.get(at) {
        match byte {
            b'"' => {
                // Past the string: to its closing quote, over escapes.
                at += 1;
                loop {
                    let Some(found) = text.get(at..).and_then(|rest| memchr2(b'"', b'\\', rest))
                    else {
                        return true;
                    };
                    at += found;
                    if text.get(at) == Some(&b'\\') {
                        at += 2;
                    } else {
                        break;
                    }
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return false;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        at += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> String {
        format!("{}{}", "[".repeat(levels), "]".repeat(levels))
    }

    #[test]
    fn nesting_is_counted_past_strings_and_escapes() {
        assert!(nests_within(nested(126).as_bytes(), 126));
        assert!(!nests_within(nested(127).as_bytes(), 126));
        let quoted = format!("[\"{}\\\"{}\"]", "[".repeat(300), "{".repeat(300));
        assert!(nests_within(quoted.as_bytes(), 126));
        // A string cut short after an escape ends the count (no panic).
        assert!(nests_within(b"\"abc\\", 0));
    }

    /// The old reading: arguments read into a value inside params.
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct AsValue {
        arguments: serde_json::Value,
    }

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct AsText<'a> {
        #[serde(borrow)]
        arguments: ArgumentsText<'a>,
    }

    #[test]
    fn text_is_refused_exactly_where_a_value_was() {
        for levels in 120..135 {
            for inner in [
                nested(levels),
                format!("{}1{}", "[".repeat(levels), "]".repeat(levels)),
            ] {
                let params = format!("{{\"arguments\":{inner}}}");
                let as_value = serde_json::from_str::<AsValue>(&params).is_ok();
                let as_text = serde_json::from_str::<AsText<'_>>(&params).is_ok();
                assert_eq!(as_value, as_text, "{levels} levels");
            }
        }
    }
}
