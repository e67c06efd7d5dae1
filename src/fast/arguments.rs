//! A tool call's `arguments` as the request wrote them: borrowed JSON text,
//! read in both dialects' params without building a `Value`. A tool that
//! reads JSON text gets the text; any other tool gets the value read from
//! it (the engine's `Arguments`).
//!
//! Capturing text checks its syntax but reads nothing: reading params into
//! a `Value` also refused arguments nested deeper than serde_json reads
//! (127 levels from the params object, which is one of them), numbers
//! past a float's range (`1e400`) and unpaired UTF-16 surrogate escapes
//! (`"\ud800"`). [`ArgumentsText`] checks all three, and so refuses
//! what a value reading refuses; on a refusal the dialect words the error
//! as a value reading of the params does. It also refuses an object whose
//! first member is named [`RAW_VALUE_TOKEN`], which a value reading reads
//! as another value, or refuses, and says so: a tool is given what was
//! checked, with the `fast-path` feature on or off.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::cursor::{Cursor, RAW_VALUE_TOKEN, SERDE_JSON_DEPTH, number_in_range};

/// How deep arguments may nest (their own object is level 1): serde_json
/// reads [`SERDE_JSON_DEPTH`] levels from the root it starts at, the params
/// object, which is one of them.
pub(crate) const MAX_NESTING: usize = SERDE_JSON_DEPTH - 1;

/// The borrowed text of `arguments`: valid JSON that reads as a value.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArgumentsText<'a>(&'a str);

impl<'a> ArgumentsText<'a> {
    /// `text`, which the caller has checked is valid JSON and
    /// [`reads_as_value`].
    pub(crate) fn checked(text: &'a str) -> Self {
        Self(text)
    }

    /// The text.
    pub(crate) fn get(self) -> &'a str {
        self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for ArgumentsText<'a> {
    fn deserialize<D: Deserializer<'de>>(reader: D) -> Result<Self, D::Error> {
        let raw = <&'a RawValue>::deserialize(reader)?;
        if reads(raw.get()) {
            Ok(Self(raw.get()))
        } else {
            Err(D::Error::custom(refusal(raw.get())))
        }
    }
}

/// Why `text`, which [`reads`] refused, is refused: the token when serde's
/// reading stops at it, else that a value reading refuses it.
#[cold]
fn refusal(text: &str) -> &'static str {
    match serde_json::from_str::<TokenFree>(&format!("[{text}]")) {
        Err(e) if e.to_string().starts_with(TOKEN_REFUSED) => TOKEN_REFUSED,
        _ => "arguments a value reading refuses",
    }
}

/// Why arguments naming [`RAW_VALUE_TOKEN`] first in an object are refused.
pub(crate) const TOKEN_REFUSED: &str =
    "arguments: an object's first member may not be named \"$serde_json::private::RawValue\"";

/// Whether captured `arguments` text reads as a value, no object's first
/// member named [`RAW_VALUE_TOKEN`]: checked by [`reads_as_value`] with the
/// `fast-path` feature on, else by serde_json itself, read as a value is
/// read (inside an array, which stands for the params object: a level of
/// nesting serde_json counts too).
fn reads(text: &str) -> bool {
    if cfg!(feature = "fast-path") {
        reads_as_value(text.as_bytes())
    } else {
        serde_json::from_str::<TokenFree>(&format!("[{text}]")).is_ok()
    }
}

/// Any JSON value, read as serde_json reads a `Value` (every string and
/// number decoded, within its nesting limit), in which no object's first
/// member is named [`RAW_VALUE_TOKEN`].
struct TokenFree;

impl<'de> Deserialize<'de> for TokenFree {
    fn deserialize<D: Deserializer<'de>>(reader: D) -> Result<Self, D::Error> {
        reader.deserialize_any(TokenFree)
    }
}

impl<'de> serde::de::Visitor<'de> for TokenFree {
    type Value = TokenFree;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_unit<E>(self) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut items: A) -> Result<Self, A::Error> {
        while items.next_element::<TokenFree>()?.is_some() {}
        Ok(self)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut members: A) -> Result<Self, A::Error> {
        let mut first = true;
        while let Some(name) = members.next_key::<std::borrow::Cow<'de, str>>()? {
            if std::mem::take(&mut first) && name == RAW_VALUE_TOKEN {
                return Err(A::Error::custom(TOKEN_REFUSED));
            }
            members.next_value::<TokenFree>()?;
        }
        Ok(self)
    }
}

/// Whether valid JSON text, captured without being read, also reads as a
/// value: it nests at most [`MAX_NESTING`] arrays and objects deep, each
/// number is within a float's range, each surrogate escape is paired, and
/// no object's first member is named [`RAW_VALUE_TOKEN`].
pub(crate) fn reads_as_value(text: &[u8]) -> bool {
    let mut depth = 0usize;
    let mut cursor = Cursor::new(text);
    while let Some(byte) = cursor.peek() {
        match byte {
            b'"' => match cursor.valid_string() {
                Some(string) if string.reads() => {}
                Some(_) => return false,
                // Not JSON: the caller's to refuse, not this check's.
                None => return true,
            },
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return false;
                }
                cursor.at += 1;
                if byte == b'{' && cursor.opens_raw_value_token() {
                    return false;
                }
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                cursor.at += 1;
            }
            b'-' | b'0'..=b'9' => match cursor.number() {
                Some(number) if number_in_range(number) => {}
                Some(_) => return false,
                None => return true,
            },
            // `,`, `:` and the letters of `true`, `false` and `null`.
            _ => cursor.at += 1,
        }
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
        assert!(reads_as_value(nested(MAX_NESTING).as_bytes()));
        assert!(!reads_as_value(nested(MAX_NESTING + 1).as_bytes()));
        let quoted = format!("[\"{}\\\"{}\"]", "[".repeat(300), "{".repeat(300));
        assert!(reads_as_value(quoted.as_bytes()));
        // A string cut short after an escape ends the walk (no panic).
        assert!(reads_as_value(b"\"abc\\"));
    }

    #[test]
    fn unpaired_surrogate_escapes_are_refused() {
        assert!(reads_as_value(
            br#"{"a":"\ud83d\ude00 \u00e9 \\ud800","\uD83D\uDE00":1}"#
        ));
        for text in [
            br#"{"a":"\ud800"}"#.as_slice(),
            br#"{"a":"\uDC00"}"#,
            br#"{"a":"\ud800\u0041"}"#,
            br#"{"\ud800":1}"#,
        ] {
            assert!(!reads_as_value(text), "{}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn numbers_past_a_floats_range_are_refused() {
        assert!(reads_as_value(
            br#"{"a":[1e308,-1.5E-400,"1e400",12345678901234567890123]}"#
        ));
        assert!(!reads_as_value(br#"{"a":1e400}"#));
        assert!(!reads_as_value(br#"{"a":[-2E+309]}"#));
        let long = format!("{{\"a\":{}}}", "9".repeat(400));
        assert!(!reads_as_value(long.as_bytes()));
    }

    /// serde_json reads an object named so first as another value: its
    /// member's string parsed, or an error. Refused in both readings.
    #[test]
    fn an_object_naming_the_raw_value_token_first_is_refused() {
        for text in [
            r#"{"$serde_json::private::RawValue":"5"}"#,
            r#"{"$serde_json::private::RawValue":"x"}"#,
            r#"{"a":[{"\u0024serde_json::private::RawValue":"{}"}]}"#,
            r#"{ "a" : { "$serde_json::private::RawValue" : 1 } }"#,
        ] {
            assert!(!reads_as_value(text.as_bytes()), "{text}");
            let wrapped = format!("[{text}]");
            assert!(
                serde_json::from_str::<TokenFree>(&wrapped).is_err(),
                "{text}"
            );
            let params = format!("{{\"arguments\":{text}}}");
            let refused = serde_json::from_str::<AsText<'_>>(&params)
                .err()
                .map(|e| e.to_string());
            assert!(
                refused
                    .as_deref()
                    .is_some_and(|e| e.contains("may not be named")),
                "{refused:?}"
            );
        }
        for text in [
            r#"{"a":1,"$serde_json::private::RawValue":"5"}"#,
            r#"{"$serde_json::private::RawValu":"5","b":"$serde_json::private::RawValue"}"#,
            r#"{"$":{"\\":2}}"#,
        ] {
            assert!(reads_as_value(text.as_bytes()), "{text}");
            assert!(
                serde_json::from_str::<TokenFree>(&format!("[{text}]")).is_ok(),
                "{text}"
            );
        }
    }

    /// The reference reading: arguments read into a value inside params.
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
